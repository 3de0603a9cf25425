"""sparkberg on PySpark 4 (variant needs it) against a table of format v3 types in a REST catalog, for the interop
tests that run on PySpark 3.5: ``read`` prints the table's rows as JSON (``id``, the variant as JSON text, the
timestamp_ns as epoch microseconds, and every other column as text; ``read-arrow``: read by sparkberg's Arrow
reader instead of Spark's); ``append`` appends the rows given as JSON
(``[id, variant JSON text, timestamp text]``).

    python spark4_v3.py REST_URI TABLE read|read-arrow|append [ROWS_JSON]"""
import json
import os
import sys

from sparkberg.spark.session import session_builder

import sparkberg


def main(uri: str, table: str, mode: str, rows: str = "[]") -> int:
    spark = session_builder("spark4-v3", master="local[2]").config("spark.ui.enabled", "false") \
        .config("spark.sql.session.timeZone", "UTC").getOrCreate()
    t = sparkberg.catalog(spark, uri).load_table(table)
    arrow = mode == "read-arrow"
    if arrow:  # (sparkberg's Arrow reader, which tables on object stores are read by)
        from sparkberg.read import reader
        reader.spark_parses = lambda spark, metadata: False
        mode = "read"
    if mode == "read":
        df = t.to_df()
        assert ("MapInArrow" in df._jdf.queryExecution().executedPlan().toString()) == arrow
        cols = [f"CAST({c} AS string)" for c in df.columns if c not in ("id", "v", "ts")]
        got = df.selectExpr("id", "to_json(v)", "unix_micros(CAST(ts AS timestamp))", *cols).collect()
        print("SCHEMA " + df.schema.simpleString(), flush=True)
        print("ROWS " + json.dumps([list(r) for r in got]), flush=True)
    else:
        src = spark.createDataFrame(json.loads(rows), "id bigint, j string, ts string").selectExpr(
            "id", "parse_json(j) AS v", "CAST(ts AS timestamp_ntz) AS ts")
        t.append(src)
        print("APPENDED", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main(*sys.argv[1:]))
