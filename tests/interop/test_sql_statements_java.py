"""One script of Iceberg Spark SQL statements, every group of them (DDL, ALTER TABLE of Spark and of Iceberg's
extensions, writes, queries with time travel, refs and metadata tables, CALL procedures, DESCRIBE and SHOW), run
through Iceberg Java's Spark SQL on its JdbcCatalog and through ``sparkberg.sql`` on sparkberg's SQL catalog,
statement by statement. After each, the statement's result, the namespace's tables, and every table the statement
names (rows, schema with field ids, spec, sort order, identifier fields, refs, snapshot operations, properties) are
the same in both.

Values that are each engine's own (snapshot ids, timestamps, the warehouse and catalog names) are compared by what
they stand for: a snapshot id as the table and position of its snapshot, a path relative to the warehouse."""
import datetime
import re

import pytest

import sparkberg
from test_sql_catalog_java import release_sqlite_reads

pytestmark = pytest.mark.interop

NS = "sq"
# (statement, how its result is compared: "rows" as a set, "ordered" in order, "columns" only the column names
# and the row count, "none" not at all). {c} is the catalog; {snap:T:K} the id of table T's K-th snapshot (in
# commit order; -1 the last), {ts:T:K} its commit time in epoch millis, {after:T:K} a TIMESTAMP literal 1 ms after
# it, {meta:T} T's current metadata file.
SCRIPT = [
    ("CREATE TABLE {c}.sq.t (id bigint NOT NULL COMMENT 'key', data string, category string, ts timestamp, "
     "point struct<x: double, y: double>) USING iceberg PARTITIONED BY (days(ts), bucket(4, id)) "
     "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "
     "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')", "none"),
    ("INSERT INTO {c}.sq.t VALUES (1, 'a', 'x', TIMESTAMP '2024-01-01 10:00:00', named_struct('x', 1.0D, 'y', 2.0D)), "
     "(2, 'b', 'x', TIMESTAMP '2024-01-02 10:00:00', null), (3, 'c', 'y', TIMESTAMP '2024-01-02 11:00:00', null)",
     "none"),
    ("INSERT INTO {c}.sq.t (id, data, category, point, ts) SELECT id, CAST(id AS string), 'y', null, null "
     "FROM range(10, 20)", "none"),
    ("SELECT * FROM {c}.sq.t", "rows"),
    ("DELETE FROM {c}.sq.t WHERE id = 2", "none"),
    ("UPDATE {c}.sq.t SET data = upper(data) WHERE id > 15", "none"),
    ("CREATE OR REPLACE TEMPORARY VIEW sq_src AS SELECT * FROM VALUES (1L, 'm1', 'upd'), (3L, 'm3', 'del'), "
     "(30L, 'n30', 'ins') AS s(id, data, op)", "none"),
    ("MERGE INTO {c}.sq.t t USING sq_src s ON t.id = s.id WHEN MATCHED AND s.op = 'del' THEN DELETE "
     "WHEN MATCHED THEN UPDATE SET t.data = s.data "
     "WHEN NOT MATCHED THEN INSERT (id, data, category) VALUES (s.id, s.data, 'z') "
     "WHEN NOT MATCHED BY SOURCE AND t.id = 19 THEN UPDATE SET data = 'gone' "
     "WHEN NOT MATCHED BY SOURCE AND t.id = 18 THEN DELETE", "none"),
    ("SELECT * FROM {c}.sq.t", "rows"),
    ("SELECT operation, summary['added-records'], summary['deleted-records'] FROM {c}.sq.t.snapshots "
     "ORDER BY committed_at", "ordered"),
    ("ALTER TABLE {c}.sq.t ADD COLUMNS (extra int COMMENT 'e' AFTER id, point.z double)", "none"),
    ("ALTER TABLE {c}.sq.t RENAME COLUMN category TO kind", "none"),
    ("ALTER TABLE {c}.sq.t ALTER COLUMN extra TYPE bigint", "none"),
    ("ALTER TABLE {c}.sq.t ALTER COLUMN data COMMENT 'payload'", "none"),
    ("ALTER TABLE {c}.sq.t ALTER COLUMN kind FIRST", "none"),
    ("ALTER TABLE {c}.sq.t ALTER COLUMN kind AFTER id", "none"),
    ("ALTER TABLE {c}.sq.t ALTER COLUMN id DROP NOT NULL", "none"),
    ("ALTER TABLE {c}.sq.t DROP COLUMN point.y", "none"),
    ("ALTER TABLE {c}.sq.t SET TBLPROPERTIES ('owner.team'='data', 'commit.retry.num-retries'='5')", "none"),
    ("ALTER TABLE {c}.sq.t UNSET TBLPROPERTIES ('owner.team')", "none"),
    ("ALTER TABLE {c}.sq.t ADD PARTITION FIELD truncate(2, data) AS data2", "none"),
    ("ALTER TABLE {c}.sq.t DROP PARTITION FIELD bucket(4, id)", "none"),
    ("ALTER TABLE {c}.sq.t REPLACE PARTITION FIELD days(ts) WITH months(ts)", "none"),
    ("ALTER TABLE {c}.sq.t WRITE ORDERED BY kind ASC NULLS LAST, id DESC", "none"),
    ("ALTER TABLE {c}.sq.t WRITE DISTRIBUTED BY PARTITION LOCALLY ORDERED BY id", "none"),
    ("INSERT INTO {c}.sq.t (id, kind, data, extra, ts, point) VALUES (40, 'k', 'late', 4, null, null)", "none"),
    ("SELECT * FROM {c}.sq.t", "rows"),
    ("ALTER TABLE {c}.sq.t CREATE BRANCH audit AS OF VERSION {snap:t:1} RETAIN 7 DAYS "
     "WITH SNAPSHOT RETENTION 2 SNAPSHOTS 3 DAYS", "none"),
    ("ALTER TABLE {c}.sq.t CREATE TAG first AS OF VERSION {snap:t:0} RETAIN 30 DAYS", "none"),
    ("INSERT INTO {c}.sq.t.branch_audit VALUES (100, 'audit', 1, 'x', null, null)", "none"),
    ("SELECT id, kind FROM {c}.sq.t.branch_audit", "rows"),
    ("SELECT id, data FROM {c}.sq.t VERSION AS OF 'first'", "rows"),
    ("SELECT id FROM {c}.sq.t VERSION AS OF {snap:t:2}", "rows"),
    ("SELECT count(*) FROM {c}.sq.t TIMESTAMP AS OF timestamp_millis({ts:t:1})", "rows"),
    ("SELECT id FROM {c}.sq.t.tag_first", "rows"),
    ("SELECT name, type, snapshot_id FROM {c}.sq.t.refs", "rows"),
    ("SELECT a.id, b.id FROM {c}.sq.t a JOIN {c}.sq.t VERSION AS OF 'first' b ON a.id = b.id", "rows"),
    ("ALTER TABLE {c}.sq.t REPLACE BRANCH audit AS OF VERSION {snap:t:2}", "none"),
    ("ALTER TABLE {c}.sq.t CREATE OR REPLACE TAG first AS OF VERSION {snap:t:1}", "none"),
    ("ALTER TABLE {c}.sq.t CREATE BRANCH IF NOT EXISTS audit", "none"),
    ("ALTER TABLE {c}.sq.t DROP TAG first", "none"),
    ("ALTER TABLE {c}.sq.t DROP BRANCH IF EXISTS nope", "none"),
    ("CALL {c}.system.rollback_to_snapshot('sq.t', {snap:t:3})", "rows"),
    ("CALL {c}.system.set_current_snapshot(table => 'sq.t', snapshot_id => {snap:t:-2})", "rows"),
    ("CALL {c}.system.ancestors_of('sq.t')", "ordered"),
    ("CALL {c}.system.fast_forward(table => 'sq.t', branch => 'audit', to => 'main')", "rows"),
    ("ALTER TABLE {c}.sq.t DROP BRANCH audit", "none"),
    ("CALL {c}.system.rewrite_data_files(table => 'sq.t', options => map('rewrite-all', 'true'))", "columns"),
    ("CALL {c}.system.rewrite_position_delete_files(table => 'sq.t', options => map('rewrite-all', 'true'))",
     "columns"),
    ("CALL {c}.system.rewrite_manifests('sq.t')", "columns"),
    ("CALL {c}.system.expire_snapshots(table => 'sq.t', older_than => {after:t:-1}, "
     "retain_last => 3)", "columns"),
    ("SELECT * FROM {c}.sq.t", "rows"),
    ("DESCRIBE TABLE {c}.sq.t", "ordered"),
    ("SHOW TBLPROPERTIES {c}.sq.t", "rows"),
    # (issue 90: a nested field set by UPDATE, a nested column placed after its sibling, WRITE LOCALLY ORDERED BY)
    ("CREATE TABLE {c}.sq.n (id bigint, point struct<x: double, y: double>) USING iceberg "
     "TBLPROPERTIES ('format-version'='2')", "none"),
    ("INSERT INTO {c}.sq.n VALUES (1, named_struct('x', 1.0D, 'y', 2.0D)), (2, null)", "none"),
    ("UPDATE {c}.sq.n SET point.x = 9.5D WHERE id = 1", "none"),
    ("UPDATE {c}.sq.n SET point.y = 7.0D WHERE id = 2", "none"),
    ("ALTER TABLE {c}.sq.n ADD COLUMN point.w double AFTER x", "none"),
    ("ALTER TABLE {c}.sq.n WRITE ORDERED BY id", "none"),
    ("ALTER TABLE {c}.sq.n WRITE LOCALLY ORDERED BY id DESC", "none"),
    ("SELECT * FROM {c}.sq.n", "rows"),
    ("DROP TABLE {c}.sq.n", "none"),
    ("CREATE TABLE {c}.sq.k (id bigint NOT NULL, v string, p string) USING iceberg PARTITIONED BY (p) "
     "TBLPROPERTIES ('format-version'='3', 'write.wap.enabled'='true')", "none"),
    ("ALTER TABLE {c}.sq.k SET IDENTIFIER FIELDS id", "none"),
    ("INSERT INTO {c}.sq.k VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'y')", "none"),
    ("INSERT OVERWRITE {c}.sq.k PARTITION (p = 'y') SELECT 5, 'e'", "none"),
    ("SET spark.sql.sources.partitionOverwriteMode=dynamic", "none"),
    ("INSERT OVERWRITE {c}.sq.k SELECT 6, 'f', 'x'", "none"),
    ("SET spark.sql.sources.partitionOverwriteMode=static", "none"),
    ("SELECT * FROM {c}.sq.k", "rows"),
    ("SET spark.wap.id=w1", "none"),
    ("INSERT INTO {c}.sq.k VALUES (8, 'staged', 'x')", "none"),
    ("RESET spark.wap.id", "none"),
    ("SELECT count(*) FROM {c}.sq.k", "rows"),
    ("CALL {c}.system.publish_changes('sq.k', 'w1')", "rows"),
    ("CALL {c}.system.create_changelog_view(table => 'sq.k', changelog_view => 'k_changes_{c}', "
     "identifier_columns => array('id'))", "none"),
    ("SELECT id, v, p, _change_type, _change_ordinal FROM k_changes_{c}", "rows"),
    ("ALTER TABLE {c}.sq.k DROP IDENTIFIER FIELDS id", "none"),
    ("INSERT OVERWRITE {c}.sq.k SELECT 7, 'g', 'z'", "none"),
    ("SELECT * FROM {c}.sq.k", "rows"),
    ("CALL {c}.system.register_table(table => 'sq.reg', metadata_file => '{meta:k}')", "rows"),
    ("SELECT * FROM {c}.sq.reg", "rows"),
    ("CREATE TABLE {c}.sq.c USING iceberg PARTITIONED BY (kind) AS SELECT id, kind, data FROM {c}.sq.t", "none"),
    ("REPLACE TABLE {c}.sq.c USING iceberg AS SELECT id, data FROM {c}.sq.t WHERE id < 15", "none"),
    ("SELECT * FROM {c}.sq.c", "rows"),
    ("CREATE OR REPLACE TABLE {c}.sq.c (id bigint, note string) USING iceberg", "none"),
    ("ALTER TABLE {c}.sq.c RENAME TO sq.c2", "none"),
    ("SHOW TABLES IN {c}.sq", "rows"),
    ("DROP TABLE {c}.sq.c2", "none"),
    ("DROP TABLE {c}.sq.reg", "none"),
    ("SHOW TABLES IN {c}.sq", "rows"),
]


