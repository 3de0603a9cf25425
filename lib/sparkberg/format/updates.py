"""Metadata updates and requirements as pure functions: ``apply(update, base) -> new metadata``.

The update vocabulary is Iceberg's (the REST catalog's ``TableUpdate``s); a commit is a list of
requirements checked against the current metadata and a list of updates applied to it, so a
retried commit re-applies the same updates to a fresh base. Every function validates its input
and raises :class:`ValidationError` naming both offending values; ``base`` is never modified.
"""
from __future__ import annotations

import time
import uuid as _uuid
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Union

from sparkberg.errors import CommitFailedException, ValidationError
from sparkberg.format.metadata import DEFAULT_FORMAT_VERSION, SUPPORTED_FORMAT_VERSIONS, TableMetadata
from sparkberg.format.partitioning import (
    PARTITION_DATA_ID_START, PartitionField, PartitionSpec, SortOrder, UNSORTED,
)
from sparkberg.format.properties import COMPRESSION, DEFAULT_COMPRESSION
from sparkberg.format.snapshots import (
    BRANCH, MAIN_BRANCH, TAG, PartitionStatisticsFile, Snapshot, SnapshotLogEntry, SnapshotRef, StatisticsFile,
)
from sparkberg.format.types import (
    IcebergType, ListType, MapType, Schema, StructType, type_min_format_version,
)

# Table properties that are not stored as properties but drive metadata (as Iceberg Java reserves them)
RESERVED_PROPERTIES = ("format-version", "uuid", "snapshot-count", "current-snapshot-id",
                       "current-snapshot-summary", "current-snapshot-timestamp-ms", "current-schema",
                       "default-partition-spec", "default-sort-order")
LAST_ADDED = -1  # "the schema/spec/order added by this commit", as in the REST protocol


def now_ms() -> int:
    return int(time.time() * 1000)


# --- updates ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AssignUUID:
    uuid: str


@dataclass(frozen=True)
class UpgradeFormatVersion:
    format_version: int


@dataclass(frozen=True)
class AddSchema:
    schema: Schema
    last_column_id: int | None = None


@dataclass(frozen=True)
class SetCurrentSchema:
    schema_id: int  # LAST_ADDED for the schema added in the same commit


@dataclass(frozen=True)
class AddPartitionSpec:
    spec: PartitionSpec


@dataclass(frozen=True)
class SetDefaultSpec:
    spec_id: int


@dataclass(frozen=True)
class AddSortOrder:
    sort_order: SortOrder


@dataclass(frozen=True)
class SetDefaultSortOrder:
    sort_order_id: int


@dataclass(frozen=True)
class AddSnapshot:
    snapshot: Snapshot


@dataclass(frozen=True)
class SetSnapshotRef:
    ref_name: str
    snapshot_id: int
    type: str = BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None


@dataclass(frozen=True)
class RemoveSnapshots:
    snapshot_ids: tuple[int, ...]


@dataclass(frozen=True)
class RemoveSnapshotRef:
    ref_name: str


@dataclass(frozen=True)
class SetProperties:
    updates: dict[str, str] = field(hash=False)


@dataclass(frozen=True)
class RemoveProperties:
    removals: tuple[str, ...]


@dataclass(frozen=True)
class SetLocation:
    location: str


@dataclass(frozen=True)
class SetStatistics:
    statistics: StatisticsFile


@dataclass(frozen=True)
class RemoveStatistics:
    snapshot_id: int


@dataclass(frozen=True)
class SetPartitionStatistics:
    partition_statistics: PartitionStatisticsFile


@dataclass(frozen=True)
class RemovePartitionStatistics:
    snapshot_id: int


TableUpdate = Union[AssignUUID, UpgradeFormatVersion, AddSchema, SetCurrentSchema, AddPartitionSpec,
                    SetDefaultSpec, AddSortOrder, SetDefaultSortOrder, AddSnapshot, SetSnapshotRef, RemoveSnapshots,
                    RemoveSnapshotRef, SetProperties, RemoveProperties, SetLocation, SetStatistics, RemoveStatistics,
                    SetPartitionStatistics, RemovePartitionStatistics]


