"""The Hive catalog against Hive's own metastore server (tests/hiveserver.py, from PySpark's jars, on 127.0.0.1):
namespaces as databases; tables created, loaded, committed, listed, renamed, registered, dropped and purged; the
Hive table's parameters and columns as Iceberg Java's HiveCatalog writes them; commits under the table's
exclusive metastore lock (a commit waits for a lock another client holds, a lock never had within the timeout is a
named error, no lock is left behind); writers of several processes losing nothing; a metastore that does not
answer, and one that wants SASL, named. No Spark: data files are written with pyarrow and appended by the commit
path the DataFrame API uses."""
import os
import socket
import sys
import threading
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sparkberg
from commits import fast_append
from sparkberg.catalog.config import open_backend
from sparkberg.catalog.thrift import I32, I64, LIST, STRING, STRUCT, Connection
from sparkberg.errors import (
    CatalogDatabaseError, CommitFailedException, NamespaceAlreadyExistsError, NamespaceNotEmptyError,
    NoSuchNamespaceError, NoSuchTableError, NotSupportedError, TableAlreadyExistsError,
)
from sparkberg.format import types as T
from sparkberg.format.manifests import DataFile
from sparkberg.planning.reference import reference_plan
from sparkberg.table import Catalog

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from test_catalog_reliability import ARROW, RETRIES, run_writers  # noqa: E402

SCHEMA = T.Schema([T.NestedField(1, "id", T.LONG, True, doc="the key"),
                   T.NestedField(2, "tags", T.ListType(3, T.STRING, False), False),
                   T.NestedField(4, "amount", T.DecimalType(10, 2), False),
                   T.NestedField(5, "at", T.TIMESTAMPTZ, False)])


def _catalog(uri: str, warehouse: str, **props) -> Catalog:
    backend, description, config = open_backend(None, uri, warehouse, properties=props)
    return Catalog(None, backend, description, config)


def _same(a: str, b: str) -> bool:
    """Whether two locations name one place (``file:/x`` and ``file:///x`` alike)."""
    return a.replace("file:///", "file:/") == b.replace("file:///", "file:/")


def _data_file(table, ids: list[int]) -> DataFile:
    path = f"{table.metadata.location}/data/{uuid.uuid4()}.parquet"
    with table.io.open_output(path) as f:
        pq.write_table(pa.table([pa.array(ids, pa.int64())], schema=ARROW), f)
    return DataFile(path, "parquet", {}, len(ids), table.io.size(path))


def _rows(table) -> list[int]:
    plan = reference_plan(table.metadata, table.io, table.current_snapshot())
    return sorted(i for path in plan for i in pq.read_table(table.io.open_input(path)).column("id").to_pylist())


def _hive_table(uri: str, db: str, name: str) -> dict:
    host, port = uri[len("thrift://"):].split(":")
    return Connection(host, int(port), 30).call("get_table", [(1, STRING, db), (2, STRING, name)])[0]


def _lock(uri: str, db: str, name: str) -> tuple[Connection, int, int]:
    """Another client's exclusive lock on the table, as Iceberg Java's HiveCatalog takes it: (its connection, its
    lock id, its state)."""
    host, port = uri[len("thrift://"):].split(":")
    conn = Connection(host, int(port), 30)
    component = [(1, I32, 3), (2, I32, 2), (3, STRING, db), (4, STRING, name), (6, I32, 6)]
    response = conn.call("lock", [(1, STRUCT, [(1, LIST, (STRUCT, [component])), (3, STRING, "other"),
                                               (4, STRING, socket.gethostname())])])[0]
    return conn, response[1], response[2]


def _unlock(conn: Connection, lock_id: int) -> None:
    conn.call("unlock", [(1, STRUCT, [(1, I64, lock_id)])])


