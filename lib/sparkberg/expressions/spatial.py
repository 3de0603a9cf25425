"""Spatial filters as the boxes that prune files by a geometry's or geography's bounds.

Spark has no spatial predicate of its own; a library registers them (Apache Sedona's ``ST_Intersects``,
``ST_Contains``...; Databricks and PostGIS name them alike). A filter such as::

    ST_Intersects(geom, ST_PolygonFromEnvelope(-74.3, 40.5, -73.7, 40.9))

is applied to the rows by Spark, with whoever defines the function; sparkberg reads from it only what prunes: a
column of type ``geometry`` or ``geography``, and the bounding box of the shape it is tested against. Every
relation read here (intersects, contains, within, covers, covered by, touches, overlaps, crosses, equals, either
way round) holds only when the two share a point, so a row it keeps has a value whose box meets the shape's box:
``st_intersects(column, box)``, which a file whose bounds do not meet the box cannot satisfy.

The shapes read are literals made by ``ST_PolygonFromEnvelope`` / ``ST_MakeEnvelope`` (xmin, ymin, xmax, ymax),
``ST_Point`` / ``ST_MakePoint``, ``ST_GeomFromText`` and its WKT siblings, ``ST_GeomFromWKB`` / ``ST_GeogFromWKB``
of a binary literal, and ``ST_SetSRID`` of one of them. A shape's box is the column type's (format/geo.py): a
geometry's is its coordinates', a geography's (spherical edges) holds its arcs, so an envelope tested against a
geography reaches past its corners' latitudes. Anything else (a function of a column, a geography whose edges are
not spherical, a shape that cannot be read) prunes nothing.
"""
from __future__ import annotations

import struct
from typing import Any, Callable

from sparkberg.expressions.tree import Col, Lit, Node
from sparkberg.format import types as T

# the relations that hold only when the two shapes share a point (either argument may be the column)
RELATIONS = frozenset({"st_intersects", "st_contains", "st_within", "st_covers", "st_coveredby", "st_touches",
                       "st_overlaps", "st_crosses", "st_equals"})
_ENVELOPES = frozenset({"st_polygonfromenvelope", "st_makeenvelope"})
_POINTS = frozenset({"st_point", "st_makepoint"})
_TEXTS = frozenset({"st_geomfromtext", "st_geomfromwkt", "st_geometryfromtext", "st_geogfromtext",
                    "st_geogfromwkt", "st_geographyfromtext"})
_BINARIES = frozenset({"st_geomfromwkb", "st_geogfromwkb", "st_geometryfromwkb", "st_geographyfromwkb"})
# the function names a filter's parsers keep as calls (every other function is opaque to them)
FUNCTIONS = RELATIONS | _ENVELOPES | _POINTS | _TEXTS | _BINARIES | {"st_setsrid"}


def implied_box(node: Any, field: Callable[[Any], T.NestedField | None]) -> tuple[str, tuple] | None:
    """(column name, box) of an ``st_intersects`` predicate that the call ``node`` (a parse tree's
    ``Node("call", (name, args))``) implies, or None; ``field`` resolves a column node to its field."""
    name, args = node.args
    if name not in RELATIONS or len(args) != 2:
        return None
    for column, other in (args, args[::-1]):
        f = field(column) if isinstance(column, Col) else None
        if f is None or not isinstance(f.field_type, (T.GeometryType, T.GeographyType)):
            continue
        wkb = shape_wkb(other)
        if wkb is None:
            return None
        from sparkberg.format.geo import box_of  # (numpy and pyarrow: only once a spatial filter is met)
        box = box_of(f.field_type, wkb)
        return None if box is None else (column.name, box)
    return None


def shape_wkb(node: Any) -> bytes | None:
    """The WKB of a literal shape made by one of the constructors this module reads, or None."""
    if not (isinstance(node, Node) and node.kind == "call"):
        return None
    name, args = node.args
    try:
        if name == "st_setsrid" and len(args) == 2:
            return shape_wkb(args[0])
        if name in _ENVELOPES and len(args) in (4, 5):
            xmin, ymin, xmax, ymax = (_number(a) for a in args[:4])
            ring = [(xmin, ymin), (xmax, ymin), (xmax, ymax), (xmin, ymax), (xmin, ymin)]
            return struct.pack("<BIII", 1, 3, 1, 5) + b"".join(struct.pack("<2d", *p) for p in ring)
        if name in _POINTS and 2 <= len(args) <= 4:
            return struct.pack("<BI2d", 1, 1, _number(args[0]), _number(args[1]))
        if name in _TEXTS and len(args) in (1, 2) and isinstance(args[0], Lit) and args[0].kind == "string":
            from sparkberg.format.geo import wkt_to_wkb  # (numpy and pyarrow, as above)
            return wkt_to_wkb(args[0].value)
        if name in _BINARIES and len(args) in (1, 2) and isinstance(args[0], Lit) and args[0].kind == "binary":
            return args[0].value
    except (ValueError, TypeError, struct.error):
        return None
    return None


def _number(node: Any) -> float:
    if not (isinstance(node, Lit) and node.kind == "number"):
        raise ValueError("not a number")
    return float(node.value)
