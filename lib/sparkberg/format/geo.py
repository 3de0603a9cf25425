"""Bounding boxes of ``geometry`` values (WKB, Appendix G), as a data file's bounds hold them.

The spec's bounds of a ``geometry`` column are two points, the lower and upper corners of a box holding every
coordinate of every value in the file; null and NaN coordinates are skipped a dimension at a time, a dimension
with no value is left out, and without X or Y there is no box (section "Bounds for Geometry and Geography").
Each corner is serialized as its coordinates' little-endian doubles, x:y, x:y:z, x:y:NaN:m or x:y:z:m (Appendix
D). ``geography`` columns get no box here: their edges are arcs, whose extent is not their vertices', so a box of
the vertices would not hold every value.

WKB as ISO writes it (Z, M and ZM types as 1000s, 2000s and 3000s) and as PostGIS's extended form writes it (Z,
M and SRID flags in the type's high bits) is read, in either byte order; a value of a kind this does not read (the
curve types), or one that is not WKB, leaves the file without a box, which the spec allows.
"""
from __future__ import annotations

import math
import struct
from typing import Sequence

import numpy as np
import pyarrow as pa

# WKB geometry kinds by the number they are written with (without dimension offsets or flags)
_POINT, _LINESTRING, _POLYGON = 1, 2, 3
_MULTIS = (4, 5, 6, 7, 15, 16)  # multi-point, -linestring, -polygon, collection, polyhedral surface, TIN
_TRIANGLE = 17  # (rings, as a polygon's)
_EWKB_Z, _EWKB_M, _EWKB_SRID = 0x80000000, 0x40000000, 0x20000000

# where each dimension's coordinate is within a point of a (has Z, has M) layout
_SLOTS = {(False, False): (0, 1), (True, False): (0, 1, 2), (False, True): (0, 1, 3), (True, True): (0, 1, 2, 3)}


class GeoBox:
    """The bounding box of the ``geometry`` values given to :meth:`update`, per dimension (x, y, z, m)."""

    def __init__(self) -> None:
        self.low = [math.inf] * 4
        self.high = [-math.inf] * 4
        self.readable = True  # (False once a value was not read: the file then has no box)

    def update(self, values: pa.Array) -> None:
        """Take in an Arrow array of WKB values (binary; nulls skipped)."""
        if not self.readable:
            return
        if isinstance(values, pa.ChunkedArray):
            for chunk in values.chunks:
                self.update(chunk)
            return
        values = values.cast(pa.large_binary()) if not pa.types.is_large_binary(values.type) else values
        try:
            if not _points_2d(values, self):
                for v in values.drop_null().to_pylist():
                    _read(memoryview(v), 0, self, depth=0)
        except (struct.error, ValueError):  # (a value that is not WKB, or a kind not read)
            self.readable = False

    def take(self, coords: np.ndarray, slots: Sequence[int]) -> None:
        """Take in points (an n x len(slots) array of doubles) whose columns are the dimensions ``slots``."""
        if not len(coords):
            return
        for column, slot in enumerate(slots):
            c = coords[:, column]
            c = c[~np.isnan(c)]
            if len(c):
                self.low[slot] = min(self.low[slot], float(c.min()))
                self.high[slot] = max(self.high[slot], float(c.max()))

    def bounds(self) -> tuple[bytes, bytes] | None:
        """(lower, upper) serialized as the spec's points; None without X or Y, or after a value not read."""
        if not self.readable:
            return None
        present = [self.low[i] <= self.high[i] for i in range(4)]
        if not (present[0] and present[1]):
            return None
        return _point(self.low, present), _point(self.high, present)


def _point(values: list[float], present: list[bool]) -> bytes:
    """x:y, x:y:z, x:y:NaN:m or x:y:z:m as little-endian doubles (Appendix D)."""
    coords = values[:2]
    if present[2] or present[3]:
        coords.append(values[2] if present[2] else math.nan)
    if present[3]:
        coords.append(values[3])
    return struct.pack(f"<{len(coords)}d", *coords)


def _points_2d(values: pa.Array, box: GeoBox) -> bool:
    """Every value a little-endian two-dimensional ISO point (21 bytes, the common case of large columns): their
    coordinates taken in at once. False (nothing taken) when any value is something else."""
    present = values.drop_null()
    n = len(present)
    if n == 0:
        return True
    offsets = np.frombuffer(present.buffers()[1], np.int64, n + 1, present.offset * 8)
    if not (np.diff(offsets) == 21).all():
        return False
    data = np.frombuffer(present.buffers()[2], np.uint8, 21 * n, int(offsets[0])).reshape(n, 21)
    if not ((data[:, 0] == 1).all() and (data[:, 1] == _POINT).all() and not data[:, 2:5].any()):
        return False
    box.take(np.ascontiguousarray(data[:, 5:]).view("<f8").reshape(n, 2), (0, 1))
    return True


def _read(buf: memoryview, at: int, box: GeoBox, depth: int) -> int:
    """Read one WKB geometry at ``at`` into ``box``; where it ends."""
    if depth > 64:
        raise ValueError("geometry nested too deep")
    if at + 5 > len(buf) or buf[at] not in (0, 1):
        raise ValueError("no WKB byte order")
    order = "<" if buf[at] == 1 else ">"
    kind, = struct.unpack_from(order + "I", buf, at + 1)
    at += 5
    has_z, has_m = bool(kind & _EWKB_Z), bool(kind & _EWKB_M)
    if kind & _EWKB_SRID:
        at += 4
    kind &= 0x0FFFFFFF
    iso, kind = divmod(kind, 1000)
    if iso > 3:
        raise ValueError(f"WKB type {iso * 1000 + kind}")
    has_z, has_m = has_z or iso in (1, 3), has_m or iso in (2, 3)
    dims = 2 + has_z + has_m
    slots = _SLOTS[(has_z, has_m)]

    def points(at: int, n: int) -> int:
        end = at + 8 * dims * n
        if end > len(buf):
            raise ValueError("WKB ends inside its coordinates")
        box.take(np.frombuffer(buf, order + "f8", dims * n, at).reshape(n, dims), slots)
        return end

    def count(at: int) -> tuple[int, int]:
        return struct.unpack_from(order + "I", buf, at)[0], at + 4

    if kind == _POINT:
        return points(at, 1)
    if kind == _LINESTRING:
        n, at = count(at)
        return points(at, n)
    if kind in (_POLYGON, _TRIANGLE):
        rings, at = count(at)
        for _ in range(rings):
            n, at = count(at)
            at = points(at, n)
        return at
    if kind in _MULTIS:
        parts, at = count(at)
        for _ in range(parts):
            at = _read(buf, at, box, depth + 1)
        return at
    raise ValueError(f"WKB geometry type {kind} (curves are not read)")
