"""Run over Spark Connect (a separate process: one classic session per test process is enough).

    python connect_check.py METADATA_JSON EXPECTED_COUNT WAREHOUSE
Prints one line per check; exits non-zero on the first failure."""
import os
import sys
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import SparkSession  # noqa: E402

import sparkberg  # noqa: E402
from sparkberg.io.fileio import to_local_path  # noqa: E402
from sparkberg.sql.views import _source_supported  # noqa: E402
import daemon_check  # noqa: E402


def main(metadata: str, expected: int, warehouse: str, s3_root: str | None = None,
         s3_properties: str | None = None) -> int:
    spark = (SparkSession.builder.remote("local[2]").config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.session.timeZone", "UTC").config("spark.python.daemon.module", "sparkberg.daemon")
             .getOrCreate())
    assert "connect" in type(spark).__module__, type(spark)
    daemon_check.check(spark, "a Spark Connect server")
    t = sparkberg.load_table(spark, metadata)
    n = t.to_df().count()
    assert n == expected, (n, expected)
    print("to_df count ok", n)
    f = t.to_df(filter="id = 7", columns=["id", "_file", "_pos"]).collect()
    assert [r["id"] for r in f] == [7], f
    print("filtered read ok")
    files = t.plan_files(filter="id = 7").count()
    assert 0 < files < t.plan_files().count()
    print("plan_files pruning ok", files)
    first = t.metadata.snapshots[0]
    assert t.to_df(snapshot_id=first.snapshot_id).count() == 20
    print("time travel ok")
    cat = sparkberg.catalog(spark, warehouse)
    e = cat.create_table("db.connect", "id bigint NOT NULL, v string", partition_by=["bucket(4, id)"],
                         properties={"format-version": "3"})
    assert e.to_df(columns=["id", "_row_id"]).count() == 0
    print("catalog over connect ok")
    m = cat.create_table("db.connect_mor", "id bigint, v string",
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    m.append(spark.sql("SELECT id, CAST(id AS string) AS v FROM range(0, 30)"))
    m.delete("id % 5 = 0")  # position deletes
    m.delete_by_keys(spark.sql("SELECT id FROM range(0, 30, 3)"), ["id"])  # equality deletes
    got = sorted(r["id"] for r in m.to_df(columns=["id", "_pos"]).collect())
    assert got == [i for i in range(30) if i % 5 and i % 3], got
    m.set_properties({"write.update.mode": "merge-on-read"})
    m.update({"v": "concat(v, '-u')"}, "id < 3")  # (its rows rebalanced before they are written)
    got = sorted((r["id"], r["v"]) for r in m.to_df().where("id < 5").collect())
    assert got == [(1, "1-u"), (2, "2-u"), (4, "4")], got
    m.set_properties({"write.merge.mode": "merge-on-read"})
    src = spark.sql("SELECT id, concat(CAST(id AS string), '-m') AS v FROM range(3, 5) UNION ALL SELECT 40L, 'in'")
    m.merge(src, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()  # (3: deleted)
    got = sorted((r["id"], r["v"]) for r in m.to_df().where("id < 5 OR id = 40").collect())
    assert got == [(1, "1-u"), (2, "2-u"), (3, "3-m"), (4, "4-m"), (40, "in")], got
    print("merge-on-read over connect ok")
    first_mor = m.metadata.snapshots[0].snapshot_id
    kinds = sorted({r["_change_type"] for r in m.changes(first_mor).collect()})
    assert kinds == ["DELETE", "INSERT"], kinds
    updates = {r["_change_type"] for r in m.changes(first_mor, identifier_columns=["id"]).collect()}
    assert {"UPDATE_BEFORE", "UPDATE_AFTER"} <= updates, updates
    assert m.changes(net_changes=True).count() == m.to_df().count()
    assert m.to_df(start_snapshot_id=first_mor).count() == 0  # (no append after the first snapshot)
    print("changelog over connect ok")
    m.register_views()
    before = spark.sql("SELECT count(*) FROM connect_mor").first()[0]
    m.append(spark.sql("SELECT 100L AS id, 'new' AS v"))
    m.delete("id = 1")
    assert spark.sql("SELECT count(*) FROM connect_mor").first()[0] == before + 1 - 1  # (one in, one out)
    assert spark.sql("SELECT count(*) FROM connect_mor WHERE id = 100").first()[0] == 1
    assert spark.sql("SELECT count(*) FROM connect_mor WHERE id = 1").first()[0] == 0
    snaps = spark.sql("SELECT count(*) FROM connect_mor__snapshots").first()[0]
    assert snaps == len(cat.load_table("db.connect_mor").metadata.snapshots), snaps
    print("views follow writes over connect ok")
    mt = cat.load_table("db.connect_mor")
    files = mt.metadata_table("files", columns=["file_path", "content"]).collect()
    live = [r["file_path"] for r in mt.plan_files().collect()]
    assert sorted(r["file_path"] for r in files if r["content"] == 0) == sorted(live), files
    counted = sparkberg.sql(spark, "SELECT count(*) FROM db.connect_mor.files", catalog=cat).first()[0]
    assert counted == len(files) == mt.metadata_table("files").count(), (counted, len(files))
    print("metadata tables decoded on the driver over connect ok")
    v3 = cat.create_table("db.connect_v3", "id bigint, ts timestamp_ns, g geometry, v variant",
                          properties={"format-version": "3"})
    v3.append(spark.sql("SELECT 1L AS id, TIMESTAMP_NTZ'2024-01-01 00:00:00.123456' AS ts, "
                        "X'0101000000000000000000F03F0000000000000040' AS g, parse_json('{\"a\": 7}') AS v "
                        "UNION ALL SELECT 2L, NULL, NULL, parse_json('[1, 2]')"))
    with v3.update_schema() as u:
        u.add_column("u", "unknown")
    v3 = cat.load_table("db.connect_v3")
    rows = sorted(v3.to_df().selectExpr("id", "CAST(ts AS string)", "hex(g)", "to_json(v)", "u").collect())
    assert [tuple(r) for r in rows] == [(1, "2024-01-01 00:00:00.123456",
                                        "0101000000000000000000F03F0000000000000040", '{"a":7}', None),
                                       (2, None, None, "[1,2]", None)], rows
    assert [r[0] for r in v3.to_df().where("variant_get(v, '$.a', 'int') = 7").select("id").collect()] == [1]
    # a geometry's box prunes a spatial filter's files (the filter translated on the client)
    v3 = v3.append(spark.sql("SELECT 3L AS id, CAST(NULL AS TIMESTAMP_NTZ) AS ts, "
                             "X'010100000000000000000059400000000000005940' AS g, NULL AS v, NULL AS u"))
    near = v3.plan_files(filter="ST_Intersects(g, ST_PolygonFromEnvelope(0, 0, 5, 5))").collect()
    assert 0 < len(near) < v3.plan_files().count(), near
    print("format v3 types over connect ok")
    if _source_supported(spark):  # (4.1+: each query plans the view again, with its filters)
        wanted = {r["file_path"] for r in m.plan_files("id = 100").collect()}
        others = [r["file_path"] for r in m.plan_files().collect() if r["file_path"] not in wanted]
        assert wanted and others
        for p in others:  # (a query that read one of the files its WHERE excludes would fail)
            os.remove(to_local_path(p))
        assert [r[0] for r in spark.sql("SELECT id FROM connect_mor WHERE id = 100").collect()] == [100]
        print("views prune by WHERE over connect ok")
    for key, value in (("type", "jdbc"), ("uri", f"jdbc:sqlite:{warehouse}/catalog.db"), ("warehouse", warehouse)):
        spark.conf.set(f"spark.sql.catalog.connsql.{key}", value)
    sq = sparkberg.catalog(spark, "connsql")  # (a SQL catalog configured in the Spark conf, read over Connect)
    sq.create_namespace("db")
    sq.create_table("db.sql", "id bigint").append(spark.sql("SELECT id FROM range(0, 5)"))
    assert sorted(r[0] for r in sq.load_table("db.sql").to_df().collect()) == list(range(5))
    print("sql catalog over connect ok")
    s = sq.load_table("db.sql")
    for _ in range(2):
        s.append(spark.sql("SELECT id FROM range(5, 7)"))
    now = int(time.time() * 1000)
    assert s.expire_snapshots(older_than=now, retain_last=1).collect()[0]["deleted_manifest_lists_count"] == 2
    assert s.rewrite_manifests().collect()[0]["rewritten_manifests_count"] == 3
    assert s.rewrite_data_files(sort_order="zorder(id)", options={"rewrite-all": "true"}).collect()[0][
        "rewritten_data_files_count"] >= 3  # (groups as concurrent Spark jobs, from threads of a Connect client)
    s.create_tag("compacted").rollback_to_snapshot(s.metadata.current_snapshot.parent_snapshot_id)
    assert sorted(r[0] for r in s.to_df(ref="compacted").collect()) == sorted(list(range(5)) + [5, 6] * 2)
    assert s.remove_orphan_files(dry_run=True).count() == 0
    assert sorted(r[0] for r in s.to_df().collect()) == sorted(list(range(5)) + [5, 6] * 2)
    print("maintenance over connect ok")
    s.set_properties({"write.wap.enabled": "true"}).create_branch("dev")
    s.append(spark.sql("SELECT 100L AS id"), branch="dev")
    spark.conf.set("spark.wap.id", "w1")  # (the session conf, read over Connect)
    s.append(spark.sql("SELECT 101L AS id"))
    spark.conf.unset("spark.wap.id")
    assert 100 in [r[0] for r in s.to_df(ref="dev").collect()] and 101 not in [r[0] for r in s.to_df().collect()]
    s.publish_wap("w1")
    assert 101 in [r[0] for r in sq.load_table("db.sql").to_df().collect()]
    print("branches and write-audit-publish over connect ok")
    before = len(sq.load_table("db.sql").metadata.metadata_log)
    with s.transaction() as tx:
        tx.update_schema().add_column("note", "string").commit()
        tx.append(spark.sql("SELECT 200L AS id, 'tx' AS note"))
        tx.delete("id = 0")
    after = sq.load_table("db.sql")
    assert len(after.metadata.metadata_log) == before + 1  # (one commit)
    assert [tuple(r) for r in after.to_df().where("id >= 200 OR id = 0").collect()] == [(200, "tx")]
    print("a transaction over connect ok")
    assert s.append(spark.sql("SELECT 300L AS id, 'k' AS note"), idempotency=("connect", 1)).committed
    assert s.append(spark.sql("SELECT 300L AS id, 'k' AS note"), idempotency=("connect", 1)).skipped
    print("idempotent writes over connect ok")
    # a stream of s's appends (the source, a Python streaming data source) into another table (the sink, a
    # foreachBatch function the Connect server runs in a Python process of its own)
    copy = sq.create_table("db.copy", "id bigint, note string")
    q = copy.write_stream(s.read_stream(skip_delete_snapshots=True, skip_overwrite_snapshots=True),
                          os.path.join(warehouse, "ckpt"), trigger={"availableNow": True})
    q.awaitTermination()
    assert q.exception() is None, q.exception()
    got = sorted(r[0] for r in sq.load_table("db.copy").to_df().collect())
    # (from the oldest ancestor left by the expiry: its appended 5 and 6, the published 101, the transaction's 200
    # and the idempotent 300; the compactions, the transaction's delete and the WAP branch are not appends of main)
    assert got == [5, 6, 101, 200, 300], got
    mirror = sq.create_table("db.changes_copy", "id bigint, v string, _change_type string, _change_ordinal int, "
                             "_commit_snapshot_id bigint")
    c = sq.create_table("db.changing", "id bigint, v string", properties={
        "format-version": "3", "write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"})
    c.append(spark.sql("SELECT id, CAST(id AS string) AS v FROM range(0, 10)"))
    c.delete("id < 2")
    c.update({"v": "'u'"}, "id = 5")
    q = mirror.write_stream(c.read_stream(changes=True), os.path.join(warehouse, "ckpt-changes"),
                            trigger={"availableNow": True})
    q.awaitTermination()
    assert q.exception() is None, q.exception()
    streamed = sorted((r[0], r[1], r[2], r[4]) for r in sq.load_table("db.changes_copy").to_df().collect())
    assert streamed == sorted((r[0], r[1], r[2], r[4]) for r in c.changes().collect()), streamed
    assert len(streamed) == 10 + 2 + 2
    print("streams over connect ok")
    # Iceberg's Spark SQL statements, on the SQL catalog the Spark conf configures (its name qualifies tables)
    sparkberg.sql(spark, """CREATE TABLE connsql.db.stmt (id bigint, v string) USING iceberg PARTITIONED BY (bucket(2, id))
                            TBLPROPERTIES ('write.delete.mode' = 'merge-on-read');
                            INSERT INTO connsql.db.stmt SELECT id, CAST(id AS string) FROM range(0, 6);
                            DELETE FROM connsql.db.stmt WHERE id = 0;
                            UPDATE connsql.db.stmt SET v = 'u' WHERE id = 1""")
    spark.sql("SELECT * FROM VALUES (2L, 'm'), (9L, 'n') AS s(id, v)").createOrReplaceTempView("stmt_src")
    sparkberg.sql(spark, "MERGE INTO connsql.db.stmt t USING stmt_src s ON t.id = s.id "
                         "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    got = sorted(tuple(r) for r in sparkberg.sql(spark, "SELECT * FROM connsql.db.stmt").collect())
    assert got == [(1, "u"), (2, "m"), (3, "3"), (4, "4"), (5, "5"), (9, "n")], got
    # a query of one table: its DataFrame filtered and projected, on the client
    got = sorted(tuple(r) for r in sparkberg.sql(
        spark, "SELECT v, id * 2 AS twice, sum(id) OVER () FROM connsql.db.stmt WHERE id BETWEEN 2 AND 4").collect())
    assert got == [("3", 6, 9), ("4", 8, 9), ("m", 4, 9)], got
    first = sq.load_table("db.stmt").snapshots()[0].snapshot_id
    old = sparkberg.sql(spark, f"SELECT count(*) FROM connsql.db.stmt VERSION AS OF {first}").collect()[0][0]
    assert old == 6, old
    rolled = sparkberg.sql(spark, f"CALL connsql.system.rollback_to_snapshot('db.stmt', {first})").collect()
    assert rolled[0]["current_snapshot_id"] == first
    # count, min and max from the manifests (the first snapshot has no delete), with the schema Spark would give
    answered = sparkberg.sql(spark, "SELECT count(*), min(id), max(v) AS top FROM connsql.db.stmt")
    assert [tuple(r) for r in answered.collect()] == [(6, 0, "5")], answered.collect()  # (a string: Spark's)
    assert answered.columns == ["count(1)", "min(id)", "top"], answered.columns
    plan = sparkberg.sql(spark, "EXPLAIN SELECT min(id), max(id) FROM connsql.db.stmt").collect()[0][0]
    assert "from its manifests" in plan, plan
    described = [r[0] for r in sparkberg.sql(spark, "DESCRIBE TABLE connsql.db.stmt").collect()]
    assert described[:2] == ["id", "v"] and "# Partitioning" in described, described
    print("SQL statements over connect ok")
    # an Iceberg view over Spark Connect: created, read (through a view of it), altered and dropped
    sparkberg.sql(spark, "CREATE VIEW connsql.db.stmt_v (ident COMMENT 'the id') AS "
                         "SELECT id FROM connsql.db.stmt WHERE id > 2")
    sparkberg.sql(spark, "CREATE VIEW connsql.db.stmt_n AS SELECT count(*) AS n FROM stmt_v")
    assert sparkberg.sql(spark, "SELECT * FROM connsql.db.stmt_n").collect()[0][0] == 3  # (3, 4, 5 after the rollback)
    sparkberg.sql(spark, "ALTER VIEW connsql.db.stmt_v AS SELECT id FROM connsql.db.stmt")
    assert sq.load_view("db.stmt_v").metadata.current_version_id == 2
    assert sorted(r[0] for r in sq.load_view("db.stmt_n").to_df().collect()) == [6]
    sparkberg.sql(spark, "DROP VIEW connsql.db.stmt_n; DROP VIEW connsql.db.stmt_v")
    assert sq.list_views("db") == []
    print("Iceberg views over connect ok")
    if s3_root:
        import json

        from object_store_check import check as check_object_store
        with open(s3_properties) as f:
            check_object_store(spark, s3_root, json.load(f))
        print("a table on S3 over connect ok")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), *sys.argv[3:]))
