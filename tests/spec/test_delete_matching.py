"""Delete matching by the spec's rules ("Scan Planning"), no Spark: sequence numbers, partitions, global
equality deletes, deletion vectors replacing position deletes, referenced data files, file_path bounds, and
equality delete files pruned by column stats as Iceberg Java's DeleteFileIndex does."""
from decimal import Decimal

import pytest

from sparkberg.planning.deletes import eq_delete_may_apply, in_path_bounds, path_bounds, sortable_key
from sparkberg.planning.reference import DeleteIndex
from sparkberg.format import types as T
from sparkberg.format.values import to_bytes


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


# --- the same rules a batch of data files at a time (DeleteMatcher, the planners' matching) -----------------
import pyarrow as pa  # noqa: E402
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from sparkberg.planning.deletes import DELETE_STRUCT, DeleteMatcher, _integral_keys  # noqa: E402

STATS = pa.map_(pa.int32(), pa.struct([("nulls", pa.int64()), ("vals", pa.int64()), ("lower", pa.binary()),
                                       ("upper", pa.binary())]))
PARTITION = pa.struct([("p", pa.int32()), ("q", pa.float64())])
DELETES_SCHEMA = pa.schema([
    ("spec_id", pa.int32()), ("partition", PARTITION), ("sequence_number", pa.int64()), ("file_path", pa.string()),
    ("content", pa.int32()), ("file_format", pa.string()), ("equality_ids", pa.list_(pa.int32())),
    ("referenced_data_file", pa.string()), ("content_offset", pa.int64()), ("content_size_in_bytes", pa.int64()),
    ("record_count", pa.int64()), ("_path_lower", pa.string()), ("_path_upper", pa.string()), ("_eq_stats", STATS),
    ("_has_bounds", pa.bool_())])
DATA_SCHEMA = pa.schema([("file_path", pa.string()), ("spec_id", pa.int32()), ("partition", PARTITION),
                         ("sequence_number", pa.int64()), ("_eq_stats", STATS), ("_has_bounds", pa.bool_())])
PATHS = ["/w/a", "/w/b", "/w/c", "/w/d"]
_keys = st.none() | st.integers(0, 4).map(lambda v: sortable_key(T.LONG, to_bytes(T.LONG, v)))
# a file's stats of equality column 1: (has bounds maps, null count, value count, lower, upper)
_file_stats = st.none() | st.tuples(st.booleans(), st.none() | st.integers(0, 2), st.none() | st.just(2), _keys,
                                    _keys)
# partition (p, q): q may be NaN, which matches NaN as Spark's joins match it
_partitions = st.tuples(st.none() | st.integers(0, 2), st.sampled_from([None, 1.5, float("nan")]))
_data = st.lists(st.tuples(st.sampled_from([0, 1]), _partitions, st.integers(1, 6), _file_stats), min_size=1,
                 max_size=6)
_deletes = st.lists(st.tuples(
    st.sampled_from(["pos", "eq", "dv"]), st.sampled_from([0, 1]), _partitions, st.integers(1, 6),
    st.sampled_from([None] + PATHS), st.sampled_from([None] + PATHS), st.sampled_from([None] + PATHS), _file_stats),
    max_size=8)


def _stats_map(s):
    if s is None:
        return None, None
    has, nulls, vals, lower, upper = s
    return [(1, {"nulls": nulls, "vals": vals, "lower": lower, "upper": upper})], has


def _partition(spec, part):
    return {"p": None, "q": None} if spec == 1 else {"p": part[0], "q": part[1]}


