"""Writes to branches, write-audit-publish and cherry-picking, with Iceberg's rules (``SparkWriteConf.branch``,
``CherryPickOperation``): every write commits to the branch it names, planned from that branch's head and
validated against commits to it; staged snapshots move no ref until published; broken rules are named errors
that change nothing."""
import contextlib

import pytest

import sparkberg
from sparkberg.errors import CommitFailedException, ValidationError

pytestmark = pytest.mark.spark


@pytest.fixture
def cat(spark, warehouse):
    return sparkberg.catalog(spark, warehouse)


@contextlib.contextmanager
def session_conf(spark, **settings):
    for k, v in settings.items():
        spark.conf.set(k.replace("_", "."), v)
    try:
        yield
    finally:
        for k in settings:
            spark.conf.unset(k.replace("_", "."))


def rows(t, **kw):
    return sorted(tuple(r) for r in t.to_df(**kw).collect())


def unchanged(cat, name, call, message, error=ValidationError):
    """``call`` raises ``error`` matching ``message`` and commits nothing (same metadata file)."""
    location = cat.load_table(name).metadata_location
    with pytest.raises(error, match=message):
        call()
    assert cat.load_table(name).metadata_location == location


@pytest.mark.parametrize("version,mode", [(2, "copy-on-write"), (2, "merge-on-read"), (3, "merge-on-read")])
def test_every_write_commits_to_its_branch_and_leaves_main_alone(spark, cat, version, mode):
    props = {"format-version": str(version), **{f"write.{op}.mode": mode for op in ("delete", "update", "merge")}}
    t = cat.create_table("db.b", "id bigint, v string", partition_by=["bucket(2, id)"], properties=props)
    t.append(spark.createDataFrame([(i, "a") for i in range(10)], "id bigint, v string"))
    main_head = t.metadata.current_snapshot_id
    t.create_branch("dev")
    df = spark.createDataFrame([(i, "b") for i in range(10, 14)], "id bigint, v string")
    t.append(df, branch="dev", snapshot_properties={"job": "j1"})
    t.delete("id < 2", branch="dev")
    t.update({"v": "'u'"}, "id = 5", branch="dev")
    t.merge(spark.createDataFrame([(6, "m"), (99, "n")], "id bigint, v string"), "t.id = s.id",
            branch="dev").when_matched_update({"v": "s.v"}).when_not_matched_insert_all().execute()
    t.overwrite(spark.createDataFrame([(7, "o")], "id bigint, v string"), "id = 7", branch="dev")
    t.delete_by_keys(spark.createDataFrame([(8,)], "id bigint"), ["id"], branch="dev")
    t = cat.load_table("db.b")
    assert t.metadata.current_snapshot_id == main_head
    assert rows(t) == [(i, "a") for i in range(10)]
    expected = sorted([(i, "a") for i in range(2, 10) if i not in (5, 6, 7, 8)]
                      + [(5, "u"), (6, "m"), (7, "o"), (99, "n")] + [(i, "b") for i in range(10, 14)])
    assert rows(t, ref="dev") == expected
    chain = list(t.metadata.ancestors(t.metadata.refs["dev"].snapshot_id))
    assert len(chain) == 7 and chain[-1].snapshot_id == main_head  # each write a child of the branch's head
    assert chain[-2].summary["job"] == "j1" and chain[-2].summary["total-records"] == "14"
    t.dynamic_overwrite(spark.createDataFrame([(0, "d")], "id bigint, v string"), branch="dev")
    t = cat.load_table("db.b")
    assert t.metadata.current_snapshot_id == main_head
    assert t.metadata.snapshot_by_id(t.metadata.refs["dev"].snapshot_id).summary["replace-partitions"] == "true"
    assert (0, "d") in rows(t, ref="dev") and (2, "a") not in rows(t, ref="dev")  # id 0 and 2: bucket 1