@pytest.fixture
def engines(java, tmp_path):
    """(run, state) for each engine: Iceberg Java on its JdbcCatalog ``jsq``, sparkberg on its SQL catalog
    ``sbsq``; both over SQLite, each with its own database and warehouse."""
    jdb, jwh = f"{tmp_path}/java.db", f"file://{tmp_path}/java-wh"
    keys = {"spark.sql.catalog.jsq": "org.apache.iceberg.spark.SparkCatalog", "spark.sql.catalog.jsq.type": "jdbc",
            "spark.sql.catalog.jsq.uri": f"jdbc:sqlite:{jdb}", "spark.sql.catalog.jsq.warehouse": jwh,
            "spark.sql.catalog.jsq.cache-enabled": "false"}
    for k, v in keys.items():
        java.conf.set(k, v)
    java.sql("CREATE NAMESPACE jsq.sq").collect()
    release_sqlite_reads(java, "jsq")
    ours = sparkberg.catalog(java, f"sqlite:///{tmp_path}/ours.db", warehouse=f"file://{tmp_path}/ours-wh",
                             name="sbsq")
    ours.create_namespace(NS)

    def java_metadata(name):
        rows = java.sql(f"SELECT file FROM jsq.sq.{name}.metadata_log_entries ORDER BY timestamp DESC LIMIT 1"
                        ).collect()
        return sparkberg.load_table(java, rows[0][0])

    java_side = {"name": "jsq", "warehouse": jwh, "run": lambda text: java.sql(text),
                 "tables": lambda: sorted(r["tableName"] for r in java.sql("SHOW TABLES IN jsq.sq").collect()),
                 "load": java_metadata, "read": lambda name: java.sql(f"SELECT * FROM jsq.sq.{name}")}
    ours_side = {"name": "sbsq", "warehouse": f"file://{tmp_path}/ours-wh",
                 "run": lambda text: sparkberg.sql(java, text, catalog=ours),
                 "tables": lambda: sorted(n.split(".")[-1] for n in ours.list_tables(NS)),
                 "load": lambda name: ours.load_table(f"{NS}.{name}"),
                 "read": lambda name: sparkberg.sql(java, f"SELECT * FROM sbsq.sq.{name}", catalog=ours)}
    yield java_side, ours_side
    java.sql("SET spark.sql.sources.partitionOverwriteMode=static")
    java.conf.unset("spark.wap.id")
    for k in keys:
        java.conf.unset(k)


