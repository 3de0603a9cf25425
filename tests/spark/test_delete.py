"""Deletes on Spark 4: copy-on-write and merge-on-read on v2 and v3, whole-file drops, DVs merged, row lineage
kept, summaries, conflicts detected, and a failed commit leaving the table as it was."""
import os

import pytest

import sparkberg
from sparkberg.spark import tuning
from sparkberg.errors import CommitFailedException, ValidationError

pytestmark = pytest.mark.spark


def make(spark, warehouse, version, mode, name="t"):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table(f"db.{name}", "id bigint, cat string, v string", partition_by=["cat"],
                         properties={"format-version": str(version), "write.delete.mode": mode})
    t.append(spark.sql("SELECT id, CASE WHEN id % 2 = 0 THEN 'even' ELSE 'odd' END AS cat, concat('v', id) AS v "
                       "FROM range(0, 30)"))
    return cat, t


def ids(t, **kw):
    return sorted(r[0] for r in t.to_df(columns=["id"], **kw).collect())


@pytest.mark.parametrize("version,mode", [(2, "merge-on-read"), (3, "merge-on-read"), (2, "copy-on-write"),
                                          (3, "copy-on-write"), (1, "copy-on-write")])
def test_delete_modes(spark, warehouse, version, mode):
    cat, t = make(spark, warehouse, version, mode)
    before = t.metadata.current_snapshot.snapshot_id
    lineage = {r[0]: r[1] for r in t.to_df(columns=["id", "_row_id"]).collect()} if version == 3 else None
    t.delete("id % 5 = 0").delete("id = 3 OR v = 'v7'")
    expected = [i for i in range(30) if i % 5 and i not in (3, 7)]
    assert ids(t) == expected
    assert ids(cat.load_table("db.t")) == expected
    assert len(ids(t, snapshot_id=before)) == 30  # time travel sees the rows again
    tasks = t.plan_files().collect()
    if mode == "merge-on-read":
        deletes = [d for r in tasks for d in r["deletes"]]
        if version == 3:
            assert all(d["file_format"] == "puffin" for d in deletes)
            assert all(len(r["deletes"]) <= 1 for r in tasks)  # one DV per data file, merged
        else:
            assert deletes and all(d["file_format"] == "parquet" and d["referenced_data_file"] for d in deletes)
        assert t.metadata.current_snapshot.summary["operation"] == "delete"
    else:
        assert all(r["deletes"] == [] for r in tasks)
        assert t.metadata.current_snapshot.summary["operation"] == "overwrite"
    if version == 3:
        after = {r[0]: r[1] for r in t.to_df(columns=["id", "_row_id"]).collect()}
        assert all(after[i] == lineage[i] for i in after)  # row ids survive rewrites
    s = t.metadata.current_snapshot.summary
    assert int(s["total-records"]) - int(s.get("total-position-deletes", 0)) >= len(expected)


def test_whole_partition_is_dropped_without_reading(spark, warehouse):
    cat, t = make(spark, warehouse, 2, "merge-on-read")
    files_before = {r["file_path"] for r in t.plan_files().collect()}
    t.delete("cat = 'even'")
    s = t.metadata.current_snapshot.summary
    assert s["deleted-data-files"] == "1" and "added-delete-files" not in s
    assert ids(t) == list(range(1, 30, 2))
    assert {r["file_path"] for r in t.plan_files().collect()} < files_before


def test_untranslatable_filter_never_drops_whole_files(spark, warehouse):
    cat, t = make(spark, warehouse, 2, "copy-on-write")
    t.delete("upper(cat) = 'NOPE'")  # matches nothing, prunes nothing: nothing changes
    assert len(t.metadata.snapshots) == 1
    t.delete("upper(cat) = 'EVEN' AND id > 20")
    assert ids(t) == [i for i in range(30) if not (i % 2 == 0 and i > 20)]


def test_delete_conflicts_with_concurrent_append_to_matching_partition(spark, warehouse):
    cat, t = make(spark, warehouse, 2, "copy-on-write")
    stale = cat.load_table("db.t")
    t.append(spark.sql("SELECT 100L AS id, 'odd' AS cat, 'x' AS v"))
    before = cat.load_table("db.t").metadata
    stale.delete("cat = 'even' AND id = 4")  # a different partition: no conflict, retried on the new base
    assert ids(cat.load_table("db.t")) == sorted([i for i in range(30) if i != 4] + [100])
    # a concurrent append whose metrics rule out the filter is no conflict (as Iceberg's metrics evaluator)
    stale3 = cat.load_table("db.t")
    cat.load_table("db.t").append(spark.sql("SELECT 101L AS id, 'odd' AS cat, 'y' AS v"))
    stale3.delete("cat = 'odd' AND id = 3")
    stale2 = cat.load_table("db.t")
    cat.load_table("db.t").append(spark.sql("SELECT 5L AS id, 'odd' AS cat, 'y' AS v"))
    mid = cat.load_table("db.t").metadata
    with pytest.raises(CommitFailedException, match="serializable"):
        stale2.delete("cat = 'odd' AND id = 5")
    assert cat.load_table("db.t").metadata == mid
    assert before is not None


