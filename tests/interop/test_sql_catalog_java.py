"""One SQL catalog database shared by Iceberg Java's JdbcCatalog (through its Spark catalog) and sparkberg's, on
SQLite and on PostgreSQL: what one creates and commits, the other lists, loads, reads and commits on top of."""
import os
import uuid

import pytest

import sparkberg

pytestmark = pytest.mark.interop


def release_sqlite_reads(java, catalog: str) -> None:
    """Iceberg Java 1.10.2's JdbcCatalog leaves open the result sets of its start-up checks (the
    ``DatabaseMetaData.getTables`` / ``getColumns`` of ``atomicCreateTable`` and ``updateSchemaIfRequired``). On
    SQLite the pooled connection holding them keeps a read transaction, so no other connection, Java's own or
    another process's, can commit: "database is locked" (in WAL mode Java's own commits fail instead). That is
    Java's defect; here the pool's connections are closed once the catalog has started, which closes those result
    sets, and fresh connections take their place (through reflection on ``ClientPoolImpl.clients``)."""
    jvm = java._jvm
    gateway = java.sparkContext._gateway
    spark_catalog = java._jsparkSession.sessionState().catalogManager().catalog(catalog)
    jdbc = spark_catalog.icebergCatalog()
    field = jdbc.getClass().getDeclaredField("connections")  # (classes of spark.jars: not the app class loader's)
    field.setAccessible(True)
    pool = field.get(jdbc)
    impl = pool.getClass().getSuperclass()  # ClientPoolImpl
    assert impl.getName() == "org.apache.iceberg.ClientPoolImpl", impl.getName()
    clients_field = impl.getDeclaredField("clients")
    clients_field.setAccessible(True)
    clients = clients_field.get(pool)
    new_client = impl.getDeclaredMethod("newClient", gateway.new_array(jvm.java.lang.Class, 0))
    new_client.setAccessible(True)
    for _ in range(clients.size()):
        clients.poll().close()
        clients.add(new_client.invoke(pool, gateway.new_array(jvm.java.lang.Object, 0)))


@pytest.fixture(params=["sqlite", "postgresql"])
def shared(request, java, tmp_path):
    """(Spark catalog name of Java's JdbcCatalog, sparkberg's catalog over the same database and name)."""
    name = f"jdbc_{request.param}_{uuid.uuid4().hex[:6]}"
    warehouse = f"file://{tmp_path}/wh"
    if request.param == "sqlite":
        path = f"{tmp_path}/catalog.db"
        java_uri, ours_uri, props = f"jdbc:sqlite:{path}", f"sqlite:///{path}", {}
    else:
        server = request.getfixturevalue("postgres")
        db = f"shared_{uuid.uuid4().hex[:8]}"
        ours_uri = server.uri(db)
        java_uri = f"jdbc:postgresql://127.0.0.1:{server.port}/{db}"
        props = {"jdbc.user": "postgres", "jdbc.password": "sparkberg-test"}
    assert os.path.exists("/usr/share/java/sqlite-jdbc.jar"), "make interop installs Debian's JDBC drivers"
    keys = {f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog",
            f"spark.sql.catalog.{name}.type": "jdbc", f"spark.sql.catalog.{name}.uri": java_uri,
            f"spark.sql.catalog.{name}.warehouse": warehouse,
            f"spark.sql.catalog.{name}.cache-enabled": "false",  # (each read sees the latest commit)
            f"spark.sql.catalog.{name}.jdbc.schema-version": "V1",  # (Java keeps views only in its V1 schema)
            **{f"spark.sql.catalog.{name}.{k}": v for k, v in props.items()}}
    # sparkberg's catalog first: it creates the catalog tables, which Java's then finds (the case in which
    # Java's start-up checks leave their result sets open)
    ours = sparkberg.catalog(java, ours_uri, warehouse=warehouse, name=name, properties=props)
    for k, v in keys.items():
        java.conf.set(k, v)
    java.sql(f"SHOW NAMESPACES IN {name}").collect()  # (Java's catalog starts)
    if request.param == "sqlite":
        release_sqlite_reads(java, name)
    yield name, ours
    for k in keys:
        java.conf.unset(k)


def java_ids(java, table):
    return sorted(r[0] for r in java.sql(f"SELECT id FROM {table}").collect())


def ids(t):
    return sorted(r[0] for r in t.to_df().select("id").collect())