def snapshots_in_order(t):
    return sorted(t.metadata.snapshots, key=lambda s: (s.sequence_number, s.timestamp_ms))


def fill(template, side):
    def value(m):
        kind, _, rest = m.group(1).partition(":")
        if kind == "c":
            return side["name"]
        if kind == "meta":
            return side["load"](rest).metadata_location
        table, _, k = rest.partition(":")
        snap = snapshots_in_order(side["load"](table))[int(k)]
        if kind == "after":  # (a TIMESTAMP literal just after the snapshot: Java's CALL takes literals only)
            at = datetime.datetime.fromtimestamp((snap.timestamp_ms + 1) / 1000, datetime.timezone.utc)
            return f"TIMESTAMP '{at.strftime('%Y-%m-%d %H:%M:%S.%f')[:-3]}+00:00'"
        return str(snap.snapshot_id if kind == "snap" else snap.timestamp_ms)
    return re.sub(r"\{(c|(?:snap|ts|after):\w+:-?\d+|meta:\w+)\}", value, template)


def ids_of(side):
    """snapshot id -> (table, position) for every table of the namespace."""
    out = {}
    for name in side["tables"]():
        for i, s in enumerate(snapshots_in_order(side["load"](name))):
            out[s.snapshot_id] = f"{name}#{i}"
    return out


