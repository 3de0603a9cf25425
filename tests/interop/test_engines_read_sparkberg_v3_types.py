"""Iceberg Java 1.10.2 and DuckDB 1.5.5 reading the format v3 columns sparkberg writes: nanosecond timestamps
(partitioned by ``day``, bounded on the nanosecond value), geometry and geography (their WKB, annotated GEOMETRY
and GEOGRAPHY in the Parquet footer) and ``unknown``.

Java's Spark integration refuses every one of these tables, even a query of another column ("Cannot convert
unknown type to Spark: timestamp_ns", and alike for geometry, geography and unknown): sparkberg reads them where it
cannot. Its core API (``IcebergGenerics``, the generic Parquet reader) reads the nanoseconds and the unknown column:
the values equal what sparkberg wrote, and its scan prunes by sparkberg's nanosecond bounds and day partitions as
sparkberg's planner does. It does not read a geometry or geography annotated as the spec's "Parquet" section says
(binary, logical type GEOMETRY / GEOGRAPHY): ``BaseParquetReaders`` has no case for those annotations ("Unsupported
logical type: GEOMETRY"); the spec is followed here, and DuckDB needs the annotation. (Java 1.10.2 has no spatial
predicate to prune by the boxes either; variant columns, written only from PySpark 4, are read back by DuckDB in
test_duckdb_v3_types.py.) DuckDB reads the nanoseconds and the geometries (as its GEOMETRY type, which
it finds by the Parquet annotation); it has no geography support ("Not implemented Error: Geography support") and
no ``unknown`` type."""
import datetime as dt
import os
import struct

import pytest

import sparkberg

pytestmark = pytest.mark.interop

POINT = struct.pack("<BI2d", 1, 1, 1.0, 2.0)
LINE = struct.pack("<BII4d", 1, 2, 2, 170.0, 10.0, -170.0, 20.0)  # (a geography edge across the antimeridian)
ROWS = [  # (id, ts, tz, g, h): a file each, the first before the epoch
    [(1, dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(1969, 12, 31, 23, 0, tzinfo=dt.timezone.utc),
      POINT, LINE), (2, None, None, None, None)],
    [(3, dt.datetime(2024, 5, 5, 5, 5, 5, 123456), dt.datetime(2024, 5, 5, 12, 0, 0, 1, tzinfo=dt.timezone.utc),
      LINE, POINT)],
]


def _nanos(ts: dt.datetime | None) -> int | None:
    if ts is None:
        return None
    delta = ts.replace(tzinfo=None) - dt.datetime(1970, 1, 1)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


@pytest.fixture(scope="module")
def v3_table(java, java_warehouse):
    cat = sparkberg.catalog(java, java_warehouse)
    t = cat.create_table("sbv3.types", "id bigint, ts timestamp_ns, tz timestamptz_ns, g geometry(OGC:CRS84), "
                                       "h geography, u unknown", partition_by=["day(ts)"],
                         properties={"format-version": "3"})
    for rows in ROWS:
        df = java.createDataFrame(rows, "id bigint, ts timestamp_ntz, tz timestamp, g binary, h binary")
        t = t.append(df.selectExpr("*", "NULL AS u"))
    jvm = java._jvm
    jt = jvm.org.apache.iceberg.hadoop.HadoopTables(java.sparkContext._jsc.hadoopConfiguration()).load(
        os.path.join(java_warehouse, "sbv3", "types"))
    return t, jt


def test_java_s_generic_reader_reads_sparkberg_s_nanoseconds_and_unknown(java, v3_table):
    t, jt = v3_table
    jvm = java._jvm
    util = jvm.org.apache.iceberg.util.DateTimeUtil
    assert str(jt.schema().findType("ts")) == "timestamp_ns" and str(jt.schema().findType("u")) == "unknown"
    assert [str(jt.schema().findType(c)).split("(")[0] for c in ("g", "h")] == ["geometry", "geography"]
    got, it = {}, jvm.org.apache.iceberg.data.IcebergGenerics.read(jt).select(["id", "ts", "tz", "u"]).build() \
        .iterator()
    while it.hasNext():
        r = it.next()
        ts, tz = r.getField("ts"), r.getField("tz")
        got[r.getField("id")] = (None if ts is None else util.nanosFromTimestamp(ts),
                                 None if tz is None else util.nanosFromTimestamptz(tz), r.getField("u"))
    assert got == {i: (_nanos(ts), _nanos(tz), None) for rows in ROWS for i, ts, tz, _, _ in rows}
    # the geometry's annotation, which the spec asks for, is one Java 1.10.2's generic reader has no case for
    with pytest.raises(Exception, match="Unsupported logical type: GEOMETRY"):
        it = jvm.org.apache.iceberg.data.IcebergGenerics.read(jt).select(["id", "g"]).build().iterator()
        while it.hasNext():
            it.next()


def test_sparkberg_on_pyspark_3_5_reads_its_annotated_geometries(java, v3_table):
    """Spark 3.5's parquet-mr fails on the footer's GEOMETRY / GEOGRAPHY annotations ("Cannot invoke
    LogicalType$_Fields.ordinal()"), whatever the columns read: such a table is read by sparkberg's Arrow reader."""
    t, _ = v3_table
    got = {r["id"]: (r["ts"], r["g"], r["h"], r["u"]) for r in t.to_df().collect()}
    assert got == {i: (ts, g, h, None) for rows in ROWS for i, ts, _, g, h in rows}
    assert sorted(r["id"] for r in t.to_df(filter="ts < '1970-01-01'", columns=["id"]).collect()) == [1]


def test_java_prunes_by_sparkberg_s_nanosecond_bounds_and_day_partitions(java, v3_table):
    t, jt = v3_table
    e = java._jvm.org.apache.iceberg.expressions.Expressions
    for sql, expression, files in (
            ("ts >= '2024-05-05 05:05:05.123456'", e.greaterThanOrEqual("ts", "2024-05-05T05:05:05.123456"), 1),
            ("ts > '2024-05-05 05:05:05.123456'", e.greaterThan("ts", "2024-05-05T05:05:05.123456000"), 0),
            ("ts < '1970-01-01 00:00:00'", e.lessThan("ts", "1970-01-01T00:00:00"), 1),
            ("ts IS NULL", e.isNull("ts"), 1), ("id > 0", e.greaterThan("id", 0), 3)):
        java_files, it = set(), jt.newScan().filter(expression).planFiles().iterator()
        while it.hasNext():
            java_files.add(str(it.next().file().location()))
        ours = {r["file_path"] for r in t.plan_files(filter=sql).collect()}
        assert ours == java_files and len(ours) == files, sql


def test_duckdb_reads_sparkberg_s_geometries_and_nanoseconds(java, java_warehouse, duck):
    cat = sparkberg.catalog(java, java_warehouse)
    t = cat.create_table("sbv3.duck", "id bigint, g geometry, ts timestamp_ns", properties={"format-version": "3"})
    rows = [(i, g, ts) for i, ts, _, g, _ in ROWS[0] + ROWS[1]]
    t = t.append(java.createDataFrame(rows, "id bigint, g binary, ts timestamp_ntz"))
    got = duck.sql(f"SELECT id, g, epoch_ns(ts), typeof(g) FROM iceberg_scan('{t.metadata_location}')").fetchall()
    assert sorted(r[:3] for r in got) == sorted((i, g, _nanos(ts)) for i, g, ts in rows)
    assert {r[3] for r in got} == {"GEOMETRY"}
