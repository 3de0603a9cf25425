"""The Iceberg REST catalog client against a server the tests start (tests/restserver.py, over a SQL catalog):
namespaces, tables, commits with requirements and updates, bearer tokens and OAuth2 client credentials,
paging, a prefix, errors mapped to sparkberg's exceptions, 409s retried, 5xx on commit reported as
commit-state-unknown with the writer's files kept, and writer processes that lose no commit. Every request and
response is checked against the REST catalog's OpenAPI document. No Spark: data files are written with pyarrow
and committed by the commit path the DataFrame API uses."""
import os
import sys
import time

import pytest

from sparkberg.catalog.rest import NotAuthorizedError, RestCatalog, RestCatalogError
from sparkberg.operations.request import MAIN_REQUEST
from commits import fast_append
from sparkberg.commit.pending import stated
from sparkberg.errors import (
    CommitStateUnknownException, InvalidIdentifierError, NamespaceAlreadyExistsError, NamespaceNotEmptyError,
    NoSuchNamespaceError, NoSuchTableError, NotSupportedError, TableAlreadyExistsError, TableUUIDMismatchError,
)
from sparkberg.format import updates as U
from sparkberg.table import Catalog

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from restserver import RestServer  # noqa: E402
from test_catalog_reliability import RETRIES, SCHEMA, _data_file, _rows, run_writers  # noqa: E402  (no Spark)


@pytest.fixture
def server(tmp_path):
    srv = RestServer(str(tmp_path / "server"))
    yield srv
    srv.close()
    assert srv.violations == []


def catalog(server: RestServer, **properties) -> Catalog:
    return Catalog(None, RestCatalog(server.uri, "rest", None, properties), server.uri)


def _new_table(cat: Catalog, name: str = "db.t", **properties):
    if not cat.namespace_exists("db"):
        cat.create_namespace("db")
    return cat.create_table(name, SCHEMA, properties={**RETRIES, **properties})


def test_namespaces_with_properties(server):
    cat = catalog(server)
    cat.create_namespace("db", {"owner": "etl"})
    cat.create_namespace(("db", "inner"))
    cat.create_namespace("other")
    assert cat.list_namespaces() == [("db",), ("other",)] and cat.list_namespaces("db") == [("db", "inner")]
    assert cat.load_namespace_properties("db")["owner"] == "etl"
    cat.update_namespace_properties("db", {"team": "a"}, ["owner"])
    props = cat.load_namespace_properties("db")
    assert props["team"] == "a" and "owner" not in props
    with pytest.raises(NamespaceAlreadyExistsError):
        cat.create_namespace("db")
    with pytest.raises(NoSuchNamespaceError):
        cat.load_namespace_properties("missing")
    assert not cat.namespace_exists("missing") and cat.namespace_exists(("db", "inner"))
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("db")
    cat.drop_namespace(("db", "inner"))
    cat.drop_namespace("other")
    assert cat.list_namespaces() == [("db",)]
    with pytest.raises(NoSuchNamespaceError):
        cat.drop_namespace("other")


def test_tables_are_created_loaded_committed_renamed_registered_and_dropped(server, tmp_path):
    cat = catalog(server)
    t = _new_table(cat)
    assert t.metadata_location.startswith(server.warehouse + "/db/t/metadata/00000-")
    fast_append(t, [_data_file(t, [1, 2])], MAIN_REQUEST)
    t.set_properties(owner="etl")
    loaded = cat.load_table("db.t")
    assert _rows(loaded) == [1, 2] and loaded.properties["owner"] == "etl"
    assert loaded.metadata_location == t.metadata_location and "/00002-" in loaded.metadata_location
    assert cat.list_tables("db") == ["db.t"] and cat.table_exists("db.t") and not cat.table_exists("db.x")
    with pytest.raises(TableAlreadyExistsError):
        _new_table(cat)
    elsewhere = cat.create_table("db.placed", SCHEMA, location=f"file://{tmp_path}/placed")
    assert elsewhere.location == f"file://{tmp_path}/placed"
    cat.rename_table("db.t", "db.renamed")
    assert sorted(cat.list_tables("db")) == ["db.placed", "db.renamed"]
    with pytest.raises(NoSuchTableError):
        cat.load_table("db.t")
    again = cat.register_table("db.again", loaded.metadata_location)
    assert _rows(again) == [1, 2]
    cat.drop_table("db.again")
    data = [e for e in os.listdir(f"{server.warehouse[len('file://'):]}/db/t/data")]
    assert data  # (a drop without purge keeps the files: the renamed table still uses them)
    cat.drop_table("db.renamed", purge=True)
    assert not os.path.exists(f"{server.warehouse[len('file://'):]}/db/t/data/{data[0]}")
    with pytest.raises(NoSuchTableError):
        cat.drop_table("db.renamed")
    with pytest.raises(NoSuchNamespaceError):
        cat.create_table("nowhere.t", SCHEMA)


