"""The SQL catalog through the API users call: ``sparkberg.catalog`` with a database URI or a catalog configured
by ``spark.sql.catalog.<name>.*``, tables written and read, writers that refresh and retry on their own, and the
spec's table-uuid check."""
import sqlite3
import threading

import pytest

import sparkberg
from sparkberg.errors import NotSupportedError, TableUUIDMismatchError


@pytest.fixture
def sqlcat(spark, tmp_path):
    return sparkberg.catalog(spark, f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "wh"), name="prod")


def ids(t):
    return sorted(r[0] for r in t.to_df().select("id").collect())


def test_tables_in_a_sqlite_catalog_are_written_and_read(spark, sqlcat, tmp_path):
    sqlcat.create_namespace("db", {"owner": "etl"})
    assert sqlcat.load_namespace_properties("db") == {"owner": "etl", "exists": "true"}
    t = sqlcat.create_table("db.events", "id bigint, p int", partition_by=["p"])
    t.append(spark.sql("SELECT id, CAST(id % 3 AS int) AS p FROM range(0, 30)"))
    t.delete("id < 10")
    assert ids(sqlcat.load_table("db.events")) == list(range(10, 30))
    with sqlite3.connect(str(tmp_path / "catalog.db")) as conn:
        (loc, prev), = conn.execute("SELECT metadata_location, previous_metadata_location FROM iceberg_tables")
    assert loc == t.metadata_location and prev is not None and "/wh/db/events/metadata/00002-" in loc
    sqlcat.rename_table("db.events", "db.renamed")
    assert sqlcat.list_tables("db") == ["db.renamed"] and ids(sqlcat.load_table("db.renamed")) == list(range(10, 30))
    registered = sqlcat.register_table("db.again", sqlcat.load_table("db.renamed").metadata_location)
    assert ids(registered) == list(range(10, 30))
    sqlcat.drop_table("db.again")
    sqlcat.drop_table("db.renamed", purge=True)
    assert sqlcat.list_tables("db") == []


def test_writers_holding_the_same_table_refresh_and_retry(spark, sqlcat):
    # two Table objects loaded before either commits: the second's commit loses the swap, refreshes and retries
    sqlcat.create_namespace("db")
    sqlcat.create_table("db.t", "id bigint")
    a, b = sqlcat.load_table("db.t"), sqlcat.load_table("db.t")
    a.append(spark.sql("SELECT id FROM range(0, 5)"))
    b.append(spark.sql("SELECT id FROM range(5, 10)"))
    t = sqlcat.load_table("db.t")
    assert ids(t) == list(range(10))
    snaps = t.metadata.snapshots
    assert [s.parent_snapshot_id for s in snaps] == [None, snaps[0].snapshot_id]


def test_concurrent_appends_through_threads_lose_nothing(spark, sqlcat):
    sqlcat.create_namespace("db")
    sqlcat.create_table("db.t", "id bigint", properties={"commit.retry.num-retries": "20",
                                                          "commit.retry.min-wait-ms": "10"})
    errors = []

    def writer(k):
        try:
            t = sqlcat.load_table("db.t")
            for i in range(3):
                t.append(spark.sql(f"SELECT {100 * k + i}L AS id"))
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    t = sqlcat.load_table("db.t")
    assert ids(t) == sorted(100 * k + i for k in range(4) for i in range(3))
    chain = {s.snapshot_id: s.parent_snapshot_id for s in t.metadata.snapshots}
    assert len(chain) == 12 and sum(1 for p in chain.values() if p is None) == 1
    assert len(set(chain.values()) - {None}) == 11  # (a linear chain: each snapshot the parent of one)


def test_a_table_dropped_and_created_again_is_not_committed_to(spark, sqlcat):
    sqlcat.create_namespace("db")
    sqlcat.create_table("db.t", "id bigint")
    held = sqlcat.load_table("db.t")
    sqlcat.drop_table("db.t")
    sqlcat.create_table("db.t", "id bigint")
    with pytest.raises(TableUUIDMismatchError, match="table-uuid changed"):
        held.append(spark.sql("SELECT 1L AS id"))
    fresh = sqlcat.load_table("db.t")
    assert fresh.current_snapshot() is None and ids(fresh) == []
    with pytest.raises(TableUUIDMismatchError):
        held.refresh()


