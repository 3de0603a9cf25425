"""A Hive Metastore as an Iceberg catalog, as Iceberg Java's ``HiveCatalog`` keeps it.

A namespace is a Hive database (one level); a table is an external Hive table whose parameters name its current
metadata file (``table_type`` ``ICEBERG``, ``metadata_location``, ``previous_metadata_location``) and whose storage
descriptor holds its location and its current schema's columns (Hive type names). A commit follows Java's locking
protocol (``HiveTableOperations`` with ``MetastoreLock``): an exclusive lock on the table is requested and waited
for (``check_lock``, with a heartbeat while it is held), the table is read again and must still name the version
the commit was built on, the next metadata file is written and the table altered to name it, and the lock is
released on every path. Writers of sparkberg and of Iceberg Java's HiveCatalog committing to one table at once
take turns, and a writer that finds the table moved retries as any catalog's (``commit.retry.*``).

The metastore is reached over Thrift (:mod:`sparkberg.catalog.thrift`) at ``uri`` (``thrift://host:port``, several
separated by commas, tried in order). Properties, as Java names them: ``warehouse`` (new tables go to
``<warehouse>/<database>.db/<table>`` unless their database has a location), ``iceberg.hive.lock-timeout-ms``
(how long a commit waits for the lock, default 3 minutes), ``iceberg.hive.lock-check-min-wait-ms`` and
``-max-wait-ms`` (the waits between checks, 50 ms to 5 s), ``iceberg.hive.lock-heartbeat-interval-ms`` (4 minutes),
``hive.metastore.client.socket.timeout`` (seconds a call may take, 60). A metastore that wants SASL (Kerberos:
``hive.metastore.sasl.enabled``) is refused by name: sparkberg does not speak it.
"""
from __future__ import annotations

import getpass
import socket
import threading
import time
from typing import Any, Sequence
from urllib.parse import urlsplit

from sparkberg.catalog.base import (
    Identifier, delete_dropped, metastore_version, parse_identifier, parse_namespace, read_metadata,
    read_view_metadata, with_metadata_log, write_metastore_metadata, write_view_metadata,
)
from sparkberg.catalog.glue import ICEBERG, METADATA_LOCATION, PREVIOUS_METADATA_LOCATION, TABLE_TYPE, hive_type
from sparkberg.catalog.metastore import Column, HivePartition, HiveTable, MetastoreCatalog
from sparkberg.catalog.purge import referenced_files
from sparkberg.catalog.thrift import BOOL, I16, I32, I64, LIST, MAP, STRING, STRUCT, Connection, ThriftError
from sparkberg.commit.pending import PendingCommit
from sparkberg.errors import (
    CatalogDatabaseError, CommitFailedException, CommitStateUnknownException, NamespaceAlreadyExistsError,
    NamespaceNotEmptyError, NoSuchNamespaceError, NoSuchTableError, NoSuchViewError, NotSupportedError,
    TableAlreadyExistsError, ValidationError, ViewAlreadyExistsError,
)
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.views import ViewMetadata
from sparkberg.io.fileio import FileIO

CONNECT_TIMEOUT_S = 5
LOCATION = "location"
# how Iceberg Java's HiveCatalog marks a view: a VIRTUAL_VIEW Hive table of this table_type
ICEBERG_VIEW = "ICEBERG-VIEW"
# Hive's lock protocol (hive_metastore.thrift): an exclusive table lock outside any transaction
_EXCLUSIVE, _TABLE_LEVEL, _NO_TXN = 3, 2, 6
_ACQUIRED, _WAITING = 1, 2
_STATES = {1: "ACQUIRED", 2: "WAITING", 3: "ABORT", 4: "NOT_ACQUIRED"}
# the exceptions each call declares, by the field of its result that carries them
_MESSAGES = {"NoSuchObjectException", "AlreadyExistsException", "MetaException", "InvalidOperationException",
             "InvalidObjectException", "NoSuchLockException", "NoSuchTxnException", "TxnAbortedException",
             "TxnOpenException"}
_DECLARED = {
    "get_database": {1: "NoSuchObjectException", 2: "MetaException"},
    "create_database": {1: "AlreadyExistsException", 2: "InvalidObjectException", 3: "MetaException"},
    "alter_database": {1: "MetaException", 2: "NoSuchObjectException"},
    "drop_database": {1: "NoSuchObjectException", 2: "InvalidOperationException", 3: "MetaException"},
    "get_all_databases": {1: "MetaException"},
    "get_all_tables": {1: "MetaException"},
    "get_table": {1: "MetaException", 2: "NoSuchObjectException"},
    "get_partitions": {1: "NoSuchObjectException", 2: "MetaException"},
    "create_table": {1: "AlreadyExistsException", 2: "InvalidObjectException", 3: "MetaException",
                     4: "NoSuchObjectException"},
    "drop_table": {1: "NoSuchObjectException", 2: "MetaException"},
    "alter_table_with_environment_context": {1: "InvalidOperationException", 2: "MetaException"},
    "lock": {1: "NoSuchTxnException", 2: "TxnAbortedException"},
    "check_lock": {1: "NoSuchTxnException", 2: "TxnAbortedException", 3: "NoSuchLockException"},
    "unlock": {1: "NoSuchLockException", 2: "TxnOpenException"},
    "heartbeat": {1: "NoSuchLockException", 2: "NoSuchTxnException", 3: "TxnAbortedException"},
}