def test_a_commit_sends_updates_and_requirements_the_server_checks(server):
    cat = catalog(server)
    t = _new_table(cat)
    fast_append(t, [_data_file(t, [1])], MAIN_REQUEST)
    posted = [r for r in server.requests if r == "POST /v1/namespaces/db/tables/t"]
    assert len(posted) == 1
    # a stale commit the table cannot retry: its ref moved, and its requirement says so
    stale = cat.load_table("db.t")
    fast_append(t, [_data_file(t, [2])], MAIN_REQUEST)
    stale_meta = stale.metadata
    assert stated(stale_meta, [U.SetProperties({"k": "v"})]) == (U.AssertTableUUID(stale_meta.table_uuid),)
    snap_updates = [U.SetSnapshotRef("audit", t.current_snapshot().snapshot_id)]
    assert stated(t.metadata, snap_updates) == (U.AssertTableUUID(t.metadata.table_uuid),
                                                U.AssertRefSnapshotId("audit", None))


def test_writers_holding_the_same_table_get_a_409_refresh_and_retry(server):
    cat = catalog(server)
    _new_table(cat)
    a, b = cat.load_table("db.t"), cat.load_table("db.t")
    fast_append(a, [_data_file(a, [1])], MAIN_REQUEST)
    fast_append(b, [_data_file(b, [2])], MAIN_REQUEST)  # (409: its base is stale; refreshed and sent again)
    t = cat.load_table("db.t")
    assert _rows(t) == [1, 2]
    snaps = t.metadata.snapshots
    assert [s.parent_snapshot_id for s in snaps] == [None, snaps[0].snapshot_id]
    server.faults.append((409, False))
    fast_append(t, [_data_file(t, [3])], MAIN_REQUEST)
    assert _rows(cat.load_table("db.t")) == [1, 2, 3]


@pytest.mark.parametrize("status,applied", [(500, False), (503, False), (502, True), (504, True)])
def test_a_5xx_on_commit_is_commit_state_unknown_and_keeps_the_files(server, status, applied):
    cat = catalog(server)
    t = _new_table(cat)
    fast_append(t, [_data_file(t, [1])], MAIN_REQUEST)
    server.faults.append((status, applied))
    data_file = _data_file(t, [2])
    before = set(_files(server))
    with pytest.raises(CommitStateUnknownException, match=str(status)):
        fast_append(t, [data_file], MAIN_REQUEST)
    kept = set(_files(server)) - before
    assert any(f.endswith(".avro") for f in kept)  # (the manifest and manifest list were not deleted)
    fresh = cat.load_table("db.t")
    assert _rows(fresh) == ([1, 2] if applied else [1])
    fast_append(fresh, [_data_file(fresh, [3])], MAIN_REQUEST)
    assert _rows(cat.load_table("db.t")) == ([1, 2, 3] if applied else [1, 3])


def _files(server) -> list[str]:
    root = server.warehouse[len("file://"):]
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]


def test_a_table_dropped_and_created_again_is_not_committed_to(server):
    cat = catalog(server)
    held = _new_table(cat)
    cat.drop_table("db.t")
    _new_table(cat)
    with pytest.raises(TableUUIDMismatchError, match="table-uuid changed"):
        fast_append(held, [_data_file(held, [1])], MAIN_REQUEST)
    assert cat.load_table("db.t").current_snapshot() is None


def test_bearer_token(tmp_path):
    srv = RestServer(str(tmp_path / "server"), token="s3cret")
    try:
        with pytest.raises(NotAuthorizedError, match="401"):
            catalog(srv)
        with pytest.raises(NotAuthorizedError, match="401"):
            catalog(srv, token="wrong")
        cat = catalog(srv, token="s3cret", **{"header.X-Team": "etl"})
        cat.create_namespace("db")
        assert all(h.get("X-Team") == "etl" for h in srv.headers_seen[-1:])
        assert srv.violations == []
    finally:
        srv.close()


