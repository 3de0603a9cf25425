"""Structured Streaming into and out of tables: the sink (``Table.write_stream``) commits each micro-batch once,
also across SIGKILLs at any moment and restarts from the checkpoint; the source (``Table.read_stream``) delivers
each appended row once, with Iceberg Java's offsets, limits and rules for other snapshots; bad input is a named
error and writes nothing."""
import os
import random
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sparkberg
from sparkberg.operations.request import APP_ID, VERSION
from sparkberg.errors import NotSupportedError, ValidationError
from sparkberg.sql.streaming import EPOCH_ID, QUERY_ID
from sparkberg.spark.session import spark_version

HERE = os.path.dirname(os.path.abspath(__file__))
# (a stream's read limits reach a Python stream source from Spark 4.2 on; before, they are a named error)
needs_limits = pytest.mark.skipif(spark_version(None) < (4, 2), reason="read limits need PySpark 4.2")


def parquet_files(directory, count, rows=20):
    os.makedirs(directory, exist_ok=True)
    for i in range(count):
        ids = pa.array(range(i * rows, (i + 1) * rows), pa.int64())
        pq.write_table(pa.table({"id": ids, "p": pa.array([j % 3 for j in range(rows)], pa.int32())}),
                       os.path.join(directory, f"part-{i:03d}.parquet"))
        os.utime(os.path.join(directory, f"part-{i:03d}.parquet"), (1_000_000 + i, 1_000_000 + i))


def ids(t):
    return sorted(r[0] for r in t.to_df().select("id").collect())


@pytest.fixture
def cat(spark, warehouse):
    return sparkberg.catalog(spark, warehouse)


@pytest.fixture
def sink(cat):
    return cat.create_table("db.sink", "id bigint, p int", partition_by=["p"])


def files_stream(spark, directory, per_batch=1):
    return spark.readStream.schema("id bigint, p int").option("maxFilesPerTrigger", per_batch).parquet(directory)


def run(query):
    query.awaitTermination()
    assert query.exception() is None


def test_each_micro_batch_is_one_commit_with_the_query_and_batch(spark, sink, tmp_path):
    parquet_files(str(tmp_path / "src"), 4)
    q = sink.write_stream(files_stream(spark, str(tmp_path / "src")), str(tmp_path / "ckpt"),
                          trigger={"availableNow": True}, query_name="load", snapshot_properties={"job": "nightly"})
    run(q)
    sink.refresh()
    assert ids(sink) == list(range(80))
    assert spark.conf.get("spark.sql.iceberg.distribution-mode", None) is None  # (the user's session untouched)
    files = sink.metadata_table("files").select("partition").collect()
    assert len(files) == 4 * 3  # (a micro-batch's task writes a file for each partition it meets)
    snaps = list(reversed(list(sink.metadata.ancestors(sink.metadata.current_snapshot_id))))
    assert len(snaps) == len(sink.snapshots()) == 4
    assert [s.summary[EPOCH_ID] for s in snaps] == ["0", "1", "2", "3"]
    assert {s.summary[QUERY_ID] for s in snaps} == {s.summary[APP_ID] for s in snaps} == {str(q.id)}
    assert [s.summary[VERSION] for s in snaps] == ["0", "1", "2", "3"]
    assert all(s.summary["job"] == "nightly" and s.operation == "append" for s in snaps)
    # the query restarted from its checkpoint has nothing left to do; new files are read once
    parquet_files(str(tmp_path / "src2"), 1)
    os.rename(str(tmp_path / "src2" / "part-000.parquet"), str(tmp_path / "src" / "part-new.parquet"))
    pq.write_table(pa.table({"id": pa.array([1000], pa.int64()), "p": pa.array([1], pa.int32())}),
                   str(tmp_path / "src" / "part-new.parquet"))
    run(sink.write_stream(files_stream(spark, str(tmp_path / "src")), str(tmp_path / "ckpt"),
                          trigger={"availableNow": True}))
    assert ids(sink.refresh()) == list(range(80)) + [1000]
    assert len(sink.snapshots()) == 5


def test_complete_mode_replaces_the_rows_each_batch(spark, cat, tmp_path):
    counts = cat.create_table("db.counts", "p int, n bigint")
    parquet_files(str(tmp_path / "src"), 3)
    agg = files_stream(spark, str(tmp_path / "src")).groupBy("p").count().withColumnRenamed("count", "n")
    run(counts.write_stream(agg, str(tmp_path / "ckpt"), output_mode="complete", trigger={"availableNow": True}))
    counts.refresh()
    assert sorted(tuple(r) for r in counts.to_df().collect()) == [(0, 21), (1, 21), (2, 18)]
    assert len(counts.snapshots()) == 3  # (one replacement a batch)