def test_branch_rules_are_named_errors(spark, cat):
    t = cat.create_table("db.b", "id bigint")
    t.append(spark.range(3))
    t.create_tag("eod")
    unchanged(cat, "db.b", lambda: t.append(spark.range(5, 6), branch="nope"), "branch 'nope': it does not exist")
    unchanged(cat, "db.b", lambda: t.delete("id = 1", branch="nope"), "branch 'nope'")
    unchanged(cat, "db.b", lambda: t.append(spark.range(5, 6), branch="eod"), "'eod': it is a tag")
    unchanged(cat, "db.b", lambda: t.append(spark.range(5, 6), wap_id="w1"), "write.wap.enabled is not true")
    unchanged(cat, "db.b", lambda: t.append(spark.range(5, 6), branch=""), "branch must be a non-empty string")


def test_commits_keep_the_branch_retention(spark, cat):
    t = cat.create_table("db.b", "id bigint")
    t.append(spark.range(3))
    t.replace_branch("main", min_snapshots_to_keep=4, max_snapshot_age_ms=3_600_000)
    t.create_branch("dev", min_snapshots_to_keep=2)
    t.append(spark.range(3, 4))
    t.append(spark.range(4, 5), branch="dev")
    refs = cat.load_table("db.b").metadata.refs
    assert (refs["main"].min_snapshots_to_keep, refs["main"].max_snapshot_age_ms) == (4, 3_600_000)
    assert refs["dev"].min_snapshots_to_keep == 2


def test_a_branch_write_conflicts_only_with_commits_to_that_branch(spark, cat):
    t = cat.create_table("db.b", "id bigint, v string", properties={"format-version": "2"})
    t.append(spark.createDataFrame([(1, "a"), (2, "a")], "id bigint, v string"))
    t.create_branch("dev")
    stale = cat.load_table("db.b")
    cat.load_table("db.b").append(spark.createDataFrame([(3, "main")], "id bigint, v string"))  # main moves
    stale.delete("id = 1", branch="dev")  # no conflict: main is not the branch
    t = cat.load_table("db.b")
    assert rows(t, ref="dev") == [(2, "a")] and rows(t) == [(1, "a"), (2, "a"), (3, "main")]
    stale = cat.load_table("db.b")
    cat.load_table("db.b").append(spark.createDataFrame([(3, "dev")], "id bigint, v string"), branch="dev")
    unchanged(cat, "db.b", lambda: stale.delete("id >= 2", branch="dev"), "serializable isolation",
              CommitFailedException)  # (the stale plan matched id 2; the branch's new file may match too)


def test_write_audit_publish_with_a_wap_id(spark, cat):
    t = cat.create_table("db.w", "id bigint", properties={"format-version": "2", "write.wap.enabled": "true"})
    t.append(spark.range(3))
    head = t.metadata.current_snapshot_id
    with session_conf(spark, spark_wap_id="batch-1"):
        cat.load_table("db.w").append(spark.range(3, 5))
    t = cat.load_table("db.w")
    staged = [s for s in t.metadata.snapshots if s.summary.get("wap.id") == "batch-1"]
    assert len(staged) == 1 and staged[0].parent_snapshot_id == head
    assert t.metadata.current_snapshot_id == head and rows(t) == [(i,) for i in range(3)]  # staged: not current
    assert rows(t, snapshot_id=staged[0].snapshot_id) == [(i,) for i in range(5)]  # the audit reads it
    t.publish_wap("batch-1")  # main's head is its parent: fast-forward
    t = cat.load_table("db.w")
    assert t.metadata.current_snapshot_id == staged[0].snapshot_id
    unchanged(cat, "db.w", lambda: t.publish_wap("batch-1"), "'batch-1' was already published")
    unchanged(cat, "db.w", lambda: t.publish_wap("nope"), "unknown WAP id 'nope'")
    # staged on one head, main moves on, then published: replayed with the published id and its source
    t.append(spark.range(10, 12), wap_id="batch-2")
    t.append(spark.range(20, 21))
    source = [s for s in cat.load_table("db.w").metadata.snapshots if s.summary.get("wap.id") == "batch-2"][0]
    t.publish_wap("batch-2")
    t = cat.load_table("db.w")
    published = t.metadata.current_snapshot
    assert published.snapshot_id != source.snapshot_id and published.operation == "append"
    assert published.summary["published-wap-id"] == "batch-2"
    assert published.summary["source-snapshot-id"] == str(source.snapshot_id)
    assert rows(t) == [(i,) for i in [0, 1, 2, 3, 4, 10, 11, 20]]
    unchanged(cat, "db.w", lambda: t.cherry_pick(source.snapshot_id), "already published")
    with session_conf(spark, spark_wap_id="x", spark_wap_branch="y"):
        unchanged(cat, "db.w", lambda: t.append(spark.range(1)), "both a WAP id and a WAP branch")


