"""numpy views of Arrow arrays read from their buffers agree with Arrow's own conversions, sliced or not; arrays
built from buffers equal those ``pa.array`` builds; rows coded as equal are those Arrow's grouping puts together."""
import datetime
import decimal

import numpy as np
import pyarrow as pa
import pytest

from sparkberg.arrays import (
    binary_offsets, empty_table, float_values, from_numpy, from_python, int_values, row_codes, strings, true_mask,
    valid_mask,
)

VALUES = [5, None, -3, 2 ** 40, None, 0, 7, None, 9, 11, -1]


def _cases(arr):
    yield arr
    yield arr.slice(3)
    yield arr.slice(1, 6)
    yield arr.slice(9, 0)
    yield pa.chunked_array([arr.slice(0, 4), arr.slice(4)])


@pytest.mark.parametrize("arrow_type", [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint32()])
def test_int_values_match_arrow(arrow_type):
    values = [None if v is None else v % 100 if arrow_type in (pa.int8(), pa.uint32()) else v % 30000
              for v in VALUES]
    for arr in _cases(pa.array(values, arrow_type)):
        got, valid = int_values(arr)
        expected = [0 if v is None else v for v in arr.to_pylist()]
        assert got.dtype == np.int64 and got.tolist() == expected
        assert valid.tolist() == [v is not None for v in arr.to_pylist()]


def test_int_values_of_booleans_all_null_and_empty():
    got, valid = int_values(pa.array([True, None, False]))
    assert got.tolist() == [1, 0, 0] and valid.tolist() == [True, False, True]
    got, valid = int_values(pa.nulls(3, pa.int64()))
    assert got.tolist() == [0, 0, 0] and not valid.any()
    got, valid = int_values(pa.nulls(2))
    assert got.tolist() == [0, 0] and not valid.any()
    got, valid = int_values(pa.array([], pa.int32()))
    assert got.tolist() == [] and valid.tolist() == []


def test_null_slots_read_as_zero_whatever_their_bytes():
    # a validity bitmap over values that are not zero under the nulls
    data = pa.py_buffer(np.array([1, 99, 3], np.int64).tobytes())
    bitmap = pa.py_buffer(np.packbits(np.array([1, 0, 1], bool), bitorder="little").tobytes())
    arr = pa.Array.from_buffers(pa.int64(), 3, [bitmap, data], null_count=1)
    got, valid = int_values(arr)
    assert got.tolist() == [1, 0, 3] and valid.tolist() == [True, False, True]


def test_valid_mask_matches_is_valid():
    for arr in _cases(pa.array(VALUES, pa.int64())):
        assert valid_mask(arr).tolist() == [v is not None for v in arr.to_pylist()]


def test_binary_offsets_give_each_value():
    raw = [b"\x01\x00\x00\x00", None, b"", b"abcdefgh", None, b"xyz"]
    for source in (pa.array(raw, pa.binary()), pa.array([None if v is None else v.decode("latin-1") for v in raw])):
        for arr in _cases(source):
            flat, offsets = binary_offsets(arr)
            assert flat.type == pa.binary() and len(offsets) == len(flat) + 1
            data = flat.buffers()[2].to_pybytes() if flat.buffers()[2] is not None else b""
            values = flat.to_pylist()
            for i, v in enumerate(values):
                assert data[offsets[i]:offsets[i + 1]] == (v if v is not None else b"")


def test_int_values_of_temporal_types_are_their_stored_integers():
    import datetime
    for arr in (pa.array([datetime.date(2020, 1, 1), None, datetime.date(1969, 12, 31)]),
                pa.array([datetime.datetime(2020, 1, 1, 1, 2, 3), None], pa.timestamp("us", "UTC")),
                pa.array([datetime.time(1, 2, 3), None], pa.time64("us")),
                pa.array([datetime.time(1, 2, 3), None], pa.time32("ms"))):
        for a in _cases(arr):
            got, valid = int_values(a)
            storage = pa.int32() if a.type.bit_width == 32 else pa.int64()
            assert got.tolist() == [0 if v is None else v for v in a.cast(storage).to_pylist()]
            assert valid.tolist() == [v is not None for v in a.to_pylist()]


