"""Position delete compaction, as Iceberg Java's ``RewritePositionDeleteFilesSparkAction``: the position delete
files of each partition the scan filter may touch are read on the executors, their positions kept only for data
files still in the table (dangling deletes dropped) and written again, in one ``replace`` snapshot:

- on v2 tables, one position delete file per partition (of a task), sorted by file and position;
- on v3 tables, one deletion vector per data file, merged with the data file's current DV, which it replaces
  (spec: a data file has at most one DV, and v2 position files are not written to v3 tables).

A partition is rewritten when it has ``min-input-files`` position delete files (default 5) or more, or any with
``rewrite-all``; on v3 tables every partition with a v2 position delete file is. Delete files no live data file
can use (:func:`~sparkberg.maintenance.data_files.dangling_delete_files`, the rule compaction uses) are removed
without being read.
"""
from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparkberg.avro.decode import manifest_entries
from sparkberg.commit.pending import Commit
from sparkberg.commit.producer import SnapshotChange
from sparkberg.io.fileio import FileIO
from sparkberg.maintenance.data_files import dangling_delete_files
from sparkberg.maintenance.options import Options
from sparkberg.operations.changes import Changes
from sparkberg.operations.request import MAIN_REQUEST
from sparkberg.operations.rowlevel import RowLevel, NoNewDeletes
from sparkberg.planning.entries import snapshot_manifests
from sparkberg.read.columns import delete_file_rows
from sparkberg.spark.frames import local_dataframe, map_in_arrow
from sparkberg.format.manifests import DELETED, MANIFEST_DELETES, POSITION_DELETES
from sparkberg.format.metadata_columns import DELETE_FILE_PATH, DELETE_FILE_POS
from sparkberg.format.properties import compression
from sparkberg.write.deletes import RESULT_DDL, DeleteWriter, delete_file_from_json

OPTIONS = ("rewrite-all", "min-input-files")
RESULT = "rewritten_delete_files_count int, added_delete_files_count int, rewritten_bytes_count bigint, " \
         "added_bytes_count bigint"


def _options(options: dict[str, Any] | None) -> tuple[bool, int]:
    opts = Options("rewrite_position_delete_files", options, OPTIONS)
    return opts.boolean("rewrite-all", False), opts.integer("min-input-files", 5, 1)


class _Positions:
    """(executors) the (file path, position) rows of the position delete files of (path, format) rows, read with
    the table's FileIO. Picklable."""

    def __init__(self, io: FileIO):
        self.io = io

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path, fmt in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
                for rb in delete_file_rows(path, fmt, [DELETE_FILE_PATH, DELETE_FILE_POS], self.io):
                    yield pa.RecordBatch.from_arrays([rb.column(0), rb.column(1)], names=["_file", "_pos"])