class MetastoreError(Exception):
    """An exception the metastore declared (``kind``: its Thrift name)."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind, self.message = kind, message


class HiveCatalog(MetastoreCatalog):
    """A catalog kept in a Hive Metastore (see the module docstring)."""

    kind = "Hive"

    def __init__(self, name: str, uri: str, warehouse: str | None, io: FileIO,
                 properties: dict[str, str] | None = None):
        props = dict(properties or {})
        if str(props.get("hive.metastore.sasl.enabled", "false")).lower() == "true":
            raise NotSupportedError(f"Hive catalog {name}: hive.metastore.sasl.enabled asks for SASL (Kerberos), which "
                                    "sparkberg does not speak; reach the metastore without it, or through a REST "
                                    "catalog in front of it")
        self.name, self.io = name, io
        self.warehouse = warehouse.rstrip("/") if warehouse else None
        self._addresses = _addresses(uri)
        self._uri = uri
        self._timeout_s = _number(props, "hive.metastore.client.socket.timeout", 60)
        self._lock_timeout_s = _number(props, "iceberg.hive.lock-timeout-ms", 180_000) / 1000
        self._check_min_s = _number(props, "iceberg.hive.lock-check-min-wait-ms", 50) / 1000
        self._check_max_s = _number(props, "iceberg.hive.lock-check-max-wait-ms", 5_000) / 1000
        self._heartbeat_s = _number(props, "iceberg.hive.lock-heartbeat-interval-ms", 240_000) / 1000
        self._conn: Connection | None = None
        self._guard = threading.Lock()  # (one call at a time on the connection)

    def __repr__(self) -> str:
        return f"HiveCatalog({self.name!r}, {self._uri})"

    # --- calls ----------------------------------------------------------------------------------------
    def _connect(self) -> Connection:
        errors = []
        for host, port in self._addresses:
            try:
                return Connection(host, port, CONNECT_TIMEOUT_S if self._timeout_s > CONNECT_TIMEOUT_S
                                  else self._timeout_s)
            except OSError as e:
                errors.append(f"{host}:{port}: {e}")
        raise CatalogDatabaseError(f"Hive catalog {self.name}: no metastore answers at {self._uri} "
                                   f"({'; '.join(errors)})")

    def _call(self, method: str, args: list) -> Any:
        """One call (reconnecting once when the connection broke): its return value; a declared exception raises
        :class:`MetastoreError`, anything else a named :class:`~sparkberg.errors.CatalogDatabaseError`."""
        with self._guard:
            for attempt in (0, 1):
                if self._conn is None:
                    self._conn = self._connect()
                    self._conn.sock.settimeout(self._timeout_s)
                try:
                    result = self._conn.call(method, args)
                    break
                except (OSError, ConnectionError) as e:
                    self._conn.close()
                    self._conn = None
                    if attempt:
                        raise CatalogDatabaseError(
                            f"Hive catalog {self.name}: {method} at {self._uri} failed: {e} (a metastore that "
                            "wants SASL or a framed transport closes the connection so)") from None
                except ThriftError as e:
                    raise CatalogDatabaseError(f"Hive catalog {self.name}: {e}") from None
        for field_id, kind in _DECLARED.get(method, {}).items():
            if field_id in result:
                raise MetastoreError(kind, str(result[field_id].get(1, "")))
        return result.get(0)

    # --- namespaces -----------------------------------------------------------------------------------
    def create_namespace(self, namespace, properties: dict[str, str] | None = None) -> None:
        name = self._database(namespace)
        props = {k: str(v) for k, v in (properties or {}).items()}
        location = props.pop(LOCATION, None) or (f"{self.warehouse}/{name}.db" if self.warehouse else None)
        comment = props.pop("comment", None)
        try:
            self._call("create_database", [(1, STRUCT, _database_struct(name, comment, location, props))])
        except MetastoreError as e:
            if e.kind == "AlreadyExistsException":
                raise NamespaceAlreadyExistsError(f"namespace {name} already exists") from None
            raise CatalogDatabaseError(f"Hive catalog {self.name}: cannot create namespace {name}: {e}") from None

    def _get_database(self, namespace) -> dict:
        name = self._database(namespace)
        try:
            return self._call("get_database", [(1, STRING, name)])
        except MetastoreError as e:
            if e.kind == "NoSuchObjectException":
                raise NoSuchNamespaceError(f"namespace {name} does not exist") from None
            raise CatalogDatabaseError(f"Hive catalog {self.name}: {e}") from None

    def list_namespaces(self, parent=()) -> list[tuple[str, ...]]:
        if parent and parse_namespace(parent):
            self._get_database(parent)
            return []  # (Hive's databases have no children)
        return sorted((d,) for d in self._call("get_all_databases", []) or [])

    def load_namespace_properties(self, namespace) -> dict[str, str]:
        database = self._get_database(namespace)
        props = dict(database.get(4) or {})
        if database.get(3):
            props[LOCATION] = database[3]
        if database.get(2):
            props["comment"] = database[2]
        return props

    def update_namespace_properties(self, namespace, updates: dict[str, str] | None = None,
                                    removals: Sequence[str] = ()) -> None:
        """Set ``updates`` and remove ``removals`` (one metastore call)."""
        name = self._database(namespace)
        props = self._updated_properties(name, updates, removals)
        location, comment = props.pop(LOCATION, None), props.pop("comment", None)
        self._call("alter_database", [(1, STRING, name), (2, STRUCT, _database_struct(name, comment, location, props))])

    def drop_namespace(self, namespace) -> None:
        name = self._database(namespace)
        self._get_database(name)
        if self._call("get_all_tables", [(1, STRING, name)]):
            raise NamespaceNotEmptyError(f"namespace {name} is not empty")
        try:
            self._call("drop_database", [(1, STRING, name), (2, BOOL, False), (3, BOOL, False)])
        except MetastoreError as e:
            raise CatalogDatabaseError(f"Hive catalog {self.name}: cannot drop namespace {name}: {e}") from None

    # --- tables ---------------------------------------------------------------------------------------
    def list_tables(self, namespace) -> list[Identifier]:
        name = self._database(namespace)
        self._get_database(name)
        out = []
        for table in sorted(self._call("get_all_tables", [(1, STRING, name)]) or []):
            try:
                if _is_iceberg(self._call("get_table", [(1, STRING, name), (2, STRING, table)])):
                    out.append(Identifier((name,), table))
            except MetastoreError:
                continue  # (dropped meanwhile)
        return out

    def _get_table(self, ident: Identifier) -> dict:
        try:
            table = self._call("get_table", [(1, STRING, self._database(ident.namespace)), (2, STRING, ident.name)])
        except MetastoreError as e:
            if e.kind == "NoSuchObjectException":
                raise NoSuchTableError(f"table {ident} does not exist in catalog {self.name}") from None
            raise CatalogDatabaseError(f"Hive catalog {self.name}: {e}") from None
        if not _is_iceberg(table):
            raise NoSuchTableError(f"Hive table {ident} is not an Iceberg table (table_type "
                                   f"{(table.get(9) or {}).get(TABLE_TYPE)!r})")
        return table

    @staticmethod
    def _database_location(database: dict) -> str | None:
        """The database's own location (None when it has none)."""
        return database.get(3) or None

    def load(self, identifier) -> tuple[Identifier, str, TableMetadata]:
        """(identifier, metadata location, metadata) of the table's current version."""
        ident = parse_identifier(identifier)
        location = self._get_table(ident)[9][METADATA_LOCATION]
        return ident, location, read_metadata(self.io, location)

    def create(self, identifier, metadata: TableMetadata) -> tuple[Identifier, str, TableMetadata]:
        """Write the first metadata file of a new table and create its Hive table; fails if the table exists (the
        file is then deleted)."""
        ident = parse_identifier(identifier)
        self._get_database(ident.namespace)
        location = write_metastore_metadata(self.io, metadata, 0)
        self._create_entry(ident, _table_struct(ident, metadata, location, None, {}), location, "create table",
                           lambda: TableAlreadyExistsError(f"table {ident} already exists"))
        return ident, location, metadata

    def _create_entry(self, ident: Identifier, struct: list, written: str | None, what: str,
                      exists: Any) -> None:
        """Create the Hive table ``struct`` (a table's or a view's); on any failure the metadata file ``written``
        for it is deleted, and a name that is taken raises ``exists()``."""
        try:
            self._call("create_table", [(1, STRUCT, struct)])
        except MetastoreError as e:
            if written is not None:
                self.io.delete(written)
            if e.kind == "AlreadyExistsException":
                raise exists() from None
            raise CatalogDatabaseError(f"Hive catalog {self.name}: cannot {what} {ident}: {e}") from None
        except BaseException:
            if written is not None:
                self.io.delete(written)
            raise

    def register(self, identifier, metadata_location: str) -> tuple[Identifier, str, TableMetadata]:
        """Add a table whose metadata file exists already (written by any engine)."""
        ident = parse_identifier(identifier)
        self._get_database(ident.namespace)
        metadata = read_metadata(self.io, metadata_location)
        self._create_entry(ident, _table_struct(ident, metadata, metadata_location, None, {}), None,
                           "register table", lambda: TableAlreadyExistsError(f"table {ident} already exists"))
        return ident, metadata_location, metadata

    def commit(self, identifier, base_location: str, pending: PendingCommit) -> tuple[str, TableMetadata]:
        """Swap in ``pending``'s metadata as the version after ``base_location``, under the table's exclusive lock
        (see the module docstring)."""
        ident = parse_identifier(identifier)
        database = self._database(ident.namespace)
        with self._locked(database, ident):
            table = self._get_table(ident)
            params = dict(table.get(9) or {})
            current = params.get(METADATA_LOCATION)
            if current != base_location:
                raise CommitFailedException(f"table {ident} changed: based on {base_location}, current is {current}")
            new, dropped = with_metadata_log(pending.base, base_location, pending.metadata)
            location = write_metastore_metadata(self.io, new, metastore_version(base_location) + 1)
            altered = _table_struct(ident, new, location, base_location, params, table)
            # (as Java: statistics left alone; and the parameter the table must still hold, which a metastore of
            # Hive 4 checks in the same transaction)
            context = [(1, MAP, (STRING, STRING, {"DO_NOT_UPDATE_STATS": "true",
                                                  "expected_parameter_key": METADATA_LOCATION,
                                                  "expected_parameter_value": base_location}))]
            try:
                self._call("alter_table_with_environment_context",
                           [(1, STRING, database), (2, STRING, ident.name), (3, STRUCT, altered), (4, STRUCT, context)])
            except MetastoreError as e:
                self.io.delete(location)
                raise CommitFailedException(f"commit of table {ident} refused by the metastore: {e}") from None
            except CatalogDatabaseError as e:  # (the call may have landed: the table tells)
                try:
                    landed = (self._get_table(ident).get(9) or {}).get(METADATA_LOCATION) == location
                except Exception:  # noqa: BLE001 - the metastore unreachable still: unknown
                    raise CommitStateUnknownException(f"commit of table {ident} may or may not have landed ({e}); "
                                                      f"its new metadata file {location} is kept") from None
                if not landed:
                    self.io.delete(location)
                    raise CommitFailedException(f"commit of table {ident} failed: {e}") from None
        delete_dropped(self.io, new, dropped)
        return location, new

    # --- plain Hive tables (what migrate, snapshot and add_files import) ---------------------------------
    def _plain_table(self, ident: Identifier) -> dict:
        try:
            table = self._call("get_table", [(1, STRING, self._database(ident.namespace)), (2, STRING, ident.name)])
        except MetastoreError as e:
            if e.kind == "NoSuchObjectException":
                raise NoSuchTableError(f"table {ident} does not exist in catalog {self.name}") from None
            raise CatalogDatabaseError(f"Hive catalog {self.name}: {e}") from None
        if _is_iceberg(table):
            raise ValidationError(f"table {ident} is an Iceberg table already")
        if str(table.get(12) or "").upper() == "VIRTUAL_VIEW":
            raise ValidationError(f"{ident} is a Hive view, not a table")
        return table

    def hive_table(self, identifier) -> HiveTable:
        """The plain (not Iceberg) Hive table ``identifier`` names; a named error for an Iceberg table or a view."""
        ident = parse_identifier(identifier)
        table = self._plain_table(ident)
        sd = table.get(7) or {}
        serde = sd.get(7) or {}
        params = dict(table.get(9) or {})
        storage = " ".join(str(x) for x in (sd.get(3), serde.get(2), params.get("spark.sql.sources.provider"))
                           if x).lower()
        return HiveTable(ident, tuple(_columns(sd.get(1))), tuple(_columns(table.get(8))), sd.get(2) or "",
                         storage, params, str(table.get(12) or "").upper() == "MANAGED_TABLE")

    def hive_partitions(self, identifier) -> list[HivePartition]:
        """Every partition of the plain Hive table ``identifier``: its values and its location."""
        ident = parse_identifier(identifier)
        keys = [c.name for c in _columns(self._plain_table(ident).get(8))]
        try:
            parts = self._call("get_partitions", [(1, STRING, self._database(ident.namespace)),
                                                  (2, STRING, ident.name), (3, I16, -1)]) or []
        except MetastoreError as e:
            raise CatalogDatabaseError(f"Hive catalog {self.name}: cannot list the partitions of {ident}: {e}") \
                from None
        return [HivePartition(dict(zip(keys, p.get(1) or [])), (p.get(6) or {}).get(2) or "") for p in parts]

    def move_hive_table(self, source, target, external: bool) -> None:
        """Rename the plain Hive table ``source`` (with its partitions) to ``target``, its files left where they
        are, and make it external (its drop keeps the files) or managed. A managed table is made external first,
        as the metastore moves the directory of a managed table it renames."""
        src, dst = parse_identifier(source), parse_identifier(target)
        table = self._plain_table(src)
        self._get_database(dst.namespace)
        managed = str(table.get(12) or "").upper() == "MANAGED_TABLE"
        if managed:
            self._alter_plain(src, src, table, True)
            table = self._plain_table(src)
        try:
            self._alter_plain(src, dst, table, True)
        except MetastoreError as e:
            if managed:  # (as it was)
                self._alter_plain(src, src, table, False)
            if e.kind in ("AlreadyExistsException", "InvalidOperationException") and self._exists(dst):
                raise TableAlreadyExistsError(f"table {dst} already exists") from None
            raise CatalogDatabaseError(f"Hive catalog {self.name}: cannot rename {src} to {dst}: {e}") from None
        if not external:
            self._alter_plain(dst, dst, self._plain_table(dst), False)

    def _exists(self, ident: Identifier) -> bool:
        try:
            self._call("get_table", [(1, STRING, self._database(ident.namespace)), (2, STRING, ident.name)])
            return True
        except MetastoreError:
            return False

    def _alter_plain(self, src: Identifier, dst: Identifier, table: dict, external: bool) -> None:
        params = dict(table.get(9) or {})
        if external:
            params["EXTERNAL"] = "TRUE"
        else:
            params.pop("EXTERNAL", None)
        altered = [f for f in _resend(table, _TABLE) if f[0] not in (1, 2, 9, 12)] + [
            (1, STRING, dst.name), (2, STRING, dst.namespace[0]), (9, MAP, (STRING, STRING, params)),
            (12, STRING, "EXTERNAL_TABLE" if external else "MANAGED_TABLE")]
        self._call("alter_table_with_environment_context",
                   [(1, STRING, self._database(src.namespace)), (2, STRING, src.name),
                    (3, STRUCT, sorted(altered, key=lambda f: f[0])),
                    (4, STRUCT, [(1, MAP, (STRING, STRING, {"DO_NOT_UPDATE_STATS": "true"}))])])

    def drop_hive_table(self, identifier) -> None:
        """Drop the plain Hive table ``identifier`` from the metastore, never its files."""
        ident = parse_identifier(identifier)
        self._plain_table(ident)
        try:
            self._call("drop_table", [(1, STRING, self._database(ident.namespace)), (2, STRING, ident.name),
                                      (3, BOOL, False)])
        except MetastoreError as e:
            raise CatalogDatabaseError(f"Hive catalog {self.name}: cannot drop {ident}: {e}") from None

    # --- views (as Iceberg Java's HiveViewOperations keeps them) ------------------------------------------
    def _hive_view(self, ident: Identifier) -> dict | None:
        try:
            table = self._call("get_table", [(1, STRING, self._database(ident.namespace)), (2, STRING, ident.name)])
        except MetastoreError as e:
            if e.kind == "NoSuchObjectException":
                return None
            raise CatalogDatabaseError(f"Hive catalog {self.name}: {e}") from None
        return table if _is_view(table) else None

    def view_exists(self, identifier) -> bool:
        return self._hive_view(parse_identifier(identifier)) is not None

    def list_views(self, namespace) -> list[Identifier]:
        name = self._database(namespace)
        self._get_database(name)
        out = []
        for table in sorted(self._call("get_all_tables", [(1, STRING, name)]) or []):
            if self._hive_view(Identifier((name,), table)) is not None:
                out.append(Identifier((name,), table))
        return out

    def load_view(self, identifier) -> tuple[Identifier, str, ViewMetadata]:
        """(identifier, metadata location, metadata) of the view's current version."""
        ident = parse_identifier(identifier)
        table = self._hive_view(ident)
        if table is None:
            raise NoSuchViewError(f"view {ident} does not exist in catalog {self.name}")
        location = table[9][METADATA_LOCATION]
        return ident, location, read_view_metadata(self.io, location)

    def create_view(self, identifier, metadata: ViewMetadata) -> tuple[Identifier, str, ViewMetadata]:
        """Write the first metadata file of a new view and create its Hive view; a name a table or a view holds
        is an error (the file is then deleted)."""
        ident = parse_identifier(identifier)
        self._get_database(ident.namespace)
        location = write_view_metadata(self.io, metadata, 0)
        self._create_entry(ident, _view_struct(ident, metadata, location, None, {}), location, "create view",
                           lambda: ViewAlreadyExistsError(f"view {ident} cannot be created: "
                                                          f"{'a view' if self.view_exists(ident) else 'a table'} "
                                                          "of that name exists"))
        return ident, location, metadata

    def commit_view(self, identifier, base_location: str, metadata: ViewMetadata,
                    base: ViewMetadata | None = None) -> tuple[str, ViewMetadata]:
        """Swap in ``metadata`` as the view's version after ``base_location``, under the view's exclusive lock
        (a table's commit protocol)."""
        ident = parse_identifier(identifier)
        database = self._database(ident.namespace)
        with self._locked(database, ident):
            table = self._hive_view(ident)
            if table is None:
                raise NoSuchViewError(f"view {ident} does not exist in catalog {self.name}")
            params = dict(table.get(9) or {})
            if params.get(METADATA_LOCATION) != base_location:
                raise CommitFailedException(f"view {ident} changed: based on {base_location}, current is "
                                            f"{params.get(METADATA_LOCATION)}")
            location = write_view_metadata(self.io, metadata, metastore_version(base_location) + 1)
            _, _, base = self.load_view(ident)
            removed = {k: None for k in base.properties if k not in metadata.properties}
            altered = _view_struct(ident, metadata, location, base_location,
                                   {k: v for k, v in params.items() if k not in removed}, table)
            try:
                self._call("alter_table_with_environment_context",
                           [(1, STRING, database), (2, STRING, ident.name), (3, STRUCT, altered),
                            (4, STRUCT, [(1, MAP, (STRING, STRING, {"DO_NOT_UPDATE_STATS": "true"}))])])
            except MetastoreError as e:
                self.io.delete(location)
                raise CommitFailedException(f"commit of view {ident} refused by the metastore: {e}") from None
        return location, metadata

    def rename_view(self, source, target) -> None:
        """Rename a view (the metastore alters it)."""
        src, dst = parse_identifier(source), parse_identifier(target)
        table = self._hive_view(src)
        if table is None:
            raise NoSuchViewError(f"view {src} does not exist in catalog {self.name}")
        self._get_database(dst.namespace)
        if self._exists(dst):
            raise ViewAlreadyExistsError(f"view {src} cannot be renamed to {dst}: that name is taken")
        renamed = [f for f in _resend(table, _TABLE) if f[0] not in (1, 2)] + [
            (1, STRING, dst.name), (2, STRING, dst.namespace[0])]
        try:
            self._call("alter_table_with_environment_context",
                       [(1, STRING, self._database(src.namespace)), (2, STRING, src.name),
                        (3, STRUCT, sorted(renamed, key=lambda f: f[0])),
                        (4, STRUCT, [(1, MAP, (STRING, STRING, {"DO_NOT_UPDATE_STATS": "true"}))])])
        except MetastoreError as e:
            raise CatalogDatabaseError(f"Hive catalog {self.name}: cannot rename {src} to {dst}: {e}") from None

    def drop_view(self, identifier) -> None:
        """Drop the view and its current metadata file (as Java's ``dropViewMetadata``)."""
        ident, location, _ = self.load_view(identifier)
        try:
            self._call("drop_table", [(1, STRING, self._database(ident.namespace)), (2, STRING, ident.name),
                                      (3, BOOL, False)])
        except MetastoreError as e:
            raise CatalogDatabaseError(f"Hive catalog {self.name}: cannot drop view {ident}: {e}") from None
        self.io.delete(location)

    def _locked(self, database: str, ident: Identifier) -> "_TableLock":
        return _TableLock(self, database, ident)

    def rename(self, source, target) -> None:
        """Rename a table (the metastore alters it; its files stay where they are)."""
        src, dst = parse_identifier(source), parse_identifier(target)
        table = self._get_table(src)
        self._get_database(dst.namespace)
        if self.table_exists(dst):
            raise TableAlreadyExistsError(f"table {dst} already exists")
        renamed = _table_struct(dst, None, None, None, dict(table.get(9) or {}), table)
        try:
            self._call("alter_table_with_environment_context",
                       [(1, STRING, self._database(src.namespace)), (2, STRING, src.name), (3, STRUCT, renamed),
                        (4, STRUCT, [(1, MAP, (STRING, STRING, {"DO_NOT_UPDATE_STATS": "true"}))])])
        except MetastoreError as e:
            raise CatalogDatabaseError(f"Hive catalog {self.name}: cannot rename {src} to {dst}: {e}") from None

    def drop(self, identifier, purge: bool = False) -> None:
        """Drop the Hive table (never its data: it is external); with ``purge`` also every file its metadata
        references."""
        ident, location, metadata = self.load(identifier)
        try:
            self._call("drop_table", [(1, STRING, self._database(ident.namespace)), (2, STRING, ident.name),
                                      (3, BOOL, False)])
        except MetastoreError as e:
            if e.kind == "NoSuchObjectException":
                raise NoSuchTableError(f"table {ident} does not exist in catalog {self.name}") from None
            raise CatalogDatabaseError(f"Hive catalog {self.name}: cannot drop {ident}: {e}") from None
        if purge:
            for f in referenced_files(self.io, metadata):
                self.io.delete(f)
            self.io.delete(location)


