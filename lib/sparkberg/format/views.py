"""Iceberg view metadata (the view spec, format version 1), read and written as Iceberg Java's
``ViewMetadataParser`` does, and changed as its ``ViewMetadata.Builder`` changes it.

A view's metadata file holds the view's uuid, its location, its schemas, its versions (each: an id, when it was
made, the id of its schema, a summary naming the engine, its representations, the default catalog and
namespace its SQL resolves names in) with the current one named, a log of which version was current when, and
its properties. A representation of type ``sql`` holds a query and its SQL dialect; one of another type is kept as
read. :func:`replaced` makes the next metadata from a new version: an equal schema and an equal version (all but
id and time) are reused, new ones take the highest id plus one; versions beyond ``version.history.num-entries``
(10) are dropped, the oldest first, never the current one, and the log forgets what came before a dropped
version. Metadata files are ``<location>/metadata/<version, 5 digits>-<uuid>.gz.metadata.json``, gzip-compressed
unless ``write.metadata.compression-codec`` says ``none``.
"""
from __future__ import annotations

import gzip
import json
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from sparkberg.errors import InvalidMetadataError, UnsupportedFormatVersionError, ValidationError
from sparkberg.format.types import Schema

FORMAT_VERSION = 1
HISTORY_SIZE = "version.history.num-entries"
HISTORY_SIZE_DEFAULT = 10
COMPRESSION = "write.metadata.compression-codec"
COMPRESSION_DEFAULT = "gzip"
SQL = "sql"


@dataclass(frozen=True)
class Representation:
    """One representation of a view version: ``type`` ``sql`` with its ``sql`` and ``dialect``; another type's
    object kept whole (``raw``), as the spec asks readers to keep what they do not know."""

    type: str
    sql: str | None = None
    dialect: str | None = None
    raw: tuple = ()

    def to_json(self) -> dict:
        if self.type != SQL:
            return dict(self.raw)
        return {"type": SQL, "sql": self.sql, "dialect": self.dialect}

    @staticmethod
    def from_json(obj: Any, path: str) -> "Representation":
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            raise ValidationError(f"{path}: a representation is an object with a 'type'")
        if obj["type"].lower() != SQL:
            return Representation(obj["type"], raw=tuple(sorted(obj.items())))
        if not isinstance(obj.get("sql"), str) or not isinstance(obj.get("dialect"), str):
            raise ValidationError(f"{path}: a sql representation needs 'sql' and 'dialect' strings")
        return Representation(SQL, obj["sql"], obj["dialect"])


@dataclass(frozen=True)
class ViewVersion:
    """A version of a view (see the module docstring)."""

    version_id: int
    timestamp_ms: int
    schema_id: int
    summary: dict[str, str]
    representations: tuple[Representation, ...]
    default_namespace: tuple[str, ...]
    default_catalog: str | None = None

    def sql(self, dialect: str) -> str | None:
        """The query of ``dialect`` (case-insensitive), None when the version has none."""
        return next((r.sql for r in self.representations if r.type == SQL and r.dialect.lower() == dialect.lower()),
                    None)

    @property
    def dialects(self) -> list[str]:
        return [r.dialect for r in self.representations if r.type == SQL]

    def same_as(self, other: "ViewVersion") -> bool:
        """Whether the two versions behave the same (all but their ids and times equal)."""
        return (self.summary, self.representations, self.default_catalog, self.default_namespace,
                self.schema_id) == (other.summary, other.representations, other.default_catalog,
                                    other.default_namespace, other.schema_id)

    def to_json(self) -> dict:
        out: dict[str, Any] = {"version-id": self.version_id, "timestamp-ms": self.timestamp_ms,
                               "schema-id": self.schema_id, "summary": dict(self.summary)}
        if self.default_catalog is not None:
            out["default-catalog"] = self.default_catalog
        out["default-namespace"] = list(self.default_namespace)
        out["representations"] = [r.to_json() for r in self.representations]
        return out

    @staticmethod
    def from_json(obj: Any, path: str) -> "ViewVersion":
        if not isinstance(obj, dict):
            raise ValidationError(f"{path}: a view version is an object")
        reps = obj.get("representations")
        if not isinstance(reps, list):
            raise ValidationError(f"{path}: 'representations' must be a list")
        namespace = obj.get("default-namespace")
        if not isinstance(namespace, list) or not all(isinstance(n, str) for n in namespace):
            raise ValidationError(f"{path}: 'default-namespace' must be a list of strings")
        summary = obj.get("summary")
        if not isinstance(summary, dict):
            raise ValidationError(f"{path}: 'summary' must be an object")
        version = ViewVersion(int(obj["version-id"]), int(obj["timestamp-ms"]), int(obj["schema-id"]),
                              {str(k): str(v) for k, v in summary.items()},
                              tuple(Representation.from_json(r, f"{path}.representations[{i}]")
                                    for i, r in enumerate(reps)),
                              tuple(namespace), obj.get("default-catalog"))
        _check_dialects(version, path)
        return version


