"""Metadata tables on sparkberg-written tables (Java equality is checked in the interop suite): they agree
with the table's own metadata, the plan, and the rows."""
import re

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

import sparkberg
from sparkberg.errors import ValidationError
from sparkberg.inspect import LOCAL_TABLES, METADATA_TABLES

pytestmark = pytest.mark.spark


@pytest.fixture
def table(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.mt", "id bigint, cat string, v double", partition_by=["cat"],
                         properties={"format-version": "3", "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, CASE WHEN id % 2 = 0 THEN 'even' ELSE 'odd' END AS cat, CAST(id * 1.5 AS double) AS v "
                       "FROM range(0, 40)"))
    t.append(spark.sql("SELECT 100L AS id, 'odd' AS cat, CAST('NaN' AS double) AS v"))
    t.delete("id % 10 = 3")
    return t


def test_every_table_has_rows_and_unknown_names_are_named(table):
    for name in METADATA_TABLES:
        assert table.metadata_table(name).count() > 0, name
    with pytest.raises(ValidationError, match="unknown metadata table 'filez'"):
        table.metadata_table("filez")


def test_files_agree_with_the_plan_and_the_rows(table):
    files = table.metadata_table("files")
    plan = table.plan_files().collect()
    assert {r["file_path"] for r in files.filter("content = 0").collect()} == {r["file_path"] for r in plan}
    dvs = files.filter("content = 1").collect()
    assert {r["file_format"] for r in dvs} == {"PUFFIN"} and all(r["referenced_data_file"] for r in dvs)
    assert table.metadata_table("position_deletes").count() == sum(r["record_count"] for r in dvs) == 4
    # readable metrics are the decoded bounds
    m = files.filter("content = 0").select(F.min("readable_metrics.id.lower_bound"),
                                           F.max("readable_metrics.id.upper_bound"),
                                           F.sum("readable_metrics.v.nan_value_count")).first()
    assert tuple(m) == (0, 100, 1)
    parts = {r["partition"]["cat"]: r for r in table.metadata_table("partitions").collect()}
    assert parts["odd"]["record_count"] == 21 and parts["odd"]["position_delete_record_count"] == 4
    assert parts["even"]["position_delete_file_count"] == 0
    assert parts["odd"]["last_updated_snapshot_id"] == table.metadata.current_snapshot_id


def test_snapshots_history_and_entries(table):
    snaps = table.metadata_table("snapshots").orderBy("committed_at").collect()
    assert [r["snapshot_id"] for r in snaps] == [s.snapshot_id for s in table.metadata.snapshots]
    assert [r["operation"] for r in snaps] == ["append", "append", "delete"]
    assert "operation" not in snaps[0]["summary"] and snaps[0]["summary"]["added-records"] == "40"
    assert all(r["is_current_ancestor"] for r in table.metadata_table("history").collect())
    first = table.metadata.snapshots[0].snapshot_id
    assert table.metadata_table("files", snapshot_id=first).count() == 2
    assert table.metadata_table("all_manifests").count() >= 4
    statuses = {r["status"] for r in table.metadata_table("all_entries").collect()}
    assert 1 in statuses
    refs = table.metadata_table("refs").collect()
    assert [(r["name"], r["type"]) for r in refs] == [("main", "BRANCH")]


def _pickled(df) -> bool:
    """Whether reading ``df`` unpickles Python rows in a Python worker (an RDD of PySpark's pickled rows)."""
    return "PythonRDD" in df._jdf.queryExecution().toRdd().toDebugString()


