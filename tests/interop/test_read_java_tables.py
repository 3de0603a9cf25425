"""Read path against Iceberg Java: for every corpus table and every snapshot and ref, ``to_df`` equals Java's
SELECT row for row (with ``_row_id`` and ``_last_updated_sequence_number`` on v3), and ``plan_files`` lists the
same data files as Java's scan, each with at least the delete files Java attaches."""
import datetime as dt
import os
from collections import Counter

import pytest

import sparkberg

pytestmark = pytest.mark.interop
TABLES = ["v1_evolve", "v2_transforms", "v2_transforms_days", "v2_mor", "v3_dv", "v2_to_v3", "v2_evolution",
          "v2_nested", "v2_eqdeletes", "v2_orc", "v2_avro", "v3_avro", "v2_ancient", "v1_to_v2",
          "v1_partition_merge", "v2_partition_merge", "v2_many_files", "v2_prune_types"]


def rows(df):
    return Counter(tuple(_norm(v) for v in r) for r in df.collect())


def rows_nested(df):
    """Rows with a struct of only nulls read as null. A deliberate difference: Iceberg Java fills a column that
    is the source of an identity partition from the partition tuple, so a null struct whose field is such a
    source (v2_nested's ``loc``, partitioned by ``loc.lat``) reads back as a struct of nulls there."""
    def fold(v):
        return None if isinstance(v, tuple) and v and all(x is None for x in v) else v
    return Counter(tuple(fold(v) for v in r) for r in rows(df).elements())


def _norm(v):
    if isinstance(v, float) and v != v:
        return "NaN"
    if isinstance(v, list):
        return tuple(_norm(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _norm(x)) for k, x in v.items()))
    if hasattr(v, "asDict"):
        return tuple(_norm(x) for x in v)
    if isinstance(v, bytearray):
        return bytes(v)
    return v


# A deliberate difference: Iceberg Java 1.10 reads ``_row_id`` of Avro data files as the file's ``first_row_id``
# without adding the row's position (every row of a file gets the same id); the spec's rule is
# ``first_row_id + _pos``, which sparkberg follows (checked on its own in test_v3_avro_row_ids_follow_the_spec).
SKIP_COLUMNS = {"v3_avro": {"_row_id"}}


def table(java, warehouse, name):
    return sparkberg.load_table(java, os.path.join(warehouse, "db", name))


def java_select(java, name, cols, clause=""):
    return java.sql(f"SELECT {', '.join(f'`{c}`' for c in cols)} FROM ref.db.{name} {clause}")


@pytest.mark.parametrize("name", TABLES)
def test_every_snapshot_reads_like_java(corpus, java, java_warehouse, name):
    t = table(java, java_warehouse, name)
    for snap in t.metadata.snapshots:
        schema = t.metadata.schema(snap.schema_id) if snap.schema_id is not None else t.schema()
        cols = [f.name for f in schema.fields]
        if t.format_version >= 3:
            cols += [c for c in ("_row_id", "_last_updated_sequence_number") if c not in SKIP_COLUMNS.get(name, ())]
        ours = t.to_df(snapshot_id=snap.snapshot_id, columns=cols)
        theirs = java_select(java, name, cols, f"VERSION AS OF {snap.snapshot_id}")
        compare = rows_nested if name == "v2_nested" else rows
        assert compare(ours) == compare(theirs), f"{name} at snapshot {snap.snapshot_id}"


@pytest.mark.parametrize("name", TABLES)
def test_current_state_and_metadata_columns(corpus, java, java_warehouse, name):
    t = table(java, java_warehouse, name)
    cols = [f.name for f in t.schema().fields] + ["_file", "_pos", "_spec_id"]
    ours = t.to_df(columns=cols)
    theirs = java_select(java, name, cols)
    compare = rows_nested if name == "v2_nested" else rows
    assert compare(ours) == compare(theirs)