def test_oauth2_client_credentials_fetched_refreshed_and_renewed(tmp_path, monkeypatch):
    from sparkberg.catalog import rest
    srv = RestServer(str(tmp_path / "server"), client=("spark", "pw"), token_ttl_s=3600)
    try:
        with pytest.raises(NotAuthorizedError, match="refused the credential"):
            catalog(srv, credential="spark:wrong")
        cat = catalog(srv, credential="spark:pw")
        cat.create_namespace("db")
        assert srv.token_requests == 2  # (the wrong secret, then one token for both calls)
        srv.expire_tokens()  # the server forgets the token: a 401, a new token, the call again
        assert cat.list_namespaces() == [("db",)]
        assert srv.token_requests == 3 and srv.rejected == 2
        # a token is fetched again before it expires: no 401 on the way
        monkeypatch.setattr(rest, "TOKEN_REFRESH_MARGIN_S", 3599.9)
        cat2 = catalog(srv, credential="spark:pw")
        time.sleep(0.2)
        cat2.list_namespaces()
        assert srv.token_requests == 5 and srv.rejected == 2
        assert srv.violations == []
    finally:
        srv.close()


SIGV4 = ("AKIDSPARKBERGSIGV4", "sigv4-secret-do-not-leak", "eu-west-1", "glue")


def _signed(secret: str = SIGV4[1], **more) -> dict:
    return {"rest.sigv4-enabled": "true", "rest.signing-name": SIGV4[3], "rest.signing-region": SIGV4[2],
            "rest.access-key-id": SIGV4[0], "rest.secret-access-key": secret, **more}


@pytest.mark.parametrize("prefix", [None, "wh-1"])
def test_sigv4_signed_requests_the_server_verifies(tmp_path, prefix):
    srv = RestServer(str(tmp_path / "server"), sigv4=SIGV4, prefix=prefix, page_size=1)
    try:
        with pytest.raises(NotAuthorizedError, match="403"):
            catalog(srv)  # (unsigned)
        with pytest.raises(NotAuthorizedError, match="403") as e:
            catalog(srv, **_signed("wrong-secret"))
        assert "wrong-secret" not in str(e.value)
        # (a query string with reserved characters: the warehouse the config endpoint is asked for)
        RestCatalog(srv.uri, "rest", "s3://lake/wh?x=1&y=ü", _signed())
        cat = catalog(srv, **_signed(token="bearer-too"))
        assert SIGV4[1] not in repr(cat)
        cat.create_namespace(("odd ns", "ü x"))
        cat.create_namespace(("odd ns", "b"))
        assert cat.list_namespaces(("odd ns",)) == [("odd ns", "b"), ("odd ns", "ü x")]  # (paged, a parent)
        t = _new_table(cat)
        fast_append(t, [_data_file(t, [1, 2])], MAIN_REQUEST)  # (a commit: a body signed by its hash)
        cat.rename_table("db.t", "db.u")
        assert _rows(cat.load_table("db.u")) == [1, 2]
        cat.drop_table("db.u")
        assert srv.signed >= 10 and srv.rejected == 0
        # (the catalog's own Authorization travels beside the signature, as Iceberg Java's client sends it)
        assert srv.headers_seen[-1]["Original-Authorization"] == "Bearer bearer-too"
        assert srv.violations == []
    finally:
        srv.close()


def test_routes_the_server_does_not_list_are_not_called(tmp_path):
    from restserver import ENDPOINTS
    offered = [e for e in ENDPOINTS if "rename" not in e and "register" not in e]
    srv = RestServer(str(tmp_path / "server"), endpoints=offered)
    try:
        cat = catalog(srv)
        _new_table(cat)
        for call in (lambda: cat.rename_table("db.t", "db.u"), lambda: cat.register_table("db.r", "file:///x")):
            with pytest.raises(NotSupportedError, match="does not offer POST /v1/{prefix}/"):
                call()
        assert not [r for r in srv.requests if "rename" in r or "register" in r]
        assert cat.load_table("db.t").identifier.name == "t"
    finally:
        srv.close()


def test_paging_and_a_prefix(tmp_path):
    srv = RestServer(str(tmp_path / "server"), prefix="warehouse-1", page_size=2)
    try:
        cat = catalog(srv)
        for ns in ("a", "b", "c", "d", "e"):
            cat.create_namespace(ns)
        for name in ("t1", "t2", "t3"):
            cat.create_table(f"a.{name}", SCHEMA)
        assert cat.list_namespaces() == [(n,) for n in "abcde"]
        assert cat.list_tables("a") == ["a.t1", "a.t2", "a.t3"]
        assert all(r.split()[1].startswith("/v1/warehouse-1/") for r in srv.requests if "config" not in r)
        assert sum(1 for r in srv.requests if r == "GET /v1/warehouse-1/namespaces") == 3
        assert srv.violations == []
    finally:
        srv.close()