def test_java_and_sparkberg_share_a_jdbc_catalog_both_ways(java, shared):
    name, ours = shared
    java.sql(f"CREATE NAMESPACE {name}.db")
    java.sql(f"CREATE TABLE {name}.db.from_java (id bigint, p int) USING iceberg PARTITIONED BY (p) "
             "TBLPROPERTIES ('format-version'='2')")
    java.sql(f"INSERT INTO {name}.db.from_java VALUES (1, 0), (2, 1)")
    assert ours.list_namespaces() == [("db",)] and ours.list_tables("db") == ["db.from_java"]
    t = ours.load_table("db.from_java")
    assert ids(t) == [1, 2]
    t.append(java.sql("SELECT 3L AS id, 0 AS p"))
    t.delete("id = 1")
    assert java_ids(java, f"{name}.db.from_java") == [2, 3]
    java.sql(f"INSERT INTO {name}.db.from_java VALUES (4, 1)")
    assert ids(ours.load_table("db.from_java")) == [2, 3, 4]
    # created by sparkberg: listed, read and committed to by Java
    mine = ours.create_table("db.from_sparkberg", "id bigint")
    mine.append(java.sql("SELECT id FROM range(0, 3)"))
    assert "from_sparkberg" in [r[1] for r in java.sql(f"SHOW TABLES IN {name}.db").collect()]
    assert java_ids(java, f"{name}.db.from_sparkberg") == [0, 1, 2]
    java.sql(f"INSERT INTO {name}.db.from_sparkberg VALUES (9)")
    assert ids(ours.load_table("db.from_sparkberg")) == [0, 1, 2, 9]
    ours.rename_table("db.from_sparkberg", "db.renamed")
    assert java_ids(java, f"{name}.db.renamed") == [0, 1, 2, 9]
    java.sql(f"DROP TABLE {name}.db.renamed")
    assert not ours.table_exists("db.renamed")


def test_catalog_keys_set_at_runtime_are_read_on_pyspark_35(java, tmp_path):
    # (issue 90, item 12: PySpark 3.5 has no spark.conf.getAll; the keys spark.conf.set adds are the session's, not
    # the context's start-up conf, and a catalog named by them must open as they say)
    import pyspark
    assert pyspark.__version__.startswith("3.5")
    prefix = "spark.sql.catalog.runtime35"
    keys = {"type": "jdbc", "uri": f"jdbc:sqlite:{tmp_path}/runtime.db", "warehouse": f"file://{tmp_path}/wh",
            "jdbc.password": "not-masked"}
    for k, v in keys.items():
        java.conf.set(f"{prefix}.{k}", v)
    try:
        from sparkberg.catalog.config import conf_properties
        assert conf_properties(java, "runtime35") == keys
        cat = sparkberg.catalog(java, "runtime35")
        assert cat.config["type"] == "jdbc" and cat.warehouse == f"file://{tmp_path}/wh"
        cat.create_namespace("db")
        cat.create_table("db.t", "id bigint").append(java.range(2))
        assert cat.load_table("db.t").to_df().count() == 2
        assert os.path.exists(f"{tmp_path}/runtime.db") and not os.path.exists("runtime35")
    finally:
        for k in keys:
            java.conf.unset(f"{prefix}.{k}")


