"""All 16 metadata tables equal Iceberg Java's (``SELECT * FROM ref.db.t.<name>``) on every corpus table:
same columns and types, same rows (as multisets)."""
import os
import uuid
from collections import Counter

import pytest

import sparkberg
from sparkberg.inspect import METADATA_TABLES

pytestmark = pytest.mark.interop

# Iceberg Java 1.10 fails to read these itself ("Invalid partition field parent: list<string>" in
# PositionDeletesRowReader, for tables with a list column and ORC/Avro position delete files)
JAVA_CANNOT = {("v2_orc", "position_deletes"), ("v2_avro", "position_deletes")}
# Iceberg Java 1.10 fails to read readable_metrics of a uuid column (ClassCastException: Cannot cast
# java.util.UUID to java.lang.CharSequence in MetricsUtil$ReadableColMetricsStruct): compared without them
JAVA_NO_READABLE_METRICS = {"v2_prune_types"}


def norm(v):
    if isinstance(v, float) and v != v:
        return "NaN"
    if isinstance(v, bytearray):
        return bytes(v)
    if isinstance(v, dict):
        return tuple(sorted((k, norm(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(norm(x) for x in v)
    if hasattr(v, "asDict"):
        return tuple((k, norm(x)) for k, x in v.asDict().items())
    return v


def test_every_metadata_table_of_every_corpus_table_equals_javas(corpus, java, java_warehouse):
    checked = 0
    for name in corpus:
        t = sparkberg.load_table(java, os.path.join(java_warehouse, "db", name))
        for mt in METADATA_TABLES:
            if (name, mt) in JAVA_CANNOT:
                assert t.metadata_table(mt).count() > 0
                continue
            ours, theirs = t.metadata_table(mt), java.table(f"ref.db.{name}.{mt}")
            if name in JAVA_NO_READABLE_METRICS and "readable_metrics" in ours.columns:
                if mt == "data_files":  # (ours are read: each the uuid its bound's bytes hold)
                    got = [(r["readable_metrics"]["u"]["lower_bound"], r["lower_bounds"].get(5))
                           for r in ours.collect() if r["lower_bounds"].get(5) is not None]
                    assert len(got) == 4 and all(v == str(uuid.UUID(bytes=bytes(b))) for v, b in got)
                ours, theirs = ours.drop("readable_metrics"), theirs.drop("readable_metrics")
            assert ours.schema.simpleString() == theirs.schema.simpleString(), (name, mt)
            assert Counter(norm(r) for r in ours.collect()) == Counter(norm(r) for r in theirs.collect()), (name, mt)
            checked += 1
    assert checked == len(corpus) * len(METADATA_TABLES) - len(JAVA_CANNOT)


@pytest.mark.parametrize("mt", ["entries", "files", "manifests", "partitions", "position_deletes"])
def test_metadata_tables_of_an_older_snapshot(corpus, java, java_warehouse, mt):
    t = sparkberg.load_table(java, os.path.join(java_warehouse, "db", "v2_mor"))
    for snap in t.metadata.snapshots:
        theirs = java.read.option("snapshot-id", snap.snapshot_id).table(f"ref.db.v2_mor.{mt}")
        ours = t.metadata_table(mt, snapshot_id=snap.snapshot_id)
        assert Counter(norm(r) for r in ours.collect()) == Counter(norm(r) for r in theirs.collect()), snap


def test_rows_made_on_the_driver_reach_a_classic_spark_35_session_as_arrow(java):
    """On a classic Spark 3.5 session ``local_dataframe`` sends Arrow batches, never pickled rows: a local relation
    below ``LAZY_ROWS`` rows, from there batches split over the cores as a local relation is; the rows are those
    ``createDataFrame`` gives."""
    from sparkberg.spark.session import LAZY_ROWS, local_dataframe
    ddl = "i bigint, s string, m map<string,string>, st struct<a: int, b: string>"
    for n in (0, 5, LAZY_ROWS + 500):
        rows = [(i, f"s{i}", {"k": str(i)}, (i, "x") if i % 3 else None) for i in range(n)]
        ours = local_dataframe(java, rows, ddl)
        assert ours.collect() == java.createDataFrame(rows, ddl).collect()
        assert "PythonRDD" not in ours._jdf.queryExecution().toRdd().toDebugString()
        if n >= LAZY_ROWS:
            assert ours.rdd.getNumPartitions() == java.sparkContext.defaultParallelism
