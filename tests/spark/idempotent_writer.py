"""One of two writer processes racing one idempotency key: both load the table, wait for the other (a file
appears when both are ready), then append the same rows with the same key. Prints what its write did.

    python idempotent_writer.py CATALOG_JSON TABLE READY_DIR WORKER"""
import json
import os
import sys
import time

from sparkberg.spark.session import session_builder

import sparkberg


def main(config: str, table: str, ready: str, worker: str) -> int:
    spark = (session_builder(f"idempotent-{worker}", master="local[1]").config("spark.ui.enabled", "false")
             .getOrCreate())
    args = json.loads(config)
    t = sparkberg.catalog(spark, args.pop("uri"), **args).load_table(table)
    rows = spark.range(0, 100).selectExpr("id", "CAST(id % 4 AS INT) AS p")
    rows.cache().count()
    open(os.path.join(ready, worker), "w").close()
    deadline = time.monotonic() + 300
    while len(os.listdir(ready)) < 2 and time.monotonic() < deadline:  # (both loaded the table: both pass the check
        time.sleep(0.01)                                                # before the commit, and race in it)
    outcome = t.append(rows, idempotency=("race", 7))
    print(f"OUTCOME committed={outcome.committed} skipped={outcome.skipped} snapshot={outcome.snapshot_id}",
          flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main(*sys.argv[1:5]))