def test_a_stream_into_a_branch(spark, sink, tmp_path):
    sink.append(spark.sql("SELECT -1L AS id, 0 AS p"))
    sink.create_branch("staging")
    parquet_files(str(tmp_path / "src"), 2)
    run(sink.write_stream(files_stream(spark, str(tmp_path / "src")), str(tmp_path / "ckpt"), branch="staging",
                          trigger={"availableNow": True}))
    sink.refresh()
    assert ids(sink) == [-1]
    assert sorted(r[0] for r in sink.to_df(ref="staging").collect()) == [-1] + list(range(40))


def test_bad_input_is_a_named_error_and_writes_nothing(spark, cat, sink, tmp_path):
    parquet_files(str(tmp_path / "src"), 1)
    stream = files_stream(spark, str(tmp_path / "src"))
    ckpt = str(tmp_path / "ckpt")
    for kwargs, error, message in [
            ({"df": spark.range(3)}, ValidationError, "needs a streaming DataFrame"),
            ({"output_mode": "update"}, ValidationError, "output_mode must be one of append, complete"),
            ({"trigger": {"continuous": "1 second"}}, NotSupportedError, "continuous trigger"),
            ({"trigger": {"processingTime": "1 second", "once": True}}, ValidationError, "one of"),
            ({"trigger": {"every": "1 second"}}, ValidationError, "one of"),
            ({"branch": "nope"}, ValidationError, "branch 'nope': it does not exist"),
            ({"snapshot_properties": {"operation": "x"}}, ValidationError, "summary field")]:
        args = {"df": stream, "checkpoint_location": ckpt, **kwargs}
        with pytest.raises(error, match=message):
            sink.write_stream(args.pop("df"), args.pop("checkpoint_location"), **args)
    assert not os.path.exists(ckpt) and sink.refresh().current_snapshot() is None
    # a checkpoint is one table's
    run(sink.write_stream(stream, ckpt, trigger={"availableNow": True}))
    other = cat.create_table("db.other", "id bigint, p int")
    with pytest.raises(ValidationError, match="checkpoint of a stream into table db.sink"):
        other.write_stream(stream, ckpt)
    assert other.refresh().current_snapshot() is None
    # a checkpoint another kind of query wrote
    q = stream.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "noop")) \
        .trigger(availableNow=True).start()
    run(q)
    with pytest.raises(ValidationError, match="written by another query"):
        other.write_stream(stream, str(tmp_path / "noop"))
    with pytest.raises(sparkberg.SparkbergError, match="read-only"):
        sparkberg.load_table(spark, sink.location).write_stream(stream, str(tmp_path / "c3"))


# how each run of the writer ends: killed by itself after its 2nd commit, before its 1st, by the test after a random
# time, by itself at random around its commits; then it runs to the end
ROUNDS = ["after:2", "before:1", "outside", "random:0.15", "", "", ""]


