"""The interop corpus: tables written by Apache Iceberg 1.10 (Java, Spark 3.5), each from a short SQL script.

Covers v1, v2, v3; every transform; partition and schema evolution; position deletes, equality deletes
(written through Iceberg's Java API), deletion vectors; ORC and Avro data and delete files; branches and tags; row lineage; an upgraded v2->v3
table; gzip-compressed metadata; ancient dates; a v1 table upgraded to v2; two specs sharing a partition tuple;
manifests of many entries; binary, fixed and uuid columns.
"""
from __future__ import annotations

import json

MOR = ("'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")

SCRIPTS: dict[str, list[str]] = {
    "v1_evolve": [
        "CREATE TABLE {t} (id bigint, data string, ts timestamp) USING iceberg "
        "PARTITIONED BY (bucket(4, id), truncate(2, data)) "
        "TBLPROPERTIES ('format-version'='1', 'write.metadata.compression-codec'='gzip')",
        "INSERT INTO {t} VALUES (1, 'aa', timestamp'2024-01-01 00:00:00'), (2, 'ab', timestamp'2024-02-01 00:00:00'),"
        " (3, 'bb', NULL), (4, NULL, timestamp'1969-12-31 23:59:59')",
        "ALTER TABLE {t} ADD COLUMN extra int",
        "ALTER TABLE {t} RENAME COLUMN data TO label",
        "ALTER TABLE {t} ADD PARTITION FIELD days(ts)",
        "INSERT INTO {t} VALUES (5, 'cc', timestamp'2024-03-01 12:00:00', 7)",
        "ALTER TABLE {t} DROP PARTITION FIELD truncate(2, label)",
        "INSERT INTO {t} VALUES (6, 'dd', timestamp'2024-03-02 12:00:00', 8)",
        "DELETE FROM {t} WHERE id = 2",
    ],
    "v2_transforms": [
        "CREATE TABLE {t} (id bigint, i int, d date, ts timestamp, tsn timestamp_ntz, s string, b binary, "
        "dec decimal(10,2), f float, dbl double, flag boolean) USING iceberg "
        "PARTITIONED BY (i, bucket(8, id), truncate(3, s), years(d), months(ts), hours(tsn), truncate(10, dec)) "
        "TBLPROPERTIES ('format-version'='2')",
        "INSERT INTO {t} VALUES "
        "(1, 10, date'2020-01-01', timestamp'2020-01-01 01:02:03', timestamp_ntz'2020-01-01 01:02:03', 'alpha',"
        " X'0102', 1.25, 1.5, -0.0, true),"
        "(2, -10, date'1969-12-31', timestamp'1969-12-31 23:59:59', timestamp_ntz'1969-12-31 23:59:59', 'beta',"
        " X'', -1.25, float('NaN'), double('Infinity'), false),"
        "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),"
        "(4, 2147483647, date'9999-12-31', timestamp'2262-04-11 23:47:16', timestamp_ntz'2100-01-01 00:00:00',"
        " '\u00e9t\u00e9\U0001F600', X'FF', 99999999.99, -3.4028235E38, double('-Infinity'), true)",
    ],
    "v2_transforms_days": [
        "CREATE TABLE {t} (id bigint, ts timestamp, b binary, s string, dec decimal(38,10), d date) USING iceberg "
        "PARTITIONED BY (days(ts), truncate(2, b), bucket(4, s), bucket(4, dec), bucket(4, d)) "
        "TBLPROPERTIES ('format-version'='2')",
        "INSERT INTO {t} VALUES (1, timestamp'2024-05-01 10:00:00', X'010203', 'x', 1234567890.0123456789,"
        " date'2024-05-01'), (2, timestamp'1970-01-01 00:00:00', X'AA', 'y', -1.5, date'1970-01-01'),"
        " (3, NULL, NULL, NULL, NULL, NULL)",
    ],
    "v2_mor": [
        "CREATE TABLE {t} (id bigint, data string, cat string) USING iceberg PARTITIONED BY (cat) "
        "TBLPROPERTIES ('format-version'='2', " + MOR + ")",
        "INSERT INTO {t} SELECT id, concat('d', id), CASE WHEN id % 2 = 0 THEN 'even' ELSE 'odd' END "
        "FROM range(0, 40) AS r(id)",
        "DELETE FROM {t} WHERE id % 5 = 0",
        "UPDATE {t} SET data = 'updated' WHERE id IN (3, 4)",
        "MERGE INTO {t} AS t USING (SELECT id, 'merged' AS data, 'odd' AS cat FROM range(37, 45) AS r(id)) AS s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.data = s.data WHEN NOT MATCHED THEN INSERT *",
        "DELETE FROM {t} WHERE id = 7",
    ],
    "v3_dv": [
        "CREATE TABLE {t} (id bigint, data string, ts timestamp) USING iceberg PARTITIONED BY (days(ts)) "
        "TBLPROPERTIES ('format-version'='3', " + MOR + ")",
        "INSERT INTO {t} SELECT id, concat('d', id), timestamp'2024-01-01 00:00:00' + make_interval(0,0,0,"
        " CAST(id % 3 AS int)) FROM range(0, 60) AS r(id)",
        "DELETE FROM {t} WHERE id % 7 = 0",
        "UPDATE {t} SET data = 'u' WHERE id % 11 = 1",
        "DELETE FROM {t} WHERE id % 7 = 1",
        "ALTER TABLE {t} CREATE TAG v_one",
        "ALTER TABLE {t} CREATE BRANCH audit RETAIN 7 DAYS WITH SNAPSHOT RETENTION 2 SNAPSHOTS",
        "INSERT INTO {t}.branch_audit VALUES (100, 'branch only', timestamp'2024-01-05 00:00:00')",
        "DELETE FROM {t}.branch_audit WHERE id = 2",
        "INSERT INTO {t} VALUES (200, 'main', timestamp'2024-01-06 00:00:00')",
    ],
    "v2_to_v3": [
        "CREATE TABLE {t} (id bigint, data string) USING iceberg PARTITIONED BY (bucket(2, id)) "
        "TBLPROPERTIES ('format-version'='2', " + MOR + ")",
        "INSERT INTO {t} SELECT id, concat('d', id) FROM range(0, 30) AS r(id)",
        "DELETE FROM {t} WHERE id % 4 = 0",
        "ALTER TABLE {t} SET TBLPROPERTIES ('format-version'='3')",
        "INSERT INTO {t} SELECT id, concat('n', id) FROM range(30, 40) AS r(id)",
        "DELETE FROM {t} WHERE id % 4 = 1",
        "UPDATE {t} SET data = 'x' WHERE id = 31",
    ],
    "v2_evolution": [
        "CREATE TABLE {t} (id int, name string, score float, dec decimal(5,2)) USING iceberg "
        "PARTITIONED BY (bucket(4, id)) TBLPROPERTIES ('format-version'='2')",
        "INSERT INTO {t} VALUES (1, 'a', 1.5, 1.25), (2, 'b', 2.5, 2.50)",
        "ALTER TABLE {t} ALTER COLUMN score TYPE double",
        "ALTER TABLE {t} ALTER COLUMN dec TYPE decimal(9,2)",
        "ALTER TABLE {t} RENAME COLUMN name TO label",
        "ALTER TABLE {t} ADD COLUMN added string",
        "ALTER TABLE {t} REPLACE PARTITION FIELD bucket(4, id) WITH truncate(2, label)",
        "INSERT INTO {t} VALUES (3, 'cc', 3.5, 3.75, 'x')",
        "ALTER TABLE {t} DROP COLUMN added",
        "ALTER TABLE {t} ADD COLUMN added string",
        "ALTER TABLE {t} DROP PARTITION FIELD truncate(2, label)",
        "INSERT INTO {t} VALUES (4, 'd', 4.5, 4.00, 'y')",
        "ALTER TABLE {t} WRITE ORDERED BY id DESC NULLS LAST, label",
        "INSERT INTO {t} VALUES (5, 'e', 5.5, 5.00, 'z')",
    ],
    "v2_nested": [
        "CREATE TABLE {t} (id bigint, loc struct<lat: double, lon: double>, tags array<string>, "
        "attrs map<string, int>, deep struct<a: array<struct<x: int, y: map<string, string>>>>) USING iceberg "
        "PARTITIONED BY (loc.lat) TBLPROPERTIES ('format-version'='2')",
        "INSERT INTO {t} VALUES (1, named_struct('lat', 1.0D, 'lon', 2.0D), array('a', 'b'), map('k', 1),"
        " named_struct('a', array(named_struct('x', 1, 'y', map('p', 'q'))))),"
        " (2, NULL, NULL, NULL, NULL)",
    ],
    "v2_eqdeletes": [
        "CREATE TABLE {t} (id int, cat string, v string) USING iceberg TBLPROPERTIES ('format-version'='2')",
        "INSERT INTO {t} VALUES (1, 'a', 'x'), (2, 'a', 'y'), (3, 'b', 'z'), (4, NULL, 'w')",
        "JAVA eq_delete spec=0 id=3",
        "JAVA eq_delete spec=0 id=1",
        "ALTER TABLE {t} ADD PARTITION FIELD cat",
        "INSERT INTO {t} VALUES (5, 'a', 'p'), (6, 'b', 'q'), (3, 'a', 'again')",
        "JAVA eq_delete spec=1 cat=a id=5",
        "JAVA eq_delete spec=1 cat=b id=3",
    ],
}
for _fmt in ("orc", "avro"):
    SCRIPTS[f"v2_{_fmt}"] = [
        "CREATE TABLE {t} (id int, s string, d date, ts timestamp, dec decimal(9,2), f float, "
        "loc struct<lat: double, tags: array<string>>, attrs map<string, int>, ids map<int, string>) USING iceberg "
        "PARTITIONED BY (bucket(4, id), days(ts)) "
        f"TBLPROPERTIES ('format-version'='2', 'write.format.default'='{_fmt}', "
        f"'write.delete.format.default'='{_fmt}', " + MOR + ")",
        "INSERT INTO {t} SELECT CAST(id AS int), concat('s', id), date_add(date'2024-01-01', CAST(id % 3 AS int)), "
        "timestamp'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % 3 AS int)), CAST(id / 7 AS decimal(9,2)), "
        "CASE WHEN id = 5 THEN float('NaN') ELSE CAST(id AS float) END, named_struct('lat', id * 1.5D, 'tags', "
        "array(concat('t', id))), map('k', CAST(id AS int)), map(CAST(id AS int), 'v') FROM range(0, 30) AS r(id)",
        "INSERT INTO {t} VALUES (100, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
        "DELETE FROM {t} WHERE id % 4 = 0",
        f"JAVA eq_delete spec=0 id=3 ts=1704067200000000 format={_fmt.upper()}",
        "ALTER TABLE {t} RENAME COLUMN s TO label",
        "ALTER TABLE {t} ALTER COLUMN f TYPE double",
        "ALTER TABLE {t} ALTER COLUMN dec TYPE decimal(12,2)",
        "ALTER TABLE {t} ADD COLUMN extra string",
        "INSERT INTO {t} VALUES (200, 'new', date'2024-02-01', timestamp'2024-02-01 00:00:00', 1.50, 2.5D,"
        " named_struct('lat', 0.5D, 'tags', array()), map(), map(), 'x')",
        "UPDATE {t} SET label = 'upd' WHERE id IN (1, 2, 200)",
    ]
