"""Delete matching by the spec's rules ("Scan Planning"), no Spark: sequence numbers, partitions, global
equality deletes, deletion vectors replacing position deletes, referenced data files, file_path bounds, and
equality delete files pruned by column stats as Iceberg Java's DeleteFileIndex does."""
from decimal import Decimal

import pytest

from sparkberg.planning.matching import DeleteIndex, eq_delete_may_apply, in_path_bounds, path_bounds, sortable_key
from sparkberg.spec import types as T
from sparkberg.spec.values import to_bytes


def delete(path, content=1, fmt="parquet", ref=None, eq=None):
    return {"file_path": path, "content": content, "file_format": fmt, "equality_ids": eq,
            "referenced_data_file": ref, "content_offset": None, "content_size_in_bytes": None}


P = (("p", 1),)
Q = (("p", 2),)


def paths(index, spec, pkey, seq, path):
    return [d["file_path"] for d in index.for_file(spec, pkey, seq, path)]


def test_position_deletes_apply_to_data_with_sequence_number_at_most_theirs():
    index = DeleteIndex([(0, P, 5, delete("pos5"))], set())
    assert paths(index, 0, P, 4, "a") == ["pos5"]
    assert paths(index, 0, P, 5, "a") == ["pos5"]  # same commit: a position delete applies
    assert paths(index, 0, P, 6, "a") == []


def test_equality_deletes_apply_only_to_strictly_older_data():
    index = DeleteIndex([(0, P, 5, delete("eq5", content=2, eq=[1]))], set())
    assert paths(index, 0, P, 4, "a") == ["eq5"]
    assert paths(index, 0, P, 5, "a") == []  # rows added in the same commit as the delete are kept
    assert paths(index, 0, Q, 4, "a") == []  # another partition


def test_deletes_match_spec_and_partition():
    index = DeleteIndex([(0, P, 5, delete("pos")), (1, P, 5, delete("other-spec"))], set())
    assert paths(index, 0, P, 1, "a") == ["pos"]
    assert paths(index, 0, Q, 1, "a") == []


def test_equality_deletes_of_an_unpartitioned_spec_are_global():
    index = DeleteIndex([(0, (), 5, delete("global", content=2, eq=[1])), (0, (), 5, delete("pos-unpart"))], {0})
    assert paths(index, 1, P, 4, "a") == ["global"]  # any spec, any partition; position deletes are not global
    assert paths(index, 1, Q, 5, "a") == []


def test_referenced_data_file_limits_a_position_delete_file():
    index = DeleteIndex([(0, P, 5, delete("pos", ref="a"))], set())
    assert paths(index, 0, P, 1, "a") == ["pos"]
    assert paths(index, 0, P, 1, "b") == []


def test_deletion_vector_applies_to_its_file_and_replaces_position_deletes():
    index = DeleteIndex([(0, P, 5, delete("dv", fmt="puffin", ref="a")), (0, P, 5, delete("pos"))], set())
    assert paths(index, 0, P, 1, "a") == ["dv"]
    assert paths(index, 0, P, 1, "b") == ["pos"]
    assert paths(index, 0, P, 6, "a") == []  # data newer than the DV


def test_position_delete_files_are_pruned_by_their_file_path_bounds():
    lower, upper = path_bounds({2147483546: b"/t/data/b.parquet"}, {2147483546: b"/t/data/c.parquet"})
    assert (lower, upper) == ("/t/data/b.parquet", "/t/data/c.parquet")
    index = DeleteIndex([(0, P, 5, delete("pos"), (lower, upper))], set())
    assert paths(index, 0, P, 1, "/t/data/b.parquet") == ["pos"]
    assert paths(index, 0, P, 1, "/t/data/bb.parquet") == ["pos"]
    assert paths(index, 0, P, 1, "/t/data/a.parquet") == []
    assert paths(index, 0, P, 1, "/t/data/d.parquet") == []
    assert in_path_bounds("x", (None, None)) and in_path_bounds("x", None)
    # UTF-8 byte order is code point order
    assert in_path_bounds("/t/\u00e9", ("/t/e", "/t/\U0001F600"))


# --- equality delete files pruned by stats (Iceberg Java's DeleteFileIndex.canContainEqDeletesForFile) ------
def _s(nulls=0, values=10, lower=None, upper=None, has_bounds=True, t=T.LONG):
    key = lambda v: None if v is None else sortable_key(t, to_bytes(t, v))  # noqa: E731
    return (has_bounds, {1: (nulls, values, key(lower), key(upper))})


