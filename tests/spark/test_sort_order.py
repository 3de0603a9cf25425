"""Sort-order evolution and sorted writes: ``replace_sort_order`` (Spark SQL's ``WRITE ORDERED BY``), rows sorted
within each file by the table's order with its id on the files, and ``write.distribution-mode`` decided as Iceberg
Spark's ``SparkWriteConf`` does."""
import pyarrow.parquet as pq
import pytest

import sparkberg
from sparkberg.errors import ValidationError
from sparkberg.io.fileio import to_local_path
from sparkberg.write.dataframe import distribution_mode

pytestmark = pytest.mark.spark


@pytest.fixture
def cat(spark, warehouse):
    return sparkberg.catalog(spark, warehouse)


def unchanged(cat, name, call, message):
    location = cat.load_table(name).metadata_location
    with pytest.raises(ValidationError, match=message):
        call()
    assert cat.load_table(name).metadata_location == location


def test_replace_sort_order_builds_iceberg_sort_fields(cat):
    t = cat.create_table("db.s", "id bigint, ts timestamp, k string")
    t.replace_sort_order("ts", "id DESC NULLS LAST", "bucket(4, k)", "id desc")
    order = cat.load_table("db.s").sort_order()
    schema = t.schema()
    ids = {f.name: f.field_id for f in schema.fields}
    assert order.order_id == 1
    assert [(f.source_id, str(f.transform), f.direction, f.null_order) for f in order.fields] == [
        (ids["ts"], "identity", "asc", "nulls-first"), (ids["id"], "identity", "desc", "nulls-last"),
        (ids["k"], "bucket[4]", "asc", "nulls-first"), (ids["id"], "identity", "desc", "nulls-last")]
    t.replace_sort_order("k")
    t.replace_sort_order("ts", "id DESC NULLS LAST", "bucket(4, k)", "id desc")  # an existing order: its id again
    m = cat.load_table("db.s").metadata
    assert m.default_sort_order_id == 1 and len(m.sort_orders) == 3  # (unsorted, the first, "k")
    t.replace_sort_order()
    assert cat.load_table("db.s").metadata.default_sort_order_id == 0
    unchanged(cat, "db.s", lambda: t.replace_sort_order("nope"), "nope")
    unchanged(cat, "db.s", lambda: t.replace_sort_order("day(k)"), "day")


def test_writes_sort_rows_within_files_and_record_the_order(spark, cat):
    t = cat.create_table("db.s", "id bigint, p string, v double", partition_by=["p"],
                         properties={"format-version": "2"})
    t.replace_sort_order("v DESC NULLS LAST", "id")
    df = spark.range(0, 4000).selectExpr(
        "id", "IF(id % 3 = 0, 'a', 'b') AS p", "IF(id % 7 = 0, NULL, CAST((id * 7919) % 1000 AS double) / 10) AS v"
    ).repartition(5)
    t.append(df)
    t.update({"v": "v + 1000"}, "id % 11 = 0")  # copy-on-write: the rewritten files sorted too
    files = cat.load_table("db.s").metadata_table("files").select("file_path", "sort_order_id").collect()
    assert files and all(r.sort_order_id == 1 for r in files)
    for r in files:
        rows = pq.read_table(to_local_path(r.file_path), columns=["id", "v"]).to_pylist()
        key = [(0 if x["v"] is not None else 1, -(x["v"] or 0), x["id"]) for x in rows]
        assert key == sorted(key), r.file_path
    assert cat.load_table("db.s").to_df().count() == 4000
    t.replace_sort_order()  # unsorted: the files say so
    t.append(spark.range(1).selectExpr("id", "'a' AS p", "CAST(1 AS double) AS v"))
    t = cat.load_table("db.s")
    newest = t.metadata_table("entries").where(f"status = 1 AND snapshot_id = {t.metadata.current_snapshot_id}")
    assert [r.data_file.sort_order_id for r in newest.collect()] == [0]