@pytest.mark.parametrize("version,mode,isolation", [(3, "merge-on-read", "snapshot"), (2, "merge-on-read", "snapshot"),
                                                    (3, "copy-on-write", "serializable")])
def test_concurrent_deletes_on_the_same_file_conflict_under_any_isolation(spark, warehouse, version, mode,
                                                                          isolation):
    cat, t = make(spark, warehouse, version, mode)
    t.set_properties({"write.delete.isolation-level": isolation})
    stale, other = cat.load_table("db.t"), cat.load_table("db.t")  # both start before the next delete
    t.delete("id = 2")  # a DV / position delete file for the 'even' file
    mid = cat.load_table("db.t").metadata
    # a rewrite or a second DV of that file would drop or double the concurrent delete
    with pytest.raises(CommitFailedException, match="delete file" if mode == "merge-on-read" else "conflict"):
        stale.delete("id = 4")
    assert cat.load_table("db.t").metadata == mid
    assert 4 in ids(cat.load_table("db.t")) and 2 not in ids(cat.load_table("db.t"))
    other.delete("cat = 'odd' AND id = 5")  # another partition: no conflict
    assert ids(cat.load_table("db.t")) == [i for i in range(30) if i not in (2, 5)]


@pytest.mark.parametrize("version", [2, 3])
def test_deletes_for_a_data_file_removed_concurrently_are_a_conflict(spark, warehouse, version):
    from sparkberg.operations.request import MAIN_REQUEST
    from commits import Changes, commit_changes
    cat, t = make(spark, warehouse, version, "merge-on-read")
    stale = cat.load_table("db.t")  # planned before the file is removed
    even = t.plan_files(filter="cat = 'even'").first()["file_path"]
    # (a concurrent commit drops the 'even' file)
    commit_changes(t, Changes("delete", [], [], {(even, None)}), MAIN_REQUEST)
    mid = cat.load_table("db.t").metadata
    with pytest.raises(CommitFailedException, match=f"data file {even} was removed by a concurrent commit"):
        stale.delete("id = 4")
    assert cat.load_table("db.t").metadata == mid
    assert ids(cat.load_table("db.t")) == [i for i in range(30) if i % 2]
    stale.refresh()
    stale.delete("id = 5")  # the file it deletes from is live: committed
    assert ids(cat.load_table("db.t")) == [i for i in range(30) if i % 2 and i != 5]


