"""numpy views of Arrow arrays, read from the arrays' buffers, and Arrow arrays built from numpy the same way.

Planning turns many short Arrow arrays (one manifest's entries, one metrics map's values for one column) into
numpy; there each Arrow compute call (``fill_null``, ``is_valid``, ``binary_length``) costs more than the work,
so these read the validity bitmap, the values and the offsets directly. Each returns a new array the caller may
change; null slots never show the bytes that happen to sit under them.

The other way, :func:`from_numpy`, :func:`from_bools`, :func:`from_python`, :func:`strings`, :func:`indices`
and :func:`scalar` assemble arrays and scalars from buffers, and :func:`empty_table` makes a table of no rows.
``pa.array`` and ``pa.scalar`` of anything but Arrow data import pandas whenever it is installed (pyarrow asks
whether the input is a pandas object), and so do ``to_numpy``, ``Schema.empty_table`` and every compute call
given a Python value (made a scalar by ``pa.scalar``). sparkberg builds its arrays of Python values with
:func:`from_python` (the reference decoder's manifest columns, the rows a DataFrame is made of on the driver) and
reads them with these, so neither a driver's plan nor a write's executors import pandas (a cost at each fresh
process's and worker's start).
"""
from __future__ import annotations

import datetime
import decimal
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa


