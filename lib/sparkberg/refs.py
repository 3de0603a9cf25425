"""Branches, tags and the current snapshot, managed as Iceberg Java's ``ManageSnapshots`` does (and Spark SQL's
``ALTER TABLE ... CREATE BRANCH`` / ``REPLACE TAG`` / ``DROP BRANCH`` and the ``rollback_to_snapshot``,
``rollback_to_timestamp``, ``set_current_snapshot``, ``fast_forward``, ``cherrypick_snapshot`` and
``publish_changes`` procedures): each call one commit, checked against the freshest table state on every try, so a
race with another writer is decided on what is really there; a call that breaks a rule raises a
:class:`~sparkberg.errors.ValidationError` naming it and changes nothing.
"""
from __future__ import annotations

from typing import Callable

from sparkberg.commit.pending import PlannedChange
from sparkberg.operations.target import MAIN
from sparkberg.errors import ValidationError
from sparkberg.format import updates as U
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.snapshots import BRANCH, MAIN_BRANCH, TAG, Snapshot


def _retention(name: str, min_snapshots_to_keep: int | None, max_snapshot_age_ms: int | None,
               max_ref_age_ms: int | None) -> None:
    for label, v in (("min_snapshots_to_keep", min_snapshots_to_keep), ("max_snapshot_age_ms", max_snapshot_age_ms),
                     ("max_ref_age_ms", max_ref_age_ms)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v <= 0):
            raise ValidationError(f"{label} of ref {name!r} must be a positive integer, got {v!r}")