def apply(update: TableUpdate, base: TableMetadata, context: dict | None = None) -> TableMetadata:
    """Apply one update to ``base`` and return the new metadata (``base`` is unchanged).

    ``context`` carries what earlier updates of the same commit added (for ``LAST_ADDED``).
    """
    ctx = {} if context is None else context
    fn = _APPLIERS.get(type(update))
    if fn is None:
        raise ValidationError(f"unknown metadata update {update!r}")
    return fn(update, base, ctx)


def apply_all(updates: Iterable[TableUpdate], base: TableMetadata, timestamp_ms: int | None = None) -> TableMetadata:
    """Apply updates in order and stamp ``last-updated-ms``; the result is validated as a whole."""
    ctx: dict = {}
    out = base
    for u in updates:
        out = apply(u, out, ctx)
    ts = now_ms() if timestamp_ms is None else timestamp_ms
    # last-updated-ms never goes backwards, and is at least the newest snapshot's timestamp
    ts = max(ts, base.last_updated_ms, max((s.timestamp_ms for s in out.snapshots), default=0))
    out = replace(out, last_updated_ms=ts)
    validate(out)
    return out


def _assign_uuid(u: AssignUUID, base: TableMetadata, ctx) -> TableMetadata:
    if base.table_uuid is not None and base.table_uuid != u.uuid:
        raise ValidationError(f"cannot reassign table uuid {base.table_uuid} to {u.uuid}")
    return replace(base, table_uuid=u.uuid)


def _upgrade(u: UpgradeFormatVersion, base: TableMetadata, ctx) -> TableMetadata:
    v = u.format_version
    if v not in SUPPORTED_FORMAT_VERSIONS:
        raise ValidationError(f"unsupported format version {v}; supported: {SUPPORTED_FORMAT_VERSIONS}")
    if v < base.format_version:
        raise ValidationError(f"cannot downgrade format version from {base.format_version} to {v}")
    if v == base.format_version:
        return base
    changes: dict[str, Any] = {"format_version": v}
    if base.table_uuid is None:
        changes["table_uuid"] = str(_uuid.uuid4())
    if v >= 3 and base.format_version < 3:
        changes["next_row_id"] = 0  # spec: "When a table is upgraded to v3, next_row_id should be initialized to 0"
    return replace(base, **changes)


def _add_schema(u: AddSchema, base: TableMetadata, ctx) -> TableMetadata:
    schema = u.schema
    schema.validate()
    needed = max((type_min_format_version(f.field_type) for f in schema.fields), default=1)
    if needed > base.format_version:
        raise ValidationError(f"schema uses types of format version {needed}, table is v{base.format_version}")
    if base.format_version < 3:
        for f in schema.index_by_id().values():
            if f.initial_default is not None or f.write_default is not None:
                raise ValidationError(f"default values (field {f.name!r}) need format version 3, table is "
                                      f"v{base.format_version}")
    last_column_id = max(base.last_column_id, u.last_column_id or 0, schema.highest_field_id())
    # reuse an identical existing schema instead of adding a duplicate (as Java does)
    for existing in base.schemas:
        if existing.fields == schema.fields and existing.identifier_field_ids == schema.identifier_field_ids:
            ctx["last_added_schema_id"] = existing.schema_id
            return replace(base, last_column_id=last_column_id)
    new_id = max((s.schema_id for s in base.schemas), default=-1) + 1
    schema = Schema(schema.fields, new_id, schema.identifier_field_ids)
    ctx["last_added_schema_id"] = new_id
    return replace(base, schemas=base.schemas + (schema,), last_column_id=last_column_id)


