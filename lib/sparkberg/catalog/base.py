"""What every catalog shares: identifiers, reading a metadata file, preparing the next version, and the protocol
each backend (file system, SQL, REST) gives :class:`sparkberg.table.Catalog`."""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Iterable, Iterator, Protocol, Sequence

from sparkberg.errors import InvalidIdentifierError, InvalidMetadataError, NoSuchTableError, NoSuchViewError
from sparkberg.identifiers import split_dotted
from sparkberg.io.fileio import FileIO
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.properties import DELETE_AFTER_COMMIT, boolean
from sparkberg.format.snapshots import MetadataLogEntry
from sparkberg.format.views import ViewMetadata

if TYPE_CHECKING:  # (a catalog is opened, and a table loaded, without the commit machinery)
    from sparkberg.commit.pending import PendingCommit  # (annotations only)

PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
PREVIOUS_VERSIONS_MAX_DEFAULT = 100
_BAD_PART = re.compile(r"[/\\\x00]")


class CatalogBackend(Protocol):
    """A catalog's storage of namespaces and tables. A call a backend cannot serve (the file-system catalog keeps
    no namespace properties, renames and registers no table) raises a named error that says so."""

    warehouse: str
    io: FileIO

    def create_namespace(self, namespace, properties: dict[str, str] | None = None) -> None: ...
    def namespace_exists(self, namespace) -> bool: ...
    def list_namespaces(self, parent=()) -> list[tuple[str, ...]]: ...
    def load_namespace_properties(self, namespace) -> dict[str, str]: ...
    def update_namespace_properties(self, namespace, updates: dict[str, str] | None = None,
                                    removals: Sequence[str] = ()) -> None: ...
    def drop_namespace(self, namespace) -> None: ...
    def list_tables(self, namespace) -> list["Identifier"]: ...
    def tables(self) -> Iterator["Identifier"]: ...
    def table_exists(self, identifier) -> bool: ...
    def default_table_location(self, identifier) -> str: ...

    def load(self, identifier) -> tuple["Identifier", str, TableMetadata]:
        """(identifier, metadata location, metadata) of the table's current version."""

    def create(self, identifier, metadata: TableMetadata) -> tuple["Identifier", str, TableMetadata]:
        """Write the first version of a new table (an error if it exists)."""

    def register(self, identifier, metadata_location: str) -> tuple["Identifier", str, TableMetadata]:
        """Add an existing table by its metadata file."""

    def commit(self, identifier, base_location: str, pending: PendingCommit) -> tuple[str, TableMetadata]:
        """Commit ``pending`` (built on the version at ``base_location``) atomically: (the new version's location,
        its metadata as stored), or CommitFailedException when another commit came first."""

    def rename(self, source, target) -> None: ...
    def drop(self, identifier, purge: bool = False) -> None: ...


@dataclass(frozen=True)
class Identifier:
    """A table or namespace identifier: namespace levels and a name."""

    namespace: tuple[str, ...]
    name: str

    def __str__(self) -> str:
        return ".".join(self.namespace + (self.name,))


def check_part(part: str, what: str, full: str) -> str:
    """Reject identifier parts that are empty or could escape the warehouse directory."""
    if not isinstance(part, str) or part.strip() == "" or part in (".", "..") or _BAD_PART.search(part):
        raise InvalidIdentifierError(f"invalid {what} {part!r} in identifier {full!r}: parts must be non-empty "
                                     f"and may not be '.', '..' or contain '/', '\\' or NUL")
    return part


def parse_namespace(namespace: str | Iterable[str]) -> tuple[str, ...]:
    """A namespace from ``"a.b"`` (backquotes as SQL's: :mod:`sparkberg.identifiers`) or ``("a", "b")``, each
    level checked."""
    full = namespace if isinstance(namespace, str) else ".".join(namespace)
    parts = tuple(split_dotted(namespace)) if isinstance(namespace, str) else tuple(namespace)
    if not parts:
        raise InvalidIdentifierError("empty namespace")
    return tuple(check_part(p, "namespace level", full) for p in parts)


