"""Snapshot expiry: the metadata commit that drops what the retention policy no longer keeps
(:mod:`sparkberg.format.retention`), then the files only the expired snapshots reached, found and deleted by Spark.

The files to delete are computed after the commit, as Iceberg Java's ``ExpireSnapshotsSparkAction`` does: the
live entries of the manifests the expired snapshots reached and no kept snapshot does (decoded on the executors),
anti-joined on the path with the live entries of every manifest a kept snapshot of any ref reaches; with them
the manifests, manifest lists and statistics files no kept snapshot names. A file live in a kept manifest is
never a candidate, so the deletions (on the executors) touch nothing the table still reads.
"""
from __future__ import annotations

import datetime
from typing import Any, Iterable, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparkberg.arrays import batch_of_columns
from sparkberg.commit.pending import Commit, PlannedChange
from sparkberg.errors import ValidationError
from sparkberg.io.fileio import FileIO
from sparkberg.planning.entries import EntryDecoder, PartitionLayout, entries_df, snapshot_manifests
from sparkberg.spark.frames import local_dataframe, map_in_arrow
from sparkberg.spark.settings import session_time_zone
from sparkberg.format import updates as U
from sparkberg.format.manifests import EQUALITY_DELETES, POSITION_DELETES, ManifestFile
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.retention import expiry
from sparkberg.format.updates import now_ms

# the procedure's columns (Iceberg Java's expire_snapshots), by the kind of file each counts
COUNTS = {"data": "deleted_data_files_count", "position": "deleted_position_delete_files_count",
          "equality": "deleted_equality_delete_files_count", "manifest": "deleted_manifest_files_count",
          "manifest_list": "deleted_manifest_lists_count", "statistics": "deleted_statistics_files_count"}
FILES_DDL = "path string, kind string"


def to_millis(spark: Any, when: Any) -> int | None:
    """Epoch millis of ``when``: an int (millis), an aware datetime, or a naive one in the session time zone
    (as Spark reads a zone-less timestamp)."""
    if when is None or isinstance(when, int):
        return when
    if isinstance(when, datetime.datetime):
        if when.tzinfo is None:
            from zoneinfo import ZoneInfo
            when = when.replace(tzinfo=ZoneInfo(session_time_zone(spark)))
        return int(when.timestamp() * 1000)
    if isinstance(when, datetime.date):
        return to_millis(spark, datetime.datetime(when.year, when.month, when.day))
    raise ValidationError(f"older_than must be epoch millis or a datetime, got {type(when).__name__}: {when!r}")


def expire_snapshots(table, commit: Commit, older_than: Any = None, retain_last: int | None = None,
                     snapshot_ids: Iterable[int] | None = None, clean_expired_files: bool = True,
                     dry_run: bool = False) -> DataFrame:
    """See :meth:`sparkberg.table.Table.expire_snapshots` (``commit``: the table's committer)."""
    spark = table.spark
    older_ms = to_millis(spark, older_than)
    ids = list(snapshot_ids or ())
    now = now_ms()
    base = table.refresh().metadata
    updates = expiry(base, now, older_ms, retain_last, ids)  # (bad input named before any write)
    if dry_run or not updates:
        after = U.apply_all(updates, base)
    else:
        # (planned again on each try: a lost race expires what the newer version holds)
        done = commit(PlannedChange("expire-snapshots", lambda m: expiry(m, now, older_ms, retain_last, ids)))
        base, after = done.base, done.metadata
    counts = dict.fromkeys(COUNTS, 0)
    if clean_expired_files and len(after.snapshots) < len(base.snapshots):
        files = expired_files(spark, table.io, base, after)
        counts.update(_counted(files) if dry_run else _deleted(files, table.io))
    return local_dataframe(spark, [tuple(counts[k] for k in COUNTS)],
                           ", ".join(f"{c} bigint" for c in COUNTS.values()))


def _manifests(io: FileIO, metadata: TableMetadata) -> dict[str, ManifestFile]:
    """Every manifest of every snapshot of ``metadata``, by path."""
    return {m.manifest_path: m for s in metadata.snapshots for m in snapshot_manifests(io, s)}


def expired_files(spark: Any, io: FileIO, before: TableMetadata, after: TableMetadata) -> DataFrame:
    """The files ``before`` reaches and ``after`` does not, as (path, kind); see the module docstring."""
    # (each manifest list read once: the kept snapshots are the expiry base's, less the expired)
    listed = {s.snapshot_id: snapshot_manifests(io, s) for s in before.snapshots}
    old = {m.manifest_path: m for ms in listed.values() for m in ms}
    kept = {m.manifest_path: m for s in after.snapshots
            for m in (listed[s.snapshot_id] if s.snapshot_id in listed else snapshot_manifests(io, s))}
    dropped = [m for p, m in old.items() if p not in kept]
    layout = PartitionLayout(before)
    decoder = EntryDecoder(layout, columns=["file_path", "content"], io=io)
    candidates = _content(spark, dropped, decoder)
    live = _content(spark, list(kept.values()), decoder).select("path")
    content = candidates.join(live, "path", "left_anti")
    lists = {s.manifest_list for s in before.snapshots if s.manifest_list} - \
        {s.manifest_list for s in after.snapshots if s.manifest_list}
    stats = {f.statistics_path for f in (*before.statistics, *before.partition_statistics)} - \
        {f.statistics_path for f in (*after.statistics, *after.partition_statistics)}
    metadata_files = [(p, "manifest") for p in sorted(set(old) - set(kept))] + \
        [(p, "manifest_list") for p in sorted(lists)] + [(p, "statistics") for p in sorted(stats)]
    return content.unionByName(local_dataframe(spark, metadata_files, FILES_DDL))


def _content(spark: Any, manifests: list[ManifestFile], decoder: EntryDecoder) -> DataFrame:
    """The distinct live content files of ``manifests`` as (path, kind)."""
    if not manifests:
        return local_dataframe(spark, [], FILES_DDL)
    entries = entries_df(spark, manifests, decoder)
    kind = F.when(F.col("content") == POSITION_DELETES, "position") \
        .when(F.col("content") == EQUALITY_DELETES, "equality").otherwise("data")
    return entries.select(F.col("file_path").alias("path"), kind.alias("kind")).distinct()


def _counted(files: DataFrame) -> dict[str, int]:
    return {r["kind"]: r["n"] for r in files.groupBy("kind").agg(F.count("*").alias("n")).collect()}


class _Deleter:
    """Deletes each file of its batches with the table's FileIO (on an executor); one row per kind with the number
    deleted. Picklable."""

    def __init__(self, io: FileIO):
        self.io = io

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        counts: dict[str, int] = {}
        for batch in batches:
            for path, kind in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
                self.io.delete(path)
                counts[kind] = counts.get(kind, 0) + 1
        yield batch_of_columns({"kind": list(counts), "n": list(counts.values())},
                               pa.schema([("kind", pa.string()), ("n", pa.int64())]))


def _deleted(files: DataFrame, io: FileIO) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in map_in_arrow(files, _Deleter(io), "kind string, n bigint").collect():
        out[r["kind"]] = out.get(r["kind"], 0) + r["n"]
    return out