@pytest.mark.parametrize("name,formats", [("v2_orc", {"orc"}), ("v2_avro", {"avro"}), ("v3_avro", {"avro", "puffin"})])
def test_orc_and_avro_files_are_in_the_corpus(corpus, java, java_warehouse, name, formats):
    tasks = table(java, java_warehouse, name).plan_files().collect()
    seen = {r["file_format"] for r in tasks} | {d["file_format"] for r in tasks for d in r["deletes"]}
    assert formats <= seen
    if name != "v3_avro":
        assert {1, 2} <= {d["content"] for r in tasks for d in r["deletes"]}


def test_v3_avro_row_ids_follow_the_spec(corpus, java, java_warehouse):
    t = table(java, java_warehouse, "v3_avro")
    first = {r["file_path"]: r["first_row_id"] for r in t.plan_files().collect()}
    # the append and the delete; Java's update then stored the ids it misread into the rewritten rows
    for snap in t.metadata.snapshots[:2]:
        got = t.to_df(snapshot_id=snap.snapshot_id, columns=["_file", "_pos", "_row_id"]).collect()
        assert len(got) == len({r["_row_id"] for r in got}) > 0
        assert all(r["_row_id"] == first[r["_file"]] + r["_pos"] for r in got)


def test_refs_read_like_java(corpus, java, java_warehouse):
    t = table(java, java_warehouse, "v3_dv")
    for ref in ("audit", "v_one", "main"):
        cols = [f.name for f in t.schema().fields] + ["_row_id", "_last_updated_sequence_number"]
        ours = t.to_df(ref=ref, columns=cols)
        theirs = java.sql(f"SELECT {', '.join(cols)} FROM ref.db.v3_dv VERSION AS OF '{ref}'")
        assert rows(ours) == rows(theirs), ref
    # row ids are unique within a snapshot
    ids = [r[0] for r in t.to_df(ref="audit", columns=["_row_id"]).collect()]
    assert len(ids) == len(set(ids)) and None not in ids


def test_time_travel_by_timestamp(corpus, java, java_warehouse):
    t = table(java, java_warehouse, "v2_mor")
    for entry in t.metadata.snapshot_log:
        ours = t.to_df(as_of_timestamp_ms=entry.timestamp_ms)
        theirs = java.sql(f"SELECT * FROM ref.db.v2_mor TIMESTAMP AS OF "
                          f"CAST({entry.timestamp_ms} / 1000.0 AS TIMESTAMP)")
        assert rows(ours) == rows(theirs)


@pytest.mark.parametrize("name,filter", [
    ("v2_transforms", "id = 2"), ("v2_transforms", "d < DATE '1970-01-01'"), ("v2_transforms", "s LIKE 'al%'"),
    ("v2_transforms", "ts >= TIMESTAMP '2020-01-01 00:00:00' AND i IS NOT NULL"), ("v2_transforms", "dec > 0"),
    ("v2_transforms", "f > 1.0"), ("v2_transforms", "NOT (i = 10) OR b = X'0102'"), ("v2_transforms", "dbl = 0.0"),
    ("v2_transforms", "tsn < TIMESTAMP_NTZ '2020-01-01 01:00:00'"), ("v2_transforms", "s IN ('beta', 'x')"),
    ("v2_transforms_days", "ts > '2024-01-01'"), ("v2_transforms_days", "dec = 1234567890.0123456789"),
    ("v2_mor", "cat = 'odd' AND id > 30"), ("v3_dv", "ts < '2024-01-02'"), ("v2_eqdeletes", "cat = 'a'"),
    ("v2_evolution", "label = 'cc'"), ("v2_orc", "label = 's7' OR id > 100"), ("v2_orc", "f > 10.0"),
    ("v2_avro", "ts < '2024-01-02' AND dec > 1"), ("v2_avro", "ids[7] = 'v'"), ("v3_avro", "id < 5"), ("v2_nested", "loc.lat = 1.0"), ("v1_evolve", "ts IS NULL OR id > 4"),
])
def test_filters_read_like_java_and_prune_no_more(corpus, java, java_warehouse, name, filter):
    t = table(java, java_warehouse, name)
    assert rows(t.to_df(filter=filter)) == rows(java.sql(f"SELECT * FROM ref.db.{name} WHERE {filter}"))
    ours = {r[0] for r in t.plan_files(filter=filter).collect()}
    all_files = {r[0] for r in t.plan_files().collect()}
    assert ours <= all_files
    # every file holding a matching row is planned
    needed = {r[0] for r in java.sql(f"SELECT _file FROM ref.db.{name} WHERE {filter}").collect()}
    assert needed <= ours


