"""``add_files``: Parquet files that were never Iceberg's become a table's, unread but for their footers: metrics,
partition values from Hive-style directories or from the data, a name mapping for files without field ids, and
duplicates refused; a file that spans partitions is a named error that commits nothing."""
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sparkberg
from sparkberg.errors import ValidationError
from sparkberg.format.values import from_bytes

pytestmark = pytest.mark.spark


def rows(t):
    return sorted(tuple(r) for r in t.to_df().collect())


def test_hive_layout_files_are_added_with_metrics_and_a_name_mapping(spark, warehouse, tmp_path):
    src = str(tmp_path / "src")
    spark.sql("SELECT id, concat('v', id) AS v, IF(id % 2 = 0, 'eu', 'us') AS region FROM range(0, 40)") \
        .repartition(2).write.partitionBy("region").parquet(src)
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.imp", "id bigint, v string, region string", partition_by=["region"])
    t.add_files(src, snapshot_properties={"source": "hive"})
    t = cat.load_table("db.imp")
    assert rows(t) == sorted((i, f"v{i}", "eu" if i % 2 == 0 else "us") for i in range(40))
    assert t.metadata.current_snapshot.summary["source"] == "hive"
    files = t.metadata_table("files").collect()
    assert {f.partition.region for f in files} == {"eu", "us"} and sum(f.record_count for f in files) == 40
    for f in files:
        ids = [r[0] for r in spark.read.parquet(f.file_path).select("id").collect()]
        assert from_bytes(t.schema().find_field("id").field_type, f.lower_bounds[1]) == min(ids)
        assert from_bytes(t.schema().find_field("id").field_type, f.upper_bounds[1]) == max(ids)
        assert f.value_counts[1] == len(ids) and f.null_value_counts[1] == 0
    mapping = json.loads(t.properties["schema.name-mapping.default"])
    assert [(e["field-id"], e["names"]) for e in mapping] == [(1, ["id"]), (2, ["v"]), (3, ["region"])]
    assert [r.id for r in t.to_df(filter="id = 7").collect()] == [7]  # pruned by the imported metrics
    location = cat.load_table("db.imp").metadata_location
    with pytest.raises(ValidationError, match="already holds it"):
        t.add_files(src)
    assert cat.load_table("db.imp").metadata_location == location
    t.add_files(src, check_duplicate_files=False)
    assert cat.load_table("db.imp").to_df().count() == 80


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
def test_timestamp_partition_directories_as_spark_writes_them(spark, warehouse, tmp_path, zone):
    # Spark names a timestamp partition by its time in the session's zone (ts=2024-01-01 10%3A11%3A12.5), a
    # zone-less one by its own text; both are read back as the same instants
    src = str(tmp_path / "src")
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        made = spark.sql("""
            SELECT id, TIMESTAMP'2024-01-01 10:11:12.5' + make_interval(0, 0, 0, CAST(id % 3 AS int)) AS ts,
                   TIMESTAMP_NTZ'2024-03-10 02:30:00' + make_interval(0, 0, 0, CAST(id % 2 AS int)) AS local
            FROM range(0, 12)""")
        expected = sorted(tuple(r) for r in made.collect())
        made.write.partitionBy("ts", "local").parquet(src)
        assert any("%3A" in d for d in os.listdir(src))
        cat = sparkberg.catalog(spark, warehouse)
        t = cat.create_table("db.ts", "id bigint, ts timestamp, local timestamp_ntz", partition_by=["ts", "local"])
        t.add_files(src)
        t = cat.load_table("db.ts")
        assert rows(t) == expected
        assert sorted(tuple(r) for r in t.to_df(filter="ts = TIMESTAMP'2024-01-02 10:11:12.5'").collect()) == \
            [r for r in expected if r[0] % 3 == 1]
        files = t.metadata_table("files").collect()
        assert {(f.partition.ts, f.partition.local) for f in files} == {r[1:] for r in expected}
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