def test_rows_made_on_the_driver_are_read_without_a_python_worker(spark, table):
    """``local_dataframe`` gives the rows PySpark's ``createDataFrame`` gives, of every kind of column, held as
    Arrow by Spark instead of pickled: so are the metadata tables made of the table's metadata alone, and the
    results of maintenance."""
    import datetime as dt

    from sparkberg.spark.frames import local_dataframe
    ddl = ("i bigint, s string, b boolean, m map<string,string>, st struct<a: int, b: string>, arr array<bigint>, "
           "bin binary, d date, ts timestamp, n int")
    utc = dt.timezone.utc
    for n in (0, 3, 1500):
        rows = [(i, f"s{i}", i % 2 == 0, {"k": str(i)}, (i, "x") if i % 3 else None, [i, i + 1], bytes([i % 256]),
                 dt.date(2024, 1, 1) + dt.timedelta(days=i % 30),
                 dt.datetime(2024, 1, 1, tzinfo=utc) + dt.timedelta(seconds=i), None) for i in range(n)]
        ours = local_dataframe(spark, rows, ddl)
        assert ours.schema == spark.createDataFrame(rows, ddl).schema
        assert ours.collect() == spark.createDataFrame(rows, ddl).collect()
        assert _pickled(spark.createDataFrame(rows, ddl)) and not _pickled(ours)
    for name in ("snapshots", "history", "refs", "metadata_log_entries", "manifests", "all_manifests"):
        assert not _pickled(table.metadata_table(name)), name
    assert not _pickled(table.rewrite_manifests())


def _rows(df) -> list[str]:
    return sorted(repr(tuple(r)) for r in df.collect())


def _plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def _python_stage(df) -> bool:
    """Whether ``df``'s plan runs a Python stage (``mapInArrow``)."""
    return "MapInArrow" in _plan(df)


def test_tables_of_entries_decoded_on_the_driver_equal_those_a_python_stage_decodes(table, monkeypatch):
    """A small table's manifests are decoded on the driver (``DRIVER_ENTRIES``), a large one's by a Python stage:
    every metadata table is the same either way, every column and a few."""
    import sparkberg.inspect as inspect_
    of_entries = ("entries", "all_entries", "files", "data_files", "delete_files", "all_files", "all_data_files",
                  "all_delete_files", "partitions")
    driver = {name: table.metadata_table(name) for name in METADATA_TABLES}
    assert not any(_python_stage(driver[name]) for name in of_entries)
    monkeypatch.setattr(inspect_, "DRIVER_ENTRIES", -1)
    for name in METADATA_TABLES:
        staged = table.metadata_table(name)
        assert name not in of_entries or _python_stage(staged), name
        assert staged.schema == driver[name].schema, name
        assert _rows(staged) == _rows(driver[name]), name
        cols = staged.columns[:2]
        assert _rows(table.metadata_table(name, columns=cols)) == _rows(driver[name].select(*cols)), name


def test_a_table_of_some_columns_holds_what_the_whole_table_holds_of_them(table):
    """``columns=``: the rows of those columns, in the order given, for every table and a column or none of each
    (the tables of files and entries then decode only those: nothing of the metrics for ``file_path``)."""
    from sparkberg.avro.columnar import METRIC_COLUMNS
    from sparkberg.inspect import MetadataDecoder
    from sparkberg.planning.entries import PartitionLayout
    for name in METADATA_TABLES:
        whole = table.metadata_table(name)
        cols = whole.columns
        for picked in ([], [cols[0]], [cols[-1]], [cols[-1], cols[0]], [c.upper() for c in cols[1:3]]):
            some = table.metadata_table(name, columns=picked)
            assert some.columns == [whole.columns[[c.lower() for c in cols].index(p.lower())] for p in picked]
            if picked:
                assert _rows(some) == _rows(whole.select(*picked)), (name, picked)
                if name in LOCAL_TABLES:  # (made of the metadata on the driver: of those columns alone)
                    plan = some._jdf.queryExecution().analyzed().toString().lower()
                    held = {c for c in cols if re.search(rf"(?<![a-z_]){c.lower()}#", plan)}
                    assert held == {c for c in cols if c.lower() in {p.lower() for p in picked}}, (name, picked)
            assert some.count() == whole.count(), (name, picked)
        with pytest.raises(ValidationError, match=f"metadata table {name} has no column 'nope'; its columns are"):
            table.metadata_table(name, columns=["nope"])
    decoder = MetadataDecoder(PartitionLayout(table.metadata), table.schema(), columns=["file_path"])
    assert decoder.schema.names == ["file_path"] and decoder._needed.isdisjoint(METRIC_COLUMNS)
    readable = MetadataDecoder(PartitionLayout(table.metadata), table.schema(), columns=["readable_metrics"])
    assert readable.schema.names == ["readable_metrics"] and set(METRIC_COLUMNS) <= readable._needed


