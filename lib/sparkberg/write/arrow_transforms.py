"""Partition transforms over Arrow arrays, vectorized with numpy (bucket hashes integers with a numpy
murmur3; strings, bytes and decimals hash per value with mmh3). Values come out in Iceberg's physical form
(int days for ``day``, int ordinals for year/month/hour). Tested against the scalar transforms of
:mod:`sparkberg.format.transforms`, which are the reference.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkberg.arrays import from_numpy, from_python, int_values, strings
from sparkberg.format import types as T
from sparkberg.format.transforms import (
    BucketTransform, DayTransform, HourTransform, IdentityTransform, MonthTransform, Transform, TruncateTransform,
    VoidTransform, YearTransform, hash_value,
)
from sparkberg.format.scalars import MICROS_PER_DAY, NANOS_PER_MICRO

_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def murmur3_longs(values: np.ndarray) -> np.ndarray:
    """Murmur3 x86 32-bit (seed 0) of each int64's 8 little-endian bytes, as signed int32 (Appendix B)."""
    v = values.astype(np.int64, copy=False).view(np.uint64)
    with np.errstate(over="ignore"):
        h = np.zeros(len(v), dtype=np.uint32)
        for block in ((v & np.uint64(0xFFFFFFFF)).astype(np.uint32), (v >> np.uint64(32)).astype(np.uint32)):
            k = block * _C1
            k = _rotl(k, 15)
            k = k * _C2
            h = h ^ k
            h = _rotl(h, 13)
            h = h * np.uint32(5) + np.uint32(0xE6546B64)
        h = h ^ np.uint32(8)
        h = h ^ (h >> np.uint32(16))
        h = h * np.uint32(0x85EBCA6B)
        h = h ^ (h >> np.uint32(13))
        h = h * np.uint32(0xC2B2AE35)
        h = h ^ (h >> np.uint32(16))
    return h.view(np.int32)


def physical(arr: pa.Array, t: T.IcebergType) -> pa.Array:
    """An Arrow column of Iceberg type ``t`` as physical values (dates as int32 days, times and timestamps
    as int64 micros or nanos, uuids as strings)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if t == T.DATE:
        return arr.cast(pa.int32())
    if t in (T.TIME, T.TIMESTAMP, T.TIMESTAMPTZ):
        if pa.types.is_timestamp(arr.type) and arr.type.unit != "us":
            arr = arr.cast(pa.timestamp("us", arr.type.tz))
        if pa.types.is_time(arr.type) and arr.type.unit != "us":
            arr = arr.cast(pa.time64("us"))
        return arr.cast(pa.int64())
    if t in (T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS):
        if pa.types.is_timestamp(arr.type) and arr.type.unit != "ns":
            arr = arr.cast(pa.timestamp("ns", arr.type.tz))
        return arr.cast(pa.int64())
    return arr


def apply_transform(transform: Transform, t: T.IcebergType, arr: pa.Array) -> pa.Array:
    """The partition values of a column under ``transform``, physical form, nulls preserved."""
    arr = physical(arr, t)
    if isinstance(transform, IdentityTransform):
        if t == T.UUID:
            return strings([None if v is None else str(v) for v in _py_values(arr, t)])
        return arr
    if isinstance(transform, VoidTransform):
        return pa.nulls(len(arr), arr.type if t.is_primitive else pa.int32())
    if isinstance(transform, BucketTransform):
        n = transform.num_buckets
        if t in (T.INT, T.LONG, T.DATE, T.TIME, T.TIMESTAMP, T.TIMESTAMPTZ, T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS):
            values, valid = int_values(arr)
            if t in (T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS):
                values = np.floor_divide(values, NANOS_PER_MICRO)
            h = murmur3_longs(values).astype(np.int64)
            b = ((h & 0x7FFFFFFF) % n).astype(np.int32)
            return from_numpy(b, pa.int32(), valid)
        fn = transform.apply(t)
        return from_python([fn(v) for v in _py_values(arr, t)], pa.int32())
    if isinstance(transform, TruncateTransform):
        w = transform.width
        if t in (T.INT, T.LONG):
            values, valid = int_values(arr)
            with np.errstate(over="ignore"):
                out = values - np.mod(values, w)  # wraps at the int64 edge, like Java
            if t == T.INT:
                return from_numpy(out.astype(np.int32), pa.int32(), valid)  # wraps like Java's int
            return from_numpy(out, pa.int64(), valid)
        if t == T.STRING:
            return pc.utf8_slice_codeunits(arr, 0, w)
        if t == T.BINARY:
            return pc.binary_slice(arr, 0, w)
        fn = transform.apply(t)
        return from_python([fn(v) for v in _py_values(arr, t)], arr.type)
    if isinstance(transform, (YearTransform, MonthTransform, DayTransform, HourTransform)):
        values, valid = int_values(arr)
        if t == T.DATE:
            days = values
        else:
            per_day = MICROS_PER_DAY * (NANOS_PER_MICRO if t in (T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS) else 1)
            days = np.floor_divide(values, per_day)
        if isinstance(transform, HourTransform):
            per_hour = 3_600_000_000 * (NANOS_PER_MICRO if t in (T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS) else 1)
            out = np.floor_divide(values, per_hour)
        elif isinstance(transform, DayTransform):
            out = days
        else:
            d64 = days.astype("datetime64[D]")
            unit = "datetime64[Y]" if isinstance(transform, YearTransform) else "datetime64[M]"
            out = d64.astype(unit).astype(np.int64)
        return from_numpy(out.astype(np.int32), pa.int32(), valid)
    raise ValueError(f"cannot write with transform {transform}")


def _py_values(arr: pa.Array, t: T.IcebergType) -> list:
    import uuid as _uuid
    vals = arr.to_pylist()
    if t == T.UUID:
        return [None if v is None else (_uuid.UUID(bytes=v) if isinstance(v, bytes) else _uuid.UUID(str(v)))
                for v in vals]
    return vals


__all__ = ["apply_transform", "murmur3_longs", "physical", "hash_value"]