def _set_current_schema(u: SetCurrentSchema, base: TableMetadata, ctx) -> TableMetadata:
    sid = ctx.get("last_added_schema_id") if u.schema_id == LAST_ADDED else u.schema_id
    if sid is None:
        raise ValidationError("cannot set the last added schema: no schema was added in this commit")
    base.schema(sid)
    return replace(base, current_schema_id=sid)


def _add_spec(u: AddPartitionSpec, base: TableMetadata, ctx) -> TableMetadata:
    spec = u.spec
    spec.validate(base.current_schema)
    if any(not f.transform.is_known for f in spec.fields):
        raise ValidationError("cannot add a partition spec with an unknown transform")
    for existing in base.partition_specs:
        if existing.compatible_with(spec):
            ctx["last_added_spec_id"] = existing.spec_id
            return base
    if base.format_version == 1:
        # v1: partition field ids were not tracked; they must be 1000, 1001, ... in order
        for i, f in enumerate(spec.fields):
            if f.field_id != PARTITION_DATA_ID_START + i:
                raise ValidationError(f"v1 partition field {f.name!r} must have id {PARTITION_DATA_ID_START + i}, "
                                      f"got {f.field_id}")
    new_id = max((s.spec_id for s in base.partition_specs), default=-1) + 1
    spec = PartitionSpec(new_id, spec.fields)
    ctx["last_added_spec_id"] = new_id
    return replace(base, partition_specs=base.partition_specs + (spec,),
                   last_partition_id=max(base.last_partition_id, spec.last_assigned_field_id()))


def _set_default_spec(u: SetDefaultSpec, base: TableMetadata, ctx) -> TableMetadata:
    sid = ctx.get("last_added_spec_id") if u.spec_id == LAST_ADDED else u.spec_id
    if sid is None:
        raise ValidationError("cannot set the last added spec: no spec was added in this commit")
    base.spec(sid)
    return replace(base, default_spec_id=sid)


def _add_sort_order(u: AddSortOrder, base: TableMetadata, ctx) -> TableMetadata:
    order = u.sort_order
    by_id = base.current_schema.index_by_id()
    for f in order.fields:
        src = by_id.get(f.source_id)
        if src is None:
            raise ValidationError(f"sort field references missing source column id {f.source_id}")
        if f.transform.is_known:
            f.transform.check(src.field_type, " (sort order)")
    if order.is_unsorted:
        ctx["last_added_order_id"] = 0
        return base
    for existing in base.sort_orders:
        if existing.fields == order.fields:
            ctx["last_added_order_id"] = existing.order_id
            return base
    new_id = max((o.order_id for o in base.sort_orders), default=0) + 1
    ctx["last_added_order_id"] = new_id
    return replace(base, sort_orders=base.sort_orders + (SortOrder(new_id, order.fields),))


def _set_default_sort_order(u: SetDefaultSortOrder, base: TableMetadata, ctx) -> TableMetadata:
    oid = ctx.get("last_added_order_id") if u.sort_order_id == LAST_ADDED else u.sort_order_id
    if oid is None:
        raise ValidationError("cannot set the last added sort order: none was added in this commit")
    base.sort_order(oid)
    return replace(base, default_sort_order_id=oid)


def _add_snapshot(u: AddSnapshot, base: TableMetadata, ctx) -> TableMetadata:
    s = u.snapshot
    if base.snapshot_by_id(s.snapshot_id) is not None:
        raise ValidationError(f"snapshot id {s.snapshot_id} already exists")
    changes: dict[str, Any] = {"snapshots": base.snapshots + (s,)}
    if base.format_version >= 2:
        if s.sequence_number is None or (s.sequence_number <= base.last_sequence_number
                                         and s.parent_snapshot_id is not None):
            raise ValidationError(f"snapshot sequence number {s.sequence_number} must be greater than the table's "
                                  f"last sequence number {base.last_sequence_number}")
        changes["last_sequence_number"] = max(base.last_sequence_number, s.sequence_number)
    if base.format_version >= 3:
        if s.first_row_id is None or s.added_rows is None:
            raise ValidationError("v3 snapshots need first-row-id and added-rows")
        if s.first_row_id < (base.next_row_id or 0):
            raise ValidationError(f"snapshot first-row-id {s.first_row_id} is below the table's next-row-id "
                                  f"{base.next_row_id}")
        changes["next_row_id"] = s.first_row_id + s.added_rows
    return replace(base, **changes)


