"""Manifest rewrite, as Iceberg Java's ``RewriteManifestsSparkAction``: the current snapshot's manifests (of one
partition spec, or all) read on the executors, their live entries clustered by partition and written again as
manifests of about ``commit.manifest.target-size-bytes``, in one ``replace`` snapshot.

Entries keep everything the spec lets a reader inherit (snapshot id, data and file sequence numbers, v3
``first_row_id``), written out explicitly as EXISTING entries, so every row keeps its ``_row_id`` and
``_last_updated_sequence_number`` (Iceberg Java 1.10.2's action gives existing files new row ids; the spec is the
truth). A new data manifest's ``first_row_id`` is the smallest of its entries', so the rewrite consumes no row
ids. A (content, spec) group of one manifest that would be rewritten into one is left alone. The commit keeps
the manifests other writers added meanwhile; if one of the rewritten manifests is no longer in the table, nothing
is committed and the new manifests are deleted.

Entries travel through the shuffle encoded, as the new manifests hold them: the writers only join and deflate
them. Their ``data_file`` bytes are copied where the manifest encodes it as the table's own manifests do
(:mod:`sparkberg.avro.copies`); any other manifest's entries are decoded and encoded again by fastavro, the
reference the copies are tested against.
"""
from __future__ import annotations

import io
import math
import pickle
import struct
import time
import uuid
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Iterator, Sequence

import fastavro
import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame

from sparkberg.arrays import batch_of_columns
from sparkberg.avro import compiled
from sparkberg.avro.copies import EntryFormat, copies
from sparkberg.avro.decode import manifest_entries
from sparkberg.avro.manifest import entry_record, manifest_file_of, partition_fields, write_encoded_manifest
from sparkberg.avro.types import from_avro_value
from sparkberg.commit.manifests import merge_settings
from sparkberg.commit.pending import Commit, PendingCommit
from sparkberg.commit.producer import write_snapshot_list
from sparkberg.errors import ValidationError
from sparkberg.io.fileio import FileIO
from sparkberg.operations.target import MAIN
from sparkberg.planning.entries import manifests_df, manifests_of, snapshot_manifests
from sparkberg.spark.frames import local_dataframe, map_in_arrow
from sparkberg.format import updates as U
from sparkberg.format.manifests import DELETED, EXISTING, MANIFEST_DATA, ManifestEntry, ManifestFile
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.types import BOOLEAN, STRING
from sparkberg.format.values import to_bytes
from sparkberg.format.scalars import decimal_unscaled
from sparkberg.format.snapshots import MAIN_BRANCH, Snapshot, new_snapshot_id

RESULT_DDL = "rewritten_manifests_count int, added_manifests_count int"
_ENTRIES_DDL = ("content int, spec_id int, key binary, entry binary, partition binary, records bigint, "
                "sequence_number bigint, first_row_id bigint")
_ENTRIES_SCHEMA = pa.schema([("content", pa.int32()), ("spec_id", pa.int32()), ("key", pa.binary()),
                             ("entry", pa.binary()), ("partition", pa.binary()), ("records", pa.int64()),
                             ("sequence_number", pa.int64()), ("first_row_id", pa.int64())])
# the summary totals a replace snapshot carries over (it adds and removes no file)
_TOTALS = ("total-records", "total-files-size", "total-data-files", "total-delete-files", "total-position-deletes",
           "total-equality-deletes")


def sort_key(values: tuple, types: Sequence[Any]) -> bytes:
    """Bytes that order partition tuples as their values order (nulls first), to cluster entries by partition."""
    out = []
    for v, t in zip(values, types):
        if v is None:
            out.append(b"\x00")
        elif isinstance(v, bool):
            out.append(b"\x01\x01" if v else b"\x01\x00")
        elif isinstance(v, int):
            out.append(b"\x01" + ((v + (1 << 63)) & _MASK).to_bytes(8, "big"))
        elif isinstance(v, float):
            bits = int.from_bytes(struct.pack(">d", v), "big")
            out.append(b"\x01" + ((bits ^ _MASK) if bits >> 63 else (bits | (1 << 63))).to_bytes(8, "big"))
        elif isinstance(v, (str, bytes)):
            out.append(b"\x01" + (v.encode("utf-8") if isinstance(v, str) else v) + b"\x00")
        elif isinstance(v, Decimal):
            unscaled = decimal_unscaled(v, t.scale)
            out.append(b"\x01" + ((unscaled + (1 << 127)) & ((1 << 128) - 1)).to_bytes(16, "big"))
        else:
            out.append(b"\x01" + to_bytes(t, v))
    return b"".join(out)


