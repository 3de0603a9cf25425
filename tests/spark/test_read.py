"""The read path on Spark 4 against tables written by PyIceberg 0.12: every snapshot reads as PyIceberg reads it,
plan_files lists the files PyIceberg plans, filters prune soundly, and bad requests get named errors."""
import datetime as dt
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collections import Counter

import pytest

import sparkberg
from commits import commit_updates
from sparkberg.errors import ValidationError

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def pyi(tmp_path_factory):
    from pyiceberg_tables import build
    return build(str(tmp_path_factory.mktemp("pyiceberg-wh")))


def _spark_norm(v):
    if v is None:
        return None
    if isinstance(v, float) and v != v:
        return "NaN"
    if hasattr(v, "asDict"):
        return tuple(_spark_norm(x) for x in v)
    if isinstance(v, dict):  # an empty map and an empty list look alike in Arrow's Python form
        return ("map", tuple(sorted((k, _spark_norm(x)) for k, x in v.items()))) if v else ()
    if isinstance(v, list):
        return tuple(_spark_norm(x) for x in v)
    if isinstance(v, bytearray):
        return bytes(v)
    return v


def _arrow_norm(v):
    if v is None:
        return None
    if isinstance(v, float) and v != v:
        return "NaN"
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.timezone.utc).replace(tzinfo=None)
    if isinstance(v, dict):
        return tuple(_arrow_norm(x) for x in v.values())
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return ("map", tuple(sorted((k, _arrow_norm(x)) for k, x in v)))
        return tuple(_arrow_norm(x) for x in v)
    return v


def spark_rows(df):
    return Counter(tuple(_spark_norm(v) for v in r) for r in df.collect())


def arrow_rows(table, columns):
    return Counter(tuple(_arrow_norm(r[c]) for c in columns) for r in table.to_pylist())


def load(spark, pt):
    return sparkberg.load_table(spark, pt.metadata_location)


@pytest.mark.parametrize("name", ["all_v1", "all_v2", "evolve"])
def test_every_snapshot_reads_like_pyiceberg(spark, pyi, name):
    pt = pyi[name]
    t = load(spark, pt)
    assert t.metadata.snapshots, name
    for snap in t.metadata.snapshots:
        schema = t.metadata.schema(snap.schema_id)
        cols = [f.name for f in schema.fields]
        ours = spark_rows(t.to_df(snapshot_id=snap.snapshot_id))
        theirs = arrow_rows(pt.scan(snapshot_id=snap.snapshot_id).to_arrow(), cols)
        assert ours == theirs, f"{name} snapshot {snap.snapshot_id}"


@pytest.mark.parametrize("planning", ["local", "distributed"])
@pytest.mark.parametrize("name", ["all_v1", "all_v2", "evolve"])
def test_plan_files_like_pyiceberg(spark, pyi, name, planning):
    pt = pyi[name]
    t = load(spark, pt)
    theirs = {task.file.file_path for task in pt.scan().plan_files()}
    tasks = t.plan_files(planning=planning).collect()
    assert {r["file_path"] for r in tasks} == theirs
    assert sum(r["record_count"] for r in tasks) == sum(task.file.record_count for task in pt.scan().plan_files())
    for r in tasks:
        assert r["deletes"] == [] and r["data_sequence_number"] >= (0 if t.format_version == 1 else 1)


FILTERS = ["id = 7", "id IN (1, 2, 3) OR s = 'beta'", "d < DATE '1970-01-01'", "ts >= '2024-01-03'",
           "tsn > TIMESTAMP_NTZ '1970-01-01 05:00:00'", "s LIKE 'al%'", "dec BETWEEN -1 AND 1", "f > 2.0",
           "NOT (i = 0)", "ts IS NULL", "id IS NULL AND flag", "dbl = 0.0", "b = X'0001'", "upper(s) = 'BETA'",
           "i = 1 AND (id > 10 OR s < 'b')", "isnan(f)"]


