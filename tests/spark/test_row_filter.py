"""A DELETE's filter tested on the driver (``row_filter``): over the rows of a table's files, read into Arrow as the
driver reads them, it matches exactly the rows Spark's WHERE matches (three-valued logic, NaN greater than every
double and equal to itself, -0.0 equal to 0.0, literals converted as Spark converts them); a filter it cannot
evaluate so is left to Spark. A DELETE whose filter it evaluates finds its rows without a Spark job, and deletes
what the Spark path deletes."""
import functools

import pyarrow as pa
import pytest

import sparkberg
from sparkberg.spark import tuning
from sparkberg.expressions.sql import row_filter
from sparkberg.planning.scan import plan
from sparkberg.read.arrow import TaskReader
from sparkberg.spark.settings import session_time_zone

pytestmark = pytest.mark.spark

ROWS = """
(0, true, 1, 10L, 1.5D, 'abc', DATE'2024-01-01', TIMESTAMP'2024-01-01 10:00:00', TIMESTAMP_NTZ'2024-01-01 10:00:00', 1.5F),
(1, false, -5, -10L, double('NaN'), 'abd', DATE'2023-12-31', TIMESTAMP'2023-12-31 23:00:00',
 TIMESTAMP_NTZ'2023-12-31 23:00:00', float('NaN')),
(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
(3, true, 0, 0L, -0.0D, '', DATE'2024-02-29', TIMESTAMP'2024-01-01 09:30:00', TIMESTAMP_NTZ'2024-01-01 09:30:00', 0.1F),
(4, false, 7, 99L, 0.0D, 'a%b', DATE'2024-01-02', TIMESTAMP'2024-01-02 00:00:00', TIMESTAMP_NTZ'2024-01-02 00:00:00',
 -0.0F),
(5, NULL, 2147483647, 9223372036854775807L, double('Infinity'), 'é', DATE'1970-01-01', TIMESTAMP'1970-01-01 00:00:00',
 TIMESTAMP_NTZ'1970-01-01 00:00:00', NULL),
(6, true, -2147483648, -9223372036854775808L, double('-Infinity'), 'ab', NULL, NULL, NULL, 2.0F)
"""
COLUMNS = "k, b, i, l, d, s, dt, ts, ntz, f"

EVALUATED = [
    "d > 1", "d >= 1.5", "d < 1", "d <= 0", "d = 0", "d = -0.0", "d <> 1.5", "d <=> 0.0", "d IN (0.0, 1.5)",
    "d NOT IN (0.0, 1.5)", "d IN (1.5, NULL)", "NOT (d IN (1.5, NULL))", "isnan(d)", "NOT isnan(d)",
    "d BETWEEN -1 AND 2", "d NOT BETWEEN -1 AND 2", "d IS NULL", "d IS NOT NULL", "d > 1e308", "d < -1.0E308",
    "i < 0", "i = 1", "i >= 2147483647", "10 > l", "l IN (0, 10, 99)", "l NOT IN (0, 10)", "l <=> NULL",
    "NULL <=> l", "l <=> 10", "l > -9223372036854775808", "i IN (1, NULL)", "NOT (i IN (7, NULL)) OR i IS NULL",
    "s = 'abc'", "s > 'abc'", "s LIKE 'ab%'", "s NOT LIKE 'ab%'", "s LIKE 'abc'", "s LIKE 'a%%'",
    "s IN ('abc', '')", "s < 'b'", "s >= 'é'", "s <> ''",
    "b", "NOT b", "b = false", "b <> true", "b AND l > 0", "b OR d > 1", "NOT (b AND i > 0)",
    "dt >= '2024-01-01'", "dt < DATE'2024-01-01'", "dt = '2023-12-31'", "dt IN ('2024-02-29', '1970-01-01')",
    "ts >= '2024-01-01 10:00:00'", "ts < TIMESTAMP'2024-01-01 09:45:00Z'", "ts > TIMESTAMP'2024-01-01 09:00:00+01:00'",
    "ntz > '2024-01-01 09:00:00'", "ntz < TIMESTAMP_NTZ'2024-01-01 12:00:00'", "ntz = '1970-01-01 00:00:00'",
    "(l > 0 OR s LIKE 'a%') AND NOT (d IS NULL OR d < 0)", "l = '10'", "d > ' 1.5 '", "i < '+1'",
]
LEFT_TO_SPARK = [
    "f > 1", "upper(s) = 'ABC'", "l + 1 > 2", "l > i", "d = 'NaN'", "d > double('NaN')", "s LIKE 'a_c'",
    "s LIKE '%b'", "b IS TRUE", "nope > 1", "L > 1", "l > 1.5", "i > 3000000000", "l = NULL", "s = 1",
    "true", "l IN (i, 2)", "dt > TIMESTAMP'2024-01-01 00:00:00'", "l = '1_0'", "d > '1_000'", "i = '\u0661'",
]