def _set_ref(u: SetSnapshotRef, base: TableMetadata, ctx) -> TableMetadata:
    if u.type not in (BRANCH, TAG):
        raise ValidationError(f"ref type must be 'branch' or 'tag', got {u.type!r}")
    if u.ref_name == MAIN_BRANCH and u.type != BRANCH:
        raise ValidationError("ref 'main' must be a branch")
    snap = base.snapshot_by_id(u.snapshot_id)
    if snap is None:
        raise ValidationError(f"cannot set ref {u.ref_name!r} to unknown snapshot {u.snapshot_id}")
    existing = base.refs.get(u.ref_name)
    if existing is not None and existing.type != u.type:
        raise ValidationError(f"ref {u.ref_name!r} is a {existing.type}, cannot set it as a {u.type}")
    ref = SnapshotRef(u.snapshot_id, u.type, u.min_snapshots_to_keep, u.max_snapshot_age_ms, u.max_ref_age_ms)
    refs = dict(base.refs)
    refs[u.ref_name] = ref
    changes: dict[str, Any] = {"refs": refs}
    if u.ref_name == MAIN_BRANCH:
        changes["current_snapshot_id"] = u.snapshot_id
        if existing is None or existing.snapshot_id != u.snapshot_id:
            ts = max(snap.timestamp_ms, base.last_updated_ms)
            changes["snapshot_log"] = base.snapshot_log + (SnapshotLogEntry(ts, u.snapshot_id),)
    return replace(base, **changes)


def _remove_snapshots(u: RemoveSnapshots, base: TableMetadata, ctx) -> TableMetadata:
    drop = set(u.snapshot_ids)
    if base.current_snapshot_id in drop:
        raise ValidationError(f"cannot remove the current snapshot {base.current_snapshot_id}")
    refs = {n: r for n, r in base.refs.items() if r.snapshot_id not in drop}
    snaps = tuple(s for s in base.snapshots if s.snapshot_id not in drop)
    # spec: when snapshots expire, drop every log entry up to and including the last expired one
    log = list(base.snapshot_log)
    last_gone = max((i for i, e in enumerate(log) if e.snapshot_id not in {s.snapshot_id for s in snaps}), default=-1)
    return replace(base, snapshots=snaps, refs=refs, snapshot_log=tuple(log[last_gone + 1:]),
                   statistics=tuple(s for s in base.statistics if s.snapshot_id not in drop),
                   partition_statistics=tuple(s for s in base.partition_statistics if s.snapshot_id not in drop))


def _remove_ref(u: RemoveSnapshotRef, base: TableMetadata, ctx) -> TableMetadata:
    refs = dict(base.refs)
    refs.pop(u.ref_name, None)
    changes: dict[str, Any] = {"refs": refs}
    if u.ref_name == MAIN_BRANCH:
        changes["current_snapshot_id"] = None
    return replace(base, **changes)


def _set_properties(u: SetProperties, base: TableMetadata, ctx) -> TableMetadata:
    for k in u.updates:
        if k in RESERVED_PROPERTIES:
            raise ValidationError(f"table property {k!r} is reserved; use the matching table operation instead")
    props = dict(base.properties)
    props.update({str(k): str(v) for k, v in u.updates.items()})
    return replace(base, properties=props)


def _remove_properties(u: RemoveProperties, base: TableMetadata, ctx) -> TableMetadata:
    props = {k: v for k, v in base.properties.items() if k not in set(u.removals)}
    return replace(base, properties=props)


