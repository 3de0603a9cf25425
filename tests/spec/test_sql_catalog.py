"""The SQL catalog without Spark, on SQLite (the standard library's driver): Iceberg Java's JdbcCatalog layout,
namespaces with properties, tables created, committed (compare-and-swap), renamed, registered and dropped,
racing writers (threads and processes), bad input, and the file-system catalog's refusal to commit where its
store cannot create a file atomically."""
import json
import multiprocessing
import os
import re
import sqlite3
import threading

import pytest

from sparkberg.catalog.filesystem import FileSystemCatalog
from sparkberg.catalog.sql import CatalogDatabaseError, SqlCatalog, database_for, sqlite_database
from sparkberg.errors import (
    CommitFailedException, InvalidIdentifierError, NamespaceAlreadyExistsError, NamespaceNotEmptyError,
    NoSuchNamespaceError, NoSuchTableError, NotSupportedError, TableAlreadyExistsError, ValidationError,
)
from sparkberg.io.fileio import LocalFileIO
from sparkberg.format import types as T
from sparkberg.format import updates as U
from commits import pending

SCHEMA = T.Schema([T.NestedField(1, "id", T.LONG, True)])


@pytest.fixture
def db_path(tmp_path):
    return str(tmp_path / "catalog.db")


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, db_path):
    """A fresh catalog database: a SQLite file, or a database of the tests' PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{db_path}"
    import uuid
    return request.getfixturevalue("postgres").uri(f"db_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def cat(tmp_path, database):
    return SqlCatalog("prod", database_for(database, {}), "file://" + str(tmp_path / "wh"))


def rows(database, sql, params=()):
    """The rows of a query on the catalog's database, through its own driver."""
    if database.startswith("sqlite"):
        with sqlite3.connect(database[len("sqlite:///"):]) as conn:
            return conn.execute(sql, params).fetchall()
    import psycopg
    with psycopg.connect(database) as conn:
        return [tuple(r) for r in conn.execute(sql.replace("?", "%s"), params).fetchall()]