def test_namespaces_tables_and_commits_in_a_hive_metastore(hive_metastore, tmp_path):
    uri, wh = hive_metastore.uri, f"file://{tmp_path}/wh"
    cat = _catalog(uri, wh)
    cat.create_namespace("db", {"owner": "etl"})
    with pytest.raises(NamespaceAlreadyExistsError):
        cat.create_namespace("db")
    assert ("db",) in cat.list_namespaces() and cat.load_namespace_properties("db")["owner"] == "etl"
    cat.update_namespace_properties("db", {"team": "data"}, ["owner"])
    props = cat.load_namespace_properties("db")
    # (the metastore keeps a location as Hadoop writes a path: file:/tmp/..., not file:///tmp/...)
    assert props["team"] == "data" and "owner" not in props and _same(props["location"], f"{wh}/db.db")
    t = cat.create_table("db.t", SCHEMA, properties=RETRIES)
    assert _same(t.location, f"{wh}/db.db/t") and "/metadata/00000-" in t.metadata_location
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table("db.t", SCHEMA)
    fast_append(t, [_data_file(t, [1, 2])])
    t = cat.load_table("db.t")
    fast_append(t, [_data_file(t, [3])])
    t = cat.load_table("db.t")
    assert _rows(t) == [1, 2, 3] and "/metadata/00002-" in t.metadata_location
    # the Hive table as Iceberg Java's HiveCatalog writes it
    hive = _hive_table(uri, "db", "t")
    params = hive[9]
    assert params["table_type"] == "ICEBERG" and params["metadata_location"] == t.metadata_location
    assert "/metadata/00001-" in params["previous_metadata_location"] and params["EXTERNAL"] == "TRUE"
    assert hive[12] == "EXTERNAL_TABLE" and hive[7][2] == t.location
    assert [(c[1], c[2], c.get(3)) for c in hive[7][1]] == [
        ("id", "bigint", "the key"), ("tags", "array<string>", None), ("amount", "decimal(10,2)", None),
        ("at", "timestamp", None)]
    assert cat.list_tables("db") == ["db.t"] and cat.table_exists("db.t") and not cat.table_exists("db.x")
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("db")
    cat.rename_table("db.t", "db.u")
    assert cat.list_tables("db") == ["db.u"] and _rows(cat.load_table("db.u")) == [1, 2, 3]
    with pytest.raises(NoSuchTableError):
        cat.load_table("db.t")
    again = cat.register_table("db.again", t.metadata_location)
    assert _rows(again) == [1, 2, 3]
    cat.drop_table("db.again")
    data = [p for p, _ in t.io.list_files(f"{t.location}/data")]
    cat.drop_table("db.u", purge=True)
    assert data and not any(t.io.exists(p) for p in data) and not t.io.exists(t.metadata_location)
    cat.drop_namespace("db")
    with pytest.raises(NoSuchNamespaceError):
        cat.create_table("db.t", SCHEMA)


def test_a_commit_waits_for_the_table_s_lock_and_never_holds_one_after(hive_metastore, tmp_path):
    uri = hive_metastore.uri
    cat = _catalog(uri, f"file://{tmp_path}/wh", **{"iceberg.hive.lock-timeout-ms": "1500"})
    cat.create_namespace("locks")
    t = cat.create_table("locks.t", SCHEMA, properties={**RETRIES, "commit.retry.num-retries": "0"})
    conn, held, state = _lock(uri, "locks", "t")
    assert state == 1
    # (a lock another client holds past the timeout: the commit is a named error, and changes nothing)
    start = time.monotonic()
    with pytest.raises(CommitFailedException, match="could not lock table locks.t"):
        fast_append(t, [_data_file(t, [1])])
    assert 1.4 < time.monotonic() - start < 15 and cat.load_table("locks.t").snapshots() == []
    # (released while the commit waits: it goes through)
    threading.Timer(0.5, _unlock, (conn, held)).start()
    fast_append(cat.load_table("locks.t"), [_data_file(t, [2])])
    assert _rows(cat.load_table("locks.t")) == [2]
    # (no lock of sparkberg's is left: another client's is granted at once)
    conn, again, state = _lock(uri, "locks", "t")
    assert state == 1
    _unlock(conn, again)


def _appender(uri: str, warehouse: str, k: int, n: int, tmp: str) -> None:
    backend, description, config = open_backend(None, uri, warehouse)
    table = Catalog(None, backend, description, config).load_table("db.t")
    for i in range(n):
        fast_append(table, [_data_file(table, [1000 * k + i])])


