"""``sparkberg.sql``: each statement form of Iceberg's Spark SQL, run through the table API, checked on the table
it changed (schema with field ids, spec, sort order, refs, properties, rows, snapshot operations); the errors
(syntax with its position, unsupported statements named, a failing statement in a script named and changing
nothing); the default catalog from the Spark conf; the ``%%sparkberg`` magic and the ``sparkberg-sql`` job."""
import os

import pytest

import sparkberg
from sparkberg.errors import (
    NoSuchTableError, NotSupportedError, TableAlreadyExistsError, ValidationError,
)
from sparkberg.sql.parsing import SqlSyntaxError
from sparkberg.sql.statements import StatementFailedError

pytestmark = pytest.mark.spark


@pytest.fixture
def cat(spark, tmp_path):
    c = sparkberg.catalog(spark, f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh", name="cat")
    c.create_namespace("db")
    return c


@pytest.fixture
def sql(spark, cat):
    return lambda text: sparkberg.sql(spark, text, catalog=cat)


def rows(df, order=True):
    out = [tuple(r) for r in df.collect()]
    return sorted(out, key=lambda r: tuple((v is None, v if v is not None else 0) for v in r)) if order else out


def struct(t):
    """(name, id, type, required, doc) of the current schema's fields, nested ones as their JSON."""
    return [(f.name, f.field_id, str(f.field_type), f.required, f.doc) for f in t.schema().fields]


def test_sparkberg_sql_is_the_package_and_the_function(spark, cat):
    import sparkberg.sql.views as views
    assert callable(sparkberg.sql) and views.__name__ == "sparkberg.sql.views"
    assert rows(sparkberg.sql(spark, "SELECT 1 AS x")) == [(1,)]  # (no sparkberg table: Spark's own)


def test_create_table_with_columns_transforms_and_properties(sql, cat, tmp_path):
    sql("""CREATE TABLE db.t (id bigint NOT NULL COMMENT 'the key', data string, ts timestamp, d date,
                              point struct<x: double, y: double>, tags array<string>)
           USING iceberg
           PARTITIONED BY (years(d), months(ts), bucket(16, id), truncate(4, data))
           COMMENT 'events'
           TBLPROPERTIES ('format-version' = '3', 'write.delete.mode' = 'merge-on-read')""")
    t = cat.load_table("db.t")
    assert t.format_version == 3
    assert [(f.name, f.required, f.doc) for f in t.schema().fields] == [
        ("id", True, "the key"), ("data", False, None), ("ts", False, None), ("d", False, None),
        ("point", False, None), ("tags", False, None)]
    assert [str(f.transform) for f in t.spec().fields] == ["year", "month", "bucket[16]", "truncate[4]"]
    assert t.properties["write.delete.mode"] == "merge-on-read" and t.properties["comment"] == "events"
    sql("CREATE TABLE IF NOT EXISTS db.t (x int)")  # (exists: nothing happens)
    assert cat.load_table("db.t").metadata_location == t.metadata_location
    with pytest.raises(TableAlreadyExistsError):
        sql("CREATE TABLE db.t (x int)")
    with pytest.raises(ValidationError, match="USING parquet"):
        sql("CREATE TABLE db.p (x int) USING parquet")
    sql(f"CREATE TABLE db.h (id bigint, ts timestamp) PARTITIONED BY (hours(ts), days(ts), id) "
        f"LOCATION 'file://{tmp_path}/elsewhere/h'")
    h = cat.load_table("db.h")
    assert [str(f.transform) for f in h.spec().fields] == ["hour", "day", "identity"]
    assert h.location == f"file://{tmp_path}/elsewhere/h"


def test_create_table_as_select_and_replace_keep_history(sql, cat, spark):
    spark.sql("SELECT id, CAST(id AS string) AS data FROM range(5)").createOrReplaceTempView("src_ctas")
    sql("CREATE TABLE db.c USING iceberg PARTITIONED BY (bucket(2, id)) TBLPROPERTIES ('k'='v') "
        "AS SELECT * FROM src_ctas")
    c = cat.load_table("db.c")
    assert rows(c.to_df()) == [(i, str(i)) for i in range(5)]
    assert [f.required for f in c.schema().fields] == [False, False]  # (as Spark's CTAS: nullable)
    first = c.current_snapshot().snapshot_id
    ids = {f.name: f.field_id for f in c.schema().fields}
    sql("REPLACE TABLE db.c USING iceberg PARTITIONED BY (data) TBLPROPERTIES ('k2'='v2') "
        "AS SELECT data, id * 10 AS id, true AS flag FROM src_ctas WHERE id < 2")
    c = cat.load_table("db.c")
    assert rows(c.to_df()) == [("0", 0, True), ("1", 10, True)]
    new_ids = {f.name: f.field_id for f in c.schema().fields}
    assert new_ids["id"] == ids["id"] and new_ids["data"] == ids["data"] and new_ids["flag"] == 3
    assert [str(f.transform) for f in c.spec().fields] == ["identity"]
    assert c.properties["k"] == "v" and c.properties["k2"] == "v2"
    assert c.current_snapshot().parent_snapshot_id is None and len(c.snapshots()) == 2
    assert rows(c.to_df(snapshot_id=first))[0] == (0, "0")  # (history stays for time travel)
    sql("CREATE OR REPLACE TABLE db.c (only bigint)")  # (replaced, no rows: no current snapshot)
    c = cat.load_table("db.c")
    assert c.current_snapshot() is None and [f.name for f in c.schema().fields] == ["only"]
    sql("CREATE OR REPLACE TABLE db.fresh USING iceberg AS SELECT 1 AS one")  # (created)
    assert rows(cat.load_table("db.fresh").to_df()) == [(1,)]
    with pytest.raises(NoSuchTableError):
        sql("REPLACE TABLE db.missing AS SELECT 1 AS one")
    with pytest.raises(Exception, match="boom"):  # (CTAS whose write fails: no table is left)
        sql("CREATE TABLE db.failed AS SELECT id, IF(id = 2, CAST(raise_error('boom') AS string), 'ok') AS x FROM range(3)")
    assert not cat.table_exists("db.failed")


def test_drop_table(sql, cat):
    sql("CREATE TABLE db.d1 (x int); CREATE TABLE db.d2 (x int); INSERT INTO db.d2 VALUES (1)")
    location = cat.load_table("db.d2").location.replace("file://", "")
    sql("DROP TABLE db.d1")
    sql("DROP TABLE cat.db.d2 PURGE")
    assert cat.list_tables("db") == [] and not [f for _, _, files in os.walk(location) for f in files]
    sql("DROP TABLE IF EXISTS db.d1")
    with pytest.raises(NoSuchTableError):
        sql("DROP TABLE db.d1")


def test_alter_table_columns(sql, cat):
    sql("CREATE TABLE db.a (id bigint, m int, data string, s struct<x: int>)")
    sql("ALTER TABLE db.a ADD COLUMNS (first_col string FIRST, after_id double COMMENT 'c' AFTER id)")
    sql("ALTER TABLE db.a ADD COLUMN s.y string")
    sql("ALTER TABLE db.a RENAME COLUMN data TO payload")
    sql("ALTER TABLE db.a ALTER COLUMN m TYPE bigint")
    sql("ALTER TABLE db.a ALTER COLUMN m COMMENT 'measure'")
    sql("ALTER TABLE db.a ALTER COLUMN payload FIRST")
    sql("ALTER TABLE db.a ALTER COLUMN first_col AFTER m")
    t = cat.load_table("db.a")
    assert [(n, i, ty, doc) for n, i, ty, _, doc in struct(t)] == [
        ("payload", 3, "string", None), ("id", 1, "long", None), ("after_id", 7, "double", "c"),
        ("m", 2, "long", "measure"), ("first_col", 6, "string", None),
        ("s", 4, "struct<5: x: optional int, 8: y: optional string>", None)]
    sql("ALTER TABLE db.a DROP COLUMN first_col")
    sql("ALTER TABLE db.a DROP COLUMNS (after_id, s.y)")
    with pytest.raises(ValidationError, match="required"):
        sql("ALTER TABLE db.a ADD COLUMNS (req int NOT NULL)")
    assert [f.name for f in cat.load_table("db.a").schema().fields] == ["payload", "id", "m", "s"]
    sql("CREATE TABLE db.r (id bigint NOT NULL)")
    sql("ALTER TABLE db.r ALTER COLUMN id DROP NOT NULL")
    assert not cat.load_table("db.r").schema().fields[0].required
    with pytest.raises(ValidationError, match="required"):
        sql("ALTER TABLE db.r ALTER COLUMN id SET NOT NULL")


def test_alter_table_properties_and_rename(sql, cat):
    sql("CREATE TABLE db.p (x int)")
    sql("ALTER TABLE db.p SET TBLPROPERTIES ('a' = '1', 'b' = '2')")
    sql("ALTER TABLE db.p UNSET TBLPROPERTIES ('a')")
    sql("ALTER TABLE db.p UNSET TBLPROPERTIES IF EXISTS ('nope')")
    assert {k: v for k, v in cat.load_table("db.p").properties.items() if k in "ab"} == {"b": "2"}
    sql(f"ALTER TABLE db.p SET LOCATION '{cat.load_table('db.p').location}/moved'")
    assert cat.load_table("db.p").location.endswith("/p/moved")
    sql("ALTER TABLE db.p RENAME TO db.q")
    assert cat.list_tables("db") == ["db.q"]
    sql("ALTER TABLE db.q RENAME TO r")  # (a bare name stays in the namespace)
    assert cat.list_tables("db") == ["db.r"]


def test_partition_fields_write_order_and_identifier_fields(sql, cat):
    sql("CREATE TABLE db.e (id bigint NOT NULL, ts timestamp, data string) PARTITIONED BY (days(ts))")
    sql("ALTER TABLE db.e ADD PARTITION FIELD bucket(8, id) AS shard")
    sql("ALTER TABLE db.e ADD PARTITION FIELD truncate(2, data)")
    t = cat.load_table("db.e")
    assert [(f.name, str(f.transform)) for f in t.spec().fields] == [
        ("ts_day", "day"), ("shard", "bucket[8]"), ("data_trunc_2", "truncate[2]")]
    sql("ALTER TABLE db.e DROP PARTITION FIELD shard")
    sql("ALTER TABLE db.e REPLACE PARTITION FIELD days(ts) WITH hours(ts) AS hour")
    sql("ALTER TABLE db.e DROP PARTITION FIELD truncate(2, data)")
    t = cat.load_table("db.e")
    assert [(f.name, str(f.transform)) for f in t.spec().fields if str(f.transform) != "void"] == [("hour", "hour")]
    sql("ALTER TABLE db.e WRITE ORDERED BY id DESC NULLS FIRST, bucket(4, data)")
    t = cat.load_table("db.e")
    assert [(f.direction, f.null_order, str(f.transform)) for f in t.sort_order().fields] == [
        ("desc", "nulls-first", "identity"), ("asc", "nulls-first", "bucket[4]")]
    assert t.properties["write.distribution-mode"] == "range"
    sql("ALTER TABLE db.e WRITE LOCALLY ORDERED BY ts")  # (as Java's: the distribution mode stays as it was)
    assert cat.load_table("db.e").properties["write.distribution-mode"] == "range"
    sql("ALTER TABLE db.e WRITE DISTRIBUTED BY PARTITION LOCALLY ORDERED BY id")
    t = cat.load_table("db.e")
    assert t.properties["write.distribution-mode"] == "hash" and len(t.sort_order().fields) == 1
    sql("ALTER TABLE db.e WRITE UNORDERED")
    t = cat.load_table("db.e")
    assert t.sort_order().fields == () and t.properties["write.distribution-mode"] == "none"
    with pytest.raises(ValidationError):
        sql("ALTER TABLE db.e SET IDENTIFIER FIELDS ts")  # (optional: cannot identify rows)
    sql("ALTER TABLE db.e SET IDENTIFIER FIELDS id")
    assert cat.load_table("db.e").schema().identifier_field_ids == (1,)
    with pytest.raises(ValidationError, match="identifier"):
        sql("ALTER TABLE db.e DROP IDENTIFIER FIELDS data")
    sql("ALTER TABLE db.e DROP IDENTIFIER FIELDS id")
    assert cat.load_table("db.e").schema().identifier_field_ids == ()


def test_branches_and_tags(sql, cat):
    sql("CREATE TABLE db.b (x int); INSERT INTO db.b VALUES (1); INSERT INTO db.b VALUES (2)")
    s1, s2 = (s.snapshot_id for s in cat.load_table("db.b").snapshots())
    sql(f"ALTER TABLE db.b CREATE BRANCH audit AS OF VERSION {s1} RETAIN 7 DAYS "
        "WITH SNAPSHOT RETENTION 3 SNAPSHOTS 2 HOURS")
    sql("ALTER TABLE db.b CREATE BRANCH IF NOT EXISTS audit")  # (exists: nothing happens)
    sql("ALTER TABLE db.b CREATE TAG eod RETAIN 30 DAYS")
    refs = cat.load_table("db.b").metadata.refs
    a = refs["audit"]
    assert (a.snapshot_id, a.max_ref_age_ms, a.min_snapshots_to_keep, a.max_snapshot_age_ms) == (
        s1, 7 * 86_400_000, 3, 2 * 3_600_000)
    assert (refs["eod"].type, refs["eod"].snapshot_id, refs["eod"].max_ref_age_ms) == ("tag", s2, 30 * 86_400_000)
    sql(f"ALTER TABLE db.b REPLACE BRANCH audit AS OF VERSION {s2}")
    sql(f"ALTER TABLE db.b CREATE OR REPLACE TAG eod AS OF VERSION {s1}")
    sql("ALTER TABLE db.b CREATE OR REPLACE BRANCH dev WITH SNAPSHOT RETENTION 5 DAYS")
    refs = cat.load_table("db.b").metadata.refs
    assert refs["audit"].snapshot_id == s2 and refs["audit"].min_snapshots_to_keep == 3  # (retention kept)
    assert refs["eod"].snapshot_id == s1 and refs["dev"].max_snapshot_age_ms == 5 * 86_400_000
    with pytest.raises(ValidationError):
        sql("ALTER TABLE db.b CREATE BRANCH audit")
    with pytest.raises(ValidationError):
        sql("ALTER TABLE db.b REPLACE TAG nope")
    sql("ALTER TABLE db.b DROP BRANCH dev; ALTER TABLE db.b DROP TAG eod; ALTER TABLE db.b DROP BRANCH IF EXISTS x")
    assert sorted(cat.load_table("db.b").metadata.refs) == ["audit", "main"]
    with pytest.raises(ValidationError, match="no tag"):
        sql("ALTER TABLE db.b DROP TAG eod")


def test_insert_into_and_overwrite(sql, cat, spark):
    sql("CREATE TABLE db.i (id bigint, data string, p string) PARTITIONED BY (p)")
    sql("INSERT INTO db.i VALUES (1, 'a', 'x'), (2, 'b', 'y')")
    sql("INSERT INTO db.i (p, data, id) SELECT 'z', null, 3")  # (by the names listed)
    with pytest.raises(ValidationError, match="no data for column data"):
        sql("INSERT INTO db.i (p, id) SELECT 'z', 3")
    assert rows(sql("SELECT * FROM db.i")) == [(1, "a", "x"), (2, "b", "y"), (3, None, "z")]
    with pytest.raises(ValidationError, match="gives 2 columns"):
        sql("INSERT INTO db.i SELECT 1, 'a'")
    sql("ALTER TABLE db.i CREATE BRANCH dev; ALTER TABLE db.i CREATE TAG t1")
    sql("INSERT INTO db.i.branch_dev VALUES (9, 'dev', 'x')")
    assert rows(sql("SELECT id FROM db.i.branch_dev")) == [(1,), (2,), (3,), (9,)]
    assert rows(sql("SELECT id FROM db.i")) == [(1,), (2,), (3,)]
    with pytest.raises(ValidationError, match="tag"):
        sql("INSERT INTO db.i.tag_t1 VALUES (9, 'dev', 'x')")
    sql("INSERT OVERWRITE db.i PARTITION (p = 'x') SELECT 10, 'new'")  # (static: partition x replaced)
    assert rows(sql("SELECT id, p FROM db.i")) == [(2, "y"), (3, "z"), (10, "x")]
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        sql("INSERT OVERWRITE db.i SELECT 20, 'dyn', 'y'")  # (dynamic: only partition y replaced)
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    assert rows(sql("SELECT id, p FROM db.i")) == [(3, "z"), (10, "x"), (20, "y")]
    sql("INSERT INTO db.i REPLACE WHERE p = 'z' SELECT 11, 'r', 'z'")  # (the rows matching replaced)
    assert rows(sql("SELECT id, p FROM db.i WHERE p = 'z'")) == [(11, "z")]
    sql("CREATE TABLE db.i2 (id bigint, data string, p string); INSERT INTO db.i2 TABLE db.i")
    sql("INSERT INTO db.i2 BY NAME SELECT 'q' AS p, 12 AS id, 'n' AS data")
    assert rows(sql("SELECT id, p FROM db.i2")) == [(10, "x"), (11, "z"), (12, "q"), (20, "y")]
    sql("INSERT OVERWRITE TABLE db.i SELECT 30, 'all', 'w'")  # (static, no PARTITION: every row)
    assert rows(sql("SELECT id, p FROM db.i")) == [(30, "w")]
    ops = [s.operation for s in cat.load_table("db.i").snapshots()]
    assert ops.count("overwrite") == 4


def test_delete_update_and_merge(sql, cat, spark):
    sql("CREATE TABLE db.m (id bigint, v string, n int) TBLPROPERTIES ('write.delete.mode'='merge-on-read')")
    sql("INSERT INTO db.m SELECT id, CAST(id AS string), 0 FROM range(10)")
    sql("DELETE FROM db.m AS t WHERE t.id >= 8")
    sql("UPDATE db.m AS t SET v = upper(concat('u', t.v)), n = n + 1 WHERE id < 2")
    assert rows(sql("SELECT * FROM db.m WHERE id < 3")) == [(0, "U0", 1), (1, "U1", 1), (2, "2", 0)]
    sql("CREATE TABLE db.gone (id bigint); INSERT INTO db.gone VALUES (7), (9)")
    sql("DELETE FROM db.m WHERE id IN (SELECT id + 2 FROM db.gone WHERE id > 7)")  # (a subquery over a table: 11)
    sql("UPDATE db.m SET n = (SELECT max(id) FROM db.gone) WHERE id = 7 AND EXISTS (SELECT 1 FROM db.gone)")
    assert rows(sql("SELECT id, n FROM db.m WHERE id >= 7")) == [(7, 9)]
    sql("UPDATE db.m SET n = 0 WHERE id = 7")
    spark.sql("SELECT * FROM VALUES (1L, 'del'), (2L, 'upd'), (3L, 'all'), (50L, 'ins'), (51L, 'skip') "
              "AS s(id, op)").createOrReplaceTempView("changes_src")
    sql("""MERGE INTO db.m t USING (SELECT id, op, op AS v, 7 AS n FROM changes_src) s ON t.id = s.id
           WHEN MATCHED AND s.op = 'del' THEN DELETE
           WHEN MATCHED AND s.op = 'upd' THEN UPDATE SET t.v = s.v, n = t.n + 100
           WHEN MATCHED THEN UPDATE SET *
           WHEN NOT MATCHED AND s.op = 'skip' THEN INSERT (id, v) VALUES (s.id, 'skipped')
           WHEN NOT MATCHED THEN INSERT *
           WHEN NOT MATCHED BY SOURCE AND t.id = 7 THEN UPDATE SET v = 'orphan'
           WHEN NOT MATCHED BY SOURCE AND t.id = 6 THEN DELETE""")
    assert rows(sql("SELECT id, v, n FROM db.m")) == [
        (0, "U0", 1), (2, "upd", 100), (3, "all", 7), (4, "4", 0), (5, "5", 0), (7, "orphan", 0),
        (50, "ins", 7), (51, "skipped", None)]
    sql("CREATE TABLE db.src (id bigint, v string); INSERT INTO db.src VALUES (0, 'from-table')")
    sql("MERGE INTO db.m USING db.src ON m.id = src.id WHEN MATCHED THEN UPDATE SET m.v = src.v")
    assert rows(sql("SELECT v FROM db.m WHERE id = 0")) == [("from-table",)]
    assert "Physical Plan" in rows(sql("EXPLAIN SELECT * FROM db.m WHERE id = 3"))[0][0]
    sql("TRUNCATE TABLE db.m")
    assert rows(sql("SELECT count(*) FROM db.m")) == [(0,)]
    sql("REFRESH TABLE db.m")
    assert [s.operation for s in cat.load_table("db.m").snapshots()][-1] == "delete"


def test_queries_time_travel_refs_and_metadata_tables(sql, cat, spark):
    sql("CREATE TABLE db.q (id bigint); INSERT INTO db.q VALUES (1); INSERT INTO db.q VALUES (2)")
    t = cat.load_table("db.q")
    s1, s2 = t.snapshots()
    sql(f"ALTER TABLE db.q CREATE TAG first AS OF VERSION {s1.snapshot_id}")
    sql("ALTER TABLE db.q CREATE BRANCH b; INSERT INTO db.q.branch_b VALUES (3)")
    assert rows(sql(f"SELECT * FROM db.q VERSION AS OF {s1.snapshot_id}")) == [(1,)]
    assert rows(sql("SELECT * FROM db.q VERSION AS OF 'first'")) == [(1,)]
    assert rows(sql("SELECT * FROM db.q VERSION AS OF 'b'")) == [(1,), (2,), (3,)]
    stamp = spark.sql(f"SELECT timestamp_millis({s1.timestamp_ms})").collect()[0][0]
    assert rows(sql(f"SELECT * FROM db.q TIMESTAMP AS OF '{stamp}'")) == [(1,)]
    assert rows(sql("SELECT * FROM db.q.tag_first")) == [(1,)]
    assert rows(sql("SELECT * FROM cat.db.q.branch_b")) == [(1,), (2,), (3,)]
    snaps = rows(sql("SELECT snapshot_id, operation FROM db.q.snapshots"))
    assert len(snaps) == 3 and {op for _, op in snaps} == {"append"}
    assert rows(sql("SELECT count(*) FROM cat.db.q.files")) == [(2,)]
    assert rows(sql(f"SELECT count(*) FROM db.q.files VERSION AS OF {s1.snapshot_id}")) == [(1,)]
    assert sorted(r[0] for r in sql("SELECT name FROM db.q.refs").collect()) == ["b", "first", "main"]
    spark.sql("SELECT 2L AS id, 'two' AS label").createOrReplaceTempView("labels")
    joined = sql("WITH cur AS (SELECT id FROM db.q) SELECT q.id, l.label, f.id AS then FROM cur q "
                 f"JOIN labels l ON q.id = l.id LEFT JOIN db.q VERSION AS OF {s1.snapshot_id} f ON f.id = q.id")
    assert rows(joined) == [(2, "two", None)]
    assert rows(sql("SELECT q.id FROM db.q WHERE q.id > 1")) == [(2,)]  # (the table's name qualifies its columns)
    with pytest.raises(NoSuchTableError, match="metadata table"):
        sql("SELECT * FROM db.q.nonsense")
    with pytest.raises(ValidationError, match="no branch or tag"):
        sql("SELECT * FROM db.q VERSION AS OF 'nope'")


def test_a_query_of_one_table_is_its_dataframe_filtered_and_projected_without_a_view(sql, cat, spark):
    """``SELECT <items> FROM t [WHERE c]`` (time travel, a ref, a metadata table, an unqualified alias; aggregates,
    a FILTER, a window, a lateral alias, casts, a star beside other items) is the DataFrame the table reads,
    filtered and projected: no temporary view is made for it, and it holds what Spark's query of a view of the
    table holds, in the same columns (names, types); ``SELECT * FROM t`` is that DataFrame itself. A query with
    anything more (a grouping, an ordering, a limit, a subquery, a qualified column) is Spark's query of a view."""
    from sparkberg.sql.names import Names, rewrite_query
    from sparkberg.sql.parsing import Statement, parse

    sql("CREATE TABLE db.w (id bigint, s string, d date) PARTITIONED BY (d); "
        "INSERT INTO db.w VALUES (1, 'a', DATE '2024-01-01'), (2, 'b', DATE '2024-01-02'); "
        "INSERT INTO db.w VALUES (3, 'c', DATE '2024-01-02'), (4, NULL, NULL)")
    first = cat.load_table("db.w").snapshots()[0].snapshot_id

    def temporary_views():
        return {v.name for v in spark.catalog.listTables() if v.isTemporary}

    def no_temporary_views():
        for name in temporary_views():
            spark.catalog.dropTempView(name)
        return set()

    def columns(df):
        # (Spark's SQL marks the names it makes for unaliased expressions with the field metadata
        # __autoGeneratedAlias, which only its check of a permanent view's SQL reads; the DataFrame API makes the same
        # names, unmarked: any other metadata, name, type or nullability must be the same)
        return [(f.name, f.dataType, f.nullable, {k: v for k, v in f.metadata.items() if k != "__autoGeneratedAlias"})
                for f in df.schema.fields]

    def viewed(query):  # (Spark's query of views of the tables it reads: sparkberg.sql's way for any query)
        rewritten, replaced = rewrite_query(Names(spark, cat), parse(Statement(query, 0, 1, query)))
        assert replaced, query
        return spark.sql(rewritten.sql(dialect="spark"))
    one_table = [
        ("SELECT * FROM db.w", 4), (f"SELECT * FROM db.w VERSION AS OF {first}", 2),
        ("SELECT * FROM cat.db.w.branch_main", 4), ("SELECT * FROM db.w AS x", 4),
        ("SELECT * FROM db.w.snapshots", 2), (f"SELECT * FROM db.w.files VERSION AS OF {first}", 2),
        ("SELECT id, s FROM db.w WHERE id > 1", 3), ("SELECT *, 1 AS one FROM db.w WHERE d = DATE '2024-01-02'", 2),
        ("SELECT s, id * 2 AS twice FROM db.w x WHERE s IS NOT NULL AND id < 3", 2),
        ("SELECT max(id), min(s), count(DISTINCT d) FROM db.w", 1),
        ("SELECT sum(id) FILTER (WHERE d IS NOT NULL), count(*) FROM db.w WHERE id <> 2", 1),
        ("SELECT id, row_number() OVER (PARTITION BY d ORDER BY id) AS n FROM db.w", 4),
        ("SELECT id + 1 AS a, a * 10 AS b, CAST(id AS string), upper(s), 'x' FROM db.w", 4),
        (f"SELECT id FROM db.w VERSION AS OF {first} WHERE id >= 2", 1),
        ("SELECT count(*) FILTER (WHERE operation = 'append'), max(committed_at) FROM db.w.snapshots", 1),
        ("SELECT file_path, record_count FROM db.w.files WHERE record_count = 1", 4),
        ("SELECT sum(added_data_files_count), max(length) FROM db.w.manifests", 1),
    ]
    for query, want in one_table:
        before = no_temporary_views()
        got = sql(query)
        assert temporary_views() == before, query
        reference = viewed(query)
        assert columns(got) == columns(reference), query
        assert rows(got) == rows(reference) and got.count() == want, query
    for query, want in (("SELECT s, count(*) FROM db.w GROUP BY s", 4), ("SELECT id FROM db.w ORDER BY id", 4),
                        ("SELECT * FROM db.w ORDER BY id LIMIT 1", 1), ("SELECT w.id FROM db.w WHERE w.id > 2", 2),
                        ("SELECT id FROM db.w WHERE id IN (SELECT id FROM db.w WHERE s = 'a')", 1),
                        ("SELECT DISTINCT d FROM db.w", 3), ("SELECT x.s FROM db.w AS x WHERE x.id = 1", 1)):
        before = no_temporary_views()
        got = sql(query)
        assert temporary_views() != before, query  # (Spark's query of a view of the table)
        assert got.count() == want, query
        assert rows(got) == rows(viewed(query)), query


def test_procedures(sql, cat, spark, tmp_path):
    sql("CREATE TABLE db.pr (id bigint, p int) PARTITIONED BY (p) TBLPROPERTIES ('write.wap.enabled'='true')")
    for i in range(3):
        sql(f"INSERT INTO db.pr VALUES ({i}, {i % 2})")
    t = cat.load_table("db.pr")
    s1, s2, s3 = (s.snapshot_id for s in t.snapshots())
    out = sql(f"CALL cat.system.rollback_to_snapshot('db.pr', {s2})")
    assert out.columns == ["previous_snapshot_id", "current_snapshot_id"] and rows(out) == [(s3, s2)]
    out = sql(f"CALL system.set_current_snapshot(table => 'db.pr', snapshot_id => {s3})")
    assert rows(out) == [(s2, s3)]
    ts = t.metadata.snapshot_by_id(s1).timestamp_ms
    out = sql(f"CALL system.rollback_to_timestamp(table => 'db.pr', timestamp => timestamp_millis({ts + 1}))")
    assert rows(out) == [(s3, s1)]
    sql(f"ALTER TABLE db.pr CREATE TAG t2 AS OF VERSION {s2}")
    assert rows(sql("CALL system.set_current_snapshot(table => 'db.pr', ref => 't2')")) == [(s1, s2)]
    sql(f"CALL system.set_current_snapshot(table => 'db.pr', snapshot_id => {s3})")
    assert rows(sql("CALL system.ancestors_of('db.pr')"), order=False)[0][0] == s3
    anc = sql(f"CALL system.ancestors_of(snapshot_id => {s2}, table => 'db.pr')")
    assert anc.columns == ["snapshot_id", "timestamp"] and [r[0] for r in anc.collect()] == [s2, s1]
    spark.conf.set("spark.wap.id", "w1")
    try:
        sql("INSERT INTO db.pr VALUES (100, 0)")
    finally:
        spark.conf.unset("spark.wap.id")
    staged = [s for s in cat.load_table("db.pr").snapshots() if s.summary.get("wap.id") == "w1"][0].snapshot_id
    out = sql("CALL system.publish_changes('db.pr', 'w1')")
    assert out.columns == ["source_snapshot_id", "current_snapshot_id"] and rows(out)[0][0] == staged
    sql("ALTER TABLE db.pr CREATE BRANCH ff AS OF VERSION " + str(s1))
    out = sql("CALL system.fast_forward(table => 'db.pr', branch => 'ff', to => 'main')")
    head = cat.load_table("db.pr").current_snapshot().snapshot_id
    assert out.columns == ["branch_updated", "previous_ref", "updated_ref"] and rows(out) == [("ff", s1, head)]
    out = sql("CALL system.rewrite_data_files(table => 'db.pr', options => map('min-input-files', '2'), "
              "where => 'p = 0')")
    assert out.columns[:3] == ["rewritten_data_files_count", "added_data_files_count", "rewritten_bytes_count"]
    assert rows(out)[0][:2] == (3, 1)  # (ids 0, 2 and the published 100)
    out = sql("CALL system.rewrite_manifests('db.pr')")
    assert out.columns == ["rewritten_manifests_count", "added_manifests_count"]
    out = sql("CALL system.rewrite_position_delete_files(table => 'db.pr')")
    assert out.columns == ["rewritten_delete_files_count", "added_delete_files_count", "rewritten_bytes_count",
                           "added_bytes_count"]
    out = sql("CALL system.expire_snapshots(table => 'db.pr', older_than => current_timestamp(), "
              "retain_last => 1)")
    assert out.columns[0] == "deleted_data_files_count" and len(cat.load_table("db.pr").snapshots()) <= 3
    out = sql("CALL system.remove_orphan_files(table => 'db.pr', dry_run => true)")
    assert out.columns == ["orphan_file_location"]
    parquet = tmp_path / "import" / "p=1"
    spark.sql("SELECT 500L AS id").write.parquet(str(parquet))
    out = sql(f"CALL system.add_files(table => 'db.pr', source_table => '`parquet`.`{tmp_path}/import`', "
              "partition_filter => map('p', '1'))")
    assert out.columns == ["added_files_count", "changed_partition_count"] and rows(out)[0][0] >= 1
    assert rows(sql("SELECT id, p FROM db.pr WHERE id = 500")) == [(500, 1)]
    meta = cat.load_table("db.pr").metadata_location
    out = sql(f"CALL system.register_table(table => 'db.copy', metadata_file => '{meta}')")
    assert out.columns == ["current_snapshot_id", "total_records_count", "total_data_files_count"]
    assert rows(out)[0][0] == cat.load_table("db.pr").current_snapshot().snapshot_id
    out = sql("CALL system.create_changelog_view(table => 'db.pr', changelog_view => 'pr_changes', "
              "identifier_columns => array('id'))")
    assert rows(out) == [("pr_changes",)]
    assert spark.sql("SELECT * FROM pr_changes").columns[-3:] == ["_change_type", "_change_ordinal",
                                                                  "_commit_snapshot_id"]
    with pytest.raises(NotSupportedError, match="not supported"):
        sql("CALL system.rewrite_table_path('db.pr', 's3://a', 's3://b')")
    with pytest.raises(NotSupportedError, match="keeps no Hive tables"):  # (migrate: of a Hive or Glue catalog)
        sql("CALL system.migrate('db.pr')")
    with pytest.raises(ValidationError, match="has no argument 'snapshot'"):
        sql("CALL system.rollback_to_snapshot(table => 'db.pr', snapshot => 1)")
    with pytest.raises(ValidationError, match="needs argument snapshot_id"):
        sql("CALL system.rollback_to_snapshot('db.pr')")


def test_cherrypick_snapshot(sql, cat, spark):
    sql("CREATE TABLE db.cp (id bigint) TBLPROPERTIES ('write.wap.enabled'='true'); INSERT INTO db.cp VALUES (1)")
    spark.conf.set("spark.wap.id", "w2")
    try:
        sql("INSERT INTO db.cp VALUES (2)")
    finally:
        spark.conf.unset("spark.wap.id")
    staged = [s for s in cat.load_table("db.cp").snapshots() if s.summary.get("wap.id") == "w2"][0].snapshot_id
    out = sql(f"CALL system.cherrypick_snapshot('db.cp', {staged})")
    assert rows(out)[0][0] == staged and rows(sql("SELECT id FROM db.cp")) == [(1,), (2,)]


def test_describe_and_show(sql, cat, spark):
    sql("CREATE TABLE db.ds (id bigint NOT NULL COMMENT 'k', ts timestamp) PARTITIONED BY (days(ts), bucket(4, id)) "
        "TBLPROPERTIES ('owner.team' = 'data')")
    sql("ALTER TABLE db.ds WRITE ORDERED BY id; ALTER TABLE db.ds SET IDENTIFIER FIELDS id")
    d = sql("DESCRIBE TABLE db.ds")
    assert d.columns == ["col_name", "data_type", "comment"]
    assert rows(d, order=False) == [("id", "bigint", "k"), ("ts", "timestamp", None), ("", "", ""),
                                    ("# Partitioning", "", ""), ("Part 0", "days(ts)", ""),
                                    ("Part 1", "bucket(4, id)", "")]
    extended = dict((r[0], r[1]) for r in sql("DESCRIBE TABLE EXTENDED db.ds").collect())
    assert extended["Name"] == "cat.db.ds" and "owner.team=data" in extended["Table Properties"]
    props = dict(rows(sql("SHOW TBLPROPERTIES db.ds")))
    assert props["owner.team"] == "data" and props["sort-order"] == "id ASC NULLS FIRST"
    assert props["identifier-fields"] == "[id]" and props["current-snapshot-id"] == "none"
    assert rows(sql("SHOW TBLPROPERTIES db.ds ('owner.team')")) == [("owner.team", "data")]
    sql("CREATE TABLE db.other (x int)")
    assert rows(sql("SHOW TABLES IN db")) == [("db", "ds", False), ("db", "other", False)]
    assert rows(sql("SHOW TABLES IN cat.db LIKE 'd*'")) == [("db", "ds", False)]
    create = sql("SHOW CREATE TABLE db.ds").collect()[0][0]
    assert create.startswith("CREATE TABLE cat.db.ds (\n  id BIGINT NOT NULL COMMENT 'k',\n")
    # (what SHOW CREATE TABLE says makes the same table)
    sql(create.replace("cat.db.ds", "db.ds_again").split("LOCATION")[0])
    again = cat.load_table("db.ds_again")
    ds = cat.load_table("db.ds")
    assert struct(again) == struct(ds) and again.spec().fields == ds.spec().fields


def test_errors_name_the_statement_and_change_nothing(sql, cat):
    # (a syntax error anywhere: nothing runs; a statement that begins with no statement's word is named by it)
    with pytest.raises(SqlSyntaxError, match=r"line 2, column 1: 'SELEC' begins no SQL statement in statement 2"
                       ) as e:
        sql("CREATE TABLE db.never (i int);\nSELEC * FROM db.x")
    assert (e.value.line, e.value.column) == (2, 1) and not cat.table_exists("db.never")
    with pytest.raises(SqlSyntaxError, match=r"line 2, column 12: the right operand of '\*' is missing at 'FROM' "
                                             r"in statement 2") as e:
        sql("CREATE TABLE db.never (i int);\nSELECT a * FROM db.x")
    assert (e.value.line, e.value.column) == (2, 12) and not cat.table_exists("db.never")
    with pytest.raises(SqlSyntaxError, match=r"line 1, column 52: expected BRANCH or TAG"):
        sql("CREATE TABLE db.x (i int); ALTER TABLE db.x CREATE BRANCHES b")
    assert not cat.table_exists("db.x")  # (nothing ran)
    sql("CREATE TABLE db.x (i int)")
    with pytest.raises(SqlSyntaxError, match="expected DAYS, HOURS or MINUTES"):
        sql("ALTER TABLE db.x CREATE BRANCH b RETAIN 7 WEEKS")
    with pytest.raises(NotSupportedError, match="not supported by sparkberg.sql: ANALYZE on table db.x"):
        sql("ANALYZE TABLE db.x COMPUTE STATISTICS")
    before = cat.load_table("db.x").metadata_location
    with pytest.raises(StatementFailedError) as e:
        sql("INSERT INTO db.x VALUES (1);\nINSERT INTO db.x VALUES ('not a number', 2);\nINSERT INTO db.x VALUES (3)")
    assert e.value.number == 2 and "INSERT INTO db.x VALUES ('not a number', 2)" in str(e.value)
    assert rows(sql("SELECT * FROM db.x")) == [(1,)]  # (the first ran, the second changed nothing, the third never)
    assert cat.load_table("db.x").metadata_location != before
    with pytest.raises(NoSuchTableError):
        sql("INSERT INTO db.nope VALUES (1)")
    with pytest.raises(NoSuchTableError):
        sql("ALTER TABLE db.nope ADD PARTITION FIELD x")


def test_catalogs_come_from_the_spark_conf(spark, tmp_path):
    """Without a catalog: ``<name>.ns.t`` in a catalog ``spark.sql.catalog.<name>.*`` configures, and ``ns.t`` in
    the one ``spark.sql.defaultCatalog`` names (here Spark's session catalog, as Iceberg's SparkSessionCatalog
    setups do: Spark can always load that one, so its own statements keep working)."""
    keys = {"spark.sql.catalog.lake.type": "hadoop", "spark.sql.catalog.lake.warehouse": f"file://{tmp_path}/lake",
            "spark.sql.catalog.spark_catalog.type": "hadoop",
            "spark.sql.catalog.spark_catalog.warehouse": f"file://{tmp_path}/session"}
    for k, v in keys.items():
        spark.conf.set(k, v)
    try:
        sparkberg.sql(spark, "CREATE TABLE lake.ns.t (x int); INSERT INTO lake.ns.t VALUES (1)")
        assert rows(sparkberg.catalog(spark, "lake").load_table("ns.t").to_df()) == [(1,)]
        sparkberg.sql(spark, "CREATE TABLE ns.s (y int); INSERT INTO ns.s SELECT x + 1 FROM lake.ns.t")
        assert rows(sparkberg.sql(spark, "SELECT * FROM ns.s JOIN spark_catalog.ns.s AS again USING (y)")) == [(2,)]
        assert sparkberg.catalog(spark, "spark_catalog").table_exists("ns.s")
        assert rows(sparkberg.sql(spark, "SELECT 1 AS one")) == [(1,)]
    finally:
        for k in keys:
            spark.conf.unset(k)


def test_the_cell_magic(spark, cat, capsys):
    from sparkberg.sql.magic import load_ipython_extension

    class Shell:
        user_ns = {"spark": spark, "c": cat}
        magics = {}

        def register_magic_function(self, fn, magic_kind, magic_name):
            self.magics[(magic_kind, magic_name)] = fn
    shell = Shell()
    load_ipython_extension(shell)
    magic = shell.magics[("cell", "sparkberg")]
    magic("--catalog c", "CREATE TABLE db.mg (x int);\nINSERT INTO db.mg VALUES (41), (42)")
    magic("--catalog c --out result --limit 1", "SELECT x FROM db.mg ORDER BY x")
    shown = capsys.readouterr().out
    assert "|41 |" in shown and "|42 |" not in shown and "only showing top 1 row" in shown
    assert rows(shell.user_ns["result"]) == [(41,), (42,)]


def test_the_sql_job(spark, tmp_path, capsys):
    from sparkberg.jobs.sql import main
    script = tmp_path / "nightly.sql"
    script.write_text("CREATE TABLE IF NOT EXISTS db.job (day string, n bigint);\n"
                      "INSERT INTO db.job SELECT '${day}', count(*) FROM range(${rows});\n"
                      "SELECT * FROM db.job ORDER BY day;\n")
    wh = f"file://{tmp_path}/jobwh"
    sparkberg.catalog(spark, wh).create_namespace("db")
    assert main(["--warehouse", wh, "-f", str(script), "--var", "day=2024-01-01", "--var", "rows=5"]) == 0
    assert "|2024-01-01|5  |" in capsys.readouterr().out
    assert main(["--warehouse", wh, "-f", str(script), "--var", "day=x"]) == 2  # (no value for ${rows})
    assert "${rows}" in capsys.readouterr().err
    code = main(["--warehouse", wh, "-e", "INSERT INTO db.job VALUES ('d', 1); INSERT INTO db.nope VALUES (1)"])
    err = capsys.readouterr().err
    assert code == 3 and "statement 2 failed" in err
    assert sparkberg.catalog(spark, wh).load_table("db.job").to_df().count() == 2


def test_a_default_catalog_only_sparkberg_serves(spark, tmp_path):
    # (a Spark conf written for Iceberg Java, its jar gone: spark.sql.defaultCatalog names a catalog Spark has no
    # plugin for, which made Spark refuse every query with CATALOG_NOT_FOUND)
    keys = {"spark.sql.catalog.lakedc.type": "hadoop", "spark.sql.catalog.lakedc.warehouse": str(tmp_path / "wh"),
            "spark.sql.defaultCatalog": "lakedc"}
    try:
        for k, v in keys.items():
            spark.conf.set(k, v)
        sparkberg.sql(spark, """CREATE TABLE db.t (id bigint, v string) USING iceberg;
                                INSERT INTO db.t VALUES (1, 'a'), (2, 'b');
                                UPDATE db.t SET v = 'u' WHERE id = 1""")
        assert sorted(tuple(r) for r in sparkberg.sql(spark, "SELECT * FROM db.t").collect()) == [(1, "u"), (2, "b")]
        assert sparkberg.sql(spark, "SELECT count(*) FROM lakedc.db.t WHERE id > 1").collect()[0][0] == 1
        assert spark.conf.get("spark.sql.defaultCatalog") == "lakedc"  # (as it was, after each call)
    finally:
        for k in keys:
            spark.conf.unset(k)