@pytest.mark.parametrize("filter", FILTERS)
def test_filters_are_exact_and_prune_soundly(spark, pyi, filter):
    t = load(spark, pyi["all_v2"])
    full = t.to_df(columns=[f.name for f in t.schema().fields] + ["_file"])
    expected = full.filter(filter)
    got = t.to_df(filter=filter, columns=[f.name for f in t.schema().fields] + ["_file"])
    assert spark_rows(got) == spark_rows(expected)
    planned = {r[0] for r in t.plan_files(filter=filter).collect()}
    needed = {r["_file"] for r in expected.select("_file").collect()}
    assert needed <= planned
    distributed = t.plan_files(filter=filter, planning="distributed").collect()
    assert [r["file_path"] for r in distributed] == [r[0] for r in t.plan_files(filter=filter).collect()]


def test_plan_files_planned_locally_equals_the_distributed_plan(spark, warehouse):
    """A plan made on the driver becomes plan_files' DataFrame with its partition values typed in Arrow (dates,
    timestamps with and without zone); the distributed plan types them in Spark: the same schema and rows. Both
    plans give the same tasks on the driver as Arrow (ScanPlan.arrow: the distributed one collected)."""
    import sparkberg
    t = sparkberg.catalog(spark, warehouse).create_table(
        "db.typed", "id bigint, ts timestamp, d date, tsn timestamp_ntz, s string",
        partition_by=["day(ts)", "d", "tsn", "bucket(4, id)", "hour(ts)", "s"])
    t.append(spark.sql("""SELECT id, TIMESTAMP'2024-01-01 10:00:00' + make_interval(0, 0, 0, CAST(id % 3 AS int)) AS ts,
                          IF(id = 4, NULL, DATE'2023-12-30' + CAST(id % 2 AS int)) AS d,
                          TIMESTAMP_NTZ'2020-02-02 02:02:02' + make_interval(0, 0, 0, 0, CAST(id AS int)) AS tsn,
                          IF(id % 2 = 0, 'a', NULL) AS s FROM range(0, 6)"""))
    local, distributed = t.plan_files(planning="local"), t.plan_files(planning="distributed")
    assert local.schema == distributed.schema
    assert [f.dataType.simpleString() for f in local.schema["partition"].dataType.fields] == [
        "date", "date", "timestamp_ntz", "int", "int", "string"]
    rows = sorted(local.collect(), key=lambda r: r["file_path"])
    assert rows == sorted(distributed.collect(), key=lambda r: r["file_path"]) and len(rows) == 6
    assert {r["partition"]["ts_day"] for r in rows} == {dt.date(2024, 1, k) for k in (1, 2, 3)}
    assert None in {r["partition"]["d"] for r in rows}
    from sparkberg.expressions.predicates import TRUE
    from sparkberg.planning.scan import plan
    local_plan, distributed_plan = (plan(spark, t.metadata, t.io, t.metadata.current_snapshot, TRUE, planning)
                                    for planning in ("local", "distributed"))
    assert local_plan.is_local and not distributed_plan.is_local
    by_path = ("file_path", "ascending")
    assert local_plan.arrow().sort_by([by_path]) == distributed_plan.arrow().sort_by([by_path])  # (tasks on the driver)
    assert local_plan.arrow().num_rows == 6


def test_pruning_drops_files(spark, pyi):
    t = load(spark, pyi["all_v2"])
    total = t.plan_files().count()
    assert t.plan_files(filter="ts_month_is_not_a_column = 1 OR id = 7").count() == total  # untranslatable
    assert 0 < t.plan_files(filter="id = 7").count() < total
    assert t.plan_files(filter="d < DATE '1969-01-01'").count() == 0
    assert t.plan_files(filter="i = 5").count() == 0


def test_metadata_columns(spark, pyi):
    t = load(spark, pyi["evolve"])
    df = t.to_df(columns=["id", "_file", "_pos", "_spec_id", "_partition"])
    got = sorted((r["id"], r["_spec_id"], r["_pos"]) for r in df.collect())
    assert [g[0] for g in got] == [1, 2, 3, 4]
    assert {g[1] for g in got} == {0, 1}
    parts = {r["id"]: r["_partition"] for r in df.collect()}
    assert parts[3]["label_trunc"] == "c" and parts[1]["label_trunc"] is None
    assert df.schema["_partition"].dataType.fieldNames() == ["id_bucket", "label_trunc"]
    plan = t.plan_files().select("partition").collect()
    assert all(set(p[0].asDict()) == {"id_bucket", "label_trunc"} for p in plan)


