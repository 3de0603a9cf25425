"""Cherry-picking a snapshot onto main, and publishing a write-audit-publish id, as Iceberg Java's
``CherryPickOperation`` and its ``cherrypick_snapshot`` / ``publish_changes`` procedures do:

- a snapshot whose parent is main's head (both none on an empty table) is fast-forwarded to: main points at it
  and no snapshot is made;
- otherwise an ``append`` is replayed as a new snapshot adding the same data files (given new row ids, as Java
  suppresses them), and a dynamic overwrite (``replace-partitions``) replays its adds and removes, when it was
  based on an ancestor of main and no data file was added to main in its partitions since;
- any other operation can only be fast-forwarded to.

A replayed snapshot carries ``source-snapshot-id`` and, when the picked one was staged, ``published-wap-id``.
A snapshot already in main's history (or already replayed there), and a WAP id already published, are errors.
"""
from __future__ import annotations

from dataclasses import replace

from sparkberg.commit.pending import Change, PlannedChange
from sparkberg.commit.producer import SnapshotChange
from sparkberg.errors import ValidationError
from sparkberg.io.fileio import FileIO
from sparkberg.operations.changes import Changes
from sparkberg.operations.request import MAIN_REQUEST
from sparkberg.operations.target import MAIN, PUBLISHED_WAP_ID, SOURCE_SNAPSHOT_ID, STAGED_WAP_ID
from sparkberg.planning.entries import own_entries
from sparkberg.format.manifests import ADDED, DELETED, MANIFEST_DATA, DataFile
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.snapshots import Snapshot


def _own_entries(io, snap: Snapshot, status: int) -> list[tuple[int, DataFile]]:
    """(spec id, data file) of the data file entries ``snap`` itself wrote with ``status``."""
    return [(mf.partition_spec_id, e.data_file) for mf, e in own_entries(io, snap, MANIFEST_DATA, status)]


def _key(spec_id: int, d: DataFile) -> tuple:
    return spec_id, tuple(sorted(d.partition.items()))


def _check_not_published(base: TableMetadata, snap: Snapshot) -> str | None:
    """The staged WAP id of ``snap`` (None if it has none); an error when main already holds that id."""
    wap_id = (snap.summary or {}).get(STAGED_WAP_ID)
    if wap_id:
        for s in base.ancestors(base.current_snapshot_id):
            summary = s.summary or {}
            if wap_id in (summary.get(STAGED_WAP_ID), summary.get(PUBLISHED_WAP_ID)):
                raise ValidationError(f"WAP id {wap_id!r} was already published (snapshot {s.snapshot_id} of main)")
    return wap_id


def _check_not_picked(base: TableMetadata, snapshot_id: int) -> None:
    for s in base.ancestors(base.current_snapshot_id):
        if s.snapshot_id == snapshot_id:
            raise ValidationError(f"cannot cherry-pick snapshot {snapshot_id}: it is already an ancestor of main")
        if (s.summary or {}).get(SOURCE_SNAPSHOT_ID) == str(snapshot_id):
            raise ValidationError(f"cannot cherry-pick snapshot {snapshot_id}: it was already picked into main as "
                                  f"snapshot {s.snapshot_id}")


