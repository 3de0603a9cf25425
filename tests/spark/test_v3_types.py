"""Format v3's types on Spark: nanosecond timestamps (spec "Primitive Types": read as Spark's microsecond
timestamps, the sub-microsecond digits dropped toward negative infinity as Iceberg Java's
``DateTimeUtil.nanosToMicros`` does; written from Spark's timestamps as nanoseconds, partitioned and bounded on the
nanosecond value), ``unknown`` (never in a data file, read as null, promoted to any type), geometry and geography
(their WKB, the CRS and edge algorithm kept in the schema; their boxes in test_geo_filters.py), ``variant`` (spec
"Parquet": a group of ``metadata`` and ``value`` whose fields have no ids; shredded ones read), and a table with a
column Spark cannot hold staying readable. Data files are checked field by field with pyarrow."""
import datetime as dt
import glob
import logging
import os
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import types as ST

import sparkberg
from sparkberg.errors import NotSupportedError, ValidationError
from sparkberg.format import types as T
from sparkberg.format.transforms import parse_transform
from sparkberg.write.footer import logical_type_ids

pytestmark = pytest.mark.spark
HAS_VARIANT = hasattr(ST, "VariantType")
EPOCH = dt.datetime(1970, 1, 1)


def _files(t) -> list[str]:
    return sorted(r["file_path"].removeprefix("file:") for r in t.plan_files().collect())


def _nanos(d: dt.datetime) -> int:
    delta = d - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def test_nanosecond_timestamps_are_written_partitioned_and_bounded_on_their_nanoseconds(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.ns", "id bigint, ts timestamp_ns, tz timestamptz_ns",
                         partition_by=["day(ts)", "bucket(4, tz)"], properties={"format-version": "3"})
    assert [f.field_type for f in t.schema().fields] == [T.LONG, T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS]
    rows = [(1, dt.datetime(2024, 1, 1, 23, 59, 59, 999999), dt.datetime(2017, 11, 16, 22, 31, 8)),
            (2, dt.datetime(1969, 12, 31, 23, 59, 59, 999999), None),
            (3, None, dt.datetime(2024, 2, 29, 12, 0, 0, 1))]
    df = spark.createDataFrame(rows, "id bigint, ts timestamp_ntz, tz timestamp")
    t = t.append(df)
    got = t.to_df()
    assert [f.dataType for f in got.schema.fields][1:] == [ST.TimestampNTZType(), ST.TimestampType()]
    assert sorted(tuple(r) for r in got.collect()) == sorted(tuple(r) for r in df.collect())
    day, bucket = parse_transform("day").apply(T.TIMESTAMP_NS), parse_transform("bucket[4]").apply(T.TIMESTAMPTZ_NS)
    by_id = {r[0]: r for r in rows}
    for entry in t.plan_files().collect():
        f = pq.ParquetFile(entry["file_path"].removeprefix("file:"))
        fields = {x.name: x for x in f.schema_arrow}
        assert fields["ts"].type == pa.timestamp("ns") and fields["tz"].type == pa.timestamp("ns", "UTC")
        assert {k: fields[k].metadata[b"PARQUET:field_id"] for k in ("ts", "tz")} == {"ts": b"2", "tz": b"3"}
        data = f.read()
        (i,) = data.column("id").to_pylist()
        ts, tz = (data.column(c).cast(pa.int64())[0].as_py() for c in ("ts", "tz"))
        assert (ts, tz) == tuple(None if v is None else _nanos(v) for v in by_id[i][1:])  # (the micros x 1000)
        part = entry["partition"]
        assert part["ts_day"] == (None if ts is None else EPOCH.date() + dt.timedelta(days=day(ts)))
        assert part["tz_bucket"] == (None if tz is None else bucket(tz))
    files = t.metadata_table("files", columns=["lower_bounds", "upper_bounds", "readable_metrics"]).collect()
    lows = sorted(struct.unpack("<q", bytes(r["lower_bounds"][2]))[0] for r in files if 2 in r["lower_bounds"])
    assert lows == sorted(_nanos(r[1]) for r in rows if r[1] is not None)