class _TableLock:
    """An exclusive lock on one table for a commit (Java's ``MetastoreLock``): requested, waited for with
    ``check_lock`` up to the lock timeout, kept alive by a heartbeat while held, released on every path."""

    def __init__(self, catalog: HiveCatalog, database: str, ident: Identifier):
        self.catalog, self.database, self.ident = catalog, database, ident
        self.lock_id: int | None = None
        self._stop = threading.Event()

    def __enter__(self) -> "_TableLock":
        c = self.catalog
        component = [(1, I32, _EXCLUSIVE), (2, I32, _TABLE_LEVEL), (3, STRING, self.database),
                     (4, STRING, self.ident.name), (6, I32, _NO_TXN)]
        request = [(1, LIST, (STRUCT, [component])), (3, STRING, _user()), (4, STRING, socket.gethostname()),
                   (5, STRING, "sparkberg")]
        try:
            response = c._call("lock", [(1, STRUCT, request)])
        except MetastoreError as e:
            raise CommitFailedException(f"cannot lock table {self.ident}: {e}") from None
        self.lock_id, state = response[1], response[2]
        deadline = time.monotonic() + c._lock_timeout_s
        wait = c._check_min_s
        try:
            while state == _WAITING:
                if time.monotonic() > deadline:
                    raise CommitFailedException(f"could not lock table {self.ident} within "
                                                f"{c._lock_timeout_s:.0f} s (iceberg.hive.lock-timeout-ms): another "
                                                "writer holds it")
                time.sleep(wait)
                wait = min(wait * 2, c._check_max_s)
                state = c._call("check_lock", [(1, STRUCT, [(1, I64, self.lock_id)])])[2]
            if state != _ACQUIRED:
                raise CommitFailedException(f"could not lock table {self.ident}: the metastore answered "
                                            f"{_STATES.get(state, state)}")
        except BaseException:
            self._release()
            raise
        threading.Thread(target=self._beat, name="sparkberg-hive-lock-heartbeat", daemon=True).start()
        return self

    def _beat(self) -> None:
        while not self._stop.wait(self.catalog._heartbeat_s):
            try:
                self.catalog._call("heartbeat", [(1, STRUCT, [(1, I64, self.lock_id)])])
            except Exception:  # noqa: BLE001 - a missed beat: the commit's own calls tell whether the lock held
                return

    def _release(self) -> None:
        self._stop.set()
        if self.lock_id is not None:
            try:
                self.catalog._call("unlock", [(1, STRUCT, [(1, I64, self.lock_id)])])
            except Exception:  # noqa: BLE001 - released by the metastore's timeout if not here
                pass
            self.lock_id = None

    def __exit__(self, *exc) -> None:
        self._release()


