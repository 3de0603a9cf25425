"""Scan planning of a synthetic table with N data files (day x bucket partitioned, written directly as metadata):
sparkberg (local and distributed planning) vs Iceberg Java 1.10 ``planFiles()`` on the same table, same session.

    .venv-interop/bin/python tests/benchmarks/planning_bench.py [FILES] [REPEATS]
"""
import os
import statistics
import struct
import sys
import tempfile
import time

SHARED = os.environ.get("SPARKBERG_SHARED") or os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared")
sys.path.insert(0, os.path.join(SHARED, "interop"))


def build(spark, wh: str, files: int, per_manifest: int = 1000):
    import sparkberg
    from sparkberg.avro.manifest import ADDED, DataFile, ManifestEntry, manifest_file_for, write_manifest, \
        write_manifest_list
    from sparkberg.spec import updates as U
    from sparkberg.spec.snapshots import Snapshot
    cat = sparkberg.catalog(spark, wh)
    t = cat.create_table("b.plan", "id bigint, ts timestamp, v string", partition_by=["day(ts)", "bucket(16, id)"])
    m = t.metadata
    spec, schema = m.default_spec, m.current_schema
    sid = 1
    manifests = []
    for start in range(0, files, per_manifest):
        entries = []
        for i in range(start, min(files, start + per_manifest)):
            day, bucket = 19700 + i // 1600, i % 16
            entries.append(ManifestEntry(ADDED, DataFile(
                file_path=f"{t.location}/data/f{i}.parquet", file_format="parquet",
                partition={1000: day, 1001: bucket}, record_count=1000, file_size_in_bytes=100_000,
                value_counts={1: 1000, 2: 1000}, null_value_counts={1: 0, 2: 0},
                lower_bounds={1: struct.pack("<q", i * 1000)}, upper_bounds={1: struct.pack("<q", i * 1000 + 999)}),
                sid))
        data = write_manifest(entries, format_version=2, spec=spec, schema=schema)
        path = f"{t.location}/metadata/m{start}.avro"
        t.io.create(path, data)
        manifests.append(manifest_file_for(entries, path=path, length=len(data), spec=spec, schema=schema,
                                           added_snapshot_id=sid, sequence_number=1))
    lst = f"{t.location}/metadata/snap-1.avro"
    t.io.create(lst, write_manifest_list(manifests, format_version=2, snapshot_id=sid, parent_snapshot_id=None,
                                         sequence_number=1))
    snap = Snapshot(sid, int(time.time() * 1000), None, 1, lst, None, {"operation": "append"}, 0)
    t.commit_updates([U.AddSnapshot(snap), U.SetSnapshotRef("main", sid)])
    return t


def timed(fn, repeats):
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        n = fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), n


def main(files: int, repeats: int) -> None:
    from reference import iceberg_java_session
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    wh = tempfile.mkdtemp(prefix="bench-plan-")
    spark = iceberg_java_session(wh, extra={"spark.driver.memory": "6g"})
    spark.sparkContext.setLogLevel("ERROR")
    t = build(spark, wh, files)
    jvm = spark._jvm
    jt = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, "ref.b.plan")
    size = jvm.org.apache.iceberg.relocated.com.google.common.collect.Iterables.size
    expr = jvm.org.apache.iceberg.expressions.Expressions
    lo = (files // 2) * 1000  # ids of the 16 files from the middle of the table (metrics pruning)
    selective = f"id >= {lo} AND id < {lo + 16000}"

    def java_full():
        jt.refresh()
        return size(jt.newScan().planFiles())

    def java_selective():
        jt.refresh()
        f = getattr(expr, "and")(expr.greaterThanOrEqual("id", lo), expr.lessThan("id", lo + 16000))
        return size(jt.newScan().filter(f).planFiles())

    results = {
        "java full": timed(java_full, repeats),
        "sparkberg full (distributed)": timed(lambda: t.plan_files(planning="distributed").count(), repeats),
        "sparkberg full (local)": timed(lambda: t.plan_files(planning="local").count(), repeats),
        "java selective": timed(java_selective, repeats),
        "sparkberg selective (distributed)": timed(
            lambda: t.plan_files(filter=selective, planning="distributed").count(), repeats),
        "sparkberg selective (local)": timed(lambda: t.plan_files(filter=selective, planning="local").count(),
                                             repeats),
    }
    for k, (sec, n) in results.items():
        base = results["java full" if "full" in k else "java selective"][0]
        print(f"{k:36s} {sec:7.2f}s  files={n:7d}  ratio to java {sec / base:5.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