def _pkey(partition):
    return tuple(("NaN",) if v != v else v for v in partition.values())


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(_data, _deletes, st.booleans())
def test_matcher_equals_the_rules_file_by_file(data, deletes, required):
    """Sequence numbers, partitions (NaN and null values too), global equality deletes of the unpartitioned
    spec 1, DVs replacing position deletes, referenced files, file_path bounds, equality stats."""
    delete_rows, index_rows = [], []
    for i, (kind, spec, part, seq, ref, lower, upper, s) in enumerate(deletes):
        content = 2 if kind == "eq" else 1
        ref = ref or PATHS[0] if kind == "dv" else (None if kind == "eq" else ref)
        d = {"file_path": f"/w/del-{i}", "content": content, "file_format": "puffin" if kind == "dv" else "parquet",
             "equality_ids": [1] if content == 2 else None, "referenced_data_file": ref, "content_offset": None,
             "content_size_in_bytes": None, "record_count": 1}
        bounds = (lower, upper) if kind == "pos" else (None, None)
        s = s if content == 2 else None
        stats, has = _stats_map(s)
        partition = _partition(spec, part)
        delete_rows.append({"spec_id": spec, "partition": partition, "sequence_number": seq, **d,
                            "_path_lower": bounds[0], "_path_upper": bounds[1], "_eq_stats": stats, "_has_bounds": has})
        index_rows.append((spec, _pkey(partition), seq, d, bounds, None if s is None else (s[0], {1: s[1:]})))
    data_rows = [{"file_path": PATHS[i % 4], "spec_id": spec, "partition": _partition(spec, part),
                  "sequence_number": seq, "_eq_stats": _stats_map(s)[0], "_has_bounds": _stats_map(s)[1]}
                 for i, (spec, part, seq, s) in enumerate(data)]
    req = frozenset({1}) if required else frozenset()
    index = DeleteIndex(index_rows, {1}, req, frozenset({1}))
    matcher = DeleteMatcher(pa.Table.from_pylist(delete_rows, DELETES_SCHEMA), {1}, req, frozenset({1}))
    got = matcher.deletes_for(pa.Table.from_pylist(data_rows, DATA_SCHEMA)).to_pylist()
    for row, (_, _, _, s), deletes_of_row in zip(data_rows, data, got):
        expected = index.for_file(row["spec_id"], _pkey(row["partition"]), row["sequence_number"], row["file_path"],
                                  None if s is None else (s[0], {1: s[1:]}))
        assert deletes_of_row == [{k: d[k] for k in DELETE_STRUCT} for d in expected]
    assert matcher.equality_ids() == ([1] if any(k == "eq" for k, *_ in deletes) else [])


INT_PARTITION = pa.struct([("p", pa.int32()), ("r", pa.int64())])
_int_partitions = st.tuples(st.integers(0, 2), st.sampled_from([-2 ** 40, -1, 0, 7]))


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(_int_partitions, st.integers(1, 6)), min_size=1, max_size=8),
       st.lists(st.tuples(st.sampled_from(["pos", "eq", "dv"]), _int_partitions, st.integers(1, 6),
                          st.sampled_from([None] + PATHS)), max_size=8))
def test_matcher_on_integer_partitions_equals_the_rules(data, deletes):
    """Partitions of integers without nulls (day, bucket...) are grouped without dictionaries: same rules."""
    delete_rows, index_rows = [], []
    for i, (kind, part, seq, ref) in enumerate(deletes):
        content = 2 if kind == "eq" else 1
        ref = ref or PATHS[0] if kind == "dv" else (None if kind == "eq" else ref)
        d = {"file_path": f"/w/del-{i}", "content": content, "file_format": "puffin" if kind == "dv" else "parquet",
             "equality_ids": [1] if content == 2 else None, "referenced_data_file": ref, "content_offset": None,
             "content_size_in_bytes": None, "record_count": 1}
        partition = {"p": part[0], "r": part[1]}
        delete_rows.append({"spec_id": 0, "partition": partition, "sequence_number": seq, **d})
        index_rows.append((0, tuple(partition.values()), seq, d))
    data_rows = [{"file_path": PATHS[i % 4], "spec_id": 0, "partition": {"p": part[0], "r": part[1]},
                  "sequence_number": seq} for i, (part, seq) in enumerate(data)]
    schema = pa.schema([DELETES_SCHEMA.field(c) if c != "partition" else pa.field(c, INT_PARTITION)
                        for c in ("spec_id", "partition", "sequence_number", *DELETE_STRUCT)])
    matcher = DeleteMatcher(pa.Table.from_pylist(delete_rows, schema), set())
    table = pa.Table.from_pylist(data_rows, pa.schema([("file_path", pa.string()), ("spec_id", pa.int32()),
                                                       ("partition", INT_PARTITION), ("sequence_number", pa.int64())]))
    if matcher.group_of_key:  # the grouping without dictionaries is what runs
        assert _integral_keys([table.column("spec_id").to_numpy().astype("int64"),
                               *(table.column("partition").combine_chunks().field(k).to_numpy()
                                 .astype("int64") for k in range(2))]) is not None
    index = DeleteIndex(index_rows, set())
    for row, got in zip(data_rows, matcher.deletes_for(table).to_pylist()):
        expected = index.for_file(0, tuple(row["partition"].values()), row["sequence_number"], row["file_path"])
        assert got == [{k: d[k] for k in DELETE_STRUCT} for d in expected]