def _set_location(u: SetLocation, base: TableMetadata, ctx) -> TableMetadata:
    if not u.location:
        raise ValidationError("table location cannot be empty")
    return replace(base, location=u.location.rstrip("/"))


def _set_stats(u: SetStatistics, base: TableMetadata, ctx) -> TableMetadata:
    keep = tuple(s for s in base.statistics if s.snapshot_id != u.statistics.snapshot_id)
    return replace(base, statistics=keep + (u.statistics,))


def _remove_stats(u: RemoveStatistics, base: TableMetadata, ctx) -> TableMetadata:
    return replace(base, statistics=tuple(s for s in base.statistics if s.snapshot_id != u.snapshot_id))


def _set_pstats(u: SetPartitionStatistics, base: TableMetadata, ctx) -> TableMetadata:
    keep = tuple(s for s in base.partition_statistics if s.snapshot_id != u.partition_statistics.snapshot_id)
    return replace(base, partition_statistics=keep + (u.partition_statistics,))


def _remove_pstats(u: RemovePartitionStatistics, base: TableMetadata, ctx) -> TableMetadata:
    return replace(base, partition_statistics=tuple(s for s in base.partition_statistics
                                                    if s.snapshot_id != u.snapshot_id))


_APPLIERS = {
    AssignUUID: _assign_uuid, UpgradeFormatVersion: _upgrade, AddSchema: _add_schema,
    SetCurrentSchema: _set_current_schema, AddPartitionSpec: _add_spec, SetDefaultSpec: _set_default_spec,
    AddSortOrder: _add_sort_order, SetDefaultSortOrder: _set_default_sort_order, AddSnapshot: _add_snapshot,
    SetSnapshotRef: _set_ref, RemoveSnapshots: _remove_snapshots, RemoveSnapshotRef: _remove_ref,
    SetProperties: _set_properties, RemoveProperties: _remove_properties, SetLocation: _set_location,
    SetStatistics: _set_stats, RemoveStatistics: _remove_stats, SetPartitionStatistics: _set_pstats,
    RemovePartitionStatistics: _remove_pstats,
}


def validate(m: TableMetadata) -> None:
    """Whole-metadata invariants: ids resolve, main matches current snapshot, v3 has next-row-id."""
    m.current_schema
    m.default_spec
    m.sort_order()
    if m.current_snapshot_id is not None and m.snapshot_by_id(m.current_snapshot_id) is None:
        raise ValidationError(f"current snapshot {m.current_snapshot_id} is not in the table's snapshots")
    main = m.refs.get(MAIN_BRANCH)
    if (main.snapshot_id if main else None) != m.current_snapshot_id:
        raise ValidationError("the main branch must point at the current snapshot")
    if m.format_version >= 3 and m.next_row_id is None:
        raise ValidationError("v3 metadata needs next-row-id")


# --- requirements ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AssertTableUUID:
    uuid: str

    def check(self, m: TableMetadata | None) -> None:
        if m is None or m.table_uuid != self.uuid:
            raise CommitFailedException(f"table uuid changed: expected {self.uuid}, "
                                        f"found {None if m is None else m.table_uuid}")


@dataclass(frozen=True)
class AssertRefSnapshotId:
    ref: str
    snapshot_id: int | None

    def check(self, m: TableMetadata | None) -> None:
        current = None if m is None or self.ref not in m.refs else m.refs[self.ref].snapshot_id
        if current != self.snapshot_id:
            raise CommitFailedException(f"ref {self.ref!r} changed: expected snapshot {self.snapshot_id}, "
                                        f"found {current}")


@dataclass(frozen=True)
class AssertCurrentSchemaId:
    schema_id: int

    def check(self, m: TableMetadata | None) -> None:
        if m is None or m.current_schema_id != self.schema_id:
            raise CommitFailedException(f"current schema changed: expected {self.schema_id}, "
                                        f"found {None if m is None else m.current_schema_id}")