@pytest.mark.parametrize("planning", ["local", "distributed"])
@pytest.mark.parametrize("name", TABLES)
def test_plan_files_matches_java_scan(corpus, java, java_warehouse, name, planning):
    t = table(java, java_warehouse, name)
    jt = java._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(java._jsparkSession, f"ref.db.{name}")
    expected = {}
    it = jt.newScan().planFiles().iterator()
    while it.hasNext():
        task = it.next()
        deletes = set()
        dit = task.deletes().iterator()
        while dit.hasNext():
            deletes.add(str(dit.next().location()))
        expected[str(task.file().location())] = deletes
    ours = {r["file_path"]: {d["file_path"] for d in r["deletes"]} for r in t.plan_files(planning=planning).collect()}
    assert set(ours) == set(expected)
    for path, deletes in expected.items():
        assert deletes <= ours[path], path


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("name", ["v2_mor", "v3_dv", "v2_eqdeletes", "v2_transforms"])
def test_driver_plans_reach_pyspark_35_as_arrow_batches(corpus, java, java_warehouse, name, lazy, monkeypatch):
    """On a classic PySpark 3.5 session a plan made on the driver becomes a DataFrame from its Arrow batches
    (no public API for nested Arrow data there), as a local relation or (``lazy``, many rows) converted when
    read: the same rows as from the plan's rows, and the session's threshold as it was. plan_files' DataFrame,
    its partition values typed in Arrow, equals the tasks with partition_column."""
    from pyspark.sql import functions as F

    from sparkberg.planning.scan import partition_column, plan, tasks_struct
    from sparkberg.spark import jvm
    from sparkberg.spark.jvm import arrow_dataframe_35
    monkeypatch.setattr(jvm, "LAZY_ROWS", 0 if lazy else 10 ** 9)
    t = table(java, java_warehouse, name)
    p = plan(java, t.metadata, t.io, t.metadata.current_snapshot, mode="local")
    assert p.is_local and p.rows()
    arrow = arrow_dataframe_35(java, p._table.combine_chunks(), tasks_struct(p.layout)).collect()
    assert java.conf.get("spark.sql.execution.arrow.localRelationThreshold", None) in (None, "48MB", str(48 << 20))
    expected = java.createDataFrame(p.rows(), tasks_struct(p.layout)).collect()
    assert [_norm(r) for r in arrow] == [_norm(r) for r in expected]
    assert any(r["deletes"] for r in arrow) == (name != "v2_transforms")
    typed = p.tasks.withColumn("partition", partition_column(p.layout, F.col("partition")))
    assert p.files().schema == typed.schema
    assert [_norm(r) for r in p.files().collect()] == [_norm(r) for r in typed.collect()]


def test_python_stages_are_made_without_pysparks_pandas_check_on_spark_35(java, monkeypatch):
    """On a classic PySpark 3.5 session (whose ``Dataset`` method for it differs from Spark 4's) a Python stage is
    made without PySpark's check that pandas is installed: built with that check failing, it gives PySpark's rows."""
    from stages import stage_without_pandas_check

    stage_without_pandas_check(java, monkeypatch)


