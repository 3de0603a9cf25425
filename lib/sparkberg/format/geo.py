"""Bounding boxes of ``geometry`` and ``geography`` values (WKB, Appendix G), as a data file's bounds hold them.

The spec's bounds of either column are two points, the lower and upper corners of a box holding every object in
the file; null and NaN coordinates are skipped a dimension at a time, a dimension with no value is left out, and
without X or Y there is no box (section "Bounds for Geometry and Geography"). Each corner is serialized as its
coordinates' little-endian doubles, x:y, x:y:z, x:y:NaN:m or x:y:z:m (Appendix D).

A ``geometry``'s box is its coordinates' (:class:`GeoBox`). A ``geography``'s edges are arcs of great circles
(:class:`GeographyBox`, for the ``spherical`` edge algorithm), so its box is not its vertices': an arc between two
points at 60N reaches further north, an arc from 170E to 170W crosses the antimeridian (then the box's west edge
is east of its east edge, as the spec allows), and a ring that winds around a pole holds it.

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

from sparkberg.format import types as T

# WKB geometry kinds by the number they are written with (without dimension offsets or flags)
_POINT, _LINESTRING, _POLYGON = 1, 2, 3
_MULTIS = (4, 5, 6, 7, 15, 16)  # multi-point, -linestring, -polygon, collection, polyhedral surface, TIN
_TRIANGLE = 17  # (rings, as a polygon's)
_EWKB_Z, _EWKB_M, _EWKB_SRID = 0x80000000, 0x40000000, 0x20000000

# where each dimension's coordinate is within a point of a (has Z, has M) layout
_SLOTS = {(False, False): (0, 1), (True, False): (0, 1, 2), (False, True): (0, 1, 3), (True, True): (0, 1, 2, 3)}

# what a run of points given to GeoBox.take is: points apart, a line's vertices, a polygon's ring's
POINTS, LINE, RING = "points", "line", "ring"


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

    def take(self, coords: np.ndarray, slots: Sequence[int], shape: str = POINTS) -> None:
        """Take in points (an n x len(slots) array of doubles) whose columns are the dimensions ``slots``: points
        apart, or a line's or a ring's vertices (``shape``: a geometry's edges are straight, so only the points
        count)."""
        if not len(coords):
            return
        for column, slot in enumerate(slots):
            c = coords[:, column]
            c = c[~np.isnan(c)]
            if len(c):
                self.low[slot] = min(self.low[slot], float(c.min()))
                self.high[slot] = max(self.high[slot], float(c.max()))

    def corners(self) -> tuple[list[float], list[float], list[bool]] | None:
        """(lower, upper, present): the corners as x, y, z, m and which dimensions have values; None after a value
        not read."""
        if not self.readable:
            return None
        return self.low, self.high, [self.low[i] <= self.high[i] for i in range(4)]

    def bounds(self) -> tuple[bytes, bytes] | None:
        """(lower, upper) serialized as the spec's points; None without X or Y, or after a value not read."""
        corners = self.corners()
        if corners is None or not (corners[2][0] and corners[2][1]):
            return None
        low, high, present = corners
        return _point(low, present), _point(high, present)


