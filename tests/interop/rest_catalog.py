"""A minimal Iceberg REST catalog for the interop tests, so that DuckDB (which writes Iceberg tables only
through a REST catalog) can write tables that sparkberg then reads.

It serves the endpoints DuckDB uses (config, namespaces, create/load/commit table, transactions) over
sparkberg's file-system catalog: tables land in a warehouse directory in the HadoopCatalog layout, and commits
apply the REST updates with sparkberg's pure metadata updates after checking the requirements. Test
infrastructure, not a product: no auth, no paging, no views.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

from sparkberg.catalog.filesystem import FileSystemCatalog
from sparkberg.errors import CommitFailedException, NoSuchNamespaceError, NoSuchTableError, SparkbergError
from sparkberg.spec import updates as U
from sparkberg.spec.metadata import TableMetadata
from sparkberg.spec.partitioning import PartitionSpec, SortOrder
from sparkberg.spec.snapshots import Snapshot
from sparkberg.spec.types import Schema


STRUCTURAL = {"assign-uuid", "upgrade-format-version", "add-schema", "set-current-schema", "add-spec",
              "set-default-spec", "add-sort-order", "set-default-sort-order", "set-location"}


def parse_update(obj: dict, base: TableMetadata | None):
    """One REST ``TableUpdate`` (JSON) as a sparkberg update."""
    action = obj["action"]
    version = base.format_version if base is not None else 2
    if action == "assign-uuid":
        return U.AssignUUID(obj["uuid"])
    if action == "upgrade-format-version":
        return U.UpgradeFormatVersion(int(obj["format-version"]))
    if action == "add-schema":
        return U.AddSchema(Schema.from_json(obj["schema"]), obj.get("last-column-id"))
    if action == "set-current-schema":
        return U.SetCurrentSchema(int(obj["schema-id"]))
    if action == "add-spec":
        return U.AddPartitionSpec(PartitionSpec.from_json(obj["spec"]))
    if action == "set-default-spec":
        return U.SetDefaultSpec(int(obj["spec-id"]))
    if action == "add-sort-order":
        return U.AddSortOrder(SortOrder.from_json(obj["sort-order"]))
    if action == "set-default-sort-order":
        return U.SetDefaultSortOrder(int(obj["sort-order-id"]))
    if action == "add-snapshot":
        return U.AddSnapshot(Snapshot.from_json(obj["snapshot"], version, "add-snapshot"))
    if action == "set-snapshot-ref":
        return U.SetSnapshotRef(obj["ref-name"], int(obj["snapshot-id"]), obj.get("type", "branch"),
                                obj.get("min-snapshots-to-keep"), obj.get("max-snapshot-age-ms"),
                                obj.get("max-ref-age-ms"))
    if action == "remove-snapshots":
        return U.RemoveSnapshots(tuple(obj["snapshot-ids"]))
    if action == "remove-snapshot-ref":
        return U.RemoveSnapshotRef(obj["ref-name"])
    if action == "set-properties":
        return U.SetProperties(dict(obj["updates"]))
    if action == "remove-properties":
        return U.RemoveProperties(tuple(obj["removals"]))
    if action == "set-location":
        return U.SetLocation(obj["location"])
    raise SparkbergError(f"REST update {action!r} is not supported by the test catalog")


def check_requirement(req: dict, base: TableMetadata | None) -> None:
    kind = req["type"]
    if kind == "assert-create":
        if base is not None:
            raise CommitFailedException("table already exists")
        return
    if base is None:
        raise CommitFailedException(f"{kind}: table does not exist")
    checks = {
        "assert-table-uuid": lambda: base.table_uuid == req["uuid"],
        "assert-ref-snapshot-id": lambda: (base.refs.get(req["ref"]).snapshot_id if req["ref"] in base.refs
                                           else None) == req.get("snapshot-id"),
        "assert-last-assigned-field-id": lambda: base.last_column_id == req["last-assigned-field-id"],
        "assert-current-schema-id": lambda: base.current_schema_id == req["current-schema-id"],
        "assert-last-assigned-partition-id": lambda: base.last_partition_id == req["last-assigned-partition-id"],
        "assert-default-spec-id": lambda: base.default_spec_id == req["default-spec-id"],
        "assert-default-sort-order-id": lambda: base.default_sort_order_id == req["default-sort-order-id"],
    }
    if kind in checks and not checks[kind]():
        raise CommitFailedException(f"requirement failed: {req}")


class RestCatalog:
    """The server; ``uri`` is its endpoint, ``warehouse`` where the tables are."""

    def __init__(self, warehouse: str):
        self.fs = FileSystemCatalog(warehouse)
        self.staged: dict[tuple, TableMetadata] = {}  # stage-create: written by the assert-create commit
        self.lock = threading.Lock()
        self.requests: list[str] = []
        catalog = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, code: int, body: dict | None = None):
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if data and self.command != "HEAD":
                    self.wfile.write(data)

            def _handle(self):
                path = urlparse(self.path).path
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}") if n else {}
                catalog.requests.append(f"{self.command} {path}")
                try:
                    code, out = catalog.route(self.command, [unquote(p) for p in path.strip("/").split("/")], body)
                except (NoSuchTableError, NoSuchNamespaceError) as e:
                    kind = "NoSuchTableException" if isinstance(e, NoSuchTableError) else "NoSuchNamespaceException"
                    code, out = 404, {"error": {"message": str(e), "type": kind, "code": 404}}
                except CommitFailedException as e:
                    code, out = 409, {"error": {"message": str(e), "type": "CommitFailedException", "code": 409}}
                except Exception as e:  # noqa: BLE001 - the client gets the message
                    code, out = 500, {"error": {"message": f"{type(e).__name__}: {e}", "type": "ServerError",
                                                "code": 500}}
                self._reply(code, out)

            do_GET = do_POST = do_HEAD = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.uri = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()

    def _load_result(self, ident) -> dict:
        _, loc, meta = self.fs.load(ident)
        return {"metadata-location": loc, "metadata": meta.to_json(), "config": {}}

    def route(self, method: str, parts: list[str], body: dict):
        if parts[:1] == ["v1"]:
            parts = parts[1:]
        if parts and parts[0] not in ("config", "namespaces", "transactions"):
            parts = parts[1:]  # a prefix
        if parts == ["config"]:
            return 200, {"defaults": {}, "overrides": {}}
        if parts == ["namespaces"]:
            if method == "POST":
                ns = tuple(body["namespace"])
                self.fs.create_namespace(ns)
                return 200, {"namespace": list(ns), "properties": body.get("properties") or {}}
            return 200, {"namespaces": [list(n) for n in self.fs.list_namespaces()]}
        if parts == ["transactions", "commit"]:
            with self.lock:
                for change in body["table-changes"]:
                    ident = change["identifier"]
                    self._commit(tuple(ident["namespace"]) + (ident["name"],), change)
            return 204, None
        ns = tuple(parts[1].split("\x1f"))
        if len(parts) == 2:
            if not self.fs.namespace_exists(ns):
                raise NoSuchNamespaceError(f"namespace {'.'.join(ns)} does not exist")
            return 200, {"namespace": list(ns), "properties": {}}
        if len(parts) == 3 and parts[2] == "tables":
            if method == "POST":
                return 200, self._create(ns, body)
            return 200, {"identifiers": [{"namespace": list(ns), "name": i.name} for i in self.fs.list_tables(ns)]}
        ident = ns + (parts[3],)
        if method == "POST":
            with self.lock:
                return 200, self._commit(ident, body)
        if method == "DELETE":
            self.fs.drop(ident, False)
            return 204, None
        return 200, self._load_result(ident)

    def _create(self, ns: tuple, body: dict) -> dict:
        ident = ns + (body["name"],)
        schema = U.assign_fresh_ids(Schema.from_json(body["schema"]))
        spec = PartitionSpec.from_json(body["partition-spec"]) if body.get("partition-spec") else None
        order = SortOrder.from_json(body["write-order"]) if body.get("write-order") else None
        props = dict(body.get("properties") or {})
        version = int(props.pop("format-version", 2))
        meta = U.new_table_metadata(schema, self.fs.default_table_location(ident), spec, order, props, version)
        if body.get("stage-create"):
            self.staged[ident] = meta
            return {"metadata-location": None, "metadata": meta.to_json(), "config": {}}
        self.fs.create(ident, meta)
        return self._load_result(ident)

    def _commit(self, ident: tuple, body: dict) -> dict:
        try:
            _, loc, base = self.fs.load(ident)
        except NoSuchTableError:
            loc, base = None, None
        for req in body.get("requirements") or []:
            check_requirement(req, base)
        if base is None and ident in self.staged:
            # the staged metadata already holds what the structural updates describe (the client sent both)
            meta = self.staged.pop(ident)
            rest = [parse_update(u, meta) for u in body.get("updates") or [] if u["action"] not in STRUCTURAL]
            self.fs.create(ident, U.apply_all(rest, meta) if rest else meta)
            return self._load_result(ident)
        if base is None:
            raise NoSuchTableError(f"table {'.'.join(ident)} does not exist")
        new = U.apply_all([parse_update(u, base) for u in body.get("updates") or []], base)
        new_loc, meta = self.fs.commit(ident, loc, new, base)
        return {"metadata-location": new_loc, "metadata": meta.to_json()}


__all__ = ["RestCatalog", "parse_update"]
