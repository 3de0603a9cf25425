"""SQL views over the ``sparkberg`` data source (Spark 4.1+): planned by each query with its filters, so a
``WHERE`` prunes files and every query sees the table's current snapshot; the rows are those of ``to_df``."""
import datetime as dt
import os
from decimal import Decimal

import pytest

import sparkberg
from sparkberg.sql.views import _source_supported
from test_read import FILTERS, arrow_rows, pyi, spark_rows  # noqa: F401 - pyi: the PyIceberg tables fixture

pytestmark = pytest.mark.skipif("not _supported()", reason="Python data sources take filters from Spark 4.1")


def _supported():
    import pyspark
    return tuple(int(p) for p in pyspark.__version__.split(".")[:2]) >= (4, 1)


@pytest.fixture
def plain(spark):
    """A session with Spark's default settings for what sparkberg's views set (filter pushdown off)."""
    s = spark.newSession()
    s.conf.unset("spark.sql.python.filterPushdown.enabled")
    s.conf.set("spark.sql.session.timeZone", "UTC")
    return s


def _rows(df):
    return sorted(tuple(r) for r in df.collect())


def _partitioned(spark, tmp_path, catalog_uri=None, **kw):
    cat = sparkberg.catalog(spark, catalog_uri or str(tmp_path / "wh"), **kw)
    t = cat.create_table("db.events", "id bigint, k int, s string", partition_by=["k"],
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    for k in range(6):
        t.append(spark.sql(f"SELECT id, {k} AS k, CAST(id AS string) AS s FROM range({k * 100}, {k * 100 + 100})"))
    return cat, t


def test_a_where_reads_only_the_files_that_can_match(plain, tmp_path):
    assert _source_supported(plain)
    cat, t = _partitioned(plain, tmp_path)
    t.delete("id % 10 = 0")  # position deletes in every partition
    cat.register_views(plain)
    assert plain.conf.get("spark.sql.python.filterPushdown.enabled") == "true"
    assert plain.sql("SELECT count(*) FROM events").first()[0] == 540
    # the files a WHERE cannot match are removed: a query that read one would fail
    plan = {r["file_path"]: r for r in t.plan_files().collect()}
    kept = {p for p, r in plan.items() if r["partition"]["k"] == 3}
    for p in set(plan) - kept:
        os.remove(p.replace("file:", "", 1) if p.startswith("file:") else p)
    got = _rows(plain.sql("SELECT id, s FROM events WHERE k = 3"))
    assert got == [(i, str(i)) for i in range(300, 400) if i % 10], got[:5]
    # by metrics (id bounds) too, not only by partition
    assert plain.sql("SELECT count(*) FROM events WHERE id BETWEEN 310 AND 319").first()[0] == 9
    assert plain.sql("SELECT count(*) FROM events WHERE id IN (305, 999999) AND s IS NOT NULL").first()[0] == 1
    with pytest.raises(Exception, match="does not exist"):
        plain.sql("SELECT count(*) FROM events").collect()


def test_views_show_commits_made_anywhere(plain, tmp_path):
    cat, t = _partitioned(plain, tmp_path, f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "wh"),
                          name="prod")
    cat.register_views(plain)
    other = plain.newSession()  # (another session: it re-registers nothing of this one's)
    elsewhere = sparkberg.catalog(other, f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "wh"),
                                  name="prod").load_table("db.events")
    elsewhere.append(other.sql("SELECT 1000L AS id, 9 AS k, 'x' AS s"))
    elsewhere.delete("k = 0")
    assert plain.sql("SELECT count(*) FROM events").first()[0] == 501
    assert _rows(plain.sql("SELECT * FROM events WHERE k = 9")) == [(1000, 9, "x")]


