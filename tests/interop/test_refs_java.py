"""Branches, tags, rollbacks and snapshot properties made by sparkberg read in Iceberg Java (``VERSION AS OF``, the ``refs`` metadata
table, the current snapshot); refs Java makes read in sparkberg."""
import pytest

import sparkberg

pytestmark = pytest.mark.interop


def ids(rows):
    return sorted(r[0] for r in rows)


def test_java_reads_sparkberg_refs_and_rollbacks(java, java_warehouse):
    cat = sparkberg.catalog(java, java_warehouse)
    t = cat.create_table("refs.t", "id bigint", properties={"format-version": "2"})
    for k in range(3):
        t.append(java.range(k * 10, k * 10 + 10), snapshot_properties={"job.batch": str(k)})
    s1, s2, s3 = (s.snapshot_id for s in t.metadata.snapshots)
    t.create_branch("audit", s2, min_snapshots_to_keep=2, max_ref_age_ms=86_400_000).create_tag("first", s1)
    t.rollback_to_snapshot(s2)
    java.sql("REFRESH TABLE ref.refs.t")
    assert ids(java.sql("SELECT id FROM ref.refs.t VERSION AS OF 'first'").collect()) == list(range(10))
    assert ids(java.sql("SELECT id FROM ref.refs.t VERSION AS OF 'audit'").collect()) == list(range(20))
    assert ids(java.sql("SELECT id FROM ref.refs.t").collect()) == list(range(20))
    refs = {r["name"]: r for r in java.sql("SELECT * FROM ref.refs.t.refs").collect()}
    assert set(refs) == {"main", "audit", "first"}
    assert (refs["audit"]["type"], refs["audit"]["snapshot_id"], refs["audit"]["min_snapshots_to_keep"],
            refs["audit"]["max_reference_age_in_ms"]) == ("BRANCH", s2, 2, 86_400_000)
    assert (refs["first"]["type"], refs["first"]["snapshot_id"]) == ("TAG", s1)
    assert refs["main"]["snapshot_id"] == s2
    batches = java.sql("SELECT snapshot_id, summary['job.batch'] FROM ref.refs.t.snapshots").collect()
    assert sorted((r[0], r[1]) for r in batches) == sorted([(s1, "0"), (s2, "1"), (s3, "2")])
    # Java moves refs; sparkberg reads what it did
    java.sql(f"ALTER TABLE ref.refs.t CREATE TAG java_tag AS OF VERSION {s3}")
    java.sql("ALTER TABLE ref.refs.t DROP BRANCH audit")
    java.sql(f"CALL ref.system.set_current_snapshot('refs.t', {s3})")
    t = cat.load_table("refs.t")
    assert set(t.metadata.refs) == {"main", "first", "java_tag"} and t.metadata.current_snapshot_id == s3
    assert ids(t.to_df(ref="java_tag").collect()) == list(range(30))
    t.rollback_to_snapshot(s1).fast_forward("main", "java_tag")  # s1 is an ancestor of s3
    java.sql("REFRESH TABLE ref.refs.t")
    assert ids(java.sql("SELECT id FROM ref.refs.t").collect()) == list(range(30))


def test_branch_writes_and_wap_interoperate_with_java(java, java_warehouse):
    """sparkberg writes to a branch and Java reads and writes it; a snapshot sparkberg stages Java publishes
    (``publish_changes``), one Java stages sparkberg publishes; Java cherry-picks a sparkberg dynamic overwrite."""
    cat = sparkberg.catalog(java, java_warehouse)
    t = cat.create_table("refs.b", "id bigint, p string", partition_by=["p"],
                         properties={"format-version": "3", "write.delete.mode": "merge-on-read",
                                     "write.wap.enabled": "true"})
    t.append(java.createDataFrame([(1, "a"), (2, "a"), (3, "b")], "id bigint, p string"))
    t.create_branch("dev")
    t.append(java.createDataFrame([(4, "b")], "id bigint, p string"), branch="dev")
    t.delete("id = 2", branch="dev")
    java.sql("REFRESH TABLE ref.refs.b")
    assert ids(java.sql("SELECT id FROM ref.refs.b VERSION AS OF 'dev'").collect()) == [1, 3, 4]
    assert ids(java.sql("SELECT id FROM ref.refs.b").collect()) == [1, 2, 3]
    java.sql("INSERT INTO ref.refs.b.branch_dev VALUES (5, 'c')")
    java.sql("DELETE FROM ref.refs.b.branch_dev WHERE id = 1")
    assert ids(cat.load_table("refs.b").to_df(ref="dev").collect()) == [3, 4, 5]
    # staged by sparkberg, published by Java (main moved meanwhile: a replayed append)
    t = cat.load_table("refs.b")
    t.append(java.createDataFrame([(10, "a")], "id bigint, p string"), wap_id="sb-1")
    t.append(java.createDataFrame([(11, "a")], "id bigint, p string"))
    java.sql("REFRESH TABLE ref.refs.b")
    java.sql("CALL ref.system.publish_changes('refs.b', 'sb-1')")
    t = cat.load_table("refs.b")
    assert ids(t.to_df().collect()) == [1, 2, 3, 10, 11]
    assert t.metadata.current_snapshot.summary["published-wap-id"] == "sb-1"
    # staged by Java, published by sparkberg
    java.conf.set("spark.wap.id", "java-1")
    try:
        java.sql("INSERT INTO ref.refs.b VALUES (20, 'b')")
    finally:
        java.conf.unset("spark.wap.id")
    t = cat.load_table("refs.b")
    assert ids(t.to_df().collect()) == [1, 2, 3, 10, 11]
    t.publish_wap("java-1")
    java.sql("REFRESH TABLE ref.refs.b")
    assert ids(java.sql("SELECT id FROM ref.refs.b").collect()) == [1, 2, 3, 10, 11, 20]
    # a sparkberg dynamic overwrite on a branch, cherry-picked by Java onto a main that moved elsewhere
    t = cat.load_table("refs.b")
    t.create_branch("fix")
    t.dynamic_overwrite(java.createDataFrame([(30, "c")], "id bigint, p string"), branch="fix")
    t.append(java.createDataFrame([(12, "a")], "id bigint, p string"))
    picked = cat.load_table("refs.b").metadata.refs["fix"].snapshot_id
    java.sql("REFRESH TABLE ref.refs.b")
    java.sql(f"CALL ref.system.cherrypick_snapshot('refs.b', {picked})")
    t = cat.load_table("refs.b")
    assert ids(t.to_df().collect()) == [1, 2, 3, 10, 11, 12, 20, 30]
    assert t.metadata.current_snapshot.summary["source-snapshot-id"] == str(picked)
