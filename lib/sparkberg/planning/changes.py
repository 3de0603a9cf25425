"""What changed between snapshots: the snapshots of a range, the data files an ``append`` range added, and for
each snapshot of a changelog the data files whose rows it may have inserted or deleted.

A range is Iceberg Java's: the ancestors of the end snapshot after the start (exclusive), oldest first
(:func:`snapshots_between`). Incremental append reads take the data files that the range's ``append`` snapshots
added, as written, no delete applied (Java's ``IncrementalAppendScan``: rows deleted later in the range are
still read). A changelog takes every snapshot of the range but ``replace`` ones (compactions, manifest and
delete rewrites: no row changes), and for each, from what it wrote in its own manifests:

- ``after``: the data files it added, with the deletes that apply to them in it, and the data files it kept
  whose deletes it changed, with its deletes;
- ``before``: the data files it removed, with the deletes that applied to them in its parent, and the kept
  files whose deletes it changed, with its parent's deletes.

The rows of ``before`` that ``after`` lacks (same file, same position) are the snapshot's deletes, the rows of
``after`` that ``before`` lacks its inserts (:mod:`sparkberg.read.changes`). Only the snapshot's own manifests
are read, and where it added or removed delete files, the delete manifests and the data manifests of the
partitions those reach (the manifest list's partition summaries prune the rest): a changelog costs what its
snapshots touched, not the table's size.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkberg.arrays import empty_table, from_bools, from_python, indices, scalar, strings
from sparkberg.errors import ValidationError
from sparkberg.expressions.predicates import TRUE, Bound
from sparkberg.io.fileio import FileIO
from sparkberg.planning.deletes import DeleteMatcher
from sparkberg.planning.entries import EntryDecoder, PartitionLayout, entries_df, snapshot_manifest_table
from sparkberg.planning.scan import (
    DATA_ENTRY_COLUMNS, DELETE_ENTRY_COLUMNS, PLAN_COLUMNS, MetricsFilter, _partition_filters, _small_enough,
    _tasks_arrow_schema, prune_manifests,
)
from sparkberg.spark.frames import collect_arrow
from sparkberg.spark.session import job_description
from sparkberg.spark.tuning import DATA_PLANNING_MODE, planning_mode
from sparkberg.format.manifests import ADDED, DELETED, MANIFEST_DATA, MANIFEST_DELETES, ManifestFile
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.snapshots import Snapshot
from sparkberg.format.values import from_bytes
from sparkberg.threads import DRIVER_THREADS

APPEND, REPLACE = "append", "replace"
# the entry columns a change reads: planning's, and which snapshot wrote an entry with what status
CHANGE_COLUMNS = ("status", "snapshot_id")


def snapshots_between(metadata: TableMetadata, start_exclusive: int | None, end: int | None) -> list[Snapshot]:
    """The ancestors of ``end`` (default: the current snapshot) after ``start_exclusive``, oldest first: all
    the end's retained ancestors when it is None. ``start_exclusive`` may be expired if a retained ancestor
    names it as its parent, as in Java. A named error for an unknown end, a start that is not an ancestor, or
    a range through an expired snapshot."""
    start_exclusive = snapshot_id_argument(start_exclusive, "start snapshot")
    end = snapshot_id_argument(end, "end snapshot")
    if end is None:
        if metadata.current_snapshot is None:
            raise ValidationError("the table has no current snapshot: give the end snapshot of the range")
        end = metadata.current_snapshot_id
    head = metadata.snapshot_by_id(end)
    if head is None:
        raise ValidationError(f"cannot find the end snapshot {end}: it is not (or no longer) in the table")
    if start_exclusive is not None and start_exclusive == end:
        raise ValidationError(f"the start snapshot {start_exclusive} (exclusive) is the end snapshot: the range "
                              f"must end after it")
    out: list[Snapshot] = []
    s = head
    while True:
        out.append(s)
        parent = s.parent_snapshot_id
        if start_exclusive is not None and parent == start_exclusive:
            break
        if parent is None:
            if start_exclusive is not None and metadata.snapshot_by_id(start_exclusive) is None:
                raise ValidationError(f"cannot find the start snapshot {start_exclusive}: there is no such snapshot "
                                      f"in this table (nor does any snapshot name it as its parent)")
            if start_exclusive is not None:
                raise ValidationError(f"the start snapshot {start_exclusive} is not an ancestor of the end "
                                      f"snapshot {end}")
            break
        s = metadata.snapshot_by_id(parent)
        if s is None:
            if start_exclusive is not None:
                raise ValidationError(f"the range from snapshot {start_exclusive} to {end} crosses snapshot "
                                      f"{parent}, which has expired (or the start is not an ancestor of the end)")
            break
    out.reverse()
    return out


def snapshot_id_argument(value: Any, what: str) -> int | None:
    """A snapshot id given to an API call: an int, or a string of one (as Spark's read options carry ids), else a
    named error naming ``what`` and the value's type."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValidationError(f"the {what} id must be an integer snapshot id, got {type(value).__name__} {value!r}")
    return int(value)


def start_for_timestamp(metadata: TableMetadata, timestamp_ms: int) -> int | None:
    """The exclusive start of a changelog from ``timestamp_ms`` on, as Java picks it: the parent of the oldest
    ancestor of the current snapshot committed after it, or that ancestor itself when committed at exactly that
    time (None: from the first snapshot)."""
    last = None
    for s in _current_ancestors(metadata):
        if s.timestamp_ms < timestamp_ms:
            break
        if s.timestamp_ms == timestamp_ms:
            return s.snapshot_id
        last = s
    if last is None:
        return metadata.current_snapshot_id
    return last.parent_snapshot_id


def end_for_timestamp(metadata: TableMetadata, timestamp_ms: int) -> int | None:
    """The newest ancestor of the current snapshot committed at or before ``timestamp_ms`` (None: none)."""
    for s in _current_ancestors(metadata):
        if s.timestamp_ms <= timestamp_ms:
            return s.snapshot_id
    return None


def _current_ancestors(metadata: TableMetadata) -> Iterable[Snapshot]:
    s = metadata.current_snapshot
    while s is not None:
        yield s
        s = metadata.snapshot_by_id(s.parent_snapshot_id) if s.parent_snapshot_id is not None else None


def _own_manifests(io: FileIO, snapshot: Snapshot, content: int) -> list[ManifestFile]:
    """The manifests ``snapshot`` wrote itself (its added and removed entries are in them, and only there)."""
    return [m for m in snapshot_manifest_table(io, snapshot).manifests()
            if m.content == content and m.added_snapshot_id == snapshot.snapshot_id]


def _decoder(layout: PartitionLayout, columns: tuple[str, ...], filters: dict[int, Bound] | None = None,
             metrics: Any = None, path_bounds: bool = False) -> EntryDecoder:
    return EntryDecoder(layout, include_deleted=True, partition_filters=filters, metrics_filter=metrics,
                        with_path_bounds=path_bounds, columns=tuple(dict.fromkeys(columns + CHANGE_COLUMNS)),
                        io=None)  # (the loader gives it the table's: :meth:`_Loader.load`)


class _Loader:
    """Decodes the manifests a change plan reads, as the scan planner decides where (:func:`plan`): on the driver
    when they are small enough (:func:`_small_enough`, ``read.data-planning-mode``) or there is no session (a
    streaming source's planning process), else on the executors, one Spark job (``CHANGE-PLANNING <label>``) on
    the planner's DataFrame path (:func:`entries_df`), of which only the decoded entries come back."""

    def __init__(self, metadata: TableMetadata, io: FileIO, spark: Any = None, label: str = ""):
        self.metadata, self.io, self.spark, self.label = metadata, io, spark, label
        self.mode = planning_mode(metadata, DATA_PLANNING_MODE)

    def load(self, decoder: EntryDecoder, manifests: list[ManifestFile]) -> pa.Table:
        decoder.io = self.io  # (the executors read the manifests with the table's FileIO)
        local = self.spark is None or not manifests or self.mode == "local" or \
            (self.mode == "auto" and _small_enough(self.metadata, manifests))
        if local:
            return decoder.load_many(((m, i, self.io) for i, m in enumerate(manifests)), DRIVER_THREADS)
        with job_description(self.spark, f"CHANGE-PLANNING {self.label}".strip()):
            return collect_arrow(entries_df(self.spark, manifests, decoder), decoder.schema)


def _own(entries: pa.Table, snapshot_id: int, status: int) -> pa.Table:
    return entries.filter(pc.and_(pc.equal(entries.column("status"), scalar(status, pa.int32())),
                                  pc.equal(entries.column("snapshot_id"), scalar(snapshot_id, pa.int64()))))


def _tasks(layout: PartitionLayout, entries: pa.Table, deletes: pa.Array | None = None) -> pa.Table:
    """Data entries as scan tasks (the plan's columns), with ``deletes`` (none when None)."""
    schema = _tasks_arrow_schema(layout)
    if deletes is None:
        deletes = from_python([[] for _ in range(entries.num_rows)], schema.field("deletes").type)
    columns = {"data_sequence_number": entries.column("sequence_number"), "deletes": deletes}
    return pa.Table.from_arrays([columns[c] if c in columns else entries.column(c) for c in PLAN_COLUMNS],
                                schema=schema)


def appended_tasks(metadata: TableMetadata, io: FileIO, snapshots: list[Snapshot], bound: Bound = TRUE,
                   spark: Any = None, label: str = "") -> pa.Table:
    """The data files the ``append`` snapshots of ``snapshots`` added, as scan tasks without deletes, pruned by
    ``bound`` as a scan prunes them (Java's incremental append scan); ``spark`` decodes large manifests on the
    executors (:class:`_Loader`)."""
    loader = _Loader(metadata, io, spark, label)
    layout = PartitionLayout(metadata)
    filters = _partition_filters(metadata, bound)
    metrics = None if bound is TRUE else MetricsFilter(bound, {f.field_id: f.field_type for s in metadata.schemas
                                                                for f in s.index_by_id().values()})
    decoder = _decoder(layout, DATA_ENTRY_COLUMNS, filters, metrics)
    parts = []
    for s in snapshots:
        if s.operation != APPEND:
            continue
        entries = loader.load(decoder, _own_manifests(io, s, MANIFEST_DATA))
        parts.append(_tasks(layout, _own(entries, s.snapshot_id, ADDED)))
    return pa.concat_tables(parts) if parts else empty_table(_tasks_arrow_schema(layout))


@dataclass
class SnapshotChange:
    """One snapshot of a changelog: its ``ordinal`` in the range, and the scan tasks whose rows it changed, as
    of its parent (``before``) and as of itself (``after``)."""

    snapshot: Snapshot
    ordinal: int
    before: pa.Table
    after: pa.Table


def changelog_snapshots(snapshots: list[Snapshot]) -> list[Snapshot]:
    """The snapshots of a range a changelog reports: all but ``replace`` ones."""
    return [s for s in snapshots if s.operation != REPLACE]


def snapshot_change(metadata: TableMetadata, io: FileIO, snapshot: Snapshot, ordinal: int,
                    bound: Bound = TRUE, spark: Any = None, label: str = "") -> SnapshotChange:
    """The tasks of one snapshot's changes (see the module docstring); ``bound`` prunes the data files as a scan
    does (rows are filtered afterwards); ``spark`` decodes large manifests on the executors (:class:`_Loader`)."""
    loader = _Loader(metadata, io, spark, label)
    layout = PartitionLayout(metadata)
    filters = _partition_filters(metadata, bound)
    unpartitioned = {s.spec_id for s in metadata.partition_specs if s.is_unpartitioned}
    sid = snapshot.snapshot_id
    data = loader.load(_decoder(layout, DATA_ENTRY_COLUMNS, filters), _own_manifests(io, snapshot, MANIFEST_DATA))
    data = data.filter(pc.equal(data.column("content"), scalar(0, pa.int32())))
    added, removed = _own(data, sid, ADDED), _own(data, sid, DELETED)
    delete_decoder = _decoder(layout, DELETE_ENTRY_COLUMNS, path_bounds=True)
    own_deletes = loader.load(delete_decoder, _own_manifests(io, snapshot, MANIFEST_DELETES))
    added_deletes, removed_deletes = _own(own_deletes, sid, ADDED), _own(own_deletes, sid, DELETED)
    parent = metadata.snapshot_by_id(snapshot.parent_snapshot_id) \
        if snapshot.parent_snapshot_id is not None else None
    if not added_deletes.num_rows and not removed_deletes.num_rows and not _has_deletes(parent):
        return SnapshotChange(snapshot, ordinal, _tasks(layout, removed), _tasks(layout, added))
    # the partitions whose rows the deletes it added or removed, or the data files it removed, reach
    reach = _Reach(layout, unpartitioned)
    for t in (added_deletes, removed_deletes, removed):
        reach.add(t)
    before_deletes = _live_deletes(loader, parent, delete_decoder, reach)
    after_deletes = _live_deletes(loader, snapshot, delete_decoder, reach)
    before_matcher = DeleteMatcher(before_deletes, unpartitioned)
    after_matcher = DeleteMatcher(after_deletes, unpartitioned)
    kept = None
    if added_deletes.num_rows or removed_deletes.num_rows:
        # the data files of the parent the changed deletes may reach (those it removed are in ``removed``)
        candidates = _live_data(loader, parent, _decoder(layout, DATA_ENTRY_COLUMNS, filters), reach)
        gone = set(removed.column("file_path").to_pylist())
        if gone:
            candidates = candidates.filter(pc.invert(pc.is_in(candidates.column("file_path"),
                                                              value_set=strings(sorted(gone)))))
        was, now = before_matcher.deletes_for(candidates), after_matcher.deletes_for(candidates)
        changed = [i for i, (a, b) in enumerate(zip(_delete_keys(was), _delete_keys(now))) if a != b]
        kept = candidates.take(indices(changed))
    before = removed if kept is None else pa.concat_tables([removed.select(kept.column_names), kept])
    after = added if kept is None else pa.concat_tables([added.select(kept.column_names), kept])
    return SnapshotChange(snapshot, ordinal, _tasks(layout, before, before_matcher.deletes_for(before)),
                          _tasks(layout, after, after_matcher.deletes_for(after)))


def _has_deletes(snapshot: Snapshot | None) -> bool:
    if snapshot is None:
        return False
    total = (snapshot.summary or {}).get("total-delete-files")
    return total is None or total != "0"


def _delete_keys(deletes: pa.Array) -> list[tuple]:
    return [tuple(sorted((d["file_path"], d["content_offset"]) for d in row or ())) for row in deletes.to_pylist()]


class _Reach:
    """The (spec, partition) pairs that delete files or data files are in, and whether a global equality delete
    (an unpartitioned spec's) reaches every partition; prunes manifests by their partition summaries."""

    def __init__(self, layout: PartitionLayout, unpartitioned: set[int]):
        self.layout = layout
        self.unpartitioned = unpartitioned
        self.everywhere = False
        self.keys: set[tuple] = set()

    def add(self, entries: pa.Table) -> None:
        specs = entries.column("spec_id").to_pylist()
        parts = entries.column("partition").to_pylist()
        contents = entries.column("content").to_pylist()
        for spec_id, part, content in zip(specs, parts, contents):
            if content == 2 and spec_id in self.unpartitioned:
                self.everywhere = True
            self.keys.add(self.key(spec_id, part))

    def key(self, spec_id: int, part: dict | None) -> tuple:
        values = tuple((part or {}).get(self.layout.slots[i].name) for _, i in self.layout.by_spec.get(spec_id, ()))
        return spec_id, values

    def entries(self, entries: pa.Table) -> pa.Table:
        """The entries of ``entries`` in reach (equality deletes of an unpartitioned spec reach everything)."""
        if self.everywhere:
            return entries
        specs = entries.column("spec_id").to_pylist()
        parts = entries.column("partition").to_pylist()
        contents = entries.column("content").to_pylist()
        keep = [self.key(s, p) in self.keys or (c == 2 and s in self.unpartitioned)
                for s, p, c in zip(specs, parts, contents)]
        return entries.filter(from_bools(np.array(keep, bool)))

    def manifests(self, metadata: TableMetadata, manifests: list[ManifestFile]) -> list[ManifestFile]:
        """The manifests whose partition summaries may hold a partition in reach."""
        if self.everywhere:
            return manifests
        schema = metadata.current_schema
        by_spec: dict[int, list[tuple]] = {}
        for spec_id, values in self.keys:
            by_spec.setdefault(spec_id, []).append(values)
        out = []
        known = {spec_id: all(self.layout.slots[i].known for _, i in pairs)
                 for spec_id, pairs in self.layout.by_spec.items()}
        for m in manifests:
            spec = metadata.spec(m.partition_spec_id)
            if spec.is_unpartitioned or not known.get(m.partition_spec_id, False):
                out.append(m)  # (an unpartitioned manifest may hold global equality deletes; an unknown
                continue       # transform's values are text, not comparable with its bounds)
            wanted = by_spec.get(m.partition_spec_id)
            if wanted and (m.partitions is None or any(_summaries_hold(spec.partition_type(schema), m.partitions, v)
                                                       for v in wanted)):
                out.append(m)
        return out


def _summaries_hold(ptype, summaries, values: tuple) -> bool:
    """Whether a manifest's partition summaries allow the partition ``values`` (physical, in field order); True
    wherever a value cannot be compared with its bounds (NaN, a type whose values differ from its bounds')."""
    for field, summary, v in zip(ptype.fields, summaries, values):
        if v is None:
            if not summary.contains_null:
                return False
            continue
        if summary.lower_bound is None or summary.upper_bound is None or v != v:
            continue
        try:
            if not from_bytes(field.field_type, summary.lower_bound) <= v <= \
                    from_bytes(field.field_type, summary.upper_bound):
                return False
        except (TypeError, ValueError):
            continue
    return True


def _live_deletes(loader: _Loader, snapshot: Snapshot | None, decoder: EntryDecoder, reach: _Reach) -> pa.Table:
    """The live delete files of ``snapshot`` in reach (an empty table when there is no snapshot)."""
    if snapshot is None:
        return empty_table(decoder.schema)
    manifests = [m for m in snapshot_manifest_table(loader.io, snapshot).manifests()
                 if m.content == MANIFEST_DELETES]
    entries = loader.load(decoder, reach.manifests(loader.metadata, manifests))
    entries = entries.filter(pc.not_equal(entries.column("status"), DELETED))
    return reach.entries(entries).select(list(DELETE_ENTRY_COLUMNS))


def _live_data(loader: _Loader, snapshot: Snapshot | None, decoder: EntryDecoder, reach: _Reach) -> pa.Table:
    """The live data files of ``snapshot`` in reach."""
    if snapshot is None:
        return empty_table(decoder.schema)
    listing = snapshot_manifest_table(loader.io, snapshot)
    manifests = [m for m in prune_manifests(loader.metadata, listing, decoder.partition_filters)
                 if m.content == MANIFEST_DATA]
    entries = loader.load(decoder, reach.manifests(loader.metadata, manifests))
    entries = entries.filter(pc.and_(pc.not_equal(entries.column("status"), scalar(DELETED, pa.int32())),
                                     pc.equal(entries.column("content"), scalar(0, pa.int32()))))
    return reach.entries(entries)


__all__ = ["snapshots_between", "snapshot_id_argument", "start_for_timestamp", "end_for_timestamp", "appended_tasks", "SnapshotChange",
           "changelog_snapshots", "snapshot_change"]