_MASK = (1 << 64) - 1


def _copied(fmt: EntryFormat, mf: ManifestFile, data: bytes) -> dict | None:
    """The live entries of a manifest as EXISTING entries, their ``data_file``'s bytes copied
    (:func:`~sparkberg.avro.copies.copies`): None where the manifest's ``data_file`` is encoded otherwise than
    ``fmt``'s or the compiled decoder cannot read it."""
    c = copies(fmt, mf, data)
    if c is None:
        return None
    partitions = list(zip(*(_partition_values(c.cols, path, t) for path, (_, _, t) in
                            zip(c.partition_paths, fmt.pfields)))) or [()] * c.count
    seq, row_ids = c.sequence_number, c.first_row_id
    out = _Rows()
    for i in np.flatnonzero(c.status != DELETED).tolist():
        out.add(mf, fmt.prefix(EXISTING, *c.inherited(i)) + c.data_file(i), partitions[i], fmt, int(c.records[i]),
                int(seq[0][i]) if seq[1][i] else None, int(row_ids[0][i]) if row_ids[1][i] else None)
    return out.rows


def _partition_values(cols, path: tuple[str, ...], t: Any) -> list:
    """A partition field's values as the entry model holds them (:func:`~sparkberg.avro.types.from_avro_value`)."""
    kind = cols.kind(path)
    if kind == compiled.INTS:
        values, valid = cols.ints(path)
        raw = [bool(v) if t == BOOLEAN else v for v in values.tolist()]
    elif kind == compiled.FLOATS:
        values, valid = cols.floats(path)
        raw = values.tolist()
    else:
        arr = cols.binary(path, string=t == STRING)
        return [from_avro_value(t, v) for v in arr.to_pylist()]
    return [from_avro_value(t, v) if ok else None for v, ok in zip(raw, valid.tolist())]


def _encoded(fmt: EntryFormat, mf: ManifestFile, data: bytes) -> dict:
    """:func:`_copied`'s rows by decoding every entry and encoding it again: the reference, and the way for
    manifests of another encoding (another format version's, another writer's)."""
    out = _Rows()
    for e in manifest_entries(data, mf):
        if e.status == DELETED:
            continue
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, fmt.parsed, entry_record(
            ManifestEntry(EXISTING, e.data_file, e.snapshot_id, e.sequence_number, e.file_sequence_number),
            fmt.version, fmt.pfields))
        out.add(mf, buf.getvalue(), tuple(e.data_file.partition.get(fid) for _, fid, _ in fmt.pfields), fmt,
                e.data_file.record_count, e.sequence_number, e.data_file.first_row_id)
    return out.rows


class _Rows:
    """The rows :class:`_Entries` yields for a manifest's entries."""

    def __init__(self):
        self.rows: dict[str, list] = {name: [] for name in _ENTRIES_SCHEMA.names}

    def add(self, mf: ManifestFile, entry: bytes, partition: tuple, fmt: EntryFormat, records: int, seq: int | None,
            first_row_id: int | None) -> None:
        for name, value in (("content", mf.content), ("spec_id", mf.partition_spec_id),
                            ("key", sort_key(partition, fmt.ptypes)), ("entry", entry),
                            ("partition", pickle.dumps(partition)), ("records", records),
                            ("sequence_number", seq), ("first_row_id", first_row_id)):
            self.rows[name].append(value)