@pytest.mark.parametrize("name", ["v2_mor", "v3_dv", "v2_eqdeletes", "v2_to_v3"])
def test_deletes_filter_the_scan_on_a_classic_spark_35_session(corpus, java, java_warehouse, name, monkeypatch):
    """On a classic PySpark 3.5 session the deleted positions are a filter of the Parquet scan: one array of
    bitmaps, a literal made in the JVM, no join. Every snapshot reads as Java's, as with the array read by a
    scalar subquery built in the JVM, and as the join of the bitmaps (the way of a Spark 3.5 Connect session)
    reads."""
    from sparkberg.read import positions, reader
    used, made = [], []
    real, real_made = reader.position_scan_filter, positions._scan_filter_literals
    monkeypatch.setattr(reader, "position_scan_filter", lambda *a: used.append(real(*a)) or used[-1])
    monkeypatch.setattr(positions, "_scan_filter_literals",
                        lambda *a: made.append(real_made(*a)) or made[-1])
    t = table(java, java_warehouse, name)

    def reads() -> tuple[list, int]:
        """Each snapshot's rows (without metadata columns: those take the join), and how many reads took the
        filter."""
        out, filtered = [], 0
        for snap in t.metadata.snapshots:
            schema = t.metadata.schema(snap.schema_id) if snap.schema_id is not None else t.schema()
            cols = [f.name for f in schema.fields]
            used.clear()
            df = t.to_df(snapshot_id=snap.snapshot_id, columns=cols)
            if any(u is not None for u in used):
                filtered += 1
                assert "BroadcastHashJoin" not in df._jdf.queryExecution().executedPlan().toString()
            out.append(rows(df))
            assert out[-1] == rows(java_select(java, name, cols, f"VERSION AS OF {snap.snapshot_id}")), snap
        return out, filtered
    positions.per_session(java, "bitmaps", positions.LRU).clear()  # (what earlier reads of these tables kept)
    filtered, taken = reads()
    assert taken and made and all(m is not None for m in made)
    monkeypatch.setattr(positions, "_scan_filter_literals", lambda *a: None)  # (the array read by a subquery)
    positions.per_session(java, "bitmaps", positions.LRU).clear()  # (the literals the reads above kept)
    assert reads() == (filtered, taken)
    monkeypatch.setattr(positions, "scalar_of", lambda one: None)  # (the join of bitmaps)
    assert reads() == (filtered, 0)


from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from sparkberg.expressions.predicates import bind  # noqa: E402
from sparkberg.expressions.sql import translate_filter  # noqa: E402
from sparkberg.planning.reference import reference_plan  # noqa: E402

FILTER_PARTS = {
    "v2_mor": ["id = {n}", "id < {n}", "cat = 'odd'", "cat = 'even'", "data = 'd{n}'", "id IN ({n}, {m})",
               "data IS NULL", "NOT (id > {n})"],
    "v3_dv": ["id = {n}", "ts < '2024-01-02'", "ts >= '2024-01-03'", "data LIKE 'd1%'", "id BETWEEN {n} AND {m}"],
    "v2_eqdeletes": ["id = {n}", "cat = 'a'", "cat IS NULL", "v = 'x'", "id > {n} OR cat = 'b'"],
    "v2_to_v3": ["id = {n}", "id >= {n}", "data = 'x'", "NOT (id = {m})"],
}