def test_isolation_level_must_be_known(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t2 = cat.create_table("db.iso", "id bigint", properties={"write.delete.isolation-level": "sometimes"})
    t2.append(spark.sql("SELECT id FROM range(0, 3)"))
    with pytest.raises(ValidationError, match="isolation-level"):
        t2.delete("id = 1")
    assert len(cat.load_table("db.iso").metadata.snapshots) == 1


def test_failed_commit_leaves_no_files(spark, warehouse, monkeypatch):
    cat, t = make(spark, warehouse, 3, "merge-on-read")
    before = cat.load_table("db.t").metadata
    data_dir = os.path.join(warehouse, "db", "t")
    files_before = {os.path.join(d, f) for d, _, fs in os.walk(data_dir) for f in fs}
    from sparkberg.catalog.filesystem import FileSystemCatalog

    def fail(*a, **k):
        raise OSError("injected failure before the catalog swap")
    monkeypatch.setattr(FileSystemCatalog, "commit", fail)
    with pytest.raises(OSError, match="injected"):
        t.delete("id = 1")
    monkeypatch.undo()
    assert cat.load_table("db.t").metadata == before
    files_after = {os.path.join(d, f) for d, _, fs in os.walk(data_dir) for f in fs}
    assert files_after == files_before


def test_delete_needs_a_filter(spark, warehouse):
    cat, t = make(spark, warehouse, 2, "copy-on-write")
    with pytest.raises(ValidationError, match="needs a filter"):
        t.delete("")
    t.delete("true")
    assert ids(t) == []


def _deleted_positions(t) -> dict:
    """Each data file's deleted positions, as the table's delete files say (``position_deletes`` metadata)."""
    out: dict = {}
    for r in t.metadata_table("position_deletes").collect():
        out.setdefault(r["file_path"], []).append(r["pos"])
    return {os.path.basename(k): sorted(v) for k, v in out.items()}


@pytest.mark.parametrize("version", [2, 3])
def test_delete_files_written_on_the_driver_and_on_the_executors_agree(spark, warehouse, monkeypatch, version):
    # few candidate rows: the positions are collected and written on the driver; with a bound of 0, on the
    # executors. A DELETE, an UPDATE and a MERGE, the second over deletes already there (merged into the new DV on
    # v3), give the same rows and the same positions per data file either way
    import sparkberg.operations.rowlevel as rowlevel
    ran = []
    real = rowlevel.positions_on_driver
    monkeypatch.setattr(rowlevel, "positions_on_driver", lambda *a: ran.append(real(*a)) or ran[-1])
    results = []
    for where in ("driver", "executors"):
        if where == "executors":
            monkeypatch.setattr(tuning, "DRIVER_POSITIONS_SHARE", 1 << 62)
        cat = sparkberg.catalog(spark, f"{warehouse}/{where}")
        t = cat.create_table("db.t", "id bigint, cat string, v string", partition_by=["cat"],
                             properties={"format-version": str(version), "write.delete.mode": "merge-on-read",
                                         "write.update.mode": "merge-on-read", "write.merge.mode": "merge-on-read"})
        for lo in (0, 500):  # (two files a partition)
            t.append(spark.sql("SELECT id, CASE WHEN id % 2 = 0 THEN 'even' ELSE 'odd' END AS cat, "
                               f"concat('v', id) AS v FROM range({lo}, {lo + 500})"))
        first_id = {}  # each data file by its first row's id: the same file in both tables
        for r in t.to_df(columns=["id", "_file"]).collect():
            name = os.path.basename(r["_file"])
            first_id[name] = min(first_id.get(name, r["id"]), r["id"])
        ran.clear()
        t.delete("id % 7 = 0 OR id = 3")
        t.update({"v": "'u'"}, "id % 11 = 1")
        src = spark.sql("SELECT id, 'even' AS cat, 'm' AS v FROM range(0, 1000, 13)")
        t.merge(src, "t.id = s.id").when_matched_update_all().execute()
        assert ran and all((r is None) == (where == "executors") for r in ran), ran
        got = _deleted_positions(cat.load_table("db.t"))
        results.append((sorted(tuple(r) for r in t.to_df().collect()),
                        {first_id[k]: v for k, v in got.items() if k in first_id}))
    assert results[0] == results[1]
    assert results[0][1] and sum(map(len, results[0][1].values())) > 100


# filters whose rows Spark's three-valued logic decides: a NOT turns FALSE into TRUE but leaves NULL NULL, so an
# IN list holding a null never matches under a NOT; BETWEEN is its two comparisons, either of which may be one
# that cannot be translated (a function, another column)
TRICKY_FILTERS = ["NOT (x IN (1, NULL))", "x IN (1, NULL)", "NOT (NOT (x IN (1, NULL)))", "x NOT IN (7, NULL)",
                  "upper(s) BETWEEN 'A' AND 'B'", "x BETWEEN y AND 9", "NOT (x BETWEEN y AND 9)",
                  "x NOT BETWEEN 2 AND 7", "x BETWEEN 1 AND NULL", "NOT (x BETWEEN 1 AND NULL)", "x <> 5",
                  "NOT (x <> 7)", "NOT (s LIKE 'a%')", "x IS NOT NULL AND NOT (x IN (8, NULL))"]


@pytest.mark.parametrize("mode,partition_by", [("merge-on-read", []), ("copy-on-write", ["x"])])
def test_a_delete_keeps_the_rows_spark_would_keep(spark, warehouse, mode, partition_by):
    # every file is one that its metrics (unpartitioned) or its partition (by x) could prove wholly matched: one
    # value of x each, no nulls but in the file of nulls; a filter taken to match every row of a file where Spark
    # keeps some drops them with the file
    cat = sparkberg.catalog(spark, warehouse)
    rows = [(7, 3, "zz"), (7, 8, "ab"), (8, 0, "aa"), (None, 1, "ac"), (5, 9, None)]
    values = ", ".join(f"({'NULL' if x is None else f'{x}L'}, {y}L, {'NULL' if s is None else repr(s)})"
                       for x, y, s in rows)
    source = f"SELECT * FROM VALUES {values} AS v(x, y, s)"
    t = cat.create_table("db.t", "x bigint, y bigint, s string", partition_by=partition_by,
                         properties={"format-version": "2", "write.delete.mode": mode})
    for x in sorted({r[0] for r in rows}, key=str):  # (a file for each value of x)
        t.append(spark.sql(f"{source} WHERE x {'IS NULL' if x is None else f'= {x}'}"))
    start = t.metadata.current_snapshot_id
    for f in TRICKY_FILTERS:
        t.set_current_snapshot(start)
        t.delete(f)
        kept = sorted(map(tuple, cat.load_table("db.t").to_df().collect()), key=str)
        assert kept == sorted(map(tuple, spark.sql(f"{source} WHERE NOT coalesce({f}, false)").collect()), key=str), f
