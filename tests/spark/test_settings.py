"""A session's settings are read without making its SQL conf where Spark has not made it yet
(:func:`sparkberg.spark.jvm.sql_conf_before_made`), to the value Spark's own ``spark.conf`` answers once it is made:
a fresh process's plan and count from metadata never make it (``settings_check.py``; PySpark 3.5 in the interop
suite)."""
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark
CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "settings_check.py")


def run_settings_check(spark, warehouse: str) -> None:
    """``settings_check.py`` in a fresh process of this interpreter, on a table ``spark`` writes first."""
    import sparkberg
    t = sparkberg.catalog(spark, warehouse).create_table(
        "db.t", "id bigint, v string", partition_by=["bucket(2, id)"],
        properties={"format-version": "3", "write.delete.mode": "merge-on-read"})
    t.append(spark.range(1000).selectExpr("id", "CAST(id AS string) AS v"))
    t.delete("id % 10 = 0")
    out = subprocess.run([sys.executable, CHECK, warehouse], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert out.returncode == 0 and "settings ok" in out.stdout, out.stdout[-3000:] + out.stderr[-3000:]


def test_settings_are_read_as_spark_will_make_them_and_a_metadata_plan_makes_no_sql_conf(spark, tmp_path):
    run_settings_check(spark, str(tmp_path / "wh"))


def test_a_made_conf_is_read_through_spark(spark):
    from sparkberg.spark.jvm import sql_conf_before_made
    from sparkberg.spark.settings import session_conf
    spark.conf.set("spark.sparkberg.test.made", "yes")
    assert sql_conf_before_made(spark, "spark.sparkberg.test.made") == (False, None)
    assert session_conf(spark, "spark.sparkberg.test.made") == "yes"
    spark.conf.unset("spark.sparkberg.test.made")
    assert session_conf(spark, "spark.sparkberg.test.made", "unset") == "unset"
