"""Streams against Iceberg Java 1.10 on PySpark 3.5: sparkberg's sink (a ``foreachBatch`` function, which 3.5 runs)
killed at any moment commits each batch once, and Java reads the same rows; sparkberg's streaming read (PySpark 4:
a Python streaming data source, run in the main venv) delivers the rows Java's streaming read delivers, with the
same options; on 3.5 ``read_stream`` is a named error."""
import json
import os
import subprocess
import sys

import pytest

import sparkberg
from sparkberg.errors import NotSupportedError

pytestmark = pytest.mark.interop
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "spark"))
from test_streaming import check_exactly_once, parquet_files, run_killed  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
SPARK4_PYTHON = os.environ.get("SPARKBERG_SPARK4_PYTHON", os.path.join(ROOT, ".venv", "bin", "python"))
SPARK4_JVM_OPTS = os.environ.get("SPARKBERG_SPARK4_JVM_OPTS")  # (make interop's: make test's JVM options)


def test_a_sink_on_pyspark_35_killed_at_any_moment_commits_once_and_java_reads_it(java, tmp_path):
    warehouse = str(tmp_path / "wh")
    sink = sparkberg.catalog(java, warehouse).create_table("db.sink", "id bigint, p int", partition_by=["p"])
    parquet_files(str(tmp_path / "src"), 12)
    log = run_killed(["files", warehouse, str(tmp_path / "src"), str(tmp_path / "ckpt")])
    check_exactly_once(sink, list(range(240)), 12, str(tmp_path / "ckpt"), log)
    java_ids = sorted(r[0] for r in java.read.format("iceberg").load(f"{warehouse}/db/sink").select("id").collect())
    assert java_ids == list(range(240))


def test_read_stream_on_pyspark_35_is_a_named_error(java, tmp_path):
    t = sparkberg.catalog(java, str(tmp_path / "wh")).create_table("db.t", "id bigint")
    with pytest.raises(NotSupportedError, match="Spark 4.0 or later.*start_snapshot_id"):
        t.read_stream()


def java_stream(java, table, options, checkpoint):
    batches = []
    reader = java.readStream.format("iceberg")
    for k, v in options.items():
        reader = reader.option(k, str(v))
    q = reader.load(table).writeStream.trigger(availableNow=True).option("checkpointLocation", checkpoint) \
        .foreachBatch(lambda df, _: batches.append(sorted(tuple(r) for r in df.collect()))).start()
    q.awaitTermination()
    return [b for b in batches if b]


def our_stream(warehouse, table, options, checkpoint):
    assert os.path.exists(SPARK4_PYTHON), f"no PySpark 4 interpreter at {SPARK4_PYTHON} (make .venv/.installed)"
    out = subprocess.run([SPARK4_PYTHON, os.path.join(HERE, "spark4_stream.py"), warehouse, table, checkpoint,
                          json.dumps(options)], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYSPARK_PYTHON": SPARK4_PYTHON, "PYTHONPATH": os.path.join(ROOT, "lib"),
                              **({"SPARK_SUBMIT_OPTS": SPARK4_JVM_OPTS} if SPARK4_JVM_OPTS is not None else {})})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    line, = [x for x in out.stdout.splitlines() if x.startswith("BATCHES ")]
    return [[tuple(r) for r in b] for b in json.loads(line[len("BATCHES "):])]


def test_the_streaming_read_equals_javas(java, java_warehouse, tmp_path):
    t = "ref.strm.t"
    java.sql(f"DROP TABLE IF EXISTS {t}")
    java.sql(f"CREATE TABLE {t} (id bigint, cat string) USING iceberg PARTITIONED BY (cat) "
             "TBLPROPERTIES ('format-version' = '2')")
    for i in range(4):
        java.sql(f"INSERT INTO {t} SELECT id, IF(id % 2 = 0, 'even', 'odd') FROM range({i * 10}, {i * 10 + 10})")
    java.sql(f"DELETE FROM {t} WHERE cat = 'odd'")  # (whole files: a delete snapshot)
    java.sql(f"UPDATE {t} SET id = id + 1000 WHERE id = 2")  # (an overwrite snapshot)
    java.sql("CALL ref.system.rewrite_data_files(table => 'strm.t', options => map('rewrite-all', 'true'))")
    java.sql(f"INSERT INTO {t} VALUES (100, 'even'), (101, 'odd')")
    snaps = [r[0] for r in java.sql(f"SELECT committed_at, snapshot_id FROM {t}.snapshots ORDER BY committed_at")
             .select("snapshot_id").collect()]
    assert len(snaps) == 8
    from_ts = sparkberg.catalog(java, java_warehouse).load_table("strm.t").metadata.snapshot_by_id(snaps[2]) \
        .timestamp_ms
    for name, java_options, ours in [
            ("everything", {"streaming-skip-delete-snapshots": True, "streaming-skip-overwrite-snapshots": True},
             {"skip_delete_snapshots": True, "skip_overwrite_snapshots": True}),
            ("2 files a batch", {"streaming-skip-delete-snapshots": True, "streaming-skip-overwrite-snapshots": True,
                                 "streaming-max-files-per-micro-batch": 2},
             {"skip_delete_snapshots": True, "skip_overwrite_snapshots": True, "max_files_per_trigger": 2}),
            ("from a time", {"streaming-skip-delete-snapshots": True, "streaming-skip-overwrite-snapshots": True,
                             "stream-from-timestamp": from_ts},
             {"skip_delete_snapshots": True, "skip_overwrite_snapshots": True, "stream_from_timestamp_ms": from_ts})]:
        theirs = java_stream(java, t, java_options, str(tmp_path / f"java-{len(name)}"))
        mine = our_stream(java_warehouse, "strm.t", ours, str(tmp_path / f"ours-{len(name)}"))
        assert sorted(sum(mine, [])) == sorted(sum(theirs, [])), name
        if name == "2 files a batch":
            # (Spark documents that Trigger.AvailableNow keeps a source's limits; Java 1.10's source on Spark 3.5
            # delivers everything in one batch under it: its batches are not compared)
            assert [len(b) for b in mine] == [10, 10, 10, 10, 2] and len(theirs) == 1
    # a delete snapshot stops both
    with pytest.raises(Exception, match="Cannot process delete snapshot"):
        java_stream(java, t, {}, str(tmp_path / "java-stop"))
    with pytest.raises(AssertionError, match="cannot read delete snapshot"):
        our_stream(java_warehouse, "strm.t", {}, str(tmp_path / "ours-stop"))