def test_partition_values_from_the_data_and_files_with_field_ids(spark, warehouse, tmp_path):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.days", "id bigint, d date", partition_by=["month(d)"])
    d = str(tmp_path / "flat")
    os.makedirs(d)
    ids = pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})
    dates = pa.field("d", pa.date32(), metadata={b"PARQUET:field_id": b"2"})
    import datetime as dt
    pq.write_table(pa.table([pa.array([1, 2]), pa.array([dt.date(2024, 1, 3), dt.date(2024, 1, 30)])],
                            schema=pa.schema([ids, dates])), f"{d}/jan.parquet")
    pq.write_table(pa.table({"id": [3], "d": [dt.date(2024, 2, 1)]}), f"{d}/feb.parquet")  # (no ids: by name)
    t.add_files([f"{d}/jan.parquet", f"{d}/feb.parquet"])
    t = cat.load_table("db.days")
    assert rows(t) == [(1, dt.date(2024, 1, 3)), (2, dt.date(2024, 1, 30)), (3, dt.date(2024, 2, 1))]
    months = sorted(r.partition.d_month for r in t.metadata_table("files").collect())
    assert months == [648, 649]  # months since 1970 of January and February 2024
    pq.write_table(pa.table({"id": [4, 5], "d": [dt.date(2024, 3, 31), dt.date(2024, 4, 1)]}), f"{d}/span.parquet")
    location = t.metadata_location
    with pytest.raises(ValidationError, match="span.parquet: its partition value for 'd_month' is unknown"):
        t.add_files(f"{d}/span.parquet")
    with pytest.raises(ValidationError, match="no such file or directory"):
        t.add_files(f"{d}/missing.parquet")
    assert cat.load_table("db.days").metadata_location == location


def test_spark_legacy_int96_timestamps_are_added_without_bounds(spark, warehouse, tmp_path):
    src = str(tmp_path / "int96")
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")  # (Spark's default: the tuned session's isn't)
    try:
        spark.sql("SELECT id, TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) AS ts "
                  "FROM range(3)").write.parquet(src)
    finally:
        spark.conf.unset("spark.sql.parquet.outputTimestampType")
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.legacy", "id bigint, ts timestamp")
    t.add_files(src)
    t = cat.load_table("db.legacy")
    assert sorted(r.id for r in t.to_df().collect()) == [0, 1, 2]
    files = t.metadata_table("files").collect()
    assert all(2 not in (f.lower_bounds or {}) and f.lower_bounds[1] is not None for f in files)


def test_files_without_ids_read_nested_columns_by_the_name_mapping(spark, warehouse, tmp_path):
    """Spec Appendix C: a file without field ids is read by the name mapping at every depth, so nested fields
    renamed since the file was written (the mapping keeps their old names) read their values."""
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.mapped", "id bigint, info struct<city: string, zip: string>, "
                                      "points array<struct<x: int>>, attrs map<string, struct<b: double>>")
    mapping = [{"field-id": 1, "names": ["id"]},
               {"field-id": 2, "names": ["info"], "fields": [{"field-id": 5, "names": ["town", "city"]},
                                                              {"field-id": 6, "names": ["zip"]}]},
               {"field-id": 3, "names": ["points"], "fields": [
                   {"field-id": 7, "names": ["element"], "fields": [{"field-id": 8, "names": ["old_x", "x"]}]}]},
               {"field-id": 4, "names": ["attrs"], "fields": [
                   {"field-id": 9, "names": ["key"]},
                   {"field-id": 10, "names": ["value"], "fields": [{"field-id": 11, "names": ["beta", "b"]}]}]}]
    t.set_properties({"schema.name-mapping.default": json.dumps(mapping)})
    d = tmp_path / "old"
    d.mkdir()
    table = pa.table({
        "id": pa.array([1], pa.int64()),
        "info": pa.array([{"town": "oslo"}], pa.struct([("town", pa.string())])),  # (no zip: it reads null)
        "points": pa.array([[{"old_x": 4}]], pa.list_(pa.struct([("old_x", pa.int32())]))),
        "attrs": pa.array([[("k", {"beta": 0.5})]], pa.map_(pa.string(), pa.struct([("beta", pa.float64())]))),
    })
    pq.write_table(table, str(d / "f.parquet"))
    t.add_files(str(d))
    got = cat.load_table("db.mapped").to_df().collect()[0].asDict(recursive=True)
    assert got == {"id": 1, "info": {"city": "oslo", "zip": None}, "points": [{"x": 4}], "attrs": {"k": {"b": 0.5}}}