@dataclass(frozen=True)
class AssertLastAssignedFieldId:
    last_assigned_field_id: int

    def check(self, m: TableMetadata | None) -> None:
        if m is None or m.last_column_id != self.last_assigned_field_id:
            raise CommitFailedException("the table's columns changed concurrently (last-column-id "
                                        f"{None if m is None else m.last_column_id} != {self.last_assigned_field_id})")


@dataclass(frozen=True)
class AssertDefaultSpecId:
    spec_id: int

    def check(self, m: TableMetadata | None) -> None:
        if m is None or m.default_spec_id != self.spec_id:
            raise CommitFailedException(f"default partition spec changed: expected {self.spec_id}, "
                                        f"found {None if m is None else m.default_spec_id}")


@dataclass(frozen=True)
class AssertLastAssignedPartitionId:
    last_assigned_partition_id: int

    def check(self, m: TableMetadata | None) -> None:
        if m is None or m.last_partition_id != self.last_assigned_partition_id:
            raise CommitFailedException("the table's partition fields changed concurrently (last-partition-id "
                                        f"{None if m is None else m.last_partition_id} != "
                                        f"{self.last_assigned_partition_id})")


@dataclass(frozen=True)
class AssertDefaultSortOrderId:
    sort_order_id: int

    def check(self, m: TableMetadata | None) -> None:
        if m is None or m.default_sort_order_id != self.sort_order_id:
            raise CommitFailedException(f"default sort order changed: expected {self.sort_order_id}, "
                                        f"found {None if m is None else m.default_sort_order_id}")


TableRequirement = Union[AssertTableUUID, AssertRefSnapshotId, AssertCurrentSchemaId, AssertLastAssignedFieldId,
                         AssertDefaultSpecId, AssertLastAssignedPartitionId, AssertDefaultSortOrderId]


# --- what a commit requires ----------------------------------------------------------------------------

def requirements_for(base: TableMetadata, updates: Iterable[TableUpdate]) -> list[TableRequirement]:
    """What must still hold of the catalog's current metadata for ``updates`` (built on ``base``) to apply, as
    Iceberg Java's ``UpdateRequirements`` asks of a table update: the same table (uuid), every ref it moves or
    removes where ``base`` had it, and the ids its schema, spec and sort order changes were assigned from."""
    out: list[TableRequirement] = [AssertTableUUID(base.table_uuid)]
    seen: set = set()

    def once(req: TableRequirement) -> None:
        key = (type(req), getattr(req, "ref", None))
        if key not in seen:
            seen.add(key)
            out.append(req)
    for u in updates:
        if isinstance(u, (SetSnapshotRef, RemoveSnapshotRef)):
            ref = base.refs.get(u.ref_name)
            once(AssertRefSnapshotId(u.ref_name, None if ref is None else ref.snapshot_id))
        elif isinstance(u, AddSchema):
            once(AssertLastAssignedFieldId(base.last_column_id))
        elif isinstance(u, SetCurrentSchema):
            once(AssertCurrentSchemaId(base.current_schema_id))
        elif isinstance(u, AddPartitionSpec):
            once(AssertLastAssignedPartitionId(base.last_partition_id))
        elif isinstance(u, SetDefaultSpec):
            once(AssertDefaultSpecId(base.default_spec_id))
        elif isinstance(u, SetDefaultSortOrder):
            once(AssertDefaultSortOrderId(base.default_sort_order_id))
    return out


# --- new tables --------------------------------------------------------------------------------------