@pytest.fixture(scope="module")
def rows(spark, tmp_path_factory):
    """The table's schema, its rows as the driver reads them (by ``k``), and what Spark's WHERE says of each row
    for each filter of ``EVALUATED`` (one query for them all)."""
    cat = sparkberg.catalog(spark, str(tmp_path_factory.mktemp("wh")))
    src = spark.sql(f"SELECT * FROM VALUES {ROWS} AS v({COLUMNS})")
    t = cat.create_table("db.rows", src.schema)
    t.append(src)
    tasks = plan(spark, t.metadata, t.io, t.metadata.current_snapshot, mode="local").rows()
    read = pa.Table.from_batches(list(TaskReader(t.metadata, t.metadata.current_schema, t.io).read(tasks, None)))
    found = src.orderBy("k").selectExpr(*[f"coalesce({text}, false)" for text in EVALUATED]).collect()
    spark_says = {text: [r[i] for r in found] for i, text in enumerate(EVALUATED)}
    return t.metadata.current_schema, read.sort_by("k"), spark_says


@pytest.mark.parametrize("text", EVALUATED)
def test_a_filter_evaluated_on_the_driver_matches_the_rows_spark_matches(spark, rows, text):
    schema, read, spark_says = rows
    test = row_filter(text, schema, functools.partial(session_time_zone, spark))
    assert test is not None, text
    want = spark_says[text]
    assert test.matches(read).tolist() == want
    # (each filter tells some rows from others, but the one Spark never finds true)
    assert 0 < sum(want) < len(want) or text == "NOT (d IN (1.5, NULL))", text


@pytest.mark.parametrize("text", LEFT_TO_SPARK)
def test_a_filter_not_evaluated_exactly_is_left_to_spark(rows, text):
    schema = rows[0]
    assert row_filter(text, schema) is None


@pytest.mark.parametrize("version,mode", [(3, "merge-on-read"), (2, "merge-on-read"), (2, "copy-on-write")])
def test_a_delete_found_on_the_driver_deletes_what_spark_finds(spark, warehouse, monkeypatch, version, mode):
    # the same deletes, over the deletes already there (a DV or position deletes, equality deletes), found on the
    # driver and by Spark (a bound of 0 values): the same rows are left, in the same files
    import sparkberg.operations.rowlevel as rowlevel
    ran = []
    real = rowlevel.matched_on_driver
    monkeypatch.setattr(rowlevel, "matched_on_driver", lambda *a: ran.append(real(*a)) or ran[-1])
    results = []
    for where in ("driver", "spark"):
        if where == "spark":
            monkeypatch.setattr(tuning, "DRIVER_FILTER_VALUES", 0)
        cat = sparkberg.catalog(spark, f"{warehouse}/{where}")
        t = cat.create_table("db.t", "id bigint, cat string, v string, x double", partition_by=["cat"],
                             properties={"format-version": str(version), "write.delete.mode": mode})
        for lo in (0, 500):  # (two files a partition)
            t.append(spark.sql("SELECT id, CASE WHEN id % 2 = 0 THEN 'even' ELSE 'odd' END AS cat, "
                               "concat('v', id) AS v, CASE WHEN id % 50 = 7 THEN double('NaN') ELSE id / 10 END AS x "
                               f"FROM range({lo}, {lo + 500})"))
        t.delete_by_keys(spark.sql("SELECT 11L AS id, 'odd' AS cat UNION ALL SELECT 600L, 'even'"), ["id"])
        ran.clear()
        t.delete("id < 100 AND v LIKE 'v1%'")
        t.delete("id IN (3, 5, 11, 700) OR x >= 95 OR cat = 'odd' AND x < 1")
        assert len(ran) == 2 and all((r is None) == (where == "spark") for r in ran), ran
        files = {r["file_path"]: r["record_count"] for r in t.plan_files().collect()}
        results.append((sorted(tuple(r) for r in cat.load_table("db.t").to_df().collect()),
                        sorted(files.values()), t.metadata.current_snapshot.summary.get("deleted-records")))
    assert results[0] == results[1]
    nan = {i for i in range(1000) if i % 50 == 7}  # (NaN is greater than 95, and not less than 1)
    gone = {11, 600} | {i for i in range(100) if str(i).startswith("1")} | {3, 5, 700} | \
        {i for i in range(1000) if i >= 950 or i in nan} | {i for i in range(1, 10, 2) if i not in nan}
    assert {r[0] for r in results[0][0]} == set(range(1000)) - gone
