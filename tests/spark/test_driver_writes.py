"""Small writes are written on the driver (``write_files``): rows Spark estimates under ``DRIVER_WRITE_BYTES``
are collected as Arrow, a table per task of the write's plan, and written by the same writer the executors run,
so no Python stage starts. The files, their rows, partitions and metrics are those the executors write; larger
writes, writes whose keys need a Python stage, and sessions that give no estimate go to the executors."""
import pytest

import sparkberg
from sparkberg.write import dataframe, writer as writer_module

pytestmark = pytest.mark.spark


@pytest.fixture
def on_driver(monkeypatch):
    """The writers that ran in this (the driver's) process, once for each task's rows they wrote."""
    calls = []
    real = writer_module.FileWriter.__call__

    def counting(self, batches):
        calls.append(self)
        return real(self, batches)
    monkeypatch.setattr(writer_module.FileWriter, "__call__", counting)
    return calls


def _files(t):
    return sorted((tuple(f.asDict().get("partition") or ()), f.record_count, f.value_counts and sorted(f.value_counts.items()),
                   f.null_value_counts and sorted(f.null_value_counts.items()),
                   f.lower_bounds and sorted(f.lower_bounds.items()), f.upper_bounds and sorted(f.upper_bounds.items()))
                  for f in t.metadata_table("files").collect())


def _per_partition(t):
    out = {}
    for f in t.metadata_table("files").collect():
        key = tuple(f.asDict().get("partition") or ())
        out[key] = out.get(key, 0) + f.record_count
    return out


def _rows(spark, n):
    return spark.sql("SELECT id, TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % 5 AS int)) AS ts, "
                     f"concat('v', id % 7) AS v, CAST(id % 100 AS double) / 8 AS x FROM range(0, {n})")


@pytest.mark.parametrize("spec,order", [(["day(ts)", "bucket(4, id)"], None), ([], "id DESC"), (["v"], "x"),
                                        (["day(ts)"], None)])
def test_a_small_write_is_the_executors_write_made_on_the_driver(spark, warehouse, on_driver, monkeypatch, spec,
                                                                   order):
    if not hasattr(spark, "_jsparkSession"):
        pytest.skip("Spark Connect gives no estimate: its writes are the executors'")
    cat = sparkberg.catalog(spark, warehouse)
    tables = []
    for name, bound in (("drv", dataframe.DRIVER_WRITE_BYTES), ("exe", 0)):
        monkeypatch.setattr(dataframe, "DRIVER_WRITE_BYTES", bound)
        t = cat.create_table(f"db.{name}", "id bigint, ts timestamp, v string, x double", partition_by=spec,
                             properties={"format-version": "3"})
        if order:
            t.replace_sort_order(order)
        before = len(on_driver)
        t.append(_rows(spark, 3000))
        assert len(on_driver) > before if name == "drv" else len(on_driver) == before
        tables.append(cat.load_table(f"db.{name}"))
    drv, exe = tables
    if order is None:  # (hash: the same files)
        assert _files(drv) == _files(exe)
    else:  # (range: its bounds come from a random sample, in both ways: the same rows in each partition)
        assert _per_partition(drv) == _per_partition(exe)
    got = {tuple(r) for r in drv.to_df(columns=["id", "ts", "v", "x", "_row_id"]).collect()}
    assert got == {tuple(r) for r in exe.to_df(columns=["id", "ts", "v", "x", "_row_id"]).collect()}
    assert len(got) == 3000
    if order == "id DESC":
        ids = [r.id for r in spark.read.parquet(drv.metadata_table("files").collect()[0].file_path).collect()]
        assert ids == sorted(ids, reverse=True)


def test_what_the_driver_does_not_write(spark, warehouse, on_driver, monkeypatch):
    if not hasattr(spark, "_jsparkSession"):
        pytest.skip("Spark Connect gives no estimate: its writes are the executors'")
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.big", "id bigint, ts timestamp, v string, x double", partition_by=["day(ts)"])
    monkeypatch.setattr(dataframe, "DRIVER_WRITE_BYTES", 1000)  # (3000 rows: estimated well above it)
    t.append(_rows(spark, 3000))
    assert on_driver == []
    monkeypatch.setattr(dataframe, "DRIVER_WRITE_BYTES", 16 << 20)
    z = cat.create_table("db.z", "id bigint, ts timestamp, v string, x double", partition_by=["truncate(2, v)"])
    z.append(_rows(spark, 3000))  # (a truncate key needs the Python key stage: the executors write)
    assert on_driver == []
    t.append(_rows(spark, 3000))
    assert len({id(w) for w in on_driver}) == 1
    assert cat.load_table("db.big").to_df().count() == 6000 and cat.load_table("db.z").to_df().count() == 3000


def test_a_failure_on_the_driver_writes_nothing(spark, warehouse, on_driver):
    if not hasattr(spark, "_jsparkSession"):
        pytest.skip("Spark Connect gives no estimate: its writes are the executors'")
    from sparkberg.errors import ValidationError
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.nn", "id bigint NOT NULL, v string")
    t.append(spark.sql("SELECT id, 'a' AS v FROM range(0, 10)"))
    before = cat.load_table("db.nn").metadata
    with pytest.raises(ValidationError, match="'id' is required"):
        t.append(spark.sql("SELECT IF(id = 3, NULL, id) AS id, 'b' AS v FROM range(0, 10)"))
    assert on_driver and cat.load_table("db.nn").metadata == before
