"""``migrate`` and ``snapshot`` of Hive Parquet tables by sparkberg and by Iceberg Java (Spark 3.5 with the runtime
jar, its session catalog an Iceberg ``SparkSessionCatalog`` over the same Hive Metastore: tests/hiveserver.py),
each on one of two twin tables: the Iceberg tables they make have the same schema (ids, types, names), partition
spec, properties and data files (paths relative to the table, partition values, record counts), and each engine
reads the rows of both. Java runs in a process of its own: its session catalog needs Spark's Hive support, which
a running session cannot take up."""
import datetime
import decimal
import json
import os
import shutil
import subprocess
import sys

import pytest

import sparkberg

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [TESTS]
from hiveserver import create_plain_table  # noqa: E402

COLUMNS = [("id", "bigint"), ("name", "string"), ("amount", "decimal(10,2)"), ("day", "date"), ("ts", "timestamp"),
           ("tags", "array<string>"), ("attrs", "struct<k:string,v:int>")]
DDL = ("id bigint, name string, amount decimal(10,2), day date, ts timestamp, tags array<string>, "
       "attrs struct<k:string,v:int>, region string")
ROWS = [(1, "a", decimal.Decimal("1.50"), datetime.date(2024, 1, 1), datetime.datetime(2024, 1, 1, 10, 0), ["x"],
         ("k1", 1), "eu"),
        (2, "b", None, None, None, None, None, "eu"),
        (3, "c", decimal.Decimal("3.00"), datetime.date(2024, 3, 4), datetime.datetime(2024, 3, 4, 0, 0), [],
         ("k3", None), "us")]

_JAVA = """
import json, sys
sys.path.insert(0, {shared!r})
from reference import jars
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.jars", ",".join(jars()))
         .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalogImplementation", "hive")
         .config("spark.hadoop.hive.metastore.uris", {uri!r})
         .config("spark.sql.warehouse.dir", {warehouse!r})
         .config("spark.sql.catalog.spark_catalog", "org.apache.iceberg.spark.SparkSessionCatalog")
         .config("spark.sql.catalog.spark_catalog.type", "hive")
         .config("spark.sql.catalog.spark_catalog.uri", {uri!r})
         .config("spark.sql.session.timeZone", "UTC").config("spark.ui.enabled", "false").getOrCreate())
out = {{"migrate": spark.sql("CALL spark_catalog.system.migrate('mig.twin_java')").collect()[0][0],
        "snapshot": spark.sql("CALL spark_catalog.system.snapshot('mig.src', 'mig.snap_java')").collect()[0][0]}}
print("RESULT " + json.dumps(out))
spark.stop()
"""


def _write(java, location: str) -> None:
    """ROWS as Spark writes a Hive table's partitions under ``location``."""
    df = java.createDataFrame(ROWS, DDL)
    for region in ("eu", "us"):
        df.where(f"region = '{region}'").drop("region").coalesce(1).write.parquet(f"{location}/region={region}")


def _files(table) -> list[tuple]:
    """(path under the table's location, partition, record count) of each data file."""
    rows = table.metadata_table("files").select("file_path", "partition", "record_count").collect()
    return sorted((r[0].rsplit("/", 2)[-2] + "/" + r[0].rsplit("/", 1)[-1], tuple(r[1]), r[2]) for r in rows)


def _comparable(table) -> dict:
    """The table's schema, spec, format version and properties (the name mapping parsed: Java indents its JSON;
    the source's comment left out: sparkberg keeps it, Java's conversion through Spark's catalog drops it)."""
    m = table.metadata
    props = {k: json.loads(v) if k == "schema.name-mapping.default" else v for k, v in m.properties.items()
             if k != "comment"}
    return {"schema": m.current_schema.to_json(), "spec": m.default_spec.to_json(m.format_version),
            "properties": props, "format-version": m.format_version}


@pytest.mark.timeout(600)
def test_migrate_and_snapshot_as_iceberg_java_makes_them(java, hive_metastore, tmp_path):
    warehouse = f"file:{tmp_path}/wh"
    ours = sparkberg.catalog(java, hive_metastore.uri, warehouse=warehouse, type="hive")
    ours.create_namespace("mig")
    _write(java, f"{tmp_path}/files")
    for name in ("twin_java", "twin_ours", "src"):  # (the same files in each: the same names)
        location = f"{tmp_path}/{name}"
        shutil.copytree(f"{tmp_path}/files", location)
        partitions = [([r], f"file:{location}/region={r}") for r in ("eu", "us")]
        # (external, as Java's migrate of a managed table would move its files to the backup's directory)
        create_plain_table(hive_metastore.uri, "mig", name, COLUMNS, [("region", "string")], f"file:{location}",
                           partitions, {"comment": "orders"}, managed=False)
    script = _JAVA.format(shared=os.path.join(os.environ.get("SPARKBERG_SHARED", "../shared"), "interop"),
                          uri=hive_metastore.uri, warehouse=warehouse)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=500,
                         env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    result = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert run.returncode == 0 and result, run.stderr[-3000:]
    counts = json.loads(result[0][len("RESULT "):])
    assert counts == {"migrate": 2, "snapshot": 2}
    migrated = ours.migrate_table("mig.twin_ours")
    snapped = ours.snapshot_table("mig.src", "mig.snap_ours")
    java_migrated, java_snapped = ours.load_table("mig.twin_java"), ours.load_table("mig.snap_java")
    for mine, theirs in ((migrated, java_migrated), (snapped, java_snapped)):
        assert _comparable(mine) == _comparable(theirs)
        assert mine.properties["comment"] == "orders" and "comment" not in theirs.properties
        assert _files(mine) == _files(theirs)
    expected = sorted(tuple(r) for r in java.createDataFrame(ROWS, DDL).collect())
    for t in (migrated, snapped, java_migrated, java_snapped):
        assert sorted(tuple(r) for r in t.to_df().collect()) == expected, t.name
    # Java reads the tables sparkberg made (its HiveCatalog over the same metastore)
    name = "hive_mig"
    keys = {f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog",
            f"spark.sql.catalog.{name}.type": "hive", f"spark.sql.catalog.{name}.uri": hive_metastore.uri,
            f"spark.sql.catalog.{name}.cache-enabled": "false"}
    for k, v in keys.items():
        java.conf.set(k, v)
    try:
        for table in ("twin_ours", "snap_ours"):
            got = sorted(tuple(r) for r in java.sql(f"SELECT * FROM {name}.mig.{table}").collect())
            assert got == expected, table
    finally:
        for k in keys:
            java.conf.unset(k)
    shutil.rmtree(tmp_path, ignore_errors=True)
