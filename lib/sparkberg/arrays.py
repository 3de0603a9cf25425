"""numpy views of Arrow arrays, read from the arrays' buffers.

Planning turns many short Arrow arrays (one manifest's entries, one metrics map's values for one column) into
numpy; there each Arrow compute call (``fill_null``, ``is_valid``, ``binary_length``) costs more than the work,
so these read the validity bitmap, the values and the offsets directly. Each returns a new array the caller may
change; null slots never show the bytes that happen to sit under them.
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
