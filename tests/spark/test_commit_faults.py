"""Commit faults and races: a failure injected at every step of a commit leaves the table exactly as it was
with no file of that commit left behind, and concurrent writer processes lose no commit and duplicate no row."""
import os
import subprocess
import sys

import pytest

import sparkberg
from sparkberg.catalog.filesystem import FileSystemCatalog
from sparkberg.io.fileio import LocalFileIO

pytestmark = pytest.mark.spark
HERE = os.path.dirname(os.path.abspath(__file__))


def files_under(root):
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if not f.startswith(".")}


def boom(*args, **kwargs):
    raise OSError("injected failure")


def fail_metadata_create(original):
    def create(self, location, data):
        if location.endswith(".metadata.json"):
            raise OSError("injected failure writing the metadata file")
        return original(self, location, data)
    return create


STEPS = {
    "after data files": lambda mp, mod: mp.setattr(f"{mod}.write_manifest", boom),
    "after manifests": lambda mp, mod: mp.setattr(f"{mod}.write_manifest_list", boom),
    "after the manifest list": lambda mp, mod: mp.setattr("sparkberg.format.updates.apply_all", boom),
    "writing the metadata file": lambda mp, mod: mp.setattr(LocalFileIO, "create",
                                                           fail_metadata_create(LocalFileIO.create)),
    "at the catalog swap": lambda mp, mod: mp.setattr(FileSystemCatalog, "commit", boom),
}
OPERATIONS = {
    "append": ("sparkberg.commit.producer", lambda spark, t: t.append(spark.range(100, 110).selectExpr(
        "id", "'odd' AS cat"))),
    "delete (merge-on-read)": ("sparkberg.commit.producer", lambda spark, t: t.delete("id % 3 = 0")),
    "update (copy-on-write)": ("sparkberg.commit.producer", lambda spark, t: t.update({"cat": "'x'"}, "id < 5")),
}


@pytest.mark.parametrize("step", list(STEPS))
@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_injected_failure_changes_nothing(spark, warehouse, monkeypatch, operation, step):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.f", "id bigint, cat string", partition_by=["cat"], properties={
        "format-version": "3", "write.delete.mode": "merge-on-read", "write.update.mode": "copy-on-write"})
    t.append(spark.range(0, 20).selectExpr("id", "CASE WHEN id % 2 = 0 THEN 'even' ELSE 'odd' END AS cat"))
    before = cat.load_table("db.f")
    files_before = files_under(os.path.join(warehouse, "db", "f"))
    rows_before = sorted(tuple(r) for r in before.to_df().collect())
    module, run = OPERATIONS[operation]
    with monkeypatch.context() as mp:
        STEPS[step](mp, module)
        with pytest.raises(OSError, match="injected"):
            run(spark, t)
    after = cat.load_table("db.f")
    assert after.metadata == before.metadata
    assert sorted(tuple(r) for r in after.to_df().collect()) == rows_before
    assert files_under(os.path.join(warehouse, "db", "f")) == files_before


def test_concurrent_writer_processes(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    cat.create_table("db.c", "id bigint, worker int", properties={
        "format-version": "2", "commit.retry.num-retries": "30", "commit.retry.min-wait-ms": "20",
        "write.delete.isolation-level": "snapshot"})
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "concurrent_writer.py"), warehouse, "db.c", str(w)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env={**os.environ, "PYSPARK_PYTHON": sys.executable}) for w in range(3)]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), "\n".join(o[-2000:] for o in outputs)
    t = cat.load_table("db.c")
    ids = sorted(r[0] for r in t.to_df().collect())
    expected = sorted(w * 1000 + i for w in range(3) for i in range(30) if i != 0)
    assert ids == expected  # every append kept, every delete applied, nothing duplicated
    assert len(t.metadata.snapshots) == 3 * 4
    chain = list(t.metadata.ancestors(t.metadata.current_snapshot_id))
    assert len(chain) == 12  # one linear history: no commit lost
