"""A session with Spark's default settings and the given daemon module, in a process of its own (the daemon module is
read when the SparkContext starts): its workers' PySpark comes from where that daemon imports it, and sparkberg's
Python stages run in them (an append, a merge-on-read delete, a read). Prints one line; exits non-zero on failure.

    python daemon_session_check.py DAEMON_MODULE WAREHOUSE"""
import os
import sys

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import SparkSession  # noqa: E402

import sparkberg  # noqa: E402
import daemon_check  # noqa: E402


def main(daemon: str, warehouse: str) -> int:
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.python.daemon.module", daemon).getOrCreate())
    daemon_check.check(spark, "a session of Spark's defaults", daemon)
    t = sparkberg.catalog(spark, warehouse).create_table(
        "db.t", "id bigint, v string", partition_by=["bucket(4, id)"],
        properties={"format-version": "3", "write.delete.mode": "merge-on-read"})
    t.append(spark.range(1000).selectExpr("id", "CAST(id AS string) AS v"))
    t.delete("id % 10 = 0")
    assert t.to_df().count() == 900 and t.to_df().where("id % 10 = 0").count() == 0
    print(f"sparkberg's stages with {daemon} ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