@pytest.mark.parametrize("version", [2, 3])
def test_deletes_of_every_kind_read_as_to_df(spark, tmp_path, version):
    cat = sparkberg.catalog(spark, str(tmp_path / "wh"))
    t = cat.create_table("db.m", "id bigint, g string, v double, s string", partition_by=["g"],
                         properties={"format-version": str(version), "write.delete.mode": "merge-on-read",
                                     "write.update.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, IF(id % 2 = 0, 'a', 'b') AS g, id / 4 AS v, CAST(id AS string) AS s "
                       "FROM range(0, 400)"))
    t.append(spark.sql("SELECT id, 'c' AS g, id / 4 AS v, IF(id < 420, NULL, 'x') AS s FROM range(400, 450)"))
    t.delete("id % 7 = 0")  # position deletes, or DVs on v3
    t.delete_by_keys(spark.sql("SELECT id, CASE WHEN id >= 400 THEN 'c' WHEN id % 2 = 0 THEN 'a' ELSE 'b' END AS g "
                               "FROM range(0, 450, 11)"), ["id"])  # equality deletes
    t.delete_by_keys(spark.sql("SELECT 'c' AS g, CAST(NULL AS string) AS s"), ["g", "s"])  # null equals null
    t.update({"v": "v + 1000"}, "id % 13 = 0")
    t.register_views("m")
    assert _rows(spark.sql("SELECT * FROM m")) == _rows(t.to_df())
    assert _rows(spark.sql("SELECT * FROM m WHERE g = 'b' AND v > 10")) == _rows(t.to_df("g = 'b' AND v > 10"))
    assert spark.sql("SELECT count(*) FROM m WHERE g = 'c'").first()[0] == len([i for i in range(420, 450)
                                                                                if i % 7 and i % 11])


def test_files_imported_from_a_hive_layout_show_their_partition_values(spark, tmp_path):
    # the files lack the identity partition columns (they are in the directory names): the view shows the values,
    # as to_df does (spec "Column Projection")
    src = str(tmp_path / "hive")
    spark.sql("SELECT id, IF(id % 2 = 0, 'eu', 'us') AS region, date_add(DATE'2024-01-01', CAST(id % 3 AS int)) AS d "
              "FROM range(0, 30)").write.partitionBy("region", "d").parquet(src)
    cat = sparkberg.catalog(spark, str(tmp_path / "wh"))
    t = cat.create_table("db.imp", "id bigint, region string, d date", partition_by=["region", "d"])
    t.add_files(src)
    t.register_views("imp")
    expected = sorted((i, "eu" if i % 2 == 0 else "us", dt.date(2024, 1, 1) + dt.timedelta(days=i % 3))
                      for i in range(30))
    assert _rows(t.to_df()) == expected
    assert _rows(spark.sql("SELECT * FROM imp")) == expected
    assert _rows(spark.sql("SELECT id FROM imp WHERE region = 'us' AND d = DATE'2024-01-02'")) == [(1,), (7,), (13,),
                                                                                                  (19,), (25,)]


def test_nested_and_added_columns_read_as_to_df(spark, tmp_path):
    cat = sparkberg.catalog(spark, str(tmp_path / "wh"))
    t = cat.create_table("db.n", "id int, s struct<a: int, b: string>, l array<struct<x: int>>, m map<string, int>",
                         properties={"format-version": "2"})
    t.append(spark.sql("SELECT 1 AS id, named_struct('a', 1, 'b', 'one') AS s, array(named_struct('x', 5)) AS l, "
                       "map('k', 1) AS m"))
    t.add_columns("extra string")
    t.append(spark.sql("SELECT 2 AS id, named_struct('a', 2, 'b', 'two') AS s, array(named_struct('x', 6)) AS l,"
                       " map('j', 2) AS m, 'e' AS extra"))
    t.register_views("n")
    assert _rows(spark.sql("SELECT * FROM n")) == _rows(t.to_df())
    assert spark.sql("SELECT s.b, extra FROM n WHERE id = 1").first() == ("one", None)
    assert spark.sql("SELECT count(*) FROM n WHERE s.a = 2").first()[0] == 1


