"""Branches, tags and the current snapshot (``create_branch`` ... ``rollback_to_timestamp``), with Java's rules:
every broken rule is a named error that leaves the table as it was."""
import os

import pytest

import sparkberg
from sparkberg.errors import ValidationError

pytestmark = pytest.mark.spark


@pytest.fixture
def table(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.r", "id bigint")
    for i in range(3):
        t.append(spark.range(i * 10, i * 10 + 10))
    return cat, t


def ids(t, **kw):
    return sorted(r[0] for r in t.to_df(**kw).collect())


def unchanged(cat, t, call, message):
    """``call`` raises a ValidationError matching ``message`` and commits nothing."""
    before = cat.load_table("db.r")
    directory = before.location.replace("file://", "") + "/metadata"
    files = sorted(os.listdir(directory))
    with pytest.raises(ValidationError, match=message):
        call()
    after = cat.load_table("db.r")
    assert (after.metadata_location, after.metadata.current_snapshot_id) == \
        (before.metadata_location, before.metadata.current_snapshot_id)
    assert sorted(os.listdir(directory)) == files


def test_branches_and_tags_are_created_replaced_renamed_and_dropped(table):
    cat, t = table
    s1, s2, s3 = (s.snapshot_id for s in t.metadata.snapshots)
    t.create_branch("audit", s2, min_snapshots_to_keep=3, max_snapshot_age_ms=86_400_000)
    t.create_branch("head")  # main's head
    t.create_tag("eod", s1, max_ref_age_ms=7 * 86_400_000)
    refs = cat.load_table("db.r").metadata.refs
    assert (refs["audit"].snapshot_id, refs["audit"].type, refs["audit"].min_snapshots_to_keep,
            refs["audit"].max_snapshot_age_ms) == (s2, "branch", 3, 86_400_000)
    assert refs["head"].snapshot_id == s3 and (refs["eod"].snapshot_id, refs["eod"].type) == (s1, "tag")
    assert ids(t, ref="eod") == list(range(10)) and ids(t, ref="audit") == list(range(20))
    t.replace_branch("audit", s3)  # retention kept when not given (REPLACE BRANCH)
    t.replace_tag("eod", s2)
    refs = cat.load_table("db.r").metadata.refs
    assert (refs["audit"].snapshot_id, refs["audit"].min_snapshots_to_keep) == (s3, 3)
    assert (refs["eod"].snapshot_id, refs["eod"].max_ref_age_ms) == (s2, 7 * 86_400_000)
    t.replace_branch("audit", s1, min_snapshots_to_keep=5)
    assert cat.load_table("db.r").metadata.refs["audit"].min_snapshots_to_keep == 5
    t.rename_branch("audit", "audited")
    refs = cat.load_table("db.r").metadata.refs
    assert "audit" not in refs and (refs["audited"].snapshot_id, refs["audited"].min_snapshots_to_keep) == (s1, 5)
    t.drop_branch("audited").drop_tag("eod")
    assert set(cat.load_table("db.r").metadata.refs) == {"main", "head"}
    assert cat.load_table("db.r").metadata.current_snapshot_id == s3  # main never moved


def test_ref_rules_are_named_errors_that_change_nothing(table):
    cat, t = table
    s1 = t.metadata.snapshots[0].snapshot_id
    t.create_branch("b", s1)
    t.create_tag("t", s1)
    cases = [
        (lambda: t.create_branch("b"), "ref 'b' already exists"),
        (lambda: t.create_tag("main"), "ref 'main' already exists"),
        (lambda: t.create_branch("x", 12345), "snapshot 12345 is not in the table"),
        (lambda: t.create_branch("x", min_snapshots_to_keep=0), "min_snapshots_to_keep .* positive"),
        (lambda: t.create_branch("x", max_ref_age_ms=-1), "max_ref_age_ms .* positive"),
        (lambda: t.create_branch(""), "non-empty"),
        (lambda: t.replace_branch("t", s1), "'t' is a tag, not a branch"),
        (lambda: t.replace_tag("nope", s1), "tag 'nope' does not exist"),
        (lambda: t.drop_branch("main"), "cannot drop branch 'main'"),
        (lambda: t.drop_tag("b"), "'b' is a branch, not a tag"),
        (lambda: t.rename_branch("main", "m2"), "cannot rename branch 'main'"),
        (lambda: t.rename_branch("b", "t"), "ref 't' already exists"),
        (lambda: t.fast_forward("b", "nope"), "ref 'nope' does not exist"),
        (lambda: t.rollback_to_snapshot(12345), "snapshot 12345 is not in the table"),
        (lambda: t.rollback_to_timestamp(0), "no snapshot older than 0"),
        (lambda: t.rollback_to_timestamp("yesterday"), "epoch milliseconds"),
    ]
    for call, message in cases:
        unchanged(cat, t, call, message)


def test_rollback_set_current_and_fast_forward(spark, table):
    cat, t = table
    s1, s2, s3 = t.metadata.snapshots
    t.create_branch("b3")  # at s3
    t.rollback_to_snapshot(s2.snapshot_id)
    assert ids(cat.load_table("db.r")) == list(range(20))
    unchanged(cat, t, lambda: t.rollback_to_snapshot(s3.snapshot_id), "not an ancestor of the current snapshot")
    t.set_current_snapshot(s3.snapshot_id)  # any snapshot, ancestor or not
    assert ids(cat.load_table("db.r")) == list(range(30))
    t.rollback_to_timestamp(s2.timestamp_ms)  # the latest ancestor strictly older: s1
    assert cat.load_table("db.r").metadata.current_snapshot_id == s1.snapshot_id
    log = [e.snapshot_id for e in cat.load_table("db.r").metadata.snapshot_log]
    assert log[-4:] == [s3.snapshot_id, s2.snapshot_id, s3.snapshot_id, s1.snapshot_id]
    t.fast_forward("main", "b3")  # main (s1) is an ancestor of b3 (s3)
    assert cat.load_table("db.r").metadata.current_snapshot_id == s3.snapshot_id
    t.rollback_to_snapshot(s1.snapshot_id)
    t.append(spark.range(100, 101))  # main diverges from b3
    unchanged(cat, t, lambda: t.fast_forward("main", "b3"), "not an ancestor")
    unchanged(cat, t, lambda: t.fast_forward("b3", "main"), "not an ancestor")
    assert ids(cat.load_table("db.r")) == list(range(10)) + [100] and ids(t, ref="b3") == list(range(30))