SCRIPTS["v2_unpartitioned"] = [
    "CREATE TABLE {t} (id int, v string) USING iceberg TBLPROPERTIES ('format-version'='2', " + MOR + ")",
    "INSERT INTO {t} SELECT id, concat('v', id) FROM range(0, 10) AS r(id)",
    "DELETE FROM {t} WHERE id = 4",
    "JAVA eq_delete spec=0 id=6",
]
SCRIPTS["v3_avro"] = [
    "CREATE TABLE {t} (id bigint, v string) USING iceberg PARTITIONED BY (bucket(2, id)) "
    "TBLPROPERTIES ('format-version'='3', 'write.format.default'='avro', " + MOR + ")",
    "INSERT INTO {t} SELECT id, concat('v', id) FROM range(0, 20) AS r(id)",
    "DELETE FROM {t} WHERE id % 3 = 0",
    "UPDATE {t} SET v = 'upd' WHERE id IN (1, 2)",
]

# Classes of tables users have that the scripts above did not cover
SCRIPTS["v2_ancient"] = [  # dates before 1582-10-15 and timestamps before 1900: files with no Spark calendar metadata
    "CREATE TABLE {t} (id int, d date, ts timestamp, tsn timestamp_ntz) USING iceberg PARTITIONED BY (years(d)) "
    "TBLPROPERTIES ('format-version'='2')",
    "INSERT INTO {t} VALUES "
    "(1, DATE '1000-01-01', TIMESTAMP '1200-06-01 12:00:00', TIMESTAMP_NTZ '1899-12-31 23:59:59'),"
    " (2, DATE '1582-10-04', TIMESTAMP '1582-10-15 00:00:00', TIMESTAMP_NTZ '0001-01-01 00:00:00'),"
    " (3, DATE '2024-01-01', TIMESTAMP '2024-01-01 00:00:00', TIMESTAMP_NTZ '2024-01-01 00:00:00')",
]
SCRIPTS["v1_to_v2"] = [  # snapshots committed while v1 carry no sequence number
    "CREATE TABLE {t} (id bigint, data string) USING iceberg PARTITIONED BY (bucket(2, id)) "
    "TBLPROPERTIES ('format-version'='1')",
    "INSERT INTO {t} SELECT id, concat('d', id) FROM range(0, 20) AS r(id)",
    "DELETE FROM {t} WHERE id = 3",
    "ALTER TABLE {t} SET TBLPROPERTIES ('format-version'='2', " + MOR + ")",
    "INSERT INTO {t} SELECT id, concat('n', id) FROM range(20, 30) AS r(id)",
    "DELETE FROM {t} WHERE id % 5 = 0",
]
SCRIPTS["v1_partition_merge"] = [  # a v1 spec and the one that made its field void share partitions rows
    "CREATE TABLE {t} (id bigint, cat string, ts timestamp) USING iceberg PARTITIONED BY (cat) "
    "TBLPROPERTIES ('format-version'='1')",
    "INSERT INTO {t} VALUES (1, 'a', NULL), (2, 'b', NULL)",
    "ALTER TABLE {t} ADD PARTITION FIELD days(ts)",
    "INSERT INTO {t} VALUES (3, 'a', NULL), (4, 'a', timestamp'2024-01-01 10:00:00')",
    "ALTER TABLE {t} DROP PARTITION FIELD days(ts)",
    "INSERT INTO {t} VALUES (5, 'a', NULL), (6, 'a', timestamp'2024-01-02 10:00:00')",
    "DELETE FROM {t} WHERE id = 3",
]
SCRIPTS["v2_partition_merge"] = [  # files of two specs with the same tuple in the unified partition type
    "CREATE TABLE {t} (id bigint, cat string, ts timestamp) USING iceberg PARTITIONED BY (cat) "
    "TBLPROPERTIES ('format-version'='2', " + MOR + ")",
    "INSERT INTO {t} VALUES (1, 'a', NULL), (2, 'a', NULL), (3, 'b', NULL)",
    "ALTER TABLE {t} ADD PARTITION FIELD days(ts)",
    "INSERT INTO {t} VALUES (4, 'a', NULL), (5, 'a', timestamp'2024-01-01 10:00:00'), (6, 'b', NULL)",
    "DELETE FROM {t} WHERE id = 2",
]
SCRIPTS["v2_many_files"] = [  # manifests of more entries than the reference decoder takes
    "CREATE TABLE {t} (id bigint, p int, v string) USING iceberg PARTITIONED BY (p) "
    "TBLPROPERTIES ('format-version'='2', " + MOR + ")",
    "INSERT INTO {t} SELECT /*+ REPARTITION(80, p) */ id, CAST(id % 80 AS int) AS p, concat('v', id) AS v "
    "FROM range(0, 400) AS r(id)",
    "DELETE FROM {t} WHERE id % 9 = 0",
]
# binary, fixed and uuid columns (Spark SQL cannot declare the last two: created through Java's API)
PRUNE_UUIDS = ["00000000-0000-0000-0000-000000000001", "7fffffff-ffff-ffff-ffff-ffffffffffff",
               "80000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-fffffffffffe"]