def test_schema_evolution_reads_by_field_id(spark, pyi):
    t = load(spark, pyi["evolve"])
    rows = {r["id"]: r for r in t.to_df().collect()}
    assert rows[1]["label"] == "a" and rows[1]["score"] == 1.5  # renamed, promoted float -> double
    assert rows[3]["loc"]["lat"] == 3.0 and rows[3]["tags"] == ["p", None] and rows[3]["attrs"] == {"z": None}
    assert "added" not in t.to_df().columns
    assert t.to_df().schema["id"].dataType.simpleString() == "bigint"


def test_time_travel_and_refs(spark, pyi):
    pt = pyi["all_v2"]
    t = load(spark, pt)
    snaps = t.metadata.snapshots
    first = snaps[0]
    assert t.to_df(snapshot_id=first.snapshot_id).count() == 20
    assert t.to_df(as_of_timestamp_ms=first.timestamp_ms).count() == 20
    assert t.to_df(ref="main").count() == t.to_df().count() == 37
    with pytest.raises(ValidationError, match="does not exist"):
        t.to_df(snapshot_id=1)
    with pytest.raises(ValidationError, match="no snapshot at or before"):
        t.to_df(as_of_timestamp_ms=1)
    with pytest.raises(ValidationError, match="no branch or tag 'nope'"):
        t.to_df(ref="nope")
    with pytest.raises(ValidationError, match="at most one"):
        t.to_df(ref="main", snapshot_id=first.snapshot_id)


def test_bad_columns_are_named(spark, pyi):
    t = load(spark, pyi["all_v2"])
    with pytest.raises(ValidationError, match="unknown column 'nope'"):
        t.to_df(columns=["id", "nope"])
    with pytest.raises(ValidationError, match="only on v3 tables"):
        t.to_df(columns=["_row_id"])


def test_reads_from_a_metastore_style_directory(spark, pyi):
    pt = pyi["all_v1"]
    t = sparkberg.load_table(spark, pt.location())  # <V>-<uuid>.metadata.json files, newest wins
    assert t.metadata_location == pt.metadata_location
    assert t.to_df().count() == 37


