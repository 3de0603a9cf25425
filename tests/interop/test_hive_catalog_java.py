"""sparkberg's Hive catalog and Iceberg Java's HiveCatalog on one Hive Metastore (tests/hiveserver.py: Hive 2.3's
server from PySpark's jars): each lists, reads and commits to the tables the other made, and appends from both at
once (sparkberg's from other processes, Java's from its Spark session) all land, none twice: both take the table's
exclusive metastore lock for a commit."""
import os
import sys
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sparkberg
from sparkberg.format.manifests import DataFile

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [TESTS, os.path.join(TESTS, "spec")]
from commits import fast_append  # noqa: E402
from test_catalog_reliability import ARROW, run_writers  # noqa: E402


@pytest.fixture
def shared(java, hive_metastore, tmp_path):
    """(Spark catalog name of Java's HiveCatalog, sparkberg's catalog over the same metastore, the warehouse)."""
    name = f"hive_{uuid.uuid4().hex[:6]}"
    warehouse = f"file://{tmp_path}/wh"
    keys = {f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog",
            f"spark.sql.catalog.{name}.type": "hive", f"spark.sql.catalog.{name}.uri": hive_metastore.uri,
            f"spark.sql.catalog.{name}.warehouse": warehouse,
            f"spark.sql.catalog.{name}.cache-enabled": "false"}  # (each read sees the latest commit)
    for k, v in keys.items():
        java.conf.set(k, v)
    yield name, sparkberg.catalog(java, hive_metastore.uri, warehouse=warehouse, name=name), warehouse
    for k in keys:
        java.conf.unset(k)


def java_ids(java, table):
    return sorted(r[0] for r in java.sql(f"SELECT id FROM {table}").collect())


def ids(t):
    return sorted(r[0] for r in t.to_df().select("id").collect())


def test_java_and_sparkberg_share_a_hive_metastore_both_ways(java, shared):
    name, ours, _ = shared
    java.sql(f"CREATE NAMESPACE {name}.jdb")
    java.sql(f"CREATE TABLE {name}.jdb.from_java (id bigint, p int) USING iceberg PARTITIONED BY (p) "
             "TBLPROPERTIES ('format-version'='2')")
    java.sql(f"INSERT INTO {name}.jdb.from_java VALUES (1, 0), (2, 1)")
    assert ("jdb",) in ours.list_namespaces() and ours.list_tables("jdb") == ["jdb.from_java"]
    t = ours.load_table("jdb.from_java")
    assert ids(t) == [1, 2]
    t.append(java.sql("SELECT 3L AS id, 0 AS p"))
    t.delete("id = 1")
    assert java_ids(java, f"{name}.jdb.from_java") == [2, 3]
    java.sql(f"INSERT INTO {name}.jdb.from_java VALUES (4, 1)")
    assert ids(ours.load_table("jdb.from_java")) == [2, 3, 4]
    # created by sparkberg: listed, read and committed to by Java
    mine = ours.create_table("jdb.from_sparkberg", "id bigint")
    mine.append(java.sql("SELECT id FROM range(0, 3)"))
    assert "from_sparkberg" in [r[1] for r in java.sql(f"SHOW TABLES IN {name}.jdb").collect()]
    assert java_ids(java, f"{name}.jdb.from_sparkberg") == [0, 1, 2]
    java.sql(f"INSERT INTO {name}.jdb.from_sparkberg VALUES (9)")
    assert ids(ours.load_table("jdb.from_sparkberg")) == [0, 1, 2, 9]
    ours.rename_table("jdb.from_sparkberg", "jdb.renamed")
    assert java_ids(java, f"{name}.jdb.renamed") == [0, 1, 2, 9]
    java.sql(f"DROP TABLE {name}.jdb.renamed")
    assert not ours.table_exists("jdb.renamed")