SCRIPTS["v2_prune_types"] = [
    "JAVA create " + json.dumps({"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": False, "type": "long"},
        {"id": 2, "name": "dt", "required": False, "type": "date"},
        {"id": 3, "name": "bin", "required": False, "type": "binary"},
        {"id": 4, "name": "fx", "required": False, "type": "fixed[4]"},
        {"id": 5, "name": "u", "required": False, "type": "uuid"}]}),
    *[f"INSERT INTO {{t}} VALUES ({i}, date_add(DATE '2024-01-01', {i}), X'0{i}', X'0{i}000000', '{u}')"
      for i, u in enumerate(PRUNE_UUIDS)],
    "INSERT INTO {t} VALUES (9, NULL, X'', X'09000000', NULL)",
]


def java_create(spark, table_name: str, schema_json: str) -> None:
    """Create an unpartitioned v2 table with an Iceberg schema given as JSON, through Iceberg's Java API."""
    jvm = spark._jvm
    catalog_name, ident = table_name.split(".", 1)
    icat = spark._jsparkSession.sessionState().catalogManager().catalog(catalog_name).icebergCatalog()
    props = jvm.java.util.HashMap()
    props.put("format-version", "2")
    icat.createTable(jvm.org.apache.iceberg.catalog.TableIdentifier.parse(ident),
                     jvm.org.apache.iceberg.SchemaParser.fromJson(schema_json),
                     jvm.org.apache.iceberg.PartitionSpec.unpartitioned(), props)


