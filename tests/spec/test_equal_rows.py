"""Equality deletes matched to a data file's rows without Spark (the rows they delete, found once per data
file): spec "Equality Delete Files", a row is deleted when it equals a delete row in every equality column,
null equal to null."""
import datetime
import decimal

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
    # with two columns, nulls are matched through a stand-in value and a null flag: the stand-in itself (zero,
    # the empty string, false, the epoch) is a value like any other
    typ = pa.array(values).type
    rows = {"k": pa.array(values + [other], typ), "n": [1, 1, 1]}
    deleted = {"k": pa.array([None], typ), "n": [1]}
    assert _mask(rows, deleted) == [False, True, False]
    deleted = {"k": pa.array([other], typ), "n": [1]}
    assert _mask(rows, deleted) == [False, False, True]
