"""update, overwrite, dynamic_overwrite and merge on Spark 4, both modes, v2 and v3 (row ids kept)."""
import pytest

import sparkberg
from sparkberg.spark import tuning
from sparkberg.errors import ValidationError

pytestmark = pytest.mark.spark
MODES = [(2, "merge-on-read"), (3, "merge-on-read"), (2, "copy-on-write"), (3, "copy-on-write")]


def table(spark, warehouse, version, mode, name="t"):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table(f"db.{name}", "id bigint, cat string, n int", partition_by=["cat"], properties={
        "format-version": str(version), "write.update.mode": mode, "write.merge.mode": mode,
        "write.delete.mode": mode})
    t.append(spark.sql("SELECT id, CASE WHEN id % 2 = 0 THEN 'even' ELSE 'odd' END AS cat, 0 AS n FROM range(0, 10)"))
    return cat, t


def state(t):
    return sorted(tuple(r) for r in t.to_df(columns=["id", "cat", "n"]).collect())


def row_ids(t):
    return {r[0]: r[1] for r in t.to_df(columns=["id", "_row_id"]).collect()}


@pytest.mark.parametrize("version,mode", MODES)
def test_update(spark, warehouse, version, mode):
    cat, t = table(spark, warehouse, version, mode)
    ids_before = row_ids(t) if version == 3 else None
    t.update({"n": "n + 1"}, "id < 4").update({"cat": "'moved'", "n": "n * 10 + 7"}, "id = 9")
    expected = sorted([(i, "even" if i % 2 == 0 else "odd", 1 if i < 4 else 0) for i in range(9)] + [(9, "moved", 7)])
    assert state(t) == expected == state(cat.load_table("db.t"))
    if version == 3:
        assert row_ids(t) == ids_before  # the same rows, the same ids
        seqs = {r[0]: r[1] for r in t.to_df(columns=["id", "_last_updated_sequence_number"]).collect()}
        assert seqs[9] == 3 and seqs[1] == 2 and seqs[5] == 1
    with pytest.raises(ValidationError, match="unknown column 'nope'"):
        t.update({"nope": "1"})


@pytest.mark.parametrize("version,mode", MODES)
def test_overwrite_and_dynamic_overwrite(spark, warehouse, version, mode):
    cat, t = table(spark, warehouse, version, mode)
    t.overwrite(spark.sql("SELECT 100L AS id, 'odd' AS cat, 5 AS n"), "id = 7 OR id = 8")
    assert state(t) == sorted([(i, "even" if i % 2 == 0 else "odd", 0) for i in range(10) if i not in (7, 8)]
                              + [(100, "odd", 5)])
    t.dynamic_overwrite(spark.sql("SELECT 200L AS id, 'even' AS cat, 6 AS n"))
    assert [r for r in state(t) if r[1] == "even"] == [(200, "even", 6)]
    assert len([r for r in state(t) if r[1] == "odd"]) == 5
    t.overwrite(spark.sql("SELECT 1L AS id, 'x' AS cat, 1 AS n"))
    assert state(t) == [(1, "x", 1)]
    assert t.metadata.current_snapshot.summary["operation"] == "overwrite"