def assign_fresh_ids(schema: Schema, next_id=None) -> Schema:
    """Renumber every field of ``schema`` from 1, parents before children (as Iceberg Java does)."""
    counter = [0]

    def nxt() -> int:
        counter[0] += 1
        return counter[0]

    def reassign_type(t: IcebergType) -> IcebergType:
        if isinstance(t, StructType):
            ids = [nxt() for _ in t.fields]
            return StructType(replace(f, field_id=i, field_type=reassign_type(f.field_type))
                              for f, i in zip(t.fields, ids))
        if isinstance(t, ListType):
            eid = nxt()
            return ListType(eid, reassign_type(t.element_type), t.element_required)
        if isinstance(t, MapType):
            kid, vid = nxt(), nxt()
            return MapType(kid, reassign_type(t.key_type), vid, reassign_type(t.value_type), t.value_required)
        return t

    old_by_id = schema.index_by_id()
    struct = reassign_type(schema.as_struct)
    fresh = Schema(struct.fields, 0)
    if schema.identifier_field_ids:
        names = [schema.name_of(i) for i in schema.identifier_field_ids if i in old_by_id]
        fresh = Schema(struct.fields, 0, tuple(fresh.find_field(n).field_id for n in names))
    return fresh


def persisted_properties(properties: dict[str, Any] | None) -> dict[str, str]:
    """The properties a new (or replaced) table's metadata records, as Iceberg Java's ``persistedProperties``: the
    reserved ones left out, and the Parquet codec of new tables (``zstd``) unless one is given."""
    out = {COMPRESSION: DEFAULT_COMPRESSION}
    out.update((str(k), str(v)) for k, v in (properties or {}).items() if k not in RESERVED_PROPERTIES)
    return out


def replacement(base: TableMetadata, schema: Schema, spec: PartitionSpec, sort_order: SortOrder,
                properties: dict[str, str] | None = None) -> list[TableUpdate]:
    """The updates that replace a table's definition, as Iceberg Java's replace transaction does
    (``TableMetadata.buildReplacement``, Spark's ``REPLACE TABLE``): ``schema`` becomes current with the ids of the
    current schema's fields of the same full name reused and new ones after ``last-column-id``; ``spec`` and
    ``sort_order`` (over ``schema``'s own ids) become the defaults, partition fields reusing the id of an existing
    field of the same source and transform; ``main`` is removed, so the table has no current snapshot (history and
    the other refs stay); ``properties`` are set over the existing ones, ``format-version`` among them upgrading
    the table."""
    props = {str(k): str(v) for k, v in (properties or {}).items()}
    version = int(props.pop("format-version", base.format_version))
    by_name = base.current_schema.index_by_name()
    last = [base.last_column_id]
    new_ids: dict[int, int] = {}

    def assign(t: IcebergType, path: tuple[str, ...]) -> IcebergType:
        def fid(old: int, name: str) -> int:
            known = by_name.get(".".join(path + (name,)))
            if known is None:
                last[0] += 1
            new_ids[old] = known.field_id if known is not None else last[0]
            return new_ids[old]
        if isinstance(t, StructType):
            ids = [fid(f.field_id, f.name) for f in t.fields]
            return StructType(replace(f, field_id=i, field_type=assign(f.field_type, path + (f.name,)))
                              for f, i in zip(t.fields, ids))
        if isinstance(t, ListType):
            eid = fid(t.element_id, "element")
            return ListType(eid, assign(t.element_type, path + ("element",)), t.element_required)
        if isinstance(t, MapType):
            kid, vid = fid(t.key_id, "key"), fid(t.value_id, "value")
            return MapType(kid, assign(t.key_type, path + ("key",)), vid, assign(t.value_type, path + ("value",)),
                           t.value_required)
        return t

    struct = assign(schema.as_struct, ())
    fresh = Schema(struct.fields, 0, tuple(new_ids[i] for i in schema.identifier_field_ids))
    existing = {(f.source_id, str(f.transform)): f.field_id for s in base.partition_specs for f in s.fields}
    next_pid = [base.last_partition_id]

    def pid(source_id: int, transform: Any) -> int:
        known = existing.get((source_id, str(transform)))
        if known is not None:
            return known
        next_pid[0] += 1
        return next_pid[0]
    fields = []
    for f in spec.fields:
        source = new_ids[f.source_id]
        fields.append(PartitionField(source, pid(source, f.transform), f.transform, f.name,
                                     tuple(new_ids[s] for s in f.source_ids)))
    order = UNSORTED if sort_order.is_unsorted else SortOrder(1, tuple(
        replace(f, source_id=new_ids[f.source_id], source_ids=tuple(new_ids[s] for s in f.source_ids))
        for f in sort_order.fields))
    updates: list[TableUpdate] = [UpgradeFormatVersion(version)] if version != base.format_version else []
    updates += [RemoveSnapshotRef(MAIN_BRANCH), AddSchema(fresh, last[0]), SetCurrentSchema(LAST_ADDED),
                AddPartitionSpec(PartitionSpec(0, tuple(fields))), SetDefaultSpec(LAST_ADDED),
                AddSortOrder(order), SetDefaultSortOrder(LAST_ADDED)]
    return updates + [SetProperties(persisted_properties(props))]


