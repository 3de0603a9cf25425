"""Manifest merging per ``commit.manifest-merge.*``: manifests stay few as commits pile up, rows, sequence
numbers, deletes and v3 row ids survive the merges, and files folded into merged manifests are removed."""
import glob
import os

import pytest

import sparkberg
from sparkberg.avro.manifest import read_manifest, read_manifest_list
from sparkberg.format.manifests import ADDED, DELETED, EXISTING, inherit
from sparkberg.commit.manifests import pack_end
from sparkberg.read.formats import path_key

pytestmark = pytest.mark.spark


def manifests(t):
    snap = t.metadata.current_snapshot
    return read_manifest_list(t.io.read(snap.manifest_list), snap.manifest_list)


def entries(t, mf):
    return inherit(read_manifest(t.io.read(mf.manifest_path), mf.manifest_path).entries, mf)


def test_pack_end_fills_bins_from_the_end():
    assert pack_end([1, 1, 1, 1, 1], 2, lambda x: x) == [[1], [1, 1], [1, 1]]
    assert pack_end([5, 1, 1], 2, lambda x: x) == [[5], [1, 1]]
    assert pack_end([], 2, lambda x: x) == []


@pytest.mark.parametrize("version", [2, 3])
def test_appends_and_deletes_merge_manifests(spark, warehouse, version):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.m", "id bigint, p int", partition_by=["p"],
                         properties={"format-version": str(version), "commit.manifest.min-count-to-merge": "3",
                                     "write.delete.mode": "merge-on-read"})
    for i in range(5):
        t.append(spark.createDataFrame([(i * 10 + k, k % 2) for k in range(4)], "id bigint, p int"))
        assert len([m for m in manifests(t) if m.content == 0]) < 3
    before = {r["id"]: r["_row_id"] for r in t.to_df(columns=["id", "_row_id"]).collect()} if version == 3 else None
    data = [m for m in manifests(t) if m.content == 0]
    # the newest snapshot's files are ADDED, the others EXISTING with their own sequence numbers kept
    status = {e.data_file.file_path: (e.status, e.sequence_number) for m in data for e in entries(t, m)}
    seqs = sorted({s for _, s in status.values()})
    assert seqs == [1, 2, 3, 4, 5]
    assert {st for st, s in status.values() if s == 5} == {ADDED}
    assert {st for st, s in status.values() if s < 5} <= {EXISTING, ADDED}
    assert sorted(r["id"] for r in t.to_df().collect()) == sorted(i * 10 + k for i in range(5) for k in range(4))
    t.delete("id = 11")
    t.delete("id = 21")
    t.delete("id = 31")
    assert sorted(r["id"] for r in t.to_df().collect()) == sorted(
        i * 10 + k for i in range(5) for k in range(4) if i * 10 + k not in (11, 21, 31))
    assert len([m for m in manifests(t) if m.content == 1]) < 3
    if version == 3:
        after = {r["id"]: r["_row_id"] for r in t.to_df(columns=["id", "_row_id"]).collect()}
        assert all(after[k] == before[k] for k in after)
        assert t.metadata.next_row_id >= max(after.values()) + 1
    # every manifest in the table directory is referenced by some snapshot: merged-away files were removed
    listed = {path_key(m.manifest_path) for s in t.metadata.snapshots
              for m in read_manifest_list(t.io.read(s.manifest_list), s.manifest_list)}
    on_disk = {p for p in glob.glob(os.path.join(path_key(t.location), "metadata", "*.avro"))
               if not os.path.basename(p).startswith("snap-")}
    assert on_disk == listed


def test_merging_disabled_keeps_one_manifest_per_commit(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.n", "id bigint", properties={"commit.manifest-merge.enabled": "false",
                                                          "commit.manifest.min-count-to-merge": "2"})
    for i in range(4):
        t.append(spark.createDataFrame([(i,)], "id bigint"))
    assert len(manifests(t)) == 4


def test_deleted_entries_of_older_snapshots_are_dropped_when_merged(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.o", "id bigint", properties={"commit.manifest.min-count-to-merge": "2",
                                                          "format-version": "2"})
    t.append(spark.createDataFrame([(1,), (2,)], "id bigint"))
    t.overwrite(spark.createDataFrame([(3,)], "id bigint"))  # removes the first file
    t.append(spark.createDataFrame([(4,)], "id bigint"))
    statuses = [e.status for m in manifests(t) for e in entries(t, m)]
    assert DELETED not in statuses
    assert sorted(r["id"] for r in t.to_df().collect()) == [3, 4]
