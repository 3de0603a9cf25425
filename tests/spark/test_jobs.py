"""The jobs and the CLI: ingest through spark-submit, the console scripts, the health views of sql/ (each
one run), exit codes a scheduler can use."""
import json
import os
import subprocess
import sys

import pytest

import sparkberg
from sparkberg.jobs import cli, health, ingest, stream
from sparkberg.jobs.common import INVALID, NOT_FOUND, OK
from sparkberg.spark.session import spark_version

pytestmark = pytest.mark.spark
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
JVM_INCUBATOR_WARNING = "WARNING: Using incubator modules: jdk.incubator.vector"


def env():
    return {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


@pytest.fixture
def events(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.events", "id bigint, ts timestamp, category string", partition_by=["day(ts)"],
                         properties={"format-version": "3", "write.delete.mode": "merge-on-read"})
    for day in range(3):
        t.append(spark.sql(f"SELECT id, TIMESTAMP'2024-01-0{day + 1} 10:00:00' AS ts, "
                           f"element_at(array('a', 'b'), CAST(id % 2 + 1 AS int)) AS category FROM range(0, 10)"))
    t.delete("id = 3")
    return t


def test_ingest_through_spark_submit_creates_and_appends(tmp_path, warehouse):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.csv").write_text("id,name,day\n1,x,2024-01-01\n2,y,2024-01-02\n")
    out = subprocess.run([os.path.join(BIN, "spark-submit"), "--properties-file",
                          os.path.join(ROOT, "spark-defaults.conf"), os.path.join(ROOT, "jobs", "ingest.py"),
                          "--warehouse", warehouse, "--table", "raw.people", "--format", "csv", "--header",
                          "--create", "--partition-by", "day", "--property", "format-version=3", str(src / "a.csv")],
                         capture_output=True, text=True, env=env(), timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads(out.stdout[out.stdout.index("{"):])
    assert summary["operation"] == "append" and summary["summary"]["added-records"] == "2"
    (src / "b.json").write_text('{"id": 3, "name": "z", "day": "2024-01-03"}\n')
    out = subprocess.run([sys.executable, "-m", "sparkberg.jobs.ingest", "--warehouse", warehouse, "--table",
                          "raw.people", "--format", "json", "--schema", "id int, name string, day date",
                          "--master", "local[1]", str(src / "b.json")],
                         capture_output=True, text=True, env=env(), timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    # the console script reads it back, as of the first snapshot too
    out = subprocess.run([os.path.join(BIN, "sparkberg"), "--warehouse", warehouse, "--master", "local[1]",
                          "--output", "json", "count", "raw.people"],
                         capture_output=True, text=True, env=env(), timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"table": "raw.people", "count": 3}
    # the health job through spark-submit too
    report = tmp_path / "health.json"
    out = subprocess.run([os.path.join(BIN, "spark-submit"), "--properties-file",
                          os.path.join(ROOT, "spark-defaults.conf"), os.path.join(ROOT, "jobs", "health.py"),
                          "--warehouse", warehouse, "--table", "raw.people", "--output-json", str(report)],
                         capture_output=True, text=True, env=env(), timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    growth = json.loads(report.read_text())["raw.people"]["snapshot_growth"]
    assert [r["total_records"] for r in growth] == [2, 3]


def test_ingest_errors_have_exit_codes(spark, warehouse, tmp_path, events):
    missing = ingest.main(["--warehouse", warehouse, "--table", "db.nope", str(tmp_path / "none")])
    assert missing == NOT_FOUND
    bad = tmp_path / "bad.json"
    bad.write_text('{"id": "not a number", "ts": "x", "category": 1}\n')
    before = len(events.metadata.snapshots)
    code = ingest.main(["--warehouse", warehouse, "--table", "db.events", "--format", "json", str(bad)])
    assert code == INVALID
    assert len(sparkberg.catalog(spark, warehouse).load_table("db.events").metadata.snapshots) == before
    with pytest.raises(SystemExit) as e:
        ingest.main(["--table", "db.events", "--filter", "id = 1", str(bad)])
    assert e.value.code == 2


def test_ingest_run_again_with_its_key_writes_nothing(spark, warehouse, tmp_path, events, capsys):
    src = tmp_path / "day.json"
    src.write_text('{"id": 100, "ts": "2024-01-04T10:00:00", "category": "a"}\n')
    args = ["--warehouse", warehouse, "--table", "db.events", "--format", "json", "--schema",
            "id bigint, ts timestamp, category string", "--idempotency", "nightly:20240104", str(src)]
    assert ingest.main(args) == OK
    first = json.loads(capsys.readouterr().out)
    assert first["skipped"] is False and first["summary"]["sparkberg.idempotency.version"] == "20240104"
    assert ingest.main(args) == OK  # (the scheduler's retry)
    again = json.loads(capsys.readouterr().out)
    assert again["skipped"] is True and again["snapshot_id"] == first["snapshot_id"]
    t = sparkberg.catalog(spark, warehouse).load_table("db.events")
    assert t.to_df().where("id = 100").count() == 1
    with pytest.raises(SystemExit):
        ingest.main(args[:-2] + ["nightly", str(src)])


@pytest.mark.skipif(spark_version(None) < (4, 2), reason="a table stream's read limits need PySpark 4.2")
def test_the_stream_job_copies_new_files_and_a_tables_appends_once(spark, warehouse, tmp_path, capsys):
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "a.json").write_text('{"id": 1, "v": "x"}\n{"id": 2, "v": "y"}\n')
    cat = sparkberg.catalog(spark, warehouse)
    cat.create_table("raw.copy", "id bigint, v string")
    ckpt = str(tmp_path / "ckpt")
    # the console script, scheduled: everything there, then exit
    out = subprocess.run([os.path.join(BIN, "sparkberg-stream"), "--warehouse", warehouse, "--master", "local[1]",
                          "--table", "raw.copy", "--checkpoint", ckpt, "--format", "json", str(landing)],
                         capture_output=True, text=True, env=env(), timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout[out.stdout.index("{"):])
    assert report["micro_batches"] == 1 and report["rows"] == 2
    (landing / "b.json").write_text('{"id": 3, "v": "z"}\n')
    common = ["--warehouse", warehouse, "--table", "raw.copy", "--checkpoint", ckpt]
    assert stream.main(common + ["--format", "json", "--schema", "id bigint, v string", str(landing)]) == OK
    assert json.loads(capsys.readouterr().out)["rows"] == 1
    assert sorted(r[0] for r in cat.load_table("raw.copy").to_df().collect()) == [1, 2, 3]
    # a table's appends into another, a file a micro-batch
    cat.create_table("raw.mirror", "id bigint, v string")
    mirror = ["--warehouse", warehouse, "--table", "raw.mirror", "--checkpoint", str(tmp_path / "ckpt2"),
              "--source-table", "raw.copy", "--max-files-per-trigger", "1"]
    assert stream.main(mirror) == OK
    assert json.loads(capsys.readouterr().out)["micro_batches"] == 2
    assert sorted(r[0] for r in cat.load_table("raw.mirror").to_df().collect()) == [1, 2, 3]
    # the checkpoint of another table's stream
    assert stream.main(["--warehouse", warehouse, "--table", "raw.mirror", "--checkpoint", ckpt, "--format", "json",
                        str(landing)]) == INVALID
    with pytest.raises(SystemExit):
        stream.main(common + ["--trigger", "sometimes", str(landing)])
    with pytest.raises(SystemExit):
        stream.main(common + ["--source-table", "raw.copy", "--schema", "id bigint"])


def test_cli_lists_describes_and_counts(spark, warehouse, events, capsys):
    assert cli.main(["--warehouse", warehouse, "list"]) == OK
    assert capsys.readouterr().out.split() == ["db"]
    assert cli.main(["--warehouse", warehouse, "--output", "json", "list", "db"]) == OK
    assert json.loads(capsys.readouterr().out) == ["db.events"]
    assert cli.main(["--warehouse", warehouse, "--output", "json", "describe", "db.events"]) == OK
    d = json.loads(capsys.readouterr().out)
    assert d["format_version"] == 3 and [f["name"] for f in d["schema"]] == ["id", "ts", "category"]
    assert d["current_snapshot"]["operation"] == "delete"
    first = events.metadata.snapshots[0].snapshot_id
    assert cli.main(["--warehouse", warehouse, "count", "db.events", "--snapshot-id", str(first)]) == OK
    assert capsys.readouterr().out.strip() == "10"
    assert cli.main(["--warehouse", warehouse, "count", "db.events", "--filter", "category = 'a'"]) == OK
    assert capsys.readouterr().out.strip() == "15"
    for command in ("snapshots", "files", "partitions", "history", "refs", "manifests"):
        assert cli.main(["--warehouse", warehouse, "--output", "json", command, "db.events"]) == OK, command
        assert json.loads(capsys.readouterr().out), command
    assert cli.main(["--warehouse", warehouse, "describe", "db.missing"]) == NOT_FOUND


def test_every_health_view_runs(spark, events):
    views = health.health_views(events, small_file_bytes=10 ** 9)
    assert set(views) == set(health.HEALTH_VIEWS)
    small = views["small_files"].collect()
    assert len(small) == 3 and all(r["small_file_ratio"] == 1.0 for r in small)
    deletes = {r["partition"]["ts_day"].day: r for r in views["deletes"].collect()}
    assert [deletes[d]["position_deleted_rows"] for d in (1, 2, 3)] == [1, 1, 1]
    assert all(deletes[d]["deleted_row_ratio"] == 0.1 for d in (1, 2, 3))
    manifests = views["manifests"].collect()
    assert [r["operation"] for r in manifests] == ["append", "append", "append", "delete"]
    assert all(r["manifests"] >= 1 and r["total_manifest_bytes"] > 0 for r in manifests)
    growth = views["snapshot_growth"].collect()
    assert [r["total_records"] for r in growth] == [10, 20, 30, 30]
    assert [r["records_change"] for r in growth] == [10, 10, 10, 0]
    lineage = views["row_lineage"].first()
    assert lineage["row_id_coverage"] == 1.0 and lineage["max_row_id_exclusive"] == 30


def test_health_job_writes_json_and_tables(spark, warehouse, events, tmp_path):
    path = tmp_path / "health.json"
    assert health.main(["--warehouse", warehouse, "--table", "db.events", "--output-json", str(path),
                        "--output-table", "ops.health"]) == OK
    report = json.loads(path.read_text())
    assert set(report["db.events"]) == set(health.HEALTH_VIEWS)
    cat = sparkberg.catalog(spark, warehouse)
    assert cat.load_table("ops.health_deletes").to_df().count() == 3


def test_metadata_commands_start_no_jvm_and_fit_a_terminal(warehouse, events):
    # as a user runs it: the console script in a fresh process; no java process may be started
    cli_bin = os.path.join(BIN, "sparkberg")
    shim = os.path.join(os.path.dirname(warehouse), "no-java")
    os.makedirs(shim, exist_ok=True)
    with open(os.path.join(shim, "java"), "w") as f:
        f.write("#!/bin/sh\necho 'a JVM was started' >&2\nexit 97\n")
    os.chmod(os.path.join(shim, "java"), 0o755)
    no_java = {**env(), "PATH": f"{shim}:{os.environ['PATH']}", "JAVA_HOME": shim}
    from sparkberg.format import types as T
    sparkberg.catalog(None, warehouse).create_table("db.empty", T.Schema((T.NestedField(1, "id", T.LONG),)))
    for command in (["list"], ["list", "db"], ["describe", "db.events"], ["snapshots", "db.events"],
                    ["history", "db.events"], ["refs", "db.events"], ["manifests", "db.events"],
                    ["files", "db.events"], ["partitions", "db.events"], ["files", "db.empty"],
                    ["partitions", "db.empty"], ["describe", "db.empty"]):
        out = subprocess.run([cli_bin, "--warehouse", warehouse, *command], capture_output=True, text=True,
                             env={**no_java, "COLUMNS": "100"}, timeout=60)
        assert out.returncode == 0, (command, out.stderr[-2000:])
        assert out.stderr == "", (command, out.stderr[-2000:])  # no Spark banner, no log lines
        assert all(len(line) <= 100 for line in out.stdout.splitlines()), (command, out.stdout)
    text = subprocess.run([cli_bin, "--warehouse", warehouse, "snapshots", "db.events"], capture_output=True,
                          text=True, env={**no_java, "COLUMNS": "100"}, timeout=60).stdout
    assert text.splitlines()[0].split()[:2] == ["committed", "at"] and "delete" in text
    assert "/metadata/snap-" not in text  # no manifest-list paths in the human table
    files = subprocess.run([cli_bin, "--warehouse", warehouse, "files", "db.events"], capture_output=True,
                           text=True, env={**no_java, "COLUMNS": "100"}, timeout=60).stdout
    assert "ts_day=2024-01-01" in files and "KiB" in files


def test_cli_json_is_complete_and_local_views_equal_the_metadata_tables(spark, warehouse, events, capsys):
    from sparkberg.jobs import metadata_view
    from sparkberg.jobs.health import _jsonable
    t = sparkberg.catalog(None, warehouse).load_table("db.events")
    assert cli.main(["--warehouse", warehouse, "--output", "json", "snapshots", "db.events"]) == OK
    snaps = json.loads(capsys.readouterr().out)
    assert [s["snapshot_id"] for s in snaps] == [s.snapshot_id for s in events.metadata.snapshots]
    assert all(s["manifest_list"].endswith(".avro") and "added-records" in s["summary"] for s in snaps[:3])

    # the views computed here are the reference for the metadata tables Spark computes, and the other way round
    for view, key, counts in (("partitions", "partition", ("record_count", "file_count", "spec_id",
                                                           "position_delete_record_count", "last_updated_snapshot_id")),
                              ("files", "file_path", ("content", "record_count", "file_size_in_bytes", "partition")),
                              ("manifests", "path", ("content", "added_data_files_count", "added_delete_files_count")),
                              ("refs", "name", ("snapshot_id",)), ("history", "snapshot_id", ("is_current_ancestor",))):
        ours = [_jsonable(r) for r in metadata_view.VIEWS[view](t)]
        theirs = [_jsonable(r) for r in events.metadata_table(view).collect()]
        assert sorted(json.dumps([r[key], *(r[c] for c in counts)], sort_keys=True) for r in ours) == \
            sorted(json.dumps([r[key], *(r[c] for c in counts)], sort_keys=True) for r in theirs), view


def test_tables_too_large_to_read_here_go_to_spark_quietly(spark, warehouse, events, capsys, monkeypatch):
    from sparkberg.jobs import metadata_view
    monkeypatch.setattr(metadata_view, "LOCAL_MAX_FILES", 1)
    monkeypatch.setenv("COLUMNS", "120")  # (the text table fits the terminal: wide enough for the partition's name)
    called = []
    real = cli._spark_rows
    monkeypatch.setattr(cli, "_spark_rows", lambda t, view: called.append(view) or real(t, view))
    assert cli.main(["--warehouse", warehouse, "--output", "json", "files", "db.events"]) == OK
    assert called == ["files"] and len(json.loads(capsys.readouterr().out)) == 6  # 3 data files, 3 DVs
    assert cli.main(["--warehouse", warehouse, "partitions", "db.events"]) == OK
    assert called == ["files", "partitions"] and "ts_day=2024-01-02" in capsys.readouterr().out


def test_a_closed_pipe_ends_the_cli_quietly(warehouse, events):
    # `sparkberg files db.t | head`: the reader is gone before the command writes
    cli_bin = os.path.join(BIN, "sparkberg")
    for command in (["files", "db.events"], ["--output", "json", "snapshots", "db.events"]):
        proc = subprocess.Popen([cli_bin, "--warehouse", warehouse, *command], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env())
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 141, err
        assert err == "", err


def _no_java(tmp_path):
    """An environment in which starting a JVM fails loudly (a ``java`` that says so)."""
    shim = tmp_path / "no-java"
    shim.mkdir(exist_ok=True)
    (shim / "java").write_text("#!/bin/sh\necho 'a JVM was started' >&2\nexit 97\n")
    (shim / "java").chmod(0o755)
    return {**env(), "PATH": f"{shim}:{os.environ['PATH']}", "JAVA_HOME": str(shim)}


def test_read_only_commands_on_a_sql_catalog_need_no_warehouse(spark, tmp_path, capsys):
    # (issue 90, item 18: reading needs no warehouse; creating a table names --warehouse)
    db = f"sqlite:///{tmp_path}/catalog.db"
    cat = sparkberg.catalog(spark, db, warehouse=f"file://{tmp_path}/wh")
    cat.create_namespace("db")
    cat.create_table("db.t", "id bigint").append(spark.range(3))
    for command in (["list", "db"], ["describe", "db.t"], ["snapshots", "db.t"], ["files", "db.t"]):
        assert cli.main(["--catalog", db, "--output", "json", *command]) == OK, command
        assert json.loads(capsys.readouterr().out), command
    no_warehouse = sparkberg.catalog(spark, db)
    assert no_warehouse.load_table("db.t").to_df().count() == 3
    with pytest.raises(sparkberg.ValidationError, match=r"without a warehouse.*--warehouse on the command line"):
        no_warehouse.create_table("db.u", "id bigint")


def test_cli_errors_are_one_line_and_help_is_plain_text(warehouse, events, tmp_path):
    # (issue 90, item 19: a bad filter is one named error line, no JSON log line or Java stack; --help has no reST;
    # sparkberg-sql reports a syntax error before starting Spark)
    out = subprocess.run([os.path.join(BIN, "sparkberg"), "--warehouse", warehouse, "count", "db.events",
                          "--filter", "nonexistent_col = 1"], capture_output=True, text=True, env=env(), timeout=300)
    assert out.returncode == INVALID, out.stderr[-3000:]
    # (the JVM's own warning, printed before any of Spark's code runs, is the one line besides the error)
    lines = [line for line in out.stderr.strip().splitlines() if line != JVM_INCUBATOR_WARNING]
    assert len(lines) == 1 and lines[0].startswith("error: filter 'nonexistent_col = 1' cannot be applied"), lines
    assert "nonexistent_col" in lines[0] and "at org.apache" not in out.stderr
    for script in ("sparkberg", "sparkberg-sql", "sparkberg-ingest", "sparkberg-maintain", "sparkberg-health",
                   "sparkberg-stream", "sparkberg-demo"):
        text = subprocess.run([os.path.join(BIN, script), "--help"], capture_output=True, text=True, env=env(),
                              timeout=60).stdout
        assert "``" not in text and ":mod:" not in text and ":func:" not in text, (script, text[:300])
    out = subprocess.run([os.path.join(BIN, "sparkberg-sql"), "--warehouse", warehouse, "-e", "SELEC 1"],
                         capture_output=True, text=True, env=_no_java(tmp_path), timeout=60)
    assert out.returncode == INVALID and "a JVM was started" not in out.stderr, out.stderr
    assert out.stderr.strip() == "error: line 1, column 1: 'SELEC' begins no SQL statement in statement 1: SELEC 1"


def test_the_demo_names_the_delete_files_formats(tmp_path):
    # (issue 90, item 24: the column of the delete files' formats says whose formats they are)
    out = subprocess.run([os.path.join(BIN, "sparkberg-demo"), "--warehouse", str(tmp_path / "warehouse")],
                         capture_output=True, text=True, env=env(), timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    section = out.stdout.split("delete files that apply to each", 1)[1].split("==", 1)[0]
    header = section.strip().splitlines()[1]
    assert "delete_file_formats" in header and "|file_format" not in header.replace(" ", ""), section
    assert "[puffin]" in section.lower()  # (the demo's table is v3: its deletes are deletion vectors)
