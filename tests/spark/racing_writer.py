"""A pipeline racing table maintenance: appends, deletes and merges on one table, each retried from a fresh load
when its commit conflicts, or when a file it reads was removed meanwhile by an expiry whose retention is shorter
than the operation (it fails before committing anything; a scheduler would run it again).

    python racing_writer.py WAREHOUSE TABLE ITERATIONS"""
import os
import sys

from sparkberg.errors import CommitFailedException, MissingFileError
from sparkberg.spark.session import session_builder

import sparkberg

BASE = 10000


def retried(cat, name, op) -> None:
    for attempt in range(20):
        try:
            op(cat.load_table(name))
            return
        except CommitFailedException as e:
            print(f"retry {attempt}: {e}", flush=True)
        except Exception as e:  # noqa: BLE001 - only a read of a file expired meanwhile is retried
            # (as Spark reports a file gone between its listing and its read: Hadoop's exception or Spark 4's
            # FAILED_READ_FILE.FILE_NOT_EXIST)
            if not isinstance(e, MissingFileError) and not any(
                    text in str(e) for text in ("NoSuchFileException", "FILE_NOT_EXIST")):
                raise
            print(f"retry {attempt} (a file was expired under the read): {str(e)[:200]}", flush=True)
    raise RuntimeError(f"{name}: gave up after 20 conflicts")


def main(warehouse: str, name: str, iterations: int) -> int:
    spark = (session_builder("racing-writer", master="local[1]").config("spark.sql.shuffle.partitions", "2")
             .config("spark.ui.enabled", "false").getOrCreate())
    cat = sparkberg.catalog(spark, warehouse)
    for i in range(iterations):
        lo = BASE + i * 10
        retried(cat, name, lambda t: t.append(spark.sql(
            f"SELECT id, CAST(id % 4 AS INT) AS p, 'a' AS v FROM range({lo}, {lo + 10})")))
        if i % 3 == 1:
            retried(cat, name, lambda t: t.delete(f"id = {lo - 10}"))
        if i % 3 == 2:
            src = spark.sql(f"SELECT {lo - 19}L AS id, CAST({(lo - 19) % 4} AS INT) AS p, 'm' AS v")
            retried(cat, name, lambda t: t.merge(src, "t.id = s.id").when_matched_update({"v": "s.v"}).execute())
        print(f"iteration {i} done", flush=True)
    spark.stop()
    return 0


def expected(iterations: int) -> list[tuple]:
    """The rows the writer leaves: (id, p, v)."""
    rows = {}
    for i in range(iterations):
        lo = BASE + i * 10
        rows.update({j: (j, j % 4, "a") for j in range(lo, lo + 10)})
        if i % 3 == 1:
            rows.pop(lo - 10)
        if i % 3 == 2:
            rows[lo - 19] = (lo - 19, (lo - 19) % 4, "m")
    return sorted(rows.values())


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
