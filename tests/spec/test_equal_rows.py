"""Equality deletes matched to a data file's rows without Spark (the rows they delete, found once per data
file): spec "Equality Delete Files", a row is deleted when it equals a delete row in every equality column,
null equal to null."""
import datetime
import decimal
import math

import numpy as np
import pyarrow as pa
import pytest

from sparkberg.read.equality import equal_rows


def _mask(rows: dict, deleted: dict) -> list[bool]:
    return equal_rows(pa.table(rows), pa.table(deleted)).tolist()


def test_one_column_null_equals_null():
    assert _mask({"id": [1, None, 3, 4]}, {"id": [None, 4, 9]}) == [False, True, False, True]
    assert _mask({"id": [1, None]}, {"id": [1, 1, 7]}) == [True, False]  # (repeated delete rows)
    assert _mask({"id": [1, 2]}, {"id": pa.array([], pa.int64())}) == [False, False]


@pytest.mark.parametrize("values", [
    [datetime.date(2024, 1, 1), datetime.date(2024, 1, 2), None],
    [decimal.Decimal("1.50"), decimal.Decimal("2.00"), None],
    ["a", "b", None], [b"a", b"b", None], [True, False, None],
])
def test_one_column_of_each_type(values):
    rows = {"k": values}
    assert _mask(rows, {"k": pa.array([values[1]], pa.array(values).type)}) == [False, True, False]
    assert _mask(rows, {"k": pa.array([None, values[0]], pa.array(values).type)}) == [True, False, True]


def test_every_column_must_match():
    rows = {"id": [1, None, 3, None, 5, 5], "v": ["x", "y", None, None, "z", ""]}
    deleted = {"id": [None, 3, 5, 5], "v": [None, None, "q", None]}
    # (None, None) and (3, None) match; (5, "") is not (5, None), and (5, "z") is not (5, "q")
    assert _mask(rows, deleted) == [False, False, True, True, False, False]


@pytest.mark.parametrize("values, other", [
    ([datetime.date(2024, 1, 1), None], datetime.date(1970, 1, 1)),
    ([decimal.Decimal("1.50"), None], decimal.Decimal("0.00")),
    ([b"\x00", None], b""),
    ([True, None], False),
    ([datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc), None],
     datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)),
])
def test_null_is_not_the_value_standing_for_it(values, other):
    # with two columns a null matches only a null: no value that could stand for it (zero, the empty string,
    # false, the epoch) matches it
    typ = pa.array(values).type
    rows = {"k": pa.array(values + [other], typ), "n": [1, 1, 1]}
    deleted = {"k": pa.array([None], typ), "n": [1]}
    assert _mask(rows, deleted) == [False, True, False]
    deleted = {"k": pa.array([other], typ), "n": [1]}
    assert _mask(rows, deleted) == [False, False, True]


def _key(v):
    """A value as the spec's equality compares it: NaN equal to NaN, -0.0 not equal to 0.0 (Java's
    ``Double.equals``, as Iceberg Java's ``StructLikeSet`` compares rows)."""
    if isinstance(v, float) and (math.isnan(v) or v == 0):
        return ("NaN",) if math.isnan(v) else (v, math.copysign(1.0, v))
    return v


@pytest.mark.parametrize("seed", range(8))
def test_several_columns_match_as_rows_compared_value_by_value(seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 400)), int(rng.integers(1, 40))

    def pick(values, k):
        return [values[i] for i in rng.integers(0, len(values), k)]
    kinds = {"i": ([1, 2, 3, -5, None, 2 ** 62], pa.int64()), "s": (["a", "", None, "bb"], pa.string()),
             "f": ([0.0, -0.0, float("nan"), None, 1.5], pa.float64()), "b": ([True, False, None], pa.bool_()),
             "d": ([datetime.date(2024, 1, 1), None, datetime.date(1969, 12, 31)], pa.date32())}
    names = list(rng.permutation(list(kinds))[:int(rng.integers(2, len(kinds) + 1))])
    rows = pa.table({k: pa.array(pick(kinds[k][0], n), kinds[k][1]) for k in names})
    deleted = pa.table({k: pa.array(pick(kinds[k][0], m), kinds[k][1]) for k in names})
    deleted = pa.concat_tables([deleted, rows.slice(0, min(n, 5))])  # (some rows surely deleted)
    gone = {tuple(_key(v) for v in r.values()) for r in deleted.to_pylist()}
    want = [tuple(_key(v) for v in r.values()) in gone for r in rows.to_pylist()]
    assert equal_rows(rows, deleted).tolist() == want


def test_several_columns_with_deleted_rows_typed_narrower():
    rows = pa.table({"id": pa.array([1, 2, None], pa.int64()), "v": ["a", "b", None]})
    deleted = pa.table({"id": pa.array([2, None], pa.int32()), "v": pa.array(["b", None], pa.large_string())})
    assert equal_rows(rows, deleted).tolist() == [False, True, True]
