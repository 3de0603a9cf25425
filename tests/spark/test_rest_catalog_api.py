"""The REST catalog through the API users call: ``sparkberg.catalog`` with a REST endpoint or a catalog configured
by ``spark.sql.catalog.<name>.*`` (``type`` ``rest``, ``uri``, ``token``, ``header.*``), DataFrame writes and
reads, a write that retries after a 409, SQL views whose data source opens the catalog again, and the command
line. The server is tests/restserver.py; every exchange conforms to the REST catalog's OpenAPI document."""
import json
import os
import subprocess
import sys

import pytest

import sparkberg
from sparkberg.catalog.rest import RestCatalogError

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from restserver import RestServer  # noqa: E402


@pytest.fixture
def server(tmp_path):
    srv = RestServer(str(tmp_path / "server"), token="t0ken")
    yield srv
    srv.close()
    assert srv.violations == []


def ids(t):
    return sorted(r[0] for r in t.to_df().select("id").collect())


def test_dataframes_written_and_read_through_a_rest_catalog(spark, server):
    cat = sparkberg.catalog(spark, server.uri, properties={"token": "t0ken"})
    cat.create_namespace("db", {"owner": "etl"})
    t = cat.create_table("db.events", "id bigint, p int", partition_by=["p"], properties={"format-version": "3"})
    t.append(spark.sql("SELECT id, CAST(id % 3 AS int) AS p FROM range(0, 30)"))
    t.delete("id < 10")
    t.update({"p": "p + 10"}, "id >= 25")
    loaded = cat.load_table("db.events")
    assert ids(loaded) == list(range(10, 30)) and loaded.format_version == 3
    assert sorted(r.p for r in loaded.to_df().where("id >= 25").collect()) == [10, 11, 11, 12, 12]
    held = cat.load_table("db.events")  # (its base goes stale: its commit gets a 409 and is retried)
    t.append(spark.sql("SELECT 100L AS id, 1 AS p"))
    held.append(spark.sql("SELECT 101L AS id, 2 AS p"))
    final = cat.load_table("db.events")
    assert ids(final) == list(range(10, 30)) + [100, 101]
    assert [s.operation for s in final.metadata.snapshots][-2:] == ["append", "append"]
    cat.drop_table("db.events", purge=True)
    assert cat.list_tables("db") == []


def test_a_rest_catalog_configured_in_the_spark_conf_and_its_views(spark, server):
    keys = {"spark.sql.catalog.restcat.type": "rest", "spark.sql.catalog.restcat.uri": server.uri,
            "spark.sql.catalog.restcat.token": "t0ken", "spark.sql.catalog.restcat.header.X-Job": "nightly"}
    for k, v in keys.items():
        spark.conf.set(k, v)
    names = []
    try:
        cat = sparkberg.catalog(spark, "restcat")
        cat.create_namespace("db")
        cat.create_table("db.t", "id bigint").append(spark.sql("SELECT id FROM range(0, 5)"))
        assert server.headers_seen[-1].get("X-Job") == "nightly"
        names += cat.register_views(namespace="db")
        assert "t" in names
        assert spark.sql("SELECT count(*) FROM t WHERE id >= 2").first()[0] == 3
        cat.load_table("db.t").append(spark.sql("SELECT 9L AS id"))
        assert spark.sql("SELECT max(id) FROM t").first()[0] == 9  # (the view reads the current snapshot)
    finally:
        for k in keys:
            spark.conf.unset(k)
        for v in names:
            spark.catalog.dropTempView(v)
    with pytest.raises(RestCatalogError, match="127.0.0.1:9"):
        sparkberg.catalog(spark, "http://127.0.0.1:9/catalog")


def test_the_command_line_opens_a_rest_catalog(spark, tmp_path):
    srv = RestServer(str(tmp_path / "server"))
    try:
        cat = sparkberg.catalog(spark, srv.uri)
        cat.create_namespace("db")
        cat.create_table("db.t", "id bigint").append(spark.sql("SELECT id FROM range(0, 4)"))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        out = subprocess.run([sys.executable, "-m", "sparkberg.jobs.cli", "--catalog", srv.uri, "--output", "json",
                              "list", "db"], capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == ["db.t"]
        assert srv.violations == []
    finally:
        srv.close()


def test_each_commit_sends_the_updates_and_requirements_its_change_states(spark, server):
    # (the REST catalog sends what a change states, as Iceberg Java's UpdateTableRequest: its updates and what it
    # requires of the version it was built on; nothing is derived by comparing metadata)
    cat = sparkberg.catalog(spark, server.uri, properties={"token": "t0ken"})
    cat.create_namespace("db")
    t = cat.create_table("db.t", "id bigint", properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    uuid = t.metadata.table_uuid
    sent = []

    def commit(call):
        before = len(server.commits)
        call()
        (body,) = server.commits[before:]
        sent.append(([u["action"] for u in body["updates"]],
                     [{k: v for k, v in r.items() if k != "uuid" or v != uuid} for r in body["requirements"]]))
    commit(lambda: t.append(spark.range(10)))
    first = t.current_snapshot().snapshot_id
    commit(lambda: t.delete("id < 3"))
    commit(lambda: t.set_properties({"owner": "etl"}))
    commit(lambda: t.add_columns("v string"))
    commit(lambda: t.create_branch("audit"))
    with t.transaction() as tx:
        tx.set_properties({"stage": "1"})
        tx.append(spark.range(10, 12).selectExpr("id", "'x' AS v"))
    (body,) = server.commits[-1:]
    uuid_only = {"type": "assert-table-uuid"}
    assert sent == [
        (["add-snapshot", "set-snapshot-ref"], [uuid_only, {"type": "assert-ref-snapshot-id", "ref": "main",
                                                            "snapshot-id": None}]),
        (["add-snapshot", "set-snapshot-ref"], [uuid_only, {"type": "assert-ref-snapshot-id", "ref": "main",
                                                            "snapshot-id": first}]),
        (["set-properties"], [uuid_only]),
        (["add-schema", "set-current-schema"], [uuid_only, {"type": "assert-last-assigned-field-id",
                                                            "last-assigned-field-id": 1},
                                                {"type": "assert-current-schema-id", "current-schema-id": 0}]),
        (["set-snapshot-ref"], [uuid_only, {"type": "assert-ref-snapshot-id", "ref": "audit", "snapshot-id": None}]),
    ]
    # a transaction: its changes' updates in order, and what they require of the version it began on
    assert [u["action"] for u in body["updates"]] == ["set-properties", "add-snapshot", "set-snapshot-ref"]
    head = cat.load_table("db.t").snapshots()[-2].snapshot_id
    assert {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": head} in body["requirements"]
    assert sorted(ids(cat.load_table("db.t"))) == [3, 4, 5, 6, 7, 8, 9, 10, 11]