def rewrite_position_delete_files(table, commit: Commit, filter: str | None = None,
                                  options: dict[str, Any] | None = None, dry_run: bool = False) -> DataFrame:
    """See :meth:`sparkberg.table.Table.rewrite_position_delete_files` (``commit``: the table's committer)."""
    spark = table.spark
    rewrite_all, min_files = _options(options)
    table.refresh()
    empty = local_dataframe(spark, [(0, 0, 0, 0)], RESULT)
    if table.metadata.current_snapshot is None:
        return empty
    rl = RowLevel(table, MAIN_REQUEST, filter)
    m = rl.m
    dv = m.format_version >= 3
    by_partition: dict[tuple, list[dict]] = defaultdict(list)  # (spec id, partition dir) -> data file tasks
    for t in rl.tasks:
        by_partition[(t["spec_id"], m.spec(t["spec_id"]).partition_to_path(rl.partition(t), m.current_schema))
                     ].append(t)
    chosen_files: dict[str, dict] = {}  # position delete file -> its delete entry (as planned)
    chosen_tasks: list[dict] = []
    for tasks in by_partition.values():
        files = {d["file_path"]: d for t in tasks for d in t["deletes"]
                 if d["content"] == POSITION_DELETES and d["file_format"] != "puffin"}
        if files and (rewrite_all or dv or len(files) >= min_files):
            chosen_files.update(files)
            chosen_tasks += [t for t in tasks if any(d["file_path"] in files for d in t["deletes"])]
    deletes = _position_deletes(table, rl)  # (path, offset) -> size, of every live position delete file and DV
    dangling = {k: deletes[k][0] for k in dangling_delete_files(table) if k in deletes} if filter is None else {}
    if not chosen_files and not dangling:
        return empty
    live = local_dataframe(spark, [(t["file_path"],) for t in chosen_tasks], "_file string")
    paths = local_dataframe(spark, sorted((p, d["file_format"]) for p, d in chosen_files.items()),
                            "path string, format string")
    rows = map_in_arrow(paths, _Positions(table.io), "_file string, _pos bigint").join(F.broadcast(live), "_file")
    targets = rl.delete_targets(chosen_tasks, merge_position_files=False)  # (their positions are the rows)
    writer = DeleteWriter(targets, dv=dv, write_id=uuid.uuid4().hex[:16],
                          compression=compression(m.properties),
                          partition_scoped=not dv, io=rl.table.io)
    dirs = local_dataframe(spark, [(p, t["dir"]) for p, t in targets.items()], "_file string, _dir string")
    rewritten_bytes = sum(deletes.get((p, None), (0, None))[0] for p in chosen_files) + sum(dangling.values())
    if dry_run:  # it would write one file per directory (v2) or data file (v3) left with positions
        hit = {r[0] for r in rows.join(F.broadcast(dirs), "_file").select("_file" if dv else "_dir").distinct()
               .collect()}
        gone = {(p, None) for p in chosen_files} | set(dangling) | {  # (on v3, with the DVs the new ones replace)
            (d["file_path"], d["content_offset"]) for t in chosen_tasks if dv and t["file_path"] in hit
            for d in t["deletes"] if d["file_format"] == "puffin"}
        return local_dataframe(spark, [(len(gone), len(hit), rewritten_bytes, 0)], RESULT)
    clustered = rows.join(F.broadcast(dirs), "_file").repartition("_dir") \
        .sortWithinPartitions("_dir", "_file", "_pos").select("_file", "_pos")
    written = map_in_arrow(clustered, writer, RESULT_DDL)
    added = [delete_file_from_json(r["delete_file"], m) for r in written.collect()]
    removed = {(p, None) for p in chosen_files} | set(dangling)
    if dv:  # (a data file given a new DV: it holds its old one's positions, which it replaces)
        renewed = {d.referenced_data_file for _, d in added}
        removed |= {(d["file_path"], d["content_offset"]) for t in chosen_tasks if t["file_path"] in renewed
                    for d in t["deletes"] if d["file_format"] == "puffin"}
    touched = {t["file_path"]: (t["spec_id"], rl.partition(t)) for t in chosen_tasks}
    commit(SnapshotChange(m, table.io, Changes("replace", [], added, removed, set(),
                                               NoNewDeletes(table.io, touched, MAIN_REQUEST)), MAIN_REQUEST))
    added_bytes = sum({d.file_path: d.file_size_in_bytes for _, d in added}.values())
    return local_dataframe(spark, [(len(removed), len(added),  # (delete files, as Java counts them: each DV one)
                                    rewritten_bytes, added_bytes)], RESULT)


def _position_deletes(table, rl: RowLevel) -> dict[tuple[str, int | None], tuple[int, str | None]]:
    """Every live position delete file and DV of the current snapshot: (path, offset) -> (size in bytes, the
    data file it names)."""
    out = {}
    for mf in snapshot_manifests(table.io, rl.m.current_snapshot):
        if mf.content == MANIFEST_DELETES:
            for e in manifest_entries(table.io.read(mf.manifest_path), mf):
                d = e.data_file
                if e.status != DELETED and d.content == POSITION_DELETES:
                    out[(d.file_path, d.content_offset)] = (d.file_size_in_bytes, d.referenced_data_file)
    return out
