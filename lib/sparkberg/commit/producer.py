"""The snapshot producer: an operation's :class:`~sparkberg.operations.changes.Changes` (added data files, added
delete files, removed files) as the change of one snapshot (:class:`SnapshotChange`).

New files go into new manifests, written once. Each try, on the freshest base the committer gives it
(:mod:`sparkberg.commit.committer`), re-validates (the files to remove must still be live: a concurrent commit that
removed them is a conflict, spec "Commit Conflict Resolution and Retry"; the operation may add its own isolation
check), rewrites only the manifests that hold removed files (removed entries become DELETED, the rest EXISTING
with their sequence numbers and row ids written out), merges manifests per ``commit.manifest-merge.*``
(:mod:`sparkberg.commit.manifests`) and writes a manifest list; its :class:`~sparkberg.commit.pending.PendingCommit`
adds the snapshot and moves the target branch to it, requiring the branch still at the head it built on.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, replace

from sparkberg.arrays import from_bools, int_values
from sparkberg.avro.copies import EntryFormat, copies
from sparkberg.avro.decode import compiled_for, manifest_columns, manifest_entries
from sparkberg.avro.manifest import manifest_file_for, write_encoded_manifest, write_manifest, write_manifest_list
from sparkberg.commit.manifests import merge_manifests
from sparkberg.commit.pending import PendingCommit
from sparkberg.errors import CommitFailedException, SparkbergError
from sparkberg.io.fileio import FileIO, deleted_on_failure
from sparkberg.operations.changes import Changes, file_key
from sparkberg.operations.request import CommitRequest
from sparkberg.operations.target import Target
from sparkberg.planning.entries import known_entries, snapshot_manifests
from sparkberg.format import updates as U
from sparkberg.format.manifests import (
    ADDED, DELETED, EXISTING, MANIFEST_DATA, MANIFEST_DELETES, DataFile, ManifestEntry,
    ManifestFile,
)
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.partitioning import PartitionSpec
from sparkberg.format.snapshots import Snapshot, new_snapshot_id
from sparkberg.format.types import Schema


SUMMARY_TOTALS = ("total-records", "total-files-size", "total-data-files", "total-delete-files",
                  "total-position-deletes", "total-equality-deletes")


def assign_first_row_ids(manifests: list[ManifestFile], next_row_id: int) -> tuple[list[ManifestFile], int]:
    """v3: give every data manifest without a ``first_row_id`` one, in list order (spec "First Row ID
    Assignment"); returns the manifests and the new next-row-id."""
    out = []
    for m in manifests:
        if m.content == MANIFEST_DATA and m.first_row_id is None:
            out.append(replace(m, first_row_id=next_row_id))
            next_row_id += (m.added_rows_count or 0) + (m.existing_rows_count or 0)
        else:
            out.append(m)
    return out, next_row_id


def write_snapshot_list(io: FileIO, directory: str, manifests: list[ManifestFile], base: TableMetadata,
                        snapshot_id: int, seq: int, attempt: int, parent_snapshot_id: int | None
                        ) -> tuple[list[ManifestFile], str, int | None, int | None]:
    """The manifest list of a snapshot (child of ``parent_snapshot_id``) on ``base`` written (try ``attempt`` of its
    commit), v3 row ids assigned first: (the manifests as listed, the list's path, the snapshot's ``first-row-id``
    and ``added-rows``)."""
    first_row_id = added_rows = None
    if base.format_version >= 3:
        first_row_id = base.next_row_id or 0
        manifests, next_row_id = assign_first_row_ids(manifests, first_row_id)
        added_rows = next_row_id - first_row_id
    path = f"{directory}/snap-{snapshot_id}-{attempt + 1}-{uuid.uuid4()}.avro"
    io.create(path, write_manifest_list(manifests, format_version=base.format_version, snapshot_id=snapshot_id,
                                        parent_snapshot_id=parent_snapshot_id, sequence_number=seq,
                                        first_row_id=first_row_id))
    return manifests, path, first_row_id, added_rows


def _summary(head: Snapshot | None, c: Changes, removed: list[DataFile], target: Target,
             properties: dict[str, str]) -> dict[str, str]:
    def count(files, content):
        return [f for f in files if f.content == content]

    added_rows = sum(f.record_count for f in c.added_data)
    dels = [d for _, d in c.added_deletes]
    removed_data = count(removed, 0)
    removed_pos = count(removed, 1)
    removed_eq = count(removed, 2)
    s: dict[str, str] = {**properties, **c.summary, **target.summary(), "operation": c.operation}

    def put(key: str, value: int) -> None:
        if value:
            s[key] = str(value)

    put("added-data-files", len(c.added_data))
    put("deleted-data-files", len(removed_data))
    put("added-records", added_rows)
    put("deleted-records", sum(f.record_count for f in removed_data))
    put("added-files-size", sum(f.file_size_in_bytes for f in c.added_data) + sum(f.file_size_in_bytes for f in dels))
    put("removed-files-size", sum(f.file_size_in_bytes for f in removed))
    put("added-delete-files", len(dels))
    put("added-position-delete-files", len([d for d in dels if d.content == 1 and d.file_format != "puffin"]))
    put("added-dvs", len([d for d in dels if d.file_format == "puffin"]))
    put("added-position-deletes", sum(d.record_count for d in dels if d.content == 1))
    put("added-equality-delete-files", len([d for d in dels if d.content == 2]))
    put("added-equality-deletes", sum(d.record_count for d in dels if d.content == 2))
    put("removed-delete-files", len(removed_pos) + len(removed_eq))
    put("removed-position-deletes", sum(f.record_count for f in removed_pos))
    put("removed-equality-deletes", sum(f.record_count for f in removed_eq))
    s["changed-partition-count"] = str(len({(sid, tuple(sorted(f.partition.items(), key=lambda kv: kv[0])))
                                            for sid, f in [(0, f) for f in c.added_data] + c.added_deletes
                                            + [(0, f) for f in removed]}))
    prev = (head.summary or {}) if head else {}
    if head is None or all(k in prev for k in SUMMARY_TOTALS):
        deltas = {
            "total-records": added_rows - sum(f.record_count for f in removed_data),
            "total-files-size": int(s.get("added-files-size", 0)) - int(s.get("removed-files-size", 0)),
            "total-data-files": len(c.added_data) - len(removed_data),
            "total-delete-files": len(dels) - len(removed_pos) - len(removed_eq),
            "total-position-deletes": sum(d.record_count for d in dels if d.content == 1)
            - sum(f.record_count for f in removed_pos),
            "total-equality-deletes": sum(d.record_count for d in dels if d.content == 2)
            - sum(f.record_count for f in removed_eq),
        }
        for k in SUMMARY_TOTALS:
            s[k] = str(int(prev.get(k, 0)) + deltas[k])
    if c.totals is not None:
        s.update({k: str(c.totals[k]) for k in SUMMARY_TOTALS})
    s["engine-name"] = "sparkberg"
    return s


class SnapshotChange:
    """``changes`` (an operation's, planned on ``start``) as the change of one snapshot on the request's target
    (:mod:`sparkberg.operations.target`), its summary carrying the request's snapshot properties. Made here, once: the
    manifests of the files it adds. Each try (:meth:`on`) checks the base for conflicts, rewrites the manifests
    that hold removed files, merges manifests, and writes a manifest list; see the module docstring."""

    def __init__(self, start: TableMetadata, io: FileIO, changes: Changes, request: CommitRequest):
        self.start, self.io, self.changes, self.request = start, io, changes, request
        self._manifests: list[str] = []  # the new files' manifests, written once for every try
        with deleted_on_failure(io, lambda: changes.written + self._manifests):  # (the operation's files too)
            request.target.head_id(start)  # (a missing branch fails before anything is written)
            if start.format_version == 1 and changes.added_deletes:
                raise SparkbergError("v1 tables cannot hold delete files; upgrade the table to format version 2")
            snapshot_id = new_snapshot_id({s.snapshot_id for s in start.snapshots})
            self._writer = _ManifestWriter(io, f"{start.location}/metadata", start.current_schema,
                                           start.format_version, snapshot_id)
            self._new = _added_manifests(changes, start, self._writer, self._manifests)
        self._listed: dict[str, set[str]] = {}  # each try's manifest list -> the manifests it lists

    def __repr__(self) -> str:
        c = self.changes
        return (f"SnapshotChange({c.operation}{self.request.target.describe()}: {len(c.added_data)} data files and "
                f"{len(c.added_deletes)} delete files added, {len(c.removed)} removed)")

    @property
    def operation(self) -> str:
        """The snapshot's operation."""
        return self.changes.operation

    def files(self) -> list[str]:
        """The operation's data and delete files and the new manifests."""
        return self.changes.written + self._manifests

    def on(self, base: TableMetadata, attempt: int) -> PendingCommit:
        """Try ``attempt`` on ``base``: the snapshot as a child of the target's head there, with the changes'
        metadata updates first; it requires of the base what they do, and the target branch at that head."""
        c, request, target = self.changes, self.request, self.request.target
        request.check_not_committed(base)
        for r in c.requirements:
            try:
                r.check(base)
            except CommitFailedException as e:
                raise CommitFailedException(f"conflict: {c.conflict} ({e})") from None
        evolved = U.apply_all(c.updates, base) if c.updates else base
        if c.updates and evolved.current_schema_id != self._writer.schema.schema_id:
            raise CommitFailedException(f"conflict: {c.conflict} (the files were written for schema "
                                        f"{self._writer.schema.schema_id}, it would be {evolved.current_schema_id})")
        if c.validate is not None:
            c.validate(self.start, evolved)
        requirements = list(c.requirements)
        if target.wap_id is None:  # (a staged snapshot moves no ref)
            ref = base.refs.get(target.branch)
            requirements.append(U.AssertRefSnapshotId(target.branch, None if ref is None else ref.snapshot_id))
        written: list[str] = []
        with deleted_on_failure(self.io, lambda: written):
            snap, manifests = _attempt(self.io, c, evolved, attempt, self._writer, self._new, written, target,
                                       request.summary())
            pending = PendingCommit.of(c.operation, base, [*c.updates, *target.updates(evolved, snap)],
                                       requirements, written, snap)
        self._listed[snap.manifest_list] = {m.manifest_path for m in manifests}
        return pending

    def committed(self, pending: PendingCommit) -> None:
        """The new manifests that merging folded into others, and the files of the committed try its snapshot does
        not list, are referenced by nothing: deleted (in a transaction, once its commit is done)."""
        listed = self._listed[pending.snapshot.manifest_list] | {pending.snapshot.manifest_list}
        self.request.made_obsolete(self.io, lambda: [p for p in self._manifests + list(pending.written)
                                                     if p not in listed])


@dataclass(frozen=True)
class _ManifestWriter:
    """Writes the manifests of one snapshot (``snapshot_id``) of a table into its metadata directory."""

    io: FileIO
    directory: str
    schema: Schema
    version: int
    snapshot_id: int

    def write(self, entries: list[ManifestEntry], spec: PartitionSpec, content: int, seq: int, written: list[str],
              tag: str) -> ManifestFile:
        """A manifest of ``entries``, its path added to ``written``."""
        path = f"{self.directory}/{uuid.uuid4()}-{tag}.avro"
        data = write_manifest(entries, format_version=self.version, spec=spec, schema=self.schema, content=content)
        self.io.create(path, data)
        written.append(path)
        return manifest_file_for(entries, path=path, length=len(data), spec=spec, schema=self.schema,
                                 added_snapshot_id=self.snapshot_id, content=content, sequence_number=seq)


def _added_manifests(c: Changes, start: TableMetadata, writer: _ManifestWriter, written: list[str]
                     ) -> list[tuple[ManifestFile, list[ManifestEntry]]]:
    """The manifests of the files ``c`` adds (data files in the default spec, delete files by spec)."""
    out = []
    if c.added_data:
        entries = [ManifestEntry(ADDED, f, writer.snapshot_id, c.data_sequence_number) for f in c.added_data]
        spec = start.spec(start.default_spec_id)
        out.append((writer.write(entries, spec, MANIFEST_DATA, 0, written, f"m{len(written)}"), entries))
    by_spec: dict[int, list[ManifestEntry]] = {}
    for spec_id, d in c.added_deletes:
        by_spec.setdefault(spec_id, []).append(ManifestEntry(ADDED, d, writer.snapshot_id))
    for spec_id, entries in sorted(by_spec.items()):
        out.append((writer.write(entries, start.spec(spec_id), MANIFEST_DELETES, 0, written, f"m{len(written)}"),
                    entries))
    return out


def _attempt(io: FileIO, c: Changes, base: TableMetadata, n: int, writer: _ManifestWriter,
             new_manifests: list[tuple[ManifestFile, list[ManifestEntry]]], written: list[str], target: Target,
             properties: dict[str, str]) -> tuple[Snapshot, list[ManifestFile]]:
    """Try ``n`` of the commit on ``base``, as a child of ``target``'s head: (its snapshot, the snapshot's
    manifests); every file it writes is added to ``written``."""
    v, schema, snapshot_id = writer.version, writer.schema, writer.snapshot_id
    seq = base.last_sequence_number + 1 if v >= 2 else 0
    head = target.head(base)
    parent_id = None if head is None else head.snapshot_id
    manifests, removed = _carry_over(io, base, head, c.removed, snapshot_id, seq, v, schema, written, c.required)
    fresh = [manifest_file_for(entries, path=mf.manifest_path, length=mf.manifest_length,
                               spec=base.spec(mf.partition_spec_id), schema=schema, added_snapshot_id=snapshot_id,
                               content=mf.content, sequence_number=seq)
             for mf, entries in new_manifests]
    manifests = merge_manifests(fresh + manifests, snapshot_id, base.properties, writer.io,
                                lambda entries, spec_id, content: writer.write(
                                    entries, base.spec(spec_id), content, seq, written, "m-merged"))
    manifests, list_path, first_row_id, added_rows = write_snapshot_list(writer.io, writer.directory, manifests, base,
                                                                         snapshot_id, seq, n, parent_id)
    written.append(list_path)
    snap = Snapshot(snapshot_id=snapshot_id, timestamp_ms=int(time.time() * 1000),
                    parent_snapshot_id=parent_id, sequence_number=seq if v >= 2 else None,
                    manifest_list=list_path, summary=_summary(head, c, removed, target, properties),
                    schema_id=schema.schema_id,
                    first_row_id=first_row_id, added_rows=added_rows)
    return snap, manifests


def _carry_over(io: FileIO, base: TableMetadata, head: Snapshot | None, removed_keys: set, snapshot_id: int, seq: int,
                v: int, schema, written: list[str], required: set[str] = frozenset()
                ) -> tuple[list[ManifestFile], list[DataFile]]:
    """The manifests of ``head`` (the snapshot the commit builds on), with those holding files to remove
    rewritten; fails (conflict) when a file to remove is no longer live."""
    kept: list[ManifestFile] = []
    removed: list[DataFile] = []
    found: set = set()
    if head is None:
        if removed_keys:
            raise CommitFailedException(f"cannot remove {len(removed_keys)} files: the table has no snapshot")
        return kept, removed
    still_live: set[str] = set()
    formats: dict[int, EntryFormat] = {}
    for mf in snapshot_manifests(io, head):
        if not removed_keys and not (required and mf.content == MANIFEST_DATA):
            kept.append(mf)
            continue
        data = io.read(mf.manifest_path)
        if not removed_keys:  # (read for the files the commit requires alone)
            still_live.update(_live_data_files(data, mf))
            kept.append(mf)
            continue
        entries = manifest_entries(data, mf)
        live = [e for e in entries if e.status != DELETED]
        still_live.update(e.data_file.file_path for e in live if e.data_file.content == 0)
        hits = [e for e in live if file_key(e.data_file) in removed_keys]
        if not hits:
            kept.append(mf)
            continue
        out = []
        for e in live:
            d = e.data_file
            if file_key(d) in removed_keys:
                found.add(file_key(d))
                removed.append(d)
                out.append(ManifestEntry(DELETED, d, snapshot_id, e.sequence_number, e.file_sequence_number))
            else:
                out.append(ManifestEntry(EXISTING, d, e.snapshot_id, e.sequence_number, e.file_sequence_number))
        spec = base.spec(mf.partition_spec_id)
        path = f"{base.location}/metadata/{uuid.uuid4()}-m-rewrite.avro"
        data = _rewritten(_entry_format(formats, len(entries), v, spec, schema), mf, data, entries, out, v, spec,
                          schema)
        io.create(path, data)
        written.append(path)
        new_mf = manifest_file_for(out, path=path, length=len(data), spec=spec, schema=schema,
                                   added_snapshot_id=snapshot_id, content=mf.content, sequence_number=seq)
        kept.append(new_mf)
    gone = set(required) - still_live
    if gone:
        raise CommitFailedException(f"conflict: data file {sorted(gone)[0]} was removed by a concurrent commit")
    missing = removed_keys - found
    if missing:
        raise CommitFailedException(f"conflict: {len(missing)} file(s) to remove are no longer in the table, e.g. "
                                    f"{sorted(missing)[0][0]}")
    return kept, removed


def _live_data_files(data: bytes, mf: ManifestFile) -> list[str]:
    """The paths of the live data files of a manifest (``data``: its bytes), from the columns of its entries."""
    cols, = manifest_columns([(data, mf.manifest_path, known_entries(mf))], names=frozenset({"file_path", "content"}))
    status, content = int_values(cols.columns["status"])[0], int_values(cols.columns["content"])[0]
    return cols.columns["file_path"].filter(from_bools((status != DELETED) & (content == 0))).to_pylist()


def _entry_format(formats: dict[int, EntryFormat], count: int, version: int, spec: PartitionSpec,
                  schema: Schema) -> EntryFormat | None:
    """The table's manifest format for ``spec`` (kept in ``formats``) when a manifest of ``count`` entries is to
    be rewritten by copies; None when its entries are encoded anew, where the decoders' choice
    (:func:`~sparkberg.avro.decode.compiled_for`) leaves compiled code out."""
    if not compiled_for(count):
        return None
    return formats.get(spec.spec_id) or formats.setdefault(spec.spec_id, EntryFormat(version, spec, schema))


def _rewritten(fmt: EntryFormat | None, mf: ManifestFile, data: bytes, entries: list[ManifestEntry],
               out: list[ManifestEntry], version: int, spec: PartitionSpec, schema: Schema) -> bytes:
    """The manifest of ``out``: the live ones of ``entries`` (those of manifest ``mf``, read from ``data``), with
    a new status and what they inherit written out. Each entry's ``data_file`` bytes are copied from ``data`` where
    it encodes them as ``fmt``, the table's manifests, do (:mod:`sparkberg.avro.copies`), else (or with no
    ``fmt``) all are encoded anew."""
    c = copies(fmt, mf, data) if fmt is not None else None
    if c is None or c.count != len(entries):
        return write_manifest(out, format_version=version, spec=spec, schema=schema, content=mf.content)
    live = [i for i, e in enumerate(entries) if e.status != DELETED]
    records = [fmt.prefix(e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number) + c.data_file(i)
               for i, e in zip(live, out)]
    return write_encoded_manifest(records, format_version=version, spec=spec, schema=schema, content=mf.content)


__all__ = ["SnapshotChange", "write_snapshot_list", "assign_first_row_ids", "SUMMARY_TOTALS"]
