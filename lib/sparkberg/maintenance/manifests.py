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
"""
from __future__ import annotations

import math
import pickle
import time
import uuid
from dataclasses import replace
from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame

from sparkberg.avro.decode import manifest_entries
from sparkberg.avro.manifest import manifest_file_for, write_manifest
from sparkberg.commit.manifests import merge_settings
from sparkberg.commit.producer import write_snapshot_list
from sparkberg.commit.target import MAIN
from sparkberg.errors import ValidationError
from sparkberg.io.fileio import deleted_on_failure, file_io_for
from sparkberg.planning.entries import manifests_df, manifests_of, snapshot_manifests
from sparkberg.spec import updates as U
from sparkberg.spec.manifests import DELETED, EXISTING, MANIFEST_DATA, ManifestEntry, ManifestFile
from sparkberg.spec.metadata import TableMetadata
from sparkberg.spec.snapshots import Snapshot, new_snapshot_id

RESULT_DDL = "rewritten_manifests_count int, added_manifests_count int"
_ENTRIES_DDL = "content int, spec_id int, key binary, entry binary"
# the summary totals a replace snapshot carries over (it adds and removes no file)
_TOTALS = ("total-records", "total-files-size", "total-data-files", "total-delete-files", "total-position-deletes",
           "total-equality-deletes")


def _entries(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The live entries of each manifest (executors), as EXISTING entries with what they inherit written out,
    keyed by their partition tuple."""
    for mf, _, io in manifests_of(batches):
        rows: dict[str, list] = {"content": [], "spec_id": [], "key": [], "entry": []}
        for e in manifest_entries(io.read(mf.manifest_path), mf):
            if e.status == DELETED:
                continue
            rows["content"].append(mf.content)
            rows["spec_id"].append(mf.partition_spec_id)
            rows["key"].append(repr(sorted(e.data_file.partition.items())).encode())
            rows["entry"].append(pickle.dumps(ManifestEntry(EXISTING, e.data_file, e.snapshot_id, e.sequence_number,
                                                            e.file_sequence_number)))
        yield pa.RecordBatch.from_pydict(rows, pa.schema([("content", pa.int32()), ("spec_id", pa.int32()),
                                                          ("key", pa.binary()), ("entry", pa.binary())]))


class _Writer:
    """Writes a task's entries (sorted by content, spec and partition) as manifests (executors; picklable)."""

    def __init__(self, metadata: TableMetadata, snapshot_id: int, entries_per_manifest: int):
        self.specs = metadata.specs_by_id
        self.schema = metadata.current_schema
        self.version = metadata.format_version
        self.directory = f"{metadata.location.rstrip('/')}/metadata"
        self.snapshot_id = snapshot_id
        self.entries_per_manifest = entries_per_manifest  # (rolls a task's manifest over at the target size)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        io = file_io_for(self.directory)
        out: list[bytes] = []
        group: list[ManifestEntry] = []
        current: tuple | None = None

        def flush() -> None:
            if group:
                out.append(pickle.dumps(self._write(io, group, *current)))
                group.clear()
        for batch in batches:
            for content, spec_id, entry in zip(*(batch.column(c).to_pylist() for c in ("content", "spec_id",
                                                                                        "entry"))):
                if (content, spec_id) != current or len(group) >= self.entries_per_manifest:
                    flush()
                    current = (content, spec_id)
                group.append(pickle.loads(entry))
        flush()
        yield pa.RecordBatch.from_pydict({"manifest": out}, pa.schema([("manifest", pa.binary())]))

    def _write(self, io, entries: list[ManifestEntry], content: int, spec_id: int) -> ManifestFile:
        spec = self.specs[spec_id]
        path = f"{self.directory}/{uuid.uuid4()}-m-rewritten.avro"
        data = write_manifest(entries, format_version=self.version, spec=spec, schema=self.schema, content=content)
        io.create(path, data)
        mf = manifest_file_for(entries, path=path, length=len(data), spec=spec, schema=self.schema,
                               added_snapshot_id=self.snapshot_id, content=content)
        ids = [e.data_file.first_row_id for e in entries]
        if self.version >= 3 and content == MANIFEST_DATA and ids and None not in ids:
            mf = replace(mf, first_row_id=min(ids))  # (every entry has its own: no new row ids consumed)
        return mf


def rewrite_manifests(table, spec_id: int | None = None, dry_run: bool = False) -> DataFrame:
    """See :meth:`sparkberg.table.Table.rewrite_manifests`."""
    spark = table.spark
    table.refresh()
    start = table.metadata
    empty = spark.createDataFrame([(0, 0)], RESULT_DDL)
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
        return spark.createDataFrame([(len(chosen), sum(counts[k] for k in groups))], RESULT_DDL)
    snapshot_id = new_snapshot_id({s.snapshot_id for s in start.snapshots})
    entries = sum((m.existing_files_count or 0) + (m.added_files_count or 0) for m in chosen)
    per_manifest = max(1, math.ceil(entries * target / max(1, sum(m.manifest_length for m in chosen))))
    written = manifests_df(spark, chosen).mapInArrow(_entries, _ENTRIES_DDL) \
        .repartitionByRange(sum(counts[k] for k in groups), "content", "spec_id", "key") \
        .sortWithinPartitions("content", "spec_id", "key") \
        .mapInArrow(_Writer(start, snapshot_id, per_manifest), "manifest binary")
    new = [pickle.loads(r["manifest"]) for r in written.collect()]
    with deleted_on_failure(table.io, lambda: [m.manifest_path for m in new]):
        table.commit_metadata(lambda base, n: _replace(table, base, n, snapshot_id, chosen, new))
    return spark.createDataFrame([(len(chosen), len(new))], RESULT_DDL)


def _replace(table, base: TableMetadata, n: int, snapshot_id: int, rewritten: list[ManifestFile],
             new: list[ManifestFile]) -> tuple[TableMetadata, list[str]]:
    """The ``replace`` snapshot on ``base``: the new manifests and every current one not rewritten."""
    current = snapshot_manifests(table.io, base.current_snapshot)
    paths = {m.manifest_path for m in current}
    gone = [m.manifest_path for m in rewritten if m.manifest_path not in paths]
    if gone:
        raise ValidationError(f"cannot rewrite the manifests of table {table.name}: {len(gone)} of them were "
                              f"replaced by a concurrent commit (e.g. {gone[0]}); nothing committed")
    v = base.format_version
    seq = base.last_sequence_number + 1 if v >= 2 else 0
    done = {m.manifest_path for m in rewritten}
    manifests = [replace(m, sequence_number=seq, added_snapshot_id=snapshot_id) for m in new] + \
        [m for m in current if m.manifest_path not in done]
    manifests, list_path, first_row_id, added_rows = write_snapshot_list(
        table.io, f"{base.location.rstrip('/')}/metadata", manifests, base, snapshot_id, seq, n,
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
    return U.apply_all(MAIN.updates(base, snap), base), [list_path]