def test_writer_processes_lose_nothing_through_a_hive_metastore(hive_metastore, tmp_path, report):
    uri, wh = hive_metastore.uri, f"file://{tmp_path}/wh"
    cat = _catalog(uri, wh)
    cat.create_namespace("db")
    cat.create_table("db.t", SCHEMA, properties=RETRIES)
    seconds = run_writers(_appender, [(uri, wh, k, 5, str(tmp_path)) for k in range(3)])
    table = cat.load_table("db.t")
    snapshots = table.snapshots()
    assert len(snapshots) == 15 and len({s.parent_snapshot_id for s in snapshots}) == 15
    assert _rows(table) == sorted(1000 * k + i for k in range(3) for i in range(5))
    report(f"Hive catalog (Hive 2.3 metastore, table locks): 3 processes x 5 appends -> 15 snapshots, linear, "
           f"{seconds:.1f} s")


def test_a_metastore_that_does_not_answer_or_wants_sasl_is_named(hive_metastore):
    start = time.monotonic()
    with pytest.raises(CatalogDatabaseError, match="no metastore answers at thrift://127.0.0.1:9"):
        sparkberg.catalog(None, "thrift://127.0.0.1:9", warehouse="file:///tmp/x").list_namespaces()
    assert time.monotonic() - start < 30
    with pytest.raises(NotSupportedError, match="SASL"):
        sparkberg.catalog(None, hive_metastore.uri, warehouse="file:///tmp/x",
                          properties={"hive.metastore.sasl.enabled": "true"})


def test_views_in_a_hive_metastore_as_java_keeps_them(hive_metastore, tmp_path):
    import re
    from sparkberg.catalog.thrift import STRING
    from sparkberg.errors import NoSuchViewError, ViewAlreadyExistsError
    from sparkberg.format.views import Representation, ViewVersion, new_view, replaced, with_properties
    cat = _catalog(hive_metastore.uri, f"file://{tmp_path}/wh")
    backend = cat._backend
    cat.create_namespace("hv")
    cat.create_table("hv.t", SCHEMA)
    schema = T.Schema([T.NestedField(0, "id", T.LONG, False, "the key")])

    def version(sql: str, ts: int) -> ViewVersion:
        return ViewVersion(0, ts, 0, {"engine-name": "spark"}, (Representation("sql", sql, "spark"),), ("hv",))
    meta = new_view(f"file://{tmp_path}/wh/hv.db/v", schema, version("SELECT id FROM hv.t", 1000), {"k": "v"})
    _, location, _ = backend.create_view("hv.v", meta)
    assert re.search(r"/metadata/00000-[0-9a-f-]{36}\.gz\.metadata\.json$", location)
    hive = backend._call("get_table", [(1, STRING, "hv"), (2, STRING, "v")])
    params = hive[9]
    assert (hive[12], params["table_type"], params["metadata_location"], params["uuid"], params["k"]) == \
        ("VIRTUAL_VIEW", "ICEBERG-VIEW", location, meta.view_uuid, "v")
    assert [(c[1], c[2], c[3]) for c in hive[7][1]] == [("id", "bigint", "the key")]
    assert [str(i) for i in backend.list_views("hv")] == ["hv.v"] and cat.list_tables("hv") == ["hv.t"]
    assert backend.view_exists("hv.v") and not cat.table_exists("hv.v") and not backend.view_exists("hv.t")
    with pytest.raises(ViewAlreadyExistsError, match="a table of that name exists"):
        backend.create_view("hv.t", meta)
    # a new version and a removed property, under the view's lock; a commit on a stale base refused
    _, base, current = backend.load_view("hv.v")
    newer = with_properties(replaced(current, version("SELECT id + 1 AS id FROM hv.t", 2000), schema), {}, {"k"})
    new_location, _ = backend.commit_view("hv.v", base, newer)
    params = backend._call("get_table", [(1, STRING, "hv"), (2, STRING, "v")])[9]
    assert params["metadata_location"] == new_location and params["previous_metadata_location"] == base
    assert "k" not in params and backend.load_view("hv.v")[2].current_version_id == 2
    with pytest.raises(CommitFailedException):
        backend.commit_view("hv.v", base, newer)
    backend.rename_view("hv.v", "hv.w")
    assert [str(i) for i in backend.list_views("hv")] == ["hv.w"]
    backend.drop_view("hv.w")
    with pytest.raises(NoSuchViewError):
        backend.load_view("hv.w")
    assert cat.list_tables("hv") == ["hv.t"]
