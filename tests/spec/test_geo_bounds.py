"""Bounds of geometry columns, drawn from the spec ("Bounds for Geometry and Geography", Appendix D's
serialization of a point, Appendix G's WKB): the corners of a box holding every coordinate, null and NaN
coordinates skipped a dimension at a time, no box without X or Y."""
import math
import random
import struct

import pyarrow as pa
import pytest

from sparkberg.format.geo import GeoBox


def wkb(kind: int, body: bytes, order: str = "<", srid: int | None = None, ewkb_flags: int = 0) -> bytes:
    """A WKB geometry: byte order, type (ISO numbering, or EWKB flags), an optional EWKB SRID, then ``body``."""
    head = bytes([1 if order == "<" else 0]) + struct.pack(order + "I", kind | ewkb_flags | (0x20000000 if srid else 0))
    return head + (struct.pack(order + "I", srid) if srid else b"") + body


def coords(*points, order="<") -> bytes:
    return b"".join(struct.pack(f"{order}{len(p)}d", *p) for p in points)


def point(*c, order="<", kind_offset=None):
    offset = kind_offset if kind_offset is not None else {2: 0, 3: 1000, 4: 3000}[len(c)]
    return wkb(1 + offset, coords(c, order=order), order)


def line(*points, offset=0, order="<"):
    return wkb(2 + offset, struct.pack(order + "I", len(points)) + coords(*points, order=order), order)


def polygon(*rings, offset=0, order="<"):
    body = struct.pack(order + "I", len(rings))
    for ring in rings:
        body += struct.pack(order + "I", len(ring)) + coords(*ring, order=order)
    return wkb(3 + offset, body, order)


def multi(kind: int, *parts, order="<"):
    return wkb(kind, struct.pack(order + "I", len(parts)) + b"".join(parts), order)


def box(*values):
    b = GeoBox()
    b.update(pa.array(list(values), pa.binary()))
    return b.bounds()


def xy(*c):
    return struct.pack(f"<{len(c)}d", *c)


def test_points_give_the_box_of_their_coordinates_as_x_y_corners():
    assert box(point(1.0, 2.0), point(3.0, -4.0), None) == (xy(1.0, -4.0), xy(3.0, 2.0))


def test_nan_and_null_coordinates_are_skipped_a_dimension_at_a_time():
    # "POINT (1 NaN) contributes a value to X but no values to Y"
    assert box(point(1.0, math.nan)) is None  # (no Y: no box)
    assert box(point(1.0, math.nan), point(5.0, 6.0)) == (xy(1.0, 6.0), xy(5.0, 6.0))
    assert box(point(math.nan, math.nan)) is None  # (POINT EMPTY)
    assert box(None, None) is None


def test_z_and_m_corners_are_serialized_as_the_spec_says():
    assert box(point(1.0, 2.0, 3.0), point(0.0, 5.0, -1.0)) == (xy(0.0, 2.0, -1.0), xy(1.0, 5.0, 3.0))
    # x:y:NaN:m when only z is unset (XYM: ISO type 2001)
    m_only = wkb(2001, coords((1.0, 2.0, 7.0)))
    lower, upper = box(m_only)
    assert struct.unpack("<4d", lower)[:2] == (1.0, 2.0) and math.isnan(struct.unpack("<4d", lower)[2])
    assert struct.unpack("<4d", lower)[3] == 7.0 and struct.unpack("<4d", upper)[3] == 7.0
    assert box(point(1.0, 2.0, 3.0, 4.0), point(-1.0, 0.0, 9.0, -4.0)) == (xy(-1.0, 0.0, 3.0, -4.0),
                                                                          xy(1.0, 2.0, 9.0, 4.0))
    # a dimension with only NaN values is left out: Z all NaN, M present
    z_nan = point(1.0, 2.0, math.nan, 4.0)
    lower, _ = box(z_nan)
    assert len(lower) == 32 and math.isnan(struct.unpack("<4d", lower)[2])
    assert box(point(1.0, 2.0, math.nan)) == (xy(1.0, 2.0), xy(1.0, 2.0))


def test_every_kind_of_geometry_in_either_byte_order_and_extended_wkb():
    ring = [(0.0, 0.0), (10.0, 0.0), (10.0, 10.0), (0.0, 0.0)]
    hole = [(2.0, 2.0), (3.0, 2.0), (3.0, 3.0), (2.0, 2.0)]
    values = [
        line((-5.0, 1.0), (2.0, 3.0), order=">"),
        polygon(ring, hole),
        multi(6, polygon(ring, order=">"), polygon([(20.0, 20.0), (21.0, 20.0), (21.0, 25.0), (20.0, 20.0)])),
        multi(7, point(-7.0, 0.5), multi(7, line((1.0, -9.0), (1.0, 1.0)))),  # (a collection in a collection)
        wkb(1, coords((4.0, 4.0)), srid=4326),  # (EWKB, its SRID after the type)
    ]
    assert box(*values) == (xy(-7.0, -9.0), xy(21.0, 25.0))
    # EWKB's Z flag: a three-dimensional point
    assert box(wkb(1, coords((1.0, 2.0, 3.0)), ewkb_flags=0x80000000)) == (xy(1.0, 2.0, 3.0), xy(1.0, 2.0, 3.0))


@pytest.mark.parametrize("bad", [
    b"\x02" + bytes(20),  # (no byte order)
    point(1.0, 2.0)[:-3],  # (cut inside its coordinates)
    wkb(8, struct.pack("<I", 3) + coords((0.0, 0.0), (1.0, 1.0), (2.0, 0.0))),  # (a circular string: a curve)
])
def test_a_value_not_read_leaves_the_file_without_a_box(bad):
    assert box(point(1.0, 2.0), bad) is None


def test_many_points_at_once_give_what_one_at_a_time_gives():
    """Two-dimensional points are taken in as one array of coordinates: the same box as reading each value."""
    from sparkberg.format.geo import _read
    rng = random.Random(7)
    points = [point(rng.uniform(-180, 180), rng.uniform(-90, 90)) for _ in range(2000)]
    values = pa.array([point(500.0, 500.0)] + points[:1000] + [None] + points[1000:], pa.binary()).slice(1)
    at_once = GeoBox()
    at_once.update(values)  # (sliced: an offset into the array's buffers, the first value left out)
    one_by_one = GeoBox()
    for v in values.to_pylist():
        if v is not None:
            _read(memoryview(v), 0, one_by_one, 0)
    assert at_once.bounds() == one_by_one.bounds()
    xs = [struct.unpack_from("<2d", p, 5)[0] for p in points]
    ys = [struct.unpack_from("<2d", p, 5)[1] for p in points]
    assert at_once.bounds() == (xy(min(xs), min(ys)), xy(max(xs), max(ys)))
