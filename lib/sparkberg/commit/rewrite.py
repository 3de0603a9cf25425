"""Compaction: rewrite small, oversized or delete-laden data files into files of the target size, as one
``replace`` snapshot (Iceberg's ``rewrite_data_files`` with the bin-pack strategy).

Files are chosen per partition: those smaller than ``min_file_size_bytes`` (75% of the target by default),
larger than ``max_file_size_bytes`` (180%) or with at least ``delete_file_threshold`` delete files; a
partition is rewritten when it has ``min_input_files`` (5) such files, or when any of them has deletes, or
always with ``rewrite_all``. Rows are read with their deletes applied and written for the current spec; on v3
they keep ``_row_id`` and ``_last_updated_sequence_number``. The new files keep the starting snapshot's data
sequence number (Java's ``use-starting-sequence-number``), so equality deletes committed meanwhile still
apply to them; concurrent position deletes or DVs for the rewritten files are a conflict. The removed files'
own deletes (their DVs, position delete files naming only them) go with them.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sparkberg.commit.producer import Changes, commit_changes
from sparkberg.commit.rowlevel import RowLevel, _file_scoped_deletes, no_new_deletes_check
from sparkberg.errors import ValidationError
from sparkberg.io.fileio import deleted_on_failure
from sparkberg.spec.metadata_columns import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID
from sparkberg.write.dataframe import write_files


@dataclass(frozen=True)
class RewriteResult:
    """What a rewrite did, named as Iceberg's ``rewrite_data_files`` procedure reports it."""

    rewritten_data_files_count: int
    added_data_files_count: int
    rewritten_bytes_count: int
    removed_delete_files_count: int


def rewrite_data_files(table, filter: str | None = None, target_file_size_bytes: int | None = None,
                       min_input_files: int = 5, min_file_size_bytes: int | None = None,
                       max_file_size_bytes: int | None = None, delete_file_threshold: int = 1,
                       rewrite_all: bool = False) -> RewriteResult:
    """Compact the data files matching ``filter`` (all when None); see the module docstring."""
    m = table.metadata
    target = target_file_size_bytes or int(m.properties.get("write.target-file-size-bytes", 512 * 1024 * 1024))
    low = int(target * 0.75) if min_file_size_bytes is None else min_file_size_bytes
    high = int(target * 1.8) if max_file_size_bytes is None else max_file_size_bytes
    if target <= 0 or low < 0 or high < low or min_input_files < 1 or delete_file_threshold < 1:
        raise ValidationError(f"rewrite options out of range: target {target}, min size {low}, max size {high}, "
                              f"min input files {min_input_files}, delete file threshold {delete_file_threshold}")
    empty = RewriteResult(0, 0, 0, 0)
    if m.current_snapshot is None:
        return empty
    rl = RowLevel(table, filter)
    groups: dict[tuple, list] = defaultdict(list)
    for t in rl.tasks:
        groups[(t["spec_id"], tuple(sorted(rl.partition(t).items())))].append(t)
    chosen = []
    for tasks in groups.values():
        if rewrite_all:
            chosen += tasks
            continue
        picked = [t for t in tasks if t["file_size_in_bytes"] < low or t["file_size_in_bytes"] > high
                  or len(t["deletes"]) >= delete_file_threshold]
        if len(picked) >= min_input_files or any(t["deletes"] for t in picked):
            chosen += picked
    if not chosen:
        return empty
    lineage = [ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER] if m.format_version >= 3 else []
    rows = rl.read(chosen, [f.name for f in rl.schema.fields] + [f.name for f in lineage], None)
    props = dict(m.properties)
    props["write.target-file-size-bytes"] = str(target)
    added = write_files(rl.spark, m, rows, extra_fields=lineage, properties=props)
    removed: set = set()
    for t in chosen:
        removed.add((t["file_path"], None))
        removed |= _file_scoped_deletes(t)
    touched = {t["file_path"]: (t["spec_id"], rl.partition(t)) for t in chosen}
    start_seq = m.current_snapshot.sequence_number if m.format_version >= 2 else None
    with deleted_on_failure(table.io, lambda: [f.file_path for f in added]):
        commit_changes(table, Changes("replace", added, [], removed, set(),
                                      no_new_deletes_check(table, touched, ignore_equality=True),
                                      data_sequence_number=start_seq))
    return RewriteResult(len(chosen), len(added), sum(t["file_size_in_bytes"] for t in chosen),
                         len(removed) - len(chosen))


__all__ = ["rewrite_data_files", "RewriteResult"]