def _appender(uri: str, warehouse: str, name: str, k: int, n: int) -> None:
    table = sparkberg.catalog(None, uri, warehouse=warehouse, name=name).load_table("race.t")
    for i in range(n):
        path = f"{table.metadata.location}/data/{uuid.uuid4()}.parquet"
        with table.io.open_output(path) as f:
            pq.write_table(pa.table([pa.array([1000 * k + i], pa.int64())], schema=ARROW), f)
        fast_append(table, [DataFile(path, "parquet", {}, 1, table.io.size(path))])


def test_appends_from_sparkberg_and_java_at_once_all_land(java, shared, hive_metastore, report):
    name, ours, warehouse = shared
    ours.create_namespace("race")
    ours.create_table("race.t", "id bigint", properties={"commit.retry.num-retries": "20",
                                                         "commit.retry.min-wait-ms": "20",
                                                         "commit.retry.max-wait-ms": "500"})
    import threading
    java_rows = list(range(9000, 9008))

    def java_appends():
        for i in java_rows:
            java.sql(f"INSERT INTO {name}.race.t VALUES ({i})")
    writer = threading.Thread(target=java_appends)
    writer.start()
    seconds = run_writers(_appender, [(hive_metastore.uri, warehouse, name, k, 4) for k in range(2)])
    writer.join(600)
    t = ours.load_table("race.t")
    expected = sorted([1000 * k + i for k in range(2) for i in range(4)] + java_rows)
    assert ids(t) == expected and java_ids(java, f"{name}.race.t") == expected
    snapshots = t.snapshots()
    assert len(snapshots) == len(expected) and len({s.parent_snapshot_id for s in snapshots}) == len(expected)
    report(f"Hive catalog, Iceberg Java's HiveCatalog and 2 sparkberg processes appending at once: "
           f"{len(expected)} snapshots, linear, {seconds:.1f} s")


def test_views_in_one_hive_metastore_both_ways(java, shared):
    name, ours, _ = shared
    java.sql(f"CREATE NAMESPACE {name}.vdb")
    java.sql(f"CREATE TABLE {name}.vdb.t (id bigint) USING iceberg")
    java.sql(f"INSERT INTO {name}.vdb.t VALUES (1), (2), (3)")
    # Java's view, read by sparkberg
    java.sql(f"CREATE VIEW {name}.vdb.jv AS SELECT id FROM {name}.vdb.t WHERE id > 1")
    assert ours.list_views("vdb") == ["vdb.jv"] and ours.list_tables("vdb") == ["vdb.t"]
    assert sorted(r[0] for r in ours.load_view("vdb.jv").to_df().collect()) == [2, 3]
    # sparkberg's view, read, replaced and dropped by Java
    sparkberg.sql(java, "CREATE VIEW vdb.mine (k COMMENT 'the key') AS SELECT id FROM vdb.t WHERE id < 3",
                  catalog=ours)
    assert sorted(r[0] for r in java.sql(f"SELECT * FROM {name}.vdb.mine").collect()) == [1, 2]
    java.sql(f"CREATE OR REPLACE VIEW {name}.vdb.mine AS SELECT id * 10 AS k FROM {name}.vdb.t")
    mine = ours.load_view("vdb.mine")
    assert mine.metadata.current_version_id == 2 and sorted(r[0] for r in mine.to_df().collect()) == [10, 20, 30]
    sparkberg.sql(java, "ALTER VIEW vdb.mine SET TBLPROPERTIES ('team' = 'core')", catalog=ours)
    props = {r[0]: r[1] for r in java.sql(f"SHOW TBLPROPERTIES {name}.vdb.mine").collect()}
    assert props["team"] == "core"
    ours.rename_view("vdb.mine", "vdb.renamed")
    assert sorted(r[0] for r in java.sql(f"SELECT * FROM {name}.vdb.renamed").collect()) == [10, 20, 30]
    java.sql(f"DROP VIEW {name}.vdb.renamed")
    assert ours.list_views("vdb") == ["vdb.jv"]
