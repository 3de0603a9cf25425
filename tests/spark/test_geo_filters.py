"""Geometry and geography columns' bounding boxes on Spark (spec "Bounds for Geometry and Geography"): written for
both types (a geography's holding its great circle arcs, across the antimeridian with xmin > xmax), and pruning
the files of a read or a delete whose filter is a spatial relation (``ST_Intersects(g, ST_PolygonFromEnvelope(...))``).

Spark has no ST_ functions of its own; the session here registers two, computed by GEOS through shapely, as Apache
Sedona would in a user's session. The rows a pruned read returns are checked against GEOS's answer over every row,
so a box that dropped a matching file would show."""
import struct

import pytest
import shapely
from pyspark.sql import types as ST

import sparkberg

pytestmark = pytest.mark.spark

ROWS = [  # (id, geometry WKT, geography WKT), a file each
    [(1, "POINT (1 1)", "POINT (1 1)"), (2, "LINESTRING (2 2, 9 8)", "POINT (9 9)"), (3, None, None)],
    [(4, "POINT (100 40)", "LINESTRING (0 60, 90 60)")],  # (the arc at 60N peaks at 67.79N, at 45E)
    [(5, "POLYGON ((20 20, 30 20, 30 25, 20 20))", "LINESTRING (170 10, -170 20)")],  # (across the antimeridian)
    [(6, "MULTIPOINT ((-50 -50), (-40 -45))", "POLYGON ((0 70, 120 70, -120 70, 0 70))")],  # (around the pole)
]


def _register(spark) -> None:
    spark.udf.register("ST_PolygonFromEnvelope", lambda *box: shapely.box(*map(float, box)).wkb, ST.BinaryType())
    spark.udf.register("ST_Intersects", lambda a, b: None if a is None or b is None else
                       bool(shapely.from_wkb(a).intersects(shapely.from_wkb(b))), ST.BooleanType())


def _table(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.places", "id bigint, g geometry, h geography", properties={"format-version": "3"})
    for rows in ROWS:
        t = t.append(spark.createDataFrame(
            [(i, g and shapely.from_wkt(g).wkb, h and shapely.from_wkt(h).wkb) for i, g, h in rows],
            "id bigint, g binary, h binary").coalesce(1))
    return t


def _boxes(t, field_id: int) -> dict[int, tuple]:
    """(xmin, ymin, xmax, ymax) of each file's column, by the file's first id."""
    out = {}
    for r in t.metadata_table("files", columns=["lower_bounds", "upper_bounds"]).collect():
        lo, hi = r["lower_bounds"], r["upper_bounds"]
        out[struct.unpack("<q", lo[1])[0]] = struct.unpack_from("<2d", lo[field_id]) + \
            struct.unpack_from("<2d", hi[field_id])
    return out


def test_both_types_get_boxes_a_geography_s_holding_its_arcs(spark, warehouse):
    t = _table(spark, warehouse)
    assert _boxes(t, 2) == {1: (1.0, 1.0, 9.0, 8.0), 4: (100.0, 40.0, 100.0, 40.0), 5: (20.0, 20.0, 30.0, 25.0),
                            6: (-50.0, -50.0, -40.0, -45.0)}
    h = _boxes(t, 3)
    assert h[1] == (1.0, 1.0, 9.0, 9.0)
    assert h[4][:3] == (0.0, 60.0, 90.0) and 67.79 < h[4][3] < 67.7924
    assert h[5] == (170.0, 10.0, -170.0, 20.0)  # (xmin > xmax: x >= 170 or x <= -170)
    assert h[6] == (-180.0, 70.0, 180.0, 90.0)


@pytest.mark.parametrize("box, files", [
    ((0, 0, 10, 10), 1), ((95, 35, 105, 45), 1), ((-60, -60, 25, 21), 3), ((200, 200, 300, 300), 0),
    ((-180, -90, 180, 90), 4),
])
def test_a_spatial_filter_reads_only_the_files_whose_box_meets_its_shape(spark, warehouse, box, files):
    t = _table(spark, warehouse)
    _register(spark)
    condition = f"ST_Intersects(g, ST_PolygonFromEnvelope({', '.join(map(str, box))}))"
    shape = shapely.box(*box)
    expected = sorted(i for rows in ROWS for i, g, _ in rows if g is not None and shapely.from_wkt(g).intersects(shape))
    assert sorted(r["id"] for r in t.to_df(filter=condition).collect()) == expected
    assert t.plan_files(filter=condition).count() == files
    # the same relation either way round, and with another predicate
    assert t.plan_files(filter=f"ST_Intersects(ST_PolygonFromEnvelope({', '.join(map(str, box))}), g) "
                                f"AND id > 0").count() == files


def test_a_geography_filter_prunes_by_the_arcs_not_the_vertices(spark, warehouse):
    t = _table(spark, warehouse)
    # at 45E the arc from 0E to 90E along 60N's ends runs at 67.8N: a box of its vertices (up to 60N) would drop
    # that file
    assert t.plan_files(filter="ST_Intersects(h, ST_PolygonFromEnvelope(44, 66, 46, 67))").count() == 1
    assert t.plan_files(filter="ST_Intersects(h, ST_PolygonFromEnvelope(175, 12, 179, 18))").count() == 1
    assert t.plan_files(filter="ST_Intersects(h, ST_PolygonFromEnvelope(-179, 12, -175, 18))").count() == 1
    assert t.plan_files(filter="ST_Intersects(h, ST_PolygonFromEnvelope(-100, 80, -90, 85))").count() == 1
    assert t.plan_files(filter="ST_Intersects(h, ST_PolygonFromEnvelope(-100, -80, -90, -70))").count() == 0
    assert t.plan_files(filter="NOT ST_Intersects(h, ST_PolygonFromEnvelope(-100, -80, -90, -70))").count() == 4


def test_a_delete_outside_a_shape_drops_whole_files_by_their_boxes(spark, warehouse):
    t = _table(spark, warehouse)
    _register(spark)
    t = t.delete("NOT ST_Intersects(g, ST_PolygonFromEnvelope(-1, -1, 11, 11))")
    summary = t.current_snapshot().summary
    # the files of ids 4, 5 and 6 lie outside the box (disjoint boxes): dropped whole, none rewritten
    assert summary["deleted-data-files"] == "3" and "added-data-files" not in summary
    assert sorted(r["id"] for r in t.to_df().collect()) == [1, 2, 3]
    sparkberg.sql(spark, "DELETE FROM db.places WHERE ST_Intersects(g, ST_PolygonFromEnvelope(0, 0, 1.5, 1.5))",
                  catalog=sparkberg.catalog(spark, warehouse))
    assert sorted(r["id"] for r in t.refresh().to_df().collect()) == [2, 3]