@pytest.mark.parametrize("version,mode", MODES)
def test_merge(spark, warehouse, version, mode):
    cat, t = table(spark, warehouse, version, mode)
    ids_before = row_ids(t) if version == 3 else None
    src = spark.sql("SELECT * FROM VALUES (1L, 'odd', 11, 'u'), (2L, 'even', 0, 'd'), (50L, 'even', 5, 'i'), "
                    "(51L, 'odd', 5, 'skip') AS s(id, cat, n, op)")
    (t.merge(src, "t.id = s.id").when_matched_update({"n": "s.n"}, "s.op = 'u'").when_matched_delete("s.op = 'd'")
     .when_not_matched_insert_all("s.op = 'i'").execute())
    expected = sorted([(i, "even" if i % 2 == 0 else "odd", 11 if i == 1 else 0) for i in range(10) if i != 2]
                      + [(50, "even", 5)])
    assert state(t) == expected
    if version == 3:
        after = row_ids(t)
        assert all(after[i] == ids_before[i] for i in after if i in ids_before)
        assert len(set(after.values())) == len(after)
    dup = spark.sql("SELECT 1L AS id, 'odd' AS cat, 1 AS n UNION ALL SELECT 1L, 'odd', 2")
    before = cat.load_table("db.t").metadata
    with pytest.raises(ValidationError, match=r"more than one source row \(the row where id = 1, file "):
        t.merge(dup, "t.id = s.id").when_matched_update_all().execute()
    with pytest.raises(ValidationError, match="more than one source row"):  # (a condition: still ambiguous)
        t.merge(dup, "t.id = s.id").when_matched_delete("s.n = 1").execute()
    assert cat.load_table("db.t").metadata == before
    # as Spark's MERGE: no ambiguity for one unconditional delete, nor for a merge that only inserts
    t.merge(dup, "t.id = s.id").when_matched_delete().execute()
    assert [r for r in state(t) if r[0] == 1] == []
    twice = spark.sql("SELECT 3L AS id, 'odd' AS cat, 7 AS n UNION ALL SELECT 3L, 'odd', 8 UNION ALL "
                      "SELECT 1L, 'odd', 9 UNION ALL SELECT 1L, 'odd', 10")
    t.merge(twice, "t.id = s.id").when_not_matched_insert_all().execute()
    assert [r for r in state(t) if r[0] in (1, 3)] == [(1, "odd", 9), (1, "odd", 10), (3, "odd", 0)]


@pytest.mark.parametrize("version,mode", [(3, "merge-on-read"), (2, "copy-on-write")])
def test_merge_pairs_keep_the_target_columns_only_updates_read(spark, warehouse, monkeypatch, version, mode):
    # the matched (target, source) pairs a merge caches: with UPDATE SET * (or deletes) only the target row's
    # file, position and row id, so the target's scan reads no data column the ON clause does not; with an
    # update that keeps target columns, all of them. Either way a target row two source rows match is found
    # (keys Spark casts to one value, nulls matched by <=>, a key tuple whose columns repeat), and SET * keeps
    # the updated rows' ids
    from sparkberg.operations.merge import MergeBuilder
    cat, t = table(spark, warehouse, version, mode)
    t.append(spark.sql("SELECT CAST(NULL AS BIGINT) AS id, 'odd' AS cat, 0 AS n"))
    kept = []
    real = MergeBuilder._changes
    monkeypatch.setattr(MergeBuilder, "_changes", lambda self, rl, pairs, *rest:
                        kept.append(pairs.columns) or real(self, rl, pairs, *rest))
    before = cat.load_table("db.t").metadata
    for source, condition in (
            ("SELECT '1' AS id, 'odd' AS cat, 1 AS n UNION ALL SELECT '01', 'odd', 2", "t.id = s.id"),
            ("SELECT CAST(NULL AS BIGINT) AS id, 'odd' AS cat, 1 AS n UNION ALL SELECT NULL, 'odd', 2",
             "t.id <=> s.id"),
            ("SELECT 1L AS id, 'odd' AS cat, 1 AS n UNION ALL SELECT 1L, 'odd', 2 UNION ALL SELECT 2L, 'odd', 3",
             "t.id = s.id AND t.cat = s.cat")):
        for merge in (lambda m: m.when_matched_update({"n": "s.n"}), lambda m: m.when_matched_update_all()):
            with pytest.raises(ValidationError, match="more than one source row"):
                merge(t.merge(spark.sql(source), condition)).execute()
    assert cat.load_table("db.t").metadata == before
    lineage = ["_row_id"] if version == 3 else []
    ids_before = {(r[0], r[1]): r[2] for r in t.to_df(columns=["id", "cat", "_row_id"]).collect()} \
        if version == 3 else None
    # (the pairs are the Spark path's: an UPDATE SET * on keys alone of a merge-on-read table otherwise runs on the
    # driver, test_merge_on_driver.py)
    monkeypatch.setattr(tuning, "DRIVER_MERGE_ROWS", -1)
    unique = spark.sql("SELECT 1L AS id, 'odd' AS cat, 5 AS n UNION ALL SELECT 1L, 'even', 6 UNION ALL "
                       "SELECT 2L, 'odd', 7 UNION ALL SELECT 2L, 'even', 8 UNION ALL SELECT 20L, 'even', 9")
    t.merge(unique, "t.id = s.id AND t.cat = s.cat").when_matched_update_all().when_not_matched_insert_all() \
        .execute()
    assert kept.pop() == ["_file", "_pos"] + lineage + ["id", "cat", "n", "_src_id", "_action"]
    expected = [(i, "even" if i % 2 == 0 else "odd", {1: 5, 2: 8}.get(i, 0)) for i in range(10)] + \
        [(1, "even", 6), (2, "odd", 7), (20, "even", 9), (None, "odd", 0)]
    got = [tuple(r) for r in t.to_df(columns=["id", "cat", "n"]).collect()]
    assert sorted(got, key=str) == sorted(expected, key=str)
    if version == 3:  # (the updated rows keep their ids, read with none of the target's data columns)
        after = {(r[0], r[1]): r[2] for r in t.to_df(columns=["id", "cat", "_row_id"]).collect()}
        assert after[(1, "odd")] == ids_before[(1, "odd")] and after[(2, "even")] == ids_before[(2, "even")]
        assert len(set(after.values())) == len(after)
    t.merge(spark.sql("SELECT 3L AS id, 'odd' AS cat, 30 AS n"), "t.id = s.id").when_matched_update({"n": "s.n"}) \
        .execute()
    assert kept.pop().count("n") == 2  # (the target's columns and the source's)
    assert [tuple(r) for r in t.to_df(columns=["id", "cat", "n"]).where("id = 3").collect()] == [(3, "odd", 30)]