def _addresses(uri: str) -> list[tuple[str, int]]:
    out = []
    for part in (uri or "").split(","):
        parsed = urlsplit(part.strip())
        if parsed.scheme != "thrift" or not parsed.hostname:
            raise ValidationError(f"a Hive catalog's uri is thrift://host:port (several separated by commas), got "
                                  f"{uri!r}")
        out.append((parsed.hostname, parsed.port or 9083))
    return out


def _number(props: dict[str, str], key: str, default: float) -> float:
    raw = props.get(key)
    if raw is None:
        return default
    try:
        value = float(str(raw).rstrip("s"))
    except ValueError:
        raise ValidationError(f"catalog property {key} must be a number, got {raw!r}") from None
    if value <= 0:
        raise ValidationError(f"catalog property {key} must be positive, got {raw!r}")
    return value


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in this environment
        return "sparkberg"


def _columns(fields: list | None) -> list[Column]:
    return [Column(f.get(1) or "", f.get(2) or "", f.get(3)) for f in fields or []]


def _is_iceberg(table: dict) -> bool:
    return str((table.get(9) or {}).get(TABLE_TYPE, "")).upper() == ICEBERG


def _is_view(table: dict) -> bool:
    return str((table.get(9) or {}).get(TABLE_TYPE, "")).upper() == ICEBERG_VIEW


