"""One of two writer processes racing one idempotency key on each of several catalogs in turn: for each race, it
loads the table, waits for the other (a file appears in the race's ready directory when both are ready), then
appends the same rows with the same key. Prints what each write did.

    python idempotent_writer.py RACES_JSON WORKER
    (RACES_JSON: [{"catalog": catalog config, "table": "db.t", "ready": directory}, ...])"""
import json
import os
import sys
import time

from sparkberg.spark.session import session_builder

import sparkberg


def main(races: str, worker: str) -> int:
    spark = (session_builder(f"idempotent-{worker}", master="local[1]").config("spark.ui.enabled", "false")
             .getOrCreate())
    rows = spark.range(0, 100).selectExpr("id", "CAST(id % 4 AS INT) AS p")
    rows.cache().count()
    for n, race in enumerate(json.loads(races)):
        args = race["catalog"]
        t = sparkberg.catalog(spark, args.pop("uri"), **args).load_table(race["table"])
        open(os.path.join(race["ready"], worker), "w").close()
        deadline = time.monotonic() + 300
        while len(os.listdir(race["ready"])) < 2 and time.monotonic() < deadline:  # (both loaded the table: both
            time.sleep(0.01)                                                       # pass the check, and race)
        outcome = t.append(rows, idempotency=("race", 7))
        print(f"OUTCOME {n} committed={outcome.committed} skipped={outcome.skipped} snapshot={outcome.snapshot_id}",
              flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main(*sys.argv[1:3]))