def test_merge_into_empty_table(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.e", "id bigint, v string", properties={"format-version": "3"})
    t.merge(spark.sql("SELECT 1L AS id, 'a' AS v"), "t.id = s.id").when_not_matched_insert_all().execute()
    assert [tuple(r) for r in t.to_df().collect()] == [(1, "a")]


@pytest.mark.parametrize("partition_by", [[], ["cat"]])
def test_delete_by_keys_writes_equality_deletes(spark, warehouse, partition_by):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.eq", "id bigint, cat string, v string", partition_by=partition_by)
    t.append(spark.sql("SELECT id, CASE WHEN id % 2 = 0 THEN 'even' ELSE 'odd' END AS cat, 'x' AS v "
                       "FROM range(0, 10)"))
    keys = spark.sql("SELECT 3L AS id, 'odd' AS cat UNION ALL SELECT 4L, 'even' UNION ALL SELECT 5L, 'even'")
    t.delete_by_keys(keys, ["id"]).append(spark.sql("SELECT 3L AS id, 'odd' AS cat, 'again' AS v"))
    got = sorted(tuple(r) for r in t.to_df(columns=["id", "v"]).collect())
    deleted = {3, 4, 5} if not partition_by else {3, 4}  # partitioned deletes apply within their partition
    assert got == sorted([(i, "x") for i in range(10) if i not in deleted] + [(3, "again")])
    deletes = [d for r in t.plan_files().collect() for d in r["deletes"]]
    assert deletes and all(d["content"] == 2 and d["equality_ids"] == [1] for d in deletes)
    assert t.metadata.snapshots[1].summary["added-equality-delete-files"] == str(len({d["file_path"]
                                                                                      for d in deletes}))
    with pytest.raises(ValidationError, match="key column 'nope'"):
        t.delete_by_keys(keys, ["nope"])


def _live_delete_files(t):
    """Every live delete file of the current snapshot, from the manifests (not only those a plan attaches)."""
    return sorted(r["file_path"] for r in t.metadata_table("delete_files").collect())


@pytest.mark.parametrize("partition_by", [["cat"], ["day(d)"]])
def test_replaced_partitions_take_their_delete_files_along(spark, warehouse, partition_by):
    """Java's row-filter overwrite and partition replacement drop the delete files of what they wholly replace
    (a global equality delete only when everything is replaced); a partial overwrite keeps the rest's."""
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.od", "id bigint, cat string, d date", partition_by=partition_by,
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    rows = ("SELECT id, CASE WHEN id % 2 = 0 THEN 'even' ELSE 'odd' END AS cat, "
            "CASE WHEN id % 2 = 0 THEN DATE'2024-01-02' ELSE DATE'2024-01-01' END AS d FROM range({}, {})")
    t.append(spark.sql(rows.format(0, 20)))
    t.delete("id IN (2, 3)")  # position deletes, one per partition
    t.delete_by_keys(spark.sql("SELECT 4L AS id, 'even' AS cat, DATE'2024-01-02' AS d"), ["id"])
    assert len(_live_delete_files(t)) == 3
    odd = "cat = 'odd'" if partition_by == ["cat"] else "d = DATE'2024-01-01'"
    t.overwrite(spark.sql(rows.format(101, 102)), filter=odd)  # the odd partition's position delete goes
    assert len(_live_delete_files(t)) == 2
    assert sorted(r[0] for r in t.to_df(columns=["id"]).collect()) == [0, 6, 8, 10, 12, 14, 16, 18, 101]
    t.dynamic_overwrite(spark.sql(rows.format(200, 202).replace("id % 2 = 0", "true")))  # replaces 'even'
    assert _live_delete_files(t) == []
    assert sorted(r[0] for r in t.to_df(columns=["id"]).collect()) == [101, 200, 201]
    t.delete_by_keys(spark.sql("SELECT 200L AS id, 'even' AS cat, DATE'2024-01-02' AS d"), ["id"])
    t.overwrite(spark.sql(rows.format(300, 301)))  # everything replaced: every delete file goes
    assert _live_delete_files(t) == [] and [r[0] for r in t.to_df(columns=["id"]).collect()] == [300]
    assert t.metadata.current_snapshot.summary.get("total-delete-files") == "0"


def test_global_equality_deletes_go_only_with_everything(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.og", "id bigint", properties={"format-version": "2"})
    t.append(spark.range(0, 10))
    t.delete_by_keys(spark.sql("SELECT 3L AS id"), ["id"])
    t.overwrite(spark.range(100, 101), filter="id < 5")  # rewrites the file: the global delete may still apply
    assert len(_live_delete_files(t)) == 1
    t.overwrite(spark.range(200, 201))
    assert _live_delete_files(t) == [] and [r[0] for r in t.to_df().collect()] == [200]


@pytest.mark.parametrize("version,mode", MODES)
def test_a_merge_that_only_deletes(spark, warehouse, version, mode):
    cat, t = table(spark, warehouse, version, mode)
    t.merge(spark.sql("SELECT 1L AS id UNION ALL SELECT 2L UNION ALL SELECT 99L"), "t.id = s.id") \
        .when_matched_delete().execute()
    assert [r[0] for r in state(t)] == [i for i in range(10) if i not in (1, 2)]
    t.merge(spark.sql("SELECT 99L AS id"), "t.id = s.id").when_matched_delete().execute()  # nothing matched
    assert [r[0] for r in state(t)] == [i for i in range(10) if i not in (1, 2)]


def test_rows_picked_from_a_scan_are_rebalanced_before_they_are_written(spark):
    from sparkberg.operations.rowlevel import picked_rows
    scan = spark.range(0, 1000, 1, 8)  # (the rows picked, in a scan's 8 tasks)
    files = [{"record_count": 600}, {"record_count": 400}]

    def plan(rows):
        out = picked_rows(scan, rows, files)
        assert sorted(r[0] for r in out.collect()) == list(range(1000))  # (no row lost or repeated)
        return str(out._jdf.queryExecution().optimizedPlan())

    assert "RebalancePartitions" in plan(10)  # (some of the files' rows: rebalanced by Spark)
    assert "RebalancePartitions" in plan(999)
    assert "RebalancePartitions" not in plan(1000)  # (all of them: no shuffle)
    # with Spark's default adaptive execution (this suite's session turns its coalescing off) a few rows make one task
    key = "spark.sql.adaptive.coalescePartitions.enabled"
    before = spark.conf.get(key)
    spark.conf.set(key, "true")
    try:
        assert picked_rows(scan, 10, files).rdd.getNumPartitions() == 1
    finally:
        spark.conf.set(key, before)