def java_eq_delete(spark, table_name: str, spec_id: int, values: dict[str, str]) -> None:
    """Commit an equality delete file on ``id`` through Iceberg's Java API (Spark SQL cannot write them)."""
    jvm = spark._jvm
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, table_name)
    schema = table.schema()
    spec = table.specs().get(spec_id)
    ids = spark.sparkContext._gateway.new_array(jvm.int, 1)
    ids[0] = schema.findField("id").fieldId()
    names = jvm.java.util.ArrayList()
    names.add("id")
    delete_schema = schema.select(names)
    factory = jvm.org.apache.iceberg.data.GenericAppenderFactory(schema, spec, ids, delete_schema, None)
    ext = values.get("format", "PARQUET").lower()
    location = table.locationProvider().newDataLocation(f"eq-{jvm.java.util.UUID.randomUUID().toString()}.{ext}")
    out = jvm.org.apache.iceberg.encryption.EncryptedFiles.plainAsEncryptedOutput(table.io().newOutputFile(location))
    key = None
    if spec.isPartitioned():
        record = jvm.org.apache.iceberg.data.GenericRecord.create(schema)
        for name, value in values.items():
            if name in ("id", "ts"):  # ts: micros (the internal form PartitionKey reads)
                record.setField(name, int(value))
            elif name != "format":
                record.setField(name, value)
        key = jvm.org.apache.iceberg.PartitionKey(spec, schema)
        key.partition(record)
    fmt = values.get("format", "PARQUET")
    writer = factory.newEqDeleteWriter(out, getattr(jvm.org.apache.iceberg.FileFormat, fmt), key)
    rec = jvm.org.apache.iceberg.data.GenericRecord.create(delete_schema)
    rec.setField("id", int(values["id"]))
    writer.write(rec)
    writer.close()
    table.newRowDelta().addDeletes(writer.toDeleteFile()).commit()


def build(spark, namespace: str = "db") -> list[str]:
    """Run every script in the ``ref`` catalog; returns the table names."""
    for name, script in SCRIPTS.items():
        t = f"ref.{namespace}.{name}"
        spark.sql(f"DROP TABLE IF EXISTS {t}")
        for stmt in script:
            if stmt.startswith("JAVA create "):
                java_create(spark, t, stmt[len("JAVA create "):])
            elif stmt.startswith("JAVA eq_delete"):
                parts = dict(p.split("=") for p in stmt.split()[2:])
                java_eq_delete(spark, t, int(parts.pop("spec")), parts)
            else:
                spark.sql(stmt.format(t=t))
    return list(SCRIPTS)
