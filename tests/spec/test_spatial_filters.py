"""Spatial filters pruned by the files' bounding boxes (spec "Bounds for Geometry and Geography"): the box a
filter's ST_ function implies, binding it, and the metrics evaluators deciding from a file's box, a geography's
across the antimeridian too ("an object in this bounding box may match if it contains an X such that x >= xmin OR
x <= xmax")."""
import struct

import pytest
import sqlglot

from sparkberg.errors import ValidationError
from sparkberg.expressions.evaluators import metrics_may_match, metrics_must_match
from sparkberg.expressions.predicates import Predicate, bind, evaluate
from sparkberg.expressions.sql import translate_filter
from sparkberg.format import types as T
from sparkberg.sql.filters import filter_of

SCHEMA = T.Schema([T.NestedField(1, "id", T.LONG, False), T.NestedField(2, "g", T.GeometryType(), False),
                   T.NestedField(3, "h", T.GeographyType(), False),
                   T.NestedField(4, "k", T.GeographyType("OGC:CRS84", "karney"), False)], 0)
TYPES = {f.field_id: f.field_type for f in SCHEMA.fields}


def corner(x, y):
    return struct.pack("<2d", x, y)


def may(expr, lower, upper, nulls=0, values=10):
    """Whether a file whose column 2 and 3 bounds are ``lower``/``upper`` may hold a row matching ``expr``."""
    counts = {2: values, 3: values}
    return metrics_may_match(bind(expr, SCHEMA), TYPES, values, counts, {2: nulls, 3: nulls}, {},
                             {2: lower, 3: lower}, {2: upper, 3: upper})


@pytest.mark.parametrize("text, expected", [
    ("ST_Intersects(g, ST_PolygonFromEnvelope(0, 0, 10, 10))", "st_intersects(g, (0.0, 0.0, 10.0, 10.0))"),
    ("st_intersects(ST_MakeEnvelope(-5, -1.5, 5, 1, 4326), g)", "st_intersects(g, (-5.0, -1.5, 5.0, 1.0))"),
    ("ST_Contains(ST_GeomFromText('POLYGON ((0 0, 4 0, 4 3, 0 0))'), g)", "st_intersects(g, (0.0, 0.0, 4.0, 3.0))"),
    ("ST_Within(g, ST_GeomFromWKT('LINESTRING (1 2, -3 4)')) AND id > 3",
     "(st_intersects(g, (-3.0, 2.0, 1.0, 4.0)) and gt(id, 3))"),
    ("ST_CoveredBy(g, ST_SetSRID(ST_Point(1, 2), 4326))", "st_intersects(g, (1.0, 2.0, 1.0, 2.0))"),
    ("ST_Intersects(g, st_geomfromwkb(X'0101000000000000000000F03F0000000000000040'))",
     "st_intersects(g, (1.0, 2.0, 1.0, 2.0))"),
    # a geography's envelope: its top edge is an arc that bulges north of its corners
    ("ST_Intersects(h, ST_PolygonFromEnvelope(0, 50, 90, 60))", "st_intersects(h, (0.0, 50.0, 90.0, 67.79"),
    ("ST_Intersects(h, ST_PolygonFromEnvelope(170, -1, -170, 1))", "st_intersects(h, (170.0, -1.0"),
    # what implies no box prunes nothing: a negation, a shape made from a column or by another function, a
    # distance, a geography whose edges are not spherical, a shape that is not WKT
    ("NOT ST_Intersects(g, ST_Point(1, 2))", "true"),
    ("NOT ST_Intersects(k, ST_Point(1, 2))", "true"),
    ("ST_Intersects(g, ST_Buffer(ST_Point(1, 2), 3))", "true"),
    ("ST_Intersects(g, h)", "true"),
    ("ST_Distance(g, ST_Point(1, 2)) < 5", "true"),
    ("ST_Intersects(k, ST_Point(1, 2))", "true"),
    ("ST_Intersects(g, ST_GeomFromText('CIRCLE (1 2)'))", "true"),
    ("ST_Intersects(id, ST_Point(1, 2))", "true"),
])
def test_a_spatial_relation_implies_the_box_of_its_shape(text, expected):
    assert repr(translate_filter(text, SCHEMA)).startswith(expected)
    # the same from a statement's WHERE, parsed by sqlglot
    where = sqlglot.parse_one(f"SELECT * FROM t WHERE {text}", dialect="spark").args["where"].this
    assert repr(translate_filter(filter_of(where), SCHEMA)).startswith(expected)
    # a relation is never implied by a box, so the strengthening (which proves every row of a file matches) has no
    # st_intersects; NOT of a relation is implied by disjoint boxes
    strengthened = repr(translate_filter(text, SCHEMA, strengthen=True))
    assert "st_intersects" not in strengthened
    negated_relation = text.startswith("NOT ") and "st_intersects" in repr(translate_filter(text[4:], SCHEMA))
    assert ("st_disjoint" in strengthened) == negated_relation


