"""The public API as far as it needs no data: catalogs, create/load/drop, metadata view, metadata commits."""
import json
import os

import pytest
from pyspark.sql import types as ST

import sparkberg
from sparkberg.errors import (
    CommitFailedException, InvalidIdentifierError, NoSuchTableError, SparkbergError, TableAlreadyExistsError,
    ValidationError,
)
from sparkberg.format import types as T

pytestmark = pytest.mark.spark

DDL = "id bigint NOT NULL, ts timestamp, tz timestamp_ntz, name string, amt decimal(10,2), " \
      "loc struct<lat: double, lon: double>, tags array<string>, attrs map<string, int>, b binary, d date, " \
      "f float, i int, s smallint"


def test_create_from_ddl_and_load(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.events", DDL, partition_by=["day(ts)", "bucket(16, id)", "truncate(name, 4)", "d"],
                         properties={"format-version": "3", "owner": "me"})
    m = t.metadata
    assert m.format_version == 3 and m.next_row_id == 0
    s = t.schema()
    assert s.find_field("id").required and s.find_field("id").field_type == T.LONG
    assert s.find_field("ts").field_type == T.TIMESTAMPTZ  # Spark TIMESTAMP is Iceberg timestamptz
    assert s.find_field("tz").field_type == T.TIMESTAMP
    assert s.find_field("s").field_type == T.INT
    assert s.find_field("loc.lat").field_id == 14  # parents before children, as Iceberg assigns
    assert [f.name for f in t.spec().fields] == ["ts_day", "id_bucket", "name_trunc", "d"]
    assert [f.field_id for f in t.spec().fields] == [1000, 1001, 1002, 1003]
    assert dict(m.properties) == {"owner": "me", "write.parquet.compression-codec": "zstd"}
    assert t.metadata_location.endswith("/db/events/metadata/v1.metadata.json")
    again = cat.load_table("db.events")
    assert again.metadata == m
    assert cat.list_tables("db") == ["db.events"] and cat.list_namespaces() == [("db",)]
    assert t.spark_schema()["ts"].dataType == ST.TimestampType()
    by_path = sparkberg.load_table(spark, t.location)
    assert by_path.metadata == m
    assert sparkberg.load_table(spark, t.metadata_location).metadata == m
    with pytest.raises(SparkbergError, match="read-only"):
        by_path.set_properties(a="b")


def test_create_from_struct_type_default_v2(spark, warehouse):
    cat = sparkberg.catalog(spark, "file://" + warehouse)
    schema = ST.StructType([ST.StructField("id", ST.LongType(), False, {"comment": "the key"}),
                            ST.StructField("v", ST.StringType())])
    t = cat.create_table(("ns", "t"), schema, sort_by=["id DESC NULLS LAST"])
    assert t.format_version == 2
    assert t.schema().find_field("id").doc == "the key"
    order = t.sort_order()
    assert order.order_id == 1 and order.fields[0].direction == "desc" and order.fields[0].null_order == "nulls-last"
    assert t.spec().is_unpartitioned


def test_metadata_commits(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.t", "id bigint, ts timestamp", properties={"format-version": "1"},
                         partition_by=["id"])
    t.set_properties({"a": "1"}, b="2")
    t.remove_properties("b", "missing")
    assert t.properties == {"a": "1", "write.parquet.compression-codec": "zstd"}  # (recorded at creation, as Java)
    t.upgrade_format_version(2)
    t.upgrade_format_version(3)
    assert t.metadata.format_version == 3 and t.metadata.next_row_id == 0
    t.add_columns("extra string, nested struct<x: int>")
    s = t.schema()
    assert s.schema_id == 1 and [f.field_id for f in s.fields] == [1, 2, 3, 4] and s.find_field("nested.x").field_id == 5
    t.update_spec(["id", "hour(ts)"])
    assert [f.field_id for f in t.spec().fields] == [1000, 1001]  # the identity field keeps its id
    loaded = cat.load_table("db.t")
    assert loaded.metadata == t.metadata
    assert len(loaded.metadata.metadata_log) == 6  # one entry per commit after v1
    with pytest.raises(ValidationError, match="downgrade"):
        t.upgrade_format_version(2)
    with pytest.raises(ValidationError, match="already exists"):
        t.add_columns("extra string")