def test_true_mask_is_true_and_not_null():
    arr = pa.array([True, None, False, True, None, True, False, False, True, None, True])
    for a in _cases(arr):
        assert true_mask(a).tolist() == [v is True for v in a.to_pylist()]
    assert true_mask(pa.nulls(3, pa.bool_())).tolist() == [False] * 3


@pytest.mark.parametrize("arrow_type", [pa.float32(), pa.float64()])
def test_float_values_match_arrow(arrow_type):
    arr = pa.array([1.5, None, -0.0, float("nan"), None, 2.25, -7.0, None, 0.5, 3.0, 4.0], arrow_type)
    for a in _cases(arr):
        got = float_values(a)
        want = [0.0 if v is None else v for v in a.to_pylist()]
        assert got.dtype == np.float64 and len(got) == len(want)
        assert all(g == w or (g != g and w != w) for g, w in zip(got.tolist(), want))
        assert np.signbit(got).tolist() == [np.signbit(w) for w in want]
    assert float_values(pa.nulls(2, pa.float64())).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("arrow_type,dtype", [(pa.int32(), np.int32), (pa.int64(), np.int64),
                                              (pa.float64(), np.float64)])
def test_from_numpy_equals_pa_array(arrow_type, dtype):
    values = np.array([3, -1, 0, 2 ** 20, 7], dtype)
    valid = np.array([True, False, True, True, False])
    assert from_numpy(values, arrow_type, valid).equals(pa.array(values, arrow_type, mask=~valid))
    assert from_numpy(values, arrow_type).equals(pa.array(values, arrow_type))
    assert from_numpy(values[:0], arrow_type).equals(pa.array([], arrow_type))
    with pytest.raises(TypeError, match="int16"):
        from_numpy(values.astype(np.int16), arrow_type)


def test_fixed_width_bytes_from_numpy():
    raw = [bytes(range(i, i + 16)) for i in range(3)]
    got = from_numpy(np.frombuffer(b"".join(raw), "V16"), pa.binary(16), np.array([True, False, True]))
    assert got.to_pylist() == [raw[0], None, raw[2]]


def test_strings_equal_pa_array():
    for values in (["a", "", "héllo", "x" * 100], ["a", None, "", None], [], [None]):
        assert strings(values).equals(pa.array(values, pa.string()))


@pytest.mark.parametrize("arrow_type", [pa.int32(), pa.int64(), pa.decimal128(9, 2), pa.decimal128(38, 0),
                                        pa.decimal256(50, 3)])
def test_from_python_equals_pa_array(arrow_type):
    if pa.types.is_decimal(arrow_type):
        values = [decimal.Decimal("-12.5"), None, decimal.Decimal(0), decimal.Decimal("1234567.25")]
        if arrow_type.scale == 0:  # (38 digits: past the default context's precision, no quantize)
            values = [None if v is None else v.to_integral_value() for v in values] + [
                -decimal.Decimal(10) ** 37, decimal.Decimal("12345678901234567890123456789012345678")]
        else:
            values = [None if v is None else v.quantize(decimal.Decimal(1).scaleb(-arrow_type.scale)) for v in values]
    else:
        values = [5, None, -2 ** 31, 2 ** 31 - 1, 0]
    assert from_python(values, arrow_type).equals(pa.array(values, arrow_type))


_UTC_PLUS_2 = datetime.timezone(datetime.timedelta(hours=2))
_STRUCT = pa.struct([("a", pa.int32()), ("b", pa.list_(pa.string()))])


