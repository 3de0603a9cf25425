"""Appends on Spark 4: every transform and format version round-trips, metrics and summaries are Iceberg's,
row lineage advances, and bad data gets a named error with nothing committed and nothing left behind."""
import os

import pytest
from pyspark.sql import functions as F

import sparkberg
from sparkberg.avro.manifest import read_manifest, read_manifest_list
from sparkberg.errors import ValidationError
from sparkberg.format import types as T
from sparkberg.format.values import from_bytes

pytestmark = pytest.mark.spark
DDL = ("id bigint NOT NULL, i int, d date, ts timestamp, tsn timestamp_ntz, s string, b binary, dec decimal(10,2), "
       "f float, dbl double, flag boolean, loc struct<lat: double, lon: double>, tags array<string>, "
       "m map<string, int>")
PARTITIONS = ["bucket(8, id)", "truncate(s, 2)", "year(d)", "day(ts)", "hour(tsn)", "i", "truncate(dec, 100)",
              "bucket(4, s)", "truncate(b, 1)", "bucket(3, d)"]


def source(spark, n=60):
    return spark.sql(f"""
        SELECT id, CAST(id % 3 - 1 AS int) AS i, date_add(DATE'1969-12-30', CAST(id % 5 AS int)) AS d,
               CASE WHEN id % 7 = 0 THEN NULL ELSE TIMESTAMP'2024-01-01 00:00:00' + make_interval(0,0,0,
                    CAST(id % 4 AS int), CAST(id % 24 AS int)) END AS ts,
               TIMESTAMP_NTZ'1969-12-31 22:00:00' + make_interval(0,0,0,0, CAST(id AS int)) AS tsn,
               element_at(array('alpha', 'beta', 'été😀', ''), CAST(id % 4 + 1 AS int)) AS s,
               CAST(concat('b', id % 3) AS binary) AS b, CAST(id * 3.7 - 50 AS decimal(10,2)) AS dec,
               CASE WHEN id = 5 THEN float('NaN') ELSE CAST(id / 4 AS float) END AS f,
               CASE WHEN id = 6 THEN -0.0D ELSE id * 1.5D END AS dbl, id % 2 = 0 AS flag,
               named_struct('lat', id * 1.0D, 'lon', -1.0D) AS loc, array(concat('t', id)) AS tags,
               map('k', CAST(id AS int)) AS m
        FROM range(0, {n}) AS r(id)""")


def rows(df):
    def norm(v):
        if isinstance(v, float) and v != v:
            return "NaN"
        if hasattr(v, "asDict"):
            return tuple(norm(x) for x in v)
        if isinstance(v, dict):
            return tuple(sorted(v.items()))
        if isinstance(v, list):
            return tuple(norm(x) for x in v)
        if isinstance(v, bytearray):
            return bytes(v)
        return v
    return sorted((tuple(norm(v) for v in r) for r in df.collect()), key=repr)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_append_roundtrip_every_transform(spark, warehouse, version):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.t", DDL, partition_by=PARTITIONS, properties={"format-version": str(version)})
    src = source(spark)
    t.append(src).append(source(spark, 10))
    expected = rows(src.unionByName(source(spark, 10)))
    assert rows(t.to_df()) == expected
    again = cat.load_table("db.t")
    assert rows(again.to_df()) == expected
    s = again.metadata.current_snapshot
    assert s.summary["operation"] == "append" and s.summary["added-records"] == "10"
    assert s.summary["total-records"] == "70"
    assert int(s.summary["total-data-files"]) == again.plan_files().count()
    if version == 3:
        assert again.metadata.next_row_id == 70 and s.first_row_id == 60 and s.added_rows == 10
        ids = [r[0] for r in again.to_df(columns=["_row_id"]).collect()]
        assert sorted(ids) == list(range(70))
    # partition values agree with the scalar transforms, file by file
    for r in again.to_df(columns=["id", "_partition"]).collect():
        from sparkberg.format.transforms import BucketTransform
        assert r["_partition"]["id_bucket"] == BucketTransform(8).apply(T.LONG)(r["id"])


