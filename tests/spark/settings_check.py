"""Run as a script, in a fresh process: ``settings_check.py WAREHOUSE`` reads settings set every way Spark takes them
before the session's SQL conf is made, then plans and counts the table ``db.t`` of ``WAREHOUSE`` (written by
``test_settings.write_table``: 1,000 rows in two files, a tenth deleted) from its metadata, and checks that the conf
is still not made (so none of it paid for making it) and that every value read before equals what Spark's own
``spark.conf`` answers once it is made; then a new session on the same context and a cloned session. Prints
``settings ok``."""
import sys

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

import sparkberg
from sparkberg.spark.jvm import sql_conf_before_made
from sparkberg.spark.settings import session_conf

CONTEXT, BUILDER, BOTH, UNSET = (f"spark.sparkberg.check.{k}" for k in ("context", "builder", "both", "unset"))
KEYS = (CONTEXT, BUILDER, BOTH, UNSET, "spark.app.name", "spark.master")


def unmade(spark) -> bool:
    return sql_conf_before_made(spark, UNSET)[0]


def main(warehouse: str) -> None:
    conf = (SparkConf().setMaster("local[1]").setAppName("settings-check").set("spark.ui.enabled", "false")
            .set(CONTEXT, "from the context").set(BOTH, "from the context"))
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    # (a session made over an existing context: its builder's options are the session's own, not the context's)
    spark = SparkSession.builder.config(BUILDER, "from the builder").config(BOTH, "from the builder").getOrCreate()
    assert unmade(spark), "a fresh session's SQL conf is made before anything asked for it"
    before = {k: session_conf(spark, k, "unset") for k in KEYS}
    assert before[CONTEXT] == "from the context" and before[BUILDER] == before[BOTH] == "from the builder", before
    assert before[UNSET] == "unset", before
    t = sparkberg.catalog(spark, warehouse).load_table("db.t")
    assert t.plan_files().count() == 2
    assert t.count() == 900
    assert unmade(spark), "planning or counting from metadata made the session's SQL conf"
    assert sql_conf_before_made(spark, "spark.sql.shuffle.partitions") == (False, None)  # (spark.sql. keys: Spark's)
    made = {k: spark.conf.get(k, "unset") for k in KEYS}
    assert not unmade(spark)
    assert before == made, (before, made)
    spark.conf.set(BUILDER, "set at runtime")
    assert session_conf(spark, BUILDER) == "set at runtime"

    other = spark.newSession()  # (the same context and shared state; no builder options of its own)
    assert unmade(other)
    before = {k: session_conf(other, k, "unset") for k in KEYS}
    assert before == {k: other.conf.get(k, "unset") for k in KEYS}, before
    assert not unmade(other)

    # (a cloned session's conf is a copy of its parent's, which Spark makes as it clones: read through Spark)
    clone = SparkSession(sc, spark._jsparkSession.cloneSession())
    assert not unmade(clone)
    assert session_conf(clone, BUILDER) == "set at runtime"
    print("settings ok")


if __name__ == "__main__":
    main(sys.argv[1])