def test_empty_table_reads_empty(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.e", "id bigint, ts timestamp", partition_by=["day(ts)"], properties={"format-version": "3"})
    assert t.to_df().count() == 0
    assert t.to_df(columns=["id", "_row_id", "_partition"]).columns == ["id", "_row_id", "_partition"]
    assert t.plan_files().count() == 0


def test_files_without_field_ids_read_by_name_mapping(spark, tmp_path):
    from pyiceberg_tables import build_migrated
    pt = build_migrated(str(tmp_path))
    t = load(spark, pt)
    assert "schema.name-mapping.default" in t.properties
    got = sorted(tuple(r) for r in t.to_df().collect())
    assert got == [(1, "a"), (2, "b"), (3, None)]
    assert t.to_df().schema["n"].dataType.simpleString() == "bigint"
    assert sorted(r[0] for r in t.to_df(filter="label = 'b'").collect()) == [2]


@pytest.mark.parametrize("version", [2, 3])
def test_paths_with_spaces_percent_plus_and_accents(spark, tmp_path, version):
    # rows are matched to their file by the path Spark reports (percent-encoded URI), mapped from its listing
    cat = sparkberg.catalog(spark, str(tmp_path / "w h%20+é"))
    t = cat.create_table("db.odd name", "id bigint, p string", partition_by=["p"],
                         properties={"format-version": str(version), "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, CASE WHEN id % 2 = 0 THEN 'a b' ELSE 'c%d+é' END AS p FROM range(0, 10)"))
    t.delete("id IN (3, 4)")
    assert sorted(r[0] for r in t.to_df(columns=["id"]).collect()) == [0, 1, 2, 5, 6, 7, 8, 9]
    files = {r["file_path"] for r in t.plan_files().collect()}
    assert {r["_file"] for r in t.to_df(columns=["_file"]).collect()} == files


def test_initial_defaults_fill_columns_and_nested_fields_older_files_lack(spark, warehouse):
    """v3 ``initial-default`` (spec "Default values"): a column or nested field added with one reads as that value
    in files written before it existed; files written after keep what they hold, nulls included."""
    from sparkberg.format import types as T
    from sparkberg.format import updates as U
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.defaults", "id bigint, s struct<a: int>, l array<struct<x: int>>, "
                         "m map<string, struct<v: int>>", properties={"format-version": "3"})
    t.append(spark.sql("SELECT 1 AS id, named_struct('a', 10) AS s, array(named_struct('x', 1)) AS l, "
                       "map('k', named_struct('v', 3)) AS m UNION ALL "
                       "SELECT 2, CAST(NULL AS struct<a: int>), CAST(NULL AS array<struct<x: int>>), NULL"))
    schema, next_id = t.metadata.current_schema, t.metadata.last_column_id + 1

    def grow(f, more):
        return T.NestedField(f.field_id, f.name, T.StructType(list(f.field_type.fields) + [more]), f.required)
    s, l_, m = (schema.find_field(n) for n in ("s", "l", "m"))
    new_l = T.NestedField(l_.field_id, "l", T.ListType(
        l_.field_type.element_id, T.StructType(list(l_.field_type.element_type.fields) + [
            T.NestedField(next_id + 1, "y", T.INT, initial_default=5)]), l_.field_type.element_required))
    new_m = T.NestedField(m.field_id, "m", T.MapType(
        m.field_type.key_id, T.STRING, m.field_type.value_id, T.StructType(list(m.field_type.value_type.fields) + [
            T.NestedField(next_id + 2, "w", T.STRING, initial_default="dflt")]), m.field_type.value_required))
    new = T.Schema([schema.find_field("id"), grow(s, T.NestedField(next_id, "b", T.LONG, initial_default=7)), new_l,
                    new_m, T.NestedField(next_id + 3, "c", T.DATE, initial_default=19000)], 1)
    t = commit_updates(t, [U.AddSchema(new, next_id + 3), U.SetCurrentSchema(U.LAST_ADDED)])
    t.append(spark.sql("SELECT 3 AS id, named_struct('a', 30, 'b', CAST(NULL AS bigint)) AS s, "
                       "array(named_struct('x', 4, 'y', 40)) AS l, map('q', named_struct('v', 6, 'w', 'mine')) AS m, "
                       "CAST(NULL AS date) AS c"))
    rows = {r["id"]: r.asDict(recursive=True) for r in t.to_df().collect()}
    assert rows[1] == {"id": 1, "s": {"a": 10, "b": 7}, "l": [{"x": 1, "y": 5}], "m": {"k": {"v": 3, "w": "dflt"}},
                       "c": dt.date(2022, 1, 8)}
    assert rows[2] == {"id": 2, "s": None, "l": None, "m": None, "c": dt.date(2022, 1, 8)}  # null parents stay null
    assert rows[3] == {"id": 3, "s": {"a": 30, "b": None}, "l": [{"x": 4, "y": 40}], "m": {"q": {"v": 6, "w": "mine"}},
                       "c": None}


