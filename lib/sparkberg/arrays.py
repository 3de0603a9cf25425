"""numpy views of Arrow arrays, read from the arrays' buffers, and Arrow arrays built from numpy the same way.

Planning turns many short Arrow arrays (one manifest's entries, one metrics map's values for one column) into
numpy; there each Arrow compute call (``fill_null``, ``is_valid``, ``binary_length``) costs more than the work,
so these read the validity bitmap, the values and the offsets directly. Each returns a new array the caller may
change; null slots never show the bytes that happen to sit under them.

The other way, :func:`from_numpy`, :func:`from_bools`, :func:`from_python`, :func:`strings`, :func:`indices`
and :func:`scalar` assemble arrays and scalars from buffers, and :func:`empty_table` makes a table of no rows.
``pa.array`` and ``pa.scalar`` of anything but Arrow data import pandas whenever it is installed (pyarrow asks
whether the input is a pandas object), and so do ``to_numpy``, ``Schema.empty_table`` and every compute call
given a Python value (made a scalar by ``pa.scalar``). The code a write runs on the executors builds and reads
its arrays with these, and so does planning where compiled code decodes the manifests, so neither imports pandas
(a cost at each fresh process's and worker's start). The reference decoder, which reads small manifests (and a
distributed plan's first delete manifests in each worker), builds its columns from Python values with
``pa.array``.
"""
from __future__ import annotations

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


def scalar(value: int | float | bool | str, type: pa.DataType) -> pa.Scalar:
    """An Arrow scalar of ``type`` (a fixed-width number, ``bool`` or ``string``) holding ``value``, for the
    compute functions, which make a Python value a scalar through ``pa.scalar``."""
    if pa.types.is_boolean(type):
        return from_bools(np.array([value], bool))[0]
    if pa.types.is_string(type):
        return strings([value])[0]
    return from_numpy(np.array([value], np.dtype(type.to_pandas_dtype())), type)[0]


def indices(rows: np.ndarray | list[int]) -> pa.Array:
    """Row numbers as the ``int64`` array ``take`` reads."""
    return from_numpy(np.asarray(rows, np.int64), pa.int64())


def strings(values: list[str | None]) -> pa.Array:
    """A ``string`` array of ``values`` (None: null)."""
    encoded = [b"" if v is None else v.encode() for v in values]
    offsets = np.zeros(len(encoded) + 1, np.int32)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    valid = np.array([v is not None for v in values], bool)
    bits = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.string(), len(encoded), [bits, pa.py_buffer(offsets),
                                                             pa.py_buffer(b"".join(encoded))],
                                 null_count=len(values) - int(np.count_nonzero(valid)))


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of ``schema`` with no rows (one empty chunk a column), as ``schema.empty_table()`` makes."""
    return pa.Table.from_batches([pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)])


def from_python(values: list, type: pa.DataType) -> pa.Array:
    """An array of ``type`` (int32, int64 or a decimal) of Python values (None: null)."""
    valid = np.array([v is not None for v in values], bool)
    if pa.types.is_decimal(type):
        width = type.bit_width // 8
        raw = b"".join(int(v.scaleb(type.scale)).to_bytes(width, "little", signed=True) if v is not None
                       else bytes(width) for v in values)
        return from_numpy(np.frombuffer(raw, f"V{width}"), type, valid)
    return from_numpy(np.array([0 if v is None else v for v in values], f"<i{type.bit_width // 8}"), type, valid)
