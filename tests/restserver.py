"""An Iceberg REST catalog server for the tests, started on 127.0.0.1 by the tests that use it.

It serves the spec's endpoints sparkberg's client and DuckDB call (config, OAuth2 tokens, namespaces with
properties, tables: list, create (staged too), load, commit, drop with purge, rename, register; multi-table
transactions) over sparkberg's SQL catalog on a SQLite file: a commit checks the requirements against the
current metadata, applies the updates with sparkberg's pure metadata updates and swaps the result in with the
catalog's compare-and-swap, so concurrent committers get 409s as from a real server.

Every exchange is checked against the REST catalog's OpenAPI document (tests/openapi_check.py); what does not
conform is kept in :attr:`RestServer.violations` for the tests to assert empty. Tests also set what a real
server does to a client: a required bearer token, OAuth2 tokens that expire, a page size for listings, a
prefix, and faults injected into the next commits (an error status before or after the commit is applied).

Test infrastructure, not a product: Iceberg Java's own server (make interop) is the reference.
"""
from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, unquote, urlparse

from sparkberg.catalog.sql import SqlCatalog, sqlite_database
from sparkberg.io.fileio import file_io_for
from sparkberg.errors import (
    CommitFailedException, NamespaceAlreadyExistsError, NamespaceNotEmptyError, NoSuchNamespaceError,
    NoSuchTableError, NoSuchViewError, SparkbergError, TableAlreadyExistsError, ValidationError,
    ViewAlreadyExistsError,
)
from sparkberg.format import updates as U
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.partitioning import PartitionSpec, SortOrder
from sparkberg.format.snapshots import PartitionStatisticsFile, Snapshot, StatisticsFile
from sparkberg.format import types as T
from sparkberg.format.types import Schema
from sparkberg.format.views import ViewHistoryEntry, ViewVersion, new_view, with_properties

import openapi_check
from commits import pending

STRUCTURAL = {"assign-uuid", "upgrade-format-version", "add-schema", "set-current-schema", "add-spec",
              "set-default-spec", "add-sort-order", "set-default-sort-order", "set-location"}
_ERRORS = [  # (exception, status, the spec's error type)
    (NoSuchTableError, 404, "NoSuchTableException"), (NoSuchNamespaceError, 404, "NoSuchNamespaceException"),
    (TableAlreadyExistsError, 409, "AlreadyExistsException"), (NamespaceAlreadyExistsError, 409,
                                                               "AlreadyExistsException"),
    (NamespaceNotEmptyError, 409, "NamespaceNotEmptyException"), (CommitFailedException, 409,
                                                                   "CommitFailedException"),
    (NoSuchViewError, 404, "NoSuchViewException"), (ViewAlreadyExistsError, 409, "AlreadyExistsException"),
    (ValidationError, 400, "BadRequestException"),
]


class HttpError(Exception):
    def __init__(self, status: int, kind: str, message: str):
        super().__init__(message)
        self.status, self.kind = status, kind