def test_a_geometry_file_is_pruned_when_its_box_does_not_meet_the_filter_s():
    q = Predicate("st_intersects", "g", (0, 0, 10, 10))
    assert may(q, corner(5, 5), corner(20, 20))
    assert may(q, corner(10, 10), corner(20, 20))  # (touching corners share a point)
    assert not may(q, corner(11, 0), corner(20, 5))
    assert not may(q, corner(0, -5), corner(10, -0.5))
    assert may(q, None, None)  # (no box: may match)
    assert may(q, struct.pack("<2d", float("nan"), 0.0), corner(1, 1))  # (a NaN corner: the box is not reliable)
    assert not may(q, None, None, nulls=10)  # (nulls only: no value meets anything)
    assert may(Predicate("st_disjoint", "g", (0, 0, 10, 10)), corner(5, 5), corner(6, 6))


def test_a_geography_box_across_the_antimeridian_holds_both_ends():
    across = (corner(170, -5), corner(-170, 5))  # (xmin > xmax: x >= 170 or x <= -170)
    assert may(Predicate("st_intersects", "h", (175, -1, 179, 1)), *across)
    assert may(Predicate("st_intersects", "h", (-179, -1, -175, 1)), *across)
    assert not may(Predicate("st_intersects", "h", (0, -1, 10, 1)), *across)
    assert may(Predicate("st_intersects", "h", (160, -1, -160, 1)), corner(-165, 0), corner(-162, 1))
    assert not may(Predicate("st_intersects", "h", (160, -1, -160, 1)), corner(-150, 0), corner(150, 1))


def test_a_file_disjoint_from_the_box_proves_st_disjoint_for_every_row():
    q = bind(Predicate("st_disjoint", "g", (0, 0, 10, 10)), SCHEMA)
    args = (TYPES, 10, {2: 10}, {2: 0}, {})
    assert metrics_must_match(q, *args, {2: corner(20, 20)}, {2: corner(30, 30)})
    assert not metrics_must_match(q, *args, {2: corner(5, 5)}, {2: corner(30, 30)})
    assert not metrics_must_match(q, TYPES, 10, {2: 10}, {2: 1}, {}, {2: corner(20, 20)}, {2: corner(30, 30)})
    assert not metrics_must_match(bind(Predicate("st_intersects", "g", (0, 0, 10, 10)), SCHEMA), *args,
                                  {2: corner(1, 1)}, {2: corner(2, 2)})
    # a geography's never: which side of a ring is inside is the engine's reading, and a file dropped whole on
    # the boxes' reading could hold rows the engine's keeps
    far = bind(Predicate("st_disjoint", "h", (0, 0, 10, 10)), SCHEMA)
    assert not metrics_must_match(far, TYPES, 10, {3: 10}, {3: 0}, {}, {3: corner(20, 20)}, {3: corner(30, 30)})


def test_a_value_s_box_decides_the_reference_evaluator():
    point = b"\x01\x01\x00\x00\x00" + struct.pack("<2d", 5.0, 5.0)
    assert evaluate(bind(Predicate("st_intersects", "g", (0, 0, 10, 10)), SCHEMA), {2: point})
    assert not evaluate(bind(Predicate("st_intersects", "g", (6, 0, 10, 10)), SCHEMA), {2: point})
    assert evaluate(bind(Predicate("st_disjoint", "g", (6, 0, 10, 10)), SCHEMA), {2: point})
    assert not evaluate(bind(Predicate("st_intersects", "g", (0, 0, 10, 10)), SCHEMA), {2: None})
    assert evaluate(bind(~Predicate("st_intersects", "g", (6, 0, 10, 10)), SCHEMA), {2: point})


@pytest.mark.parametrize("term, box, message", [
    ("id", (0, 0, 1, 1), "geometry and geography columns only"),
    ("g", (0, 0, 1), r"a box is \(xmin, ymin, xmax, ymax\)"),
    ("g", (0, 2, 1, 1), "ymin <= ymax"),
    ("g", (0, 0, float("inf"), 1), "ymin <= ymax"),
    ("g", (5, 0, 1, 1), "only a geography's box crosses the antimeridian"),
    ("h", (0, 0, 190, 1), r"outside longitudes \[-180, 180\]"),
])
def test_a_bad_box_is_a_named_error(term, box, message):
    with pytest.raises(ValidationError, match=message):
        bind(Predicate("st_intersects", term, box), SCHEMA)


def test_a_geography_box_may_cross_the_antimeridian():
    assert bind(Predicate("st_intersects", "h", (170, -1, -170, 1)), SCHEMA).value == (170.0, -1.0, -170.0, 1.0)