def test_identifiers_are_encoded_and_bad_ones_refused(server):
    cat = catalog(server)
    cat.create_namespace(("odd ns", "ü%x"))
    t = cat.create_table(("odd ns", "ü%x", "tbl?#&"), SCHEMA)
    assert cat.list_tables(("odd ns", "ü%x")) == ["odd ns.ü%x.tbl?#&"]
    assert cat.load_table(("odd ns", "ü%x", "tbl?#&")).metadata_location == t.metadata_location
    for bad in ("db./etc", "../x.t", "db.a/b"):
        with pytest.raises(InvalidIdentifierError):
            cat.load_table(bad)


def test_an_unreachable_server_is_named(tmp_path):
    with pytest.raises(RestCatalogError, match="127.0.0.1:9"):
        RestCatalog("http://127.0.0.1:9", "x")


def _appender(uri: str, k: int, n: int) -> None:
    table = Catalog(None, RestCatalog(uri, "rest"), uri).load_table("db.t")
    for i in range(n):
        fast_append(table, [_data_file(table, [1000 * k + i])], MAIN_REQUEST)


def test_writer_processes_lose_no_commit(server, report):
    cat = catalog(server)
    _new_table(cat)
    seconds = run_writers(_appender, [(server.uri, k, 10) for k in range(4)])
    table = cat.load_table("db.t")
    snapshots = table.metadata.snapshots
    parents = [s.parent_snapshot_id for s in snapshots]
    assert len(snapshots) == 40 and parents[0] is None and parents[1:] == [s.snapshot_id for s in snapshots[:-1]]
    assert _rows(table) == sorted(1000 * k + i for k in range(4) for i in range(10))
    conflicts = sum(1 for r in server.requests if r == "POST /v1/namespaces/db/tables/t") - 40
    report(f"rest catalog: 4 processes x 10 appends -> {len(snapshots)} snapshots, linear, {conflicts} commits "
           f"retried after a 409, {seconds:.1f} s")


def _jwt(exp: float) -> str:
    """An unsigned JWT whose only claim is its expiry (the client reads ``exp``; the server checks its own list)."""
    import base64
    import json
    part = base64.urlsafe_b64encode(json.dumps({"exp": int(exp)}).encode()).rstrip(b"=").decode()
    return f"eyJhbGciOiJub25lIn0.{part}.sig"


def test_oauth2_token_renewed_by_exchange_before_it_expires(tmp_path, monkeypatch):
    from sparkberg.catalog import rest
    srv = RestServer(str(tmp_path / "server"), client=("spark", "pw"), token_ttl_s=3600)
    try:
        monkeypatch.setattr(rest, "TOKEN_REFRESH_MARGIN_S", 3599.9)
        cat = catalog(srv, credential="spark:pw")
        time.sleep(0.2)
        cat.create_namespace("db")
        # the token about to expire was exchanged for a fresh one: the subject is the old token, no secret sent
        assert len(srv.exchanges) >= 1 and srv.rejected == 0
        ex = srv.exchanges[0]
        assert ex["subject_token_type"] == "urn:ietf:params:oauth:token-type:access_token"
        assert ex["subject_token"] in srv.tokens and "client_secret" not in ex
        # a server that refuses the exchange: the credential fetches a new token instead
        before = srv.token_requests
        srv.expire_tokens()
        cat.list_namespaces()
        assert srv.token_requests > before and srv.rejected >= 1
        # token-exchange-enabled=false: renewal by the credential only
        srv.exchanges.clear()
        cat2 = catalog(srv, credential="spark:pw", **{"token-exchange-enabled": "false"})
        time.sleep(0.2)
        cat2.list_namespaces()
        assert srv.exchanges == []
        assert srv.violations == []
    finally:
        srv.close()


