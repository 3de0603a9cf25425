"""``Table.count`` and ``count``/``min``/``max`` through ``sparkberg.sql``: exact, from the manifests where they hold
the answer and by reading the rows where they do not, equal to Spark's own aggregation over ``to_df()`` after
random sequences of appends, deletes (position deletes, deletion vectors, equality deletes), updates, merges and
compactions, on v2 and v3, with filters the partitions decide and filters they do not."""
import logging
import random

import pytest

import sparkberg

pytestmark = pytest.mark.spark

FILTERS = [None, "p = 1", "p IN (0, 2)", "p >= 1 AND p < 3", "id < 40", "p = 1 AND v = 'a'", "p = 1 OR id > 90"]


def _step(rng: random.Random, spark, t, k: int):
    op = rng.choice(["append", "append", "delete", "delete", "update", "merge", "upsert", "compact"])
    lo = rng.randrange(0, 100)
    if op == "append":
        return t.append(spark.sql(f"SELECT id, CAST(id % 4 AS INT) AS p, IF(id % 3 = 0, 'a', 'b') AS v, "
                                  "IF(id % 5 = 0, NULL, id * 0.5D - 20) AS d, DATE_ADD(DATE'2024-01-01', CAST(id AS INT)) AS day "
                                  f"FROM range({lo}, {lo + rng.randrange(1, 30)})"))
    if op == "delete":
        return t.delete(rng.choice([f"id = {lo}", f"id BETWEEN {lo} AND {lo + 5}", f"p = {lo % 4}",
                                    f"v = 'a' AND id < {lo}"]))
    if op == "update":
        return t.update({"v": "'u'"}, f"id % 7 = {lo % 7}")
    if op == "merge":
        src = spark.sql(f"SELECT id, CAST(id % 4 AS INT) AS p, 'm' AS v, id * 2.5D AS d, DATE'2030-01-01' AS day "
                        f"FROM range({lo}, {lo + 3})")
        t.merge(src, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
        return t.refresh()
    if op == "upsert":  # (equality deletes)
        return t.upsert(spark.sql(f"SELECT {lo}L AS id, {lo % 4} AS p, 'e' AS v, -99.5D AS d, "
                                  "DATE'1999-01-01' AS day"), ["id"]) or t.refresh()
    t.rewrite_data_files(options={"rewrite-all": "true"})
    return t.refresh()


@pytest.mark.parametrize("version,seed", [(2, 1), (3, 2)])
def test_count_equals_spark_s_count_after_random_changes(spark, warehouse, version, seed, caplog):
    rng = random.Random(seed)
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.t", "id bigint, p int, v string, d double, day date", partition_by=["p"], properties={
        "format-version": str(version), "write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read",
        "write.merge.mode": "merge-on-read", "write.metadata.metrics.column.v": "full"})
    assert t.count() == 0
    t = t.append(spark.sql("SELECT id, CAST(id % 4 AS INT) AS p, IF(id % 3 = 0, 'a', 'b') AS v, "
                           "IF(id % 5 = 0, NULL, id * 0.5D - 20) AS d, DATE_ADD(DATE'2024-01-01', CAST(id AS INT)) AS day "
                           "FROM range(100)"))
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


AGGREGATES = "count(*), min(id), max(id), min(v), max(v), min(d), max(d), min(day), max(day), min(p)"