MASKED_COLUMNS = {"timestamp", "committed_at", "made_current_at"}


def normalized(df, side, ids, mode):
    if df is None:
        return None
    columns = list(df.columns)
    rows = df.collect()
    if mode == "columns":
        return columns, len(rows)

    def norm(v, column):
        if column in MASKED_COLUMNS:
            return "<time>"
        if isinstance(v, int) and v in ids:
            return ids[v]
        if isinstance(v, str):
            if v.isdigit() and int(v) in ids:
                return ids[int(v)]
            return v.replace(side["warehouse"], "<wh>").replace(side["name"], "<c>")
        if isinstance(v, (datetime.datetime, datetime.date)):
            return v.isoformat()
        if isinstance(v, (list, tuple)):
            return tuple(norm(x, column) for x in v)
        if hasattr(v, "asDict"):
            return tuple(norm(x, column) for x in v)
        return v
    out = [tuple(norm(v, c) for v, c in zip(r, columns)) for r in rows]
    if mode == "rows":
        out = sorted(out, key=repr)
    return columns, out


def state(side, name, ids):
    t = side["load"](name)
    m = t.metadata
    order = snapshots_in_order(t)
    position = {s.snapshot_id: i for i, s in enumerate(order)}
    schema = m.current_schema
    return {
        "format-version": m.format_version,
        "schema": [(f.field_id, f.name, str(f.field_type), f.required, f.doc) for f in schema.fields],
        "identifier-fields": schema.identifier_field_ids,
        "last-column-id": m.last_column_id,
        "spec": (m.default_spec_id, [(f.source_id, f.field_id, str(f.transform), f.name)
                                     for f in m.default_spec.fields]),
        "sort-order": (m.default_sort_order_id, [(f.source_id, str(f.transform), f.direction, f.null_order)
                                                 for f in m.sort_order().fields]),
        "refs": {n: (r.type, position.get(r.snapshot_id), r.min_snapshots_to_keep, r.max_snapshot_age_ms,
                     r.max_ref_age_ms) for n, r in m.refs.items()},
        "snapshots": [(s.operation, position.get(s.parent_snapshot_id)) for s in order],
        "current": position.get(m.current_snapshot_id),
        "properties": {k: v for k, v in m.properties.items()},
        "rows": normalized(side["read"](name), side, ids, "rows")[1],
    }


