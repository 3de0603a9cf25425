"""The scheduled maintenance job (``sparkberg-maintain``): expiry by the table's properties, compaction past the
health views' ratios, a manifest rewrite past a count, orphan removal on request; a dry run that changes
nothing; a JSON report; a failing table reported with the others still maintained and the CLI's exit code."""
import json
import os
import subprocess
import sys

import pytest

import sparkberg
from sparkberg.jobs import maintain
from sparkberg.jobs.common import NOT_FOUND, OK

pytestmark = pytest.mark.spark


@pytest.fixture
def tables(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    cat.create_namespace("db")
    for name in ("a", "b"):
        t = cat.create_table(f"db.{name}", "id bigint, p int", partition_by=["p"],
                             properties={"write.delete.mode": "merge-on-read", "commit.manifest-merge.enabled": "false",
                                         "history.expire.max-snapshot-age-ms": "0"})
        for k in range(3):
            t.append(spark.sql(f"SELECT id, CAST(id % 2 AS int) AS p FROM range({10 * k}, {10 * k + 10})"))
        t.delete("id % 5 = 0")
    return cat


def state(cat, name):
    t = cat.load_table(name)
    return len(t.metadata.snapshots), t.metadata_location, sorted(r[0] for r in t.to_df().select("id").collect())


def test_a_dry_run_reports_and_changes_nothing(spark, warehouse, tables, tmp_path):
    before = {n: state(tables, n) for n in ("db.a", "db.b")}
    stray = os.path.join(tables.load_table("db.a").location[len("file://"):], "data", "stray.parquet")
    with open(stray, "wb") as f:
        f.write(b"x")
    out = tmp_path / "report.json"
    assert maintain.main(["--warehouse", warehouse, "--dry-run", "--remove-orphans", "--orphan-older-than-days", "0",
                          "--max-manifests", "1", "--output-json", str(out)]) == OK
    report = json.loads(out.read_text())
    assert report["dry_run"] and set(report["tables"]) == {"db.a", "db.b"}
    a = report["tables"]["db.a"]
    assert a["expire_snapshots"]["deleted_manifest_lists_count"] == 3
    assert a["rewrite_data_files"]["run"] and a["rewrite_manifests"] == {"manifests": 4, "run": True}
    assert a["rewrite_data_files"]["rewritten_data_files_count"] > 0  # what a real run would rewrite
    assert a["remove_orphan_files"]["orphan_file_locations"] == ["file://" + stray]
    assert {n: state(tables, n) for n in ("db.a", "db.b")} == before and os.path.exists(stray)


def test_the_policy_runs_and_a_missing_table_is_reported(spark, warehouse, tables, tmp_path, capsys):
    rows = state(tables, "db.a")[2]
    out = tmp_path / "report.json"
    code = maintain.main(["--warehouse", warehouse, "--table", "db.a", "--table", "db.missing", "--max-manifests",
                          "1", "--output-json", str(out)])
    assert code == NOT_FOUND and "db.missing" in capsys.readouterr().err
    report = json.loads(out.read_text())
    a = report["tables"]["db.a"]
    assert a["expire_snapshots"]["deleted_manifest_lists_count"] == 3
    assert a["rewrite_data_files"]["rewritten_data_files_count"] > 0
    assert "error" in report["tables"]["db.missing"]
    t = tables.load_table("db.a")
    assert sorted(r[0] for r in t.to_df().select("id").collect()) == rows
    assert t.current_snapshot().summary["operation"] in ("replace",)


def test_the_console_script_and_bad_arguments():
    bin_dir = os.path.dirname(sys.executable)
    out = subprocess.run([os.path.join(bin_dir, "sparkberg-maintain"), "--help"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "--remove-orphans" in out.stdout
    with pytest.raises(SystemExit):
        maintain.main(["--max-manifests", "-1"])