class GeographyBox(GeoBox):
    """The bounding box of ``geography`` values with spherical edges: x is longitude and y latitude in degrees,
    within [-180, 180] and [-90, 90] (a coordinate outside them is skipped, as a NaN is); z and m as a geometry's.

    - Latitudes: every vertex's, and where an edge's great circle arc passes its northernmost or southernmost point,
      that point's (moved out by :data:`PAD` degrees, against the rounding of its computation).
    - Longitudes: the shortest arc of the circle of longitudes that holds every point and every edge's span (an
      edge spans the shorter way round from its west end to its east end); when that arc crosses the
      antimeridian, the west edge (x of the lower corner) is greater than the east edge, as the spec allows.
    - A ring that winds around a pole (its edges' longitude spans add up to a full turn) holds the pole and every
      longitude. Which side of a ring is a polygon's inside is not in the spec; taken here as the smaller side:
      the pole of the hemisphere the ring lies in, or both poles for a ring that crosses the equator. An edge
      between antipodal points, whose great circle is not determined, makes the box the whole globe.
    """

    # degrees by which an extreme latitude computed inside an edge is moved out (about 0.1 mm on the ground)
    PAD = 1e-9
    # the longitude spans kept merged; past this many, the smallest gaps between them are closed (a cover that
    # only grows, so the box stays a bound; the widest gaps, which decide the box, are kept)
    SPANS = 4096

    def __init__(self) -> None:
        super().__init__()
        self.spans = np.empty((0, 2))  # merged [west, east] longitude spans within [-180, 180], sorted
        self.pending: list[np.ndarray] = []
        self.n_pending = 0
        self.every_longitude = False

    def take(self, coords: np.ndarray, slots: Sequence[int], shape: str = POINTS) -> None:
        """Take in points, or a line's or ring's vertices joined by great circle arcs (see :meth:`GeoBox.take`)."""
        if not len(coords):
            return
        if len(slots) > 2:
            super().take(coords[:, 2:], slots[2:])
        lon, lat = coords[:, 0], coords[:, 1]
        ok = (np.abs(lon) <= 180) & (np.abs(lat) <= 90)  # (False for NaN too)
        if not ok.all():
            if shape != POINTS:  # (the edges of the vertices kept, none through a skipped one)
                for piece in np.split(np.arange(len(ok)), np.flatnonzero(~ok)):
                    piece = piece[ok[piece]]
                    if len(piece):
                        self.take(coords[piece, :2], (0, 1), LINE)
                return
            lon, lat = lon[ok], lat[ok]
            if not len(lon):
                return
        self._latitudes(float(lat.min()), float(lat.max()))
        if shape == POINTS or len(lon) == 1:
            self._longitudes(lon, np.zeros(len(lon)))
            return
        self._edges(lon, lat, shape == RING)

    def _latitudes(self, low: float, high: float) -> None:
        self.low[1], self.high[1] = min(self.low[1], max(low, -90.0)), max(self.high[1], min(high, 90.0))

    def _edges(self, lon: np.ndarray, lat: np.ndarray, ring: bool) -> None:
        lon0, lat0, lon1, lat1 = lon[:-1], lat[:-1], lon[1:], lat[1:]
        p, q = _unit(lon0, lat0), _unit(lon1, lat1)
        turn = (lon1 - lon0 + 180.0) % 360.0 - 180.0  # (the signed longitude span, in [-180, 180))
        pole0, pole1 = np.abs(lat0) == 90, np.abs(lat1) == 90
        same = (p == q).all(axis=1) | (pole0 & pole1 & (lat0 == lat1))
        antipodal = ((p * q).sum(axis=1) <= -1 + 1e-15) & ~same
        over_pole = (turn == -180.0) & ~pole0 & ~pole1 & ~antipodal  # (a meridian's arc, over the nearer pole)
        if antipodal.any():
            self._latitudes(-90.0, 90.0)
            self.every_longitude = True
            return
        if over_pole.any():
            north = lat0[over_pole] + lat1[over_pole]
            self._latitudes(-90.0 if (north <= 0).any() else 90.0, 90.0 if (north >= 0).any() else -90.0)
            self.every_longitude = True  # (longitudes of both meridians, and every one at the pole)
        # an edge from a pole runs along the other end's meridian: its span is that longitude alone
        at_pole = pole0 | pole1
        self._longitudes(np.where(pole0, lon1, lon0)[at_pole & ~same], np.zeros(int((at_pole & ~same).sum())))
        plain = ~(at_pole | same | over_pole)
        west = np.where(turn >= 0, lon0, lon1)[plain]
        self._longitudes(west, np.abs(turn)[plain])
        if plain.any():
            self._arc_extremes(p[plain], q[plain])
        if ring and not at_pole.any() and abs(float(turn[plain].sum())) > 180.0:  # (winds around a pole)
            self.every_longitude = True
            # (the smaller side: the pole of the ring's hemisphere; both for a ring on or across the equator)
            north, south = lat.max() > 0 or lat.min() >= 0, lat.min() < 0 or lat.max() <= 0
            self._latitudes(-90.0 if south else 90.0, 90.0 if north else -90.0)

    def _arc_extremes(self, p: np.ndarray, q: np.ndarray) -> None:
        """The latitudes of the northernmost and southernmost points of great circle arcs p -> q (unit vectors),
        where an arc passes them between its ends."""
        n = np.cross(p, q)
        norm = np.linalg.norm(n, axis=1)
        # the great circle's northernmost point is on the arc when, seen along its normal, it comes after p and
        # before q: (p x z) . n > 0 and (z x q) . n > 0; its southernmost point when both are negative
        after_p = p[:, 1] * n[:, 0] - p[:, 0] * n[:, 1]
        before_q = q[:, 0] * n[:, 1] - q[:, 1] * n[:, 0]
        top = np.degrees(np.arccos(np.clip(np.abs(n[:, 2]) / norm, 0.0, 1.0))) + self.PAD
        north, south = (after_p > 0) & (before_q > 0), (after_p < 0) & (before_q < 0)
        if north.any():
            self._latitudes(90.0, float(top[north].max()))
        if south.any():
            self._latitudes(-float(top[south].max()), -90.0)

    def _longitudes(self, west: np.ndarray, span: np.ndarray) -> None:
        """Take in longitude spans [west, west + span] (span in [0, 180])."""
        if not len(west):
            return
        west = np.where(west == 180.0, -180.0, west)  # (the same meridian: spans start in [-180, 180))
        east = west + span
        wraps = east > 180.0
        if wraps.any():  # (a span across the antimeridian is its two sides)
            west = np.concatenate([west, np.full(int(wraps.sum()), -180.0)])
            east = np.concatenate([np.minimum(east, 180.0), east[wraps] - 360.0])
        self.pending.append(np.stack([west, east], axis=1))
        self.n_pending += len(west)
        if self.n_pending > self.SPANS:
            self._merge()

    def _merge(self) -> None:
        spans = np.concatenate([self.spans] + self.pending)
        self.pending, self.n_pending = [], 0
        if not len(spans):
            return
        spans = spans[np.argsort(spans[:, 0], kind="stable")]
        reach = np.maximum.accumulate(spans[:, 1])
        starts = np.concatenate([[True], spans[1:, 0] > reach[:-1]])  # (a span that begins past all before it)
        first = np.flatnonzero(starts)
        merged = np.stack([spans[first, 0], reach[np.concatenate([first[1:] - 1, [len(spans) - 1]])]], axis=1)
        if len(merged) > self.SPANS:
            gaps = merged[1:, 0] - merged[:-1, 1]
            keep = np.sort(np.argsort(gaps, kind="stable")[-(self.SPANS // 2):])  # (the widest gaps stay open)
            merged = np.stack([np.concatenate([[merged[0, 0]], merged[keep + 1, 0]]),
                               np.concatenate([merged[keep, 1], [merged[-1, 1]]])], axis=1)
        self.spans = merged

    def corners(self) -> tuple[list[float], list[float], list[bool]] | None:
        """As :meth:`GeoBox.corners`, x the west and east edges (west > east when the box crosses the
        antimeridian)."""
        corners = super().corners()
        if corners is None:
            return None
        low, high, present = list(corners[0]), list(corners[1]), list(corners[2])
        self._merge()
        present[0] = self.every_longitude or len(self.spans) > 0
        if self.every_longitude:
            low[0], high[0] = -180.0, 180.0
        elif present[0]:
            west, east = self.spans[:, 0], self.spans[:, 1]
            gaps = np.concatenate([west[1:] - east[:-1], [west[0] + 360.0 - east[-1]]])  # (the last: across 180)
            widest = int(np.argmax(gaps))
            if gaps[widest] <= 0:
                low[0], high[0] = -180.0, 180.0
            elif widest == len(gaps) - 1:
                low[0], high[0] = float(west[0]), float(east[-1])
            else:  # (the box is everything but the widest gap, and crosses the antimeridian)
                low[0], high[0] = float(west[widest + 1]), float(east[widest])
        return low, high, present


def _unit(lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Points on the unit sphere of longitudes and latitudes in degrees, as rows x, y, z."""
    lam, phi = np.radians(lon), np.radians(lat)
    return np.stack([np.cos(phi) * np.cos(lam), np.cos(phi) * np.sin(lam), np.sin(phi)], axis=1)


def geo_box(t) -> GeoBox | None:
    """An empty box for the values of a ``geometry`` or ``geography`` column of type ``t``; None for a geography
    whose edges are not spherical (geodesics on the ellipsoid bulge differently from great circles, which
    :class:`GeographyBox` follows), or a column of another type."""
    if isinstance(t, T.GeometryType):
        return GeoBox()
    if isinstance(t, T.GeographyType) and t.algorithm == "spherical":
        return GeographyBox()
    return None


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

    def points(at: int, n: int, shape: str = POINTS) -> int:
        end = at + 8 * dims * n
        if end > len(buf):
            raise ValueError("WKB ends inside its coordinates")
        box.take(np.frombuffer(buf, order + "f8", dims * n, at).reshape(n, dims), slots, shape)
        return end

    def count(at: int) -> tuple[int, int]:
        return struct.unpack_from(order + "I", buf, at)[0], at + 4

    if kind == _POINT:
        return points(at, 1)
    if kind == _LINESTRING:
        n, at = count(at)
        return points(at, n, LINE)
    if kind in (_POLYGON, _TRIANGLE):
        rings, at = count(at)
        for _ in range(rings):
            n, at = count(at)
            at = points(at, n, RING)
        return at
    if kind in _MULTIS:
        parts, at = count(at)
        for _ in range(parts):
            at = _read(buf, at, box, depth + 1)
        return at
    raise ValueError(f"WKB geometry type {kind} (curves are not read)")


def box_of(t, wkb: bytes) -> tuple[float, float, float, float] | None:
    """(xmin, ymin, xmax, ymax) of one WKB value as a column of type ``t`` bounds it (:func:`geo_box`), or None
    when it has none (a value not read, no X or Y, a geography whose edges are not spherical)."""
    box = geo_box(t)
    if box is None:
        return None
    box.update(pa.array([wkb], pa.binary()))
    corners = box.corners()
    if corners is None or not (corners[2][0] and corners[2][1]):
        return None
    low, high, _ = corners
    return low[0], low[1], high[0], high[1]


_WKT_KINDS = {"point": 1, "linestring": 2, "polygon": 3, "multipoint": 4, "multilinestring": 5, "multipolygon": 6,
              "geometrycollection": 7}


def wkt_to_wkb(text: str) -> bytes:
    """The ISO WKB (little-endian) of a WKT geometry (Appendix G): points, line strings, polygons, their multi
    forms and collections, in XY, Z, M or ZM, ``EMPTY`` included; an EWKT ``SRID=n;`` prefix is dropped. Raises
    ValueError naming what it could not read."""
    import re
    body = re.sub(r"^\s*SRID\s*=\s*\d+\s*;", "", text, flags=re.I)
    tokens = re.findall(r"[A-Za-z]+|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[(),]", body)
    if "".join(tokens).replace(" ", "") != re.sub(r"\s+", "", body):
        raise ValueError(f"not WKT: {text[:80]!r}")
    pos = 0

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise ValueError(f"WKT ends early: {text[:80]!r}")
        pos += 1
        return tokens[pos - 1]

    def peek() -> str:
        return tokens[pos] if pos < len(tokens) else ""

    def expect(tok: str) -> None:
        got = take()
        if got != tok:
            raise ValueError(f"expected {tok!r} in WKT, found {got!r}: {text[:80]!r}")

    def coords(dims: int) -> list[float]:
        try:
            values = [float(take()) for _ in range(dims)]
        except ValueError:
            raise ValueError(f"a point of {dims} numbers expected in WKT: {text[:80]!r}") from None
        if peek() and peek() not in (",", ")"):
            raise ValueError(f"a point of {dims} coordinates expected in WKT: {text[:80]!r}")
        return values

    def seq(item) -> list:
        if peek().upper() == "EMPTY":
            take()
            return []
        expect("(")
        out = [item()]
        while peek() == ",":
            take()
            out.append(item())
        expect(")")
        return out

    def geometry() -> bytes:
        name = take().lower()
        if name not in _WKT_KINDS:
            raise ValueError(f"unknown WKT geometry {name!r}: {text[:80]!r}")
        kind = _WKT_KINDS[name]
        flag = peek().lower() if peek().lower() in ("z", "m", "zm") else ""
        if flag:
            take()
        dims = 2 + len(flag)
        offset = {"": 0, "z": 1000, "m": 2000, "zm": 3000}[flag]  # (ISO WKB's dimensions)

        def header(k: int) -> bytes:
            return struct.pack("<BI", 1, k + offset)

        def points() -> bytes:
            pts = seq(lambda: coords(dims))
            return struct.pack("<I", len(pts)) + b"".join(struct.pack(f"<{dims}d", *p) for p in pts)

        def point_member() -> bytes:  # (MULTIPOINT ((1 2), (3 4)) or MULTIPOINT (1 2, 3 4))
            p = seq(lambda: coords(dims))[0] if peek() == "(" else coords(dims)
            return header(1) + struct.pack(f"<{dims}d", *p)

        def member(k: int) -> bytes:
            return header(k) + part(k)

        def part(k: int) -> bytes:
            if k == 1:
                if peek().upper() == "EMPTY":
                    take()
                    return struct.pack(f"<{dims}d", *[math.nan] * dims)
                expect("(")
                p = coords(dims)
                expect(")")
                return struct.pack(f"<{dims}d", *p)
            if k == 2:
                return points()
            if k == 3:
                rings = seq(points)
                return struct.pack("<I", len(rings)) + b"".join(rings)
            if k == 4:
                members = seq(point_member)
            elif k in (5, 6):
                members = seq(lambda: member(k - 3))
            else:
                members = seq(geometry)
            return struct.pack("<I", len(members)) + b"".join(members)

        return header(kind) + part(kind)

    out = geometry()
    if pos != len(tokens):
        raise ValueError(f"unexpected {tokens[pos]!r} in WKT: {text[:80]!r}")
    return out