@pytest.mark.parametrize("arrow_type, values", [
    (pa.int8(), [1, None, -128]), (pa.int16(), [None, 2 ** 15 - 1]), (pa.uint16(), [1, None, 65535]),
    (pa.uint64(), [2 ** 64 - 1]), (pa.float32(), [1.5, None, 2]), (pa.float64(), [None, 1e300, -0.0]),
    (pa.bool_(), [True, None, False]), (pa.string(), ["a", None, "ü", ""]), (pa.binary(), [b"x", None, b""]),
    (pa.large_string(), ["a", None]), (pa.large_binary(), [b"\x00", None]),
    (pa.date32(), [datetime.date(2020, 1, 2), None, datetime.date(1900, 3, 4), 5]),
    (pa.timestamp("us", tz="UTC"), [datetime.datetime(2020, 1, 2, 3, 4, 5, 6), None,
                                    datetime.datetime(2020, 1, 2, 3, 4, 5, 6, tzinfo=_UTC_PLUS_2), 17]),
    (pa.timestamp("us"), [datetime.datetime(1960, 1, 2, 3, 4, 5, 6), None, datetime.datetime(9999, 12, 31)]),
    (pa.timestamp("ms"), [datetime.datetime(1960, 1, 2, 3, 4, 5, 6000)]),
    (pa.timestamp("ns", tz="UTC"), [datetime.datetime(2060, 1, 2, 3, 4, 5, 6)]),
    (pa.duration("us"), [datetime.timedelta(days=-1, microseconds=5), None, 7]),
    (pa.list_(pa.int64()), [[1, 2], None, [], [None, 3]]), (pa.list_(pa.string()), [("a", None), None]),
    (pa.large_list(pa.int32()), [[1], None]), (pa.list_(pa.list_(pa.int32())), [[[1], None, []], None]),
    (pa.map_(pa.int32(), pa.int64()), [{1: 2, 3: None}, None, {}]),
    (pa.map_(pa.int32(), pa.binary()), [{1: b"a"}, None]),
    (pa.map_(pa.string(), pa.string()), [[("a", "b")], None]),
    (_STRUCT, [{"a": 1, "b": ["x"]}, None, {"a": 2, "b": None}, {"a": None}]),
    (pa.list_(_STRUCT), [[{"a": 1, "b": []}, None], None]),
    (pa.null(), [None, None]), (pa.int32(), []), (pa.string(), [None, None]), (pa.list_(pa.int32()), []),
    (pa.decimal128(5, 2), [None, None]), (pa.binary(4), [b"abcd", None, bytes(4)]),
    (pa.time64("us"), [datetime.time(1, 2, 3, 4), None, 5]), (pa.time32("ms"), [datetime.time(23, 59, 59, 999000)]),
    (pa.time64("ns"), [datetime.time(0, 0, 0, 1)]),
])
def test_from_python_of_each_type_equals_pa_array(arrow_type, values):
    got = from_python(values, arrow_type)
    got.validate(full=True)
    assert got.equals(pa.array(values, arrow_type))


def test_from_python_takes_struct_values_as_tuples_too():
    assert from_python([(1, ["x"]), None], _STRUCT).equals(pa.array([{"a": 1, "b": ["x"]}, None], _STRUCT))


@pytest.mark.parametrize("values", [[1, 2, None], [1.0, 2], [True, None], ["a"], [b"a"], [datetime.date(2020, 1, 1)],
                                    [datetime.datetime(2020, 1, 1)], [None], [], [decimal.Decimal("1.5")],
                                    [datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)], [1, "a"]])
def test_from_python_infers_the_type_pa_array_infers(values):
    if values == [1, "a"]:
        with pytest.raises(pa.ArrowException):
            pa.array(values)
        with pytest.raises(pa.ArrowException):
            from_python(values)
        return
    got, want = from_python(values), pa.array(values)
    assert got.type == want.type and got.equals(want)


@pytest.mark.parametrize("arrow_type, value", [(pa.int32(), 2 ** 31), (pa.uint8(), -1), (pa.binary(2), b"abc"),
                                               (pa.decimal128(3, 1), decimal.Decimal("1.25")),
                                               (pa.decimal128(3, 1), decimal.Decimal("123.5"))])
def test_from_python_refuses_what_does_not_fit(arrow_type, value):
    with pytest.raises((pa.ArrowInvalid, OverflowError)):
        pa.array([value], arrow_type)
    with pytest.raises((OverflowError, ValueError)):
        from_python([value], arrow_type)


def test_from_python_of_a_type_it_does_not_build_says_which():
    with pytest.raises(TypeError, match="dictionary"):
        from_python(["a"], pa.dictionary(pa.int32(), pa.string()))


