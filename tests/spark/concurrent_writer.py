"""One of several writer processes racing on one table: three appends and a delete.

    python concurrent_writer.py WAREHOUSE TABLE WORKER"""
import os
import sys

from sparkberg.spark.session import session_builder

import sparkberg


def main(warehouse: str, table: str, worker: int) -> int:
    spark = (session_builder(f"writer-{worker}", master="local[1]").config("spark.sql.shuffle.partitions", "2")
             .config("spark.ui.enabled", "false").getOrCreate())
    t = sparkberg.catalog(spark, warehouse).load_table(table)
    for batch in range(3):
        lo = worker * 1000 + batch * 10
        t.append(spark.range(lo, lo + 10).selectExpr("id", f"{worker} AS worker"))
    t.delete(f"id = {worker * 1000}")
    spark.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
