"""``update_schema`` on a table: nested adds, renames, deletes, promotions and moves in one commit, then rows written
before and after read by field id, widened at every depth; broken rules leave the table as it was."""
import json

import os

import pytest

import sparkberg
from sparkberg.errors import ValidationError

pytestmark = pytest.mark.spark

DDL = ("id bigint NOT NULL, n int, address struct<street: string, city: string>, "
       "points array<struct<x: int, y: int>>, attrs map<string, struct<b: float>>, legacy string, d date")


@pytest.fixture
def table(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.e", DDL, properties={"format-version": "3"})
    t.append(spark.sql("SELECT 1L AS id, 7 AS n, named_struct('street', 'main st', 'city', 'oslo') AS address, "
                       "array(named_struct('x', 1, 'y', 2)) AS points, "
                       "map('k', named_struct('b', CAST(1.5 AS float))) AS attrs, 'old' AS legacy, "
                       "DATE'2024-01-02' AS d"))
    return cat, t


def metadata_files(t):
    directory = t.location.replace("file://", "") + "/metadata"
    return sorted(f for f in os.listdir(directory) if f.endswith(".metadata.json"))


def unchanged(cat, call, message):
    before = cat.load_table("db.e")
    files = metadata_files(before)
    with pytest.raises(ValidationError, match=message):
        call()
    after = cat.load_table("db.e")
    assert (after.metadata_location, after.metadata.current_schema_id, after.metadata.current_snapshot_id) == \
        (before.metadata_location, before.metadata.current_schema_id, before.metadata.current_snapshot_id)
    assert metadata_files(after) == files


def test_nested_evolution_reads_old_and_new_rows(spark, table):
    cat, t = table
    with t.update_schema() as u:
        u.add_column("address.zip", "string", doc="postal code", after="address.street")
        u.add_column("points.element.z", "bigint")
        u.add_column("tier", "int", default=3)
        u.rename_column("n", "count").rename_column("address.city", "town")
        u.delete_column("legacy")
        u.update_column("n", "bigint").update_column("points.element.x", "bigint")
        u.update_column("attrs.value.b", "double").update_column("d", "timestamp_ntz")
        u.move_first("tier")
    t = cat.load_table("db.e")
    assert [f.name for f in t.schema().fields] == ["tier", "id", "count", "address", "points", "attrs", "d"]
    assert t.metadata.current_schema_id == 1 and t.metadata.last_column_id == 18
    t.append(spark.sql("SELECT 1 AS tier, 2L AS id, 5000000000L AS count, "
                       "named_struct('street', 'side st', 'zip', '0150', 'town', 'bergen') AS address, "
                       "array(named_struct('x', 9000000000L, 'y', 3, 'z', 4L)) AS points, "
                       "map('j', named_struct('b', CAST(2.25 AS double))) AS attrs, "
                       "TIMESTAMP_NTZ'2024-02-03 04:05:06' AS d"))
    got = sorted(cat.load_table("db.e").to_df().collect(), key=lambda r: r.id)
    old, new = got[0].asDict(recursive=True), got[1].asDict(recursive=True)
    assert old == {"tier": 3, "id": 1, "count": 7, "address": {"street": "main st", "zip": None, "town": "oslo"},
                   "points": [{"x": 1, "y": 2, "z": None}], "attrs": {"k": {"b": 1.5}},
                   "d": __import__("datetime").datetime(2024, 1, 2)}
    assert new["count"] == 5000000000 and new["points"] == [{"x": 9000000000, "y": 3, "z": 4}]
    assert new["address"]["town"] == "bergen" and new["attrs"] == {"j": {"b": 2.25}}
    # the first snapshot reads with its own schema (time travel), the promoted types widened
    first = t.metadata.snapshots[0].snapshot_id
    assert cat.load_table("db.e").to_df(snapshot_id=first).columns == ["id", "n", "address", "points", "attrs",
                                                                       "legacy", "d"]
    # a filter on a nested promoted column prunes and reads both files right
    assert [r.id for r in cat.load_table("db.e").to_df(filter="count > 100").collect()] == [2]


def test_broken_rules_change_nothing(spark, table):
    cat, t = table
    unchanged(cat, lambda: t.update_schema().update_column("n", "string").commit(), "not a valid type promotion")
    unchanged(cat, lambda: t.update_schema().add_column("id", "int").commit(), "already exists")
    unchanged(cat, lambda: t.update_schema().add_column("x", "int", required=True).commit(), "without a default")
    unchanged(cat, lambda: t.update_schema().set_identifier_fields("n").commit(), "must be required")
    unchanged(cat, lambda: t.update_schema().update_column("n", "bogus type").commit(), "cannot parse")

    def failing_block():
        with t.update_schema() as u:
            u.add_column("fine", "int")
            raise RuntimeError("the job failed before the block ended")
    with pytest.raises(RuntimeError):
        failing_block()
    assert "fine" not in [f.name for f in cat.load_table("db.e").schema().fields]
    u = t.update_schema().add_column("once", "int")
    u.commit()
    with pytest.raises(ValidationError, match="not bound to a table, or was committed"):
        u.commit()  # (a builder commits once)


def test_identifier_fields_and_union_by_name(spark, table):
    cat, t = table
    with t.update_schema() as u:
        u.set_identifier_fields("id")
    assert cat.load_table("db.e").schema().identifier_field_ids == (1,)
    unchanged(cat, lambda: t.update_schema().delete_column("id").commit(), "identifier field")
    incoming = spark.sql("SELECT 1L AS id, 2L AS n, named_struct('street', 's', 'country', 'no') AS address, "
                         "'x' AS extra").schema
    with cat.load_table("db.e").update_schema() as u:
        u.union_by_name(incoming)
    s = cat.load_table("db.e").schema()
    assert s.find_field("n").field_type.to_json() == "long" and s.find_field("extra").field_type.to_json() == "string"
    assert [f.name for f in s.find_field("address").field_type.fields] == ["street", "city", "country"]
    assert "legacy" in [f.name for f in s.fields]  # union never deletes


def test_a_name_mapping_follows_renames_and_adds(spark, table):
    cat, t = table
    mapping = [{"field-id": f.field_id, "names": [f.name]} for f in t.schema().fields]
    mapping[2]["fields"] = [{"field-id": 8, "names": ["street"]}, {"field-id": 9, "names": ["city"]}]
    t.set_properties({"schema.name-mapping.default": json.dumps(mapping)})
    with t.update_schema() as u:
        u.rename_column("n", "count").rename_column("address.city", "town").add_column("address.zip", "string")
        u.add_column("note", "string")
    got = json.loads(cat.load_table("db.e").properties["schema.name-mapping.default"])
    by_id = {e["field-id"]: e for e in got}
    assert by_id[2]["names"] == ["n", "count"] and by_id[17]["names"] == ["note"]
    nested = {e["field-id"]: e["names"] for e in by_id[3]["fields"]}
    assert nested[9] == ["city", "town"] and nested[16] == ["zip"]


def test_a_java_shaped_file_reads_after_nested_evolution_in_both_readers(spark, warehouse):
    # Iceberg Java writes nested fields `required` when its input has no nulls; after adding, promoting, dropping
    # and renaming fields inside a list's and a map's structs, to_df and the SQL view (the data source on 4.1+)
    # read the old file's rows as the table's
    import pyarrow as pa
    import pyarrow.parquet as pq
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.jshape", "id bigint, points array<struct<x:int, y:int>>, "
                                      "attrs map<string, struct<a:int, b:string>>")

    def fid(i):
        return {b"PARQUET:field_id": str(i).encode()}
    element = pa.struct([pa.field("x", pa.int32(), False, fid(5)), pa.field("y", pa.int32(), False, fid(6))])
    value = pa.struct([pa.field("a", pa.int32(), False, fid(9)), pa.field("b", pa.string(), False, fid(10))])
    schema = pa.schema([pa.field("id", pa.int64(), False, fid(1)),
                        pa.field("points", pa.list_(pa.field("element", element, False, fid(4))), False, fid(2)),
                        pa.field("attrs", pa.map_(pa.field("key", pa.string(), False, fid(7)),
                                                  pa.field("value", value, False, fid(8))), False, fid(3))])
    path = os.path.join(warehouse, "java-shaped.parquet")
    pq.write_table(pa.table({"id": [1], "points": [[{"x": 1, "y": 2}]], "attrs": [[("k", {"a": 1, "b": "q"})]]},
                            schema=schema), path)
    t.add_files([path])
    with t.update_schema() as u:
        u.add_column("points.element.z", "bigint").update_column("points.element.x", "bigint")
        u.delete_column("points.element.y").rename_column("attrs.value.b", "bb")
    t = cat.load_table("db.jshape")
    t.append(spark.sql("SELECT 2L AS id, array(named_struct('x', 5000000000L, 'z', 7L)) AS points, "
                       "map('j', named_struct('a', 2, 'bb', 'r')) AS attrs"))
    expected = [{"id": 1, "points": [{"x": 1, "z": None}], "attrs": {"k": {"a": 1, "bb": "q"}}},
                {"id": 2, "points": [{"x": 5000000000, "z": 7}], "attrs": {"j": {"a": 2, "bb": "r"}}}]
    assert sorted((r.asDict(recursive=True) for r in cat.load_table("db.jshape").to_df().collect()),
                  key=lambda r: r["id"]) == expected
    cat.load_table("db.jshape").register_views("jshape")
    assert sorted((r.asDict(recursive=True) for r in spark.sql("SELECT * FROM jshape").collect()),
                  key=lambda r: r["id"]) == expected
