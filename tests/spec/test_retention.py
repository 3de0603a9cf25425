"""Snapshot expiry decided as the spec's "Snapshot Retention Policy" and Iceberg Java's RemoveSnapshots say:
ref ages, branch retention (the branch's own settings over the call's), tags, unreferenced snapshots, explicit
ids, and bad input named."""
import pytest

from sparkberg.errors import ValidationError
from sparkberg.format import types as T
from sparkberg.format import updates as U
from sparkberg.format.retention import expiry
from sparkberg.format.snapshots import Snapshot

DAY = 24 * 3600 * 1000
NOW = 100 * DAY


def snap(sid, parent, ts):
    return Snapshot(sid, ts, parent, sid, f"file:///t/metadata/snap-{sid}.avro", None, {"operation": "append"}, 0)


def table(chain, extra=(), properties=None):
    """``chain``: (id, age in days) of main's history, oldest first; ``extra``: more updates."""
    m = U.new_table_metadata(T.Schema([T.NestedField(1, "id", T.LONG)]), "file:///t", properties=properties or {},
                             timestamp_ms=0)
    parent = None
    updates = []
    for sid, age in chain:
        updates += [U.AddSnapshot(snap(sid, parent, NOW - age * DAY)), U.SetSnapshotRef("main", sid)]
        parent = sid
    return U.apply_all(updates + list(extra), m, timestamp_ms=NOW)


def expired(m, **kw):
    ups = expiry(m, NOW, **kw)
    ids = next((u.snapshot_ids for u in ups if isinstance(u, U.RemoveSnapshots)), ())
    refs = [u.ref_name for u in ups if isinstance(u, U.RemoveSnapshotRef)]
    return sorted(ids), refs


def test_defaults_are_five_days_and_one_snapshot():
    m = table([(1, 10), (2, 6), (3, 4), (4, 0)])
    assert expired(m) == ([1, 2], [])
    assert expired(table([(1, 10), (2, 9)])) == ([1], [])  # main keeps its newest whatever its age
    m = table([(1, 10), (2, 6), (3, 4)], properties={"history.expire.max-snapshot-age-ms": str(8 * DAY),
                                                     "history.expire.min-snapshots-to-keep": "3"})
    assert expired(m) == ([], [])


def test_older_than_and_retain_last():
    m = table([(1, 10), (2, 6), (3, 4), (4, 0)])
    assert expired(m, older_than_ms=NOW) == ([1, 2, 3], [])
    assert expired(m, older_than_ms=NOW, retain_last=2) == ([1, 2], [])
    assert expired(m, older_than_ms=NOW - 7 * DAY) == ([1], [])


def test_a_branchs_own_retention_overrides_the_call():
    extra = [U.AddSnapshot(snap(10, 2, NOW - 5 * DAY)), U.AddSnapshot(snap(11, 10, NOW - 3 * DAY)),
             U.SetSnapshotRef("b", 11, "branch", min_snapshots_to_keep=3)]
    m = table([(1, 10), (2, 8), (3, 0)], extra)
    # b keeps 11, 10, 2 (three snapshots, whatever their age); main keeps 3; 1 goes
    assert expired(m, older_than_ms=NOW) == ([1], [])
    extra[-1] = U.SetSnapshotRef("b", 11, "branch", max_snapshot_age_ms=6 * DAY)
    m = table([(1, 10), (2, 8), (3, 0)], extra)
    assert expired(m, older_than_ms=NOW) == ([1, 2], [])  # b keeps what is younger than 6 days: 11, 10


def test_tags_refs_past_their_age_and_main():
    extra = [U.SetSnapshotRef("t", 1, "tag"), U.SetSnapshotRef("old", 2, "tag", max_ref_age_ms=DAY)]
    m = table([(1, 10), (2, 8), (3, 0)], extra)
    assert expired(m, older_than_ms=NOW) == ([2], ["old"])  # t keeps 1; "old" is past its age, 2 with it
    m = table([(1, 10), (2, 8)], [U.SetSnapshotRef("main", 2, "branch", max_ref_age_ms=1)])
    assert expired(m, older_than_ms=NOW)[1] == []  # main is never removed
    m = table([(1, 10), (2, 8)], [U.SetSnapshotRef("b", 1, "branch")],
              properties={"history.expire.max-ref-age-ms": str(9 * DAY)})
    assert expired(m, older_than_ms=NOW) == ([1], ["b"])


def test_unreferenced_snapshots_are_kept_while_young():
    extra = [U.AddSnapshot(snap(20, None, NOW - DAY)), U.AddSnapshot(snap(21, None, NOW - 9 * DAY))]
    m = table([(1, 10), (2, 0)], extra)
    assert expired(m) == ([1, 21], [])


def test_explicit_ids_and_bad_input():
    m = table([(1, 10), (2, 6), (3, 4), (4, 0)], [U.SetSnapshotRef("t", 2, "tag")])
    assert expired(m, older_than_ms=0, snapshot_ids=[3]) == ([3], [])  # from the middle of main's history
    with pytest.raises(ValidationError, match="snapshot 2: still referenced by t"):
        expiry(m, NOW, snapshot_ids=[2])
    with pytest.raises(ValidationError, match="no such snapshot"):
        expiry(m, NOW, snapshot_ids=[99])
    with pytest.raises(ValidationError, match="at least 1"):
        expiry(m, NOW, retain_last=0)
    with pytest.raises(ValidationError, match="in the future"):
        expiry(m, NOW, older_than_ms=NOW + 1)
    bad = table([(1, 1)], properties={"history.expire.max-snapshot-age-ms": "soon"})
    with pytest.raises(ValidationError, match="history.expire.max-snapshot-age-ms"):
        expiry(bad, NOW)
    after = U.apply_all(expiry(m, NOW, older_than_ms=NOW), m)
    assert [s.snapshot_id for s in after.snapshots] == [2, 4] and set(after.refs) == {"main", "t"}