def _flat(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        return arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    return arr


def valid_mask(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Which slots of ``arr`` hold a value (a bool array)."""
    arr = _flat(arr)
    n, nulls = len(arr), arr.null_count
    if nulls == 0:
        return np.ones(n, bool)
    if nulls == n:
        return np.zeros(n, bool)
    bits = np.unpackbits(np.frombuffer(arr.buffers()[0], np.uint8), bitorder="little", count=arr.offset + n)
    return bits[arr.offset:].astype(bool)


def true_mask(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Which slots of a boolean array hold true (null is not true)."""
    arr = _flat(arr)
    n = len(arr)
    if arr.null_count == n:
        return np.zeros(n, bool)
    bits = np.unpackbits(np.frombuffer(arr.buffers()[1], np.uint8), bitorder="little", count=arr.offset + n)
    return bits[arr.offset:].astype(bool) & valid_mask(arr)


def _int_dtype(t: pa.DataType) -> np.dtype | None:
    """The numpy type of the values buffer of an integer or integer-backed temporal type, else None."""
    if pa.types.is_integer(t):
        return np.dtype(t.to_pandas_dtype())
    if (pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_timestamp(t) or pa.types.is_duration(t)) and \
            t.bit_width in (32, 64):
        return np.dtype(f"<i{t.bit_width // 8}")
    return None


def int_values(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(values as int64 with 0 in null slots, :func:`valid_mask`) of an integer, boolean, date, time,
    timestamp or duration array (temporal values in their stored unit)."""
    arr = _flat(arr)
    n = len(arr)
    valid = valid_mask(arr)
    if not valid.any():
        return np.zeros(n, np.int64), valid
    dtype = _int_dtype(arr.type)
    if dtype is not None:
        values = np.frombuffer(arr.buffers()[1], dtype, count=n, offset=arr.offset * dtype.itemsize).astype(np.int64)
    else:
        values = np.array(arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), np.int64)
    if not valid.all():
        values[~valid] = 0
    return values, valid


def value_codes(arr: pa.Array) -> tuple[np.ndarray, list]:
    """(each row's code into the array's distinct values, as int64; those values as Python objects), null one of
    the values with a code of its own, so every row has a code."""
    import pyarrow.compute as pc  # (put off: most users of this module need none of it)
    enc = pc.dictionary_encode(arr, null_encoding="encode")
    return int_values(enc.indices)[0], enc.dictionary.to_pylist()  # (no null index: nulls are encoded)


def row_codes(columns: Sequence[pa.Array | pa.ChunkedArray], nulls_equal: bool = True
              ) -> tuple[np.ndarray, np.ndarray]:
    """(each row's code, int64 from 0 up, the same for rows equal in every one of ``columns`` (of one length, none
    nested); which rows have no null in any column). With ``nulls_equal`` a null equals a null, as equality deletes
    and changelogs compare rows; else a row with a null equals nothing, and its code means nothing. Floating-point
    values compare as Arrow hashes them (NaN equal to NaN, -0.0 not to 0.0), as Java's ``Double.equals``.

    An integer or temporal column's code is its value less the column's least (no hashing); another column's is
    its dictionary code from Arrow's hashing. The columns' codes are combined into one number (made dense before
    the product of their ranges could overflow), and that number made dense at the end: no Arrow join or
    grouping, which import ``pyarrow.acero``, and pandas with it, into a fresh process."""
    n = len(columns[0])
    valid = np.ones(n, bool)
    if not n:
        return np.zeros(0, np.int64), valid
    codes, bound, dense = None, 1, True
    for column in columns:
        column = _flat(column)
        values, size, ok, column_dense = _column_codes(column, nulls_equal)
        valid &= ok
        if codes is None:
            codes, bound, dense = values, size, column_dense
            continue
        if bound * size >= 1 << 62:
            codes, bound = _dense(codes)
        if bound * size >= 1 << 62:
            values, size = _dense(values)
        codes, bound, dense = codes * size + values, bound * size, False
    return (codes if dense else _dense(codes)[0]), valid


def _column_codes(column: pa.Array, nulls_equal: bool) -> tuple[np.ndarray, int, np.ndarray, bool]:
    """(a code of each value of ``column``, equal where the values are; the codes' bound; which slots hold a value;
    whether every code below the bound is used)."""
    if _int_dtype(column.type) is not None or pa.types.is_boolean(column.type):
        values, valid = int_values(column)
        low, high = int(values.min()), int(values.max())  # (null slots hold 0: code 0 below, values 1 up)
        if high - low + 2 < 1 << 62:
            codes = values - (low - 1)
        else:  # (a range past int64's: the values' ranks)
            codes, _ = _dense(values)
            codes += 1
            high, low = int(codes.max()), 1
        if not valid.all():
            codes[~valid] = 0  # (null: a code no value has)
        return codes, high - low + 2, valid, False
    import pyarrow.compute as pc  # (put off: most users of this module need none of it)
    encoded = pc.dictionary_encode(column, null_encoding="encode" if nulls_equal else "mask")
    return int_values(encoded.indices)[0], len(encoded.dictionary), valid_mask(column), True


def _dense(codes: np.ndarray) -> tuple[np.ndarray, int]:
    """(each code's rank among the distinct codes, how many there are)."""
    distinct, ranks = np.unique(codes, return_inverse=True)
    return ranks.reshape(-1).astype(np.int64, copy=False), len(distinct)


def float_values(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of a float or double array as float64, 0 in null slots."""
    arr = _flat(arr)
    n = len(arr)
    dtype = np.dtype(np.float32 if arr.type == pa.float32() else np.float64)
    if arr.null_count == n:
        return np.zeros(n, np.float64)
    values = np.frombuffer(arr.buffers()[1], dtype, count=n, offset=arr.offset * dtype.itemsize).astype(np.float64)
    if arr.null_count:
        values[~valid_mask(arr)] = 0
    return values


def binary_offsets(arr: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """(``arr`` as ``binary``, its n + 1 value offsets into the data buffer as int64): value ``i`` is
    ``data[offsets[i]:offsets[i + 1]]``, empty where null."""
    arr = _flat(arr)
    if not pa.types.is_binary(arr.type):
        arr = arr.cast(pa.binary())
    n = len(arr)
    if arr.buffers()[1] is None:  # (no value at all)
        return arr, np.zeros(n + 1, np.int64)
    offsets = np.frombuffer(arr.buffers()[1], np.int32, count=n + 1, offset=arr.offset * 4).astype(np.int64)
    return arr, offsets


def from_numpy(values: np.ndarray, type: pa.DataType, valid: np.ndarray | None = None) -> pa.Array:
    """An Arrow array of the fixed-width ``type`` holding ``values`` (numpy, of the type's width), null where
    ``valid`` (bools) is false."""
    values = np.ascontiguousarray(values)
    if values.dtype.itemsize * 8 != type.bit_width:
        raise TypeError(f"{values.dtype} values cannot make an array of {type}")
    bits, nulls = _validity(valid)
    return pa.Array.from_buffers(type, len(values), [bits, pa.py_buffer(values)], null_count=nulls)


def _validity(valid: np.ndarray | None) -> tuple[pa.Buffer | None, int]:
    """The validity bitmap of ``valid`` (bools; None or all true: no bitmap) and its null count."""
    if valid is None or valid.all():
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), len(valid) - int(np.count_nonzero(valid))


def from_bools(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """A ``bool`` Arrow array of ``values`` (numpy bools), null where ``valid`` (bools) is false."""
    values = np.asarray(values, bool)
    bits, nulls = _validity(valid)
    return pa.Array.from_buffers(pa.bool_(), len(values), [bits, pa.py_buffer(np.packbits(values, bitorder="little"))],
                                 null_count=nulls)


def scalar(value: Any, type: pa.DataType | None = None) -> pa.Scalar:
    """An Arrow scalar of ``type`` holding ``value`` (None: null; ``type`` None: the type ``pa.scalar`` infers), for
    the compute functions, which make a Python value a scalar through ``pa.scalar``: :func:`from_python` of one."""
    return from_python([value], type)[0]


def indices(rows: np.ndarray | list[int]) -> pa.Array:
    """Row numbers as the ``int64`` array ``take`` reads."""
    return from_numpy(np.asarray(rows, np.int64), pa.int64())


def strings(values: list[str | None]) -> pa.Array:
    """A ``string`` array of ``values`` (None: null): :func:`from_python` of that type."""
    return from_python(values, pa.string())


def batch_of_columns(columns: Mapping[str, Sequence[Any]], schema: pa.Schema) -> pa.RecordBatch:
    """``columns`` (Python values by column name) as a record batch of ``schema``, each built by
    :func:`from_python` (``pa.RecordBatch.from_pydict`` goes through ``pa.array``)."""
    return pa.RecordBatch.from_arrays([from_python(columns[f.name], f.type) for f in schema], schema=schema)


def batch_of_rows(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.RecordBatch:
    """``rows`` (dicts by column name; a missing key: null) as a record batch of ``schema``, each column built by
    :func:`from_python` (``pa.RecordBatch.from_pylist`` goes through ``pa.array``)."""
    return batch_of_columns({f.name: [r.get(f.name) for r in rows] for f in schema}, schema)


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of ``schema`` with no rows (one empty chunk a column), as ``schema.empty_table()`` makes."""
    return pa.Table.from_batches([pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)])


def from_python(values: Sequence[Any], type: pa.DataType | None = None) -> pa.Array:
    """An Arrow array of ``type`` holding Python ``values`` (None: null), as ``pa.array(values, type)`` makes it,
    for the types Spark and Iceberg's values exchange with Arrow: bool, integers, floats, decimals, strings, binary
    (fixed-size too), date32 (dates or int days), times (``datetime.time`` or ints in the type's unit), timestamps
    (datetimes, the naive taken as UTC, or ints in the type's unit), durations (timedeltas or ints), lists, maps
    (dicts or pairs) and structs (dicts or tuples), nested as deep as they go. ``type`` None:
    the type ``pa.array`` infers for bool, int, float, str, bytes, date and datetime values; values of any other
    kind are left to ``pa.array`` itself."""
    if type is None:
        type = _inferred(values)
        if type is None:
            return pa.array(values)
    n = len(values)
    valid = np.fromiter((v is not None for v in values), bool, n)
    if n and not valid.any() and not pa.types.is_null(type):
        return pa.nulls(n, type)
    kind = _KINDS.get(type.id)
    if kind is None:
        raise TypeError(f"from_python does not build arrays of {type}")
    return kind(values, type, valid)


def _ints(values, type, valid):
    return from_numpy(np.array([0 if v is None else v for v in values], f"<i{type.bit_width // 8}"), type, valid)


def _uints(values, type, valid):
    return from_numpy(np.array([0 if v is None else v for v in values], f"<u{type.bit_width // 8}"), type, valid)


def _floats(values, type, valid):
    return from_numpy(np.array([0.0 if v is None else v for v in values], f"<f{type.bit_width // 8}"), type, valid)


def _bools(values, type, valid):
    return from_bools(np.fromiter((bool(v) for v in values), bool, len(values)), valid)


def _var_width(values, type, valid):
    if pa.types.is_string(type) or pa.types.is_large_string(type):
        encoded = [b"" if v is None else v.encode() for v in values]
    else:
        encoded = [b"" if v is None else bytes(v) for v in values]
    width = np.int64 if pa.types.is_large_string(type) or pa.types.is_large_binary(type) else np.int32
    offsets = np.zeros(len(encoded) + 1, width)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    bits, nulls = _validity(valid)
    return pa.Array.from_buffers(type, len(encoded), [bits, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))],
                                 null_count=nulls)


def _fixed_binary(values, type, valid):
    width = type.byte_width
    raw = b"".join(bytes(width) if v is None else bytes(v) for v in values)
    if len(raw) != width * len(values):
        wrong = next(v for v in values if v is not None and len(v) != width)
        raise ValueError(f"{len(wrong)} bytes do not fit {type}")
    bits, nulls = _validity(valid)
    return pa.Array.from_buffers(type, len(values), [bits, pa.py_buffer(raw)], null_count=nulls)


def _times(values, type, valid):
    width = type.bit_width // 8
    out = [0 if v is None else v if isinstance(v, _INTS) else _in_unit(
        (v.hour * 3_600 + v.minute * 60 + v.second) * 1_000_000 + v.microsecond, type.unit) for v in values]
    return from_numpy(np.array(out, f"<i{width}"), type, valid)


def _decimals(values, type, valid):
    width = type.bit_width // 8
    raw = bytearray()
    for v in values:
        if v is None:
            raw += bytes(width)
            continue
        scaled = decimal.Decimal(v).scaleb(type.scale, _EXACT)
        unscaled = int(scaled)
        if unscaled != scaled or len(str(abs(unscaled))) > type.precision:
            raise ValueError(f"{v} does not fit {type}")
        raw += unscaled.to_bytes(width, "little", signed=True)
    return from_numpy(np.frombuffer(bytes(raw), f"V{width}"), type, valid)


_EXACT = decimal.Context(prec=80)  # (the default context's 28 digits would round a decimal(38) value)
_EPOCH_DAY = datetime.date(1970, 1, 1).toordinal()
_INTS = (int, np.integer)  # (temporal values already in the type's unit)
_UNIT_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _dates(values, type, valid):
    days = [0 if v is None else v if isinstance(v, _INTS) else v.toordinal() - _EPOCH_DAY for v in values]
    return from_numpy(np.array(days, "<i4"), type, valid)


def _micros(v: datetime.datetime) -> int:
    if v.tzinfo is not None:
        v = v.astimezone(datetime.timezone.utc)
    return ((v.toordinal() - _EPOCH_DAY) * 86_400 + v.hour * 3_600 + v.minute * 60 + v.second) * 1_000_000 + \
        v.microsecond


def _in_unit(micros: int, unit: str) -> int:
    per = _UNIT_PER_SECOND[unit]
    return micros * (per // 1_000_000) if per >= 1_000_000 else micros // (1_000_000 // per)


def _timestamps(values, type, valid):
    out = [0 if v is None else v if isinstance(v, _INTS) else _in_unit(_micros(v), type.unit) for v in values]
    return from_numpy(np.array(out, "<i8"), type, valid)


def _durations(values, type, valid):
    out = [0 if v is None else v if isinstance(v, _INTS) else
           _in_unit((v.days * 86_400 + v.seconds) * 1_000_000 + v.microseconds, type.unit) for v in values]
    return from_numpy(np.array(out, "<i8"), type, valid)


def _lists(values, type, valid):
    items = [() if v is None else v for v in values]
    width = np.int64 if pa.types.is_large_list(type) else np.int32
    offsets = np.zeros(len(items) + 1, width)
    np.cumsum([len(v) for v in items], out=offsets[1:])
    child = from_python([x for v in items for x in v], type.value_type)
    bits, nulls = _validity(valid)
    return pa.Array.from_buffers(type, len(items), [bits, pa.py_buffer(offsets)], null_count=nulls, children=[child])


def _maps(values, type, valid):
    pairs = [() if v is None else list(v.items()) if isinstance(v, dict) else list(v) for v in values]
    offsets = np.zeros(len(pairs) + 1, np.int32)
    np.cumsum([len(p) for p in pairs], out=offsets[1:])
    keys = from_python([k for p in pairs for k, _ in p], type.key_type)
    items = from_python([x for p in pairs for _, x in p], type.item_type)
    entries = pa.StructArray.from_arrays([keys, items], fields=[type.key_field, type.item_field])
    bits, nulls = _validity(valid)
    return pa.Array.from_buffers(type, len(pairs), [bits, pa.py_buffer(offsets)], null_count=nulls,
                                 children=[entries])


def _structs(values, type, valid):
    fields = [type.field(i) for i in range(type.num_fields)]
    children = []
    for i, f in enumerate(fields):
        children.append(from_python([None if v is None else v.get(f.name) if isinstance(v, dict) else v[i]
                                     for v in values], f.type))
    bits, nulls = _validity(valid)
    return pa.Array.from_buffers(type, len(values), [bits], null_count=nulls, children=children)


def _nulls(values, type, valid):
    if valid.any():
        raise TypeError(f"values for a null column: {next(v for v in values if v is not None)!r}")
    return pa.nulls(len(values))


_KINDS: dict[int, Callable] = {}
for _t, _kind in [(pa.int8(), _ints), (pa.int16(), _ints), (pa.int32(), _ints), (pa.int64(), _ints),
                  (pa.uint8(), _uints), (pa.uint16(), _uints), (pa.uint32(), _uints), (pa.uint64(), _uints),
                  (pa.float32(), _floats), (pa.float64(), _floats), (pa.bool_(), _bools),
                  (pa.string(), _var_width), (pa.large_string(), _var_width), (pa.binary(), _var_width),
                  (pa.large_binary(), _var_width), (pa.decimal128(1), _decimals), (pa.decimal256(1), _decimals),
                  (pa.binary(1), _fixed_binary), (pa.date32(), _dates), (pa.time32("ms"), _times),
                  (pa.time64("us"), _times), (pa.timestamp("us"), _timestamps), (pa.duration("us"), _durations),
                  (pa.list_(pa.int8()), _lists), (pa.large_list(pa.int8()), _lists),
                  (pa.map_(pa.int8(), pa.int8()), _maps), (pa.struct([]), _structs), (pa.null(), _nulls)]:
    _KINDS[_t.id] = _kind
del _t, _kind


def _inferred(values: Sequence[Any]) -> pa.DataType | None:
    """The type ``pa.array`` infers for values all of one of the simple kinds (None for any other)."""
    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return pa.null()
    if kinds <= {int, float}:
        return pa.float64() if float in kinds else pa.int64()
    if len(kinds) == 1:
        kind = kinds.pop()
        if kind is datetime.datetime:
            zones = {v.tzinfo is None for v in values if v is not None}
            return pa.timestamp("us") if zones == {True} else None
        return {bool: pa.bool_(), str: pa.string(), bytes: pa.binary(), datetime.date: pa.date32()}.get(kind)
    return None