def test_oauth2_jwt_token_renewed_and_subject_token_exchanged(tmp_path):
    jwt = _jwt(time.time() + 30)  # (expires within the refresh margin: exchanged before the first call)
    srv = RestServer(str(tmp_path / "server"), token=jwt,
                     subjects={"id-token-of-alice": "urn:ietf:params:oauth:token-type:id_token"})
    try:
        cat = catalog(srv, token=jwt)
        cat.create_namespace("db")
        assert [e["subject_token"] for e in srv.exchanges] == [jwt] and srv.rejected == 0
        # with token-refresh-enabled=false the token is used as given
        srv.exchanges.clear()
        catalog(srv, token=jwt, **{"token-refresh-enabled": "false"}).list_namespaces()
        assert srv.exchanges == []
        # an ID token exchanged for the catalog's access token, the given token acting
        cat3 = catalog(srv, token=jwt, **{"urn:ietf:params:oauth:token-type:id_token": "id-token-of-alice"})
        assert cat3.list_namespaces() == [("db",)]
        ex = srv.exchanges[-1]
        assert (ex["subject_token"], ex["subject_token_type"], ex["actor_token"]) == \
            ("id-token-of-alice", "urn:ietf:params:oauth:token-type:id_token", jwt)
        with pytest.raises(NotAuthorizedError, match="refused the token exchange") as e:
            catalog(srv, **{"urn:ietf:params:oauth:token-type:id_token": "forged-id-token"})
        assert "forged-id-token" not in str(e.value)
        assert srv.violations == []
    finally:
        srv.close()


def test_a_token_vended_with_a_table_carries_its_requests(tmp_path):
    srv = RestServer(str(tmp_path / "server"), token="catalog-token", table_token="table-token")
    try:
        cat = catalog(srv, token="catalog-token")
        cat.create_namespace("db")
        t = _new_table(cat)
        fast_append(t, [_data_file(t, [1, 2])], MAIN_REQUEST)  # (refused unless it carries the table's token)
        assert _rows(cat.load_table("db.t")) == [1, 2]
        commits = [h for h, r in zip(srv.headers_seen, [r for r in srv.requests if "oauth" not in r])
                   if r.startswith("POST") and r.endswith("/tables/t")]
        assert commits and all(h["Authorization"] == "Bearer table-token" for h in commits)
        assert srv.rejected == 0 and srv.violations == []
    finally:
        srv.close()


def test_views_over_the_rest_protocol(server):
    from sparkberg.errors import NoSuchViewError, ViewAlreadyExistsError
    from sparkberg.format import types as T
    from sparkberg.format.views import Representation, ViewVersion, new_view, replaced, with_properties
    cat = catalog(server)
    rest = cat._backend
    _new_table(cat)

    def version(sql: str, ts: int) -> ViewVersion:
        return ViewVersion(0, ts, 0, {"engine-name": "spark"}, (Representation("sql", sql, "spark"),), ("db",))
    first = new_view(f"{server.warehouse}/db/v", SCHEMA, version("SELECT id FROM db.t", 1000), {"comment": "c"})
    ident, location, meta = rest.create_view("db.v", first)
    assert location.endswith(".gz.metadata.json") and meta.current_version.sql("spark") == "SELECT id FROM db.t"
    assert [str(i) for i in rest.list_views("db")] == ["db.v"] and rest.view_exists("db.v")
    with pytest.raises(ViewAlreadyExistsError):
        rest.create_view("db.t", first)  # (a table's name)
    # a new version and a property change: the updates and the uuid requirement the spec has
    _, base, meta = rest.load_view("db.v")
    wider = T.Schema([T.NestedField(1, "id", T.LONG, False), T.NestedField(2, "x", T.INT, False)])
    changed = with_properties(replaced(meta, version("SELECT id, 1 AS x FROM db.t", 2000), wider), {"k": "v"},
                              {"comment"})
    new_location, written = rest.commit_view("db.v", base, changed)
    assert written.current_version_id == 2 and written.properties == {"k": "v"}
    assert [f.name for f in written.schema().fields] == ["id", "x"] and new_location != base
    sent = server.view_commits[-1]
    assert sent["requirements"] == [{"type": "assert-view-uuid", "uuid": meta.view_uuid}]
    assert [u["action"] for u in sent["updates"]] == ["set-properties", "remove-properties", "add-schema",
                                                       "add-view-version", "set-current-view-version"]
    assert sent["updates"][3]["view-version"]["schema-id"] == -1 and sent["updates"][4]["view-version-id"] == -1
    rest.rename_view("db.v", "db.w")
    assert [str(i) for i in rest.list_views("db")] == ["db.w"]
    rest.drop_view("db.w")
    with pytest.raises(NoSuchViewError):
        rest.load_view("db.w")
    assert server.violations == []