def new_table_metadata(schema: Schema, location: str, spec: PartitionSpec | None = None,
                       sort_order: SortOrder | None = None, properties: dict[str, str] | None = None,
                       format_version: int = DEFAULT_FORMAT_VERSION, table_uuid: str | None = None,
                       fresh_ids: bool = True, timestamp_ms: int | None = None) -> TableMetadata:
    """Metadata of a new, empty table; field ids are assigned afresh unless ``fresh_ids`` is False.

    ``spec`` and ``sort_order`` refer to columns of ``schema`` by its ids before renumbering.
    """
    if format_version not in SUPPORTED_FORMAT_VERSIONS:
        raise ValidationError(f"unsupported format version {format_version}; supported: {SUPPORTED_FORMAT_VERSIONS}")
    if not location:
        raise ValidationError("table location cannot be empty")
    schema.validate()
    fresh = assign_fresh_ids(schema) if fresh_ids else Schema(schema.fields, 0, schema.identifier_field_ids)
    old_names = {fid: schema.name_of(fid) for fid in schema.index_by_id()}

    def new_id(old: int) -> int:
        return fresh.find_field(old_names[old]).field_id if fresh_ids else old

    spec = spec or PartitionSpec(0, ())
    pfields = tuple(PartitionField(new_id(f.source_id), PARTITION_DATA_ID_START + i, f.transform, f.name,
                                   tuple(new_id(s) for s in f.source_ids))
                    for i, f in enumerate(spec.fields))
    new_spec = PartitionSpec(0, pfields)
    order = sort_order or UNSORTED
    new_order = UNSORTED if order.is_unsorted else SortOrder(1, tuple(
        replace(f, source_id=new_id(f.source_id), source_ids=tuple(new_id(s) for s in f.source_ids))
        for f in order.fields))
    props = persisted_properties(properties)
    ts = now_ms() if timestamp_ms is None else timestamp_ms
    needed = max((type_min_format_version(f.field_type) for f in fresh.fields), default=1)
    if needed > format_version:
        raise ValidationError(f"schema uses types of format version {needed}; create the table with "
                              f"format-version {needed}")
    base = TableMetadata(
        format_version=format_version, table_uuid=table_uuid or str(_uuid.uuid4()), location=location.rstrip("/"),
        last_updated_ms=ts, last_column_id=fresh.highest_field_id(), schemas=(fresh,), current_schema_id=0,
        partition_specs=(new_spec,), default_spec_id=0,
        last_partition_id=max(PARTITION_DATA_ID_START - 1, new_spec.last_assigned_field_id()),
        properties=props, sort_orders=(new_order,) if new_order.is_unsorted else (UNSORTED, new_order),
        default_sort_order_id=new_order.order_id, next_row_id=0 if format_version >= 3 else None,
    )
    new_spec.validate(fresh)
    if any(not f.transform.is_known for f in new_spec.fields):
        raise ValidationError("cannot create a table partitioned by an unknown transform")
    if format_version < 3:
        for f in fresh.index_by_id().values():
            if f.initial_default is not None or f.write_default is not None:
                raise ValidationError(f"default values (field {f.name!r}) need format-version 3")
    validate(base)
    return base