def test_many_paths_reach_a_classic_session_in_one_call(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from sparkberg.spark.jvm import _read_parquet_paths
    paths = []
    for i in range(20):  # (a name with a space, a percent sign and an accent among them)
        p = tmp_path / (f"f {i}%é.parquet" if i == 7 else f"f{i}.parquet")
        pq.write_table(pa.table({"id": [i, i + 100]}), p)
        paths.append(str(p))
    reader = spark.read.schema("id bigint")
    public = []
    reader.parquet = lambda *files: public.append(files)  # the per-path call: must not be taken
    df = _read_parquet_paths(reader, paths)
    assert not public
    assert sorted(r.id for r in df.collect()) == sorted([i for i in range(20)] + [i + 100 for i in range(20)])
    # a path Spark's one string cannot carry goes the public way
    assert _read_parquet_paths(reader, paths + ["/x\ny.parquet"]) is None
    assert public == [tuple(paths + ["/x\ny.parquet"])]


def test_files_read_again_reuse_the_relation_spark_resolved(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import types as ST
    from sparkberg.spark import jvm
    paths = []
    for i in range(3):
        pq.write_table(pa.table({"id": [i, i + 10]}), tmp_path / f"f{i}.parquet")
        paths.append(str(tmp_path / f"f{i}.parquet"))
    schema = ST.StructType([ST.StructField("id", ST.LongType())])
    listed = _files_listed(spark)
    before = listed()
    first = jvm.read_parquet(spark, schema, paths)
    assert listed() - before == 3
    relations = jvm.ParquetRelations.of(spark)
    assert relations.get((schema.json(), tuple(paths))) is not None
    before = listed()
    again = jvm.read_parquet(spark, schema, paths)
    assert listed() - before == 0  # (Spark's reader would have listed the three files again)
    assert sorted(r.id for r in again.collect()) == [0, 1, 2, 10, 11, 12]
    # each read is a relation of its own (new column ids): the two join as two tables, not as one with itself
    assert sorted((a, b) for a, b in first.join(again, first.id == again.id).collect()) == \
        [(i, i) for i in (0, 1, 2, 10, 11, 12)]
    assert first.join(again, first.id < again.id).count() == 15
    # other files, or another schema, are resolved again, over the statuses of the files listed before
    before = listed()
    fewer = jvm.read_parquet(spark, schema, paths[:2])
    jvm.read_parquet(spark, ST.StructType([ST.StructField("id", ST.IntegerType())]), paths)
    assert listed() - before == 0
    assert sorted(r.id for r in fewer.collect()) == [0, 1, 10, 11]


def _files_listed(spark):
    """A counter of the files a classic session's file indexes listed (Spark's own metric)."""
    metrics = spark._jvm.org.apache.spark.metrics.source.HiveCatalogMetrics
    return lambda: metrics.METRIC_FILES_DISCOVERED().getCount()


def test_a_read_of_other_files_lists_only_those_not_listed_before(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import types as ST
    from sparkberg.errors import MissingFileError
    from sparkberg.spark import jvm
    paths = []
    for i in range(40):  # (past the 32 paths from which Spark would list them in a job; names with a space, a
        # percent sign, an accent and a glob's bracket among them: file names, never patterns)
        name = {7: "f 7%é.parquet", 37: "f[37].parquet"}.get(i, f"f{i}.parquet")
        pq.write_table(pa.table({"id": [i]}), tmp_path / name)
        paths.append(str(tmp_path / name))
    schema = ST.StructType([ST.StructField("id", ST.LongType(), nullable=False)])
    listed = _files_listed(spark)
    before = listed()
    first = jvm.read_parquet(spark, schema, paths[:36])
    assert listed() - before == 36
    before = listed()
    second = jvm.read_parquet(spark, schema, paths[2:])  # (as after a commit: 2 files gone, 4 added)
    assert listed() - before == 4
    assert sorted(r.id for r in first.collect()) == list(range(36))
    assert sorted(r.id for r in second.collect()) == list(range(2, 40))
    # the relation is the reader's: every column nullable, and the files' own metadata columns
    assert second.schema == ST.StructType([ST.StructField("id", ST.LongType())])
    assert {r.n: r.i for r in second.selectExpr("_metadata.file_name AS n", "_metadata.row_index AS i")
            .where("id IN (5, 39)").collect()} == {"f5.parquet": 0, "f39.parquet": 0}
    # a path that is not there: Spark's index would skip it, so the reader resolves the paths, and names it
    gone = str(tmp_path / "gone.parquet")
    with pytest.raises(MissingFileError, match="gone.parquet"):
        jvm.read_parquet(spark, schema, paths[:3] + [gone])


def test_kept_relations_are_bounded_by_their_files():
    from sparkberg.spark.jvm import ParquetRelations
    kept = ParquetRelations()
    kept.MAX_FILES, kept.MAX_ENTRIES = 10, 3
    kept.put("a", "A", 4)
    kept.put("b", "B", 4)
    assert kept.get("a") == "A"  # (now the most recently used)
    kept.put("c", "C", 4)  # 12 files: the least recently used goes
    assert (kept.get("a"), kept.get("b"), kept.get("c")) == ("A", None, "C")
    kept.put("big", "X", 11)  # more than the bound alone: not kept, nothing dropped for it
    assert kept.get("big") is None and len(kept) == 2
    for k in "def":
        kept.put(k, k.upper(), 1)
    assert len(kept) == 3 and kept.get("a") is None and kept.get("f") == "F"