def test_metrics_and_bounds(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.m", "id bigint, s string, dbl double, note string",
                         properties={"write.metadata.metrics.column.note": "none"})
    long_value = "z" * 20 + "tail"
    t.append(spark.createDataFrame([(1, "apple", -0.0, "x"), (9, long_value, float("nan"), "y"),
                                    (None, None, 2.5, None)], "id bigint, s string, dbl double, note string")
             .repartition(1))
    snap = t.metadata.current_snapshot
    (mf,) = read_manifest_list(t.io.read(snap.manifest_list))
    (entry,) = read_manifest(t.io.read(mf.manifest_path)).entries
    d = entry.data_file
    assert d.record_count == 3 and d.value_counts[1] == 3 and d.null_value_counts[1] == 1
    assert from_bytes(T.LONG, d.lower_bounds[1]) == 1 and from_bytes(T.LONG, d.upper_bounds[1]) == 9
    assert from_bytes(T.STRING, d.lower_bounds[2]) == "apple"
    assert from_bytes(T.STRING, d.upper_bounds[2]) == "z" * 15 + "{"  # truncated to 16 with carry
    assert d.nan_value_counts[3] == 1
    assert str(from_bytes(T.DOUBLE, d.lower_bounds[3])) == "-0.0" and from_bytes(T.DOUBLE, d.upper_bounds[3]) == 2.5
    assert 4 not in d.value_counts and 4 not in (d.lower_bounds or {})
    assert d.column_sizes[1] > 0 and d.file_size_in_bytes == os.path.getsize(d.file_path[len("file://"):])
    assert entry.snapshot_id == snap.snapshot_id and entry.sequence_number is None  # inherited


def test_a_bad_metrics_mode_is_named_and_writes_nothing(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.badmode", "id bigint, note string",
                         properties={"write.metadata.metrics.column.note": "truncate(0)"})
    with pytest.raises(ValidationError, match=r"invalid metrics mode 'truncate\(0\)' for column 'note'"):
        t.append(spark.createDataFrame([(1, "x")], "id bigint, note string"))
    t.refresh()
    assert t.metadata.current_snapshot is None
    data = os.path.join(warehouse, "db", "badmode", "data")
    assert not os.path.exists(data) or not any(files for _, _, files in os.walk(data))


def test_target_file_size_and_compression(spark, warehouse):
    import pyarrow.parquet as pq
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.s", "id bigint, v string", properties={
        "write.target-file-size-bytes": "1", "write.parquet.compression-codec": "snappy"})
    t.append(spark.range(0, 50).select("id", F.concat(F.lit("v"), "id").alias("v")).coalesce(1))
    files = [r["file_path"] for r in t.plan_files().collect()]
    assert len(files) > 1  # cut at the target size
    assert t.to_df().count() == 50
    meta = pq.read_metadata(files[0][len("file://"):])
    assert meta.row_group(0).column(0).compression == "SNAPPY"
    assert meta.schema.to_arrow_schema().field("id").metadata[b"PARQUET:field_id"] == b"1"


@pytest.mark.parametrize("data,message", [
    ("SELECT CAST(NULL AS bigint) AS id, 'x' AS v", "column 'id' is required"),
    ("SELECT 'x' AS v", "required column 'id' is missing"),
    ("SELECT 1L AS id, 'x' AS v, 3 AS extra", "column 'extra' is not in the table schema"),
    ("SELECT 1L AS id, 1.5D AS v2, 'x' AS v", "column 'v2' is not in the table schema"),
    ("SELECT 'abc' AS id, 'x' AS v", "column 'id' has type string"),
])
def test_bad_data_commits_nothing_and_leaves_nothing(spark, warehouse, data, message):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.bad", "id bigint NOT NULL, v string", partition_by=["bucket(2, id)"])
    before = t.metadata
    with pytest.raises(Exception, match=message):
        t.append(spark.sql(data))
    assert cat.load_table("db.bad").metadata == before
    data_dir = os.path.join(warehouse, "db", "bad", "data")
    leftovers = [f for _, _, fs in os.walk(data_dir) for f in fs if f.endswith(".parquet")]
    assert leftovers == []
    assert sorted(os.listdir(os.path.join(warehouse, "db", "bad", "metadata"))) == ["v1.metadata.json",
                                                                                   "version-hint.text"]