class _Entries:
    """The live entries of each manifest (executors; picklable), as EXISTING entries with what they inherit
    written out, encoded in the table's manifest schema, with their partition's sort key."""

    def __init__(self, metadata: TableMetadata, io: FileIO):
        self.version = metadata.format_version
        self.specs = metadata.specs_by_id
        self.schema = metadata.current_schema
        self.io = io  # (the table's FileIO, which reads the manifests on the executors)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        formats: dict[int, EntryFormat] = {}
        for mf, _, io_ in manifests_of(batches, self.io):
            fmt = formats.get(mf.partition_spec_id)
            if fmt is None:
                fmt = formats[mf.partition_spec_id] = EntryFormat(self.version, self.specs[mf.partition_spec_id],
                                                               self.schema)
            data = io_.read(mf.manifest_path)
            rows = _copied(fmt, mf, data)
            yield batch_of_columns(rows if rows is not None else _encoded(fmt, mf, data), _ENTRIES_SCHEMA)


class _Writer:
    """Writes a task's entries (sorted by content, spec and partition) as manifests (executors; picklable)."""

    def __init__(self, metadata: TableMetadata, snapshot_id: int, entries_per_manifest: int, io: FileIO):
        self.specs = metadata.specs_by_id
        self.schema = metadata.current_schema
        self.version = metadata.format_version
        self.directory = f"{metadata.location.rstrip('/')}/metadata"
        self.snapshot_id = snapshot_id
        self.entries_per_manifest = entries_per_manifest  # (rolls a task's manifest over at the target size)
        self.io = io  # (the table's FileIO, which writes the new manifests on the executors)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        io_ = self.io
        out: list[bytes] = []
        group: list[dict] = []
        current: tuple | None = None

        def flush() -> None:
            if group:
                out.append(pickle.dumps(self._write(io_, group, *current)))
                group.clear()
        for batch in batches:
            for row in batch.to_pylist():
                if (row["content"], row["spec_id"]) != current or len(group) >= self.entries_per_manifest:
                    flush()
                    current = (row["content"], row["spec_id"])
                group.append(row)
        flush()
        yield batch_of_columns({"manifest": out}, pa.schema([("manifest", pa.binary())]))

    def _write(self, io_, rows: list[dict], content: int, spec_id: int) -> ManifestFile:
        spec = self.specs[spec_id]
        path = f"{self.directory}/{uuid.uuid4()}-m-rewritten.avro"
        data = write_encoded_manifest([r["entry"] for r in rows], format_version=self.version, spec=spec,
                                      schema=self.schema, content=content)
        io_.create(path, data)
        ids = [r["first_row_id"] for r in rows]
        fids = [fid for _, fid, _ in partition_fields(spec, self.schema)]
        return manifest_file_of(
            ((EXISTING, r["records"], r["sequence_number"], dict(zip(fids, pickle.loads(r["partition"]))))
             for r in rows), path=path, length=len(data), spec=spec, schema=self.schema,
            added_snapshot_id=self.snapshot_id, content=content,
            # (every entry has its own: no new row ids consumed)
            first_row_id=min(ids) if self.version >= 3 and content == MANIFEST_DATA and None not in ids else None)


def rewrite_manifests(table, commit: Commit, spec_id: int | None = None, dry_run: bool = False) -> DataFrame:
    """See :meth:`sparkberg.table.Table.rewrite_manifests` (``commit``: the table's committer)."""
    spark = table.spark
    table.refresh()
    start = table.metadata
    empty = local_dataframe(spark, [(0, 0)], RESULT_DDL)
    if start.current_snapshot is None:
        return empty
    if spec_id is not None and spec_id not in start.specs_by_id:
        raise ValidationError(f"table {table.name} has no partition spec {spec_id}")
    _, _, target = merge_settings(start.properties)
    groups: dict[tuple[int, int], list[ManifestFile]] = {}
    for m in snapshot_manifests(table.io, start.current_snapshot):
        if spec_id is None or m.partition_spec_id == spec_id:
            groups.setdefault((m.content, m.partition_spec_id), []).append(m)
    counts = {k: max(1, math.ceil(sum(m.manifest_length for m in g) / target)) for k, g in groups.items()}
    groups = {k: g for k, g in groups.items() if not (len(g) == 1 and counts[k] == 1)}
    chosen = [m for g in groups.values() for m in g]
    if not chosen:
        return empty
    if dry_run:  # (the manifests it would write: as planned, one per target size of each group)
        return local_dataframe(spark, [(len(chosen), sum(counts[k] for k in groups))], RESULT_DDL)
    snapshot_id = new_snapshot_id({s.snapshot_id for s in start.snapshots})
    entries = sum((m.existing_files_count or 0) + (m.added_files_count or 0) for m in chosen)
    per_manifest = max(1, math.ceil(entries * target / max(1, sum(m.manifest_length for m in chosen))))
    entries_rows = map_in_arrow(manifests_df(spark, chosen), _Entries(start, table.io), _ENTRIES_DDL) \
        .repartitionByRange(sum(counts[k] for k in groups), "content", "spec_id", "key") \
        .sortWithinPartitions("content", "spec_id", "key")
    written = map_in_arrow(entries_rows, _Writer(start, snapshot_id, per_manifest, table.io), "manifest binary")
    new = [pickle.loads(r["manifest"]) for r in written.collect()]
    commit(ManifestReplacement(table.name, table.io, snapshot_id, tuple(chosen), tuple(new)))
    return local_dataframe(spark, [(len(chosen), len(new))], RESULT_DDL)