def test_sub_microsecond_digits_are_dropped_toward_negative_infinity(spark, warehouse, tmp_path):
    """A file another writer made with nanosecond digits (pyarrow here, as DuckDB or Java write them): -1 ns is
    the microsecond before the epoch, 999 ns past a microsecond is that microsecond; filters prune on the
    nanosecond bounds."""
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.nsd", "id bigint, ts timestamp_ns", properties={"format-version": "3"})
    schema = pa.schema([pa.field("id", pa.int64(), metadata={"PARQUET:field_id": "1"}),
                        pa.field("ts", pa.timestamp("ns"), metadata={"PARQUET:field_id": "2"})])
    nanos = [-1, 1, 1_000_000_999, -86_400_000_000_001, None]
    path = str(tmp_path / "other.parquet")
    pq.write_table(pa.table([pa.array(range(len(nanos)), pa.int64()), pa.array(nanos, pa.timestamp("ns"))],
                            schema=schema), path)
    t = t.add_files([path])
    got = dict(t.to_df().collect())
    assert got == {0: dt.datetime(1969, 12, 31, 23, 59, 59, 999999), 1: EPOCH, 2: dt.datetime(1970, 1, 1, 0, 0, 1),
                   3: dt.datetime(1969, 12, 30, 23, 59, 59, 999999), 4: None}
    before = t.to_df(filter="ts < TIMESTAMP_NTZ '1970-01-01 00:00:00'").collect()
    assert sorted(r["id"] for r in before) == [0, 3]
    assert t.plan_files(filter="ts > TIMESTAMP_NTZ '1970-01-02 00:00:00'").count() == 0  # (the file's bounds)