def test_filters_of_every_type_prune_but_never_drop_a_matching_row(spark, tmp_path):
    cat = sparkberg.catalog(spark, str(tmp_path / "wh"))
    t = cat.create_table("db.types", "id bigint, ts timestamp, ntz timestamp_ntz, d date, dec decimal(10, 2), "
                         "b binary, s string", properties={"format-version": "2"})
    for k in range(4):
        t.append(spark.sql(
            f"SELECT id, TIMESTAMP '2026-01-0{k + 1} 10:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) AS ts, "
            f"TIMESTAMP_NTZ '2026-01-0{k + 1} 10:00:00' AS ntz, DATE '2026-02-0{k + 1}' AS d, "
            f"CAST(id / 8 AS decimal(10, 2)) AS dec, CAST(CAST(id AS string) AS binary) AS b, "
            f"concat('s', CAST(id AS string)) AS s FROM range({k * 10}, {k * 10 + 10})"))
    t.register_views("types")
    session = spark.newSession()
    session.conf.set("spark.sql.session.timeZone", "America/New_York")  # (literals read in the session's zone)
    sparkberg.catalog(session, str(tmp_path / "wh")).register_views(session)
    for where in ["ts = TIMESTAMP '2026-01-03 10:00:21'", "ts >= TIMESTAMP '2026-01-04 00:00:00'",
                  "ntz = TIMESTAMP_NTZ '2026-01-02 10:00:00'", "d < DATE '2026-02-03'", "dec = 2.50",
                  "b = X'3231'", "s LIKE 's3%'", "s IN ('s1', 's39', 'zz')", "NOT (d = DATE '2026-02-01')",
                  "d IS NULL OR id = 5", "dec <=> 1.25"]:
        got = spark.sql(f"SELECT id FROM types WHERE {where}").collect()
        want = t.to_df().filter(where).select("id").collect()
        assert sorted(got) == sorted(want) and want, where
    assert session.sql("SELECT count(*) FROM types WHERE ts >= TIMESTAMP '2026-01-03 05:00:00'").first()[0] == 20


def test_schema_of_the_view_and_decimal_and_dates_roundtrip(spark, tmp_path):
    cat = sparkberg.catalog(spark, str(tmp_path / "wh"))
    ddl = "id int NOT NULL, d date, dec decimal(38, 10), ts timestamp, s struct<a: int NOT NULL, b: string>"
    t = cat.create_table("db.vals", ddl, properties={})
    t.append(spark.createDataFrame([(1, dt.date(1000, 1, 1), Decimal("12345.0000000001"),
                                     dt.datetime(1200, 6, 1, 12, tzinfo=dt.timezone.utc), (1, "x"))], ddl))
    t.register_views("vals")
    assert [(f.name, f.dataType, f.nullable) for f in spark.table("vals").schema] == \
        [(f.name, f.dataType, f.nullable) for f in t.to_df().schema]
    assert _rows(spark.sql("SELECT * FROM vals")) == _rows(t.to_df())


@pytest.mark.parametrize("name", ["all_v1", "all_v2", "evolve"])
def test_tables_written_by_pyiceberg_read_as_pyiceberg_reads_them(spark, pyi, tmp_path, name):  # noqa: F811
    pt = pyi[name]
    cat = sparkberg.catalog(spark, f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("pyi")
    t = cat.register_table(f"pyi.{name}", pt.metadata_location)
    t.register_views(name)
    cols = [f.name for f in t.schema().fields]
    assert spark_rows(spark.sql(f"SELECT * FROM {name}")) == arrow_rows(pt.scan().to_arrow(), cols)
    if name == "all_v2":
        # (the reference is filtered by Spark alone: its Parquet filter pushdown compares doubles as Parquet does,
        # so that `dbl = 0.0` skips a -0.0 that Spark's own `=` matches)
        spark.conf.set("spark.sql.parquet.filterPushdown", "false")
        try:
            for where in FILTERS:
                assert spark_rows(spark.sql(f"SELECT * FROM {name} WHERE {where}")) == \
                    spark_rows(t.to_df().filter(where)), where
        finally:
            spark.conf.unset("spark.sql.parquet.filterPushdown")
