"""Partition keys as Spark SQL expressions (``write.jvm_keys``): each gives the value the writer computes itself
(``arrow_transforms``, tested against the spec's scalar transforms), in any session time zone; a write whose
keys all have one clusters its rows in the JVM, with no Python stage before the writer's."""
import random

import pyarrow as pa
import pytest

import sparkberg
from sparkberg.format import types as T
from sparkberg.format.transforms import parse_transform
from sparkberg.write.arrow_transforms import apply_transform
from sparkberg.write.jvm_keys import SEED_ZERO, key_sql

DAY_US = 86_400_000_000
MIN_DAY, MAX_DAY = -719_162, 2_932_896  # 0001-01-01 and 9999-12-31, Spark's range

rnd = random.Random(7)
VALUES = {
    T.INT: [None, 0, 1, -1, 34, 2 ** 31 - 1, -2 ** 31] + [rnd.randint(-2 ** 31, 2 ** 31 - 1) for _ in range(300)],
    T.LONG: [None, 0, 1, -1, 34, 2 ** 63 - 1, -2 ** 63] + [rnd.randint(-2 ** 63, 2 ** 63 - 1) for _ in range(300)],
    T.DATE: [None, 0, -1, 1, 17486, MIN_DAY, MAX_DAY] + [rnd.randint(MIN_DAY, MAX_DAY) for _ in range(300)],
    T.TIMESTAMPTZ: [None, 0, -1, 1, DAY_US, -DAY_US, -DAY_US - 1, 3_600_000_000 - 1, MIN_DAY * DAY_US,
                    (MAX_DAY + 1) * DAY_US - 1] + [rnd.randint(MIN_DAY * DAY_US, MAX_DAY * DAY_US) for _ in range(300)],
}
# (the column's Spark SQL from a bigint v; the Arrow array the writer gets)
SPARK = {T.INT: "CAST(v AS INT)", T.LONG: "v", T.DATE: "date_from_unix_date(CAST(v AS INT))",
         T.TIMESTAMPTZ: "timestamp_micros(v)"}
ARROW = {T.INT: pa.int32(), T.LONG: pa.int64(), T.DATE: pa.date32(), T.TIMESTAMPTZ: pa.timestamp("us", "UTC")}
TRANSFORMS = {T.INT: ["bucket[16]", "bucket[7]"], T.LONG: ["bucket[16]", "bucket[1000]"],
              T.DATE: ["bucket[16]", "day", "month", "year"],
              T.TIMESTAMPTZ: ["bucket[16]", "hour", "day", "month", "year"]}


def test_seed_zero_turns_sparks_hash_into_icebergs(spark):
    row = spark.sql(f"SELECT hash({SEED_ZERO}) AS zero, hash({SEED_ZERO}, CAST(34 AS BIGINT)) AS h").collect()[0]
    assert row.zero == 0
    assert row.h == 2017239379  # the spec's Appendix B: Murmur3 (seed 0) of the long 34


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles", "Asia/Kolkata"])
@pytest.mark.parametrize("t", list(VALUES), ids=str)
def test_expressions_give_the_writers_partition_values(spark, t, zone):
    values = VALUES[t]
    df = spark.createDataFrame([(v,) for v in values], "v bigint").selectExpr(f"{SPARK[t]} AS c")
    arrow = pa.array(values, pa.int32() if t in (T.INT, T.DATE) else pa.int64())
    arrow = arrow.cast(ARROW[t])
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        for name in TRANSFORMS[t]:
            transform = parse_transform(name)
            got = [r.k for r in df.selectExpr(f"{key_sql(transform, t, 'c')} AS k").collect()]
            assert got == apply_transform(transform, t, arrow).to_pylist(), (t, name, zone)
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)


def test_transforms_and_types_without_an_expression():
    assert key_sql(parse_transform("bucket[16]"), T.STRING, "s") is None  # (Spark hashes tail bytes its own way)
    assert key_sql(parse_transform("truncate[4]"), T.LONG, "n") is None
    assert key_sql(parse_transform("day"), T.TIMESTAMP, "ts") is None  # (no zone: not from the epoch micros)
    assert key_sql(parse_transform("identity"), T.UUID, "u") is None
    assert key_sql(parse_transform("identity"), T.STRING, "a.b") == "`a`.`b`"  # (the column itself)
    assert key_sql(parse_transform("identity"), T.TIMESTAMP, "ts") == "`ts`"
    assert key_sql(parse_transform("identity"), T.LONG, "a`b") == "`a``b`"  # (a backtick doubled, as Spark reads it)


def _python_stages(spark, call) -> list[int]:
    """For each SQL execution during ``call``, the Python (``mapInArrow``) operators of its physical plan."""
    store = spark._jsparkSession.sharedState().statusStore()

    def plans():
        runs = store.executionsList()
        return {runs.apply(i).executionId(): runs.apply(i).physicalPlanDescription() for i in range(runs.size())}
    def operators(plan: str) -> int:  # (the final plan's tree: not the initial plan's, nor the details below)
        tree = plan.split("== Physical Plan ==")[-1].strip().split("\n\n")[0]
        if "== Final Plan ==" in tree:
            tree = tree.split("== Final Plan ==")[1].split("== Initial Plan ==")[0]
        return tree.count("MapInArrow")
    before = set(plans())
    call()
    return [operators(p) for e, p in sorted(plans().items()) if e not in before]


@pytest.mark.parametrize("spec,python_key_stage", [(["days(ts)", "bucket(16, id)"], False),
                                                    (["truncate(2, v)"], True)])
def test_a_write_clusters_its_rows_in_the_jvm_when_every_key_has_an_expression(spark, warehouse, spec,
                                                                              python_key_stage):
    if not hasattr(spark, "_jsparkSession"):
        pytest.skip("reads the plans of a classic session")
    t = sparkberg.catalog(spark, warehouse).create_table("db.jk", "id bigint, ts timestamp, v string",
                                                         partition_by=spec)
    rows = spark.sql("SELECT id, TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % 5 AS int)) AS ts, "
                     "concat('v', id % 3) AS v FROM range(0, 2000)")
    stages = _python_stages(spark, lambda: t.append(rows))
    written = max(stages)  # (the write's plan: the writer, and the key stage where there is one)
    assert written == (2 if python_key_stage else 1), stages
    t = sparkberg.catalog(spark, warehouse).load_table("db.jk")
    files = t.metadata_table("files").collect()
    assert sum(f.record_count for f in files) == 2000
    assert len(files) == len({tuple(f.partition) for f in files})  # one file a partition, clustered
    assert t.to_df().count() == 2000