def columns(database, table):
    if database.startswith("sqlite"):
        return [r[1] for r in rows(database, f"PRAGMA table_info({table})")]
    return [r[0] for r in rows(database, "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                                         "ORDER BY ordinal_position", (table,))]


def make(cat, ident="db.t", version=2, location=None):
    loc = location or cat.default_table_location(ident)
    return cat.create(ident, U.new_table_metadata(SCHEMA, loc, format_version=version))


def commit_property(cat, ident, key, value):
    """One commit on top of the table's current version."""
    _, loc, meta = cat.load(ident)
    return cat.commit(ident, loc, pending(meta, U.apply_all([U.SetProperties({key: value})], meta)))


def test_the_database_has_iceberg_javas_jdbc_catalog_layout(cat, database, tmp_path):
    assert columns(database, "iceberg_tables") == ["catalog_name", "table_namespace", "table_name",
                                                   "metadata_location", "previous_metadata_location", "iceberg_type"]
    assert columns(database, "iceberg_namespace_properties") == [
        "catalog_name", "namespace", "property_key", "property_value"]
    cat.create_namespace("a.b")
    ident, first, _ = make(cat, "a.b.t")
    assert first.startswith("file://" + str(tmp_path / "wh" / "a" / "b" / "t" / "metadata" / "00000-"))
    assert first.endswith(".metadata.json")
    assert rows(database, "SELECT * FROM iceberg_tables") == [("prod", "a.b", "t", first, None, "TABLE")]
    assert rows(database, "SELECT * FROM iceberg_namespace_properties") == [("prod", "a.b", "exists", "true")]
    second, _ = commit_property(cat, "a.b.t", "k", "v")
    assert os.path.basename(second).startswith("00001-")
    assert rows(database, "SELECT metadata_location, previous_metadata_location FROM iceberg_tables") == [
        (second, first)]
    log = json.loads(open(second[len("file://"):]).read())["metadata-log"]
    assert [e["metadata-file"] for e in log] == [first]


def test_namespaces_with_properties(cat):
    cat.create_namespace("ns", {"owner": "me", "comment": "x"})
    assert cat.namespace_exists("ns") and not cat.namespace_exists("n")
    with pytest.raises(NamespaceAlreadyExistsError):
        cat.create_namespace("ns")
    assert cat.load_namespace_properties("ns") == {"owner": "me", "comment": "x", "exists": "true"}  # (as Java)
    cat.update_namespace_properties("ns", {"owner": "you", "new": "1"}, ["comment"])
    assert cat.load_namespace_properties("ns") == {"owner": "you", "new": "1", "exists": "true"}
    with pytest.raises(ValidationError, match="both set and removed"):
        cat.update_namespace_properties("ns", {"a": "1"}, ["a"])
    cat.create_namespace("ns.child")
    assert cat.list_namespaces() == [("ns",)] and cat.list_namespaces("ns") == [("ns", "child")]
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("ns")
    cat.drop_namespace("ns.child")
    make(cat, "ns.t")
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("ns")
    cat.drop("ns.t")
    cat.drop_namespace("ns")
    assert not cat.namespace_exists("ns")
    with pytest.raises(NoSuchNamespaceError):
        cat.load_namespace_properties("ns")
    with pytest.raises(NoSuchNamespaceError):
        cat.list_tables("ns")


def test_namespace_names_with_like_characters_are_matched_exactly(cat):
    cat.create_namespace("a_b")
    assert not cat.namespace_exists("axb") and cat.namespace_exists("a_b")
    cat.create_namespace("p%q")
    assert not cat.namespace_exists("p") and cat.namespace_exists("p%q")


def test_tables_are_created_loaded_listed_renamed_and_dropped(cat, tmp_path):
    cat.create_namespace("db")
    cat.create_namespace("other")
    make(cat, "db.t")
    with pytest.raises(TableAlreadyExistsError):
        make(cat, "db.t")
    assert [str(i) for i in cat.list_tables("db")] == ["db.t"] and cat.table_exists("db.t")
    custom = "file://" + str(tmp_path / "elsewhere" / "u")
    _, loc, meta = make(cat, "db.u", location=custom)
    assert loc.startswith(custom + "/metadata/") and meta.location == custom
    cat.rename("db.u", "other.v")
    assert not cat.table_exists("db.u") and cat.load("other.v")[1] == loc
    with pytest.raises(TableAlreadyExistsError):
        cat.rename("db.t", "other.v")
    with pytest.raises(NoSuchNamespaceError):
        cat.rename("db.t", "nope.t")
    with pytest.raises(NoSuchTableError):
        cat.rename("db.missing", "other.w")
    cat.drop("other.v", purge=True)
    assert not os.path.exists(loc[len("file://"):])
    cat.drop("db.t")
    with pytest.raises(NoSuchTableError):
        cat.load("db.t")
    with pytest.raises(NoSuchTableError):
        cat.drop("db.t")


def test_register_a_table_written_elsewhere(cat, tmp_path):
    other = FileSystemCatalog("file://" + str(tmp_path / "hadoop"))
    _, loc, meta = other.create("db.t", U.new_table_metadata(SCHEMA, other.default_table_location("db.t")))
    cat.create_namespace("db")
    ident, got, registered = cat.register("db.r", loc)
    assert got == loc and registered.table_uuid == meta.table_uuid
    second, _ = commit_property(cat, "db.r", "k", "v")
    assert cat.load("db.r")[1] == second and os.path.basename(second).startswith("00000-")
    with pytest.raises(TableAlreadyExistsError):
        cat.register("db.r", loc)
    with pytest.raises(NoSuchTableError, match="does not exist"):
        cat.register("db.s", loc + ".missing")


def test_a_stale_commit_fails_and_leaves_no_file(cat, tmp_path):
    make(cat, "db.t")
    _, base_loc, base = cat.load("db.t")
    commit_property(cat, "db.t", "winner", "1")
    before = sorted(os.listdir(tmp_path / "wh" / "db" / "t" / "metadata"))
    with pytest.raises(CommitFailedException, match="changed"):
        cat.commit("db.t", base_loc, pending(base, U.apply_all([U.SetProperties({"loser": "1"})], base)))
    assert sorted(os.listdir(tmp_path / "wh" / "db" / "t" / "metadata")) == before
    assert "loser" not in cat.load("db.t")[2].properties


def test_racing_threads_one_commit_each(cat):
    make(cat, "db.t")
    results = []

    def writer(k):
        try:
            commit_property(cat, "db.t", f"k{k}", "v")
            results.append("ok")
        except CommitFailedException:
            results.append("lost")
    threads = [threading.Thread(target=writer, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = results.count("ok")
    meta = cat.load("db.t")[2]
    assert won >= 1 and won + results.count("lost") == 8
    assert sum(1 for k in meta.properties if k.startswith("k")) == won  # (the winners', none lost)


def _process_writer(database, warehouse, k, n):
    cat = SqlCatalog("prod", database_for(database, {}), warehouse)
    for i in range(n):
        while True:  # (what a table's retry loop does)
            try:
                commit_property(cat, "db.t", f"w{k}-{i}", "v")
                break
            except CommitFailedException:
                continue


def test_writer_processes_lose_no_commit(cat, database, tmp_path):
    # 4 processes x 10 commits on one table through one database: 40 commits, a linear log
    make(cat, "db.t")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_process_writer, args=(database, cat.warehouse, k, 10)) for k in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 4
    _, loc, meta = cat.load("db.t")
    assert sum(1 for k in meta.properties if re.fullmatch(r"w\d+-\d+", k)) == 40  # (the writers' keys)
    assert os.path.basename(loc).startswith("00040-") and len(meta.metadata_log) == 40


def test_bad_input_is_named_and_changes_nothing(cat, tmp_path, db_path, database):
    for ident in ("t", "db..t", "../t", "db.t/..", "db.t\x00"):
        with pytest.raises(InvalidIdentifierError):
            make(cat, ident)
    # SQL in identifiers is data (every statement is parameterized)
    tricky = "db.x'); DROP TABLE iceberg_tables; --"
    make(cat, tricky)
    assert cat.table_exists(tricky) and rows(database, "SELECT count(*) FROM iceberg_tables") == [(1,)]
    with pytest.raises(CatalogDatabaseError, match="cannot open the catalog database"):
        SqlCatalog("prod", sqlite_database(str(tmp_path / "no-such-dir" / "c.db")), cat.warehouse)
    # a row pointing at a missing metadata file: named, and loading changes nothing
    make(cat, "db.gone")
    os.remove(cat.load("db.gone")[1][len("file://"):])
    with pytest.raises(NoSuchTableError, match="metadata file does not exist"):
        cat.load("db.gone")
    with pytest.raises(ValidationError, match="names no database file"):
        database_for("sqlite://", {})
    # (a catalog opened without a warehouse reads its tables; a new table names what it lacks: issue 90, item 18)
    with pytest.raises(ValidationError, match="without a warehouse, where new tables go"):
        SqlCatalog("prod", sqlite_database(db_path), "").default_table_location("db.new")


def test_catalogs_of_other_names_share_the_database_apart(cat, database, tmp_path):
    make(cat, "db.t")
    other = SqlCatalog("test", database_for(database, {}), cat.warehouse + "2")
    assert not other.table_exists("db.t") and other.list_namespaces() == []
    make(other, "db.t")
    assert cat.load("db.t")[1] != other.load("db.t")[1]


def test_uris_of_sqlite_databases(tmp_path):
    path = str(tmp_path / "c.db")
    for uri in (f"sqlite:///{path}", f"jdbc:sqlite:{path}", f"jdbc:sqlite:file:{path}"):
        db = database_for(uri, {})
        SqlCatalog("x", db, "file:///tmp/wh")
        assert db.description == f"sqlite:{path}"
    relative = database_for("sqlite:///rel/c.db", {})
    assert relative.description == "sqlite:rel/c.db"


def test_the_file_system_catalog_commits_only_where_creation_is_atomic(tmp_path):
    local = FileSystemCatalog("file://" + str(tmp_path / "wh"))
    assert local.io.atomic_create_at(local.warehouse)
    make(local, "db.t")

    class CheckThenWrite(LocalFileIO):
        atomic_create = False  # (as object stores through pyarrow: a check, then a write)
    store = FileSystemCatalog("file://" + str(tmp_path / "wh"), CheckThenWrite())
    _, loc, meta = store.load("db.t")  # reading works
    with pytest.raises(NotSupportedError, match="no atomic create-if-absent.*SQL catalog"):
        store.commit("db.t", loc, pending(meta, U.apply_all([U.SetProperties({"k": "v"})], meta)))
    with pytest.raises(NotSupportedError):
        make(store, "db.u")
    assert sorted(os.listdir(tmp_path / "wh" / "db" / "t" / "metadata")) == ["v1.metadata.json",
                                                                            "version-hint.text"]


def test_unreachable_postgresql_and_wrong_credentials_are_named(postgres):
    good = postgres.uri("creds")
    with pytest.raises(CatalogDatabaseError, match="cannot open the catalog database postgresql:.*password"):
        SqlCatalog("prod", database_for(good.replace(":sparkberg-test@", ":wrong@"), {}), "file:///tmp/wh")
    assert "wrong" not in str(database_for(good.replace(":sparkberg-test@", ":wrong@"), {}).description)
    with pytest.raises(CatalogDatabaseError, match="cannot open the catalog database"):
        SqlCatalog("prod", database_for("postgresql://postgres@127.0.0.1:1/none", {}), "file:///tmp/wh")
    # jdbc: URIs take the user and password from jdbc.user / jdbc.password, as Java's JdbcCatalog
    jdbc = f"jdbc:postgresql://127.0.0.1:{postgres.port}/creds"
    SqlCatalog("prod", database_for(jdbc, {"jdbc.user": "postgres", "jdbc.password": "sparkberg-test"}),
               "file:///tmp/wh").list_namespaces()


def test_an_error_after_the_swap_was_sent_is_told_apart(cat, tmp_path, monkeypatch):
    # the database applied the swap but its answer was lost: the commit landed (the row says so); the answer lost
    # and the database unreachable: the outcome is unknown, and the new metadata file is kept
    from sparkberg.catalog import sql
    from sparkberg.errors import CommitStateUnknownException
    make(cat, "db.t")
    real = sql.Database.execute

    def applied_then_lost(self, statement, params=()):
        real(self, statement, params)
        raise CatalogDatabaseError("connection lost")
    monkeypatch.setattr(sql.Database, "execute", applied_then_lost)
    location, _ = commit_property(cat, "db.t", "a", "1")
    monkeypatch.setattr(sql.Database, "execute", real)
    assert cat.load("db.t")[1] == location
    _, base_loc, base = cat.load("db.t")

    def lost(self, statement, params=()):
        raise CatalogDatabaseError("connection lost")
    monkeypatch.setattr(sql.Database, "execute", lost)
    monkeypatch.setattr(sql.Database, "query", lost)
    with pytest.raises(CommitStateUnknownException, match="kept") as e:
        cat.commit("db.t", base_loc, pending(base, U.apply_all([U.SetProperties({"b": "1"})], base)))
    kept = str(e.value).split("metadata file ")[1].split(" is kept")[0]
    assert os.path.exists(kept[len("file://"):])


def _view_version(sql: str, ts: int):
    from sparkberg.format.views import Representation, ViewVersion
    return ViewVersion(0, ts, 0, {"engine-name": "spark"}, (Representation("sql", sql, "spark"),), ("db",))


def test_views_are_rows_of_type_view_beside_tables(cat, database, tmp_path):
    from sparkberg.errors import NoSuchViewError, ViewAlreadyExistsError
    from sparkberg.format.views import new_view, replaced
    cat.create_namespace("db")
    make(cat, "db.t")
    first = new_view(f"file://{tmp_path}/wh/db/v", SCHEMA, _view_version("SELECT id FROM db.t", 1000))
    ident, location, _ = cat.create_view("db.v", first)
    assert re.search(r"/db/v/metadata/00000-[0-9a-f-]{36}\.gz\.metadata\.json$", location)
    assert rows(database, "SELECT table_name, iceberg_type FROM iceberg_tables ORDER BY table_name") == \
        [("t", "TABLE"), ("v", "VIEW")]
    assert [str(i) for i in cat.list_views("db")] == ["db.v"] and [str(i) for i in cat.list_tables("db")] == ["db.t"]
    assert cat.view_exists("db.v") and not cat.table_exists("db.v") and not cat.view_exists("db.t")
    # a view and a table never share a name
    with pytest.raises(ViewAlreadyExistsError, match="a table of that name exists"):
        cat.create_view("db.t", first)
    with pytest.raises(ViewAlreadyExistsError, match="a view of that name exists"):
        cat.create_view("db.v", first)
    with pytest.raises(TableAlreadyExistsError, match="a view of that name exists"):
        make(cat, "db.v")
    # a new version: a compare-and-swap on the row, as a table's commit
    _, base, meta = cat.load_view("db.v")
    new_location, _ = cat.commit_view("db.v", base, replaced(meta, _view_version("SELECT 1 AS id", 2000), SCHEMA))
    assert "/00001-" in new_location and cat.load_view("db.v")[2].current_version_id == 2
    with pytest.raises(CommitFailedException, match="changed"):
        cat.commit_view("db.v", base, replaced(meta, _view_version("SELECT 2 AS id", 3000), SCHEMA))
    cat.rename_view("db.v", "db.w")
    assert [str(i) for i in cat.list_views("db")] == ["db.w"]
    with pytest.raises(ViewAlreadyExistsError, match="a table of that name exists"):
        cat.rename_view("db.w", "db.t")
    cat.drop_view("db.w")
    assert cat.list_views("db") == [] and not os.path.exists(new_location.replace("file://", ""))
    with pytest.raises(NoSuchViewError):
        cat.drop_view("db.w")
    with pytest.raises(NoSuchViewError):
        cat.load_view("db.t")  # (a table is no view)
    assert [str(i) for i in cat.list_tables("db")] == ["db.t"]