def test_matcher_spec_examples():
    """The sequence number rules of "Scan Planning": a position delete applies to data of the same or an older
    sequence number, an equality delete only to strictly older data; a DV replaces position delete files."""
    def d(path, content=1, fmt="parquet", ref=None, seq=5, partition=1):
        return {"spec_id": 0, "partition": {"p": partition, "q": None}, "sequence_number": seq, "file_path": path,
                "content": content, "file_format": fmt, "equality_ids": [1] if content == 2 else None,
                "referenced_data_file": ref, "content_offset": None, "content_size_in_bytes": None,
                "record_count": 1}
    matcher = DeleteMatcher(pa.Table.from_pylist(
        [d("pos5"), d("eq5", content=2), d("dv5", fmt="puffin", ref="/w/b"), d("other", partition=2)],
        DELETES_SCHEMA), set())
    data = pa.Table.from_pylist([{"file_path": p, "spec_id": 0, "partition": {"p": 1, "q": None},
                                  "sequence_number": seq} for p, seq in (("/w/a", 4), ("/w/a", 5), ("/w/a", 6),
                                                                         ("/w/b", 4))],
                                pa.schema([DATA_SCHEMA.field(c) for c in ("file_path", "spec_id", "partition",
                                                                          "sequence_number")]))
    got = [[x["file_path"] for x in ds] for ds in matcher.deletes_for(data).to_pylist()]
    assert got == [["eq5", "pos5"], ["pos5"], [], ["dv5", "eq5"]]
    # a NaN partition value is the same partition as NaN (as Spark's joins and Iceberg Java's partition maps see it)
    nan = DeleteMatcher(pa.Table.from_pylist([{**d("nan"), "partition": {"p": 1, "q": float("nan")}}], DELETES_SCHEMA),
                        set())
    data_nan = pa.Table.from_pylist([{"file_path": "/w/a", "spec_id": 0, "partition": {"p": 1, "q": float("nan")},
                                      "sequence_number": 1}], DATA_SCHEMA)
    assert [[x["file_path"] for x in ds] for ds in nan.deletes_for(data_nan).to_pylist()] == [["nan"]]
    empty = DeleteMatcher(DELETES_SCHEMA.empty_table(), set())
    assert empty.size == 0 and empty.deletes_for(data).to_pylist() == [[], [], [], []]


_sort_rows = st.lists(st.fixed_dictionaries({
    "file_path": st.none() | st.sampled_from(["a", "b", "é", "Z", "ab", "a\U0001f600"]),
    "content": st.sampled_from([1, 2]), "file_format": st.sampled_from(["parquet", "puffin", None]),
    "equality_ids": st.none() | st.lists(st.integers(1, 3), max_size=2),
    "referenced_data_file": st.none() | st.sampled_from(["d1", "d2"]),
    "content_offset": st.none() | st.integers(0, 3), "content_size_in_bytes": st.none() | st.integers(0, 3),
    "record_count": st.integers(0, 2)}), max_size=8)


@settings(max_examples=200, deadline=None)
@given(_sort_rows)
def test_the_matcher_sorts_delete_files_as_the_plan_lists_them(rows):
    """The matcher sorts its delete files by columns (Arrow) into the order delete_sort_key gives (nulls last,
    strings by code point), ties included (entries that differ only by their equality ids)."""
    import pyarrow as pa

    from sparkberg.planning.deletes import DELETE_STRUCT, _sorted_deletes
    from sparkberg.planning.deletes import delete_sort_key
    schema = pa.schema([("file_path", pa.string()), ("content", pa.int32()), ("file_format", pa.string()),
                        ("equality_ids", pa.list_(pa.int32())), ("referenced_data_file", pa.string()),
                        ("content_offset", pa.int64()), ("content_size_in_bytes", pa.int64()),
                        ("record_count", pa.int64())])
    def key(e: dict) -> tuple:
        return delete_sort_key({k: e[k] for k in DELETE_STRUCT})
    got = _sorted_deletes(pa.Table.from_pylist(rows, schema)).to_pylist()
    assert [key(r) for r in got] == sorted(key(r) for r in rows)


def test_the_sequence_number_rule_is_the_specs_for_scalars_and_arrays():
    """Spec, scan planning: a position delete applies to data files with a data sequence number <= its own, an
    equality delete only to those strictly below; the one function takes ints and numpy arrays alike."""
    import numpy as np
    from sparkberg.errors import InvalidMetadataError
    from sparkberg.format.manifests import EQUALITY_DELETES, POSITION_DELETES, sequence_applies
    assert [bool(sequence_applies(POSITION_DELETES, d, 5)) for d in (4, 5, 6)] == [True, True, False]
    assert [bool(sequence_applies(EQUALITY_DELETES, d, 5)) for d in (4, 5, 6)] == [True, False, False]
    content = np.array([1, 1, 2, 2, 0])
    got = sequence_applies(content, np.array([3, 4, 3, 4, 1]), np.array([4, 3, 4, 4, 9]))
    assert got.tolist() == [True, False, True, False, False]
    assert sequence_applies(POSITION_DELETES, np.array([3, 4, 5]), np.array([4, 4, 4])).tolist() == [True, True, False]
    with pytest.raises(InvalidMetadataError, match="not a delete file's content: 0"):
        sequence_applies(0, 1, 2)