def parse_update(obj: dict, base: TableMetadata | None):
    """One REST ``TableUpdate`` (JSON) as a sparkberg update."""
    action = obj["action"]
    version = base.format_version if base is not None else 2
    simple = {
        "assign-uuid": lambda: U.AssignUUID(obj["uuid"]),
        "upgrade-format-version": lambda: U.UpgradeFormatVersion(int(obj["format-version"])),
        "add-schema": lambda: U.AddSchema(Schema.from_json(obj["schema"]), obj.get("last-column-id")),
        "set-current-schema": lambda: U.SetCurrentSchema(int(obj["schema-id"])),
        "add-spec": lambda: U.AddPartitionSpec(PartitionSpec.from_json(obj["spec"])),
        "set-default-spec": lambda: U.SetDefaultSpec(int(obj["spec-id"])),
        "add-sort-order": lambda: U.AddSortOrder(SortOrder.from_json(obj["sort-order"])),
        "set-default-sort-order": lambda: U.SetDefaultSortOrder(int(obj["sort-order-id"])),
        "add-snapshot": lambda: U.AddSnapshot(Snapshot.from_json(obj["snapshot"], version, "add-snapshot")),
        "set-snapshot-ref": lambda: U.SetSnapshotRef(
            obj["ref-name"], int(obj["snapshot-id"]), obj.get("type", "branch"), obj.get("min-snapshots-to-keep"),
            obj.get("max-snapshot-age-ms"), obj.get("max-ref-age-ms")),
        "remove-snapshots": lambda: U.RemoveSnapshots(tuple(obj["snapshot-ids"])),
        "remove-snapshot-ref": lambda: U.RemoveSnapshotRef(obj["ref-name"]),
        "set-properties": lambda: U.SetProperties(dict(obj["updates"])),
        "remove-properties": lambda: U.RemoveProperties(tuple(obj["removals"])),
        "set-location": lambda: U.SetLocation(obj["location"]),
        "set-statistics": lambda: U.SetStatistics(StatisticsFile.from_json(obj["statistics"], "statistics")),
        "remove-statistics": lambda: U.RemoveStatistics(int(obj["snapshot-id"])),
        "set-partition-statistics": lambda: U.SetPartitionStatistics(
            PartitionStatisticsFile.from_json(obj["partition-statistics"], "partition-statistics")),
        "remove-partition-statistics": lambda: U.RemovePartitionStatistics(int(obj["snapshot-id"])),
    }
    if action not in simple:
        raise HttpError(400, "BadRequestException", f"unknown table update {action!r}")
    return simple[action]()


def check_requirement(req: dict, base: TableMetadata | None) -> None:
    """A REST ``TableRequirement`` against the current metadata (None: no such table); 409 when it fails."""
    kind = req["type"]
    if kind == "assert-create":
        if base is not None:
            raise CommitFailedException("requirement failed: the table already exists")
        return
    if base is None:
        raise NoSuchTableError(f"{kind}: the table does not exist")
    checks = {
        "assert-table-uuid": lambda: base.table_uuid == req["uuid"],
        "assert-ref-snapshot-id": lambda: (base.refs[req["ref"]].snapshot_id if req["ref"] in base.refs
                                           else None) == req.get("snapshot-id"),
        "assert-last-assigned-field-id": lambda: base.last_column_id == req["last-assigned-field-id"],
        "assert-current-schema-id": lambda: base.current_schema_id == req["current-schema-id"],
        "assert-last-assigned-partition-id": lambda: base.last_partition_id == req["last-assigned-partition-id"],
        "assert-default-spec-id": lambda: base.default_spec_id == req["default-spec-id"],
        "assert-default-sort-order-id": lambda: base.default_sort_order_id == req["default-sort-order-id"],
    }
    if kind not in checks:
        raise HttpError(400, "BadRequestException", f"unknown requirement {kind!r}")
    if not checks[kind]():
        raise CommitFailedException(f"requirement failed: {req}")


# the routes a server that vends credentials lists (the spec's original ones and the credentials endpoint)
ENDPOINTS = [f"{method} /v1/{{prefix}}/{route}" for method, route in [
    ("GET", "namespaces"), ("POST", "namespaces"), ("GET", "namespaces/{namespace}"),
    ("DELETE", "namespaces/{namespace}"), ("POST", "namespaces/{namespace}/properties"),
    ("GET", "namespaces/{namespace}/tables"), ("POST", "namespaces/{namespace}/tables"),
    ("GET", "namespaces/{namespace}/tables/{table}"), ("POST", "namespaces/{namespace}/tables/{table}"),
    ("DELETE", "namespaces/{namespace}/tables/{table}"), ("POST", "namespaces/{namespace}/register"),
    ("POST", "tables/rename"), ("POST", "transactions/commit"),
    ("GET", "namespaces/{namespace}/tables/{table}/credentials")]]