def _view_struct(ident: Identifier, metadata: ViewMetadata, location: str, previous: str | None,
                 params: dict[str, str], table: dict | None = None) -> list:
    """An Iceberg view as Iceberg Java's ``HiveViewOperations`` keeps it: a ``VIRTUAL_VIEW`` Hive table whose
    parameters hold the view's properties, its uuid and metadata file (and the one before), its storage
    descriptor the view's location and schema's columns."""
    table = table or {}
    params = {**params, **{k: v for k, v in metadata.properties.items() if k.lower() != "owner"},
              "uuid": metadata.view_uuid, TABLE_TYPE: ICEBERG_VIEW, METADATA_LOCATION: location}
    if previous is not None:
        params[PREVIOUS_METADATA_LOCATION] = previous
    columns = [[(1, STRING, f.name), (2, STRING, hive_type(f.field_type)), (3, STRING, f.doc)]
               for f in metadata.schema().fields]
    serde = [(2, STRING, "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"), (3, MAP, (STRING, STRING, {}))]
    sd = [(1, LIST, (STRUCT, columns)), (2, STRING, metadata.location),
          (3, STRING, "org.apache.hadoop.mapred.FileInputFormat"),
          (4, STRING, "org.apache.hadoop.mapred.FileOutputFormat"), (5, BOOL, False), (6, I32, 0),
          (7, STRUCT, serde), (8, LIST, (STRING, [])), (9, LIST, (STRUCT, [])), (10, MAP, (STRING, STRING, {}))]
    now = int(time.time())
    return [(1, STRING, ident.name), (2, STRING, ident.namespace[0]), (3, STRING, table.get(3) or _user()),
            (4, I32, table.get(4) or now), (5, I32, now), (6, I32, 0), (7, STRUCT, sd),
            (8, LIST, (STRUCT, [])), (9, MAP, (STRING, STRING, params)), (12, STRING, "VIRTUAL_VIEW")]


