"""Classes of tables and sessions users have, on a session with Spark's default settings (none of the
project's ``spark-defaults.conf``): ancient dates, large metadata tables, partition evolution in ``partitions``,
pruning on binary, fixed and uuid columns, unknown transforms, missing files, workers without sparkberg,
maintenance, row-level operations and transactions."""
import datetime as dt
import glob
import os
import uuid
import pyarrow as pa
import pytest

import sparkberg
from sparkberg.errors import MissingFileError, ValidationError, WorkerEnvironmentError
from sparkberg.inspect import METADATA_TABLES
from sparkberg.format import types as T

pytestmark = pytest.mark.spark

PROJECT_SETTINGS = ("spark.sql.parquet.fieldId.read.enabled", "spark.sql.parquet.fieldId.write.enabled",
                    "spark.sql.parquet.fieldId.read.ignoreMissing")
REBASE = ("spark.sql.parquet.datetimeRebaseModeInRead", "spark.sql.parquet.int96RebaseModeInRead")


@pytest.fixture
def plain(spark):
    """A session of the test run's SparkContext with Spark's default SQL settings for what the project sets."""
    s = spark.newSession()
    for k in PROJECT_SETTINGS:
        s.conf.unset(k)
    s.conf.set("spark.sql.session.timeZone", "UTC")
    return s


ANCIENT = (dt.date(1000, 1, 1), dt.datetime(1200, 6, 1, 12, 0, tzinfo=dt.timezone.utc),
           dt.datetime(1899, 12, 31, 23, 59, 59))


def _ancient_rows(df):
    return sorted((r["id"], r["d"], r["ts"], r["tsn"]) for r in df.collect())


def test_dates_and_timestamps_before_the_gregorian_switch_read_as_written(plain, tmp_path):
    # Spark 3.5 refuses such values in files without Spark's calendar metadata unless told they are proleptic
    # (its default rebase mode is EXCEPTION; 4.x defaults to CORRECTED): reads say CORRECTED themselves
    for k in REBASE:
        plain.conf.set(k, "EXCEPTION")
    cat = sparkberg.catalog(plain, str(tmp_path / "wh"))
    t = cat.create_table("db.ancient", "id int, d date, ts timestamp, tsn timestamp_ntz", partition_by=["year(d)"])
    t.append(plain.sql("SELECT 1 AS id, DATE '1000-01-01' AS d, TIMESTAMP '1200-06-01 12:00:00' AS ts, "
                       "TIMESTAMP_NTZ '1899-12-31 23:59:59' AS tsn UNION ALL "
                       "SELECT 2, DATE '2024-01-01', TIMESTAMP '2024-01-01 00:00:00', "
                       "TIMESTAMP_NTZ '2024-01-01 00:00:00'"))
    expected = (1, ANCIENT[0], ANCIENT[1].replace(tzinfo=None), ANCIENT[2])
    got = _ancient_rows(cat.load_table("db.ancient").to_df())
    assert got[0] == expected
    assert [r["id"] for r in t.to_df(filter="d < DATE '1582-10-15'").collect()] == [1]
    assert all(v == "EXCEPTION" for v in (plain.conf.get(k) for k in REBASE))  # the session is left as it was

    from pyiceberg.catalog.sql import SqlCatalog
    import pyarrow as pa
    pyi = SqlCatalog("pyi", uri=f"sqlite:///{tmp_path}/pyi.db", warehouse=f"file://{tmp_path}/pyi")
    pyi.create_namespace("db")
    arrow = pa.table({"id": pa.array([1], pa.int32()), "d": pa.array([ANCIENT[0]]),
                      "ts": pa.array([ANCIENT[1]], pa.timestamp("us", "UTC")),
                      "tsn": pa.array([ANCIENT[2]], pa.timestamp("us"))})
    pt = pyi.create_table("db.ancient", schema=arrow.schema)
    pt.append(arrow)
    assert _ancient_rows(sparkberg.load_table(plain, pt.metadata_location).to_df()) == [expected]


def _append_files(spark, t, n, start=0):
    """``n`` data files of one partition each (``p``), in one commit: a manifest of ``n`` entries."""
    t.append(spark.range(start, start + n * 3).selectExpr("id", "CAST(id % " + str(n) + " AS int) AS p",
                                                          "CAST(id AS string) AS v").repartition(n, "p"))


