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


ENTRY_TABLES = ("entries", "all_entries", "files", "data_files", "delete_files", "all_files", "all_data_files",
                 "all_delete_files")


def test_counts_from_the_manifest_lists_equal_javas(corpus, java, java_warehouse, monkeypatch):
    """A table of entries or files decoded by a Python stage is counted by its manifest lists' counts (no Spark
    job): on every corpus table, each count is Java's count of its metadata table."""
    import sparkberg.inspect as inspect_
    monkeypatch.setattr(inspect_, "DRIVER_ENTRIES", -1)
    for name in corpus:
        t = sparkberg.load_table(java, os.path.join(java_warehouse, "db", name))
        for mt in ENTRY_TABLES:
            ours = inspect_.known_count(t.metadata_table(mt, columns=[]))
            assert ours == java.table(f"ref.db.{name}.{mt}").count(), (name, mt)


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
    from sparkberg.spark.frames import local_dataframe
    from sparkberg.spark.jvm import LAZY_ROWS
    ddl = "i bigint, s string, m map<string,string>, st struct<a: int, b: string>"
    for n in (0, 5, LAZY_ROWS + 500):
        rows = [(i, f"s{i}", {"k": str(i)}, (i, "x") if i % 3 else None) for i in range(n)]
        ours = local_dataframe(java, rows, ddl)
        assert ours.collect() == java.createDataFrame(rows, ddl).collect()
        assert "PythonRDD" not in ours._jdf.queryExecution().toRdd().toDebugString()
        if n >= LAZY_ROWS:
            assert ours.rdd.getNumPartitions() == java.sparkContext.defaultParallelism


@pytest.mark.parametrize("version", [1, 2])
def test_partitions_after_partition_evolution_group_as_javas(java, java_warehouse, version):
    # Java 1.10 keys its rows by the file's tuple in the table's unified partition type and by how many of that
    # type's fields the file's spec has: files of v2 specs (bucket, day) and (bucket, hour) with the same tuple are
    # one row, with the spec and snapshot of the newest; in v1 the dropped field stays as a void one, so they are not
    name = f"ref.db.parts_evolved_v{version}"
    props = f"'format-version'='{version}'" + (", 'write.delete.mode'='merge-on-read'" if version == 2 else "")
    java.sql(f"CREATE TABLE {name} (id bigint, ts timestamp, cat string) USING iceberg TBLPROPERTIES ({props})")
    steps = ["INSERT INTO {n} VALUES (1, NULL, 'a'), (5, NULL, 'a')",
             "ALTER TABLE {n} ADD PARTITION FIELD day(ts)", "ALTER TABLE {n} ADD PARTITION FIELD bucket(4, id)",
             "INSERT INTO {n} VALUES (1, NULL, 'b'), (1, NULL, 'b2')",
             "ALTER TABLE {n} DROP PARTITION FIELD day(ts)", "ALTER TABLE {n} ADD PARTITION FIELD hour(ts)",
             "INSERT INTO {n} VALUES (1, NULL, 'c'), (1, TIMESTAMP '2024-01-01 10:00:00', 'c')",
             "ALTER TABLE {n} DROP PARTITION FIELD bucket(4, id)", "ALTER TABLE {n} DROP PARTITION FIELD hour(ts)",
             "INSERT INTO {n} VALUES (3, NULL, 'd')"]
    steps += ["DELETE FROM {n} WHERE cat = 'b2'"] if version == 2 else []
    for step in steps:
        java.sql(step.format(n=name))
    t = sparkberg.catalog(java, java_warehouse).load_table(name.split(".", 1)[1])
    assert len(t.metadata.partition_specs) >= 4
    ours, theirs = t.metadata_table("partitions"), java.table(f"{name}.partitions")
    assert ours.schema.simpleString() == theirs.schema.simpleString()
    expected = Counter(norm(r) for r in theirs.collect())
    assert Counter(norm(r) for r in ours.collect()) == expected
    bucket_of_1 = [r["partition"]["id_bucket_4"] for r in theirs.collect() if r["partition"]["ts_hour"] is not None]
    shared = [r for r in theirs.collect() if r["partition"].asDict() == {"ts_day": None, "id_bucket_4": bucket_of_1[0],
                                                                        "ts_hour": None}]
    assert len(shared) == (1 if version == 2 else 2)  # (the files of the spec with day and with hour)
    from sparkberg.jobs import metadata_view
    local = [(r["partition"], r["spec_id"], r["record_count"], r["file_count"], r["last_updated_snapshot_id"])
             for r in metadata_view.partitions(t)]
    assert len(local) == len(expected)
    assert sorted(map(str, local)) == sorted(str((r["partition"].asDict(), r["spec_id"], r["record_count"],
                                                   r["file_count"], r["last_updated_snapshot_id"]))
                                              for r in theirs.collect())


def test_partitions_of_signed_zeros_and_nans_are_javas(java, java_warehouse):
    # Iceberg Java keeps -0.0 and 0.0 apart (Double.compare), as their files, and every NaN together; Spark's own
    # grouping would merge the zeros (it normalizes floating-point keys). A zero's sign shows only in its text.
    name = "ref.db.parts_signed_zeros"
    java.sql(f"CREATE TABLE {name} (id bigint, p double, f float) USING iceberg PARTITIONED BY (p, f)")
    for values in ("(1, -0.0D, 0.0F)", "(2, 0.0D, 0.0F)", "(3, 0.0D, -0.0F)", "(4, CAST('NaN' AS double), 1.0F)",
                   "(5, CAST('NaN' AS double), 1.0F), (6, -0.0D, 0.0F)"):
        java.sql(f"INSERT INTO {name} VALUES {values}")
    t = sparkberg.catalog(java, java_warehouse).load_table(name.split(".", 1)[1])

    def shown(rows):
        return sorted((str(r["partition"]["p"]), str(r["partition"]["f"]), r["record_count"], r["file_count"],
                       r["last_updated_snapshot_id"]) for r in rows)
    theirs = shown(java.table(f"{name}.partitions").collect())
    assert [r[:4] for r in theirs] == [("-0.0", "0.0", 2, 2), ("0.0", "-0.0", 1, 1), ("0.0", "0.0", 1, 1),
                                       ("nan", "1.0", 2, 2)]
    assert shown(t.metadata_table("partitions").collect()) == theirs
    from sparkberg.jobs import metadata_view
    assert shown(metadata_view.partitions(t)) == theirs
