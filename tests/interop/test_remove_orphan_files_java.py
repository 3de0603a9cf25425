"""Orphan file removal, sparkberg against Iceberg Java's ``remove_orphan_files`` procedure (dry runs, on the same
tables): the same files found, stray data files at every depth, a leftover at the table's root and metadata
files that fell out of the log among them, and neither hidden files nor files younger than the cutoff."""
import datetime
import os
import time

import pytest

import sparkberg

pytestmark = pytest.mark.interop
OLD = time.time() - 10 * 24 * 3600


def _local(location):
    for prefix in ("file://", "file:"):
        if location.startswith(prefix):
            return location[len(prefix):]
    return location


def _make(path, old=True):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"x")
    if old:
        os.utime(path, (OLD, OLD))


@pytest.mark.parametrize("writer", ["java", "sparkberg"])
def test_the_same_orphans_are_found_as_by_iceberg_java(java, java_warehouse, writer):
    java.sql("CREATE NAMESPACE IF NOT EXISTS ref.orph")
    name = f"o_{writer}"
    if writer == "java":
        java.sql(f"CREATE TABLE ref.orph.{name} (id bigint, p int) USING iceberg PARTITIONED BY (p) TBLPROPERTIES "
                 "('format-version'='2', 'write.metadata.previous-versions-max'='1', "
                 "'write.delete.mode'='merge-on-read')")
        for k in range(3):
            java.sql(f"INSERT INTO ref.orph.{name} SELECT id, CAST(id % 2 AS int) FROM range({10 * k}, {10 * k + 10})")
        java.sql(f"DELETE FROM ref.orph.{name} WHERE id = 3")
    else:
        cat = sparkberg.catalog(java, java_warehouse)
        t = cat.create_table(f"orph.{name}", "id bigint, p int", partition_by=["p"],
                             properties={"write.metadata.previous-versions-max": "1",
                                         "write.delete.mode": "merge-on-read"})
        for k in range(3):
            t.append(java.sql(f"SELECT id, CAST(id % 2 AS int) AS p FROM range({10 * k}, {10 * k + 10})"))
        t.delete("id = 3")
    root = os.path.join(java_warehouse, "orph", name)
    for d, _, fs in os.walk(root):
        for f in fs:
            os.utime(os.path.join(d, f), (OLD, OLD))
    _make(os.path.join(root, "data", "p=0", "stray.parquet"))
    _make(os.path.join(root, "data", "p=1", "x", "deep.parquet"))
    _make(os.path.join(root, "leftover.txt"))
    _make(os.path.join(root, "data", "p=0", "young.parquet"), old=False)
    _make(os.path.join(root, "data", "p=0", "_SUCCESS"))
    _make(os.path.join(root, "data", "_temporary", "0", "part.parquet"))
    cutoff = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=1)
    stamp = cutoff.strftime("%Y-%m-%d %H:%M:%S.%fZ")
    java.sql(f"REFRESH TABLE ref.orph.{name}")
    theirs = {_local(r[0]) for r in java.sql(
        f"CALL ref.system.remove_orphan_files(table => 'orph.{name}', older_than => TIMESTAMP '{stamp}', "
        "dry_run => true)").collect()}
    t = sparkberg.catalog(java, java_warehouse).load_table(f"orph.{name}")
    ours = {_local(r[0]) for r in t.remove_orphan_files(older_than=cutoff, dry_run=True).collect()}
    assert ours == theirs
    assert os.path.join(root, "data", "p=0", "stray.parquet") in ours
    assert sum(1 for p in ours if p.endswith(".metadata.json")) >= 1