def test_empty_table_equals_the_schemas_own():
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("deletes", pa.list_(pa.struct([("path", pa.string()),
                                                                ("ids", pa.list_(pa.int32()))]))),
                        pa.field("m", pa.map_(pa.string(), pa.decimal128(9, 2))),
                        pa.field("ts", pa.timestamp("us", "UTC")), pa.field("n", pa.null())], metadata={b"k": b"v"})
    got = empty_table(schema)
    assert got.equals(schema.empty_table(), check_metadata=True)
    assert got.num_rows == 0 and all(c.num_chunks == 1 for c in got.columns)
    assert empty_table(pa.schema([])).num_columns == 0


def _random_columns(rng, n):
    """Columns of each kind ``row_codes`` codes, few distinct values each (so rows repeat), with nulls, NaN, -0.0
    and a column in chunks."""
    def pick(values):
        return [values[i] for i in rng.integers(0, len(values), n)]
    ints = pa.chunked_array([pa.array(pick([1, 2, -1, 0, None]), pa.int64())[:n // 3],
                             pa.array(pick([1, 2, -1, 0, None]), pa.int64())[n // 3:]])
    return {"i": ints, "s": pa.array(pick(["a", "", None, "bb"]), pa.large_string()),
            "f": pa.array(pick([0.0, -0.0, float("nan"), None, 1.5]), pa.float64()),
            "b": pa.array(pick([True, False, None])), "d": pa.array(pick([datetime.date(2024, 1, 1), None])),
            "n": pa.array(pick([decimal.Decimal("1.50"), decimal.Decimal("0.00"), None]), pa.decimal128(5, 2)),
            "x": pa.array(pick([b"\x00", b"\x01", None]), pa.binary(1)),
            "u": pa.array(pick([0, 2 ** 64 - 1]), pa.uint64())}


@pytest.mark.parametrize("names", [["i"], ["s"], ["f"], ["b"], ["i", "s"], ["f", "d", "n"], ["x", "u", "i"],
                                   ["i", "s", "f", "b", "d", "n", "x", "u"]])
def test_row_codes_equal_where_arrow_groups_rows_together(names):
    rng = np.random.default_rng(len(names))
    columns = _random_columns(rng, 300)
    table = pa.table({k: columns[k] for k in names}).append_column("row", pa.array(np.arange(300)))
    codes, valid = row_codes([table.column(k) for k in names])
    assert valid.tolist() == [all(table.column(k)[r].is_valid for k in names) for r in range(300)]
    groups = table.group_by(names, use_threads=False).aggregate([("row", "list")])
    assert groups.num_rows > 1
    for rows in groups.column("row_list").to_pylist():  # (a group's rows share a code no other group has)
        assert len(set(codes[rows])) == 1
    assert sorted(set(codes)) == list(range(groups.num_rows))


def test_row_codes_with_nulls_equal_to_nothing_mark_those_rows():
    codes, valid = row_codes([pa.array([1, None, 1, None]), pa.array(["a", "a", "a", None])], nulls_equal=False)
    assert valid.tolist() == [True, False, True, False]
    assert codes[0] == codes[2]
    assert row_codes([pa.array([], pa.int64())])[0].tolist() == []
    # a null's stand-in is no value: with nulls equal, 0 and null differ, as "" and null do
    codes = row_codes([pa.array([0, None, 0]), pa.array(["", "", None])])[0]
    assert len(set(codes.tolist())) == 3


def test_row_codes_of_integers_spanning_more_than_int64_holds():
    # (the values' range does not fit an int64 code: they are ranked instead)
    wide = pa.array([-2 ** 63, 2 ** 63 - 1, None, -2 ** 63, 0], pa.int64())
    codes, valid = row_codes([wide, pa.array(["a", "a", "a", "a", "a"])])
    assert valid.tolist() == [True, True, False, True, True]
    assert codes[0] == codes[3] and len(set(codes.tolist())) == 4
    alone = row_codes([wide])[0]
    assert alone[0] == alone[3] and sorted(set(alone.tolist())) == [0, 1, 2, 3]
