"""Compaction (``rewrite_data_files``): fewer files with the same rows, deletes folded in, v3 row ids and
sequence numbers kept, equality deletes committed meanwhile still applied, concurrent DVs a conflict."""
import glob
import os

import pytest

import sparkberg
from sparkberg.avro.manifest import read_manifest, read_manifest_list
from sparkberg.spec.manifests import inherit
from sparkberg.errors import CommitFailedException, ValidationError

pytestmark = pytest.mark.spark


def make(spark, warehouse, version, name="r"):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table(f"db.{name}", "id bigint, cat string, v string", partition_by=["cat"],
                         properties={"format-version": str(version), "write.delete.mode": "merge-on-read"})
    for i in range(6):
        t.append(spark.sql(f"SELECT id, CASE WHEN id % 2 = 0 THEN 'even' ELSE 'odd' END AS cat, concat('v', id) AS v "
                           f"FROM range({i * 10}, {i * 10 + 10})"))
    return cat, t


def count(result, column="rewritten_data_files_count"):
    return result.collect()[0][column]


def rows(t, cols=("id", "cat", "v")):
    return sorted(tuple(r) for r in t.to_df(columns=list(cols)).collect())


def live(t):
    snap = t.metadata.current_snapshot
    out = []
    for mf in read_manifest_list(t.io.read(snap.manifest_list), snap.manifest_list):
        out += [(mf.content, e) for e in inherit(read_manifest(t.io.read(mf.manifest_path)).entries, mf)
                if e.status != 2]
    return out


@pytest.mark.parametrize("version", [2, 3])
def test_rewrite_compacts_and_folds_deletes(spark, warehouse, version):
    cat, t = make(spark, warehouse, version)
    t.delete("id % 7 = 0")
    lineage = ("id", "_row_id", "_last_updated_sequence_number")
    before = rows(t)
    ids_before = rows(t, lineage) if version == 3 else None
    start_seq = t.metadata.current_snapshot.sequence_number
    assert len([e for c, e in live(t) if c == 0]) == 12
    result = t.rewrite_data_files().collect()[0].asDict()
    assert result == {"rewritten_data_files_count": 12, "added_data_files_count": 2,
                      "rewritten_bytes_count": result["rewritten_bytes_count"], "failed_data_files_count": 0,
                      "removed_delete_files_count": result["removed_delete_files_count"]}
    assert result["removed_delete_files_count"] > 0 and result["rewritten_bytes_count"] > 0
    assert rows(t) == before
    snap = t.metadata.current_snapshot
    assert snap.operation == "replace"
    assert snap.summary["deleted-data-files"] == "12" and snap.summary["added-data-files"] == "2"
    assert int(snap.summary["total-records"]) == len(before)
    entries = live(t)
    assert [c for c, _ in entries] == [0, 0]  # every delete file went with its data file
    assert {e.sequence_number for _, e in entries} == {start_seq}  # the starting sequence number
    assert {e.file_sequence_number for _, e in entries} == {snap.sequence_number}
    if version == 3:
        assert rows(t, lineage) == ids_before
        assert len({r[1] for r in ids_before}) == len(ids_before)
    assert count(t.rewrite_data_files()) == 0  # nothing left to do


def test_equality_deletes_committed_meanwhile_still_apply(spark, warehouse):
    cat, t = make(spark, warehouse, 2)
    stale = cat.load_table("db.r")
    t.delete_by_keys(spark.sql("SELECT 3L AS id, 'odd' AS cat"), ["id"])
    stale.rewrite_data_files()
    t = cat.load_table("db.r")
    assert 3 not in [r[0] for r in rows(t)] and len(rows(t)) == 59


def test_concurrent_deletion_vector_is_a_conflict(spark, warehouse):
    cat, t = make(spark, warehouse, 3)
    stale = cat.load_table("db.r")
    t.delete("id = 4")
    mid = cat.load_table("db.r").metadata
    on_disk = sorted(glob.glob(os.path.join(t.location[len("file://"):], "data", "**", "*.parquet"), recursive=True))
    with pytest.raises(CommitFailedException, match="delete file"):
        stale.rewrite_data_files()
    assert cat.load_table("db.r").metadata == mid
    assert sorted(glob.glob(os.path.join(t.location[len("file://"):], "data", "**", "*.parquet"),
                            recursive=True)) == on_disk  # what the rewrite wrote is gone


def test_rewrite_options_are_checked(spark, warehouse):
    cat, t = make(spark, warehouse, 2)
    with pytest.raises(ValidationError, match="rewrite_data_files .*: option min-input-files must be at least 1"):
        t.rewrite_data_files(options={"min-input-files": 0})
    assert count(t.rewrite_data_files(filter="cat = 'odd'", options={"min-input-files": "6"})) == 6
    assert len([e for c, e in live(t) if c == 0]) == 7
    assert len(rows(t)) == 60