def test_every_metadata_table_of_a_table_with_large_manifests(plain, tmp_path):
    # manifests of many entries are decoded into columns, of a few by the reference decoder: both give
    # readable_metrics, so every metadata table works on tables of any size
    cat = sparkberg.catalog(plain, str(tmp_path / "wh"))
    big = cat.create_table("db.big", "id bigint, p int, v string", partition_by=["p"],
                           properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    _append_files(plain, big, 150)
    small = cat.create_table("db.small", "id bigint, p int, v string", partition_by=["p"],
                             properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    _append_files(plain, small, 3)
    for t in (big, small):
        t.delete("id % 7 = 0")
        files = len(glob.glob(os.path.join(t.location.replace("file://", ""), "data", "**", "*.parquet"),
                              recursive=True))
        for name in METADATA_TABLES:
            assert t.metadata_table(name).count() > 0, (t.name, name)
        assert t.metadata_table("all_files").count() == t.metadata_table("files").count() == files
        metrics = t.metadata_table("data_files").selectExpr("min(readable_metrics.id.lower_bound)",
                                                            "max(readable_metrics.id.upper_bound)").first()
        assert tuple(metrics) == (0, t.to_df().agg({"id": "max"}).first()[0])
        parts = t.metadata_table("partitions").collect()
        assert sum(r["record_count"] for r in parts) == t.to_df().count() + sum(
            r["position_delete_record_count"] for r in parts)


def test_metadata_decoders_agree_on_a_manifest_of_many_entries(plain, tmp_path):
    from sparkberg.avro.manifest import read_manifest_list
    from sparkberg.inspect import MetadataDecoder
    from sparkberg.planning.entries import PartitionLayout
    from sparkberg.planning.reference import reference_entries
    cat = sparkberg.catalog(plain, str(tmp_path / "wh"))
    t = cat.create_table("db.t", "id bigint, p int, v string", partition_by=["p"])
    _append_files(plain, t, 100)
    snap = t.current_snapshot()
    mf = read_manifest_list(t.io.read(snap.manifest_list))[0]
    data = t.io.read(mf.manifest_path)
    decoder = MetadataDecoder(PartitionLayout(t.metadata), t.schema())
    columnar = decoder._decode_batch([(mf, 0, data)])
    reference = reference_entries(decoder, mf, 0, data)
    assert columnar.num_rows == len(reference) == 100
    assert columnar.to_pylist() == pa.Table.from_pylist(reference, schema=decoder.schema).to_pylist()


def test_partitions_rows_are_keyed_by_tuple_and_partition_fields(plain, tmp_path):
    # As Iceberg Java 1.10's partitions table: rows are keyed by the tuple in the table's unified partition type
    # and by how many of its fields the file's spec has. A file of the old spec (cat) and one of (cat, day(ts))
    # whose ts is null show the same tuple, in two rows; files of (cat, day(ts)) and of (cat, hour(ts)) with a
    # null ts are one row, with the newer spec (checked against Java's own tables in the interop suite)
    cat = sparkberg.catalog(plain, str(tmp_path / "wh"))
    t = cat.create_table("db.t", "id bigint, cat string, ts timestamp", partition_by=["cat"])
    t.append(plain.sql("SELECT id, 'a' AS cat, CAST(NULL AS timestamp) AS ts FROM range(3)"))
    t.update_spec(["cat", "day(ts)"])
    t.append(plain.sql("SELECT id, 'a' AS cat, CAST(NULL AS timestamp) AS ts FROM range(3, 5) UNION ALL "
                       "SELECT 9, 'a', TIMESTAMP '2024-01-01 10:00:00'"))
    t.update_spec(["cat", "hour(ts)"])
    t.append(plain.sql("SELECT 10L AS id, 'a' AS cat, CAST(NULL AS timestamp) AS ts"))
    rows = sorted(((r["partition"]["cat"], str(r["partition"]["ts_day"]), str(r["partition"]["ts_hour"])),
                   r["spec_id"], r["record_count"], r["file_count"], r["last_updated_snapshot_id"])
                  for r in t.metadata_table("partitions").collect())
    first, second, third = (s.snapshot_id for s in t.metadata.snapshots)
    assert rows == [(("a", "2024-01-01", "None"), 1, 1, 1, second), (("a", "None", "None"), 0, 3, 1, first),
                    (("a", "None", "None"), 2, 3, 2, third)]
    from sparkberg.jobs import metadata_view
    local = sorted(((r["partition"]["cat"], str(r["partition"]["ts_day"]), str(r["partition"]["ts_hour"])),
                    r["spec_id"], r["record_count"], r["file_count"], r["last_updated_snapshot_id"])
                   for r in metadata_view.partitions(t))
    assert local == rows


HIGH_BIT_UUIDS = ["00000000-0000-0000-0000-000000000001", "7fffffff-ffff-ffff-ffff-ffffffffffff",
                  "80000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-fffffffffffe"]


@pytest.fixture
def typed(plain, tmp_path):
    """One file per row: a date, a binary, a fixed[4] and a uuid column (high-bit UUIDs included), and a file
    of nulls and an empty binary."""
    cat = sparkberg.catalog(plain, str(tmp_path / "wh"))
    s = T.Schema((T.NestedField(1, "id", T.LONG), T.NestedField(2, "dt", T.DATE), T.NestedField(3, "bin", T.BINARY),
                  T.NestedField(4, "fx", T.FixedType(4)), T.NestedField(5, "u", T.UUID)))
    t = cat.create_table("db.typed", s)
    for i, u in enumerate(HIGH_BIT_UUIDS):
        t.append(plain.sql(f"SELECT {i}L AS id, date_add(DATE '2024-01-01', {i}) AS dt, X'0{i}' AS bin, "
                           f"X'0{i}000000' AS fx, '{u}' AS u"))
    t.append(plain.sql("SELECT 9L AS id, CAST(NULL AS date) AS dt, X'' AS bin, X'09000000' AS fx, "
                       "CAST(NULL AS string) AS u"))
    return t


@pytest.mark.parametrize("filter,ids,files", [
    ("dt IS NULL OR bin = X''", [9], 1),
    ("bin = X'02'", [2], 1),
    ("bin IN (X'01', X'03')", [1, 3], 2),
    ("fx = X'02000000'", [2], 1),
    ("fx = X'0200'", [], 5),  # (a value of another length: not an Iceberg fixed[4] value, prunes nothing)
    (f"u = '{HIGH_BIT_UUIDS[2]}'", [2], 1),
    (f"u = '{HIGH_BIT_UUIDS[3]}'", [3], 1),
    (f"u > '{HIGH_BIT_UUIDS[1]}'", [2, 3], 2),
    (f"u < '{HIGH_BIT_UUIDS[2]}'", [0, 1], 2),
    (f"u = '{HIGH_BIT_UUIDS[3].upper()}'", [], 5),  # Spark compares strings: not canonical, prunes nothing
])
def test_binary_fixed_and_uuid_bounds_prune_files(typed, filter, ids, files):
    assert sorted(r["id"] for r in typed.to_df(filter=filter).collect()) == ids
    assert typed.plan_files(filter=filter).count() == files


def test_uuid_bounds_are_ordered_as_unsigned_bytes(typed):
    rows = typed.metadata_table("data_files").filter("readable_metrics.u.lower_bound IS NOT NULL").collect()
    for r in rows:
        lower, upper = r["lower_bounds"][5], r["upper_bounds"][5]
        assert lower == upper == uuid.UUID(r["readable_metrics"]["u"]["lower_bound"]).bytes
    assert len(rows) == 4


def _break_transforms(table_dir: str, name: str) -> None:
    """Rename every partition transform of the current metadata file to one no version knows."""
    import json
    path = sorted(glob.glob(os.path.join(table_dir, "metadata", "v*.metadata.json")),
                  key=lambda p: int(os.path.basename(p)[1:].split(".")[0]))[-1]
    with open(path) as f:
        meta = json.load(f)
    for spec in meta["partition-specs"]:
        for field in spec["fields"]:
            field["transform"] = name
    with open(path, "w") as f:
        json.dump(meta, f)


@pytest.mark.parametrize("files", [3, 100])  # the reference decoder, and manifests decoded into columns
def test_a_transform_this_version_does_not_know_prunes_nothing_and_reads(plain, tmp_path, files):
    cat = sparkberg.catalog(plain, str(tmp_path / "wh"))
    t = cat.create_table("db.t", "id bigint, p int, v string", partition_by=["bucket(4, p)", "p"])
    _append_files(plain, t, files)
    _break_transforms(t.location.replace("file://", ""), "future_hash[4]")
    t = cat.load_table("db.t")
    total = files * 3
    for planning in ("local", "distributed"):
        assert t.plan_files(planning=planning).count() == files
        assert t.to_df(planning=planning).count() == total
        assert sorted(r["id"] for r in t.to_df(filter="id = 5 AND p = 2", planning=planning).collect()) == (
            [5] if 5 % files == 2 else [])
    parts = t.metadata_table("partitions").collect()
    assert sum(r["record_count"] for r in parts) == total
    assert {type(r["partition"]["p_bucket"]) for r in parts} == {str}  # its values shown as text
    assert t.to_df(columns=["id", "_partition"]).count() == total
    with pytest.raises(ValidationError, match="unknown transform"):
        t.append(plain.sql("SELECT 1L AS id, 1 AS p, 'x' AS v"))


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("victim", ["manifest list", "manifest", "data file", "delete file"])
def test_a_missing_file_is_named_with_what_references_it(plain, tmp_path, version, victim):
    cat = sparkberg.catalog(plain, str(tmp_path / "wh"))
    t = cat.create_table("db.t", "id bigint, v string", properties={
        "format-version": str(version), "write.delete.mode": "merge-on-read"})
    t.append(plain.range(10).selectExpr("id", "CAST(id AS string) AS v"))
    t.delete("id = 3")
    snap = t.current_snapshot()
    entries = t.metadata_table("entries").collect()
    data = [r["data_file"]["file_path"] for r in entries if r["data_file"]["content"] == 0]
    deletes = [r["data_file"]["file_path"] for r in entries if r["data_file"]["content"] == 1]
    manifests = [r["path"] for r in t.metadata_table("manifests").collect()]
    path = {"manifest list": snap.manifest_list, "manifest": manifests[0], "data file": data[0],
            "delete file": deletes[0]}[victim]
    os.remove(path.replace("file://", "").replace("file:", ""))
    referrer = {"manifest list": f"snapshot {snap.snapshot_id} (its manifest list)",
                "manifest": f"manifest list {snap.manifest_list} of snapshot {snap.snapshot_id}",
                "data file": f"of snapshot {snap.snapshot_id}", "delete file": f"of snapshot {snap.snapshot_id}"}
    # a session that has not read the table yet (one that has keeps the files Spark resolved, and meets a data
    # file that is gone only when it reads it: Spark's FAILED_READ_FILE, which names the file too)
    t = sparkberg.catalog(plain.newSession(), str(tmp_path / "wh")).load_table("db.t")
    actions = [lambda: t.to_df().collect()]
    if victim in ("manifest list", "manifest"):  # (planning reads no data or delete file)
        actions.append(lambda: t.plan_files().collect())
    for action in actions:
        with pytest.raises(MissingFileError) as e:
            action()
        message = str(e.value)
        assert os.path.basename(path) in message and referrer[victim] in message, message
        assert "referenced by" in message and e.value.path is not None


def test_a_worker_that_cannot_import_sparkberg_is_named(spark, tmp_path, python_without_sparkberg):
    # the workers run another interpreter than the driver (here: the venv's, with sparkberg hidden from it)
    python = python_without_sparkberg
    cat = sparkberg.catalog(spark, str(tmp_path / "wh"))
    t = cat.create_table("db.t", "id bigint, v string")
    sc = spark.sparkContext
    before = sc.pythonExec
    sc.pythonExec = str(python)
    sc.setJobGroup("worker-check", "the append of a session whose workers lack sparkberg")
    try:
        with pytest.raises(WorkerEnvironmentError) as e:
            t.append(spark.range(10).selectExpr("id", "CAST(id AS string) AS v"))
        # (issue 90, item 10: told before the first Python stage ran, so no executor logged a failed task's stack)
        assert sc.statusTracker().getJobIdsForGroup("worker-check") == []
    finally:
        sc.pythonExec = before
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    message = str(e.value)
    assert str(python) in message and "PYSPARK_PYTHON" in message and "spark.pyspark.python" in message
    assert "--py-files" in message
    assert cat.load_table("db.t").current_snapshot() is None  # nothing committed
    t.append(spark.range(10).selectExpr("id", "CAST(id AS string) AS v"))
    assert t.to_df().count() == 10


def test_sql_views_show_what_the_session_writes(plain, tmp_path):
    cat = sparkberg.catalog(plain, str(tmp_path / "wh"))
    t = cat.create_table("db.events", "id bigint, cat string", partition_by=["cat"],
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    t.append(plain.sql("SELECT id, IF(id % 2 = 0, 'even', 'odd') AS cat FROM range(10)"))
    names = cat.register_views(plain)
    assert "events" in names and "events__snapshots" in names

    def count(sql):
        return plain.sql(sql).first()[0]
    assert count("SELECT count(*) FROM events") == 10
    t.append(plain.sql("SELECT 100L AS id, 'odd' AS cat"))  # this Table object, another than the views were made of
    assert count("SELECT count(*) FROM events") == 11
    cat.load_table("db.events").delete("id = 4")
    assert count("SELECT count(*) FROM events WHERE id = 4") == 0 and count("SELECT count(*) FROM events") == 10
    assert count("SELECT count(*) FROM events__snapshots") == 3
    assert count("SELECT count(*) FROM events__history") == 3
    t.update(set={"cat": "'x'"}, filter="id = 100")
    assert count("SELECT count(*) FROM events WHERE cat = 'x'") == 1
    # a name registered again for another table stops following the first
    other = cat.create_table("db.other", "id bigint")
    other.register_views("events")
    t.append(plain.sql("SELECT 200L AS id, 'odd' AS cat"))
    assert count("SELECT count(*) FROM events") == 0


@pytest.mark.parametrize("partitioned", [True, False])
def test_a_plan_made_on_the_driver_counts_without_a_spark_job(spark, tmp_path, partitioned):
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F
    cat = sparkberg.catalog(spark, str(tmp_path / "wh"))
    t = cat.create_table("db.t", "id bigint, p int, v string", partition_by=["p"] if partitioned else None,
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    _append_files(spark, t, 6)
    t.delete("id = 2")
    sc = spark.sparkContext
    group = f"known-count-{partitioned}"
    files = t.plan_files(filter="p < 4", planning="local")
    sc.setJobGroup(group, group)
    try:
        n = files.count()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert sc.statusTracker().getJobIdsForGroup(group) == []  # answered from the plan
    assert isinstance(files, DataFrame)
    assert n == files.select(F.count("*")).first()[0] == len(files.collect()) > 0
    if partitioned:
        assert n == 4  # (p 0-3 of 6 files, one each)
    assert files.filter("size(deletes) > 0").count() == 1  # derived DataFrames are Spark's own
    everything = t.plan_files(planning="distributed")
    assert everything.count() == everything.select(F.count("*")).first()[0] >= n


def test_a_plan_made_on_the_driver_is_made_a_dataframe_when_first_used(spark, tmp_path, monkeypatch):
    # a counted plan makes no DataFrame in the JVM; its first other use makes it, once, whichever threads ask,
    # and from then on it is Spark's own DataFrame: columns by attribute and by name, schema, joins, errors
    from concurrent.futures import ThreadPoolExecutor
    from pyspark.sql import Column, DataFrame
    from sparkberg.spark.frames import arrow_dataframe
    cat = sparkberg.catalog(spark, str(tmp_path / "wh"))
    t = cat.create_table("db.t", "id bigint, p int, v string", partition_by=["p"])
    _append_files(spark, t, 6)
    from sparkberg.planning import scan
    made = []
    monkeypatch.setattr(scan, "arrow_dataframe", lambda *a: made.append(1) or arrow_dataframe(*a))
    files = t.plan_files(filter="p < 4", planning="local")
    classic = getattr(spark, "_jsparkSession", None) is not None
    assert isinstance(files, DataFrame) and files.count() == 4
    if classic:
        assert made == [] and "_jdf" not in vars(files)  # (nothing made for the count)
    with ThreadPoolExecutor(4) as pool:
        columns = list(pool.map(lambda _: files.file_path, range(8)))
    assert all(isinstance(c, Column) for c in columns)
    assert made == [1]  # (once, by one of the threads)
    assert files.schema.names[:3] == ["file_path", "file_format", "spec_id"]
    got = files.select(columns[0], files["record_count"]).orderBy("file_path").collect()
    assert [r.record_count for r in got] == [3] * 4 and len({r.file_path for r in got}) == 4
    assert files.join(t.plan_files(filter="p = 1", planning="local"), "file_path").count() == 1
    assert files.count() == 4 and "file_path" in repr(files)
    with pytest.raises(AttributeError):
        files.no_such_column
    with pytest.raises(AttributeError):
        t.plan_files(planning="local").no_such_column  # (also as its first use)


def test_metadata_columns_in_filters_are_found_by_name(spark, tmp_path):
    from pyspark.sql import functions as F
    from sparkberg.expressions.sql import referenced_names
    from sparkberg.read.reader import _expression_text
    cat = sparkberg.catalog(spark, str(tmp_path / "wh"))
    t = cat.create_table("db.t", "id bigint, is_file int, v string", partition_by=["is_file"])
    t.append(spark.sql("SELECT id, CAST(id % 2 AS int) AS is_file, 'x' AS v FROM range(10)"))
    # a user column whose name holds a metadata column's is not one
    for f in ("is_file = 1", F.col("is_file") == 1):
        assert referenced_names(_expression_text(f)) & {"_file", "_pos"} == set()
        assert sorted(r["id"] for r in t.to_df(filter=f).collect()) == [1, 3, 5, 7, 9]
    # metadata columns in SQL text and in a Column are found (the rows are matched to their files for them)
    path = t.plan_files(filter="is_file = 0").first()["file_path"]
    for f in (f"_file = '{path}'", F.col("_file") == path, F.upper(F.col("_file")) == path.upper()):
        assert "_file" in referenced_names(_expression_text(f))
        assert sorted(r["id"] for r in t.to_df(filter=f, columns=["id"]).collect()) == [0, 2, 4, 6, 8]
    assert "_file" not in referenced_names("v = '_file'")  # (inside a string literal)


def test_metadata_columns_a_filter_names_are_there_for_it_alone(spark, tmp_path):
    # the rows take from their file's task only the metadata columns the read returns or filters by; each one a
    # filter names is there for the filter, and gone from what is returned
    cat = sparkberg.catalog(spark, str(tmp_path / "wh"))
    t = cat.create_table("db.t", "id bigint, p int", partition_by=["p"], properties={"format-version": "3"})
    t.append(spark.sql("SELECT id, CAST(id % 2 AS int) AS p FROM range(0, 6)"))
    first_seq = t.metadata.current_snapshot.sequence_number
    t.append(spark.sql("SELECT id, CAST(id % 2 AS int) AS p FROM range(6, 10)"))
    full = t.to_df(columns=["id", "_file", "_spec_id", "_partition", "_row_id",
                            "_last_updated_sequence_number"]).collect()
    assert len({r["_row_id"] for r in full}) == 10
    some_row_id = sorted(r["_row_id"] for r in full)[3]
    cases = {"_row_id": (f"_row_id <= {some_row_id}", lambda r: r["_row_id"] <= some_row_id),
             "_last_updated_sequence_number": (f"_last_updated_sequence_number = {first_seq}",
                                               lambda r: r["_last_updated_sequence_number"] == first_seq),
             "_partition": ("_partition.p = 1", lambda r: r["_partition"]["p"] == 1),
             "_spec_id": ("_spec_id = 0 AND id > 4", lambda r: r["_spec_id"] == 0 and r["id"] > 4)}
    for name, (text, keep) in cases.items():
        got = t.to_df(filter=text, columns=["id"])
        assert got.columns == ["id"], name
        assert sorted(r["id"] for r in got.collect()) == sorted(r["id"] for r in full if keep(r)), name
        with_file = t.to_df(filter=text, columns=["id", "_file"])
        assert with_file.columns == ["id", "_file"], name
        assert sorted((r["id"], r["_file"]) for r in with_file.collect()) == \
            sorted((r["id"], r["_file"]) for r in full if keep(r)), name


def test_a_sql_catalog_on_a_plain_session(plain, tmp_path):
    # the SQL catalog on a session with Spark's defaults: created, written with deletes, read, renamed
    cat = sparkberg.catalog(plain, f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "wh"), name="plain")
    cat.create_namespace("db")
    t = cat.create_table("db.t", "id bigint, p int", partition_by=["p"],
                         properties={"write.delete.mode": "merge-on-read"})
    t.append(plain.sql("SELECT id, CAST(id % 2 AS int) AS p FROM range(0, 10)"))
    t.delete("id < 3")
    cat.rename_table("db.t", "db.u")
    assert sorted(r[0] for r in cat.load_table("db.u").to_df().select("id").collect()) == list(range(3, 10))


def test_maintenance_on_a_plain_session(plain, tmp_path):
    """Every maintenance call, as a user runs it on a session with Spark's default settings."""
    cat = sparkberg.catalog(plain, str(tmp_path / "wh"))
    t = cat.create_table("db.maint", "id bigint, p int, v string", partition_by=["p"], sort_by=["id"],
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    for i in range(4):
        t.append(plain.sql(f"SELECT id, CAST(id % 2 AS INT) AS p, 'x' AS v FROM range({i * 10}, {i * 10 + 10})"))
    t.delete("id % 5 = 0")
    before = sorted(tuple(r) for r in t.to_df().collect())
    first = t.metadata.snapshots[0].snapshot_id

    def one(df):
        return df.collect()[0].asDict()
    assert one(t.rewrite_position_delete_files(options={"rewrite-all": "true"}))["rewritten_delete_files_count"] > 0
    files = t.metadata_table("files").where("content = 0").count()  # (the appends range-distribute: a few each)
    assert files >= 8 and one(t.rewrite_data_files(strategy="sort", options={"min-input-files": "2"}))[
        "rewritten_data_files_count"] == files
    assert one(t.rewrite_data_files(sort_order="zorder(id, v)", options={"rewrite-all": "true"}))[
        "rewritten_data_files_count"] == 2
    assert one(t.rewrite_manifests())["rewritten_manifests_count"] > 0
    assert one(t.expire_snapshots(snapshot_ids=[first]))["deleted_manifest_lists_count"] == 1
    assert t.remove_orphan_files(older_than=int(dt.datetime.now().timestamp() * 1000), dry_run=True).count() == 0
    assert sorted(tuple(r) for r in cat.load_table("db.maint").to_df().collect()) == before


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_row_level_operations_and_a_transaction_on_a_plain_session(plain, tmp_path, mode):
    """MERGE (its join planned by Spark's default settings: 200 shuffle partitions, adaptive execution), a DELETE
    pruned by a semi-join, an UPDATE by a Column and a transaction, as a user runs them."""
    from pyspark.sql import functions as F
    cat = sparkberg.catalog(plain, str(tmp_path / "wh"))
    props = {"format-version": "3", **{f"write.{op}.mode": mode for op in ("delete", "update", "merge")}}
    t = cat.create_table("db.rl", "id bigint, p int, v string", partition_by=["p"], properties=props)
    t.append(plain.sql("SELECT id, CAST(id % 4 AS INT) AS p, 'old' AS v FROM range(0, 400)"))
    ids = dict(t.to_df(columns=["id", "_row_id"]).collect())
    src = plain.sql("SELECT id, CAST(id % 4 AS INT) AS p, 'new' AS v FROM range(390, 410)")
    t.merge(src, "t.id = s.id AND t.p = s.p").when_matched_update_all().when_not_matched_insert_all().execute()
    plain.createDataFrame([(3,), (7,)], "k bigint").createOrReplaceTempView("gone")
    t.delete("id IN (SELECT k FROM gone)")
    t.update({"v": "'col'"}, F.col("id") < 2)
    with t.transaction() as tx:
        tx.update_schema().add_column("note", "string").commit()
        tx.append(plain.sql("SELECT 1000L AS id, 0 AS p, 'tx' AS v, 'n' AS note"))
    got = {r.id: (r.v, r.note, r._row_id) for r in cat.load_table("db.rl").to_df(
        columns=["id", "v", "note", "_row_id"]).collect()}
    assert len(got) == 400 + 10 - 2 + 1 and 3 not in got and 7 not in got
    assert got[0][:2] == got[1][:2] == ("col", None) and got[2][:2] == ("old", None)
    assert got[395] == ("new", None, ids[395]) and got[405][:2] == ("new", None) and got[1000][:2] == ("tx", "n")
    assert len({v[2] for v in got.values()}) == len(got)


def test_a_merge_on_read_update_on_spark_defaults(plain, tmp_path):
    # (its rows are rebalanced by adaptive execution, which coalesces by default; the run's session turns that off)
    plain.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "true")
    cat = sparkberg.catalog(plain, str(tmp_path / "wh"))
    t = cat.create_table("db.u", "id bigint, cat string", partition_by=["cat"],
                         properties={"format-version": "3", "write.update.mode": "merge-on-read"})
    t.append(plain.sql("SELECT id, IF(id % 2 = 0, 'even', 'odd') AS cat FROM range(0, 200, 1, 4)"))
    ids = {r[0]: r[1] for r in t.to_df(columns=["id", "_row_id"]).collect()}
    t.update(set={"cat": "'x'"}, filter="id % 50 = 7 OR id = 8")
    got = {r[0]: (r[1], r[2]) for r in t.to_df(columns=["id", "cat", "_row_id"]).collect()}
    assert {i for i, (c, _) in got.items() if c == "x"} == {7, 8, 57, 107, 157}
    assert len(got) == 200 and {i: r for i, (_, r) in got.items()} == ids  # (updated rows keep their ids)
    assert t.metadata.current_snapshot.summary["added-delete-files"] == "2"  # (a DV for each of the two files)


def test_size_settings_read_as_spark_reads_them(plain):
    # a size setting in Spark's units; its default when unset or unreadable, read without asking the JVM for an
    # exception (which a fresh JVM answers slowly): ``spark.driver.maxResultSize`` is unset in most sessions
    import unittest.mock
    from sparkberg.spark import settings as S
    key = "spark.sparkberg.test.size"
    for text, want in (("3m", 3 << 20), ("2g", 2 << 30), ("134217728b", 128 << 20), ("512", 512), ("1.5g", 7),
                       ("lots", 7)):
        plain.conf.set(key, text)
        assert S._conf_bytes(plain, key, 7) == want, text
    plain.conf.unset(key)
    reads, real_get = [], type(plain.conf).get

    def get(conf, k, *default):
        reads.append((k, default))
        return real_get(conf, k, *default)
    with unittest.mock.patch.object(type(plain.conf), "get", get):
        assert S._conf_bytes(plain, key, 7) == 7
        result_bytes = S.max_result_bytes(plain)
    assert reads == [(key, (None,)), ("spark.driver.maxResultSize", (None,))]
    if plain.sparkContext.getConf().get("spark.driver.maxResultSize") is None:
        assert result_bytes == 1 << 30


def test_python_stages_are_made_without_pysparks_pandas_check(plain, monkeypatch):
    """Each Python stage sparkberg makes on a classic session (``map_in_arrow``) is built as PySpark's
    ``mapInArrow`` builds it, less PySpark's check that pandas is installed (which imports pandas into a fresh
    driver): built with that check failing, it gives PySpark's rows; PySpark's own way is the fallback it did not
    take."""
    from sparkberg.spark.frames import map_in_arrow, with_known_count
    from stages import stage_without_pandas_check

    df, doubled, expected = stage_without_pandas_check(plain, monkeypatch)
    assert sorted(map_in_arrow(df, doubled, "d bigint, s string").collect()) == expected
    # a stage over a DataFrame that answers count() from what made it (a plan's) counts its own rows
    counted = with_known_count(plain.range(0, 10), 10)
    twice = map_in_arrow(counted, lambda batches: (b for b in batches for _ in "ab"), "id bigint")
    assert twice.count() == 20