def _database_struct(name: str, comment: str | None, location: str | None, params: dict[str, str]) -> list:
    return [(1, STRING, name), (2, STRING, comment), (3, STRING, location), (4, MAP, (STRING, STRING, params))]


def _table_struct(ident: Identifier, metadata: TableMetadata | None, location: str | None, previous: str | None,
                  params: dict[str, str], table: dict | None = None) -> list:
    """A Hive table as Iceberg Java's ``HiveTableOperations`` writes it: external, its parameters naming the
    metadata file (and the one before), its storage descriptor the location and the current schema's columns;
    ``table``: the metastore's (its owner and creation time kept; a rename keeps its storage descriptor)."""
    table = table or {}
    params = {**params, TABLE_TYPE: ICEBERG, "EXTERNAL": "TRUE"}
    if location is not None:
        params[METADATA_LOCATION] = location
    if previous is not None:
        params[PREVIOUS_METADATA_LOCATION] = previous
    if metadata is not None:
        columns = [[(1, STRING, f.name), (2, STRING, hive_type(f.field_type)), (3, STRING, f.doc)]
                   for f in metadata.current_schema.fields]
        serde = [(2, STRING, "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"), (3, MAP, (STRING, STRING, {}))]
        sd = [(1, LIST, (STRUCT, columns)), (2, STRING, metadata.location),
              (3, STRING, "org.apache.hadoop.mapred.FileInputFormat"),
              (4, STRING, "org.apache.hadoop.mapred.FileOutputFormat"), (5, BOOL, False), (6, I32, 0),
              (7, STRUCT, serde), (8, LIST, (STRING, [])), (9, LIST, (STRUCT, [])), (10, MAP, (STRING, STRING, {}))]
        if metadata.properties.get("comment"):
            params["comment"] = metadata.properties["comment"]
    else:
        sd = _resend(table.get(7), _SD)
    now = int(time.time())
    return [(1, STRING, ident.name), (2, STRING, ident.namespace[0]), (3, STRING, table.get(3) or _user()),
            (4, I32, table.get(4) or now), (5, I32, now), (6, I32, 0), (7, STRUCT, sd),
            (8, LIST, (STRUCT, [])), (9, MAP, (STRING, STRING, params)), (12, STRING, "EXTERNAL_TABLE")]