def test_a_catalog_configured_in_the_spark_conf(spark, tmp_path):
    keys = {"spark.sql.catalog.confcat.type": "jdbc",
            "spark.sql.catalog.confcat.uri": f"jdbc:sqlite:{tmp_path}/conf.db",
            "spark.sql.catalog.confcat.warehouse": f"file://{tmp_path}/wh"}
    for k, v in keys.items():
        spark.conf.set(k, v)
    try:
        cat = sparkberg.catalog(spark, "confcat")
        cat.create_namespace("db")
        cat.create_table("db.t", "id bigint").append(spark.sql("SELECT 7L AS id"))
        same = sparkberg.catalog(spark, f"sqlite:///{tmp_path}/conf.db", warehouse=f"file://{tmp_path}/wh",
                                 name="confcat")
        assert ids(same.load_table("db.t")) == [7]
        other_name = sparkberg.catalog(spark, f"sqlite:///{tmp_path}/conf.db", warehouse=f"file://{tmp_path}/wh")
        assert not other_name.table_exists("db.t")  # (catalog_name "default": another catalog)
    finally:
        for k in keys:
            spark.conf.unset(k)


def test_file_system_catalogs_keep_no_namespace_properties_and_do_not_rename(spark, tmp_path):
    cat = sparkberg.catalog(spark, str(tmp_path / "wh"))
    with pytest.raises(NotSupportedError):
        cat.create_namespace("db", {"owner": "x"})
    cat.create_namespace("db")
    assert cat.load_namespace_properties("db") == {}
    cat.create_table("db.t", "id bigint")
    with pytest.raises(NotSupportedError, match="rename"):
        cat.rename_table("db.t", "db.u")
    with pytest.raises(NotSupportedError, match="register"):
        cat.register_table("db.u", cat.load_table("db.t").metadata_location)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_one_database_shared_with_pyicebergs_sql_catalog(spark, tmp_path, kind, request):
    # PyIceberg's SqlCatalog and sparkberg's, one database and catalog name: what one creates and commits the
    # other lists, loads, reads and commits on top of
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog
    if kind == "sqlite":
        ours_uri = theirs_uri = f"sqlite:///{tmp_path}/shared.db"
    else:
        ours_uri = request.getfixturevalue("postgres").uri("shared_pyiceberg")
        theirs_uri = ours_uri.replace("postgresql://", "postgresql+psycopg://")
    warehouse = f"file://{tmp_path}/wh"
    theirs = PyIcebergSqlCatalog("prod", uri=theirs_uri, warehouse=warehouse)
    theirs.create_namespace("db", {"owner": "pyiceberg"})
    created = theirs.create_table("db.from_pyiceberg", pa.schema([pa.field("id", pa.int64())]))
    created.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    ours = sparkberg.catalog(spark, ours_uri, warehouse=warehouse, name="prod")
    assert ours.list_namespaces() == [("db",)] and ours.load_namespace_properties("db") == {"owner": "pyiceberg"}
    assert ours.list_tables("db") == ["db.from_pyiceberg"]
    t = ours.load_table("db.from_pyiceberg")
    assert ids(t) == [1, 2, 3]
    t.append(spark.sql("SELECT 4L AS id"))
    again = theirs.load_table("db.from_pyiceberg")
    assert sorted(again.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3, 4]
    again.append(pa.table({"id": pa.array([5], pa.int64())}))
    assert ids(ours.load_table("db.from_pyiceberg")) == [1, 2, 3, 4, 5]
    # and the other way: created by sparkberg, listed and read by PyIceberg
    mine = ours.create_table("db.from_sparkberg", "id bigint")
    mine.append(spark.sql("SELECT id FROM range(0, 3)"))
    assert ("db", "from_sparkberg") in theirs.list_tables("db")
    assert sorted(theirs.load_table("db.from_sparkberg").scan().to_arrow().column("id").to_pylist()) == [0, 1, 2]
    ours.rename_table("db.from_sparkberg", "db.renamed")
    assert theirs.table_exists("db.renamed") and not theirs.table_exists("db.from_sparkberg")
    ours.drop_table("db.renamed")
    assert not theirs.table_exists("db.renamed")


def test_the_command_line_opens_a_sql_catalog(spark, sqlcat, tmp_path):
    import json
    import os
    import subprocess
    import sys
    sqlcat.create_namespace("db")
    sqlcat.create_table("db.t", "id bigint").append(spark.sql("SELECT id FROM range(0, 4)"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-m", "sparkberg.jobs.cli", "--catalog", f"sqlite:///{tmp_path}/catalog.db",
                          "--warehouse", str(tmp_path / "wh"), "--catalog-name", "prod", "--output", "json", "list",
                          "db"], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["db.t"]