def test_missing_optional_columns_are_null_and_types_widen(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.w", "id bigint, x double, v string")
    t.append(spark.sql("SELECT 1 AS id, CAST(2.5 AS float) AS x"))
    assert [tuple(r) for r in t.to_df().collect()] == [(1, 2.5, None)]


def test_concurrent_appends_lose_nothing(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    cat.create_table("db.c", "id bigint")
    a, b = cat.load_table("db.c"), cat.load_table("db.c")
    a.append(spark.range(0, 5))
    b.append(spark.range(5, 8))  # stale base: retried on the new metadata
    t = cat.load_table("db.c")
    assert sorted(r[0] for r in t.to_df().collect()) == list(range(8))
    assert len(t.metadata.snapshots) == 2 and t.metadata.current_snapshot.parent_snapshot_id is not None


@pytest.mark.parametrize("partition", ["bucket(4, u)", "u"])
def test_uuid_columns_round_trip_and_partition(spark, warehouse, partition):
    import uuid
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.uuids", T.Schema((T.NestedField(1, "id", T.LONG), T.NestedField(2, "u", T.UUID))),
                         partition_by=[partition])
    values = [(i, str(uuid.UUID(int=(i * 0x9E3779B97F4A7C15) % (1 << 128)))) for i in range(20)] + [(99, None)]
    t.append(spark.createDataFrame(values, "id bigint, u string"))
    assert sorted(tuple(r) for r in t.to_df().collect()) == sorted(values)
    assert t.to_df(filter=f"u = '{values[3][1]}'").collect()[0]["id"] == 3
    t.delete("id = 5")  # copy-on-write rewrites uuid columns too
    assert sorted(tuple(r) for r in t.to_df().collect()) == sorted(v for v in values if v[0] != 5)
    if partition.startswith("bucket"):
        from sparkberg.format.transforms import BucketTransform
        bucket = BucketTransform(4).apply(T.UUID)
        for r in t.to_df(columns=["u", "_partition"]).collect():
            if r["u"] is not None:
                assert r["_partition"][0] == bucket(uuid.UUID(r["u"]))
    with pytest.raises(sparkberg.ValidationError, match="'u'.*not a UUID"):
        t.append(spark.createDataFrame([(1, "not-a-uuid")], "id bigint, u string"))


@pytest.mark.parametrize("t", [T.BOOLEAN, T.INT, T.LONG, T.FLOAT, T.DOUBLE, T.DATE, T.TIME, T.TIMESTAMP, T.TIMESTAMPTZ,
                               T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS, T.STRING, T.UUID, T.BINARY, T.FixedType(3),
                               T.DecimalType(38, 4)], ids=str)
def test_partition_columns_have_the_physical_types_spark_parses(spark, t):
    from sparkberg.planning.entries import physical_spark_type, physical_types
    assert physical_spark_type(t) == spark.createDataFrame([], f"p {physical_types(t)[1]}").schema[0].dataType


def test_python_workers_keep_zip_indexes_between_tasks(spark):
    """In a PySpark worker that ran sparkberg code, every zip importer on the path (pyspark.zip, py4j, the
    Spark jar) is a StableZipImporter, so PySpark 3.5's per-task invalidate_caches does not re-read them."""
    def zip_importers(batches):  # defined here so that it is pickled by value for the workers
        import sys
        import zipimport

        import pyarrow as pa

        import sparkberg  # noqa: F401  (installs the stable importers in this worker)
        for _ in batches:
            pass
        kinds = sorted({type(v).__name__ for v in sys.path_importer_cache.values()
                        if isinstance(v, zipimport.zipimporter)})
        yield pa.RecordBatch.from_pydict({"kind": kinds}, pa.schema([("kind", pa.string())]))

    kinds = {r.kind for r in spark.range(4).repartition(2).mapInArrow(zip_importers, "kind string").collect()}
    assert kinds == {"StableZipImporter"}


@pytest.fixture
def store_policy(spark):
    """A session of the run's SparkContext with Spark's default settings for what the project sets, and Spark's
    default store assignment (ANSI) until a test sets another."""
    s = spark.newSession()
    for k in ("spark.sql.storeAssignmentPolicy", "spark.sql.parquet.fieldId.read.enabled",
              "spark.sql.parquet.fieldId.write.enabled", "spark.sql.parquet.fieldId.read.ignoreMissing"):
        s.conf.unset(k)
    s.conf.set("spark.sql.session.timeZone", "UTC")
    return s


@pytest.mark.parametrize("write", ["append", "overwrite", "dynamic_overwrite", "upsert"])
def test_writes_assign_as_spark_ansi_store_assignment_does(store_policy, warehouse, write):
    s = store_policy
    cat = sparkberg.catalog(s, warehouse)
    t = cat.create_table("db.ansi", "id int NOT NULL, v double, d decimal(10,2), f float, "
                         "p array<bigint>, m map<string, double>, st struct<a: double, b: bigint>",
                         partition_by=["bucket(2, id)"])
    df = s.sql("SELECT 7L AS id, 5000000000L AS v, CAST(123.45 AS decimal(5,2)) AS d, 2.5D AS f, "
               "array(1, 2) AS p, map('k', 3) AS m, named_struct('b', 4, 'a', 9L) AS st")
    getattr(t, write)(df, *(["id"] if write == "upsert" else []))
    got = [r.asDict(recursive=True) for r in cat.load_table("db.ansi").to_df().collect()]
    assert got == [{"id": 7, "v": 5000000000.0, "d": __import__("decimal").Decimal("123.45"), "f": 2.5,
                    "p": [1, 2], "m": {"k": 3.0}, "st": {"a": 9.0, "b": 4}}]


@pytest.mark.parametrize("data,column", [
    ("SELECT 3000000000L AS id", "'id': value 3000000000 of type bigint does not fit int"),
    ("SELECT 1 AS id, CAST(123456789.5 AS decimal(12,1)) AS d", "'d': value 123456789.5"),
    ("SELECT 1 AS id, 1e39D AS f", "'f': value 1.0E39"),
    ("SELECT 1 AS id, array(1L, 9000000000L) AS q", "'q.element': value 9000000000"),
])
def test_a_narrowing_value_that_does_not_fit_fails_the_write_and_changes_nothing(store_policy, warehouse, data,
                                                                                   column):
    cat = sparkberg.catalog(store_policy, warehouse)
    t = cat.create_table("db.narrow", "id int, d decimal(10,2), f float, q array<int>")
    t.append(store_policy.sql("SELECT 1L AS id"))  # narrowing values that fit are written
    before = cat.load_table("db.narrow").metadata
    with pytest.raises(Exception, match=column):
        t.append(store_policy.sql(data))
    assert cat.load_table("db.narrow").metadata == before
    assert [tuple(r) for r in t.to_df().collect()] == [(1, None, None, None)]


def test_store_assignment_policies_strict_and_legacy(store_policy, warehouse):
    s = store_policy
    cat = sparkberg.catalog(s, warehouse)
    t = cat.create_table("db.pol", "id int, v double")
    with pytest.raises(ValidationError, match="column 'v' has type string, which cannot be written as double .*ANSI"):
        t.append(s.sql("SELECT 1 AS id, '2.5' AS v"))
    s.conf.set("spark.sql.storeAssignmentPolicy", "STRICT")
    t.append(s.sql("SELECT 1 AS id, 2L AS v"))  # an up-cast
    with pytest.raises(ValidationError, match="column 'id' has type bigint, which cannot .*STRICT"):
        t.append(s.sql("SELECT 2L AS id"))
    s.conf.set("spark.sql.storeAssignmentPolicy", "LEGACY")
    t.append(s.sql("SELECT 3 AS id, '2.5' AS v"))
    assert sorted(tuple(r) for r in t.to_df().collect()) == [(1, 2.0), (3, 2.5)]