def run_killed(args, rounds=ROUNDS):
    """Run the writer as ``rounds`` says until it prints DONE; returns what each run did."""
    log = []
    for r, how in enumerate(rounds):
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "STREAM_DIE": "" if how == "outside" else how}
        proc = subprocess.Popen([sys.executable, os.path.join(HERE, "stream_writer.py"), *args], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        if how == "outside":
            time.sleep(random.uniform(6, 14))
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        out = proc.communicate(timeout=600)[0]
        log.append(f"round {r} ({how or 'to the end'}): rc {proc.returncode}; " + " | ".join(
            line for line in out.splitlines() if line.startswith(("dying", "DONE", "Traceback"))))
        if "DONE" in out:
            assert "dying after" in log[0] and "dying before" in log[1], log
            return log
        assert proc.returncode != 0, out[-3000:]
    raise AssertionError("the writer never finished:\n" + "\n".join(log))


def check_exactly_once(sink, expected_ids, files, checkpoint, log):
    sink.refresh()
    assert ids(sink) == expected_ids, log
    snaps = sink.snapshots()
    chain = list(sink.metadata.ancestors(sink.metadata.current_snapshot_id))
    # one batch a source file, but for one Spark may plan with the next after a kill at a random moment (its
    # source log written, its offset log not yet: Spark's file source then hands both files to one batch)
    batches = len([name for name in os.listdir(os.path.join(checkpoint, "commits")) if name.isdigit()])
    random_kills = sum("(outside)" in line or "(random:" in line for line in log)
    assert files - random_kills <= batches <= files, log
    assert len(chain) == len(snaps) == batches, log  # one linear history, one snapshot a batch
    assert sorted(int(s.summary[VERSION]) for s in snaps) == list(range(batches)), log
    assert len({s.summary[APP_ID] for s in snaps}) == 1, log  # (one query, across every restart)


def test_a_sink_killed_at_any_moment_commits_every_batch_once(spark, cat, sink, warehouse, tmp_path):
    random.seed(os.getpid())
    parquet_files(str(tmp_path / "src"), 12)
    log = run_killed(["files", warehouse, str(tmp_path / "src"), str(tmp_path / "ckpt")])
    check_exactly_once(sink, list(range(240)), 12, str(tmp_path / "ckpt"), log)
    print("\n".join(log))


@needs_limits
def test_a_pipeline_from_a_table_stream_killed_at_any_moment_delivers_every_row_once(spark, cat, sink, warehouse,
                                                                                      tmp_path):
    random.seed(os.getpid() + 1)
    source = cat.create_table("db.source", "id bigint, p int")
    for i in range(12):
        source.append(spark.sql(f"SELECT id, CAST(id % 3 AS INT) AS p FROM range({i * 10}, {i * 10 + 10})")
                      .coalesce(1))
    # (the writer kills itself here; the sink's test has the kill from outside at a random time)
    log = run_killed(["table", warehouse, "db.source", str(tmp_path / "ckpt")],
                     ["after:2", "before:1", "random:0.15", "", "", ""])
    check_exactly_once(sink, list(range(120)), 12, str(tmp_path / "ckpt"), log)
    print("\n".join(log))


def batches_of(sdf, checkpoint):
    """The micro-batches of a stream read to its end (Trigger.AvailableNow): [sorted ids of each batch]."""
    got = []
    q = sdf.writeStream.foreachBatch(lambda df, batch_id: got.append(sorted(r[0] for r in df.select("id").collect()))) \
        .option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    q.awaitTermination()
    return got


@pytest.fixture
def source(spark, cat):
    t = cat.create_table("db.source", "id bigint, p int", partition_by=["p"],
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    for i in range(4):  # (4 snapshots of 2 files each: partitions 0 and 1)
        t.append(spark.sql(f"SELECT id, CAST(id % 2 AS INT) AS p FROM range({i * 10}, {i * 10 + 10})"))
    return t


def test_a_stream_reads_every_appended_row_once_and_then_what_comes(spark, source, tmp_path):
    ckpt = str(tmp_path / "ckpt")
    assert [b for b in batches_of(source.read_stream(), ckpt)] == [list(range(40))]
    source.append(spark.sql("SELECT 100L AS id, 0 AS p"))
    source.rewrite_data_files(options={"rewrite-all": "true"})  # (a replace snapshot: no rows for the stream)
    source.append(spark.sql("SELECT 101L AS id, 1 AS p"))
    assert batches_of(source.read_stream(), ckpt) == [[100, 101]]
    assert batches_of(source.read_stream(), ckpt) == []


@needs_limits
def test_limits_bound_each_micro_batch(source, tmp_path):
    by_files = batches_of(source.read_stream(max_files_per_trigger=3), str(tmp_path / "a"))
    assert [len(b) for b in by_files] == [15, 15, 10] and sorted(sum(by_files, [])) == list(range(40))
    by_rows = batches_of(source.read_stream(max_rows_per_trigger=12), str(tmp_path / "b"))
    # (a batch ends after the file that reaches the bound, as Java's does: 5-row files, 3 a batch)
    assert [len(b) for b in by_rows] == [15, 15, 10] and sorted(sum(by_rows, [])) == list(range(40))


def test_where_a_stream_begins(spark, source, tmp_path):
    snaps = [s.snapshot_id for s in source.snapshots()]
    after_second = batches_of(source.read_stream(start_snapshot_id=snaps[1]), str(tmp_path / "a"))
    assert sorted(sum(after_second, [])) == list(range(20, 40))
    since = source.metadata.snapshot_by_id(snaps[3]).timestamp_ms
    assert sorted(sum(batches_of(source.read_stream(stream_from_timestamp_ms=since), str(tmp_path / "b")), [])) \
        == list(range(30, 40))
    later = batches_of(source.read_stream(stream_from_timestamp_ms=since + 10**9), str(tmp_path / "c"))
    assert sum(later, []) == []


def test_delete_and_overwrite_snapshots_stop_the_stream_unless_skipped(spark, source, tmp_path):
    source.delete("id = 3")
    with pytest.raises(Exception, match="cannot read delete snapshot .*skip_delete_snapshots=True"):
        batches_of(source.read_stream(), str(tmp_path / "a"))
    got = batches_of(source.read_stream(skip_delete_snapshots=True), str(tmp_path / "b"))
    assert sorted(sum(got, [])) == list(range(40))  # (rows as appended: a later delete is not applied)
    source.overwrite(spark.sql("SELECT 50L AS id, 0 AS p"), "id = 4")
    with pytest.raises(Exception, match="cannot read overwrite snapshot .*skip_overwrite_snapshots=True"):
        batches_of(source.read_stream(skip_delete_snapshots=True), str(tmp_path / "b"))
    source.append(spark.sql("SELECT 60L AS id, 0 AS p"))
    got = batches_of(source.read_stream(skip_delete_snapshots=True, skip_overwrite_snapshots=True),
                     str(tmp_path / "b"))
    assert got == [[60]]


def test_a_stream_whose_offset_was_expired_is_a_named_error(spark, source, tmp_path):
    ckpt = str(tmp_path / "ckpt")
    batches_of(source.read_stream(), ckpt)
    source.append(spark.sql("SELECT 70L AS id, 0 AS p"))
    source.expire_snapshots(snapshot_ids=[source.snapshots()[3].snapshot_id])
    with pytest.raises(Exception, match="no longer an ancestor"):
        batches_of(source.read_stream(), ckpt)


def test_bad_stream_options_are_named_errors(source):
    for kwargs, message in [({"max_files_per_trigger": 0}, "positive integer"),
                            ({"max_rows_per_trigger": "10"}, "positive integer"),
                            ({"start_snapshot_id": 1, "stream_from_timestamp_ms": 1}, "not both"),
                            ({"start_snapshot_id": 12345}, "no such snapshot")]:
        with pytest.raises(ValidationError, match=message):
            source.read_stream(**kwargs)


def test_read_limits_before_spark_4_2_are_a_named_error(source, monkeypatch):
    """Spark before 4.2 hands a Python stream source no read limit: each micro-batch would read everything
    available, so a bound the stream could not keep is refused instead of ignored."""
    import sparkberg.sql.stream_source as stream_source
    monkeypatch.setattr(stream_source, "spark_version", lambda spark: (4, 1))
    with pytest.raises(NotSupportedError, match=r"^max_files_per_trigger needs PySpark and Spark 4.2 or later"):
        source.read_stream(max_files_per_trigger=3)
    with pytest.raises(NotSupportedError, match=r"^max_files_per_trigger and max_rows_per_trigger need PySpark"):
        source.read_stream(max_files_per_trigger=3, max_rows_per_trigger=10)
    with pytest.raises(ValidationError, match="positive integer"):  # (bad values are named first)
        source.read_stream(max_files_per_trigger=0)
    assert source.read_stream().isStreaming  # (no bound: every version)


def change_batches(sdf, checkpoint):
    got = []
    q = sdf.writeStream.foreachBatch(lambda df, batch_id: got.append([tuple(r) for r in df.collect()])) \
        .option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    q.awaitTermination()
    assert q.exception() is None
    return [b for b in got if b]


@needs_limits
@pytest.mark.parametrize("version,mode", [(2, "merge-on-read"), (3, "merge-on-read"), (2, "copy-on-write")])
def test_a_changelog_stream_delivers_the_changes_of_every_snapshot_once(spark, cat, tmp_path, version, mode):
    t = cat.create_table("db.chg", "id bigint, p int, v string", partition_by=["p"], properties={
        "format-version": str(version), "write.delete.mode": mode, "write.update.mode": mode,
        "write.merge.mode": mode})
    t.append(spark.sql("SELECT id, CAST(id % 3 AS INT) AS p, 'a' AS v FROM range(0, 30)"))
    ckpt = str(tmp_path / "ckpt")
    first = change_batches(t.read_stream(changes=True), ckpt)
    t.delete("id IN (1, 2, 13)")
    t.update({"v": "'u'"}, "id IN (4, 5)")
    t.merge(spark.sql("SELECT 6L AS id, 0 AS p, 'm' AS v UNION ALL SELECT 100L, 1, 'n'"), "t.id = s.id") \
        .when_matched_update_all().when_not_matched_insert_all().execute()
    t.rewrite_data_files(options={"rewrite-all": "true"})  # (a replace snapshot: no changes)
    t.upsert(spark.sql("SELECT 7L AS id, 1 AS p, 'e' AS v"), "id")  # (equality deletes)
    later = change_batches(t.read_stream(changes=True, max_files_per_trigger=1), ckpt)
    assert len(later) >= 4  # (a snapshot a batch: each changed more than one file)
    streamed = sorted(r[:3] + (r[3], r[5]) for b in first + later for r in b)
    whole = sorted(r[:3] + (r[3], r[5]) for r in t.changes().collect())
    assert streamed == whole
    assert {r[3] for r in whole} == {"INSERT", "DELETE"}
    for b in later:  # (a batch is the changelog of its range: ordinals count its snapshots)
        ordinals = {}
        for r in b:
            ordinals.setdefault(r[5], r[4])
        order = sorted(ordinals, key=lambda sid: t.metadata.snapshot_by_id(sid).sequence_number or 0)
        assert [ordinals[sid] for sid in order] == list(range(len(order)))
