"""MERGE reads only the target files that may hold a matching row: the ON clause's target-only conjuncts and the
source's key values (or their range) prune the scan; the result is the same as without pruning. DELETE and
UPDATE prune the same way by the subquery of a ``col IN (SELECT ...)`` conjunct; Column filters prune nothing."""
import pytest

import sparkberg
from sparkberg.operations import merge as merge_module, rowlevel

pytestmark = pytest.mark.spark


@pytest.fixture
def planned(monkeypatch):
    """The number of target files each MERGE, DELETE or UPDATE planned to read."""
    counts = []

    class Counting(rowlevel.RowLevel):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            counts.append(len(self.tasks))
    monkeypatch.setattr(merge_module, "RowLevel", Counting)
    monkeypatch.setattr(rowlevel, "RowLevel", Counting)
    return counts


def table(spark, warehouse, mode):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.m", "id bigint, v string", partition_by=["truncate(id, 100)"],
                         properties={"format-version": "2", "write.merge.mode": mode})
    t.append(spark.range(0, 1000).selectExpr("id", "'old' AS v"))
    return cat, t


def upsert(t, src, condition="t.id = s.id"):
    t.merge(src, condition).when_matched_update({"v": "s.v"}).when_not_matched_insert_all().execute()


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_source_keys_prune_the_target(spark, warehouse, planned, mode):
    cat, t = table(spark, warehouse, mode)
    upsert(t, spark.createDataFrame([(5, "new"), (7, "new"), (1500, "ins")], "id bigint, v string"))
    assert planned[-1] == 1  # only the file of ids 0..99 can hold 5 or 7
    rows = {r.id: r.v for r in cat.load_table("db.m").to_df().collect()}
    assert len(rows) == 1001 and rows[5] == rows[7] == "new" and rows[1500] == "ins" and rows[6] == "old"
    many = spark.range(250, 1350).selectExpr("id", "'many' AS v")  # more keys than an IN list takes: a range
    upsert(t, many)
    assert planned[-1] == 8  # the files of 200..999
    rows = {r.id: r.v for r in cat.load_table("db.m").to_df().collect()}
    assert len(rows) == 1351 and rows[249] == "old" and rows[250] == rows[999] == rows[1349] == "many"


def test_many_keys_prune_by_their_range_without_collecting_them(spark, warehouse, planned, monkeypatch):
    """A source whose keys are estimated far above an IN list's size (by the job that finds their range) prunes
    by the range without a job collecting its distinct keys; near the size, and for a null-safe key (whose null
    would match null rows), the keys are still collected."""
    collected = []
    frame_class = type(spark.range(1))  # (the session's own DataFrame class: classic or Connect)
    distinct = frame_class.distinct

    def counting(self):
        collected.append(self.columns)
        return distinct(self)
    monkeypatch.setattr(frame_class, "distinct", counting)
    cat, t = table(spark, warehouse, "merge-on-read")
    t.append(spark.range(1000, 9000).selectExpr("id", "'old' AS v"))
    upsert(t, spark.range(2050, 7050).selectExpr("id", "'many' AS v"))  # 5,000 keys
    assert collected == [] and planned[-1] == 51  # the files of 2000..7099
    rows = {r.id: r.v for r in cat.load_table("db.m").to_df().collect()}
    assert len(rows) == 9000 and rows[2049] == rows[7050] == "old" and rows[2050] == rows[7049] == "many"
    upsert(t, spark.range(0, 1100).selectExpr("id", "'near' AS v"))
    assert collected == [["id"]] and planned[-1] == 11
    upsert(t, spark.range(5000, 8000).selectExpr("id", "'ns' AS v"), "t.id <=> s.id")
    assert collected == [["id"]] * 2 and planned[-1] == 51  # 30 appended and 21 the first merge wrote
    rows = {r.id: r.v for r in cat.load_table("db.m").to_df().collect()}
    assert len(rows) == 9000 and rows[1099] == "near" and rows[4999] == "many" and rows[5000] == rows[7999] == "ns"


def test_target_conjuncts_prune_and_a_column_condition_reads_all(spark, warehouse, planned):
    from pyspark.sql import functions as F
    cat, t = table(spark, warehouse, "copy-on-write")
    src = spark.range(0, 1000).selectExpr("id", "'x' AS v")
    upsert(t, src.where("id % 10 = 0"), "t.id = s.id AND t.id < 200 AND s.v = 'x'")
    assert planned[-1] == 2
    got = cat.load_table("db.m").to_df()
    rows = {(r.id, r.v) for r in got.collect()}
    assert (10, "x") in rows and (190, "x") in rows and (200, "old") in rows and (200, "x") in rows
    assert got.count() == 1000 + 80  # (ids 200.. step 10 match no target row the ON clause allows: inserted)
    s = spark.createDataFrame([(3, "col")], "id bigint, v string").alias("s")
    files = cat.load_table("db.m").metadata_table("files").count()
    cat.load_table("db.m").merge(s, F.col("t.id") == F.col("s.id")).when_matched_update({"v": "s.v"}).execute()
    assert planned[-1] == files  # (a Column condition prunes nothing)
    assert {r.id: r.v for r in cat.load_table("db.m").to_df().collect()}[3] == "col"


@pytest.mark.parametrize("version,mode", [(2, "copy-on-write"), (2, "merge-on-read"), (3, "merge-on-read"),
                                          (3, "copy-on-write")])