@pytest.mark.parametrize("name", sorted(FILTER_PARTS))
def test_distributed_planner_equals_reference_planner(corpus, java, java_warehouse, name):
    t = table(java, java_warehouse, name)

    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(st.sampled_from(FILTER_PARTS[name]), min_size=1, max_size=2), st.integers(0, 45),
           st.integers(0, 45), st.sampled_from([" AND ", " OR "]),
           st.sampled_from([s.snapshot_id for s in t.metadata.snapshots]))
    def check(parts, n, m, joiner, snapshot_id):
        text = joiner.join(p.format(n=n, m=m) for p in parts)
        snap = t.metadata.snapshot_by_id(snapshot_id)
        schema = t.metadata.schema(snap.schema_id) if snap.schema_id is not None else t.schema()
        bound = bind(translate_filter(text, schema), schema)
        expected = reference_plan(t.metadata, t.io, snap, bound)
        ours = {r["file_path"]: {d["file_path"] for d in r["deletes"]}
                for r in t.plan_files(filter=text, snapshot_id=snapshot_id, planning="distributed").collect()}
        assert ours == expected, text
    check()


def test_wide_java_manifests_are_read_by_key_and_plan_like_java(java, java_warehouse, monkeypatch):
    """A filter on one column of an 11-column table reads the data manifests' metrics maps by key (the compiled
    decoder reads manifests of 64 entries or more: the corpus tables hold fewer): the files planned are those
    Java's scan plans with the same filter, on a manifest Java wrote."""
    java.sql("CREATE TABLE ref.db.wide_keys (id bigint, i int, d date, s string, b binary, dec decimal(10,2), "
             "f float, dbl double, flag boolean, u bigint, v bigint) USING iceberg TBLPROPERTIES ('format-version'='2')")
    java.sql("INSERT INTO ref.db.wide_keys SELECT x, CAST(x AS INT), "
             "date_add(DATE'2020-01-01', CAST(x AS INT)), CAST(x AS STRING), CAST(CAST(x AS STRING) AS BINARY), "
             "CAST(x AS DECIMAL(10,2)), CAST(x AS FLOAT), IF(x % 5 = 0, NULL, CAST(x AS DOUBLE)), x % 2 = 0, x * 3, "
             "-x FROM (SELECT /*+ REPARTITION_BY_RANGE(80, id) */ id AS x FROM range(0, 8000))")
    from sparkberg.avro import decode
    monkeypatch.setattr(decode, "LOAD_BUDGET_ENTRIES", 0)  # (compiled code decodes, as in a process it is loaded in)
    asked = []
    for name in ("read_manifest_columns", "read_manifests_columns"):
        real = getattr(decode, name)
        monkeypatch.setattr(decode, name, lambda *a, _real=real: asked.append(a[3]) or _real(*a))
    t = table(java, java_warehouse, "wide_keys")
    expr = java._jvm.org.apache.iceberg.expressions.Expressions
    jt = java._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(java._jsparkSession, "ref.db.wide_keys")
    scan = jt.newScan().filter(getattr(expr, "and")(expr.greaterThanOrEqual("id", 1000), expr.lessThan("id", 1500)))
    expected, it = set(), scan.planFiles().iterator()
    while it.hasNext():
        expected.add(str(it.next().file().location()))
    ours = {r[0] for r in t.plan_files(filter="id >= 1000 AND id < 1500", planning="local").collect()}
    assert ours == expected and 0 < len(ours) < 80 / 4
    assert frozenset({1}) in asked  # (the field id of ``id``: only its metrics were kept)
    assert rows(t.to_df(filter="id >= 1000 AND id < 1500")) == \
        rows(java.sql("SELECT * FROM ref.db.wide_keys WHERE id >= 1000 AND id < 1500"))


def test_ancient_datetimes_read_on_a_default_spark_35_session(corpus, java, java_warehouse):
    # Spark 3.5's default rebase mode refuses these values in files without Spark's calendar metadata
    assert java.conf.get("spark.sql.parquet.datetimeRebaseModeInRead") == "EXCEPTION"
    t = table(java, java_warehouse, "v2_ancient")
    got = sorted((r["id"], r["d"], r["ts"], r["tsn"]) for r in t.to_df().collect())
    assert got[0] == (1, dt.date(1000, 1, 1), dt.datetime(1200, 6, 1, 12, 0), dt.datetime(1899, 12, 31, 23, 59, 59))
    assert got[1][3] == dt.datetime(1, 1, 1)
    assert rows(t.to_df(filter="d < DATE '1582-10-15'")) == rows(
        java.sql("SELECT * FROM ref.db.v2_ancient WHERE d < DATE '1582-10-15'"))