def test_views_in_one_jdbc_catalog_both_ways(java, shared):
    import gzip
    import json
    import re
    from sparkberg.format import types as T
    from sparkberg.format.views import Representation, ViewMetadata, ViewVersion, new_view
    name, ours = shared
    backend = ours._backend
    java.sql(f"CREATE NAMESPACE {name}.vdb")
    java.sql(f"CREATE TABLE {name}.vdb.t (id bigint, s string) USING iceberg")
    java.sql(f"INSERT INTO {name}.vdb.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    # Java's view: read by sparkberg as Java wrote it
    java.sql(f"CREATE VIEW {name}.vdb.jv (ident COMMENT 'the id', s) COMMENT 'from java' TBLPROPERTIES ('k' = 'v') "
             f"AS SELECT id, s FROM {name}.vdb.t WHERE id > 1")
    assert [str(i) for i in backend.list_views("vdb")] == ["vdb.jv"] and ours.list_tables("vdb") == ["vdb.t"]
    _, location, meta = backend.load_view("vdb.jv")
    assert re.search(r"/metadata/00000-[0-9a-f-]{36}\.gz\.metadata\.json$", location)
    raw = json.loads(gzip.decompress(backend.io.read(location)))
    assert meta.to_json() == raw  # (every field read, and written back as Java wrote it)
    version = meta.current_version
    assert version.sql("spark") == f"SELECT id, s FROM {name}.vdb.t WHERE id > 1"
    assert [(f.name, f.doc) for f in meta.schema().fields] == [("ident", "the id"), ("s", None)]
    assert meta.properties["k"] == "v" and meta.properties["comment"] == "from java"
    # sparkberg's view: queried, listed, replaced and dropped by Java
    schema = T.Schema([T.NestedField(1, "id", T.LONG, False), T.NestedField(2, "s", T.STRING, False)])
    mine = new_view(f"{ours.warehouse}/vdb/mine", schema, ViewVersion(
        0, 1000, 0, {"engine-name": "spark", "engine-version": "4.0.0"},
        (Representation("sql", f"SELECT id, s FROM {name}.vdb.t WHERE id < 3", "spark"),), ("vdb",), name))
    backend.create_view("vdb.mine", mine)
    assert sorted(tuple(r) for r in java.sql(f"SELECT * FROM {name}.vdb.mine").collect()) == [(1, "a"), (2, "b")]
    assert {r[1] for r in java.sql(f"SHOW VIEWS IN {name}.vdb").collect() if not r[2]} == {"jv", "mine"}
    java.sql(f"CREATE OR REPLACE VIEW {name}.vdb.mine AS SELECT id FROM {name}.vdb.t")
    _, _, replaced = backend.load_view("vdb.mine")
    assert replaced.current_version_id == 2 and [e.version_id for e in replaced.version_log] == [1, 2]
    assert [f.name for f in replaced.schema().fields] == ["id"] and replaced.view_uuid == mine.view_uuid
    java.sql(f"DROP VIEW {name}.vdb.mine")
    assert not backend.view_exists("vdb.mine")
    with pytest.raises(Exception, match="a table of that name exists"):
        backend.create_view("vdb.t", mine)
    assert isinstance(meta, ViewMetadata)


def _view_state(meta) -> dict:
    """What a view statement leaves (the view spec's fields; a version's summary without the Iceberg release Java
    names in it, its timestamps aside)."""
    return {
        "current": meta.current_version_id, "log": [e.version_id for e in meta.version_log],
        "schemas": [s.to_json() for s in meta.schemas],
        "versions": [{**v.to_json(), "timestamp-ms": None, "default-catalog": None,
                      "summary": {k: x for k, x in v.summary.items() if k != "iceberg-version"}}
                     for v in meta.versions],
        "properties": meta.properties}


def test_view_statements_leave_what_javas_leave_on_a_twin_catalog(java, tmp_path):
    name = f"jtwin_{uuid.uuid4().hex[:6]}"
    keys = {f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog",
            f"spark.sql.catalog.{name}.type": "jdbc", f"spark.sql.catalog.{name}.uri": f"jdbc:sqlite:{tmp_path}/j.db",
            f"spark.sql.catalog.{name}.warehouse": f"file://{tmp_path}/jwh",
            f"spark.sql.catalog.{name}.jdbc.schema-version": "V1",
            f"spark.sql.catalog.{name}.cache-enabled": "false"}
    ours = sparkberg.catalog(java, f"sqlite:///{tmp_path}/s.db", warehouse=f"file://{tmp_path}/swh", name="stwin")
    theirs = sparkberg.catalog(java, f"sqlite:///{tmp_path}/j.db", warehouse=f"file://{tmp_path}/jwh", name=name)
    for k, v in keys.items():
        java.conf.set(k, v)
    try:
        java.sql(f"SHOW NAMESPACES IN {name}").collect()
        release_sqlite_reads(java, name)
        java.sql(f"CREATE NAMESPACE {name}.db")
        java.sql(f"CREATE TABLE {name}.db.t (id bigint, s string, x struct<a: int, b: string>) USING iceberg")
        java.sql(f"INSERT INTO {name}.db.t VALUES (1, 'a', named_struct('a', 1, 'b', 'p'))")
        ours.create_namespace("db")
        sparkberg.sql(java, "CREATE TABLE db.t (id bigint, s string, x struct<a: int, b: string>) USING iceberg",
                      catalog=ours)
        sparkberg.sql(java, "INSERT INTO db.t VALUES (1, 'a', named_struct('a', 1, 'b', 'p'))", catalog=ours)
        java.sql(f"USE {name}.db")
        statements = [
            "CREATE VIEW db.v (ident COMMENT 'the id', s, x) COMMENT 'all' TBLPROPERTIES ('k' = 'v') "
            "AS SELECT id, s, x FROM db.t",
            # (ALTER VIEW ... AS: Iceberg Java 1.10 refuses it, "use CREATE OR REPLACE VIEW"; sparkberg's makes
            # the same new version, tests/spark/test_views.py)
            "CREATE OR REPLACE VIEW db.v AS SELECT id, x.a AS a FROM db.t",
            "CREATE OR REPLACE VIEW db.v AS SELECT count(*) AS n FROM db.t",
            "ALTER VIEW db.v SET TBLPROPERTIES ('k' = 'w', 'q' = 'r')",
            "ALTER VIEW db.v UNSET TBLPROPERTIES ('q')",
            "CREATE OR REPLACE VIEW db.v AS SELECT id, s, x FROM db.t",
        ]
        for statement in statements:
            java.sql(statement)
            sparkberg.sql(java, statement, catalog=ours)
            mine, javas = ours.load_view("db.v").metadata, theirs.load_view("db.v").metadata
            assert _view_state(mine) == _view_state(javas), statement
        assert [tuple(r) for r in java.sql("SELECT * FROM db.v").collect()] == \
            [tuple(r) for r in sparkberg.sql(java, "SELECT * FROM db.v", catalog=ours).collect()]
    finally:
        java.sql("USE spark_catalog.default")
        for k in keys:
            java.conf.unset(k)
