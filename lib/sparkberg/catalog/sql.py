"""The SQL catalog: tables and namespaces kept in a database, laid out as Iceberg Java's ``JdbcCatalog`` and
PyIceberg's ``SqlCatalog`` lay them out, so one database serves all three.

- ``iceberg_tables``: one row per table (``catalog_name``, ``table_namespace`` as its levels joined by ``.``,
  ``table_name``), with ``metadata_location``, ``previous_metadata_location`` and, in Java's current schema
  (created here when the database has no catalog tables), ``iceberg_type`` = ``TABLE`` (null, as older
  writers and PyIceberg leave it, is a table too); a view is a row of ``iceberg_type`` = ``VIEW``, as Java's
  ``JdbcCatalog`` keeps it (its name is then not a table's: one row per name).
- ``iceberg_namespace_properties``: one row per namespace property; a namespace created here holds
  ``exists`` = ``true`` besides its properties, as Java writes it (PyIceberg writes it only for a namespace
  created without properties). A namespace exists while it has a property row or a table.

A commit writes the new metadata file (``<location>/metadata/<NNNNN>-<uuid>.metadata.json``, Java's naming),
then swaps it in with one compare-and-swap: the row is updated only while its ``metadata_location`` is the one
the commit started from. No row updated: another writer committed first, the new file is deleted and
:class:`~sparkberg.errors.CommitFailedException` is raised (the table retries per ``commit.retry.*``). An
error after the update was sent (a connection lost) leaves the outcome unknown:
:class:`~sparkberg.errors.CommitStateUnknownException`, and the file is kept. Every statement is parameterized.

Databases: SQLite through the standard library (``sqlite:///path``, ``jdbc:sqlite:path``), with a busy
timeout so that writers of several processes queue, and PostgreSQL through psycopg (``postgresql://...``,
``jdbc:postgresql://...``; ``pip install sparkberg[postgres]``).
"""
from __future__ import annotations

import contextlib
import os
import re
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence
from urllib.parse import unquote

from sparkberg import redact
from sparkberg.catalog.base import (
    Identifier, delete_dropped, metastore_version, parse_identifier, parse_namespace, read_metadata,
    read_view_metadata, with_metadata_log, write_metastore_metadata, write_view_metadata,
)
from sparkberg.errors import (
    CatalogDatabaseError, CommitFailedException, CommitStateUnknownException, NamespaceAlreadyExistsError,
    NamespaceNotEmptyError, NoSuchNamespaceError, NoSuchTableError, NoSuchViewError, NotSupportedError,
    SparkbergError, TableAlreadyExistsError, ValidationError, ViewAlreadyExistsError,
)
from sparkberg.io.fileio import FileIO, file_io_for
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.views import ViewMetadata

if TYPE_CHECKING:  # (names for annotations alone: importing them would import the commit machinery)
    from sparkberg.commit.pending import PendingCommit  # (annotations only)

TABLES = "iceberg_tables"
NAMESPACE_PROPERTIES = "iceberg_namespace_properties"
TABLE_TYPE = "TABLE"
VIEW_TYPE = "VIEW"
EXISTS_PROPERTY = "exists"
SQLITE_BUSY_TIMEOUT_S = 60.0
_CREATE_TABLES = (f"CREATE TABLE {TABLES} (catalog_name VARCHAR(255) NOT NULL, table_namespace VARCHAR(255) NOT "
                  "NULL, table_name VARCHAR(255) NOT NULL, metadata_location VARCHAR(1000), "
                  "previous_metadata_location VARCHAR(1000), iceberg_type VARCHAR(5), "
                  "PRIMARY KEY (catalog_name, table_namespace, table_name))")
_CREATE_NAMESPACE_PROPERTIES = (f"CREATE TABLE {NAMESPACE_PROPERTIES} (catalog_name VARCHAR(255) NOT NULL, "
                                "namespace VARCHAR(255) NOT NULL, property_key VARCHAR(255), "
                                "property_value VARCHAR(1000), PRIMARY KEY (catalog_name, namespace, property_key))")