def test_when_not_matched_by_source(spark, warehouse, planned, version, mode):
    """Spark's WHEN NOT MATCHED BY SOURCE: target rows no source row matches are updated or deleted, in clause
    order; every target file is read (any may hold such a row); v3 updated rows keep their ids."""
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.b", "id bigint, v string", partition_by=["truncate(id, 4)"],
                         properties={"format-version": str(version), "write.merge.mode": mode})
    t.append(spark.range(0, 10).selectExpr("id", "'old' AS v"))
    ids_before = {r.id: r._row_id for r in t.to_df(columns=["id", "_row_id"]).collect()} if version == 3 else {}
    src = spark.range(5, 15).selectExpr("id", "'new' AS v")
    (t.merge(src, "t.id = s.id").when_matched_update({"v": "concat(s.v, '-m')"}).when_not_matched_insert_all()
     .when_not_matched_by_source_delete("t.id < 2").when_not_matched_by_source_update({"v": "concat(t.v, '-o')"})
     .execute())
    assert planned[-1] == 3  # (no pruning: every file of the target is read)
    got = cat.load_table("db.b").to_df(columns=["id", "v"] + (["_row_id"] if version == 3 else [])).collect()
    assert sorted((r.id, r.v) for r in got) == [(i, "old-o") for i in range(2, 5)] + \
        [(i, "new-m") for i in range(5, 10)] + [(i, "new") for i in range(10, 15)]
    if version == 3:
        assert all(r._row_id == ids_before[r.id] for r in got if r.id < 10)  # updated rows keep their ids
    with pytest.raises(Exception, match="when_not_matched_by_source"):
        t.merge(src, "t.id = s.id").execute()


@pytest.mark.parametrize("version", [2, 3])
def test_upsert_by_equality_deletes_or_merge(spark, warehouse, planned, version):
    """Both upsert modes leave the same rows; the equality-delete one reads nothing of the table."""
    cat = sparkberg.catalog(spark, warehouse)
    results = {}
    for mode in ("equality-deletes", "merge"):
        name = f"db.u_{mode.replace('-', '_')}"
        t = cat.create_table(name, "id bigint, v string", partition_by=["bucket(2, id)"],
                             properties={"format-version": str(version)})
        t.append(spark.range(0, 10).selectExpr("id", "'old' AS v"))
        before = len(planned)
        batch = spark.createDataFrame([(3, "up"), (8, "up"), (42, "ins"), (None, "null-key")], "id bigint, v string")
        t.upsert(batch, "id", mode=mode, snapshot_properties={"batch": "1"})
        t.upsert(spark.createDataFrame([(None, "null-again"), (3, "up2")], "id bigint, v string"), ["id"], mode=mode)
        t = cat.load_table(name)
        results[mode] = sorted((r.id if r.id is not None else -1, r.v) for r in t.to_df().collect())
        if mode == "equality-deletes":
            assert len(planned) == before  # (no MERGE, no scan of the target)
            snap = t.metadata.current_snapshot
            assert snap.operation == "overwrite" and int(snap.summary["added-equality-delete-files"]) >= 1
    assert results["equality-deletes"] == results["merge"] == sorted(
        [(i, "old") for i in range(10) if i not in (3, 8)] + [(3, "up2"), (8, "up"), (42, "ins"), (-1, "null-again")])
    with pytest.raises(Exception, match="upsert mode"):
        cat.load_table("db.u_merge").upsert(spark.range(1), "id", mode="sideways")


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_semi_join_subqueries_prune_deletes_and_updates(spark, warehouse, planned, mode):
    cat, t = table(spark, warehouse, mode)
    t.set_properties({"write.delete.mode": mode, "write.update.mode": mode})
    spark.createDataFrame([(5,), (7,), (None,)], "k bigint").createOrReplaceTempView("gone_keys")
    t.delete("id IN (SELECT k FROM gone_keys)")
    assert planned[-1] == 1  # only the file of ids 0..99 (a null key matches nothing)
    spark.range(300, 1450).selectExpr("id AS k").createOrReplaceTempView("hot_keys")  # a range, not an IN list
    t.update({"v": "'hot'"}, "v = 'old' AND id IN (SELECT k FROM hot_keys)")
    assert planned[-1] == 7  # the files of 300..999
    spark.createDataFrame([], "k bigint").createOrReplaceTempView("no_keys")
    location = cat.load_table("db.m").metadata_location
    t.delete("id IN (SELECT k FROM no_keys)")
    assert planned[-1] == 0 and cat.load_table("db.m").metadata_location == location
    rows = {r.id: r.v for r in cat.load_table("db.m").to_df().collect()}
    assert len(rows) == 998 and 5 not in rows and 7 not in rows and rows[6] == rows[299] == "old"
    assert rows[300] == rows[999] == "hot"


def test_column_filters_apply_exactly_and_prune_nothing(spark, warehouse, planned):
    from pyspark.sql import functions as F
    cat, t = table(spark, warehouse, "copy-on-write")
    t.delete(F.col("id") < 3)
    assert planned[-1] == 10
    t.update({"v": "'odd'"}, (F.col("id") % 2 == 1) & (F.col("id") < 20))
    rows = {r.id: r.v for r in cat.load_table("db.m").to_df().collect()}
    assert len(rows) == 997 and 0 not in rows and rows[3] == rows[19] == "odd" and rows[4] == rows[21] == "old"
