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
