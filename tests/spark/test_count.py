"""``Table.count``: exact, from the manifests where they hold the answer and by reading the rows where they do not,
equal to Spark's own count over ``to_df()`` after random sequences of appends, deletes (position deletes,
deletion vectors, equality deletes), updates, merges and compactions, on v2 and v3, with filters the partitions
decide and filters they do not."""
import logging
import random

import pytest

import sparkberg

pytestmark = pytest.mark.spark

FILTERS = [None, "p = 1", "p IN (0, 2)", "p >= 1 AND p < 3", "id < 40", "p = 1 AND v = 'a'", "p = 1 OR id > 90"]


def _step(rng: random.Random, spark, t, k: int):
    op = rng.choice(["append", "delete", "delete", "update", "merge", "upsert", "compact"])
    lo = rng.randrange(0, 100)
    if op == "append":
        return t.append(spark.sql(f"SELECT id, CAST(id % 4 AS INT) AS p, IF(id % 3 = 0, 'a', 'b') AS v "
                                  f"FROM range({lo}, {lo + rng.randrange(1, 30)})"))
    if op == "delete":
        return t.delete(rng.choice([f"id = {lo}", f"id BETWEEN {lo} AND {lo + 5}", f"p = {lo % 4}",
                                    f"v = 'a' AND id < {lo}"]))
    if op == "update":
        return t.update({"v": "'u'"}, f"id % 7 = {lo % 7}")
    if op == "merge":
        src = spark.sql(f"SELECT id, CAST(id % 4 AS INT) AS p, 'm' AS v FROM range({lo}, {lo + 3})")
        t.merge(src, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
        return t.refresh()
    if op == "upsert":  # (equality deletes)
        return t.upsert(spark.sql(f"SELECT {lo}L AS id, {lo % 4} AS p, 'e' AS v"), ["id"]) or t.refresh()
    t.rewrite_data_files(options={"rewrite-all": "true"})
    return t.refresh()


@pytest.mark.parametrize("version,seed", [(2, 1), (3, 2)])
def test_count_equals_spark_s_count_after_random_changes(spark, warehouse, version, seed, caplog):
    rng = random.Random(seed)
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.t", "id bigint, p int, v string", partition_by=["p"], properties={
        "format-version": str(version), "write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read",
        "write.merge.mode": "merge-on-read"})
    assert t.count() == 0
    t = t.append(spark.sql("SELECT id, CAST(id % 4 AS INT) AS p, IF(id % 3 = 0, 'a', 'b') AS v FROM range(100)"))
    used = set()
    for k in range(8):
        t = _step(rng, spark, t, k)
        t = cat.load_table("db.t")
        for f in FILTERS:
            caplog.clear()
            with caplog.at_level(logging.INFO, logger="sparkberg.table"):
                got = t.count(f)
            expected = (t.to_df() if f is None else t.to_df(filter=f)).count()
            assert got == expected, (k, f)
            used |= {"manifests" if "from its manifests" in caplog.text else "rows"}
    assert used == {"manifests", "rows"}  # (both ways taken over the sequence)


def test_count_from_manifests_with_deletion_vectors_and_file_scoped_deletes(spark, warehouse, caplog):
    cat = sparkberg.catalog(spark, warehouse)
    for version in (2, 3):
        t = cat.create_table(f"db.c{version}", "id bigint, p int", partition_by=["p"], properties={
            "format-version": str(version), "write.delete.mode": "merge-on-read"})
        t = t.append(spark.sql("SELECT id, CAST(id % 2 AS INT) AS p FROM range(1000)"))
        t = t.delete("id % 10 = 0")
        first = t.current_snapshot().snapshot_id
        with caplog.at_level(logging.INFO, logger="sparkberg.table"):
            caplog.clear()
            assert t.count() == 900 and "from its manifests" in caplog.text
            caplog.clear()
            assert t.count("p = 1") == 500 and "from its manifests" in caplog.text
            caplog.clear()
            assert t.count("id < 100") == 90 and "by reading" in caplog.text  # (not decided by partitions)
        # (a second delete: sparkberg's writers keep one position delete file, or DV, per data file)
        t = t.delete("id % 10 = 1")
        with caplog.at_level(logging.INFO, logger="sparkberg.table"):
            caplog.clear()
            assert t.count() == 800 and "from its manifests" in caplog.text
        # equality deletes: only the rows tell
        t = t.upsert(spark.sql("SELECT 5L AS id, 1 AS p"), ["id"]) or cat.load_table(f"db.c{version}")
        with caplog.at_level(logging.INFO, logger="sparkberg.table"):
            caplog.clear()
            assert t.count() == 800 and "by reading" in caplog.text
        assert t.count(snapshot_id=first) == 900
    with pytest.raises(sparkberg.ValidationError, match="string"):
        t.count(filter=object())


def test_sql_count_star_is_answered_from_the_manifests(spark, warehouse, caplog):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.s", "id bigint, p int", partition_by=["p"], properties={
        "format-version": "3", "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, CAST(id % 3 AS INT) AS p FROM range(30)")).delete("id < 5")
    cases = {"SELECT count(*) FROM db.s": ("count(1)", 25, True),
             "SELECT count(1) AS n FROM db.s WHERE p = 1": ("n", 8, True),
             "SELECT COUNT(*) FROM db.s s WHERE s.id > 20": ("count(1)", 9, False)}
    for text, (column, n, from_manifests) in cases.items():
        with caplog.at_level(logging.INFO, logger="sparkberg.table"):
            caplog.clear()
            df = sparkberg.sql(spark, text, catalog=cat)
            assert df.columns == [column] and df.collect()[0][0] == n, text
            assert ("from its manifests" in caplog.text) == from_manifests, text
            # EXPLAIN says which, without counting
            plan = sparkberg.sql(spark, f"EXPLAIN {text}", catalog=cat).collect()[0][0]
            assert plan.startswith("== sparkberg ==\ncount of db.s at snapshot ") and \
                (("from its manifests" in plan and "no data file is read" in plan) if from_manifests
                 else "by reading the rows" in plan), (text, plan)
    # (anything more than a count of one table's rows is Spark's query, as before)
    grouped = sparkberg.sql(spark, "SELECT p, count(*) FROM db.s GROUP BY p ORDER BY p", catalog=cat).collect()
    assert [tuple(r) for r in grouped] == [(0, 8), (1, 8), (2, 9)]
