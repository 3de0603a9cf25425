"""Table metadata v1, v2 and v3 (spec: "Table Metadata", Appendix C, Appendix E).

:class:`TableMetadata` is an immutable model that parses every field of the three format
versions (plus the early v3 draft's ``row-lineage`` flag, read and preserved) and writes the JSON
each version asks for. Reading is lenient where the spec asks it (v1 ``schema``/``partition-spec``,
``current-snapshot-id: -1``); anything malformed raises :class:`InvalidMetadataError` naming the
file and the field. Changes are made with :mod:`sparkberg.format.updates`, never in place.
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterator

from sparkberg.errors import InvalidMetadataError, UnsupportedFormatVersionError, ValidationError
from sparkberg.format.partitioning import PartitionSpec, SortOrder, UNSORTED
from sparkberg.format.snapshots import (
    BRANCH, MAIN_BRANCH, EncryptionKey, MetadataLogEntry, PartitionStatisticsFile, Snapshot, SnapshotLogEntry,
    SnapshotRef, StatisticsFile,
)
from sparkberg.format.types import Schema

SUPPORTED_FORMAT_VERSIONS = (1, 2, 3)
DEFAULT_FORMAT_VERSION = 2
INITIAL_SEQUENCE_NUMBER = 0
# top-level keys this model knows; any other key is kept verbatim in ``extra`` and written back
_KNOWN_KEYS = frozenset({
    "format-version", "table-uuid", "location", "last-sequence-number", "last-updated-ms", "last-column-id",
    "schema", "schemas", "current-schema-id", "partition-spec", "partition-specs", "default-spec-id",
    "last-partition-id", "properties", "current-snapshot-id", "snapshots", "snapshot-log", "metadata-log",
    "sort-orders", "default-sort-order-id", "refs", "statistics", "partition-statistics", "next-row-id",
    "encryption-keys", "row-lineage",
})


@dataclass(frozen=True)
class TableMetadata:
    """The state of a table at one metadata version. Read-only; see :mod:`sparkberg.format.updates`."""

    format_version: int
    table_uuid: str | None
    location: str
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    partition_specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    properties: dict[str, str] = field(default_factory=dict)
    current_snapshot_id: int | None = None
    snapshots: tuple[Snapshot, ...] = ()
    snapshot_log: tuple[SnapshotLogEntry, ...] = ()
    metadata_log: tuple[MetadataLogEntry, ...] = ()
    sort_orders: tuple[SortOrder, ...] = (UNSORTED,)
    default_sort_order_id: int = 0
    refs: dict[str, SnapshotRef] = field(default_factory=dict)
    statistics: tuple[StatisticsFile, ...] = ()
    partition_statistics: tuple[PartitionStatisticsFile, ...] = ()
    last_sequence_number: int = INITIAL_SEQUENCE_NUMBER
    next_row_id: int | None = None
    encryption_keys: tuple[EncryptionKey, ...] = ()
    row_lineage: bool | None = None  # early v3 draft field (seed-002), read and preserved
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        # read-only mappings: a TableMetadata is shared by readers and is only changed by updates
        for name in ("properties", "refs", "extra"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    # --- lookups -------------------------------------------------------------------------------
    def schema(self, schema_id: int | None = None) -> Schema:
        """The schema with that id (the current schema by default)."""
        sid = self.current_schema_id if schema_id is None else schema_id
        for s in self.schemas:
            if s.schema_id == sid:
                return s
        raise ValidationError(f"schema id {sid} not found in table metadata of {self.location}")

    @property
    def current_schema(self) -> Schema:
        return self.schema()

    def spec(self, spec_id: int | None = None) -> PartitionSpec:
        """The partition spec with that id (the default spec by default)."""
        sid = self.default_spec_id if spec_id is None else spec_id
        for s in self.partition_specs:
            if s.spec_id == sid:
                return s
        raise ValidationError(f"partition spec id {sid} not found in table metadata of {self.location}")

    @property
    def default_spec(self) -> PartitionSpec:
        return self.spec()

    @property
    def specs_by_id(self) -> dict[int, PartitionSpec]:
        return {s.spec_id: s for s in self.partition_specs}

    def sort_order(self, order_id: int | None = None) -> SortOrder:
        oid = self.default_sort_order_id if order_id is None else order_id
        for o in self.sort_orders:
            if o.order_id == oid:
                return o
        raise ValidationError(f"sort order id {oid} not found in table metadata of {self.location}")

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        for s in self.snapshots:
            if s.snapshot_id == snapshot_id:
                return s
        return None

    @property
    def current_snapshot(self) -> Snapshot | None:
        return None if self.current_snapshot_id is None else self.snapshot_by_id(self.current_snapshot_id)

    def snapshot_for_ref(self, name: str) -> Snapshot | None:
        ref = self.refs.get(name)
        return None if ref is None else self.snapshot_by_id(ref.snapshot_id)

    def snapshot_as_of(self, timestamp_ms: int) -> Snapshot | None:
        """The snapshot that was current at ``timestamp_ms``, from the snapshot log (spec Appendix F)."""
        current = None
        for entry in self.snapshot_log:
            if entry.timestamp_ms <= timestamp_ms:
                current = entry.snapshot_id
        return None if current is None else self.snapshot_by_id(current)

    def ancestors(self, snapshot_id: int | None) -> Iterator[Snapshot]:
        """The snapshot and its ancestors, newest first, as far as they are still in the metadata."""
        s = None if snapshot_id is None else self.snapshot_by_id(snapshot_id)
        while s is not None:
            yield s
            s = None if s.parent_snapshot_id is None else self.snapshot_by_id(s.parent_snapshot_id)

    @property
    def next_sequence_number(self) -> int:
        return self.last_sequence_number + 1 if self.format_version > 1 else INITIAL_SEQUENCE_NUMBER

    def property(self, key: str, default: str | None = None) -> str | None:
        return self.properties.get(key, default)

    # --- JSON ----------------------------------------------------------------------------------
    def to_json(self) -> dict:
        """The metadata as the JSON object its format version prescribes (Appendix C)."""
        v = self.format_version
        out: dict[str, Any] = {"format-version": v}
        if self.table_uuid is not None:
            out["table-uuid"] = self.table_uuid
        out["location"] = self.location
        if v >= 2:
            out["last-sequence-number"] = self.last_sequence_number
        out["last-updated-ms"] = self.last_updated_ms
        out["last-column-id"] = self.last_column_id
        if v == 1:  # v1 readers need the deprecated single schema / spec; Java writes both forms
            out["schema"] = self.current_schema.to_json()
        out["current-schema-id"] = self.current_schema_id
        out["schemas"] = [s.to_json() for s in self.schemas]
        if v == 1:
            out["partition-spec"] = self.default_spec.fields_to_json(v)
        out["default-spec-id"] = self.default_spec_id
        out["partition-specs"] = [s.to_json(v) for s in self.partition_specs]
        out["last-partition-id"] = self.last_partition_id
        out["default-sort-order-id"] = self.default_sort_order_id
        out["sort-orders"] = [o.to_json() for o in self.sort_orders]
        if self.row_lineage is not None:
            out["row-lineage"] = self.row_lineage
        out["properties"] = dict(self.properties)
        if self.current_snapshot_id is not None:
            out["current-snapshot-id"] = self.current_snapshot_id
        elif v < 3:
            out["current-snapshot-id"] = -1  # what Java writes for "none" before v3 (Appendix F)
        if v >= 3 and self.next_row_id is not None:
            out["next-row-id"] = self.next_row_id
        out["refs"] = {name: ref.to_json() for name, ref in self.refs.items()}
        out["snapshots"] = [s.to_json() for s in self.snapshots]
        out["statistics"] = [s.to_json() for s in self.statistics]
        out["partition-statistics"] = [s.to_json() for s in self.partition_statistics]
        out["snapshot-log"] = [e.to_json() for e in self.snapshot_log]
        out["metadata-log"] = [e.to_json() for e in self.metadata_log]
        if self.encryption_keys:
            out["encryption-keys"] = [k.to_json() for k in self.encryption_keys]
        for k, val in self.extra.items():
            out.setdefault(k, val)
        return out

    def to_json_bytes(self) -> bytes:
        """The metadata file's bytes: compact JSON, as Iceberg Java writes it (an indented dump goes through
        Python's pure-Python encoder, several times slower on a table with a long history, and is larger)."""
        return json.dumps(self.to_json(), separators=(",", ":")).encode("utf-8")

    @staticmethod
    def from_json(obj: Any, path: str | None = None) -> "TableMetadata":
        """Parse a metadata JSON object; errors name ``path`` and the offending field."""
        try:
            return _parse(obj, path)
        except InvalidMetadataError:
            raise
        except ValidationError as e:
            raise InvalidMetadataError(str(e), path) from None
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise InvalidMetadataError(f"malformed table metadata: {type(e).__name__}: {e}", path) from None

    @staticmethod
    def from_bytes(data: bytes, path: str | None = None) -> "TableMetadata":
        """Parse metadata file contents; gzip-compressed files (``.gz.metadata.json``) are detected by magic."""
        if data[:2] == b"\x1f\x8b":
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError) as e:
                raise InvalidMetadataError(f"corrupt gzip metadata: {e}", path) from None
        if not data.strip():
            raise InvalidMetadataError("empty metadata file", path)
        try:
            obj = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InvalidMetadataError(f"malformed or truncated metadata JSON: {e}", path) from None
        return TableMetadata.from_json(obj, path)