def _listed(endpoints: list[str], method: str, path: str, prefix: str | None) -> bool:
    """Whether the route of ``method path`` is among ``endpoints`` (the config and token routes always are)."""
    parts = [unquote(p) for p in path.strip("/").split("/")][1:]  # (after v1)
    if parts in (["config"], ["oauth", "tokens"]):
        return True
    if prefix:
        parts = parts[1:]
    names = {"namespaces": "{namespace}", "tables": "{table}", "views": "{view}"}
    out: list[str] = []
    for part in parts:
        out.append(names[out[-1]] if out and out[-1] in names and part != "rename" else part)
    return f"{method} /v1/{{prefix}}/{'/'.join(out)}" in endpoints


class RestServer:
    """The server: ``uri`` is its endpoint; tables live under ``warehouse``, rows in ``<dir>/catalog.db``.

    ``token``: the bearer token every request must carry (None: no auth); ``client``: (id, secret) accepted by
    the OAuth2 endpoint, which hands out tokens valid ``token_ttl_s``; ``prefix``: sent by the config endpoint;
    ``page_size``: listings answer that many items a page. ``io_properties``: the FileIO properties of the
    server's own catalog (its warehouse on an object store); ``vend(why)``: the storage credentials it vends with
    each table (``why`` "load") and from the credentials endpoint (``why`` "credentials"), which its config then
    lists among its ``endpoints``. ``sigv4``: (access key, secret key, region, service) whose AWS Signature
    Version 4 every request must carry, recomputed here by botocore from what arrived; ``endpoints``: the routes
    its config lists (it then answers 404 to any other). ``subjects``: the subject tokens (of any type but an
    access token's) its token endpoint exchanges for access tokens; an access token it handed out (or ``token``)
    it exchanges too, for a fresh one. ``table_token``: a token it vends in each table's ``config``, which it then
    requires of every request on that table. ``signing``: (access key, secret key) with which its tables' ``sign``
    route signs S3 requests (botocore's SigV4 for S3), vending ``s3.remote-signing-enabled`` and
    ``signing_config`` (the S3 endpoint's properties, no key) with each table, and ``remote-signing-config``
    ``signing_static`` (properties and headers the client must send along; each sign request is kept in
    ``sign_requests``)."""

    def __init__(self, directory: str, warehouse: str | None = None, token: str | None = None,
                 client: tuple[str, str] | None = None, token_ttl_s: int = 3600, prefix: str | None = None,
                 page_size: int | None = None, io_properties: dict[str, str] | None = None,
                 vend: Callable[[str], dict[str, str]] | None = None,
                 sigv4: tuple[str, str, str, str] | None = None, endpoints: list[str] | None = None,
                 subjects: dict[str, str] | None = None, table_token: str | None = None,
                 signing: tuple[str, str] | None = None, signing_config: dict[str, str] | None = None,
                 signing_static: dict | None = None):
        os.makedirs(directory, exist_ok=True)
        self.warehouse = warehouse or "file://" + os.path.join(directory, "warehouse")
        self.catalog = SqlCatalog("rest", sqlite_database(os.path.join(directory, "catalog.db")), self.warehouse,
                                  file_io_for(None, io_properties))
        self.vend = vend
        self.sigv4, self.signed = sigv4, 0
        self.endpoints = endpoints
        self.tokens: dict[str, float] = {} if token is None else {token: float("inf")}
        self.signing, self.signing_config, self.signing_static = signing, signing_config or {}, signing_static
        self.sign_requests: list[tuple[dict, dict]] = []  # (the request's JSON, its headers)
        self.refuse_signing = False
        self.subjects = dict(subjects or {})
        self.table_token = table_token
        if table_token is not None:
            self.tokens[table_token] = float("inf")
        self.auth = token is not None or client is not None or bool(subjects)
        self.exchanges: list[dict] = []  # the form of every token exchange
        self.client, self.token_ttl_s = client, token_ttl_s
        self.prefix, self.page_size = prefix, page_size
        self.staged: dict[tuple, TableMetadata] = {}  # stage-create: created by the assert-create commit
        self.faults: list[tuple[int, bool]] = []  # (status, applied first) for the next commits
        self.requests: list[str] = []
        self.commits: list[dict] = []  # the body of every table commit, as sent
        self.view_commits: list[dict] = []  # and of every view commit
        self.token_requests = 0
        self.rejected = 0  # requests answered 401
        self.headers_seen: list[dict] = []
        self.violations: list[str] = []
        self.lock = threading.Lock()
        self.server, self.uri = http_server(lambda method, path, query, raw, headers: _json(
            *self.handle(method, path, query, raw, headers)))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def expire_tokens(self) -> None:
        """Every token handed out so far stops being accepted (the next request gets a 401)."""
        self.tokens = {t: exp for t, exp in self.tokens.items() if exp == float("inf")}

    # --- one exchange -----------------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict, raw: bytes, headers) -> tuple[int, dict | None]:
        self.requests.append(f"{method} {path}")
        form = path.endswith("/oauth/tokens")
        body = None
        try:
            if raw and not form:
                try:
                    body = json.loads(raw)
                except ValueError:
                    raise HttpError(400, "BadRequestException", "the request body is not JSON") from None
            if form:
                status, out = 200, self._token({k: v[0] for k, v in parse_qs(raw.decode()).items()})
            else:
                self.headers_seen.append(dict(headers))
                if self.sigv4 is not None:
                    self._verify_sigv4(method, path, query, raw, headers)
                if self.endpoints is not None and not _listed(self.endpoints, method, path, self.prefix):
                    raise HttpError(404, "NotFoundException", f"route not offered: {method} {path}")
                self._authorized(headers, method, path)
                status, out = self.route(method, [unquote(p) for p in path.strip("/").split("/")], body or {},
                                         query)
        except HttpError as e:
            status = e.status
            out = {"error": e.kind, "error_description": str(e)} if form else _error(e.status, e.kind, str(e))
            self.rejected += e.status == 401
        except SparkbergError as e:
            status, kind = next(((code, kind) for cls, code, kind in _ERRORS if isinstance(e, cls)),
                                (500, "ServerError"))
            out = _error(status, kind, str(e))
        except Exception as e:  # noqa: BLE001 - the client gets the message
            status, out = 500, _error(500, "ServerError", f"{type(e).__name__}: {e}")
        if not form:
            self.violations += openapi_check.violations(method, path, body, status, out)
        return status, out

    def _token(self, form: dict) -> dict:
        self.token_requests += 1
        if form.get("grant_type") == "urn:ietf:params:oauth:grant-type:token-exchange":
            self.exchanges.append(form)
            subject, kind = form.get("subject_token"), form.get("subject_token_type")
            if kind == "urn:ietf:params:oauth:token-type:access_token":
                valid = self.tokens.get(subject, 0) >= time.monotonic()
            else:
                valid = self.subjects.get(subject) == kind
            actor = form.get("actor_token")
            if not valid or (actor is not None and self.tokens.get(actor, 0) < time.monotonic()):
                raise HttpError(401, "invalid_grant", "the subject or actor token is not valid")
        elif form.get("grant_type") != "client_credentials" or self.client is None or \
                (form.get("client_id"), form.get("client_secret")) != self.client:
            raise HttpError(401, "invalid_client", "unknown client or secret")
        token = secrets.token_hex(16)
        self.tokens[token] = time.monotonic() + self.token_ttl_s
        return {"access_token": token, "token_type": "bearer", "expires_in": self.token_ttl_s,
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}

    def _verify_sigv4(self, method: str, path: str, query: dict, raw: bytes, headers) -> None:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        access, secret, region, service = self.sigv4
        m = re.fullmatch(r"AWS4-HMAC-SHA256 Credential=([^/]+)/\d{8}/([^/]+)/([^/]+)/aws4_request, "
                         r"SignedHeaders=([^,]+), Signature=([0-9a-f]{64})", headers.get("Authorization") or "")
        if m is None or m.group(1) != access or (m.group(2), m.group(3)) != (region, service):
            raise HttpError(403, "ForbiddenException", "no SigV4 signature of the expected key, region and service")
        if headers.get("x-amz-content-sha256") != hashlib.sha256(raw).hexdigest():
            raise HttpError(403, "ForbiddenException", "x-amz-content-sha256 is not the body's SHA-256")
        names = m.group(4).split(";")
        if not {"host", "x-amz-date", "x-amz-content-sha256"} <= set(names):
            raise HttpError(403, "ForbiddenException", f"signed headers {names} leave out what must be signed")
        request = AWSRequest(method=method, url=f"http://{headers['Host']}{path}", data=raw,
                             params={k: v[0] for k, v in query.items()}, headers={n: headers[n] for n in names})
        request.context["timestamp"] = headers["X-Amz-Date"]
        auth = SigV4Auth(Credentials(access, secret), service, region)
        expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
        if not hmac.compare_digest(expected, m.group(5)):
            raise HttpError(403, "ForbiddenException", "the SigV4 signature does not match the request")
        self.signed += 1

    def _authorized(self, headers, method: str, path: str) -> None:
        value = headers.get("Authorization") or ""
        token = value[len("Bearer "):] if value.startswith("Bearer ") else None
        # (a table's commits and credentials, once loaded; its first load carries the catalog's token)
        parts = path.strip("/").split("/")
        on_table = parts[-1] == "credentials" or (method == "POST" and len(parts) >= 2 and parts[-2] == "tables"
                                                       and parts[-1] != "rename")
        if self.table_token is not None and on_table and token != self.table_token:
            raise HttpError(401, "NotAuthorizedException", "not authorized: a table's requests carry its token")
        if not self.auth:
            return
        if token is None or self.tokens.get(token, 0) < time.monotonic():
            raise HttpError(401, "NotAuthorizedException", "not authorized: no valid bearer token")

    def route(self, method: str, parts: list[str], body: dict, query: dict):
        if parts[:1] == ["v1"]:
            parts = parts[1:]
        if parts == ["config"]:
            out = {"defaults": {"warehouse": self.warehouse},
                   "overrides": {"prefix": self.prefix} if self.prefix else {}}
            if self.vend is not None or self.endpoints is not None:
                out["endpoints"] = self.endpoints if self.endpoints is not None else ENDPOINTS
            return 200, out
        if self.prefix:
            if parts[:1] != [self.prefix]:
                raise HttpError(404, "NotFoundException", f"no such prefix: /{'/'.join(parts[:1])}")
            parts = parts[1:]
        if parts == ["namespaces"]:
            if method == "POST":
                ns = tuple(body["namespace"])
                self.catalog.create_namespace(ns, body.get("properties") or {})
                return 200, {"namespace": list(ns), "properties": body.get("properties") or {}}
            parent = tuple(query["parent"][0].split("\x1f")) if query.get("parent") else ()
            if parent and not self.catalog.namespace_exists(parent):
                raise NoSuchNamespaceError(f"namespace {'.'.join(parent)} does not exist")
            return 200, self._page("namespaces", [list(n) for n in self.catalog.list_namespaces(parent)], query)
        if parts == ["tables", "rename"]:
            src, dst = body["source"], body["destination"]
            self.catalog.rename(tuple(src["namespace"]) + (src["name"],), tuple(dst["namespace"]) + (dst["name"],))
            return 204, None
        if parts == ["views", "rename"]:
            src, dst = body["source"], body["destination"]
            self.catalog.rename_view(tuple(src["namespace"]) + (src["name"],),
                                     tuple(dst["namespace"]) + (dst["name"],))
            return 204, None
        if parts == ["transactions", "commit"]:
            with self.lock:
                for change in body["table-changes"]:
                    ident = change["identifier"]
                    self._commit(tuple(ident["namespace"]) + (ident["name"],), change)
            return 204, None
        if len(parts) < 2 or parts[0] != "namespaces":
            raise HttpError(404, "NotFoundException", f"no such route: /{'/'.join(parts)}")
        ns = tuple(parts[1].split("\x1f"))
        if len(parts) == 2:
            if method == "DELETE":
                self.catalog.drop_namespace(ns)
                return 204, None
            return 200, {"namespace": list(ns), "properties": self.catalog.load_namespace_properties(ns)}
        if parts[2:] == ["properties"]:
            removals, updates = body.get("removals") or [], body.get("updates") or {}
            current = self.catalog.load_namespace_properties(ns)
            missing = [k for k in removals if k not in current]
            self.catalog.update_namespace_properties(ns, updates, [k for k in removals if k in current])
            return 200, {"updated": sorted(updates), "removed": [k for k in removals if k in current],
                         "missing": missing}
        if parts[2:] == ["register"]:
            ident = ns + (body["name"],)
            self.catalog.register(ident, body["metadata-location"])
            return 200, self._load_result(ident)
        if parts[2:] == ["tables"]:
            if method == "POST":
                return 200, self._create(ns, body)
            tables = [{"namespace": list(ns), "name": i.name} for i in self.catalog.list_tables(ns)]
            return 200, self._page("identifiers", tables, query)
        if parts[2:] == ["views"]:
            if method == "POST":
                return 200, self._create_view(ns, body)
            views = [{"namespace": list(ns), "name": i.name} for i in self.catalog.list_views(ns)]
            return 200, self._page("identifiers", views, query)
        if len(parts) == 4 and parts[2] == "views":
            ident = ns + (parts[3],)
            if method == "DELETE":
                self.catalog.drop_view(ident)
                return 204, None
            if method == "POST":
                with self.lock:
                    return 200, self._commit_view(ident, body)
            _, location, meta = self.catalog.load_view(ident)
            if method == "HEAD":
                return 204, None
            return 200, {"metadata-location": location, "metadata": meta.to_json(), "config": {}}
        if len(parts) == 5 and parts[2] == "tables" and parts[4] == "sign" and self.signing is not None:
            return 200, self._sign(ns + (parts[3],), body)
        if len(parts) == 5 and parts[2] == "tables" and parts[4] == "metrics":
            return 204, None  # (scan and commit reports, as Iceberg Java's client sends them: not kept)
        if len(parts) == 5 and parts[2] == "tables" and parts[4] == "credentials" and self.vend is not None:
            self.catalog.load(ns + (parts[3],))
            return 200, {"storage-credentials": [{"prefix": self.warehouse, "config": self.vend("credentials")}]}
        if len(parts) != 4 or parts[2] != "tables":
            raise HttpError(404, "NotFoundException", f"no such route: /{'/'.join(parts)}")
        ident = ns + (parts[3],)
        if method == "POST":
            with self.lock:
                return self._faulty_commit(ident, body)
        if method == "DELETE":
            purge = (query.get("purgeRequested") or ["false"])[0] == "true"
            self.catalog.drop(ident, purge)
            return 204, None
        if method == "HEAD":
            self.catalog.load(ident)
            return 204, None
        return 200, self._load_result(ident)

    def _page(self, key: str, items: list, query: dict) -> dict:
        if not self.page_size:
            return {key: items}
        start = int((query.get("pageToken") or ["0"])[0] or 0)
        out: dict = {key: items[start:start + self.page_size]}
        if start + self.page_size < len(items):
            out["next-page-token"] = str(start + self.page_size)
        return out

    def _load_result(self, ident) -> dict:
        _, loc, meta = self.catalog.load(ident)
        config = {} if self.table_token is None else {"token": self.table_token}
        out = {"metadata-location": loc, "metadata": meta.to_json(), "config": config, **self._vended()}
        if self.signing is not None:
            config.update({**self.signing_config, "s3.remote-signing-enabled": "true"})
            if self.signing_static is not None:
                out["remote-signing-config"] = self.signing_static
        return out

    def _create_view(self, ns: tuple, body: dict) -> dict:
        version = ViewVersion.from_json(body["view-version"], "view-version")
        location = body.get("location") or "/".join([self.warehouse, *ns, body["name"]])
        meta = new_view(location, T.Schema.from_json(body["schema"]), version, body.get("properties") or {})
        _, written, meta = self.catalog.create_view(ns + (body["name"],), meta)
        return {"metadata-location": written, "metadata": meta.to_json(), "config": {}}

    def _commit_view(self, ident: tuple, body: dict) -> dict:
        """A view's commit: its requirements checked, its updates applied in order (a schema or version of id -1:
        the last one added), and swapped in on the catalog."""
        self.view_commits.append(body)
        _, base_location, base = self.catalog.load_view(ident)
        for r in body.get("requirements") or []:
            if r["type"] == "assert-view-uuid" and r["uuid"] != base.view_uuid:
                raise HttpError(409, "CommitFailedException", f"view uuid changed: {r['uuid']} != {base.view_uuid}")
        meta, last_schema, last_version = base, None, None
        for u in body["updates"]:
            action = u["action"]
            if action == "set-properties":
                meta = with_properties(meta, u["updates"])
            elif action == "remove-properties":
                meta = with_properties(meta, {}, set(u["removals"]))
            elif action == "add-schema":
                schema = T.Schema.from_json(u["schema"])
                same = next((x for x in meta.schemas if x.fields == schema.fields), None)
                if same is None:
                    same = dataclasses.replace(schema, schema_id=max(x.schema_id for x in meta.schemas) + 1)
                    meta = dataclasses.replace(meta, schemas=meta.schemas + (same,))
                last_schema = same.schema_id
            elif action == "add-view-version":
                version = ViewVersion.from_json(u["view-version"], "view-version")
                if version.schema_id == -1:
                    version = dataclasses.replace(version, schema_id=last_schema)
                version = dataclasses.replace(version, version_id=max(v.version_id for v in meta.versions) + 1)
                meta = dataclasses.replace(meta, versions=meta.versions + (version,))
                last_version = version.version_id
            elif action == "set-current-view-version":
                vid = last_version if u["view-version-id"] == -1 else u["view-version-id"]
                when = meta.version(vid).timestamp_ms
                meta = dataclasses.replace(meta, current_version_id=vid,
                                           version_log=meta.version_log + (ViewHistoryEntry(when, vid),))
            else:
                raise HttpError(400, "BadRequestException", f"unknown view update {action!r}")
        meta = with_properties(meta, {})  # (the versions beyond version.history.num-entries expired)
        written, meta = self.catalog.commit_view(ident, base_location, meta)
        return {"metadata-location": written, "metadata": meta.to_json(), "config": {}}

    def _sign(self, ident: tuple, body: dict) -> dict:
        """A table's S3 request signed with the server's key, the client's payload hash kept as it was sent."""
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        self.catalog.load(ident)
        self.sign_requests.append((body, dict(self.headers_seen[-1])))
        if self.refuse_signing:
            raise HttpError(403, "ForbiddenException", f"signing refused for table {'.'.join(ident)}")

        class KeepPayload(S3SigV4Auth):
            def payload(self, request):
                return request.headers.get("x-amz-content-sha256") or "UNSIGNED-PAYLOAD"
        headers = {k: v[0] for k, v in body["headers"].items()}
        request = AWSRequest(method=body["method"], url=body["uri"], headers=headers)
        KeepPayload(Credentials(*self.signing), "s3", body["region"]).add_auth(request)
        return {"uri": body["uri"], "headers": {k: [v] for k, v in request.headers.items()}}

    def _vended(self) -> dict:
        return {} if self.vend is None else \
            {"storage-credentials": [{"prefix": self.warehouse, "config": self.vend("load")}]}

    def _create(self, ns: tuple, body: dict) -> dict:
        ident = ns + (body["name"],)
        if not self.catalog.namespace_exists(ns):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ns)} does not exist")
        if self.catalog.table_exists(ident) or ident in self.staged:
            raise TableAlreadyExistsError(f"table {'.'.join(ident)} already exists")
        schema = U.assign_fresh_ids(Schema.from_json(body["schema"]))
        spec = PartitionSpec.from_json(body["partition-spec"]) if body.get("partition-spec") else None
        order = SortOrder.from_json(body["write-order"]) if body.get("write-order") else None
        props = dict(body.get("properties") or {})
        version = int(props.pop("format-version", 2))
        location = (body.get("location") or self.catalog.default_table_location(ident)).rstrip("/")
        meta = U.new_table_metadata(schema, location, spec, order, props, version)
        if body.get("stage-create"):
            self.staged[ident] = meta
            return {"metadata": meta.to_json(), "config": {}, **self._vended()}
        self.catalog.create(ident, meta)
        return self._load_result(ident)

    def _faulty_commit(self, ident: tuple, body: dict):
        if self.faults:
            status, applied = self.faults.pop(0)
            if applied:
                self._commit(ident, body)
            raise HttpError(status, "ServiceUnavailableException" if status == 503 else
                            "CommitFailedException" if status == 409 else "ServerError",
                            f"injected {status} ({'after' if applied else 'before'} the commit)")
        return 200, self._commit(ident, body)

    def _commit(self, ident: tuple, body: dict) -> dict:
        self.commits.append(body)
        try:
            _, loc, base = self.catalog.load(ident)
        except NoSuchTableError:
            loc, base = None, None
        staged = base is None and ident in self.staged
        for req in body.get("requirements") or []:
            check_requirement(req, self.staged.get(ident) if staged and req["type"] != "assert-create" else base)
        if staged:
            # the staged metadata already holds what the structural updates describe (the client sent both)
            meta = self.staged.pop(ident)
            rest = [parse_update(u, meta) for u in body.get("updates") or [] if u["action"] not in STRUCTURAL]
            self.catalog.create(ident, U.apply_all(rest, meta) if rest else meta)
            return self._load_result(ident)
        if base is None:
            raise NoSuchTableError(f"table {'.'.join(ident)} does not exist")
        new = U.apply_all([parse_update(u, base) for u in body.get("updates") or []], base)
        new_loc, meta = self.catalog.commit(ident, loc, pending(base, new))
        return {"metadata-location": new_loc, "metadata": meta.to_json()}


def http_server(handle: Callable[[str, str, dict, bytes, Any], tuple[int, bytes]]) -> tuple[ThreadingHTTPServer, str]:
    """A threaded HTTP/1.1 server on 127.0.0.1 (a free port) that answers each request with ``handle(method, path,
    query, body, headers)`` -> (status, JSON body); the server and its URI."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _handle(self):
            url = urlparse(self.path)
            n = int(self.headers.get("Content-Length") or 0)
            status, data = handle(self.command, url.path, parse_qs(url.query), self.rfile.read(n) if n else b"",
                                  self.headers)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if data and self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_HEAD = do_DELETE = _handle

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _json(status: int, body: dict | None) -> tuple[int, bytes]:
    return status, b"" if body is None else json.dumps(body).encode()


def _error(status: int, kind: str, message: str) -> dict:
    return {"error": {"message": message, "type": kind, "code": status}}
