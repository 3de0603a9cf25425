"""Which snapshots and refs an expiry keeps (spec "Snapshot Retention Policy"), as Iceberg Java's
``RemoveSnapshots`` decides:

- a ref other than ``main`` whose snapshot is older than its ``max-ref-age-ms`` (else the table's
  ``history.expire.max-ref-age-ms``, unlimited by default) is removed; ``main`` is always kept;
- a kept branch keeps the newest ``min-snapshots-to-keep`` snapshots of its history and every snapshot of it not
  older than ``max-snapshot-age-ms`` (the branch's own settings, else the call's ``retain_last`` and
  ``older_than``, else the table's ``history.expire.min-snapshots-to-keep`` (1) and ``now -
  history.expire.max-snapshot-age-ms`` (5 days));
- a kept tag keeps its snapshot;
- a snapshot no kept ref reaches is kept while it is not older than ``older_than``;
- a snapshot named explicitly is expired even from the middle of a branch's history, unless a ref points at it.
"""
from __future__ import annotations

from typing import Iterable

from sparkberg.errors import ValidationError
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.snapshots import BRANCH, MAIN_BRANCH
from sparkberg.format.updates import RemoveSnapshotRef, RemoveSnapshots, TableUpdate

MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
MAX_SNAPSHOT_AGE_MS_DEFAULT = 5 * 24 * 60 * 60 * 1000
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
MIN_SNAPSHOTS_TO_KEEP_DEFAULT = 1
MAX_REF_AGE_MS = "history.expire.max-ref-age-ms"


def _property(metadata: TableMetadata, key: str, default: int | None) -> int | None:
    value = metadata.properties.get(key)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValidationError(f"table property {key} must be an integer, got {value!r}") from None


def expiry(metadata: TableMetadata, now_ms: int, older_than_ms: int | None = None, retain_last: int | None = None,
           snapshot_ids: Iterable[int] = ()) -> list[TableUpdate]:
    """The updates that expire what the retention policy no longer keeps (see the module docstring): the refs
    removed, then the snapshots. ``older_than_ms`` defaults to ``now_ms`` minus the table's
    ``history.expire.max-snapshot-age-ms``; ``retain_last`` to its ``history.expire.min-snapshots-to-keep``.
    Bad input (a negative ``retain_last``, ``older_than_ms`` after ``now_ms``, an unknown snapshot id or one a
    ref points at) raises :class:`ValidationError` naming it."""
    if retain_last is not None and retain_last < 1:
        raise ValidationError(f"retain_last must be at least 1, got {retain_last}")
    if older_than_ms is not None and older_than_ms > now_ms:
        raise ValidationError(f"older_than ({older_than_ms} ms) is in the future (now {now_ms} ms): it would "
                              "expire snapshots still being written")
    default_older = older_than_ms if older_than_ms is not None else \
        now_ms - _property(metadata, MAX_SNAPSHOT_AGE_MS, MAX_SNAPSHOT_AGE_MS_DEFAULT)
    default_keep = retain_last if retain_last is not None else \
        _property(metadata, MIN_SNAPSHOTS_TO_KEEP, MIN_SNAPSHOTS_TO_KEEP_DEFAULT)
    default_ref_age = _property(metadata, MAX_REF_AGE_MS, None)
    by_id = {s.snapshot_id: s for s in metadata.snapshots}
    explicit = set(snapshot_ids)
    for sid in sorted(explicit):
        if sid not in by_id:
            raise ValidationError(f"cannot expire snapshot {sid}: the table has no such snapshot")
        held = sorted(name for name, ref in metadata.refs.items() if ref.snapshot_id == sid)
        if held:
            raise ValidationError(f"cannot expire snapshot {sid}: still referenced by {', '.join(held)}")

    kept_refs, removed_refs = {}, []
    for name, ref in metadata.refs.items():
        max_age = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else default_ref_age
        snap = by_id.get(ref.snapshot_id)
        if name != MAIN_BRANCH and max_age is not None and snap is not None and now_ms - snap.timestamp_ms > max_age:
            removed_refs.append(name)
        else:
            kept_refs[name] = ref

    retained: set[int] = set()
    reachable: set[int] = set()
    for ref in kept_refs.values():
        reachable.update(s.snapshot_id for s in metadata.ancestors(ref.snapshot_id))
        if ref.type != BRANCH:
            retained.add(ref.snapshot_id)
            continue
        older = now_ms - ref.max_snapshot_age_ms if ref.max_snapshot_age_ms is not None else default_older
        keep = ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None else default_keep
        history: set[int] = set()
        for s in metadata.ancestors(ref.snapshot_id):
            if len(history) < keep or s.timestamp_ms >= older:
                history.add(s.snapshot_id)
            else:
                break
        retained |= history
    retained |= {s.snapshot_id for s in metadata.snapshots
                 if s.snapshot_id not in reachable and s.timestamp_ms >= default_older}
    retained -= explicit
    expired = tuple(s.snapshot_id for s in metadata.snapshots if s.snapshot_id not in retained)
    out: list[TableUpdate] = [RemoveSnapshotRef(name) for name in removed_refs]
    if expired:
        out.append(RemoveSnapshots(expired))
    return out
