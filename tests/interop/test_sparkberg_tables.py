"""Direction 2: tables created and committed by sparkberg (v1, v2, v3, partitioned by every transform) load in
Iceberg Java (DESCRIBE, SHOW TBLPROPERTIES, metadata tables), PyIceberg and DuckDB with the same schema, spec
and properties; Java then writes into them and sparkberg parses what Java wrote."""
import os

import pytest

import sparkberg
from sparkberg.avro.manifest import read_manifest, read_manifest_list
from sparkberg.io.fileio import LocalFileIO

pytestmark = pytest.mark.interop
IO = LocalFileIO()

DDL = ("id bigint NOT NULL, i int, d date, ts timestamp, tsn timestamp_ntz, s string, b binary, "
       "dec decimal(10,2), f double, loc struct<lat: double, lon: double>, tags array<string>, m map<string, int>")
PARTITIONS = ["i", "bucket(16, id)", "truncate(s, 3)", "year(d)", "month(ts)", "hour(tsn)", "truncate(dec, 10)",
              "bucket(4, s)", "truncate(b, 2)", "loc.lat"]
SPARK_TRANSFORM = {"identity": "{c}", "bucket": "bucket({n}, {c})", "truncate": "truncate({n}, {c})",
                   "year": "years({c})", "month": "months({c})", "day": "days({c})", "hour": "hours({c})"}


@pytest.fixture(scope="module")
def tables(java, java_warehouse):
    """Tables sparkberg created in the Java warehouse, namespace `sb`."""
    cat = sparkberg.catalog(java, java_warehouse)
    out = {}
    for v in (1, 2, 3):
        t = cat.create_table(f"sb.all_v{v}", DDL, partition_by=PARTITIONS,
                             properties={"format-version": str(v), "team": "sparkberg", "write.format.default":
                                         "parquet"}, sort_by=["id DESC NULLS LAST"])
        t.set_properties({"committed.by": "sparkberg"})
        out[v] = t
    days = cat.create_table("sb.days_v2", "id bigint, ts timestamp", partition_by=["day(ts)"])
    days.add_columns("extra string")
    days.update_spec(["day(ts)", "bucket(8, id)"])
    out["days"] = days
    up = cat.create_table("sb.upgraded", "id bigint, v string", partition_by=["bucket(4, id)"],
                          properties={"format-version": "1"})
    up.upgrade_format_version(2)
    up.upgrade_format_version(3)
    out["upgraded"] = up
    return out


def java_columns(java, name):
    rows = java.sql(f"DESCRIBE TABLE ref.sb.{name}").collect()
    cols = []
    for r in rows:
        if not r[0] or r[0].startswith("#"):
            break
        cols.append((r[0], r[1]))
    return cols


def java_partitioning(java, name):
    rows = java.sql(f"DESCRIBE TABLE EXTENDED ref.sb.{name}").collect()
    out, on = [], False
    for r in rows:
        if r[0] == "# Partitioning":
            on = True
            continue
        if on:
            if not r[0] or r[0].startswith("#"):
                break
            out.append(r[1])
    return out


def spark_transform(field, schema):
    t = str(field.transform)
    kind, _, arg = t.partition("[")
    col = schema.name_of(field.source_id)
    return SPARK_TRANSFORM[kind].format(n=arg.rstrip("]"), c=col)


@pytest.mark.parametrize("key", [1, 2, 3, "days", "upgraded"])
def test_java_describes_the_same_table(java, tables, key):
    t = tables[key]
    name = t.identifier.name
    spark_schema = t.spark_schema()
    assert java_columns(java, name) == [(f.name, f.dataType.simpleString()) for f in spark_schema.fields]
    assert java.table(f"ref.sb.{name}").schema == spark_schema
    assert java_partitioning(java, name) == [spark_transform(f, t.schema()) for f in t.spec().fields]
    props = {r[0]: r[1] for r in java.sql(f"SHOW TBLPROPERTIES ref.sb.{name}").collect()}
    for k, v in t.properties.items():
        assert props[k] == v
    assert props["format-version"] == str(t.format_version)
    assert props["current-snapshot-id"] == "none"
    for meta in ("snapshots", "history", "refs", "files", "manifests", "partitions", "entries"):
        assert java.sql(f"SELECT * FROM ref.sb.{name}.{meta}").count() == 0
    log = java.sql(f"SELECT file FROM ref.sb.{name}.metadata_log_entries").collect()
    from sparkberg.io.fileio import to_local_path
    assert sorted(to_local_path(r[0]) for r in log) == sorted(
        to_local_path(f) for f in [e.metadata_file for e in t.metadata.metadata_log] + [t.metadata_location])