def test_sql_reads_of_a_metadata_table_decode_the_columns_the_query_names(spark, warehouse, table, monkeypatch):
    calls = []
    real = type(table).metadata_table

    def spy(self, name, snapshot_id=None, columns=None):
        calls.append((name, None if columns is None else list(columns)))
        return real(self, name, snapshot_id, columns)
    monkeypatch.setattr(type(table), "metadata_table", spy)
    cat = sparkberg.catalog(spark, warehouse)
    whole = table.metadata_table("files")
    calls.clear()
    cases = [
        ("SELECT count(*) FROM db.mt.files", [], [(whole.count(),)]),
        ("SELECT sum(record_count) AS n FROM db.mt.files WHERE content = 0", ["content", "record_count"],
         [tuple(whole.where("content = 0").agg(F.sum("record_count")).first())]),
        ("SELECT f.FILE_PATH, readable_metrics.id.lower_bound FROM db.mt.files AS f WHERE content = 0",
         ["content", "file_path", "readable_metrics"],
         whole.where("content = 0").select("file_path", "readable_metrics.id.lower_bound").collect()),
        ("SELECT data_file.record_count FROM db.mt.entries", ["data_file"],
         table.metadata_table("entries").select("data_file.record_count").collect()),
        ("SELECT * FROM db.mt.files", None, whole.collect()),
        ("SELECT sum(length), max(partition_spec_id) FROM db.mt.manifests", ["length", "partition_spec_id"],
         [tuple(table.metadata_table("manifests").agg(F.sum("length"), F.max("partition_spec_id")).first())]),
        ("SELECT operation FROM db.mt.snapshots WHERE snapshot_id > 0", ["snapshot_id", "operation"],
         table.metadata_table("snapshots").where("snapshot_id > 0").select("operation").collect()),
        ("SELECT count(x) FROM (SELECT struct(*) AS x FROM db.mt.files)", None, [(whole.count(),)]),
    ]
    for query, columns, expected in cases:
        calls.clear()
        got = sparkberg.sql(spark, query, catalog=cat).collect()
        assert calls == [(query.split("db.mt.")[1].split()[0].rstrip(")"), columns)], query
        if expected is not None:
            assert sorted(map(repr, map(tuple, got))) == sorted(map(repr, map(tuple, expected))), query


def test_a_count_of_a_metadata_table_made_on_the_driver_runs_no_spark_job(spark, warehouse, table):
    """``SELECT count(*) FROM ns.t.<metadata table>``: the rows the driver made the table of, where it made it
    (EXPLAIN says so); the same count as Spark's of every metadata table."""
    import sparkberg.inspect as inspect_
    cat = sparkberg.catalog(spark, warehouse)
    for name in METADATA_TABLES:
        query = f"SELECT count(*), count(1) AS n FROM db.mt.{name}"
        want = table.metadata_table(name).toDF(*table.metadata_table(name).columns).count()
        got = sparkberg.sql(spark, query, catalog=cat)
        assert got.columns == ["count(1)", "n"] and tuple(got.first()) == (want, want), name
        explained = sparkberg.sql(spark, f"EXPLAIN {query}", catalog=cat).first()[0]
        driver = name not in ("partitions", "position_deletes")
        assert (f"count of db.mt.{name}: its {want} rows, known on the driver" in explained) == driver, explained
    filtered = sparkberg.sql(spark, "SELECT count(*) FROM db.mt.files WHERE content = 0", catalog=cat).first()[0]
    assert filtered == table.metadata_table("files").where("content = 0").count()
    big = inspect_.DRIVER_ENTRIES
    try:
        inspect_.DRIVER_ENTRIES = -1  # (decoded by a Python stage: counted by the manifest lists, else by Spark)
        for name in METADATA_TABLES:
            staged = table.metadata_table(name)
            want = len(staged.collect())
            explained = sparkberg.sql(spark, f"EXPLAIN SELECT count(*) FROM db.mt.{name}", catalog=cat).first()[0]
            listed = name not in ("partitions", "position_deletes")
            assert (f"count of db.mt.{name}: its {want} rows, known on the driver" in explained) == listed, explained
            assert ("by Spark" in explained) == (not listed), explained
            assert sparkberg.sql(spark, f"SELECT count(*) FROM db.mt.{name}", catalog=cat).first()[0] == want
            assert staged.count() == want and table.metadata_table(name, columns=[]).count() == want, name
    finally:
        inspect_.DRIVER_ENTRIES = big


