"""Snapshot expiry (``Table.expire_snapshots``): one commit, then the files only expired snapshots reached
deleted, counted by kind as Iceberg Java's procedure counts them; dry runs, kept files, refs, a writer racing the
expiry, and bad input."""
import os
import time

import pytest

import sparkberg
from commits import commit_updates
from sparkberg.errors import ValidationError

COLUMNS = ["deleted_data_files_count", "deleted_position_delete_files_count", "deleted_equality_delete_files_count",
           "deleted_manifest_files_count", "deleted_manifest_lists_count", "deleted_statistics_files_count"]


def files(t):
    root = t.location[len("file://"):]
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if not f.endswith(".crc")}


def ids(t):
    return sorted(r[0] for r in t.to_df().select("id").collect())


def counts(df):
    assert df.columns == COLUMNS
    (row,), = [df.collect()]
    return tuple(row)


@pytest.fixture
def history(spark, warehouse):
    """A table with four appends and a copy-on-write delete (five snapshots)."""
    cat = sparkberg.catalog(spark, warehouse)
    cat.create_namespace("db")
    t = cat.create_table("db.t", "id bigint, p int", partition_by=["p"])
    for k in range(4):
        t.append(spark.sql(f"SELECT id, CAST(id % 2 AS int) AS p FROM range({10 * k}, {10 * k + 10})"))
    t.delete("id < 5")
    return cat, t


def test_expiry_deletes_only_what_expired_snapshots_reached(spark, history):
    cat, t = history
    before = files(t)
    rows = ids(t)
    dry = counts(t.expire_snapshots(older_than=int(time.time() * 1000), retain_last=1, dry_run=True))
    assert files(t) == before and len(cat.load_table("db.t").metadata.snapshots) == 5  # (nothing changed)
    result = counts(t.expire_snapshots(older_than=int(time.time() * 1000), retain_last=1))
    assert result == dry
    gone = before - files(t)
    assert len(t.metadata.snapshots) == 1 and ids(cat.load_table("db.t")) == rows
    # the delete rewrote the files of the p partitions holding ids < 5 (one per partition); the four manifest lists
    # of the older snapshots and their manifests no kept snapshot lists
    data_gone = sorted(f for f in gone if f.endswith(".parquet"))
    assert result[0] == len(data_gone) == 2
    assert result[4] == 4 == sum(1 for f in gone if os.path.basename(f).startswith("snap-"))
    assert result[3] == sum(1 for f in gone if f.endswith(".avro") and not os.path.basename(f).startswith("snap-"))
    assert result[1] == result[2] == result[5] == 0
    assert counts(t.expire_snapshots(older_than=int(time.time() * 1000))) == (0,) * 6  # (nothing left to expire)


def test_without_cleaning_the_commit_happens_and_nothing_is_deleted(spark, history):
    cat, t = history
    before = files(t)
    assert counts(t.expire_snapshots(older_than=int(time.time() * 1000), clean_expired_files=False)) == (0,) * 6
    assert len(t.metadata.snapshots) == 1
    assert before - files(t) == set()


def test_delete_files_are_counted_by_kind(spark, warehouse, tune):
    cat = sparkberg.catalog(spark, warehouse)
    cat.create_namespace("db")
    t = cat.create_table("db.m", "id bigint", properties={"write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id FROM range(0, 20)"))
    t.delete("id < 3")  # a position delete file
    t.delete_by_keys(spark.sql("SELECT 10L AS id"), ["id"])  # an equality delete file
    t.overwrite(spark.sql("SELECT id FROM range(100, 105)"))
    before = by_content(t.metadata_table("all_files"))
    result = counts(t.expire_snapshots(older_than=int(time.time() * 1000)))
    after = by_content(t.metadata_table("all_files"))  # (the metadata table: an oracle of its own)
    assert result[:3] == tuple(len(before[c] - after[c]) for c in (0, 1, 2))
    assert result[0] > 0 and result[1] == 1
    assert ids(t) == list(range(100, 105))


def by_content(files_df):
    out = {0: set(), 1: set(), 2: set()}
    for r in files_df.select("content", "file_path").collect():
        out[r["content"]].add(r["file_path"])
    return out


def test_refs_keep_what_they_reach_and_old_refs_go(spark, history):
    from sparkberg.format import updates as U
    cat, t = history
    first = t.metadata.snapshots[0].snapshot_id
    commit_updates(t, [U.SetSnapshotRef("v1", first, "tag")])
    result = counts(t.expire_snapshots(older_than=int(time.time() * 1000)))
    assert [s.snapshot_id for s in t.metadata.snapshots] == [first, t.current_snapshot().snapshot_id]
    assert result[0] == 0 and result[4] == 3  # (the tag keeps the files the delete rewrote: the first append's)
    assert sorted(r[0] for r in t.to_df(ref="v1").select("id").collect()) == list(range(10))
    commit_updates(t, [U.SetSnapshotRef("v1", first, "tag", max_ref_age_ms=1)])
    assert counts(t.expire_snapshots(older_than=int(time.time() * 1000)))[0] == 2
    assert "v1" not in t.metadata.refs and len(t.metadata.snapshots) == 1


def test_a_writer_racing_the_expiry_loses_nothing(spark, history):
    cat, t = history
    other = cat.load_table("db.t")
    backend = t.catalog._backend
    real = backend.commit
    raced = []

    def commit(*args, **kwargs):  # another writer commits between the expiry's read and its swap
        if not raced:
            raced.append(True)  # (the other writer's own commit goes through this catalog too)
            other.append(spark.sql("SELECT 100L AS id, 0 AS p"))
        return real(*args, **kwargs)
    backend.commit = commit
    try:
        t.expire_snapshots(older_than=int(time.time() * 1000))
    finally:
        backend.commit = real
    fresh = cat.load_table("db.t")
    assert 100 in ids(fresh) and len(fresh.metadata.snapshots) == 1
    assert fresh.current_snapshot().snapshot_id == other.current_snapshot().snapshot_id


def test_bad_input_is_named_and_changes_nothing(spark, history):
    import datetime
    cat, t = history
    location = t.metadata_location
    with pytest.raises(ValidationError, match="at least 1"):
        t.expire_snapshots(retain_last=0)
    with pytest.raises(ValidationError, match="in the future"):
        t.expire_snapshots(older_than=datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1))
    with pytest.raises(ValidationError, match="older_than must be epoch millis or a datetime"):
        t.expire_snapshots(older_than="yesterday")
    with pytest.raises(ValidationError, match="no such snapshot"):
        t.expire_snapshots(snapshot_ids=[12345])
    with pytest.raises(ValidationError, match="still referenced by main"):
        t.expire_snapshots(snapshot_ids=[t.current_snapshot().snapshot_id])
    assert cat.load_table("db.t").metadata_location == location