def cherry_pick(start: TableMetadata, io: FileIO, name: str, snapshot_id: int) -> Change:
    """The change that picks ``snapshot_id`` onto main of table ``name`` (``start``: its freshest metadata, ``io``
    its FileIO); see :meth:`sparkberg.table.Table.cherry_pick`."""
    snap = start.snapshot_by_id(snapshot_id) if isinstance(snapshot_id, int) else None
    if snap is None:
        raise ValidationError(f"cannot cherry-pick unknown snapshot {snapshot_id!r} of table {name}")
    overwrite = snap.operation == "overwrite" and (snap.summary or {}).get("replace-partitions") == "true"
    if snap.operation == "append" or overwrite:
        _check_not_published(start, snap)
    if snap.parent_snapshot_id == start.current_snapshot_id:
        return _fast_forward(snap)
    if snap.operation != "append" and not overwrite:
        raise ValidationError(f"cannot cherry-pick snapshot {snapshot_id}: its operation {snap.operation!r} is not an "
                              "append or a dynamic overwrite, and main's head is not its parent (no fast-forward)")
    if overwrite and snap.parent_snapshot_id is not None and snap.parent_snapshot_id not in {
            s.snapshot_id for s in start.ancestors(start.current_snapshot_id)}:
        raise ValidationError(f"cannot cherry-pick overwrite {snapshot_id}: its parent {snap.parent_snapshot_id} is "
                              "not an ancestor of main's head")
    _check_not_picked(start, snapshot_id)
    added = _own_entries(io, snap, ADDED)
    removed = {(d.file_path, None) for _, d in _own_entries(io, snap, DELETED)} if overwrite else set()
    replaced = {_key(spec_id, d) for spec_id, d in added} if overwrite else set()

    def validate(_start: TableMetadata, base: TableMetadata) -> None:
        if snap.parent_snapshot_id == base.current_snapshot_id:
            raise ValidationError(f"cannot cherry-pick snapshot {snapshot_id}: main moved to its parent meanwhile; "
                                  "try again (it will fast-forward)")
        _check_not_picked(base, snapshot_id)
        _check_not_published(base, snap)
        if not replaced:
            return
        for s in base.ancestors(base.current_snapshot_id):
            if s.snapshot_id == snap.parent_snapshot_id:
                break
            for spec_id, d in _own_entries(io, s, ADDED):
                if _key(spec_id, d) in replaced:
                    raise ValidationError(f"cannot cherry-pick overwrite {snapshot_id}: snapshot {s.snapshot_id} of "
                                          f"main added {d.file_path} to a partition it replaces")

    summary = {SOURCE_SNAPSHOT_ID: str(snapshot_id)}
    wap_id = (snap.summary or {}).get(STAGED_WAP_ID)
    if wap_id:
        summary[PUBLISHED_WAP_ID] = wap_id
    if overwrite:
        summary["replace-partitions"] = "true"
    spec_ids = {spec_id for spec_id, _ in added}
    if spec_ids - {start.default_spec_id}:
        raise ValidationError(f"cannot cherry-pick snapshot {snapshot_id}: it wrote files of partition spec "
                              f"{sorted(spec_ids)} and the table's default spec is now {start.default_spec_id}")
    # (the picked files are the table's already: the change wrote none of them, and deletes none if it fails)
    return SnapshotChange(start, io, Changes(snap.operation, [replace(d, first_row_id=None) for _, d in added], [],
                                             removed, set(), validate, summary=summary, written=[]), MAIN_REQUEST)


def _fast_forward(snap: Snapshot) -> Change:
    def plan(base: TableMetadata) -> list:
        if snap.parent_snapshot_id != base.current_snapshot_id:
            raise ValidationError(f"cannot cherry-pick snapshot {snap.snapshot_id}: main moved meanwhile; try again")
        return [MAIN.move(base, snap.snapshot_id)]
    return PlannedChange("cherry-pick", plan)


def publish_wap(start: TableMetadata, io: FileIO, name: str, wap_id: str) -> Change:
    """The change that publishes WAP id ``wap_id`` of table ``name`` (see :meth:`sparkberg.table.Table.publish_wap`):
    its staged snapshot cherry-picked."""
    if not isinstance(wap_id, str) or not wap_id:
        raise ValidationError(f"publish_wap needs a WAP id, got {wap_id!r}")
    staged = [s for s in start.snapshots if (s.summary or {}).get(STAGED_WAP_ID) == wap_id]
    if not staged:
        raise ValidationError(f"cannot publish unknown WAP id {wap_id!r}: no snapshot of table {name} was "
                              "staged with it")
    return cherry_pick(start, io, name, staged[0].snapshot_id)


__all__ = ["cherry_pick", "publish_wap"]