# (metadata table, a query of it through sparkberg.sql that brings its rows together, the same over the DataFrame)
GATHERING = [
    ("snapshots", "SELECT max(committed_at), count(DISTINCT operation) FROM {t}",
     lambda df: df.agg(F.max("committed_at"), F.countDistinct("operation"))),
    ("history", "SELECT count(*) FILTER (WHERE is_current_ancestor) FROM {t}",
     lambda df: df.agg(F.count(F.when(F.col("is_current_ancestor"), 1)))),
    ("refs", "SELECT max(snapshot_id) FROM {t}", lambda df: df.agg(F.max("snapshot_id"))),
    ("manifests", "SELECT path FROM {t} ORDER BY length DESC, path", lambda df: df.orderBy(F.desc("length"), "path")
     .select("path")),
    ("all_manifests", "SELECT content, count(*) FROM {t} GROUP BY content ORDER BY content",
     lambda df: df.groupBy("content").count().orderBy("content")),
    ("files", "SELECT content, sum(record_count) FROM {t} GROUP BY content ORDER BY content",
     lambda df: df.groupBy("content").agg(F.sum("record_count")).orderBy("content")),
    ("entries", "SELECT DISTINCT status FROM {t} ORDER BY status", lambda df: df.select("status").distinct()
     .orderBy("status")),
    ("metadata_log_entries", "SELECT file, row_number() OVER (ORDER BY timestamp) FROM {t}",
     lambda df: df.selectExpr("file", "row_number() OVER (ORDER BY timestamp)")),
]


def test_a_query_that_brings_rows_together_reads_a_table_made_on_the_driver_in_one_task(spark, warehouse, table,
                                                                                          monkeypatch):
    """A metadata table made on the driver is a local relation, which Spark plans as a scan of unknown
    partitioning: an aggregate, DISTINCT, ORDER BY or a window over it would shuffle its rows. ``sparkberg.sql``
    reads it in one partition for such a query (no exchange, as Iceberg Java's one-task scan of it), and as the
    local relation itself for any other, whose collect runs no job; the partitions table sums the entries decoded
    on the driver in one task too. The answers are Spark's over the DataFrame. A table decoded by a Python stage
    keeps its tasks."""
    import sparkberg.inspect as inspect_
    cat = sparkberg.catalog(spark, warehouse)
    for name, query, same in GATHERING:
        got = sparkberg.sql(spark, query.format(t=f"db.mt.{name}"), catalog=cat)
        plan = _plan(got)
        assert "Exchange" not in plan and "Coalesce 1" in plan, (name, plan)
        assert [tuple(r) for r in got.collect()] == [tuple(r) for r in same(table.metadata_table(name)).collect()]
    assert "Exchange" not in _plan(table.metadata_table("partitions"))
    projected = sparkberg.sql(spark, "SELECT snapshot_id, operation FROM db.mt.snapshots WHERE snapshot_id > 0",
                              catalog=cat)
    assert _plan(projected).startswith("LocalTableScan"), _plan(projected)
    monkeypatch.setattr(inspect_, "DRIVER_ENTRIES", -1)
    staged = sparkberg.sql(spark, "SELECT content, sum(record_count) FROM db.mt.files GROUP BY content", catalog=cat)
    assert "Coalesce" not in _plan(staged) and "Exchange" in _plan(staged), _plan(staged)
    assert "Coalesce" not in _plan(table.metadata_table("partitions"))


