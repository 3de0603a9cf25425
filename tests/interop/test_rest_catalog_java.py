"""One REST catalog, Iceberg Java's server logic (tests/interop/java_rest_server.py: ``CatalogHandlers`` over a
``JdbcCatalog`` on PostgreSQL), shared by sparkberg's client, Iceberg Java's ``RESTCatalog`` (through its Spark
catalog), PyIceberg's ``RestCatalog`` and DuckDB: what one creates and commits, the others list, load, read and
commit on top of, in both directions."""
import os
import sys
import uuid

import pytest

import sparkberg
from test_sql_catalog_java import ids, java_ids

pytestmark = pytest.mark.interop


@pytest.fixture
def rest(java, postgres, tmp_path):
    """(the server, the Spark catalog name of Java's RESTCatalog on it)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from java_rest_server import JavaRestServer
    import pgserver
    db = f"rest_{uuid.uuid4().hex[:8]}"
    postgres.uri(db)  # (created)
    server = JavaRestServer(java, "rest", f"jdbc:postgresql://127.0.0.1:{postgres.port}/{db}",
                            f"file://{tmp_path}/wh", {"jdbc.user": "postgres", "jdbc.password": pgserver.PASSWORD})
    name = f"jrest_{uuid.uuid4().hex[:6]}"
    keys = {f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog",
            f"spark.sql.catalog.{name}.type": "rest", f"spark.sql.catalog.{name}.uri": server.uri,
            f"spark.sql.catalog.{name}.cache-enabled": "false"}
    for k, v in keys.items():
        java.conf.set(k, v)
    yield server, name
    for k in keys:
        java.conf.unset(k)
    server.close()


def pyiceberg_catalog(server):
    from pyiceberg.catalog.rest import RestCatalog
    return RestCatalog("rest", uri=server.uri)


def duckdb_attached(server):
    from duckdbs import duckdb_with_httpfs
    con = duckdb_with_httpfs()
    con.execute(f"ATTACH '' AS r (TYPE iceberg, ENDPOINT '{server.uri}', AUTHORIZATION_TYPE 'none')")
    return con


def test_sparkberg_tables_are_read_and_committed_by_java_pyiceberg_and_duckdb(java, rest):
    server, name = rest
    ours = sparkberg.catalog(java, server.uri)
    ours.create_namespace("db", {"owner": "etl"})
    t = ours.create_table("db.s", "id bigint, v string, p int", partition_by=["p"])
    t.append(java.sql("SELECT id, CAST(id AS string) AS v, CAST(id % 3 AS int) AS p FROM range(0, 20)"))
    t.delete("id < 5")
    t.set_properties(team="core")
    t.add_columns("note string")  # (schema and spec changes: sent as add-schema/set-current-schema -1 ...)
    t.update_spec(["p", "v"])
    assert java_ids(java, f"{name}.db.s") == list(range(5, 20))
    assert [f.name for f in java.table(f"{name}.db.s").schema.fields] == ["id", "v", "p", "note"]
    props = {r[0]: r[1] for r in java.sql(f"SHOW TBLPROPERTIES {name}.db.s").collect()}
    assert props["team"] == "core"
    py = pyiceberg_catalog(server)
    assert py.load_namespace_properties("db")["owner"] == "etl"
    assert sorted(py.load_table("db.s").scan().to_arrow().column("id").to_pylist()) == list(range(5, 20))
    con = duckdb_attached(server)
    assert sorted(r[0] for r in con.sql("SELECT id FROM r.db.s").fetchall()) == list(range(5, 20))
    # each commits on top; sparkberg reads every commit and commits again
    java.sql(f"INSERT INTO {name}.db.s VALUES (100, 'java', 1, 'n')")
    import pyarrow as pa
    py.load_table("db.s").append(pa.table({"id": pa.array([200], pa.int64()), "v": ["pyiceberg"],
                                           "p": pa.array([2], pa.int32()), "note": ["py"]}))
    t = ours.load_table("db.s")
    assert ids(t) == list(range(5, 20)) + [100, 200]
    t.append(java.sql("SELECT 300L AS id, 'sparkberg' AS v, 0 AS p, 'sb' AS note"))
    assert java_ids(java, f"{name}.db.s") == list(range(5, 20)) + [100, 200, 300]
    snaps = ours.load_table("db.s").metadata.snapshots
    assert [s.parent_snapshot_id for s in snaps[1:]] == [s.snapshot_id for s in snaps[:-1]]
    ours.rename_table("db.s", "db.renamed")
    assert [r.tableName for r in java.sql(f"SHOW TABLES IN {name}.db").collect()] == ["renamed"]
    ours.drop_table("db.renamed")
    assert java.sql(f"SHOW TABLES IN {name}.db").collect() == []


def test_java_pyiceberg_and_duckdb_tables_are_read_and_committed_by_sparkberg(java, rest):
    server, name = rest
    java.sql(f"CREATE NAMESPACE {name}.db")
    java.sql(f"CREATE TABLE {name}.db.j (id bigint, d date) USING iceberg PARTITIONED BY (days(d)) "
             "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
    java.sql(f"INSERT INTO {name}.db.j SELECT id, date_add(DATE'2024-01-01', CAST(id % 3 AS int)) FROM range(0, 12)")
    java.sql(f"DELETE FROM {name}.db.j WHERE id = 4")
    ours = sparkberg.catalog(java, server.uri)
    assert ours.list_tables("db") == ["db.j"]
    t = ours.load_table("db.j")
    assert ids(t) == [i for i in range(12) if i != 4]
    t.append(java.sql("SELECT 50L AS id, DATE'2024-02-01' AS d"))
    t.delete("id = 0")
    assert java_ids(java, f"{name}.db.j") == [i for i in range(1, 12) if i != 4] + [50]

    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField
    py = pyiceberg_catalog(server)
    pt = py.create_table("db.p", Schema(NestedField(1, "id", LongType(), required=False)))
    pt.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    t = ours.load_table("db.p")
    assert ids(t) == [1, 2, 3]
    t.append(java.sql("SELECT 4L AS id"))
    assert sorted(py.load_table("db.p").scan().to_arrow().column("id").to_pylist()) == [1, 2, 3, 4]

    con = duckdb_attached(server)
    con.execute("CREATE TABLE r.db.d (id BIGINT, s VARCHAR)")
    con.execute("INSERT INTO r.db.d SELECT i, 's' || i FROM range(0, 5) r(i)")
    t = ours.load_table("db.d")
    assert ids(t) == [0, 1, 2, 3, 4]
    t.delete("id = 2")
    t.append(java.sql("SELECT 9L AS id, 'x' AS s"))
    assert sorted(r[0] for r in con.sql("SELECT id FROM r.db.d").fetchall()) == [0, 1, 3, 4, 9]


def test_a_stale_sparkberg_writer_retries_after_javas_commit(java, rest):
    server, name = rest
    ours = sparkberg.catalog(java, server.uri)
    ours.create_namespace("db")
    ours.create_table("db.t", "id bigint")
    held = ours.load_table("db.t")
    java.sql(f"INSERT INTO {name}.db.t VALUES (1)")  # (the held table's base is now stale: a 409, then a retry)
    held.append(java.sql("SELECT 2L AS id"))
    assert java_ids(java, f"{name}.db.t") == [1, 2]
    assert server.requests.count("POST /v1/namespaces/db/tables/t") >= 2


def test_views_over_javas_rest_server_both_ways(java, rest):
    from sparkberg.format import types as T
    from sparkberg.format.views import Representation, ViewVersion, new_view, replaced
    server, name = rest
    ours = sparkberg.catalog(java, server.uri)
    backend = ours._backend
    ours.create_namespace("vdb")
    t = ours.create_table("vdb.t", "id bigint, s string")
    t.append(java.sql("SELECT id, CAST(id AS string) AS s FROM range(0, 5)"))
    # sparkberg's view through Java's server: Java's RESTCatalog queries it
    schema = T.Schema([T.NestedField(1, "id", T.LONG, False)])
    version = ViewVersion(0, 1000, 0, {"engine-name": "spark", "engine-version": "4.0.0"},
                          (Representation("sql", f"SELECT id FROM {name}.vdb.t WHERE id < 2", "spark"),), ("vdb",),
                          name)
    _, _, created = backend.create_view("vdb.mine", new_view(f"file:{ours.warehouse}/vdb/mine", schema, version,
                                                              {"comment": "ours"}))
    assert sorted(r[0] for r in java.sql(f"SELECT * FROM {name}.vdb.mine").collect()) == [0, 1]
    # a new version committed by sparkberg (Java's server applies the updates), then one by Java
    _, base, meta = backend.load_view("vdb.mine")
    wider = T.Schema([T.NestedField(1, "id", T.LONG, False), T.NestedField(2, "s", T.STRING, False)])
    newer = replaced(meta, ViewVersion(0, 2000, 0, version.summary, (Representation(
        "sql", f"SELECT id, s FROM {name}.vdb.t WHERE id < 3", "spark"),), ("vdb",), name), wider)
    _, written = backend.commit_view("vdb.mine", base, newer)
    assert written.current_version_id == 2 and [f.name for f in written.schema().fields] == ["id", "s"]
    assert sorted(tuple(r) for r in java.sql(f"SELECT * FROM {name}.vdb.mine").collect()) == \
        [(0, "0"), (1, "1"), (2, "2")]
    java.sql(f"CREATE OR REPLACE VIEW {name}.vdb.mine AS SELECT s FROM {name}.vdb.t WHERE id = 4")
    _, _, after = backend.load_view("vdb.mine")
    assert after.current_version_id == 3 and after.view_uuid == created.view_uuid
    assert after.current_version.sql("spark") == f"SELECT s FROM {name}.vdb.t WHERE id = 4"
    # Java's view: listed and loaded by sparkberg; renamed and dropped by sparkberg, seen by Java
    java.sql(f"CREATE VIEW {name}.vdb.theirs AS SELECT count(*) AS n FROM {name}.vdb.t")
    assert [str(i) for i in backend.list_views("vdb")] == ["vdb.mine", "vdb.theirs"]
    assert [f.name for f in backend.load_view("vdb.theirs")[2].schema().fields] == ["n"]
    backend.rename_view("vdb.theirs", "vdb.renamed")
    assert java.sql(f"SELECT n FROM {name}.vdb.renamed").collect()[0][0] == 5
    backend.drop_view("vdb.renamed")
    assert {r[1] for r in java.sql(f"SHOW VIEWS IN {name}.vdb").collect() if not r[2]} == {"mine"}
    # PyIceberg's RestCatalog lists and loads the view sparkberg made (and Java replaced), and one made by
    # sparkberg's SQL
    sparkberg.sql(java, "CREATE VIEW vdb.by_sql (k COMMENT 'the key') COMMENT 'made by sparkberg.sql' "
                        "AS SELECT id FROM vdb.t WHERE id > 2", catalog=ours)
    py = pyiceberg_catalog(server)
    assert sorted(i[-1] for i in py.list_views("vdb")) == ["by_sql", "mine"]
    loaded = py.load_view(("vdb", "by_sql"))
    version = next(v for v in loaded.metadata.versions if v.version_id == loaded.metadata.current_version_id)
    assert version.representations[0].root.sql == "SELECT id FROM vdb.t WHERE id > 2"
    schema = next(s for s in loaded.metadata.schemas if s.schema_id == version.schema_id)
    assert [(f.name, f.doc) for f in schema.fields] == [("k", "the key")]
    assert loaded.metadata.properties["comment"] == "made by sparkberg.sql"
    assert sorted(r[0] for r in java.sql(f"SELECT * FROM {name}.vdb.by_sql").collect()) == [3, 4]
