"""Copy-on-write DELETE and UPDATE whose rewritten files are each alone in their partition, small enough for one
read task, in the current spec: their rows are written from the tasks that read them, with no shuffle, into the
same files a shuffle by partition would give. Anything else is shuffled by partition (``hash``), as Iceberg Java
does."""
import uuid

import pytest

import sparkberg
from sparkberg.operations.request import MAIN_REQUEST
from sparkberg.operations.rowlevel import RowLevel

pytestmark = pytest.mark.spark


@pytest.fixture
def cat(spark, warehouse):
    return sparkberg.catalog(spark, warehouse)


def parted(spark, cat, name="db.t", version=2, rows=4000):
    """A table partitioned by ``p`` (4 values), one file per partition."""
    t = cat.create_table(name, "id bigint, p string, n int", partition_by=["p"],
                         properties={"format-version": str(version)})
    t.append(spark.range(rows).selectExpr("id", "concat('p', id % 4) AS p", "CAST(id % 10 AS int) AS n"))
    return t


def files_by_partition(t) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in t.metadata_table("files").collect():
        out[r.partition.p] = out.get(r.partition.p, 0) + 1
    return out


def write_shuffled(spark, call) -> int:
    """The bytes the Spark jobs that ran the file writer during ``call`` shuffled: 0 for rows written from the
    tasks that read them (a broadcast of the files' rows' metadata may run in those jobs; it shuffles nothing)."""
    sc = spark.sparkContext
    group = f"in-place-{uuid.uuid4().hex}"
    sc.setJobGroup(group, group)
    try:
        call()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    tracker, store = sc.statusTracker(), sc._jsc.sc().statusStore()

    def attempt(stage: int):
        try:
            return store.lastStageAttempt(stage)
        except Exception:  # noqa: BLE001 - a stage skipped (its shuffle output was there already): it ran nothing
            return None
    jobs = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup(group)]
    ran = [a for job in jobs if job is not None for a in map(attempt, job.stageIds)
           if a is not None and "write/dataframe.py" in a.name()]
    assert ran
    return sum(a.shuffleWriteBytes() for a in ran)


@pytest.mark.parametrize("version", [2, 3])
def test_delete_and_update_rewrite_each_file_from_its_read_task(spark, cat, version):
    t = parted(spark, cat, version=version)
    ids = {r[0]: r[1] for r in t.to_df(columns=["id", "_row_id"]).collect()} if version == 3 else None
    assert write_shuffled(spark, lambda: t.delete("n = 3")) == 0
    assert write_shuffled(spark, lambda: t.update({"n": "n + 100"}, "n = 4")) == 0
    rows = sorted(tuple(r) for r in t.to_df().collect())
    assert rows == sorted((i, f"p{i % 4}", i % 10 + (100 if i % 10 == 4 else 0)) for i in range(4000) if i % 10 != 3)
    assert files_by_partition(t) == {"p0": 1, "p1": 1, "p2": 1, "p3": 1}
    assert rows == sorted(tuple(r) for r in cat.load_table("db.t").to_df().collect())
    if version == 3:  # rewritten rows keep their ids
        assert {r[0]: r[1] for r in t.to_df(columns=["id", "_row_id"]).collect()} == \
            {i: ids[i] for i in ids if i % 10 != 3}


def test_rows_that_may_move_or_share_a_partition_are_shuffled_by_partition(spark, cat):
    t = parted(spark, cat)
    # an update of the partition column moves rows (those of p1 and p3 with n = 5): clustered by partition, they
    # make one new file in p0, beside the one it had
    assert write_shuffled(spark, lambda: t.update({"p": "'p0'"}, "n = 5")) > 0
    assert files_by_partition(t) == {"p0": 2, "p1": 1, "p2": 1, "p3": 1}
    # a delete in p0 rewrites its two files into one
    assert write_shuffled(spark, lambda: t.delete("p = 'p0' AND n IN (0, 5)")) > 0
    assert files_by_partition(t) == {"p0": 1, "p1": 1, "p2": 1, "p3": 1}
    expected = sorted((i, f"p{i % 4}", i % 10) for i in range(4000) if i % 10 != 5 and not (i % 20 == 0))
    assert sorted(tuple(r) for r in t.to_df().collect()) == expected


def test_what_decides_a_rewrite_in_place(spark, cat):
    t = parted(spark, cat)
    rl = RowLevel(t, MAIN_REQUEST, "n = 1")
    assert len(rl.tasks) == 4 and rl.rewritten_in_place(rl.tasks)
    assert rl.rewritten_in_place(rl.tasks, ["n"])
    assert not rl.rewritten_in_place(rl.tasks, ["p"])  # (the update moves rows)
    spark.conf.set("spark.sql.files.maxPartitionBytes", "100b")  # (Spark would cut each file into splits)
    try:
        assert not rl.rewritten_in_place(rl.tasks)
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    t.append(spark.range(1).selectExpr("id", "'p0' AS p", "1 AS n"))
    rl = RowLevel(t, MAIN_REQUEST, "n = 1")
    assert not rl.rewritten_in_place(rl.tasks)  # two files in p0
    assert rl.rewritten_in_place([x for x in rl.tasks if x["partition"]["p"] != "p0"])
    t.update_spec().add_field("n").commit()  # files of an older spec: their rows go to partitions of the new one
    rl = RowLevel(t, MAIN_REQUEST, "n = 1")
    assert not rl.rewritten_in_place([x for x in rl.tasks if x["partition"]["p"] != "p0"])
    # a named mode is kept: shuffled
    u = parted(spark, cat, "db.u")
    u.set_properties({"write.delete.distribution-mode": "hash"})
    assert write_shuffled(spark, lambda: u.delete("n = 1")) > 0