def test_a_script_of_iceberg_sql_statements_runs_the_same_in_java_and_in_sparkberg(engines):
    java_side, ours_side = engines
    for number, (template, mode) in enumerate(SCRIPT, 1):
        results = []
        for side in (java_side, ours_side):
            text = fill(template, side)
            try:
                df = side["run"](text)
            except Exception as e:  # noqa: BLE001 - say which engine failed on which statement
                raise AssertionError(f"statement {number} failed in {side['name']}: {text}\n{e}") from e
            results.append(normalized(df, side, ids_of(side), mode) if mode != "none" else None)
        assert results[0] == results[1], f"statement {number}: {template}\nJava:      {results[0]}\nsparkberg: " \
                                         f"{results[1]}"
        tables = [side["tables"]() for side in (java_side, ours_side)]
        assert tables[0] == tables[1], f"after statement {number}: tables {tables}"
        touched = set(re.findall(r"\bsq\.(\w+)", template)) | set(re.findall(r":(\w+)[:}]", template))
        for name in sorted(touched & set(tables[0])):
            states = [state(side, name, ids_of(side)) for side in (java_side, ours_side)]
            for key in states[0]:
                assert states[0][key] == states[1][key], \
                    f"after statement {number} ({template}): table {name}, {key}:\nJava:      {states[0][key]}\n" \
                    f"sparkberg: {states[1][key]}"
