"""``spark.python.daemon.module=sparkberg.daemon`` (the project's ``spark-defaults.conf``): the test session's Python
workers are forked by sparkberg's daemon and import PySpark from the installed package, and sparkberg's own Python
stages run in them; in a session of Spark's defaults, with PySpark's own daemon, too; a worker interpreter that lacks
sparkberg is told by name."""
import os
import subprocess
import sys

import pytest

import sparkberg

pytestmark = pytest.mark.spark
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import daemon_check  # noqa: E402


def test_the_session_s_workers_import_pyspark_from_the_installed_package(spark, warehouse):
    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == "sparkberg.daemon"
    daemon_check.check(spark, "a classic session")
    t = sparkberg.catalog(spark, warehouse).create_table("db.t", "id bigint, v string", partition_by=["bucket(4, id)"])
    t.append(spark.range(100).selectExpr("id", "CAST(id AS string) AS v"))  # (a Python stage of sparkberg's)
    t.delete("id < 10")
    assert t.to_df().count() == 90


def test_sparkberg_s_stages_run_with_pyspark_s_own_daemon(tmp_path):
    # (the test session has sparkberg's daemon; a session of Spark's defaults has PySpark's)
    out = subprocess.run([sys.executable, os.path.join(HERE, "daemon_session_check.py"), "pyspark.daemon",
                          str(tmp_path / "wh")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "sparkberg's stages with pyspark.daemon ok" in out.stdout


PLAIN = r"""
import sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.python.daemon.module", "sparkberg.daemon").getOrCreate())
try:
    spark.range(1).mapInArrow(lambda it: it, "id long").collect()
except Exception as e:
    print("FAILED", str(e)[-3000:])
"""


def test_a_worker_interpreter_without_sparkberg_cannot_start_the_daemon_and_says_so(python_without_sparkberg):
    # (the setting belongs where sparkberg is installed: there its own stages need it anyway)
    python = python_without_sparkberg
    out = subprocess.run([sys.executable, "-c", PLAIN], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYSPARK_PYTHON": str(python)})
    print(out.stdout[-3000:], out.stderr[-3000:])
    assert "FAILED" in out.stdout
    assert "No module named 'sparkberg'" in out.stdout