@dataclass(frozen=True)
class ManifestReplacement:
    """The ``replace`` snapshot of a manifest rewrite of table ``name``: the ``new`` manifests in place of the
    ``rewritten`` ones, every other current manifest kept."""

    name: str
    io: FileIO
    snapshot_id: int
    rewritten: tuple[ManifestFile, ...]
    new: tuple[ManifestFile, ...]
    operation = "replace"

    def files(self) -> list[str]:
        """The new manifests."""
        return [m.manifest_path for m in self.new]

    def committed(self, pending: PendingCommit) -> None:
        """Nothing to let go: the rewritten manifests go with the snapshots that list them, at their expiry."""

    def on(self, base: TableMetadata, n: int) -> PendingCommit:
        """The snapshot on ``base``, main's current one; a rewritten manifest a concurrent commit replaced is an
        error."""
        return _replace(self, base, n)


def _replace(r: ManifestReplacement, base: TableMetadata, n: int) -> PendingCommit:
    """The ``replace`` snapshot on ``base``: the new manifests and every current one not rewritten."""
    snapshot_id, rewritten, new = r.snapshot_id, r.rewritten, r.new
    current = snapshot_manifests(r.io, base.current_snapshot)
    paths = {m.manifest_path for m in current}
    gone = [m.manifest_path for m in rewritten if m.manifest_path not in paths]
    if gone:
        raise ValidationError(f"cannot rewrite the manifests of table {r.name}: {len(gone)} of them were "
                              f"replaced by a concurrent commit (e.g. {gone[0]}); nothing committed")
    v = base.format_version
    seq = base.last_sequence_number + 1 if v >= 2 else 0
    done = {m.manifest_path for m in rewritten}
    manifests = [replace(m, sequence_number=seq, added_snapshot_id=snapshot_id) for m in new] + \
        [m for m in current if m.manifest_path not in done]
    manifests, list_path, first_row_id, added_rows = write_snapshot_list(
        r.io, f"{base.location.rstrip('/')}/metadata", manifests, base, snapshot_id, seq, n,
        base.current_snapshot_id)
    previous = base.current_snapshot.summary
    summary = {"operation": "replace", "manifests-created": str(len(new)),
               "manifests-kept": str(len(manifests) - len(new)), "manifests-replaced": str(len(rewritten)),
               "entries-processed": str(sum((m.existing_files_count or 0) + (m.added_files_count or 0)
                                            for m in new)),
               **{k: previous[k] for k in _TOTALS if k in previous}}
    snap = Snapshot(snapshot_id=snapshot_id, timestamp_ms=int(time.time() * 1000),
                    parent_snapshot_id=base.current_snapshot_id, sequence_number=seq if v >= 2 else None,
                    manifest_list=list_path, summary=summary, schema_id=base.current_schema_id,
                    first_row_id=first_row_id, added_rows=added_rows)
    return PendingCommit.of("replace", base, MAIN.updates(base, snap),
                            [U.AssertRefSnapshotId(MAIN_BRANCH, base.current_snapshot_id)], [list_path], snap)


