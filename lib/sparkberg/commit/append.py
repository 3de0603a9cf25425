"""The fast-append snapshot producer: new data files in a new manifest, every existing manifest kept.

The manifest is written once; each commit attempt writes a manifest list against the freshest base
(sequence number, v3 row ids and parent all come from it) and swaps the metadata. Appends have no
conflict to validate (spec "Commit Conflict Resolution and Retry"), so a lost race is retried per
``commit.retry.*``; a commit that cannot succeed removes every file it wrote and leaves the table as it was.
"""
from __future__ import annotations

import random
import time
import uuid
from dataclasses import replace
from typing import Sequence

from sparkberg.avro.manifest import (
    ADDED, MANIFEST_DATA, DataFile, ManifestEntry, ManifestFile, manifest_file_for, write_manifest,
    write_manifest_list,
)
from sparkberg.errors import CommitFailedException, SparkbergError
from sparkberg.planning.entries import snapshot_manifests
from sparkberg.spec import updates as U
from sparkberg.spec.metadata import TableMetadata
from sparkberg.spec.snapshots import MAIN_BRANCH, Snapshot, new_snapshot_id

SUMMARY_TOTALS = ("total-records", "total-files-size", "total-data-files", "total-delete-files",
                  "total-position-deletes", "total-equality-deletes")


def _retry_settings(props) -> tuple[int, int, int, float]:
    def get(key: str, default: int) -> int:
        try:
            return int(props.get(key, default))
        except ValueError:
            raise SparkbergError(f"table property {key} must be an integer") from None
    return (get("commit.retry.num-retries", 4), get("commit.retry.min-wait-ms", 100),
            get("commit.retry.max-wait-ms", 60_000), get("commit.retry.total-timeout-ms", 1_800_000) / 1000)


def append_summary(base: TableMetadata, files: Sequence[DataFile], spec_id: int) -> dict[str, str]:
    """A snapshot summary as Iceberg Java writes it for an append."""
    added_records = sum(f.record_count for f in files)
    added_size = sum(f.file_size_in_bytes for f in files)
    partitions = {tuple(sorted(f.partition.items(), key=lambda kv: kv[0])) for f in files}
    summary = {"operation": "append", "added-data-files": str(len(files)), "added-records": str(added_records),
               "added-files-size": str(added_size), "changed-partition-count": str(len(partitions))}
    prev = (base.current_snapshot.summary or {}) if base.current_snapshot else {}
    deltas = {"total-records": added_records, "total-files-size": added_size, "total-data-files": len(files),
              "total-delete-files": 0, "total-position-deletes": 0, "total-equality-deletes": 0}
    if base.current_snapshot is None or all(k in prev for k in SUMMARY_TOTALS):
        for k in SUMMARY_TOTALS:
            summary[k] = str(int(prev.get(k, 0)) + deltas[k])
    summary["engine-name"] = "sparkberg"
    return summary


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


def fast_append(table, files: Sequence[DataFile], spec_id: int | None = None) -> Snapshot:
    """Commit ``files`` (written for the table's default spec) as one append snapshot on ``main``."""
    if table.catalog is None:
        raise SparkbergError(f"table {table.name} was loaded by path and is read-only")
    io = table.io
    base = table.metadata
    spec = base.spec(spec_id)
    schema = base.current_schema
    snapshot_id = new_snapshot_id({s.snapshot_id for s in base.snapshots})
    mdir = f"{base.location}/metadata"
    written: list[str] = []
    entries = [ManifestEntry(ADDED, f, snapshot_id) for f in files]
    manifest_path = f"{mdir}/{uuid.uuid4()}-m0.avro"
    data = write_manifest(entries, format_version=base.format_version, spec=spec, schema=schema)
    io.create(manifest_path, data)
    written.append(manifest_path)
    retries, min_wait, max_wait, timeout = _retry_settings(base.properties)
    deadline = time.monotonic() + timeout
    attempt = 0
    try:
        while True:
            base = table.metadata
            v = base.format_version
            seq = base.last_sequence_number + 1 if v >= 2 else 0
            new = manifest_file_for(entries, path=manifest_path, length=len(data), spec=spec, schema=schema,
                                    added_snapshot_id=snapshot_id, sequence_number=seq)
            existing = snapshot_manifests(io, base.current_snapshot) if base.current_snapshot else []
            manifests = [new] + list(existing)
            first_row_id = added_rows = None
            if v >= 3:
                first_row_id = base.next_row_id or 0
                manifests, next_row_id = assign_first_row_ids(manifests, first_row_id)
                added_rows = next_row_id - first_row_id
            list_path = f"{mdir}/snap-{snapshot_id}-{attempt + 1}-{uuid.uuid4()}.avro"
            io.create(list_path, write_manifest_list(manifests, format_version=v, snapshot_id=snapshot_id,
                                                     parent_snapshot_id=base.current_snapshot_id,
                                                     sequence_number=seq, first_row_id=first_row_id))
            written.append(list_path)
            snap = Snapshot(snapshot_id=snapshot_id, timestamp_ms=int(time.time() * 1000),
                            parent_snapshot_id=base.current_snapshot_id, sequence_number=seq if v >= 2 else None,
                            manifest_list=list_path, summary=append_summary(base, files, spec.spec_id),
                            schema_id=schema.schema_id, first_row_id=first_row_id, added_rows=added_rows)
            new_meta = U.apply_all([U.AddSnapshot(snap), U.SetSnapshotRef(MAIN_BRANCH, snapshot_id)], base)
            try:
                loc, meta = table.catalog._backend.commit(table.identifier, table.metadata_location, new_meta, base)
            except CommitFailedException:
                attempt += 1
                io.delete(list_path)
                written.remove(list_path)
                if attempt > retries or time.monotonic() > deadline:
                    raise
                time.sleep(min(max_wait, min_wait * 2 ** (attempt - 1)) * (0.5 + random.random() / 2) / 1000)
                table.refresh()
                continue
            table._metadata, table.metadata_location = meta, loc
            return snap
    except BaseException:
        for path in written:
            io.delete(path)
        raise