def test_ancient_datetimes_written_by_sparkberg_read_in_java_pyiceberg_and_duckdb(corpus, java, java_warehouse, duck):
    from pyiceberg.table import StaticTable
    cat = sparkberg.catalog(java, java_warehouse)
    cat.create_namespace("sbanc") if not cat.namespace_exists("sbanc") else None
    t = cat.create_table("sbanc.t", "id int, d date, ts timestamp, tsn timestamp_ntz")
    t.append(java.sql("SELECT * FROM ref.db.v2_ancient"))
    expected = sorted(tuple(r) for r in java.sql("SELECT * FROM ref.db.v2_ancient").collect())
    assert sorted(tuple(r) for r in java.sql("SELECT * FROM ref.sbanc.t").collect()) == expected
    assert sorted(tuple(r) for r in t.to_df().collect()) == expected
    pyi = StaticTable.from_metadata(t.metadata_location).scan().to_arrow()
    assert sorted(pyi.column("d").to_pylist()) == sorted(r[1] for r in expected)
    duck_dates = sorted(r[0] for r in duck.sql(f"SELECT d FROM iceberg_scan('{t.metadata_location}')").fetchall())
    assert duck_dates == sorted(r[1] for r in expected)


def test_a_v1_table_upgraded_to_v2_takes_writes_java_reads(corpus, java, java_warehouse):
    from corpus import SCRIPTS
    name = "ref.db.v1_to_v2_written"
    java.sql(f"DROP TABLE IF EXISTS {name}")
    for stmt in SCRIPTS["v1_to_v2"]:
        java.sql(stmt.format(t=name))
    t = sparkberg.catalog(java, java_warehouse).load_table("db.v1_to_v2_written")
    v1_snaps = [s for s in t.metadata.snapshots if s.sequence_number is None]
    assert len(v1_snaps) == 2 and all(s.data_sequence_number == 0 for s in v1_snaps)
    t.append(java.sql("SELECT id + 100 AS id, 'sb' AS data FROM range(5)"))
    t.delete("id = 101")
    java.sql(f"REFRESH TABLE {name}")
    assert rows(t.to_df()) == rows(java.sql(f"SELECT * FROM {name}"))
    assert java.sql(f"SELECT count(*) FROM {name} WHERE data = 'sb'").first()[0] == 4
    for snap in t.metadata.snapshots:
        assert rows(t.to_df(snapshot_id=snap.snapshot_id)) == rows(
            java.sql(f"SELECT * FROM {name} VERSION AS OF {snap.snapshot_id}")), snap.snapshot_id


def _java_planned(java, name, expression, jt=None) -> set:
    if jt is None:
        jt = java._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(java._jsparkSession, f"ref.db.{name}")
    out, it = set(), jt.newScan().filter(expression).planFiles().iterator()
    while it.hasNext():
        out.add(str(it.next().file().location()))
    return out


def test_binary_fixed_and_null_pruning_as_javas(corpus, java, java_warehouse):
    e = java._jvm.org.apache.iceberg.expressions.Expressions
    wrap = java._jvm.java.nio.ByteBuffer.wrap
    t = table(java, java_warehouse, "v2_prune_types")
    cases = {"dt IS NULL OR bin = X''": getattr(e, "or")(e.isNull("dt"), e.equal("bin", wrap(bytearray()))),
             "bin = X'02'": e.equal("bin", wrap(bytearray(b"\x02"))),
             "fx = X'02000000'": e.equal("fx", wrap(bytearray(b"\x02\x00\x00\x00")))}
    for text, expression in cases.items():
        ours = {r[0] for r in t.plan_files(filter=text).collect()}
        assert ours == _java_planned(java, "v2_prune_types", expression) and len(ours) == 1, text
        assert rows(t.to_df(filter=text)) == rows(java.sql(f"SELECT * FROM ref.db.v2_prune_types WHERE {text}"))


