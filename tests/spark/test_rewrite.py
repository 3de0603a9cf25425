"""Compaction (``rewrite_data_files``): fewer files with the same rows, deletes folded in, v3 row ids and
sequence numbers kept, equality deletes committed meanwhile still applied, concurrent DVs a conflict."""
import glob
import os

import pytest

import sparkberg
from sparkberg.spark import tuning
from sparkberg.avro.manifest import read_manifest, read_manifest_list
from sparkberg.format.manifests import inherit
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


@pytest.mark.parametrize("where", ["driver", "spark"])
@pytest.mark.parametrize("version", [2, 3])
def test_rewrite_compacts_and_folds_deletes(spark, warehouse, monkeypatch, version, where):
    # small groups are read and written on the driver, with no Spark job; larger ones by Spark: either way the
    # same rows, row lineage, files and sequence numbers
    if where == "spark":
        monkeypatch.setattr(tuning, "DRIVER_REWRITE_BYTES", -1)
    cat, t = make(spark, warehouse, version)
    t.delete("id % 7 = 0")
    lineage = ("id", "_row_id", "_last_updated_sequence_number")
    before = rows(t)
    ids_before = rows(t, lineage) if version == 3 else None
    start_seq = t.metadata.current_snapshot.sequence_number
    assert len([e for c, e in live(t) if c == 0]) == 12
    out = []
    jobs = _rewrite_jobs(spark, lambda: out.append(t.rewrite_data_files().collect()[0].asDict()))
    assert bool(jobs) == (where == "spark")
    result = out[0]
    assert result == {"rewritten_data_files_count": 12, "added_data_files_count": 2,
                      "rewritten_bytes_count": result["rewritten_bytes_count"], "failed_data_files_count": 0,
                      "removed_delete_files_count": result["removed_delete_files_count"]}
    assert result["rewritten_bytes_count"] > 0
    # (as Java's rewrite: a file's delete files go with it; only deletion vectors are counted, a v2 position
    # delete file naming one file is not)
    assert (result["removed_delete_files_count"] > 0) == (version == 3)
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


def _rewrite_jobs(spark, call, stages: bool = False) -> list:
    """The descriptions of the Spark jobs that read and wrote file groups during ``call`` (one per job); with
    ``stages``, each as (description, number of stages)."""
    store = spark.sparkContext._jsc.sc().statusStore()

    def described():
        jobs = store.jobsList(None)
        out = {}
        for i in range(jobs.size()):
            job = jobs.apply(i)
            text = job.description().getOrElse(None) if job.description().isDefined() else None
            out[job.jobId()] = (text, job.stageIds().size())
        return out
    before = set(described())
    call()
    return sorted((d if stages else d[0]) for j, d in described().items()
                  if j not in before and d[0] and d[0].startswith("REWRITE"))


@pytest.mark.parametrize("partial", [False, True])
def test_small_groups_are_rewritten_in_one_job_unless_each_commits_alone(spark, warehouse, monkeypatch, partial):
    monkeypatch.setattr(tuning, "DRIVER_REWRITE_BYTES", -1)  # (the jobs of groups too large for the driver)
    # four partitions of three small files: each partition's group makes one file; together in one job (each
    # partition's rows one task, one file), except with partial progress, whose groups each succeed or fail alone
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.small", "id bigint, p string", partition_by=["p"],
                         properties={"format-version": "3", "write.delete.mode": "merge-on-read"})
    for i in range(3):
        t.append(spark.sql(f"SELECT id, concat('p', id % 4) AS p FROM range({i * 100}, {i * 100 + 100})"))
    t.delete("id % 9 = 0")
    before = rows(t, ("id", "p", "_row_id"))
    options = {"rewrite-all": "true", "partial-progress.enabled": str(partial).lower()}
    out = []
    jobs = _rewrite_jobs(spark, lambda: out.append(t.rewrite_data_files(options=options).collect()[0]))
    assert out[0]["rewritten_data_files_count"] == 12 and out[0]["added_data_files_count"] == 4
    groups = set(jobs)  # (a group's jobs share its label: its read's, its write's)
    n = 4 if partial else 1
    assert {g.split(":")[0] for g in groups} == {f"REWRITE db.small (file group {i} of {n}" for i in range(1, n + 1)}
    assert all(f": {12 // n} files, " in g for g in groups), groups
    t = cat.load_table("db.small")
    assert rows(t, ("id", "p", "_row_id")) == before
    files = t.metadata_table("files").collect()
    assert sorted(r.partition.p for r in files) == ["p0", "p1", "p2", "p3"] and {r.content for r in files} == {0}


@pytest.mark.parametrize("case", ["a file a partition", "two files a partition", "files a task may split"])
def test_small_groups_of_one_file_are_written_where_they_are_read(spark, warehouse, monkeypatch, case):
    monkeypatch.setattr(tuning, "DRIVER_REWRITE_BYTES", -1)  # (the jobs of groups too large for the driver)
    # groups put together whose partitions are each one file that no task splits: each task writes the
    # partitions of the files it reads (one stage, no shuffle); otherwise the rows are hashed to their partitions
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.apart", "id bigint, p string, x double", partition_by=["p"],
                         properties={"format-version": "3", "write.delete.mode": "merge-on-read"})
    for i in range(2 if case == "two files a partition" else 1):
        t.append(spark.sql(f"SELECT id, concat('p', id % 5) AS p, id / 2 AS x FROM range({i * 500}, "
                           f"{i * 500 + 500})").repartition(1))
    t.delete("id % 7 = 0")
    before = rows(t, ("id", "p", "x", "_row_id"))
    key = "spark.sql.files.openCostInBytes"
    old = spark.conf.get(key)
    spark.conf.set(key, "1" if case == "files a task may split" else old)
    try:
        jobs = _rewrite_jobs(spark, lambda: t.rewrite_data_files(options={"rewrite-all": "true"}).collect(),
                             stages=True)
    finally:
        spark.conf.set(key, old)
    assert {d.split(":")[0] for d, _ in jobs} == {"REWRITE db.apart (file group 1 of 1"}
    shuffled = any(n > 1 for _, n in jobs)
    assert shuffled == (case != "a file a partition"), jobs
    t = cat.load_table("db.apart")
    assert rows(t, ("id", "p", "x", "_row_id")) == before
    files = t.metadata_table("files").collect()
    assert sorted(r.partition.p for r in files) == ["p0", "p1", "p2", "p3", "p4"] and {r.content for r in files} == {0}


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