def test_a_wap_branch_is_made_on_first_write_and_read_by_default(spark, cat):
    t = cat.create_table("db.w", "id bigint", properties={"write.wap.enabled": "true"})
    t.append(spark.range(2))
    head = t.metadata.current_snapshot_id
    with session_conf(spark, spark_wap_branch="audit"):
        t.append(spark.range(2, 4))
        t.append(spark.range(4, 5))
        unchanged(cat, "db.w", lambda: t.append(spark.range(1), branch="x"), "both branch 'x' and WAP branch")
        assert rows(cat.load_table("db.w")) == [(i,) for i in range(5)]  # reads follow the WAP branch
    t = cat.load_table("db.w")
    assert t.metadata.current_snapshot_id == head and rows(t) == [(0,), (1,)]
    assert rows(t, ref="audit") == [(i,) for i in range(5)]
    t.fast_forward("main", "audit")  # publish the audited branch
    assert rows(cat.load_table("db.w")) == [(i,) for i in range(5)]


def test_cherry_pick_replays_a_dynamic_overwrite_with_java_checks(spark, cat):
    t = cat.create_table("db.c", "id bigint, p string", partition_by=["p"], properties={"format-version": "2"})
    t.append(spark.createDataFrame([(1, "a"), (2, "b")], "id bigint, p string"))
    t.create_branch("dev")
    t.dynamic_overwrite(spark.createDataFrame([(10, "a")], "id bigint, p string"), branch="dev")
    picked = cat.load_table("db.c").metadata.refs["dev"].snapshot_id
    t.append(spark.createDataFrame([(3, "b")], "id bigint, p string"))  # main moves, outside partition a
    t.cherry_pick(picked)
    t = cat.load_table("db.c")
    assert rows(t) == [(2, "b"), (3, "b"), (10, "a")]
    snap = t.metadata.current_snapshot
    assert (snap.operation, snap.summary["source-snapshot-id"], snap.summary["replace-partitions"]) == \
        ("overwrite", str(picked), "true")
    unchanged(cat, "db.c", lambda: t.cherry_pick(picked), "already picked into main")
    # an overwrite of partition b, while main added a file to b: refused
    t.dynamic_overwrite(spark.createDataFrame([(20, "b")], "id bigint, p string"), branch="dev")
    picked = cat.load_table("db.c").metadata.refs["dev"].snapshot_id
    t.rollback_to_snapshot(t.metadata.current_snapshot.parent_snapshot_id)  # main no longer holds the pick
    t.append(spark.createDataFrame([(4, "b")], "id bigint, p string"))
    unchanged(cat, "db.c", lambda: t.cherry_pick(picked), "not an ancestor of main's head")
    # a delete can only be fast-forwarded to
    t.create_branch("del")
    t.delete("id = 4", branch="del")
    t.append(spark.createDataFrame([(5, "c")], "id bigint, p string"))
    deleted = cat.load_table("db.c").metadata.refs["del"].snapshot_id
    unchanged(cat, "db.c", lambda: t.cherry_pick(deleted), "operation 'delete' is not an append")
    unchanged(cat, "db.c", lambda: t.cherry_pick(123), "unknown snapshot 123")


def test_cherry_pick_refuses_an_overwrite_of_a_partition_main_changed(spark, cat):
    t = cat.create_table("db.c", "id bigint, p string", partition_by=["p"], properties={"format-version": "2"})
    t.append(spark.createDataFrame([(1, "a"), (2, "b")], "id bigint, p string"))
    t.create_branch("dev")
    t.dynamic_overwrite(spark.createDataFrame([(10, "a")], "id bigint, p string"), branch="dev")
    picked = cat.load_table("db.c").metadata.refs["dev"].snapshot_id
    t.append(spark.createDataFrame([(3, "a")], "id bigint, p string"))
    unchanged(cat, "db.c", lambda: t.cherry_pick(picked), "added .* to a partition it replaces")
    assert rows(cat.load_table("db.c")) == [(1, "a"), (2, "b"), (3, "a")]
