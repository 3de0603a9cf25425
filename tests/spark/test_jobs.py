"""The jobs and the CLI: ingest through spark-submit, the console scripts, the health views of sql/ (each
one run), exit codes a scheduler can use."""
import json
import os
import subprocess
import sys

import pytest

import sparkberg
from sparkberg.jobs import cli, health, ingest
from sparkberg.jobs.common import INVALID, NOT_FOUND, OK

pytestmark = pytest.mark.spark
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


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
