"""A streaming query into table ``db.sink`` that a test kills (SIGKILL, its whole process group) and restarts from
its checkpoint. Its source is a directory of Parquet files (``files``: one file a micro-batch) or a sparkberg table
read as a stream (``table``: one appended file a micro-batch). ``STREAM_DIE`` makes it kill itself just before or
just after a commit's metadata swap, the moments when a batch is written but not recorded, and recorded by the
table but not yet by Spark's checkpoint: ``before:N`` / ``after:N`` at its Nth commit, ``random:p`` with
probability p at each.

    python stream_writer.py files|table WAREHOUSE SOURCE CHECKPOINT"""
import os
import random
import signal
import sys

from sparkberg.spark.session import session_builder

import sparkberg
from sparkberg.table import Catalog


def dying_commits(how: str) -> None:
    kind, _, value = how.partition(":")
    commit = Catalog.commit_table
    count = [0]

    def dies(moment: str) -> bool:
        if kind == "random":
            return random.random() < float(value)
        return kind == moment and count[0] == int(value)

    def commit_table(self, *args, **kwargs):
        count[0] += 1
        if dies("before"):
            print("dying before a commit", flush=True)
            os.killpg(os.getpgid(0), signal.SIGKILL)
        result = commit(self, *args, **kwargs)
        if dies("after"):
            print("dying after a commit", flush=True)
            os.killpg(os.getpgid(0), signal.SIGKILL)
        return result
    Catalog.commit_table = commit_table


def main(kind: str, warehouse: str, source: str, checkpoint: str) -> int:
    spark = (session_builder("stream-writer", master="local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    cat = sparkberg.catalog(spark, warehouse)
    if os.environ.get("STREAM_DIE"):
        dying_commits(os.environ["STREAM_DIE"])
    if kind == "files":
        rows = spark.readStream.schema("id bigint, p int").option("maxFilesPerTrigger", 1).parquet(source)
    else:
        rows = cat.load_table(source).read_stream(max_files_per_trigger=1)
    query = cat.load_table("db.sink").write_stream(rows, checkpoint, trigger={"availableNow": True})
    query.awaitTermination()
    print("DONE", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main(*sys.argv[1:5]))