class Database:
    """A catalog database: statements run with ``?`` placeholders, each call on a connection of its own."""

    def __init__(self, description: str, connect: Callable[[], Any], placeholder: str, errors: tuple,
                 integrity_errors: tuple, immediate: str | None, uri: str):
        self.description = description
        self.uri = uri  # (what opens it again, in another process: a SQLite file by its absolute path)
        self._connect = connect
        self._placeholder = placeholder
        self._errors = errors
        self._integrity = integrity_errors
        self._immediate = immediate  # what starts a write transaction that holds the write lock at once

    def _sql(self, sql: str) -> str:
        return sql if self._placeholder == "?" else sql.replace("?", self._placeholder)

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:
        """A connection in autocommit mode, closed after the block."""
        try:
            conn = self._connect()
        except self._errors as e:
            raise CatalogDatabaseError(redact.text(f"cannot open the catalog database {self.description}: {e}")) \
                from None
        try:
            yield conn
        finally:
            conn.close()

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """The rows of a SELECT."""
        with self.connection() as conn:
            try:
                cur = conn.execute(self._sql(sql), tuple(params))
                return [tuple(r) for r in cur.fetchall()]
            except self._errors as e:
                raise CatalogDatabaseError(redact.text(f"catalog database {self.description}: {e}")) from None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; the rows it changed. A key already taken raises :class:`KeyError`."""
        return self.transaction([(sql, params)])[0]

    def transaction(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[int]:
        """Run statements in one transaction; the rows each changed."""
        with self.connection() as conn:
            try:
                if self._immediate:
                    conn.execute(self._immediate)
                else:
                    conn.execute("BEGIN")
                counts = [conn.execute(self._sql(sql), tuple(params)).rowcount for sql, params in statements]
                conn.execute("COMMIT")
                return counts
            except self._integrity as e:
                _rollback(conn)
                raise KeyError(str(e)) from None
            except self._errors as e:
                _rollback(conn)
                raise CatalogDatabaseError(redact.text(f"catalog database {self.description}: {e}")) from None


def _rollback(conn: Any) -> None:
    try:
        conn.execute("ROLLBACK")
    except Exception:  # noqa: BLE001 - nothing to roll back (the statement that failed ended it)
        pass


def sqlite_database(path: str) -> Database:
    """A SQLite database file (created when missing); writers of several processes wait for each other."""
    import sqlite3

    def connect():
        conn = sqlite3.connect(path, timeout=SQLITE_BUSY_TIMEOUT_S, isolation_level=None,
                               check_same_thread=False)
        return conn
    return Database(f"sqlite:{path}", connect, "?", (sqlite3.Error,), (sqlite3.IntegrityError,), "BEGIN IMMEDIATE",
                    f"jdbc:sqlite:{os.path.abspath(path)}")


def postgresql_database(conninfo: str, user: str | None = None, password: str | None = None) -> Database:
    """A PostgreSQL database through psycopg (the ``postgres`` extra)."""
    try:
        import psycopg
    except ImportError:
        raise SparkbergError("the PostgreSQL catalog needs psycopg: pip install 'sparkberg[postgres]'") from None
    kwargs = {k: v for k, v in (("user", user), ("password", password)) if v is not None}
    shown = redact.uri(conninfo)

    def connect():
        return psycopg.connect(conninfo, autocommit=True, connect_timeout=10, **kwargs)
    return Database(f"postgresql:{shown}", connect, "%s", (psycopg.Error,), (psycopg.errors.UniqueViolation,),
                    None, f"jdbc:{conninfo}")


def database_for(uri: str, properties: dict[str, str]) -> Database:
    """The database a catalog URI names: ``sqlite:///path``, ``jdbc:sqlite:path``, ``postgresql://...`` or
    ``jdbc:postgresql://...`` (``jdbc.user`` / ``jdbc.password`` in ``properties``, as Java's JdbcCatalog)."""
    if uri.startswith("jdbc:sqlite:"):
        path = uri[len("jdbc:sqlite:"):]
        path = path[len("file:"):] if path.startswith("file:") else path
        return sqlite_database(path.split("?", 1)[0])
    if uri.startswith("sqlite:"):
        # as SQLAlchemy (PyIceberg's SqlCatalog) reads them: sqlite:///relative/path.db, sqlite:////absolute/path.db
        if not uri.startswith("sqlite:///") or len(uri) == len("sqlite:///"):
            raise ValidationError(f"SQLite catalog URI {uri!r} names no database file (sqlite:////abs/path.db)")
        return sqlite_database(unquote(uri[len("sqlite:///"):].split("?", 1)[0]))
    if uri.startswith(("jdbc:postgresql:", "postgresql:", "postgres:")):
        conninfo = uri[len("jdbc:"):] if uri.startswith("jdbc:") else uri
        if conninfo.startswith("postgres:"):
            conninfo = "postgresql:" + conninfo[len("postgres:"):]
        return postgresql_database(conninfo, properties.get("jdbc.user") or properties.get("user"),
                                   properties.get("jdbc.password") or properties.get("password"))
    raise ValidationError(f"not a SQL catalog URI: {uri!r} (sqlite:///path, jdbc:sqlite:path, postgresql://..., "
                          "jdbc:postgresql://...)")