# the storage descriptor's fields a rename sends back as the metastore gave them (their Thrift types)
_FIELD = {1: STRING, 2: STRING, 3: STRING}
_SERDE = {1: STRING, 2: STRING, 3: (MAP, STRING, STRING)}
_SD = {1: (LIST, _FIELD), 2: STRING, 3: STRING, 4: STRING, 5: BOOL, 6: I32, 7: _SERDE, 8: (LIST, STRING),
       9: (LIST, {1: STRING, 2: I32}), 10: (MAP, STRING, STRING), 12: BOOL}
# a plain table's fields as the metastore gave them, sent back by a rename
_TABLE = {1: STRING, 2: STRING, 3: STRING, 4: I32, 5: I32, 6: I32, 7: _SD, 8: (LIST, _FIELD), 9: (MAP, STRING, STRING),
          10: STRING, 11: STRING, 12: STRING}


def _resend(value: dict | None, schema: dict) -> list:
    """A struct the metastore sent (``{field id: value}``), typed again for sending by ``schema`` (fields it does
    not name are left out)."""
    out = []
    for field_id, ftype in schema.items():
        if value is None or field_id not in value:
            continue
        v = value[field_id]
        if isinstance(ftype, dict):
            out.append((field_id, STRUCT, _resend(v, ftype)))
        elif isinstance(ftype, tuple) and ftype[0] == LIST:
            element = ftype[1]
            items = [_resend(x, element) for x in v] if isinstance(element, dict) else list(v)
            out.append((field_id, LIST, (STRUCT if isinstance(element, dict) else element, items)))
        elif isinstance(ftype, tuple) and ftype[0] == MAP:
            out.append((field_id, MAP, (ftype[1], ftype[2], dict(v))))
        else:
            out.append((field_id, ftype, v))
    return out


__all__ = ["HiveCatalog", "MetastoreError"]
