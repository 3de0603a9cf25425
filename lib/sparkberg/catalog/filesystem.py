"""The file-system catalog, laid out exactly as Iceberg Java's HadoopCatalog.

``<warehouse>/<ns1>/<ns2>/<table>/metadata/v<N>.metadata.json`` plus ``version-hint.text``
holding N; namespaces are directories. Iceberg Java's ``hadoop`` catalog and this one can share
a warehouse. A commit creates ``v<N+1>.metadata.json`` only if it does not exist (atomic on the
local file system): of two writers racing for a version, one wins and the other gets
:class:`CommitFailedException` with nothing written. On stores without an atomic create-if-absent (object
stores; HDFS through pyarrow, which checks then writes) two writers could both "win", so this catalog commits
nothing there: reading works, and commits go through a SQL or REST catalog.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator

from sparkberg.catalog.base import (
    Identifier, delete_dropped, parse_identifier, parse_namespace, read_metadata, with_metadata_log,
)
from sparkberg.errors import (
    CommitFailedException, NamespaceAlreadyExistsError, NamespaceNotEmptyError, NoSuchNamespaceError,
    NoSuchTableError, NotSupportedError, StorageError, TableAlreadyExistsError, ValidationError,
)
from sparkberg.io.fileio import FileAlreadyExistsError, FileIO, file_io_for
from sparkberg.format.metadata import TableMetadata

if TYPE_CHECKING:  # (names for annotations alone: importing them would import the commit machinery)
    from sparkberg.commit.pending import PendingCommit  # (annotations only)

VERSION_HINT = "version-hint.text"
_VERSION_RE = re.compile(r"^v(\d+)(\.gz)?\.metadata\.json(\.gz)?$")


def _join(*parts: str) -> str:
    out = parts[0].rstrip("/")
    for p in parts[1:]:
        out += "/" + p.strip("/")
    return out


class FileSystemCatalog:
    """HadoopCatalog-compatible catalog over a warehouse directory (local, HDFS or object store)."""

    def __init__(self, warehouse: str, io: FileIO | None = None):
        if not warehouse:
            raise ValidationError("warehouse location cannot be empty")  # (given directly, not by sparkberg.catalog)
        self.warehouse = warehouse.rstrip("/") if warehouse != "/" else warehouse
        self.io = io or file_io_for(self.warehouse)

    # --- locations ---------------------------------------------------------------------------------
    def namespace_location(self, namespace: tuple[str, ...]) -> str:
        return _join(self.warehouse, *namespace)

    def table_location(self, ident: Identifier) -> str:
        return _join(self.warehouse, *ident.namespace, ident.name)

    @staticmethod
    def metadata_dir(table_location: str) -> str:
        return _join(table_location, "metadata")

    def _versions(self, table_location: str) -> dict[int, str]:
        out = {}
        mdir = self.metadata_dir(table_location)
        for name in self.io.list(mdir):
            m = _VERSION_RE.match(name)
            if m:
                out[int(m.group(1))] = _join(mdir, name)
        return out

    def current_version(self, table_location: str) -> tuple[int, str] | None:
        """The newest committed version: the hint, then any newer files a crashed writer left unhinted."""
        mdir = self.metadata_dir(table_location)
        hint = None
        try:
            hint = int(self.io.read(_join(mdir, VERSION_HINT)).decode("utf-8").strip())
        except (FileNotFoundError, ValueError, UnicodeDecodeError, StorageError):
            # (the hint only saves a listing: one being rewritten as it is read, which an object store answers
            # with a range that no longer fits (Azure's 416), is no hint)
            hint = None
        if hint is not None:
            version = hint
            while self._version_location(table_location, version + 1) is not None:
                version += 1
            loc = self._version_location(table_location, version)
            if loc is not None:
                return version, loc
        versions = self._versions(table_location)
        if not versions:
            return None
        v = max(versions)
        return v, versions[v]

    def _version_location(self, table_location: str, version: int) -> str | None:
        mdir = self.metadata_dir(table_location)
        for name in (f"v{version}.metadata.json", f"v{version}.gz.metadata.json", f"v{version}.metadata.json.gz"):
            loc = _join(mdir, name)
            if self.io.exists(loc):
                return loc
        return None

    def is_table(self, location: str) -> bool:
        return bool(self._versions(location))

    # --- namespaces ---------------------------------------------------------------------------------
    def create_namespace(self, namespace, properties: dict[str, str] | None = None) -> None:
        if properties:
            raise NotSupportedError("the file-system catalog keeps no namespace properties")
        ns = parse_namespace(namespace)
        loc = self.namespace_location(ns)
        if self.io.exists(loc):
            raise NamespaceAlreadyExistsError(f"namespace {'.'.join(ns)} already exists")
        self.io.makedirs(loc)

    def namespace_exists(self, namespace) -> bool:
        ns = parse_namespace(namespace)
        loc = self.namespace_location(ns)
        return self.io.exists(loc) and not self.is_table(loc)

    def list_namespaces(self, parent=()) -> list[tuple[str, ...]]:
        ns = parse_namespace(parent) if parent else ()
        base = self.namespace_location(ns) if ns else self.warehouse
        if ns and not self.namespace_exists(ns):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ns)} does not exist")
        out = []
        for name in self.io.list(base):
            if name.startswith(".") or name.startswith("_"):
                continue
            loc = _join(base, name)
            if self._is_dir(loc) and not self.is_table(loc):
                out.append(ns + (name,))
        return out

    def load_namespace_properties(self, namespace) -> dict[str, str]:
        """{}: a namespace here is a directory, which keeps no properties."""
        if not self.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"namespace {'.'.join(parse_namespace(namespace))} does not exist")
        return {}

    def update_namespace_properties(self, namespace, updates: dict[str, str] | None = None,
                                    removals=()) -> None:
        raise NotSupportedError("the file-system catalog keeps no namespace properties")

    def _is_dir(self, location: str) -> bool:
        return self.io.is_dir(location)

    def drop_namespace(self, namespace) -> None:
        ns = parse_namespace(namespace)
        if not self.namespace_exists(ns):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ns)} does not exist")
        if list(self.io.list(self.namespace_location(ns))):
            raise NamespaceNotEmptyError(f"namespace {'.'.join(ns)} is not empty")
        self.io.delete_dir(self.namespace_location(ns))

    # --- tables -------------------------------------------------------------------------------------
    def list_tables(self, namespace) -> list[Identifier]:
        ns = parse_namespace(namespace)
        if not self.namespace_exists(ns):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ns)} does not exist")
        base = self.namespace_location(ns)
        return [Identifier(ns, name) for name in self.io.list(base) if self.is_table(_join(base, name))]

    def table_exists(self, identifier) -> bool:
        return self.is_table(self.table_location(parse_identifier(identifier)))

    def load(self, identifier) -> tuple[Identifier, str, TableMetadata]:
        """(identifier, metadata location, metadata) of the table's current version."""
        ident = parse_identifier(identifier)
        current = self.current_version(self.table_location(ident))
        if current is None:
            raise NoSuchTableError(f"table {ident} does not exist in warehouse {self.warehouse}")
        return ident, current[1], read_metadata(self.io, current[1])

    def create(self, identifier, metadata: TableMetadata) -> tuple[Identifier, str, TableMetadata]:
        """Write version 1 of a new table; fails if the table exists."""
        ident = parse_identifier(identifier)
        self._check_atomic(ident)
        loc = self.table_location(ident)
        if metadata.location.rstrip("/") != loc:
            raise ValidationError("the file-system catalog keeps tables at <warehouse>/<namespace>/<table>; "
                                  f"a custom location ({metadata.location}) is not supported")
        if self.is_table(loc):
            raise TableAlreadyExistsError(f"table {ident} already exists")
        return ident, self._write_version(ident, loc, 1, metadata), metadata

    def default_table_location(self, identifier) -> str:
        return self.table_location(parse_identifier(identifier))

    def register(self, identifier, metadata_location: str) -> tuple[Identifier, str, TableMetadata]:
        raise NotSupportedError("the file-system catalog cannot register tables (as Iceberg's HadoopCatalog)")

    def rename(self, source, target) -> None:
        raise NotSupportedError("the file-system catalog cannot rename tables (as Iceberg's HadoopCatalog)")

    def commit(self, identifier, base_location: str, pending: PendingCommit) -> tuple[str, TableMetadata]:
        """Write ``pending``'s metadata as the version after ``base_location``; CommitFailedException if another
        writer committed first. Returns the new metadata location and the metadata as written."""
        ident = parse_identifier(identifier)
        self._check_atomic(ident)
        loc = self.table_location(ident)
        current = self.current_version(loc)
        if current is None:
            raise NoSuchTableError(f"table {ident} does not exist in warehouse {self.warehouse}")
        version, current_location = current
        if current_location != base_location:
            raise CommitFailedException(f"table {ident} changed: based on {base_location}, current is "
                                        f"{current_location}")
        new, dropped = with_metadata_log(pending.base, base_location, pending.metadata)
        new_location = self._write_version(ident, loc, version + 1, new)
        delete_dropped(self.io, new, dropped)
        return new_location, new

    def _check_atomic(self, ident: Identifier) -> None:
        if not self.io.atomic_create_at(self.warehouse):
            scheme = self.warehouse.split("://", 1)[0] if "://" in self.warehouse else "this store"
            raise NotSupportedError(
                f"cannot commit table {ident} in warehouse {self.warehouse}: {scheme} has no atomic create-if-absent, "
                "so two writers could both win a commit and one would be lost. Keep the tables in a SQL catalog "
                "(sparkberg.catalog(spark, 'sqlite:////path/catalog.db' or 'postgresql://...', "
                f"warehouse='{self.warehouse}')); reading this warehouse works as it is")

    def _write_version(self, ident: Identifier, table_location: str, version: int, metadata: TableMetadata) -> str:
        mdir = self.metadata_dir(table_location)
        target = _join(mdir, f"v{version}.metadata.json")
        try:
            self.io.create(target, metadata.to_json_bytes())
        except FileAlreadyExistsError:
            raise CommitFailedException(f"commit of table {ident} lost the race for version {version}: "
                                        f"{target} already exists") from None
        try:
            self.io.write(_join(mdir, VERSION_HINT), str(version).encode("utf-8"))
        except OSError:
            pass  # the hint is only a shortcut; readers find newer versions without it
        return target

    def drop(self, identifier, purge: bool = False) -> None:
        """Drop a table: remove its metadata (so it is no longer a table); with ``purge`` also every
        file its metadata references and the table directory."""
        ident, location, metadata = self.load(identifier)
        table_loc = self.table_location(ident)
        if purge:
            from sparkberg.catalog.purge import referenced_files  # (manifests are read only to purge)
            for f in referenced_files(self.io, metadata):
                self.io.delete(f)
            self.io.delete_dir(table_loc)
        else:
            self.io.delete_dir(self.metadata_dir(table_loc))

    def tables(self) -> Iterator[Identifier]:
        stack = [()]
        while stack:
            ns = stack.pop()
            if ns:
                yield from self.list_tables(ns)
            stack.extend(self.list_namespaces(ns) if ns else self.list_namespaces())