class SqlCatalog:
    """A catalog whose tables and namespaces are rows of a database (see the module docstring)."""

    def __init__(self, name: str, db: Database, warehouse: str | None, io: FileIO | None = None):
        self.name = name
        self.db = db
        # (None: a catalog opened to read, list and commit to existing tables; new tables need a warehouse)
        self.warehouse = None if not warehouse else warehouse.rstrip("/") if warehouse != "/" else warehouse
        self.io = io or file_io_for(self.warehouse or "file:///")
        self._ensure_tables()

    def __repr__(self) -> str:
        return f"SqlCatalog({self.name!r}, {self.db.description})"

    def _ensure_tables(self) -> None:
        """Create the catalog's tables when the database has none (another process may at the same time)."""
        for create in (_CREATE_TABLES, _CREATE_NAMESPACE_PROPERTIES):
            table = create.split()[2]
            try:
                self.db.query(f"SELECT 1 FROM {table} WHERE 1 = 0")
                continue
            except CatalogDatabaseError:
                pass
            try:
                self.db.execute(create)
            except (CatalogDatabaseError, KeyError):
                self.db.query(f"SELECT 1 FROM {table} WHERE 1 = 0")  # (created by another process meanwhile)
        self._typed = self._has_type_column()

    def _has_type_column(self) -> bool:
        try:
            self.db.query(f"SELECT iceberg_type FROM {TABLES} WHERE 1 = 0")
            return True
        except CatalogDatabaseError:
            return False

    def _tables_only(self) -> str:
        return " AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)" if self._typed else ""

    # --- namespaces --------------------------------------------------------------------------------
    def create_namespace(self, namespace, properties: dict[str, str] | None = None) -> None:
        ns = parse_namespace(namespace)
        if self.namespace_exists(ns):
            raise NamespaceAlreadyExistsError(f"namespace {'.'.join(ns)} already exists")
        props = {**(properties or {}), EXISTS_PROPERTY: "true"}
        try:
            self.db.transaction([(f"INSERT INTO {NAMESPACE_PROPERTIES} (catalog_name, namespace, property_key, "
                                  "property_value) VALUES (?, ?, ?, ?)", (self.name, ".".join(ns), k, str(v)))
                                 for k, v in props.items()])
        except KeyError:
            raise NamespaceAlreadyExistsError(f"namespace {'.'.join(ns)} already exists") from None

    def namespace_exists(self, namespace) -> bool:
        ns = ".".join(parse_namespace(namespace))
        like = _like_prefix(ns)
        for table, column in ((NAMESPACE_PROPERTIES, "namespace"), (TABLES, "table_namespace")):
            if self.db.query(f"SELECT 1 FROM {table} WHERE catalog_name = ? AND ({column} = ? OR {column} LIKE ? "
                             "ESCAPE '!') LIMIT 1", (self.name, ns, like)):
                return True
        return False

    def list_namespaces(self, parent=()) -> list[tuple[str, ...]]:
        prefix = parse_namespace(parent) if parent else ()
        names = {r[0] for r in self.db.query(f"SELECT DISTINCT namespace FROM {NAMESPACE_PROPERTIES} "
                                             "WHERE catalog_name = ?", (self.name,))}
        names |= {r[0] for r in self.db.query(f"SELECT DISTINCT table_namespace FROM {TABLES} WHERE catalog_name = ?",
                                              (self.name,))}
        out = set()
        for name in names:
            levels = tuple(name.split("."))
            if len(levels) > len(prefix) and levels[:len(prefix)] == prefix:
                out.add(levels[:len(prefix) + 1])
        return sorted(out)

    def load_namespace_properties(self, namespace) -> dict[str, str]:
        ns = parse_namespace(namespace)
        if not self.namespace_exists(ns):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ns)} does not exist")
        rows = self.db.query(f"SELECT property_key, property_value FROM {NAMESPACE_PROPERTIES} "
                             "WHERE catalog_name = ? AND namespace = ?", (self.name, ".".join(ns)))
        return {k: v for k, v in rows if k is not None}

    def update_namespace_properties(self, namespace, updates: dict[str, str] | None = None,
                                    removals: Sequence[str] = ()) -> None:
        """Set ``updates`` and remove ``removals`` (one transaction)."""
        ns = parse_namespace(namespace)
        name = ".".join(ns)
        updates = dict(updates or {})
        overlap = set(updates) & set(removals)
        if overlap:
            raise ValidationError(f"properties both set and removed: {sorted(overlap)}")
        current = self.load_namespace_properties(ns)
        statements: list[tuple[str, Sequence[Any]]] = []
        for key in removals:
            statements.append((f"DELETE FROM {NAMESPACE_PROPERTIES} WHERE catalog_name = ? AND namespace = ? AND "
                               "property_key = ?", (self.name, name, key)))
        for key, value in updates.items():
            if key in current:
                statements.append((f"UPDATE {NAMESPACE_PROPERTIES} SET property_value = ? WHERE catalog_name = ? "
                                   "AND namespace = ? AND property_key = ?", (str(value), self.name, name, key)))
            else:
                statements.append((f"INSERT INTO {NAMESPACE_PROPERTIES} (catalog_name, namespace, property_key, "
                                   "property_value) VALUES (?, ?, ?, ?)", (self.name, name, key, str(value))))
        if statements:
            self.db.transaction(statements)

    def drop_namespace(self, namespace) -> None:
        ns = parse_namespace(namespace)
        if not self.namespace_exists(ns):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ns)} does not exist")
        if self.list_tables(ns) or self.list_namespaces(ns):
            raise NamespaceNotEmptyError(f"namespace {'.'.join(ns)} is not empty")
        self.db.execute(f"DELETE FROM {NAMESPACE_PROPERTIES} WHERE catalog_name = ? AND namespace = ?",
                        (self.name, ".".join(ns)))

    # --- tables --------------------------------------------------------------------------------------
    def list_tables(self, namespace) -> list[Identifier]:
        ns = parse_namespace(namespace)
        if not self.namespace_exists(ns):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ns)} does not exist")
        rows = self.db.query(f"SELECT table_name FROM {TABLES} WHERE catalog_name = ? AND table_namespace = ?"
                             + self._tables_only(), (self.name, ".".join(ns)))
        return [Identifier(ns, r[0]) for r in sorted(rows)]

    def tables(self) -> Iterator[Identifier]:
        rows = self.db.query(f"SELECT table_namespace, table_name FROM {TABLES} WHERE catalog_name = ?"
                             + self._tables_only(), (self.name,))
        for ns, name in sorted(rows):
            yield Identifier(tuple(ns.split(".")), name)

    def _location_of(self, ident: Identifier) -> str | None:
        rows = self.db.query(f"SELECT metadata_location FROM {TABLES} WHERE catalog_name = ? AND table_namespace = ? "
                             "AND table_name = ?" + self._tables_only(), (self.name, ".".join(ident.namespace),
                                                                         ident.name))
        return rows[0][0] if rows else None

    def table_exists(self, identifier) -> bool:
        return self._location_of(parse_identifier(identifier)) is not None

    def default_table_location(self, identifier) -> str:
        ident = parse_identifier(identifier)
        if self.warehouse is None:
            raise ValidationError(f"SQL catalog {self.name!r} was opened without a warehouse, where new tables go: "
                                  f"give warehouse=... (--warehouse on the command line), or a location for "
                                  f"{ident}")
        return "/".join([self.warehouse, *ident.namespace, ident.name])

    def load(self, identifier) -> tuple[Identifier, str, TableMetadata]:
        """(identifier, metadata location, metadata) of the table's current version."""
        ident = parse_identifier(identifier)
        location = self._location_of(ident)
        if location is None:
            raise NoSuchTableError(f"table {ident} does not exist in catalog {self.name}")
        return ident, location, read_metadata(self.io, location)

    def create(self, identifier, metadata: TableMetadata) -> tuple[Identifier, str, TableMetadata]:
        """Write the first metadata file of a new table and add its row; fails if the table exists (the file
        is then deleted)."""
        ident = parse_identifier(identifier)
        if self.table_exists(ident):
            raise TableAlreadyExistsError(f"table {ident} already exists")
        location = write_metastore_metadata(self.io, metadata, 0)
        try:
            self._insert(ident, location)
        except BaseException:
            self.io.delete(location)
            raise
        return ident, location, metadata

    def _insert(self, ident: Identifier, metadata_location: str, kind: str = TABLE_TYPE) -> None:
        columns, values = "catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location", \
            [self.name, ".".join(ident.namespace), ident.name, metadata_location, None]
        if self._typed:
            columns += ", iceberg_type"
            values.append(kind)
        try:
            self.db.execute(f"INSERT INTO {TABLES} ({columns}) VALUES ({', '.join('?' * len(values))})", values)
        except KeyError:
            taken = "a view" if self._view_location(ident) is not None else "a table"
            error = TableAlreadyExistsError if kind == TABLE_TYPE else ViewAlreadyExistsError
            raise error(f"{'table' if kind == TABLE_TYPE else 'view'} {ident} cannot be created: {taken} of that "
                        "name exists") from None

    def register(self, identifier, metadata_location: str) -> tuple[Identifier, str, TableMetadata]:
        """Add a table whose metadata file exists already (written by any engine)."""
        ident = parse_identifier(identifier)
        metadata = read_metadata(self.io, metadata_location)
        if self.table_exists(ident):
            raise TableAlreadyExistsError(f"table {ident} already exists")
        self._insert(ident, metadata_location)
        return ident, metadata_location, metadata

    def commit(self, identifier, base_location: str, pending: PendingCommit) -> tuple[str, TableMetadata]:
        """Swap in ``pending``'s metadata as the version after ``base_location`` (compare-and-swap on the row);
        returns the new metadata location and the metadata as written."""
        ident = parse_identifier(identifier)
        new, dropped = with_metadata_log(pending.base, base_location, pending.metadata)
        location = write_metastore_metadata(self.io, new, metastore_version(base_location) + 1)
        try:
            changed = self.db.execute(
                f"UPDATE {TABLES} SET metadata_location = ?, previous_metadata_location = ? WHERE catalog_name = ? "
                "AND table_namespace = ? AND table_name = ? AND metadata_location = ?" + self._tables_only(),
                (location, base_location, self.name, ".".join(ident.namespace), ident.name, base_location))
        except CatalogDatabaseError as e:
            try:  # (the row tells whether the swap landed)
                landed = self._location_of(ident) == location
            except CatalogDatabaseError:
                raise CommitStateUnknownException(f"commit of table {ident} may or may not have landed ({e}); "
                                                  f"its new metadata file {location} is kept") from None
            if not landed:
                self.io.delete(location)
                raise CommitFailedException(f"commit of table {ident} failed: {e}") from None
            changed = 1
        if changed != 1:
            self.io.delete(location)
            current = self._location_of(ident)
            if current is None:
                raise NoSuchTableError(f"table {ident} does not exist in catalog {self.name}")
            raise CommitFailedException(f"table {ident} changed: based on {base_location}, current is {current}")
        delete_dropped(self.io, new, dropped)
        return location, new

    def rename(self, source, target) -> None:
        """Rename a table (its files stay where they are)."""
        src, dst = parse_identifier(source), parse_identifier(target)
        if not self.namespace_exists(dst.namespace):
            raise NoSuchNamespaceError(f"namespace {'.'.join(dst.namespace)} does not exist")
        if self.table_exists(dst):
            raise TableAlreadyExistsError(f"table {dst} already exists")
        try:
            changed = self.db.execute(
                f"UPDATE {TABLES} SET table_namespace = ?, table_name = ? WHERE catalog_name = ? AND "
                "table_namespace = ? AND table_name = ?" + self._tables_only(),
                (".".join(dst.namespace), dst.name, self.name, ".".join(src.namespace), src.name))
        except KeyError:
            raise TableAlreadyExistsError(f"table {dst} already exists") from None
        if changed != 1:
            raise NoSuchTableError(f"table {src} does not exist in catalog {self.name}")

    def drop(self, identifier, purge: bool = False) -> None:
        """Remove the table's row; with ``purge`` also every file its metadata references."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.catalog.purge import referenced_files
        ident, location, metadata = self.load(identifier)
        changed = self.db.execute(f"DELETE FROM {TABLES} WHERE catalog_name = ? AND table_namespace = ? AND "
                                  "table_name = ?" + self._tables_only(),
                                  (self.name, ".".join(ident.namespace), ident.name))
        if changed != 1:
            raise NoSuchTableError(f"table {ident} does not exist in catalog {self.name}")
        if purge:
            for f in referenced_files(self.io, metadata):
                self.io.delete(f)
            self.io.delete(location)


    # --- views (Java's JdbcCatalog with its V1 schema) -------------------------------------------------------
    def _views(self) -> str:
        """The condition on ``iceberg_type`` that selects views; a database without the column keeps none."""
        if not self._typed:
            raise NotSupportedError(f"SQL catalog {self.name}: its {TABLES} table has no iceberg_type column (Iceberg "
                                    "Java's V0 schema), so it keeps no views; a catalog created by sparkberg or by "
                                    "Java with jdbc.schema-version=V1 does")
        return f" AND iceberg_type = '{VIEW_TYPE}'"

    def _view_location(self, ident: Identifier) -> str | None:
        if not self._typed:
            return None
        rows = self.db.query(f"SELECT metadata_location FROM {TABLES} WHERE catalog_name = ? AND table_namespace = ? "
                             "AND table_name = ?" + self._views(), (self.name, ".".join(ident.namespace), ident.name))
        return rows[0][0] if rows else None

    def view_exists(self, identifier) -> bool:
        return self._view_location(parse_identifier(identifier)) is not None

    def list_views(self, namespace) -> list[Identifier]:
        ns = parse_namespace(namespace)
        if not self.namespace_exists(ns):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ns)} does not exist")
        rows = self.db.query(f"SELECT table_name FROM {TABLES} WHERE catalog_name = ? AND table_namespace = ?"
                             + self._views(), (self.name, ".".join(ns)))
        return [Identifier(ns, r[0]) for r in sorted(rows)]

    def load_view(self, identifier) -> tuple[Identifier, str, ViewMetadata]:
        """(identifier, metadata location, metadata) of the view's current version."""
        ident = parse_identifier(identifier)
        location = self._view_location(ident)
        if location is None:
            raise NoSuchViewError(f"view {ident} does not exist in catalog {self.name}")
        return ident, location, read_view_metadata(self.io, location)

    def create_view(self, identifier, metadata: ViewMetadata) -> tuple[Identifier, str, ViewMetadata]:
        """Write the first metadata file of a new view and add its row; a name a table or a view holds is an
        error (the file is then deleted)."""
        ident = parse_identifier(identifier)
        self._views()
        if not self.namespace_exists(ident.namespace):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ident.namespace)} does not exist")
        if self.table_exists(ident) or self.view_exists(ident):
            taken = "a table" if self.table_exists(ident) else "a view"
            raise ViewAlreadyExistsError(f"view {ident} cannot be created: {taken} of that name exists")
        location = write_view_metadata(self.io, metadata, 0)
        try:
            self._insert(ident, location, VIEW_TYPE)
        except BaseException:
            self.io.delete(location)
            raise
        return ident, location, metadata

    def commit_view(self, identifier, base_location: str, metadata: ViewMetadata,
                    base: ViewMetadata | None = None) -> tuple[str, ViewMetadata]:
        """Swap in ``metadata`` as the view's version after ``base_location`` (compare-and-swap on its row, as a
        table's commit); CommitFailedException when another commit came first."""
        ident = parse_identifier(identifier)
        location = write_view_metadata(self.io, metadata, metastore_version(base_location) + 1)
        changed = self.db.execute(
            f"UPDATE {TABLES} SET metadata_location = ?, previous_metadata_location = ? WHERE catalog_name = ? "
            "AND table_namespace = ? AND table_name = ? AND metadata_location = ?" + self._views(),
            (location, base_location, self.name, ".".join(ident.namespace), ident.name, base_location))
        if changed != 1:
            self.io.delete(location)
            current = self._view_location(ident)
            if current is None:
                raise NoSuchViewError(f"view {ident} does not exist in catalog {self.name}")
            raise CommitFailedException(f"view {ident} changed: based on {base_location}, current is {current}")
        return location, metadata

    def rename_view(self, source, target) -> None:
        """Rename a view (its files stay where they are)."""
        src, dst = parse_identifier(source), parse_identifier(target)
        if not self.namespace_exists(dst.namespace):
            raise NoSuchNamespaceError(f"namespace {'.'.join(dst.namespace)} does not exist")
        if self.table_exists(dst) or self.view_exists(dst):
            raise ViewAlreadyExistsError(f"view {src} cannot be renamed to {dst}: "
                                         f"{'a table' if self.table_exists(dst) else 'a view'} of that name exists")
        changed = self.db.execute(
            f"UPDATE {TABLES} SET table_namespace = ?, table_name = ? WHERE catalog_name = ? AND "
            "table_namespace = ? AND table_name = ?" + self._views(),
            (".".join(dst.namespace), dst.name, self.name, ".".join(src.namespace), src.name))
        if changed != 1:
            raise NoSuchViewError(f"view {src} does not exist in catalog {self.name}")

    def drop_view(self, identifier) -> None:
        """Remove the view's row and its current metadata file (as Java's ``dropViewMetadata``; a view has no
        data)."""
        ident = parse_identifier(identifier)
        location = self._view_location(ident)
        changed = self.db.execute(f"DELETE FROM {TABLES} WHERE catalog_name = ? AND table_namespace = ? AND "
                                  "table_name = ?" + self._views(), (self.name, ".".join(ident.namespace), ident.name))
        if changed != 1:
            raise NoSuchViewError(f"view {ident} does not exist in catalog {self.name}")
        if location is not None:
            self.io.delete(location)


def _like_prefix(namespace: str) -> str:
    """A LIKE pattern for the namespaces below ``namespace`` (``!`` escapes the pattern characters)."""
    return re.sub(r"([!%_])", r"!\1", namespace) + ".%"

