"""Run as a script, in a fresh process: ``settings_check.py WAREHOUSE`` reads settings set every way Spark takes them
before the session's SQL conf is made, then plans and counts the table ``db.t`` of ``WAREHOUSE`` (written by
``test_settings.write_table``: 1,000 rows in two files, a tenth deleted) from its metadata, and checks that the conf
is still not made (so none of it paid for making it) and that every value read before equals what Spark's own
``spark.conf`` answers once it is made; then a new session on the same context and a cloned session. The JVM runs in
``America/New_York``: with no session time zone set, a zone-less timestamp in a filter means that zone's time, as
Spark's own ``WHERE`` takes it, in a read's pruning and in a DELETE. Prints ``settings ok``."""
import sys

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

import sparkberg
from sparkberg.spark.jvm import sql_conf_before_made
from sparkberg.spark.settings import TIME_ZONE, session_conf, session_time_zone

CONTEXT, BUILDER, BOTH, UNSET = (f"spark.sparkberg.check.{k}" for k in ("context", "builder", "both", "unset"))
SQL = "spark.sql.shuffle.partitions"  # (a SQL setting, not a static one)
KEYS = (CONTEXT, BUILDER, BOTH, UNSET, SQL, TIME_ZONE, "spark.app.name", "spark.master")
ZONE = "America/New_York"


def unmade(spark) -> bool:
    return sql_conf_before_made(spark, UNSET)[0]


def main(warehouse: str) -> None:
    conf = (SparkConf().setMaster("local[1]").setAppName("settings-check").set("spark.ui.enabled", "false")
            .set(CONTEXT, "from the context").set(BOTH, "from the context")
            .set("spark.driver.extraJavaOptions", f"-Duser.timezone={ZONE}"))
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    # (a session made over an existing context: its builder's options are the session's own, not the context's)
    spark = SparkSession.builder.config(BUILDER, "from the builder").config(BOTH, "from the builder") \
        .config(SQL, "7").getOrCreate()
    assert unmade(spark), "a fresh session's SQL conf is made before anything asked for it"
    before = {k: session_conf(spark, k) for k in KEYS}
    assert before[CONTEXT] == "from the context" and before[BUILDER] == before[BOTH] == "from the builder", before
    assert before[UNSET] is None and before[TIME_ZONE] is None and before[SQL] == "7", before
    assert session_time_zone(spark) == ZONE
    t = sparkberg.catalog(spark, warehouse).load_table("db.t")
    assert t.plan_files().count() == 2
    assert t.count() == 900
    assert unmade(spark), "planning or counting from metadata made the session's SQL conf"
    assert sql_conf_before_made(spark, "spark.sql.warehouse.dir") == (False, None)  # (static: the shared state's)
    made = {k: spark.conf.get(k, None) for k in KEYS}
    assert not unmade(spark)
    assert before == made, (before, made)
    assert session_time_zone(spark) == spark.conf.get(TIME_ZONE) == ZONE
    spark.conf.set(BUILDER, "set at runtime")
    assert session_conf(spark, BUILDER) == "set at runtime"

    other = spark.newSession()  # (the same context and shared state; no builder options of its own)
    assert unmade(other)
    before = {k: session_conf(other, k) for k in KEYS}
    assert before == {k: other.conf.get(k, None) for k in KEYS}, before
    assert not unmade(other)

    # (a cloned session's conf is a copy of its parent's, which Spark makes as it clones: read through Spark)
    clone = SparkSession(sc, spark._jsparkSession.cloneSession())
    assert not unmade(clone)
    assert session_conf(clone, BUILDER) == "set at runtime"
    zoned(spark, warehouse)
    print("settings ok")


def zoned(spark, warehouse: str) -> None:
    """Rows at 02:00 and 06:00 UTC on 2024-01-01 (21:00 and 01:00 in New York): ``ts < TIMESTAMP '2024-01-01
    00:00:00'`` holds for the first alone in a session of New York's time, in sparkberg's filter as in Spark's."""
    t = sparkberg.catalog(spark, warehouse).create_table("db.zoned", "id bigint, ts timestamp",
                                                         partition_by=["hour(ts)"])
    t.append(spark.sql("SELECT * FROM VALUES (1L, TIMESTAMP '2024-01-01 02:00:00Z'), "
                       "(2L, TIMESTAMP '2024-01-01 06:00:00Z') AS v(id, ts)"))
    before = "ts < TIMESTAMP '2024-01-01 00:00:00'"
    assert [r.id for r in t.to_df().where(before).collect()] == [1]  # (Spark's own reading of it)
    assert [r.id for r in t.to_df(filter=before).collect()] == [1]
    assert [r.file_path for r in t.plan_files(filter=before).collect()] == \
        [r.file_path for r in t.plan_files().collect() if "02" in r.file_path.split("ts_hour=")[1][11:13]]
    t.delete(before)
    assert [r.id for r in t.to_df().collect()] == [2]


if __name__ == "__main__":
    main(sys.argv[1])