def _field_error(path: str | None, fieldname: str, message: str) -> InvalidMetadataError:
    return InvalidMetadataError(message, path, fieldname)


def _get(obj: dict, key: str, path: str | None, kind: type | tuple = object, required: bool = True) -> Any:
    if key not in obj or obj[key] is None:
        if required:
            raise _field_error(path, key, "table metadata is missing required field")
        return None
    v = obj[key]
    if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
        raise _field_error(path, key, f"expected an integer, got {v!r}")
    if kind is not object and kind is not int and not isinstance(v, kind):
        raise _field_error(path, key, f"expected {getattr(kind, '__name__', kind)}, got {type(v).__name__}")
    return v


def _parse(obj: Any, path: str | None) -> TableMetadata:
    if not isinstance(obj, dict):
        raise InvalidMetadataError("table metadata must be a JSON object", path)
    fv = _get(obj, "format-version", path, int)
    if fv not in SUPPORTED_FORMAT_VERSIONS:
        raise UnsupportedFormatVersionError(
            f"unsupported format version {fv} (this library reads 1, 2 and 3)", path, "format-version")
    v2 = fv >= 2
    schemas, current_schema_id = _parse_schemas(obj, path, v2)
    specs, default_spec_id, last_partition_id = _parse_specs(obj, path, v2)
    orders, default_order = _parse_sort_orders(obj, path, v2)
    snapshots, current, refs = _parse_snapshots(obj, path, fv)
    next_row_id = _get(obj, "next-row-id", path, int, required=False)
    if fv >= 3 and next_row_id is None:
        if obj.get("row-lineage") is None:
            raise _field_error(path, "next-row-id", "v3 table metadata is missing required field")
        next_row_id = 0  # early v3 draft: next-row-id only present once row lineage is enabled
    row_lineage = obj.get("row-lineage")
    if row_lineage is not None and not isinstance(row_lineage, bool):
        raise _field_error(path, "row-lineage", f"expected a boolean, got {row_lineage!r}")
    last_column_id = _get(obj, "last-column-id", path, int)
    highest = max((s.highest_field_id() for s in schemas), default=0)
    if last_column_id < highest:
        raise _field_error(path, "last-column-id", f"{last_column_id} is lower than the highest field id {highest}")
    props = _get(obj, "properties", path, dict, required=False) or {}
    return TableMetadata(
        format_version=fv, table_uuid=_get(obj, "table-uuid", path, str, required=v2),
        location=_get(obj, "location", path, str), last_updated_ms=_get(obj, "last-updated-ms", path, int),
        last_column_id=last_column_id, schemas=schemas, current_schema_id=current_schema_id, partition_specs=specs,
        default_spec_id=default_spec_id, last_partition_id=last_partition_id,
        properties={str(k): str(v) for k, v in props.items()}, current_snapshot_id=current, snapshots=snapshots,
        snapshot_log=_list_of(obj, "snapshot-log", path, SnapshotLogEntry.from_json),
        metadata_log=_list_of(obj, "metadata-log", path, MetadataLogEntry.from_json), sort_orders=orders,
        default_sort_order_id=default_order, refs=refs,
        statistics=_list_of(obj, "statistics", path, StatisticsFile.from_json),
        partition_statistics=_list_of(obj, "partition-statistics", path, PartitionStatisticsFile.from_json),
        last_sequence_number=_get(obj, "last-sequence-number", path, int, required=v2) or 0,
        next_row_id=next_row_id if fv >= 3 else None,
        encryption_keys=_list_of(obj, "encryption-keys", path, EncryptionKey.from_json), row_lineage=row_lineage,
        extra={k: v for k, v in obj.items() if k not in _KNOWN_KEYS},
    )