def parse_identifier(identifier: "str | Iterable[str] | Identifier") -> Identifier:
    """A table identifier from ``"db.events"`` (backquotes as SQL's: :mod:`sparkberg.identifiers`) or
    ``("db", "events")``; needs a namespace."""
    if isinstance(identifier, Identifier):
        return identifier
    full = identifier if isinstance(identifier, str) else ".".join(identifier)
    parts = tuple(split_dotted(identifier)) if isinstance(identifier, str) else tuple(identifier)
    if len(parts) < 2:
        raise InvalidIdentifierError(f"table identifier {full!r} needs a namespace, like 'db.table'")
    for p in parts:
        check_part(p, "identifier part", full)
    return Identifier(parts[:-1], parts[-1])


def read_metadata(io: FileIO, location: str) -> TableMetadata:
    """Read and parse one metadata file; errors name the file."""
    try:
        data = io.read(location)
    except FileNotFoundError:
        raise NoSuchTableError(f"metadata file does not exist: {location}") from None
    return TableMetadata.from_bytes(data, location)


def with_metadata_log(base: TableMetadata | None, base_location: str | None, new: TableMetadata
                      ) -> tuple[TableMetadata, list[str]]:
    """``new`` with the previous metadata file appended to its metadata log, trimmed to
    ``write.metadata.previous-versions-max``; also returns the files that fell off the log."""
    if base is None or base_location is None:
        return new, []
    try:
        keep = int(new.properties.get(PREVIOUS_VERSIONS_MAX, PREVIOUS_VERSIONS_MAX_DEFAULT))
    except ValueError:
        raise InvalidMetadataError(f"table property {PREVIOUS_VERSIONS_MAX} must be an integer") from None
    log = list(new.metadata_log) + [MetadataLogEntry(base.last_updated_ms, base_location)]
    dropped = []
    if len(log) > max(keep, 1):
        cut = len(log) - max(keep, 1)
        dropped = [e.metadata_file for e in log[:cut]]
        log = log[cut:]
    return replace(new, metadata_log=tuple(log)), dropped


def delete_dropped(io: FileIO, metadata: TableMetadata, dropped: Iterable[str]) -> None:
    """Delete the metadata files that fell off the metadata log of a committed ``metadata``, when its
    ``write.metadata.delete-after-commit.enabled`` says so."""
    if boolean(metadata.properties, DELETE_AFTER_COMMIT):
        for old in dropped:
            io.delete(old)


_METASTORE_VERSION = re.compile(r"^(\d+)-")


def write_metastore_metadata(io: FileIO, metadata: TableMetadata, version: int) -> str:
    """Write ``metadata`` as a metastore catalog's version ``version`` (SQL, Glue: Iceberg Java's
    ``<location>/metadata/<version, 5 digits>-<uuid>.metadata.json``), never over another file; its location."""
    location = f"{metadata.location.rstrip('/')}/metadata/{version:05d}-{uuid.uuid4()}.metadata.json"
    io.create(location, metadata.to_json_bytes())
    return location


def write_view_metadata(io: FileIO, metadata: ViewMetadata, version: int) -> str:
    """Write a view's metadata as catalog version ``version`` (Iceberg Java's
    ``<location>/metadata/<version, 5 digits>-<uuid>.gz.metadata.json``), never over another file; its location."""
    location = f"{metadata.location.rstrip('/')}/metadata/{metadata.file_name(version)}"
    io.create(location, metadata.to_json_bytes())
    return location


def read_view_metadata(io: FileIO, location: str) -> ViewMetadata:
    """Read and parse a view's metadata file; errors name the file."""
    try:
        data = io.read(location)
    except FileNotFoundError:
        raise NoSuchViewError(f"view metadata file does not exist: {location}") from None
    return ViewMetadata.from_bytes(data, location)


def metastore_version(metadata_location: str) -> int:
    """The version in a metastore-style metadata file name (``00003-<uuid>.metadata.json``); -1 if none."""
    m = _METASTORE_VERSION.match(metadata_location.rsplit("/", 1)[-1])
    return int(m.group(1)) if m else -1