@pytest.mark.parametrize("key", [1, 2, 3, "days", "upgraded"])
def test_pyiceberg_reads_the_same_table(tables, key):
    from pyiceberg.table import StaticTable
    t = tables[key]
    pt = StaticTable.from_metadata(t.metadata_location)
    pm = pt.metadata
    assert pm.format_version == t.format_version
    assert str(pm.table_uuid) == t.metadata.table_uuid
    ours = t.schema()
    theirs = pt.schema()
    assert theirs.schema_id == ours.schema_id
    assert [(f.field_id, f.name, f.required, str(f.field_type)) for f in theirs.fields] == \
        [(f.field_id, f.name, f.required, _pyiceberg_type(f.field_type)) for f in ours.fields]
    assert theirs.highest_field_id == ours.highest_field_id()
    assert [(f.source_id, f.field_id, str(f.transform), f.name) for f in pt.spec().fields] == \
        [(f.source_id, f.field_id, str(f.transform), f.name) for f in t.spec().fields]
    assert {k: v for k, v in pm.properties.items()} == t.properties
    order = pt.sort_order()
    assert order.order_id == t.sort_order().order_id
    if t.format_version >= 3:
        assert pm.next_row_id == t.metadata.next_row_id


def _pyiceberg_type(t):
    from sparkberg.format import types as T
    if isinstance(t, T.DecimalType):
        return f"decimal({t.precision}, {t.scale})"
    if isinstance(t, T.StructType):
        return "struct<" + ", ".join(f"{f.field_id}: {f.name}: {'required' if f.required else 'optional'} "
                                     f"{_pyiceberg_type(f.field_type)}" for f in t.fields) + ">"
    if isinstance(t, T.ListType):
        return f"list<{_pyiceberg_type(t.element_type)}>"
    if isinstance(t, T.MapType):
        return f"map<{_pyiceberg_type(t.key_type)}, {_pyiceberg_type(t.value_type)}>"
    return str(t)


DUCK_TYPES = {"bigint": "BIGINT", "int": "INTEGER", "date": "DATE", "timestamp": "TIMESTAMP WITH TIME ZONE",
              "timestamp_ntz": "TIMESTAMP", "string": "VARCHAR", "binary": "BLOB", "decimal(10,2)": "DECIMAL(10,2)",
              "double": "DOUBLE"}


def _duck_type(spark_type):
    s = spark_type.simpleString()
    return DUCK_TYPES.get(s)


@pytest.mark.parametrize("key", [1, 2, 3, "days", "upgraded"])
def test_duckdb_reads_the_same_schema(duck, tables, key):
    t = tables[key]
    path = t.metadata_location
    rows = duck.sql(f"DESCRIBE SELECT * FROM iceberg_scan('{path}')").fetchall()
    names = [r[0] for r in rows]
    assert names == [f.name for f in t.spark_schema().fields]
    for r, f in zip(rows, t.spark_schema().fields):
        expected = _duck_type(f.dataType)
        if expected is not None:
            assert r[1] == expected, f.name
    assert duck.sql(f"SELECT count(*) FROM iceberg_scan('{path}')").fetchone()[0] == 0


def test_java_writes_into_sparkberg_tables_and_sparkberg_parses_it(java, tables, java_warehouse):
    for key in (1, 2, 3):
        name = tables[key].identifier.name
        java.sql(f"INSERT INTO ref.sb.{name} VALUES (1, 7, date'2024-01-02', timestamp'2024-01-02 03:04:05', "
                 f"timestamp_ntz'2024-01-02 03:04:05', 'hello', X'0102', 12.34, 1.5, named_struct('lat', 1.0D, "
                 f"'lon', 2.0D), array('a'), map('k', 1))")
        t = sparkberg.load_table(java, os.path.join(java_warehouse, "sb", name))
        snap = t.metadata.current_snapshot
        assert snap is not None and snap.operation == "append"
        (mf,) = read_manifest_list(IO.read(snap.manifest_list))
        (entry,) = read_manifest(IO.read(mf.manifest_path)).entries
        p = t.spec().fields
        part = entry.data_file.partition
        assert part[p[0].field_id] == 7 and part[p[2].field_id] == "hel"
        if key == 3:
            assert snap.first_row_id == 0 and t.metadata.next_row_id == 1
        assert java.sql(f"SELECT count(*) FROM ref.sb.{name}").collect()[0][0] == 1