def _sub(path: str | None, key: str, fn: Callable[[], Any]) -> Any:
    """``fn()``, its :class:`ValidationError` reported as an error of the metadata field ``key``."""
    try:
        return fn()
    except InvalidMetadataError:
        raise
    except ValidationError as e:
        raise _field_error(path, key, str(e)) from None


def _list_of(obj: dict, key: str, path: str | None, from_json: Callable[[Any, str], Any],
             required: bool = False) -> tuple:
    """The list under ``key`` (absent or null: empty unless ``required``), each item parsed by ``from_json``."""
    items = _get(obj, key, path, list, required=required) or []
    return tuple(_sub(path, key, lambda o=o, i=i: from_json(o, f"{key}[{i}]")) for i, o in enumerate(items))


def _parse_schemas(obj: dict, path: str | None, v2: bool) -> tuple[tuple[Schema, ...], int]:
    if obj.get("schemas") is not None:
        schemas = _list_of(obj, "schemas", path, Schema.from_json)
        current_schema_id = _get(obj, "current-schema-id", path, int, required=v2)
        if current_schema_id is None:
            current_schema_id = schemas[0].schema_id if schemas else 0
    elif not v2 and "schema" in obj:
        s = _sub(path, "schema", lambda: Schema.from_json(_get(obj, "schema", path, dict), "schema"))
        schemas, current_schema_id = (s,), s.schema_id
    else:
        raise _field_error(path, "schemas", "table metadata is missing required field")
    if not any(s.schema_id == current_schema_id for s in schemas):
        raise _field_error(path, "current-schema-id", f"schema id {current_schema_id} is not in 'schemas'")
    return schemas, current_schema_id