def test_the_metadata_tables_read_each_manifest_list_once_per_process(spark, table, monkeypatch):
    """A manifest list never changes once written: the metadata tables keep the ones they read in the process's
    memory (as Iceberg Java's cached table keeps its snapshots' manifests), so a repeated query of them reads none
    again, and a new snapshot's list is read once; what they show is the same."""
    from sparkberg.avro import cache as C
    C._LISTS.clear()
    lists = {s.manifest_list for s in table.metadata.snapshots}
    read = []
    real = type(table.io).read
    monkeypatch.setattr(type(table.io), "read", lambda io, location: read.append(location) or real(io, location))
    first = sorted(tuple(r) for r in table.metadata_table("all_manifests").collect())
    assert set(read) & lists == lists and len(read) == len(set(read))
    read.clear()
    assert sorted(tuple(r) for r in table.metadata_table("all_manifests").collect()) == first
    assert sorted(tuple(r) for r in table.metadata_table("manifests").collect()) == \
        sorted(r[:-1] for r in first if r[-1] == table.metadata.current_snapshot_id)
    assert not set(read) & lists, read
    table.append(spark.sql("SELECT 7L AS id, 'odd' AS cat, 1.0D AS v"))
    read.clear()  # (the commit read its parent's list itself)
    table.metadata_table("all_manifests").collect()
    assert [p for p in read if p.endswith(".avro") and "snap-" in p] == [table.metadata.current_snapshot.manifest_list]


@pytest.mark.parametrize("where", ["driver", "python stage"])
def test_partitions_keep_signed_zeros_apart_and_nans_together(spark, warehouse, monkeypatch, where):
    """-0.0 and 0.0 are two partitions (two files' paths, as Iceberg Java writes and compares them), every NaN one:
    the partitions table shows a row for each, with its own sign, whether its entries are added up on the driver or
    by a Python stage, and the local reference (the CLI's) agrees."""
    import sparkberg.inspect as inspect_
    from sparkberg.jobs import metadata_view
    if where == "python stage":
        monkeypatch.setattr(inspect_, "DRIVER_ENTRIES", -1)
    t = sparkberg.catalog(spark, warehouse).create_table("db.zeros", "id bigint, p double", partition_by=["p"])
    for values in ("(1L, -0.0D)", "(2L, 0.0D)", "(3L, CAST('NaN' AS double))", "(4L, CAST('NaN' AS double))"):
        t.append(spark.sql(f"SELECT * FROM VALUES {values} AS v(id, p)"))

    def shown(rows):
        return sorted((str(r["partition"]["p"]), r["record_count"], r["file_count"]) for r in rows)
    assert shown(t.metadata_table("partitions").collect()) == [("-0.0", 1, 1), ("0.0", 1, 1), ("nan", 2, 2)]
    assert shown(metadata_view.partitions(t)) == shown(t.metadata_table("partitions").collect())