def test_unknown_columns_are_null_never_stored_and_promote_to_any_type(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.unk", "id bigint, u unknown, w unknown", properties={"format-version": "3"})
    t = t.append(spark.sql("SELECT id, NULL AS u, NULL AS w FROM range(3)"))
    got = t.to_df()
    assert isinstance(got.schema["u"].dataType, ST.NullType)
    assert sorted(tuple(r) for r in got.collect()) == [(0, None, None), (1, None, None), (2, None, None)]
    assert {tuple(pq.ParquetFile(p).schema_arrow.names) for p in _files(t)} == {("id",)}  # (spec: never stored)
    assert {k for r in t.metadata_table("files", columns=["value_counts"]).collect() for k in r[0]} == {1}
    with t.update_schema() as u:
        u.update_column("u", "string")
        u.update_column("w", "struct<a: int, b: array<string>>")
    assert t.schema().find_field("u").field_type == T.STRING
    w = t.schema().find_field("w").field_type
    assert isinstance(w, T.StructType) and len({f.field_id for f in t.schema().index_by_id().values()}) == 6
    t = t.append(spark.sql("SELECT 9L AS id, 'x' AS u, named_struct('a', 1, 'b', array('y')) AS w"))
    rows = sorted(tuple(r) for r in t.to_df().collect())
    assert rows[:3] == [(0, None, None), (1, None, None), (2, None, None)]
    assert rows[3][:2] == (9, "x") and tuple(rows[3][2]) == (1, ["y"])
    v2 = cat.create_table("db.unk2", "id bigint", properties={"format-version": "2"})
    with pytest.raises(ValidationError):
        with v2.update_schema() as u:
            u.add_column("u", "unknown")


def test_geometry_and_geography_are_their_wkb_with_crs_and_algorithm_kept(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.geo", "id bigint, g geometry(EPSG:4326), h geography(OGC:CRS84, karney)",
                         properties={"format-version": "3"})
    assert [str(f.field_type) for f in t.schema().fields][1:] == ["geometry(EPSG:4326)",
                                                                   "geography(OGC:CRS84, karney)"]
    point = bytes.fromhex("0101000000000000000000F03F0000000000000040")  # POINT (1 2), little-endian WKB
    line = bytes.fromhex("010200000002000000000000000000000000000000000000000000000000000840"
                         "0000000000001040")
    df = spark.createDataFrame([(1, point, line), (2, None, point)], "id bigint, g binary, h binary")
    t = t.append(df)
    assert sorted(tuple(r) for r in t.to_df().collect()) == [(1, point, line), (2, None, point)]
    assert sorted((v is None, v) for p in _files(t) for v in pq.read_table(p).column("g").to_pylist()) == \
        [(False, point), (True, None)]
    ms = t.metadata_table("files", columns=["value_counts", "null_value_counts", "lower_bounds"]).collect()
    assert sum(m["value_counts"][2] for m in ms) == 2 and sum(m["null_value_counts"][2] for m in ms) == 1
    # the geometry's bounds are the corners of its values' box (POINT (1 2) alone: x:y 1:2 twice); the
    # geography's are not kept: its karney edges are geodesics on the ellipsoid, which the spherical box does not
    # follow (test_geo_filters.py has a spherical geography's)
    boxes = [(m["lower_bounds"] or {}).get(2) for m in ms]
    assert [b for b in boxes if b is not None] == [struct.pack("<2d", 1.0, 2.0)]
    assert all(3 not in (m["lower_bounds"] or {}) for m in ms)
    # a comparison of the WKB is Spark's, never pruned by the boxes; binding one is a named error
    assert [r["id"] for r in t.to_df(filter=f"g = X'{point.hex()}'").collect()] == [1]
    assert t.to_df(filter="g = X'00'").count() == 0 and t.to_df(filter="g IS NULL").count() == 1
    from sparkberg.expressions.predicates import Predicate, bind
    with pytest.raises(ValidationError, match="column 'g' of type geometry"):
        bind(Predicate("eq", "g", point), t.schema())
    assert bind(Predicate("is_null", "h"), t.schema()).op == "is_null"
    reloaded = cat.load_table("db.geo")
    assert str(reloaded.schema().find_field("h").field_type) == "geography(OGC:CRS84, karney)"


@pytest.mark.skipif(not hasattr(ST, "GeometryType"), reason="Spark's GEOMETRY type came in 4.1")
def test_spark_s_geometry_type_is_written_as_its_wkb(spark, warehouse):
    # (Spark 4.1 has the type behind this setting, off by default; later Sparks have it on)
    was = spark.conf.get("spark.sql.geospatial.enabled", None)
    spark.conf.set("spark.sql.geospatial.enabled", "true")
    try:
        _write_spark_geometry(spark, warehouse)
    finally:
        if was is None:
            spark.conf.unset("spark.sql.geospatial.enabled")
        else:
            spark.conf.set("spark.sql.geospatial.enabled", was)


def _write_spark_geometry(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.sgeo", "id bigint, g geometry", properties={"format-version": "3"})
    wkb = "X'0101000000000000000000F03F0000000000000040'"
    with pytest.raises(ValidationError, match=r"column 'g' has type geometry\(0\).*write st_asbinary\(...\) of it"):
        t.append(spark.sql(f"SELECT 1L AS id, st_geomfromwkb({wkb}) AS g"))
    assert t.refresh().current_snapshot() is None
    t = t.append(spark.sql(f"SELECT 1L AS id, st_asbinary(st_geomfromwkb({wkb})) AS g"))
    assert t.to_df().selectExpr("hex(g)").first()[0] == wkb[2:-1]


VARIANTS = [
    "{}", "[]", "null", "true", "false", "0", "-128", "32767", "-2147483648", "9223372036854775807", "1.5",
    "-0.0", "1e300", "12345678901234567890.123", '""', '"a string with ünïcode"',
    '{"a": {"b": {"c": {"d": {"e": [1, [2, [3, {"f": null}]]]}}}}}',
    '{' + ", ".join(f'"key{i}": {i}' for i in range(1000)) + '}',
    '[1, "two", 3.0, null, {"five": [5]}]',
]


@pytest.mark.skipif(not HAS_VARIANT, reason="PySpark before 4.0 has no variant type")
def test_variant_columns_round_trip_at_any_depth_as_the_spec_stores_them(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.var", "id bigint, v variant, s struct<x: variant, n: int>, l array<variant>, "
                                   "m map<string, variant>", properties={"format-version": "3"})
    values = ", ".join(f"({i}, '{j.replace(chr(39), chr(39) * 2)}')" for i, j in enumerate(VARIANTS))
    src = spark.sql(f"SELECT id, parse_json(j) AS v, named_struct('x', parse_json(j), 'n', CAST(id AS int)) AS s, "
                    f"array(parse_json(j), parse_json('1')) AS l, map('k', parse_json(j)) AS m "
                    f"FROM VALUES {values} AS t(id, j) UNION ALL "
                    "SELECT 100L, CAST(DATE '2024-02-29' AS variant), NULL, NULL, NULL UNION ALL "
                    "SELECT 101L, CAST(TIMESTAMP_NTZ '2024-01-01 00:00:00.123456' AS variant), NULL, NULL, NULL "
                    "UNION ALL SELECT 102L, CAST(X'00FF' AS variant), NULL, NULL, NULL UNION ALL "
                    "SELECT 103L, CAST(CAST(1.25 AS decimal(10, 4)) AS variant), NULL, NULL, NULL UNION ALL "
                    "SELECT 104L, NULL, NULL, NULL, NULL")
    t = t.append(src)
    as_json = ("id", "to_json(v)", "to_json(s.x)", "s.n", "to_json(l)", "to_json(m)", "schema_of_variant(v)")
    assert sorted(tuple(r) for r in t.to_df().selectExpr(*as_json).collect()) == \
        sorted(tuple(r) for r in src.selectExpr(*as_json).collect())
    a = t.to_df().where("variant_get(v, '$.a.b.c.d.e[1][0]', 'int') = 2").select("id").collect()
    assert [r["id"] for r in a] == [16]
    variant_ids = {f.field_id for f in t.schema().index_by_id().values() if f.field_type == T.VARIANT}
    assert len(variant_ids) == 4
    stored = []
    for path in _files(t):
        f = pq.ParquetFile(path)
        v = f.schema_arrow.field("v")
        assert v.metadata[b"PARQUET:field_id"] == b"2"
        assert [c.name for c in v.type] == ["metadata", "value"]
        assert all(not c.metadata for c in v.type)  # (the spec: metadata and value have no field ids)
        stored += f.read().column("v").to_pylist()
        annotated = {i for i, kinds in logical_type_ids(_footer(path)).items() if kinds == [16]}  # (VARIANT)
        assert annotated == variant_ids, path  # (every variant group, at any depth, as the spec annotates it)
    # (PySpark's toArrow fails on a null variant: the reference leaves it out)
    spark_own = src.where("v IS NOT NULL").select("v").toArrow().column("v").to_pylist()

    def order(x):
        return x["value"]
    assert stored.count(None) == 1
    assert sorted((x for x in stored if x is not None), key=order) == sorted(
        ({"metadata": x["metadata"], "value": x["value"]} for x in spark_own), key=order)  # (Spark's own encoding)
    ms = t.metadata_table("files", columns=["value_counts", "lower_bounds"]).collect()
    # (metrics of a variant, as the spec allows: none; the id column's are kept)
    assert sum(m["value_counts"][1] for m in ms) == len(VARIANTS) + 5
    assert all(2 not in m["value_counts"] and 2 not in (m["lower_bounds"] or {}) for m in ms)


def _footer(path: str) -> bytes:
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<I", data[-8:-4])[0]
    return data[-8 - n:-8]


def _variant_metadata(keys: list[str]) -> bytes:
    """Variant metadata (Parquet VariantEncoding.md): version 1, 1-byte offsets, the keys unsorted."""
    out = bytes([0x01, len(keys)])
    offset, offsets = 0, [0]
    for k in keys:
        offset += len(k.encode())
        offsets.append(offset)
    return out + bytes(offsets) + b"".join(k.encode() for k in keys)


@pytest.mark.skipif(not HAS_VARIANT, reason="PySpark before 4.0 has no variant type")
def test_a_shredded_variant_another_writer_made_is_read(spark, warehouse, tmp_path):
    """A variant shredded as Parquet's VariantShredding.md lays it out (DuckDB writes such files): an object whose
    field ``a`` is shredded as int64 (``typed_value``), ``b`` left in the residual ``value``."""
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.shred", "id bigint, v variant", properties={"format-version": "3"})
    meta = _variant_metadata(["a", "b"])
    # residual object {"b": "x"}: header (object, 1-byte ids and offsets), 1 field, id 1, offsets 0 and 2,
    # then the short string "x"
    residual = bytes([0x02, 0x01, 0x01, 0x00, 0x02, (1 << 2) | 0x01]) + b"x"
    shredded_a = pa.struct([pa.field("value", pa.binary()), pa.field("typed_value", pa.int64())])
    vtype = pa.struct([pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary()),
                       pa.field("typed_value", pa.struct([pa.field("a", shredded_a)]))])
    v = pa.array([{"metadata": meta, "value": residual, "typed_value": {"a": {"value": None, "typed_value": 5}}},
                  {"metadata": meta, "value": None, "typed_value": {"a": {"value": None, "typed_value": -7}}}],
                 vtype)
    schema = pa.schema([pa.field("id", pa.int64(), metadata={"PARQUET:field_id": "1"}),
                        pa.field("v", vtype, metadata={"PARQUET:field_id": "2"})])
    path = str(tmp_path / "shredded.parquet")
    pq.write_table(pa.table([pa.array([1, 2], pa.int64()), v], schema=schema), path)
    t = t.add_files([path])
    got = sorted(tuple(r) for r in t.to_df().selectExpr("id", "to_json(v)").collect())
    assert got == [(1, '{"a":5,"b":"x"}'), (2, '{"a":-7}')]


def test_a_column_spark_cannot_hold_leaves_the_rest_of_the_table_readable(spark, warehouse, monkeypatch, caplog):
    """As on PySpark 3.5, which has no variant type (the interop suite reads such a table there)."""
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.cannot", "id bigint, v variant, s string", properties={"format-version": "3"})
    if HAS_VARIANT:
        t = t.append(spark.sql("SELECT id, parse_json('{\"k\": 1}') AS v, 'x' AS s FROM range(2)"))
        monkeypatch.delattr(ST, "VariantType")
    assert sorted(tuple(r) for r in t.to_df(columns=["id", "s"]).collect()) == \
        ([(0, "x"), (1, "x")] if HAS_VARIANT else [])
    with caplog.at_level(logging.WARNING, logger="sparkberg"):
        everything = t.to_df()
    assert everything.columns == ["id", "s"]
    assert "reading without column(s) 'v'" in caplog.text and "no variant type" in caplog.text
    with pytest.raises(NotSupportedError, match="column 'v' of type variant cannot be read: PySpark .* has no "
                                                "variant type"):
        t.to_df(columns=["id", "v"])
    assert sparkberg.sql(spark, "SELECT count(*), max(s) FROM db.cannot", catalog=cat).first()[0] == \
        (2 if HAS_VARIANT else 0)
    assert sparkberg.sql(spark, "SELECT * FROM db.cannot", catalog=cat).columns == ["id", "s"]
    with pytest.raises(NotSupportedError, match="column 'v' of type variant cannot be read"):
        sparkberg.sql(spark, "SELECT id FROM db.cannot WHERE v IS NOT NULL", catalog=cat)
    assert os.path.isdir(warehouse) and glob.glob(f"{warehouse}/db/cannot/metadata/*.json")