def test_distribution_modes_follow_iceberg_spark(spark, cat):
    plain = cat.create_table("db.plain", "id bigint, p string")
    parted = cat.create_table("db.parted", "id bigint, p string", partition_by=["p"])
    cat.create_table("db.ordered", "id bigint, p string").replace_sort_order("id")
    names = ("db.plain", "db.parted", "db.ordered")

    def m(name):
        return cat.load_table(name).metadata
    assert [distribution_mode(spark, m(n)) for n in names] == ["none", "hash", "range"]
    assert [distribution_mode(spark, m(n), "delete") for n in names] == ["hash"] * 3
    assert [distribution_mode(spark, m(n), "merge") for n in names] == ["none", "hash", "range"]
    assert distribution_mode(spark, m("db.parted"), "merge", position_delta=True) == "hash"
    # files rewritten in place keep their tasks, unless a mode is named (merges and merge-on-read never are)
    assert [distribution_mode(spark, m("db.parted"), c, in_place=True) for c in ("delete", "update", "merge")] == \
        ["none", "none", "hash"]
    assert distribution_mode(spark, m("db.parted"), "update", position_delta=True, in_place=True) == "hash"
    parted.set_properties({"write.delete.distribution-mode": "hash"})
    assert distribution_mode(spark, m("db.parted"), "delete", in_place=True) == "hash"
    parted.set_properties({"write.distribution-mode": "range", "write.merge.distribution-mode": "none"})
    plain.set_properties({"write.distribution-mode": "hash", "write.update.distribution-mode": "range"})
    assert distribution_mode(spark, m("db.parted")) == "range"
    assert distribution_mode(spark, m("db.parted"), "merge") == "none"
    assert distribution_mode(spark, m("db.plain")) == "none"  # hash without partitions: none, as Java adjusts it
    assert distribution_mode(spark, m("db.plain"), "update") == "range"
    spark.conf.set("spark.sql.iceberg.distribution-mode", "none")
    try:
        assert distribution_mode(spark, m("db.parted")) == "none"
    finally:
        spark.conf.unset("spark.sql.iceberg.distribution-mode")
    parted.set_properties({"write.distribution-mode": "sideways"})
    unchanged(cat, "db.parted", lambda: parted.append(spark.range(1).selectExpr("id", "'a' AS p")),
              "write.distribution-mode must be one of none, hash, range, got 'sideways'")


def test_unclustered_rows_are_fanned_out_a_file_per_partition_per_task(spark, cat):
    # write.distribution-mode none: no shuffle, so each task meets its partitions in any order; it keeps a file
    # open for each (Java's fanout writer), not one per run of equal partition values
    t = cat.create_table("db.fanout", "id bigint, p int, x double", partition_by=["p", "x"],
                         properties={"write.distribution-mode": "none"})
    rows = spark.sql("SELECT id, CAST(id % 4 AS INT) AS p, IF(id % 3 = 0, CAST('NaN' AS DOUBLE), 1.0) AS x "
                     "FROM range(0, 1200)").repartition(2)
    t.append(rows)
    files = t.metadata_table("files").select("partition", "record_count").collect()
    assert len(files) <= 2 * 8  # (2 tasks, 4 x 2 partitions: not one file per row)
    assert sum(f["record_count"] for f in files) == 1200
    got = sorted(tuple(r) for r in t.to_df().collect())
    expected = sorted(tuple(r) for r in rows.collect())
    assert [r[:2] for r in got] == [r[:2] for r in expected]


def test_a_writes_distribution_mode_is_its_own(spark, cat):
    # Iceberg Spark's write option distribution-mode, over the table's write.distribution-mode (hash here)
    t = cat.create_table("db.option", "id bigint, p int", partition_by=["p"])
    rows = spark.sql("SELECT id, CAST(id % 4 AS INT) AS p FROM range(0, 400)").repartition(3)
    t.append(rows, distribution_mode="none")  # (each of the 3 tasks writes a file for each partition it meets)
    assert len(t.metadata_table("files").collect()) == 3 * 4
    t.append(rows)  # (hash: a file a partition)
    assert len(t.metadata_table("files").collect()) == 3 * 4 + 4
    unchanged(cat, "db.option", lambda: t.append(rows, distribution_mode="sideways"),
              "unknown write distribution mode 'sideways'")