def _check_dialects(version: ViewVersion, path: str) -> None:
    seen: set[str] = set()
    for d in version.dialects:
        if d.lower() in seen:
            raise ValidationError(f"{path}: view version {version.version_id} has two queries for dialect {d!r}")
        seen.add(d.lower())


@dataclass(frozen=True)
class ViewHistoryEntry:
    """When a version became the view's current one."""

    timestamp_ms: int
    version_id: int


@dataclass(frozen=True)
class ViewMetadata:
    """A view's metadata (see the module docstring)."""

    view_uuid: str
    location: str
    schemas: tuple[Schema, ...]
    current_version_id: int
    versions: tuple[ViewVersion, ...]
    version_log: tuple[ViewHistoryEntry, ...]
    properties: dict[str, str] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION

    @property
    def current_version(self) -> ViewVersion:
        return self.version(self.current_version_id)

    def version(self, version_id: int) -> ViewVersion:
        found = next((v for v in self.versions if v.version_id == version_id), None)
        if found is None:
            raise ValidationError(f"view {self.location} has no version {version_id}")
        return found

    def schema(self, schema_id: int | None = None) -> Schema:
        """The schema of ``schema_id``, by default the current version's."""
        sid = self.current_version.schema_id if schema_id is None else schema_id
        found = next((s for s in self.schemas if s.schema_id == sid), None)
        if found is None:
            raise ValidationError(f"view {self.location} has no schema {sid}")
        return found

    def to_json(self) -> dict:
        out: dict[str, Any] = {"view-uuid": self.view_uuid, "format-version": self.format_version,
                               "location": self.location}
        if self.properties:
            out["properties"] = dict(self.properties)
        out["schemas"] = [s.to_json() for s in self.schemas]
        out["current-version-id"] = self.current_version_id
        out["versions"] = [v.to_json() for v in self.versions]
        out["version-log"] = [{"timestamp-ms": e.timestamp_ms, "version-id": e.version_id}
                              for e in self.version_log]
        return out

    def to_json_bytes(self) -> bytes:
        """The metadata file's bytes: compact JSON, gzip-compressed unless the view's properties say ``none``."""
        data = json.dumps(self.to_json(), separators=(",", ":")).encode("utf-8")
        return gzip.compress(data, mtime=0) if self.compressed else data

    @property
    def compressed(self) -> bool:
        codec = self.properties.get(COMPRESSION, COMPRESSION_DEFAULT).lower()
        if codec not in ("gzip", "none"):
            raise ValidationError(f"view property {COMPRESSION} must be gzip or none, got {codec!r}")
        return codec == "gzip"

    def file_name(self, version: int) -> str:
        """The name of the metadata file of catalog version ``version`` (Java's: ``00001-<uuid>.gz.metadata.json``)."""
        return f"{version:05d}-{uuid.uuid4()}{'.gz' if self.compressed else ''}.metadata.json"

    @staticmethod
    def from_json(obj: Any, path: str | None = None) -> "ViewMetadata":
        """Parse a view metadata object; errors name ``path`` and what is wrong."""
        try:
            return _parse(obj, path)
        except (InvalidMetadataError, UnsupportedFormatVersionError):
            raise
        except ValidationError as e:
            raise InvalidMetadataError(str(e), path) from None
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise InvalidMetadataError(f"malformed view metadata: {type(e).__name__}: {e}", path) from None

    @staticmethod
    def from_bytes(data: bytes, path: str | None = None) -> "ViewMetadata":
        """Parse a view metadata file's contents (gzip-compressed or not, told by its first bytes)."""
        if data[:2] == b"\x1f\x8b":
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError) as e:
                raise InvalidMetadataError(f"corrupt gzip view metadata: {e}", path) from None
        try:
            obj = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InvalidMetadataError(f"malformed or truncated view metadata JSON: {e}", path) from None
        return ViewMetadata.from_json(obj, path)


def _parse(obj: Any, path: str | None) -> ViewMetadata:
    if not isinstance(obj, dict):
        raise ValidationError("view metadata must be a JSON object")
    version = obj.get("format-version")
    if version != FORMAT_VERSION:
        raise UnsupportedFormatVersionError(f"view format version {version!r} is not supported (sparkberg reads "
                                            f"version {FORMAT_VERSION})", path) \
            if isinstance(version, int) else ValidationError(f"'format-version' must be {FORMAT_VERSION}, "
                                                             f"got {version!r}")
    for key in ("view-uuid", "location", "schemas", "current-version-id", "versions", "version-log"):
        if key not in obj:
            raise ValidationError(f"view metadata lacks '{key}'")
    schemas = tuple(Schema.from_json(s, f"schemas[{i}]") for i, s in enumerate(obj["schemas"]))
    versions = tuple(ViewVersion.from_json(v, f"versions[{i}]") for i, v in enumerate(obj["versions"]))
    log = tuple(ViewHistoryEntry(int(e["timestamp-ms"]), int(e["version-id"])) for e in obj["version-log"])
    props = obj.get("properties") or {}
    if not isinstance(props, dict):
        raise ValidationError("'properties' must be an object")
    out = ViewMetadata(str(obj["view-uuid"]), str(obj["location"]), schemas, int(obj["current-version-id"]),
                       versions, log, {str(k): str(v) for k, v in props.items()}, version)
    ids = {v.version_id for v in versions}
    if out.current_version_id not in ids:
        raise ValidationError(f"'current-version-id' {out.current_version_id} is not among the versions "
                              f"{sorted(ids)}")
    schema_ids = {s.schema_id for s in schemas}
    for v in versions:
        if v.schema_id not in schema_ids:
            raise ValidationError(f"view version {v.version_id} names schema {v.schema_id}, which is not among "
                                  f"the schemas {sorted(schema_ids)}")
    return out


