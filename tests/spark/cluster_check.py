"""Run on a multi-process cluster (``local-cluster[2,1,1024]``: two executor JVMs, each with its own Python
workers), in a process of its own: what sparkberg runs on executors (the writer's fanout and clustered paths,
merge-on-read deletes and updates, the changelog's tasks, the streaming sink and source, format v3's types) pickled
and imported there. Prints one line per check; exits non-zero on the first failure.

    python cluster_check.py WAREHOUSE [S3_ROOT PROPERTIES_JSON_FILE]

With an S3 root, a table on it too (object_store_check.py), its credentials only in the catalog's properties."""
import os
import sys

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

import sparkberg  # noqa: E402
from sparkberg.spark.session import spark_version  # noqa: E402
from object_store_check import check as check_object_store  # noqa: E402
import daemon_check  # noqa: E402


def main(warehouse: str, s3_root: str | None = None, s3_properties: str | None = None) -> int:
    spark = (SparkSession.builder.master("local-cluster[2,1,1024]").config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC").config("spark.python.daemon.module", "sparkberg.daemon")
             .getOrCreate())
    daemon_check.check(spark, "a cluster")
    cat = sparkberg.catalog(spark, os.path.join(warehouse, "wh"))
    t = cat.create_table("db.t", "id bigint, p int, v string", partition_by=["p"], properties={
        "format-version": "3", "write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"})
    rows = spark.sql("SELECT id, CAST(id % 4 AS INT) AS p, CAST(id AS STRING) AS v FROM range(0, 400)").repartition(4)
    t.append(rows)  # (hash: clustered by partition)
    t.set_properties({"write.distribution-mode": "none"})
    t.append(rows.selectExpr("id + 1000 AS id", "p", "v"))  # (fanned out: each task meets every partition)
    assert t.to_df().count() == 800
    assert len(t.metadata_table("files").collect()) <= 4 + 4 * 4
    print("writes on a cluster ok")
    t.delete("id % 10 = 0")
    t.update({"v": "'u'"}, "id % 10 = 1")
    assert t.to_df().count() == 720 and t.to_df().where("v = 'u'").count() == 80
    changes = t.changes(t.metadata.snapshots[1].snapshot_id).groupBy("_change_type").count().collect()
    assert sorted(tuple(r) for r in changes) == [("DELETE", 160), ("INSERT", 80)], changes
    print("row-level changes and the changelog on a cluster ok")
    assert t.append(rows.limit(1), idempotency=("cluster", 1)).committed
    assert t.append(rows.limit(1), idempotency=("cluster", 1)).skipped
    src = os.path.join(warehouse, "src")
    os.makedirs(src)
    for i in range(3):
        pq.write_table(pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64()),
                                 "p": pa.array([j % 4 for j in range(10)], pa.int32()),
                                 "v": pa.array(["s"] * 10)}), os.path.join(src, f"f{i}.parquet"))
    sink = cat.create_table("db.sink", "id bigint, p int, v string", partition_by=["p"])
    stream = spark.readStream.schema("id bigint, p int, v string").option("maxFilesPerTrigger", 1).parquet(src)
    q = sink.write_stream(stream, os.path.join(warehouse, "ckpt"), trigger={"availableNow": True})
    q.awaitTermination()
    assert q.exception() is None and sink.refresh().to_df().count() == 30 and len(sink.snapshots()) == 3
    copy = cat.create_table("db.copy", "id bigint, p int, v string")
    bound = {"max_files_per_trigger": 2} if spark_version(None) >= (4, 2) else {}  # (read limits: Spark 4.2+)
    q = copy.write_stream(sink.read_stream(**bound), os.path.join(warehouse, "ckpt2"),
                          trigger={"availableNow": True})
    q.awaitTermination()
    assert q.exception() is None
    assert sorted(r[0] for r in copy.refresh().to_df().collect()) == list(range(30))
    print("streams on a cluster ok")
    check_v3_types(spark, cat)
    print("format v3 types on a cluster ok")
    if s3_root:
        import json
        with open(s3_properties) as f:
            check_object_store(spark, s3_root, json.load(f))
        print("a table on S3 on a cluster ok")
    spark.stop()
    return 0


def check_v3_types(spark, cat) -> None:
    """Nanosecond timestamps (partitioned by day), geometry and geography (their boxes computed by the executors'
    writers) and, on PySpark 4, variant, written by tasks on both executors and read back."""
    import struct
    from pyspark.sql import types as T
    variant = hasattr(T, "VariantType")
    t = cat.create_table("db.v3", "id bigint, ts timestamp_ns, g geometry, h geography" +
                         (", v variant" if variant else ""), partition_by=["day(ts)"],
                         properties={"format-version": "3"})
    points = [(i, struct.pack("<BI2d", 1, 1, float(i % 50), float(i % 30)),
               struct.pack("<BI2d", 1, 1, float(i % 170), float(i % 80))) for i in range(200)]
    df = spark.createDataFrame(points, "id bigint, g binary, h binary").selectExpr(
        "id", "TIMESTAMP_NTZ'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % 3 AS INT)) AS ts", "g", "h")
    if variant:
        df = df.selectExpr("*", "parse_json(concat('{\"id\": ', id, '}')) AS v")
    t = t.append(df.repartition(4))
    got = t.to_df().selectExpr("id", "ts", "g", "h", *(["to_json(v)"] if variant else [])).collect()
    assert sorted(tuple(r)[:4] for r in got) == sorted(tuple(r) for r in df.select("id", "ts", "g", "h").collect())
    if variant:
        assert all(r[4] == f'{{"id":{r[0]}}}' for r in got)
    # a box each for g and h (field ids 3 and 4) in every file; the files of each day
    assert all(3 in b and 4 in b for b, in t.metadata_table("files", columns=["lower_bounds"]).collect())
    assert t.plan_files(filter="ts >= '2024-01-03'").count() == t.plan_files().count() // 3


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