def _name(name: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValidationError(f"a ref name must be a non-empty string, got {name!r}")
    return name


def _snapshot(base: TableMetadata, snapshot_id: int | None, what: str) -> Snapshot:
    """The snapshot a ref is to point at: ``snapshot_id``, or main's head."""
    if snapshot_id is None:
        if base.current_snapshot is None:
            raise ValidationError(f"cannot {what}: the table has no snapshot yet")
        return base.current_snapshot
    snap = base.snapshot_by_id(snapshot_id)
    if snap is None:
        raise ValidationError(f"cannot {what}: snapshot {snapshot_id} is not in the table")
    return snap


def _existing(base: TableMetadata, name: str, kind: str):
    ref = base.refs.get(name)
    if ref is None:
        raise ValidationError(f"{kind} {name!r} does not exist")
    if ref.type != kind:
        raise ValidationError(f"{name!r} is a {ref.type}, not a {kind}")
    return ref


class RefsMixin:
    """The ref and snapshot management calls of :class:`sparkberg.table.Table`."""

    def _manage(self, plan: Callable[[TableMetadata], list]) -> "RefsMixin":
        """Commit the updates ``plan`` makes of the freshest metadata (re-planned on every try)."""
        self._commit(PlannedChange("manage-snapshots", plan))
        return self

    def _create(self, name: str, kind: str, snapshot_id: int | None, min_snapshots_to_keep: int | None,
                max_snapshot_age_ms: int | None, max_ref_age_ms: int | None) -> "RefsMixin":
        _name(name)
        _retention(name, min_snapshots_to_keep, max_snapshot_age_ms, max_ref_age_ms)

        def plan(base):
            if name in base.refs:
                raise ValidationError(f"ref {name!r} already exists")
            snap = _snapshot(base, snapshot_id, f"create {kind} {name!r}")
            return [U.SetSnapshotRef(name, snap.snapshot_id, kind, min_snapshots_to_keep, max_snapshot_age_ms,
                                     max_ref_age_ms)]
        return self._manage(plan)

    def create_branch(self, name: str, snapshot_id: int | None = None, min_snapshots_to_keep: int | None = None,
                      max_snapshot_age_ms: int | None = None, max_ref_age_ms: int | None = None) -> "RefsMixin":
        """Create branch ``name`` at ``snapshot_id`` (default: main's head) with its retention settings; an
        existing ref of that name is an error."""
        return self._create(name, BRANCH, snapshot_id, min_snapshots_to_keep, max_snapshot_age_ms, max_ref_age_ms)

    def create_tag(self, name: str, snapshot_id: int | None = None,
                   max_ref_age_ms: int | None = None) -> "RefsMixin":
        """Create tag ``name`` at ``snapshot_id`` (default: main's head); an existing ref of that name is an
        error."""
        return self._create(name, TAG, snapshot_id, None, None, max_ref_age_ms)

    def replace_branch(self, name: str, snapshot_id: int | None = None, min_snapshots_to_keep: int | None = None,
                       max_snapshot_age_ms: int | None = None, max_ref_age_ms: int | None = None) -> "RefsMixin":
        """Point existing branch ``name`` at ``snapshot_id`` (default: main's head); retention settings not
        given keep their values (Spark SQL's ``REPLACE BRANCH``)."""
        _retention(name, min_snapshots_to_keep, max_snapshot_age_ms, max_ref_age_ms)

        def plan(base):
            ref = _existing(base, name, BRANCH)
            snap = _snapshot(base, snapshot_id, f"replace branch {name!r}")
            return [U.SetSnapshotRef(
                name, snap.snapshot_id, BRANCH,
                ref.min_snapshots_to_keep if min_snapshots_to_keep is None else min_snapshots_to_keep,
                ref.max_snapshot_age_ms if max_snapshot_age_ms is None else max_snapshot_age_ms,
                ref.max_ref_age_ms if max_ref_age_ms is None else max_ref_age_ms)]
        return self._manage(plan)

    def replace_tag(self, name: str, snapshot_id: int | None = None,
                    max_ref_age_ms: int | None = None) -> "RefsMixin":
        """Point existing tag ``name`` at ``snapshot_id`` (default: main's head), keeping its ``max_ref_age_ms``
        unless one is given."""
        _retention(name, None, None, max_ref_age_ms)

        def plan(base):
            ref = _existing(base, name, TAG)
            snap = _snapshot(base, snapshot_id, f"replace tag {name!r}")
            return [U.SetSnapshotRef(name, snap.snapshot_id, TAG, max_ref_age_ms=ref.max_ref_age_ms
                                     if max_ref_age_ms is None else max_ref_age_ms)]
        return self._manage(plan)

    def drop_branch(self, name: str) -> "RefsMixin":
        """Remove branch ``name`` (never ``main``); its snapshots stay until expiry."""
        if name == MAIN_BRANCH:
            raise ValidationError("cannot drop branch 'main'")

        def plan(base):
            _existing(base, name, BRANCH)
            return [U.RemoveSnapshotRef(name)]
        return self._manage(plan)

    def drop_tag(self, name: str) -> "RefsMixin":
        """Remove tag ``name``."""
        def plan(base):
            _existing(base, name, TAG)
            return [U.RemoveSnapshotRef(name)]
        return self._manage(plan)

    def rename_branch(self, name: str, new_name: str) -> "RefsMixin":
        """Rename branch ``name`` (never ``main``) to ``new_name``, which must be free; retention settings go
        with it."""
        _name(new_name)
        if name == MAIN_BRANCH:
            raise ValidationError("cannot rename branch 'main'")

        def plan(base):
            ref = _existing(base, name, BRANCH)
            if new_name in base.refs:
                raise ValidationError(f"ref {new_name!r} already exists")
            return [U.RemoveSnapshotRef(name), U.SetSnapshotRef(new_name, ref.snapshot_id, BRANCH,
                                                                 ref.min_snapshots_to_keep, ref.max_snapshot_age_ms,
                                                                 ref.max_ref_age_ms)]
        return self._manage(plan)

    def fast_forward(self, branch: str, to: str) -> "RefsMixin":
        """Move ``branch`` to the head of ref ``to`` when its own head is an ancestor of it (Iceberg's
        ``fast_forward`` procedure); otherwise the histories diverged, an error."""
        def plan(base):
            ref = _existing(base, branch, BRANCH)
            target = base.refs.get(to)
            if target is None:
                raise ValidationError(f"ref {to!r} does not exist")
            if ref.snapshot_id == target.snapshot_id:
                return []
            if ref.snapshot_id not in {s.snapshot_id for s in base.ancestors(target.snapshot_id)}:
                raise ValidationError(f"cannot fast-forward {branch!r}: its head {ref.snapshot_id} is not an ancestor "
                                      f"of {to!r} ({target.snapshot_id})")
            return [U.SetSnapshotRef(branch, target.snapshot_id, BRANCH, ref.min_snapshots_to_keep,
                                     ref.max_snapshot_age_ms, ref.max_ref_age_ms)]
        return self._manage(plan)

    def set_current_snapshot(self, snapshot_id: int) -> "RefsMixin":
        """Make any snapshot of the table main's head (Iceberg's ``set_current_snapshot``)."""
        def plan(base):
            snap = _snapshot(base, snapshot_id, "set the current snapshot")
            return _main_to(base, snap)
        return self._manage(plan)

    def rollback_to_snapshot(self, snapshot_id: int) -> "RefsMixin":
        """Move main back to ``snapshot_id``, which must be one of its ancestors (Iceberg's
        ``rollback_to_snapshot``)."""
        def plan(base):
            snap = _snapshot(base, snapshot_id, f"roll back to snapshot {snapshot_id}")
            if snapshot_id not in {s.snapshot_id for s in base.ancestors(base.current_snapshot_id)}:
                raise ValidationError(f"cannot roll back to snapshot {snapshot_id}: it is not an ancestor of the "
                                      f"current snapshot {base.current_snapshot_id}")
            return _main_to(base, snap)
        return self._manage(plan)

    def rollback_to_timestamp(self, timestamp_ms: int) -> "RefsMixin":
        """Move main back to its latest ancestor committed before ``timestamp_ms`` (Iceberg's
        ``rollback_to_timestamp``)."""
        if isinstance(timestamp_ms, bool) or not isinstance(timestamp_ms, int):
            raise ValidationError(f"rollback_to_timestamp takes epoch milliseconds, got {timestamp_ms!r}")

        def plan(base):
            older = [s for s in base.ancestors(base.current_snapshot_id) if s.timestamp_ms < timestamp_ms]
            if not older:
                raise ValidationError(f"cannot roll back: main has no snapshot older than {timestamp_ms}")
            return _main_to(base, older[0])
        return self._manage(plan)

    def cherry_pick(self, snapshot_id: int) -> "RefsMixin":
        """Apply snapshot ``snapshot_id`` (of any branch, or staged) to main, as Iceberg's ``cherrypick_snapshot``:
        fast-forward when main's head is its parent; otherwise an append or a dynamic overwrite is replayed in a
        new snapshot carrying ``source-snapshot-id`` (and ``published-wap-id`` for a staged one), with Java's
        checks (:mod:`sparkberg.commit.cherrypick`)."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.commit.cherrypick import cherry_pick
        self._commit(cherry_pick(self.refresh().metadata, self.io, self.name, snapshot_id))
        return self

    def publish_wap(self, wap_id: str) -> "RefsMixin":
        """Cherry-pick the snapshot staged with WAP id ``wap_id`` into main (Iceberg's ``publish_changes``); an
        unknown or already published id is an error."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.commit.cherrypick import publish_wap
        self._commit(publish_wap(self.refresh().metadata, self.io, self.name, wap_id))
        return self


def _main_to(base: TableMetadata, snap: Snapshot) -> list:
    return [] if base.current_snapshot_id == snap.snapshot_id else [MAIN.move(base, snap.snapshot_id)]


__all__ = ["RefsMixin"]