def _parse_specs(obj: dict, path: str | None, v2: bool) -> tuple[tuple[PartitionSpec, ...], int, int]:
    if obj.get("partition-specs") is not None:
        specs = _list_of(obj, "partition-specs", path, PartitionSpec.from_json)
        default_spec_id = _get(obj, "default-spec-id", path, int, required=v2)
        if default_spec_id is None:
            default_spec_id = specs[0].spec_id if specs else 0
    elif not v2 and "partition-spec" in obj:
        fields = _sub(path, "partition-spec", lambda: PartitionSpec.fields_from_json(
            _get(obj, "partition-spec", path, list), "partition-spec"))
        specs, default_spec_id = (PartitionSpec(0, fields),), 0
    else:
        raise _field_error(path, "partition-specs", "table metadata is missing required field")
    if not any(s.spec_id == default_spec_id for s in specs):
        raise _field_error(path, "default-spec-id", f"partition spec id {default_spec_id} is not in 'partition-specs'")
    last_partition_id = _get(obj, "last-partition-id", path, int, required=v2)
    if last_partition_id is None:
        last_partition_id = max((f.field_id for s in specs for f in s.fields), default=999)
    return specs, default_spec_id, last_partition_id


def _parse_sort_orders(obj: dict, path: str | None, v2: bool) -> tuple[tuple[SortOrder, ...], int]:
    if obj.get("sort-orders") is not None:
        orders = _list_of(obj, "sort-orders", path, SortOrder.from_json)
        default_order = _get(obj, "default-sort-order-id", path, int, required=v2)
        if default_order is None:
            default_order = orders[0].order_id if orders else 0
    elif v2:
        raise _field_error(path, "sort-orders", "table metadata is missing required field")
    else:
        orders, default_order = (UNSORTED,), 0
    if not orders:
        orders = (UNSORTED,)
    if not any(o.order_id == default_order for o in orders):
        raise _field_error(path, "default-sort-order-id", f"sort order id {default_order} is not in 'sort-orders'")
    return orders, default_order


def _parse_snapshots(obj: dict, path: str | None, fv: int
                     ) -> tuple[tuple[Snapshot, ...], int | None, dict[str, SnapshotRef]]:
    """The snapshots, the current snapshot id and the refs (``main`` made from the current snapshot when only
    that is given, as v1 writers leave it)."""
    snapshots = _list_of(obj, "snapshots", path, lambda o, where: Snapshot.from_json(o, fv, where))
    ids = {s.snapshot_id for s in snapshots}
    current = _get(obj, "current-snapshot-id", path, int, required=False)
    if current == -1:
        current = None
    if current is not None and current not in ids:
        raise _field_error(path, "current-snapshot-id", f"snapshot id {current} is not in 'snapshots'")
    refs: dict[str, SnapshotRef] = {}
    for name, r in (_get(obj, "refs", path, dict, required=False) or {}).items():
        refs[name] = _sub(path, "refs", lambda r=r, name=name: SnapshotRef.from_json(r, f"refs.{name}"))
        if refs[name].snapshot_id not in ids:
            raise _field_error(path, "refs", f"ref {name!r} points to unknown snapshot {refs[name].snapshot_id}")
    if current is not None and MAIN_BRANCH not in refs:
        refs[MAIN_BRANCH] = SnapshotRef(current, BRANCH)
    if MAIN_BRANCH in refs and current is not None and refs[MAIN_BRANCH].snapshot_id != current:
        raise _field_error(path, "current-snapshot-id",
                           f"current snapshot {current} differs from main branch {refs[MAIN_BRANCH].snapshot_id}")
    if current is None and MAIN_BRANCH in refs:
        current = refs[MAIN_BRANCH].snapshot_id
    return snapshots, current, refs
