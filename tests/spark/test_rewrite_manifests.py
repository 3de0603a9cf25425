"""Manifest rewrite (``Table.rewrite_manifests``): fewer manifests clustered by partition, the same rows with the
same row ids, last-updated and data sequence numbers, deletes still applied, a concurrent append kept, and
nothing done where there is nothing to gain."""
import pytest

import sparkberg
from sparkberg.planning.entries import snapshot_manifests

NO_MERGE = {"commit.manifest-merge.enabled": "false"}


def state(t):
    cols = ["id", "p", "_row_id", "_last_updated_sequence_number"] if t.format_version >= 3 else ["id", "p"]
    return sorted(tuple(r) for r in t.to_df(columns=cols).collect())


def sequences(t):
    return sorted((r["file_path"], r["data_sequence_number"]) for r in t.plan_files().collect())


@pytest.mark.parametrize("version", [2, 3])
def test_manifests_are_rewritten_and_rows_keep_their_ids(spark, warehouse, version):
    cat = sparkberg.catalog(spark, warehouse)
    cat.create_namespace("db")
    t = cat.create_table("db.t", "id bigint, p int", partition_by=["p"],
                         properties={**NO_MERGE, "format-version": str(version), "write.delete.mode": "merge-on-read"})
    for k in range(6):
        t.append(spark.sql(f"SELECT id, CAST(id % 3 AS int) AS p FROM range({10 * k}, {10 * k + 10})"))
    t.delete("id % 7 = 0")
    t.update({"p": "p"}, "id = 12")
    before, seqs, next_row_id = state(t), sequences(t), t.metadata.next_row_id
    manifests = snapshot_manifests(t.io, t.current_snapshot())
    location = t.metadata_location
    planned = tuple(t.rewrite_manifests(dry_run=True).collect()[0])
    assert cat.load_table("db.t").metadata_location == location  # (a dry run commits nothing)
    (rewritten, added), = [tuple(r) for r in t.rewrite_manifests().collect()]
    assert planned == (rewritten, added)
    after = snapshot_manifests(t.io, t.current_snapshot())
    kept = {m.manifest_path for m in manifests} & {m.manifest_path for m in after}  # (groups of one manifest)
    assert rewritten == len(manifests) - len(kept) > 1 and added == len(after) - len(kept)
    assert len(after) < len(manifests) and len({(m.content, m.partition_spec_id) for m in after}) == len(after)
    assert t.current_snapshot().summary["operation"] == "replace"
    assert state(t) == before and sequences(t) == seqs and t.metadata.next_row_id == next_row_id
    assert state(cat.load_table("db.t")) == before
    assert [tuple(r) for r in t.rewrite_manifests().collect()] == [(0, 0)]  # (one manifest per content: done)


def test_a_spec_filter_and_a_concurrent_append(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    cat.create_namespace("db")
    t = cat.create_table("db.t", "id bigint, p int", partition_by=["p"], properties=NO_MERGE)
    for k in range(3):
        t.append(spark.sql(f"SELECT id, CAST(id % 2 AS int) AS p FROM range({10 * k}, {10 * k + 10})"))
    t.update_spec(["p", "bucket(2, id)"])
    for k in range(3, 5):
        t.append(spark.sql(f"SELECT id, CAST(id % 2 AS int) AS p FROM range({10 * k}, {10 * k + 10})"))
    other = cat.load_table("db.t")
    backend = t.catalog._backend
    real, raced = backend.commit, []

    def commit(*args, **kwargs):  # another writer appends between the rewrite's read and its swap
        if not raced:
            raced.append(True)
            other.append(spark.sql("SELECT 100L AS id, 0 AS p"))
        return real(*args, **kwargs)
    backend.commit = commit
    try:
        (rewritten, added), = [tuple(r) for r in t.rewrite_manifests(spec_id=0).collect()]
    finally:
        backend.commit = real
    assert (rewritten, added) == (3, 1)
    specs = sorted(m.partition_spec_id for m in snapshot_manifests(t.io, t.current_snapshot()))
    assert specs == [0, 1, 1, 1]  # (spec 1's two manifests and the concurrent append's untouched)
    assert sorted(r[0] for r in t.to_df().select("id").collect()) == list(range(50)) + [100]