def test_a_staged_table_of_entries_is_counted_by_the_manifest_lists(spark, warehouse, monkeypatch):
    """The tables of entries and files decoded by a Python stage are counted by their manifest lists' counts of
    added, existing and deleted entries, with no Spark job: on a table with entries of every status (a partition's
    files deleted whole, rows deleted by position files, a compaction), each count is the number of rows the stage
    returns, for the current snapshot, an older one and every snapshot's manifests."""
    import sparkberg.inspect as inspect_
    t = sparkberg.catalog(spark, warehouse).create_table(
        "db.counted", "id bigint, cat string", partition_by=["cat"],
        properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    for lo in (0, 30, 60):
        t.append(spark.sql(f"SELECT id, CAST(id % 3 AS string) AS cat FROM range({lo}, {lo + 30})"))
    t.delete("cat = '0'")  # (whole files: DELETED entries)
    t.delete("id % 7 = 0")  # (position delete files: a delete manifest)
    t.rewrite_data_files()  # (a compaction: DELETED and ADDED entries, EXISTING ones carried)
    monkeypatch.setattr(inspect_, "DRIVER_ENTRIES", -1)
    older = t.metadata.snapshots[2].snapshot_id
    for name in ("entries", "all_entries", "files", "data_files", "delete_files", "all_files", "all_data_files",
                 "all_delete_files"):
        for snapshot_id in (None, older):
            staged = t.metadata_table(name, snapshot_id=snapshot_id)
            rows = len(staged.collect())
            assert _python_stage(staged) or not rows, name  # (an older snapshot has no delete manifest)
            assert inspect_.known_count(t.metadata_table(name, snapshot_id=snapshot_id, columns=[])) == rows, name
            assert staged.count() == rows, name
    statuses = {r["status"] for r in t.metadata_table("all_entries").collect()}
    assert statuses == {0, 1, 2}, statuses
    # decoded on the driver, the same tables are counted by the same counts, before any manifest is decoded
    monkeypatch.setattr(inspect_, "DRIVER_ENTRIES", 50_000)
    decoded = []
    real = inspect_.MetadataDecoder.load_many
    monkeypatch.setattr(inspect_.MetadataDecoder, "load_many", lambda self, *a: decoded.append(1) or real(self, *a))
    for name in ("entries", "all_entries", "files", "data_files", "delete_files", "all_files", "all_data_files",
                 "all_delete_files"):
        local = t.metadata_table(name, columns=["status" if "entries" in name else "content"])
        n = local.count()
        assert not decoded and not _python_stage(local), name
        assert n == len(local.collect()) and decoded, name
        decoded.clear()


def test_a_manifest_list_without_counts_leaves_the_count_to_spark():
    from sparkberg.format.manifests import MANIFEST_DATA, MANIFEST_DELETES, ManifestFile
    from sparkberg.inspect import listed_entries
    data = ManifestFile("d.avro", 1, 0, 1, MANIFEST_DATA, added_files_count=3, existing_files_count=4,
                        deleted_files_count=5)
    deletes = ManifestFile("p.avro", 1, 0, 1, MANIFEST_DELETES, added_files_count=1, existing_files_count=0,
                           deleted_files_count=2)
    assert listed_entries([data, deletes], None) == 15
    assert listed_entries([data, deletes], (0, 1, 2)) == 8
    assert listed_entries([data], (0,)) == 7 and listed_entries([deletes], (1, 2)) == 1
    assert listed_entries([deletes], (1,)) is None  # (a delete manifest may hold equality deletes too)
    assert listed_entries([data], (1, 2)) is None
    v1 = ManifestFile("v1.avro", 1, 0, 1, MANIFEST_DATA)  # (v1's counts are optional)
    assert listed_entries([data, v1], None) is None and listed_entries([v1], (0,)) is None
    assert listed_entries([], (0,)) == 0


def test_timestamps_keep_their_zone_whatever_the_session_s_timestamp_type(spark, warehouse):
    """``spark.sql.timestampType=TIMESTAMP_NTZ`` makes a bare ``timestamp`` in Spark's DDL mean one without a zone:
    the metadata tables' commit times and a ``timestamp`` column's readable bounds stay timestamps with a zone, as
    Iceberg Java's are, whatever the session says."""
    from sparkberg.spark import types as S
    t = sparkberg.catalog(spark, warehouse).create_table("db.zoned_mt", "id bigint, ts timestamp")
    t.append(spark.sql("SELECT 1L AS id, TIMESTAMP '2024-01-01 00:00:00Z' AS ts"))
    want = {name: t.metadata_table(name).schema for name in METADATA_TABLES}
    S._parsed_ddl.cache_clear()  # (what the process parsed so far, under the default)
    spark.conf.set("spark.sql.timestampType", "TIMESTAMP_NTZ")
    try:
        got = {name: t.metadata_table(name).schema for name in METADATA_TABLES}
    finally:
        spark.conf.unset("spark.sql.timestampType")
        S._parsed_ddl.cache_clear()  # (nothing parsed under the setting outlives it)
    assert got == want
    assert isinstance(got["snapshots"]["committed_at"].dataType, T.TimestampType)
    assert isinstance(got["files"]["readable_metrics"].dataType["ts"].dataType["lower_bound"].dataType,
                      T.TimestampType)