@pytest.mark.parametrize("version,seed", [(2, 3), (3, 4)])
def test_sql_min_max_equal_spark_s_after_random_changes(spark, warehouse, version, seed, caplog):
    """Over random changes, ``SELECT count(*), min(..), max(..)`` through sparkberg.sql equals Spark's aggregation
    of ``to_df()``, answered from the manifests on some steps (no delete touching the files) and not on others."""
    rng = random.Random(seed)
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.m", "id bigint, p int, v string, d double, day date", partition_by=["p"], properties={
        "format-version": str(version), "write.delete.mode": rng.choice(["merge-on-read", "copy-on-write"]),
        "write.update.mode": "merge-on-read", "write.merge.mode": "copy-on-write",
        "write.metadata.metrics.column.v": "full"})
    empty = sparkberg.sql(spark, f"SELECT {AGGREGATES} FROM db.m", catalog=cat).collect()[0]
    assert tuple(empty) == (0,) + (None,) * 9
    t = t.append(spark.sql("SELECT id, CAST(id % 4 AS INT) AS p, IF(id % 3 = 0, 'a', 'b') AS v, "
                           "IF(id % 5 = 0, NULL, id * 0.5D - 20) AS d, DATE_ADD(DATE'2024-01-01', CAST(id AS INT)) AS day "
                           "FROM range(100)"))
    used = set()
    for k in range(10):
        if k:
            t = cat.load_table("db.m")
            t = _step(rng, spark, t, k) if k % 3 else t.rewrite_data_files(options={"rewrite-all": "true"}) or t
        t = cat.load_table("db.m")
        for where in ("", " WHERE p = 1", " WHERE p IN (0, 3)", " WHERE id > 50"):
            caplog.clear()
            with caplog.at_level(logging.INFO, logger="sparkberg.table"):
                got = sparkberg.sql(spark, f"SELECT {AGGREGATES} FROM db.m{where}", catalog=cat)
                rows = got.collect()
            df = t.to_df() if not where else t.to_df(filter=where.replace(" WHERE ", ""))
            expected = df.selectExpr(*AGGREGATES.split(", ")).collect()
            assert got.columns == [c.replace("*", "1") for c in AGGREGATES.split(", ")]
            shape = [(f.name, f.dataType, f.nullable) for f in df.selectExpr(*AGGREGATES.split(", ")).schema]
            assert [(f.name, f.dataType, f.nullable) for f in got.schema] == shape, (k, where)
            assert [tuple(r) for r in rows] == [tuple(r) for r in expected], (k, where)
            used |= {"manifests" if "count, min(id)" in caplog.text and "from its manifests" in caplog.text
                     else "rows"}
    assert used == {"manifests", "rows"}


def test_min_max_from_manifests_only_where_the_bounds_are_the_values(spark, warehouse, caplog):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.b", "id bigint, s string, f double, u string, p int", partition_by=["p"],
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read",
                                     "write.metadata.metrics.column.u": "full"})
    t = t.append(spark.sql("SELECT id, repeat('x', 20) || id AS s, IF(id = 3, CAST('NaN' AS DOUBLE), id * 1.5) AS f, "
                           "CAST(id AS STRING) AS u, CAST(id % 2 AS INT) AS p FROM range(1, 10)"))

    def answered(text: str) -> bool:
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="sparkberg.table"):
            got = sparkberg.sql(spark, text, catalog=cat).collect()
        expected = spark.sql(text.replace("db.b", "b")).collect()
        assert [repr(tuple(r)) for r in got] == [repr(tuple(r)) for r in expected], text  # (repr: NaN is NaN)
        return "from its manifests" in caplog.text

    t.to_df().createOrReplaceTempView("b")
    assert answered("SELECT min(id), max(id) AS top FROM db.b")
    assert answered("SELECT max(u), count(*) FROM db.b WHERE p = 0")  # (full metrics: the bound is the value)
    assert not answered("SELECT max(s) FROM db.b")  # (truncate(16): the bound is a prefix)
    assert not answered("SELECT max(f) FROM db.b")  # (a NaN, which the bounds leave out)
    assert answered("SELECT max(f) FROM db.b WHERE p = 0")  # (its files hold no NaN)
    assert not answered("SELECT min(id) FROM db.b WHERE id > 2")  # (a filter the partitions cannot decide)
    plan = sparkberg.sql(spark, "EXPLAIN SELECT min(id), max(id) FROM db.b", catalog=cat).collect()[0][0]
    assert "from its manifests" in plan and "record counts and column bounds" in plan and "no data file" in plan
    t.delete("id = 9")
    t.to_df().createOrReplaceTempView("b")
    assert not answered("SELECT max(id) FROM db.b")  # (a deleted row held the bound)
    assert answered("SELECT max(id) FROM db.b WHERE p = 0")  # (no delete touches that partition's file)
    plan = sparkberg.sql(spark, "EXPLAIN SELECT max(id) FROM db.b", catalog=cat).collect()[0][0]
    assert "by reading the rows" in plan and "a deleted row may hold a bound" in plan and "Aggregate" in plan
    # a column promoted from int to long: its older files' bounds are ints, not read as the values
    w = cat.create_table("db.w", "i int", properties={"format-version": "2"})
    w.append(spark.sql("SELECT CAST(id AS INT) AS i FROM range(5)"))
    w.update_schema().update_column("i", "long").commit()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="sparkberg.table"):
        assert sparkberg.sql(spark, "SELECT max(i) FROM db.w", catalog=cat).collect()[0][0] == 4
    assert "by reading its rows" in caplog.text and "one type" in caplog.text