OPTIONAL, REQUIRED, PRUNABLE = frozenset(), frozenset({1}), frozenset({1})


def test_equality_deletes_outside_the_data_range_do_not_apply():
    data = _s(lower=10, upper=20)
    assert not eq_delete_may_apply(data, _s(lower=21, upper=30), [1], OPTIONAL, PRUNABLE)
    assert not eq_delete_may_apply(data, _s(lower=-5, upper=9), [1], OPTIONAL, PRUNABLE)
    assert eq_delete_may_apply(data, _s(lower=20, upper=30), [1], OPTIONAL, PRUNABLE)
    assert eq_delete_may_apply(data, _s(lower=0, upper=10), [1], OPTIONAL, PRUNABLE)
    # a column that is not an equality column of the delete, or not prunable (nested), prunes nothing
    assert eq_delete_may_apply(data, _s(lower=21, upper=30), [2], OPTIONAL, PRUNABLE)
    assert eq_delete_may_apply(data, _s(lower=21, upper=30), [1], OPTIONAL, frozenset())


def test_equality_delete_null_rules():
    # nulls in the data and null deleted: applies whatever the ranges
    assert eq_delete_may_apply(_s(nulls=1, lower=10, upper=20), _s(nulls=1, lower=50, upper=60), [1], OPTIONAL,
                               PRUNABLE)
    # data only nulls, no null deleted: cannot apply
    assert not eq_delete_may_apply(_s(nulls=10, values=10), _s(nulls=0, lower=1, upper=2), [1], OPTIONAL, PRUNABLE)
    # deletes only nulls, no nulls in the data: cannot apply
    assert not eq_delete_may_apply(_s(nulls=0, lower=1, upper=2), _s(nulls=3, values=3), [1], OPTIONAL, PRUNABLE)
    # unknown null counts: may contain nulls, so ranges decide nothing when both may
    assert eq_delete_may_apply(_s(nulls=None, lower=10, upper=20), _s(nulls=None, lower=50, upper=60), [1],
                               OPTIONAL, PRUNABLE)
    # a required column has no nulls: ranges decide
    assert not eq_delete_may_apply(_s(nulls=None, lower=10, upper=20), _s(nulls=None, lower=50, upper=60), [1],
                                   REQUIRED, PRUNABLE)


def test_missing_bounds_assume_a_match():
    assert eq_delete_may_apply(_s(lower=10, upper=20, has_bounds=False), _s(lower=50, upper=60), [1], OPTIONAL,
                               PRUNABLE)
    assert eq_delete_may_apply(_s(lower=10, upper=None), _s(lower=50, upper=60), [1], OPTIONAL, PRUNABLE)
    assert eq_delete_may_apply(None, _s(lower=50, upper=60), [1], OPTIONAL, PRUNABLE)


@pytest.mark.parametrize("t,values", [
    (T.LONG, [-2 ** 63, -1, 0, 1, 2 ** 63 - 1]), (T.INT, [-2 ** 31, -7, 0, 2 ** 31 - 1]),
    (T.DOUBLE, [float("-inf"), -1.5, -0.0, 0.0, 1e-300, 2.5, float("inf")]), (T.FLOAT, [-1.5, -0.0, 0.0, 0.25]),
    (T.STRING, ["", "a", "ab", "b", "é", "\U0001F600"]), (T.BINARY, [b"", b"\x00", b"\x00\x01", b"\xff"]),
    (T.DecimalType(9, 2), [Decimal("-10.00"), Decimal("-0.01"), Decimal("0.00"), Decimal("3.14")]),
    (T.DATE, [-1, 0, 19000]), (T.TIMESTAMPTZ, [-1, 0, 1_700_000_000_000_000]), (T.BOOLEAN, [False, True]),
])
def test_sortable_keys_order_as_the_values(t, values):
    keys = [sortable_key(t, to_bytes(t, v)) for v in values]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_uuid_and_nan_bounds_are_not_compared():
    import uuid
    assert sortable_key(T.UUID, to_bytes(T.UUID, uuid.UUID(int=1))) is None
    assert sortable_key(T.DOUBLE, to_bytes(T.DOUBLE, float("nan"))) is None
    assert sortable_key(T.LONG, b"\x01") is None  # unreadable: unknown
