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


# --- geography (spherical edges) ---------------------------------------------------------------------------------

def gbox(*values, spans=None):
    """(xmin, ymin, xmax, ymax) of geography values, or None."""
    from sparkberg.format.geo import GeographyBox
    b = GeographyBox()
    if spans:
        b.SPANS = spans
    b.update(pa.array(list(values), pa.binary()))
    bounds = b.bounds()
    if bounds is None:
        return None
    (xmin, ymin), (xmax, ymax) = struct.unpack_from("<2d", bounds[0]), struct.unpack_from("<2d", bounds[1])
    return xmin, ymin, xmax, ymax


def _unit(lon, lat):
    lam, phi = math.radians(lon), math.radians(lat)
    return (math.cos(phi) * math.cos(lam), math.cos(phi) * math.sin(lam), math.sin(phi))


def _arc_samples(a, b, n=2001):
    """Points along the shorter great circle arc from a to b (lon, lat in degrees), by spherical interpolation:
    an independent reckoning of where the arc goes."""
    p, q = _unit(*a), _unit(*b)
    omega = math.acos(max(-1.0, min(1.0, sum(x * y for x, y in zip(p, q)))))
    out = []
    for i in range(n):
        t = i / (n - 1)
        if omega < 1e-12:
            v = p
        else:
            s0, s1 = math.sin((1 - t) * omega) / math.sin(omega), math.sin(t * omega) / math.sin(omega)
            v = tuple(s0 * x + s1 * y for x, y in zip(p, q))
        out.append((math.degrees(math.atan2(v[1], v[0])), math.degrees(math.asin(max(-1.0, min(1.0, v[2]))))))
    return out


def _inside(box, lon, lat, eps=1e-9):
    xmin, ymin, xmax, ymax = box
    in_x = (xmin - eps <= lon <= xmax + eps) if xmin <= xmax else (lon >= xmin - eps or lon <= xmax + eps)
    return in_x and ymin - eps <= lat <= ymax + eps


def test_a_geography_s_points_give_the_box_of_their_longitudes_and_latitudes():
    assert gbox(point(1.0, 2.0), point(3.0, -4.0), None) == (1.0, -4.0, 3.0, 2.0)
    # out of the canonical ranges (a special value in the Parquet spec) or NaN: skipped
    assert gbox(point(200.0, 1.0), point(5.0, 5.0), point(math.nan, 7.0)) == (5.0, 5.0, 5.0, 5.0)
    assert gbox(point(10.0, 95.0)) is None


def test_an_edge_reaches_past_its_ends_toward_the_pole():
    # the great circle through (0, 60) and (90, 60) peaks at atan(tan 60 / cos 45) between them
    xmin, ymin, xmax, ymax = gbox(line((0.0, 60.0), (90.0, 60.0)))
    assert (xmin, ymin, xmax) == (0.0, 60.0, 90.0)
    peak = math.degrees(math.atan(math.tan(math.radians(60)) / math.cos(math.radians(45))))
    assert peak <= ymax <= peak + 1e-8 and ymax > 67.79
    _, ymin, _, ymax = gbox(line((-10.0, -45.0), (10.0, -45.0)))  # (southward in the south)
    assert ymax == -45.0 and ymin < -45.4
    assert gbox(line((0.0, 0.0), (10.0, 0.0))) == (0.0, 0.0, 10.0, 0.0)  # (the equator: no bulge)


def test_a_box_across_the_antimeridian_has_its_west_edge_east_of_its_east_edge():
    # "xmin may be greater than xmax ... x >= xmin OR x <= xmax"
    assert gbox(line((170.0, 10.0), (-170.0, 20.0)))[::2] == (170.0, -170.0)
    assert gbox(point(170.0, 1.0), point(-170.0, 2.0)) == (170.0, 1.0, -170.0, 2.0)
    # three points: the widest gap between them is left out
    assert gbox(point(-100.0, 0.0), point(100.0, 0.0), point(0.0, 0.0))[::2] == (-100.0, 100.0)
    assert gbox(point(-170.0, 0.0), point(100.0, 0.0), point(170.0, 0.0))[::2] == (100.0, -170.0)


def test_a_ring_around_a_pole_holds_the_pole_and_every_longitude():
    north = polygon([(0.0, 70.0), (120.0, 70.0), (-120.0, 70.0), (0.0, 70.0)])
    assert gbox(north) == (-180.0, 70.0, 180.0, 90.0)
    south = polygon([(0.0, -10.0), (120.0, -10.0), (-120.0, -10.0), (0.0, -10.0)])
    assert gbox(south) == (-180.0, -90.0, 180.0, -10.0)
    across = polygon([(0.0, 10.0), (120.0, -10.0), (-120.0, 10.0), (0.0, 10.0)])  # (which side is inside: unknown)
    assert gbox(across) == (-180.0, -90.0, 180.0, 90.0)
    # an edge over a pole (its ends 180 degrees of longitude apart) and an edge between antipodes
    assert gbox(line((0.0, 10.0), (180.0, 20.0))) == (-180.0, 10.0, 180.0, 90.0)
    assert gbox(line((0.0, 0.0), (180.0, 0.0))) == (-180.0, -90.0, 180.0, 90.0)


def test_an_edge_from_a_pole_runs_along_the_other_end_s_meridian():
    assert gbox(polygon([(10.0, 90.0), (50.0, 0.0), (60.0, 0.0), (10.0, 90.0)])) == (50.0, 0.0, 60.0, 90.0)


def test_every_point_of_every_arc_is_inside_the_box():
    """Random lines: points along each arc, found by interpolating on the sphere, all fall in the box, whose
    latitudes are as tight as the samples allow."""
    rng = random.Random(11)
    for _ in range(200):
        pts = [(rng.uniform(-180, 180), rng.uniform(-85, 85)) for _ in range(rng.randint(2, 4))]
        box = gbox(line(*pts))
        samples = [s for a, b in zip(pts, pts[1:]) for s in _arc_samples(a, b)]
        assert all(_inside(box, lon, lat) for lon, lat in samples), (pts, box)
        assert box[3] - max(lat for _, lat in samples) < 1e-2 and min(lat for _, lat in samples) - box[1] < 1e-2


def test_longitudes_past_the_kept_spans_still_hold_every_point():
    """When the longitude spans outnumber what is kept, the narrowest gaps close: the box may grow, never shrink."""
    rng = random.Random(5)
    pts = [(rng.uniform(-180, 180), rng.uniform(-60, 60)) for _ in range(3000)]
    exact = gbox(*[point(*p) for p in pts])
    merged = gbox(*[point(*p) for p in pts], spans=64)
    assert all(_inside(merged, lon, lat) for lon, lat in pts)
    assert merged[1::2] == exact[1::2]
    clustered = [(rng.uniform(150, 180) if i % 2 else rng.uniform(-180, -150), 0.0) for i in range(3000)]
    assert gbox(*[point(*p) for p in clustered], spans=64)[::2] == gbox(*[point(*p) for p in clustered])[::2]


def test_a_geography_whose_edges_are_not_spherical_gets_no_box():
    from sparkberg.format import types as T
    from sparkberg.format.geo import GeographyBox, geo_box
    assert geo_box(T.GeographyType("OGC:CRS84", "karney")) is None
    assert isinstance(geo_box(T.GeographyType()), GeographyBox) and type(geo_box(T.GeometryType())) is GeoBox