def test_conflicting_commits_retry_or_fail(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    cat.create_table("db.t", "id bigint")
    a = cat.load_table("db.t")
    b = cat.load_table("db.t")
    a.set_properties(x="1")
    b.set_properties(y="2")  # stale base: refreshed and retried, nothing lost
    assert cat.load_table("db.t").properties == {"x": "1", "y": "2", "write.parquet.compression-codec": "zstd"}
    c = cat.load_table("db.t")
    d = cat.load_table("db.t")
    c.add_columns("v string")
    before = cat.load_table("db.t").metadata
    with pytest.raises(CommitFailedException, match="current schema changed"):
        d.add_columns("w string")  # schema changes validate that the schema did not change
    assert cat.load_table("db.t").metadata == before


@pytest.mark.parametrize("kwargs,error,message", [
    ({"partition_by": ["bucket(16, nope)"]}, ValidationError, "cannot find field 'nope'"),
    ({"partition_by": ["hour(d)"]}, ValidationError, "cannot be applied to type date"),
    ({"partition_by": ["frob(id)"]}, ValidationError, "unknown partition transform"),
    ({"properties": {"format-version": "4"}}, ValidationError, "unsupported format version 4"),
    ({"properties": {"format-version": "x"}}, ValidationError, "format-version"),
])
def test_bad_create_changes_nothing(spark, warehouse, kwargs, error, message):
    cat = sparkberg.catalog(spark, warehouse)
    with pytest.raises(error, match=message):
        cat.create_table("db.t", "id bigint, d date", **kwargs)
    assert not cat.table_exists("db.t")
    assert not os.path.exists(os.path.join(warehouse, "db", "t"))


def test_bad_identifiers_and_missing_tables(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    for bad in ("t", "../x.t", "db/x.t", "db..t"):
        with pytest.raises(InvalidIdentifierError):
            cat.create_table(bad, "id bigint")
    with pytest.raises(NoSuchTableError):
        cat.load_table("db.none")
    with pytest.raises(NoSuchTableError):
        sparkberg.load_table(spark, os.path.join(warehouse, "nothing"))
    with pytest.raises(ValidationError, match="cannot parse schema DDL"):
        cat.create_table("db.t", "id bigint,,")
    cat.create_table("db.t", "id bigint")
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table("db.t", "id bigint")


def test_load_table_reports_corrupt_metadata(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.t", "id bigint")
    path = t.metadata_location[len("file://"):]
    with open(path, "w") as f:
        f.write('{"format-version": 9}')
    with pytest.raises(sparkberg.UnsupportedFormatVersionError, match="v1.metadata.json"):
        cat.load_table("db.t")


def test_drop_with_purge(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    cat.create_table("db.t", "id bigint")
    cat.drop_table("db.t", purge=True)
    assert not cat.table_exists("db.t") and not os.path.exists(os.path.join(warehouse, "db", "t"))


def test_type_mapping_roundtrip(spark, monkeypatch):
    from sparkberg.spark.types import from_spark_schema, to_spark_schema
    st = ST.StructType.fromDDL(DDL) if hasattr(ST.StructType, "fromDDL") else None
    s = from_spark_schema(st)
    back = to_spark_schema(s)
    assert back["tz"].dataType == ST.TimestampNTZType() and back["s"].dataType == ST.IntegerType()
    assert to_spark_schema(T.Schema([T.NestedField(1, "u", T.UUID), T.NestedField(2, "f", T.FixedType(3))])) == \
        ST.StructType([ST.StructField("u", ST.StringType()), ST.StructField("f", ST.BinaryType())])
    assert to_spark_schema(T.Schema([T.NestedField(1, "n", T.TIMESTAMP_NS), T.NestedField(2, "z", T.TIMESTAMPTZ_NS),
                                     T.NestedField(3, "g", T.GeometryType())])) == ST.StructType(
        [ST.StructField("n", ST.TimestampNTZType()), ST.StructField("z", ST.TimestampType()),
         ST.StructField("g", ST.BinaryType())])
    monkeypatch.delattr(ST, "VariantType", raising=False)  # (as PySpark 3.5: a type Spark cannot hold)
    with pytest.raises(sparkberg.NotSupportedError, match="column 'n'"):
        to_spark_schema(T.Schema([T.NestedField(1, "n", T.VARIANT)]))
    assert json.loads(json.dumps(s.to_json()))["fields"][0]["name"] == "id"


def test_errors_users_see_are_sparkbergs(spark, warehouse):
    # bad input at the public API is a named sparkberg error, never a bare ValueError or KeyError; one name per class
    from sparkberg.errors import ValidationError
    from sparkberg.jobs.health import health_sql
    with pytest.raises(ValidationError, match="warehouse location cannot be empty"):
        sparkberg.catalog(spark, "")
    with pytest.raises(ValidationError, match="unknown health view 'bogus'"):
        health_sql("bogus", "t")
    assert not hasattr(sparkberg, "NoSuchTable") and not hasattr(sparkberg, "CommitFailed")
