"""Append of N rows partitioned by day x bucket: sparkberg vs Iceberg Java 1.10 in the same Spark 3.5 session.

    .venv-interop/bin/python tests/benchmarks/append_bench.py [ROWS] [REPEATS]

Prints the median seconds of each and the ratio sparkberg / Java (a benchmark, not a test)."""
import os
import statistics
import sys
import tempfile
import time

SHARED = os.environ.get("SPARKBERG_SHARED") or os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared")
sys.path.insert(0, os.path.join(SHARED, "interop"))


def main(rows: int, repeats: int) -> None:
    from reference import iceberg_java_session

    import sparkberg
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    wh = tempfile.mkdtemp(prefix="bench-append-")
    spark = iceberg_java_session(wh, extra={"spark.driver.memory": "6g"})
    spark.sparkContext.setLogLevel("ERROR")
    src = spark.sql(f"""SELECT id, TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % 30 AS int))
                        AS ts, concat('v', id) AS v, CAST(id % 1000 AS double) AS x FROM range(0, {rows})""")
    src = src.cache()
    src.count()
    cat = sparkberg.catalog(spark, wh)
    ours, java = [], []
    for i in range(repeats):
        t = cat.create_table(f"b.s{i}", "id bigint, ts timestamp, v string, x double",
                             partition_by=["day(ts)", "bucket(16, id)"])
        t0 = time.perf_counter()
        t.append(src)
        ours.append(time.perf_counter() - t0)
        spark.sql(f"CREATE TABLE ref.b.j{i} (id bigint, ts timestamp, v string, x double) USING iceberg "
                  "PARTITIONED BY (days(ts), bucket(16, id))")
        t0 = time.perf_counter()
        src.writeTo(f"ref.b.j{i}").append()
        java.append(time.perf_counter() - t0)
        assert spark.table(f"ref.b.j{i}").count() == rows == sparkberg.load_table(spark, t.location).to_df().count()
    o, j = statistics.median(ours), statistics.median(java)
    print(f"append {rows} rows (day x bucket[16]): sparkberg {o:.1f}s, Iceberg Java {j:.1f}s, ratio {o / j:.2f} "
          f"(medians of {repeats}; runs: sparkberg {[round(x, 1) for x in ours]}, java {[round(x, 1) for x in java]})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