def test_uuid_bounds_prune_and_every_matching_row_is_found(corpus, java, java_warehouse):
    # the data is the truth here: Iceberg Java 1.10.2 compares UUID bounds as signed longs and prunes a file
    # holding a row with the high bit set (fixed upstream after 1.10); the spec orders them as unsigned bytes
    from corpus import PRUNE_UUIDS
    t = table(java, java_warehouse, "v2_prune_types")
    everything = [(r["id"], r["u"]) for r in t.to_df().collect()]
    for op, u in [("=", PRUNE_UUIDS[2]), ("=", PRUNE_UUIDS[3]), (">", PRUNE_UUIDS[1]), ("<", PRUNE_UUIDS[2]),
                  (">=", PRUNE_UUIDS[3]), ("<=", PRUNE_UUIDS[0])]:
        text = f"u {op} '{u}'"
        truth = sorted(i for i, v in everything if v is not None and
                       {"=": v == u, ">": v > u, "<": v < u, ">=": v >= u, "<=": v <= u}[op])
        assert sorted(r["id"] for r in t.to_df(filter=text).collect()) == truth, text
        assert t.plan_files(filter=text).count() == len(truth), text  # one file per row: pruned to the rows


@pytest.mark.parametrize("planning", ["local", "distributed"])
def test_a_transform_from_a_newer_engine_reads_like_java(corpus, java, java_warehouse, planning):
    import glob
    import json
    name = f"ref.db.future_transform_{planning}"
    java.sql(f"DROP TABLE IF EXISTS {name}")
    java.sql(f"CREATE TABLE {name} (id bigint, p int) USING iceberg PARTITIONED BY (bucket(4, p), p) "
             "TBLPROPERTIES ('format-version'='2')")
    java.sql(f"INSERT INTO {name} SELECT /*+ REPARTITION(70, p) */ id, CAST(id % 70 AS int) AS p FROM range(0, 210)")
    root = os.path.join(java_warehouse, "db", name.split(".")[-1])
    path = max(glob.glob(os.path.join(root, "metadata", "v*.metadata.json")),
               key=lambda p: int(os.path.basename(p)[1:].split(".")[0]))
    with open(path) as f:
        meta = json.load(f)
    meta["partition-specs"][0]["fields"][0]["transform"] = "future_hash[4]"
    with open(path, "w") as f:
        json.dump(meta, f)
    crc = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.crc")  # (Hadoop's checksum of it)
    if os.path.exists(crc):
        os.remove(crc)
    # Java's Spark tables refuse it ("Cannot build table partition type, unknown transforms"); its core API
    # scans and reads it, the field pruning nothing
    jvm = java._jvm
    jt = jvm.org.apache.iceberg.hadoop.HadoopTables(java.sparkContext._jsc.hadoopConfiguration()).load(root)
    records, it = [], jvm.org.apache.iceberg.data.IcebergGenerics.read(jt).build().iterator()
    while it.hasNext():
        r = it.next()
        records.append((r.getField("id"), r.getField("p")))
    t = sparkberg.load_table(java, root)
    assert not t.spec().fields[0].transform.is_known
    assert len(records) == 210 and rows(t.to_df(planning=planning)) == Counter(records)
    assert rows(t.to_df(filter="p = 5", planning=planning)) == Counter(r for r in records if r[1] == 5)
    java_files = _java_planned(java, None, jvm.org.apache.iceberg.expressions.Expressions.equal("p", 5), jt)
    ours = {r[0] for r in t.plan_files(filter="p = 5", planning=planning).collect()}
    assert ours == java_files and len(ours) == 1  # the identity field still prunes