def _same_schema(a: Schema, b: Schema) -> bool:
    return (a.fields, a.identifier_field_ids) == (b.fields, b.identifier_field_ids)


def new_view(location: str, schema: Schema, version: ViewVersion, properties: dict[str, str] | None = None,
             view_uuid: str | None = None) -> ViewMetadata:
    """The metadata of a new view whose first version is ``version`` (its ids assigned here: schema 0,
    version 1)."""
    first = replace(version, version_id=1, schema_id=0)
    _check_dialects(first, "the view's version")
    return ViewMetadata(view_uuid or str(uuid.uuid4()), location.rstrip("/"), (replace(schema, schema_id=0),),
                        1, (first,), (ViewHistoryEntry(first.timestamp_ms, 1),), dict(properties or {}))


def replaced(base: ViewMetadata, version: ViewVersion, schema: Schema) -> ViewMetadata:
    """``base`` with ``version`` (of ``schema``) current: see the module docstring."""
    schema_id = next((s.schema_id for s in base.schemas if _same_schema(s, schema)), None)
    schemas = base.schemas
    if schema_id is None:
        schema_id = max(s.schema_id for s in base.schemas) + 1
        schemas = schemas + (replace(schema, schema_id=schema_id),)
    candidate = replace(version, schema_id=schema_id)
    _check_dialects(candidate, "the view's new version")
    same = next((v for v in base.versions if v.same_as(candidate)), None)
    versions = base.versions
    if same is None:
        candidate = replace(candidate, version_id=max(v.version_id for v in base.versions) + 1)
        versions = versions + (candidate,)
        when = candidate.timestamp_ms
    else:
        candidate = same
        when = version.timestamp_ms
    log = base.version_log
    if candidate.version_id != base.current_version_id:
        log = log + (ViewHistoryEntry(when, candidate.version_id),)
    out = replace(base, schemas=schemas, versions=versions, current_version_id=candidate.version_id, version_log=log)
    return _expired(out, {candidate.version_id})


def with_properties(base: ViewMetadata, updates: dict[str, str], removals: set[str] = frozenset()) -> ViewMetadata:
    """``base`` with properties set and removed (a key in both is an error)."""
    overlap = set(updates) & set(removals)
    if overlap:
        raise ValidationError(f"view properties both set and removed: {sorted(overlap)}")
    props = {k: v for k, v in base.properties.items() if k not in removals}
    props.update({k: str(v) for k, v in updates.items()})
    out = replace(base, properties=props)
    out.compressed  # (an unknown codec is refused before anything is written)
    return _expired(out, set())


def _expired(metadata: ViewMetadata, added: set[int]) -> ViewMetadata:
    """``metadata`` keeping at most ``version.history.num-entries`` versions (the current one and those just
    added always), the log forgetting what came before a version it no longer has."""
    try:
        size = int(metadata.properties.get(HISTORY_SIZE, HISTORY_SIZE_DEFAULT))
    except ValueError:
        raise ValidationError(f"view property {HISTORY_SIZE} must be a number, got "
                              f"{metadata.properties[HISTORY_SIZE]!r}") from None
    if size <= 0:
        raise ValidationError(f"view property {HISTORY_SIZE} must be positive, got {size}")
    keep = max(size, len(added | {metadata.current_version_id}))
    if len(metadata.versions) <= keep:
        return metadata
    newest = sorted((v.version_id for v in metadata.versions), reverse=True)
    kept = [metadata.current_version_id] + [i for i in newest[:keep] if i != metadata.current_version_id]
    kept = set(kept[:keep])
    log: list[ViewHistoryEntry] = []
    for entry in metadata.version_log:
        if entry.version_id in kept:
            log.append(entry)
        else:
            log.clear()
    return replace(metadata, versions=tuple(v for v in metadata.versions if v.version_id in kept),
                   version_log=tuple(log))


__all__ = ["FORMAT_VERSION", "HISTORY_SIZE", "Representation", "ViewHistoryEntry", "ViewMetadata", "ViewVersion",
           "new_view", "replaced", "with_properties"]
