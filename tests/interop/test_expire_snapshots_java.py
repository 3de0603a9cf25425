"""Snapshot expiry, sparkberg against Iceberg Java's ``expire_snapshots`` procedure on the same tables: each table
is built, copied aside, expired by Java; the copy is put back and expired by sparkberg with the same arguments.
Both must delete exactly the same files, keep the same snapshots and refs, and report the same counts."""
import datetime
import os
import shutil
import time

import pytest

import sparkberg

pytestmark = pytest.mark.interop

JAVA_COLUMNS = ["deleted_data_files_count", "deleted_position_delete_files_count",
                "deleted_equality_delete_files_count", "deleted_manifest_files_count",
                "deleted_manifest_lists_count", "deleted_statistics_files_count"]


def _files(root):
    """The table's files but its metadata JSON and version hint (both engines write a new version)."""
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
            if not f.endswith((".metadata.json", ".crc")) and f != "version-hint.text"}


def _java_v2_mor(java, name):
    java.sql(f"CREATE TABLE ref.exp.{name} (id bigint, p int) USING iceberg PARTITIONED BY (p) TBLPROPERTIES "
             "('format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')")
    for k in range(3):
        java.sql(f"INSERT INTO ref.exp.{name} SELECT id, CAST(id % 2 AS int) FROM range({10 * k}, {10 * k + 10})")
    java.sql(f"DELETE FROM ref.exp.{name} WHERE id < 4")
    java.sql(f"UPDATE ref.exp.{name} SET p = p WHERE id = 12")
    java.sql(f"CALL ref.system.rewrite_data_files(table => 'exp.{name}', options => map('rewrite-all', 'true'))")
    java.sql(f"INSERT INTO ref.exp.{name} VALUES (100, 0)")


def _java_v3_branches(java, name):
    java.sql(f"CREATE TABLE ref.exp.{name} (id bigint) USING iceberg TBLPROPERTIES ('format-version'='3', "
             "'write.delete.mode'='merge-on-read')")
    for k in range(3):
        java.sql(f"INSERT INTO ref.exp.{name} SELECT id FROM range({10 * k}, {10 * k + 10})")
    java.sql(f"ALTER TABLE ref.exp.{name} CREATE TAG t1 RETAIN 3650 DAYS")
    java.sql(f"DELETE FROM ref.exp.{name} WHERE id < 5")  # (deletion vectors)
    java.sql(f"ALTER TABLE ref.exp.{name} CREATE BRANCH b WITH SNAPSHOT RETENTION 2 SNAPSHOTS")
    java.sql(f"INSERT INTO ref.exp.{name} VALUES (200)")
    java.sql(f"CALL ref.system.rewrite_data_files(table => 'exp.{name}', options => map('rewrite-all', 'true'))")


def _java_v1(java, name):
    java.sql(f"CREATE TABLE ref.exp.{name} (id bigint, p int) USING iceberg PARTITIONED BY (p) TBLPROPERTIES "
             "('format-version'='1')")
    for k in range(3):
        java.sql(f"INSERT INTO ref.exp.{name} SELECT id, CAST(id % 2 AS int) FROM range({10 * k}, {10 * k + 10})")
    java.sql(f"DELETE FROM ref.exp.{name} WHERE id < 4")  # (v1: copy-on-write)
    java.sql(f"CALL ref.system.rewrite_data_files(table => 'exp.{name}', options => map('rewrite-all', 'true'))")
    java.sql(f"INSERT INTO ref.exp.{name} VALUES (100, 0)")


def _sparkberg_v2(java, name):
    cat = sparkberg.catalog(java, java.conf.get("spark.sql.catalog.ref.warehouse"))
    t = cat.create_table(f"exp.{name}", "id bigint, p int", partition_by=["p"],
                         properties={"write.delete.mode": "merge-on-read"})
    for k in range(3):
        t.append(java.sql(f"SELECT id, CAST(id % 2 AS int) AS p FROM range({10 * k}, {10 * k + 10})"))
    t.delete("id < 4")
    t.delete_by_keys(java.sql("SELECT 15L AS id, 1 AS p"), ["id"])
    t.overwrite(java.sql("SELECT 50L AS id, 0 AS p"), "p = 0")


@pytest.mark.parametrize("build,retain", [(_java_v1, 1), (_java_v2_mor, 1), (_java_v2_mor, 2),
                                          (_java_v3_branches, 1), (_sparkberg_v2, 1)])
def test_the_same_files_are_deleted_as_by_iceberg_java(java, java_warehouse, tmp_path, build, retain):
    java.sql("CREATE NAMESPACE IF NOT EXISTS ref.exp")
    name = f"{build.__name__.strip('_')}_{retain}"
    build(java, name)
    root = os.path.join(java_warehouse, "exp", name)
    backup = str(tmp_path / "backup")
    shutil.copytree(root, backup)
    before = _files(root)
    time.sleep(0.01)
    cutoff = datetime.datetime.now(datetime.timezone.utc)
    stamp = cutoff.strftime("%Y-%m-%d %H:%M:%S.%fZ")
    java.sql(f"REFRESH TABLE ref.exp.{name}")
    theirs = java.sql(f"CALL ref.system.expire_snapshots(table => 'exp.{name}', older_than => TIMESTAMP '{stamp}', "
                      f"retain_last => {retain})").collect()[0]
    java_deleted = before - _files(root)
    cat = sparkberg.catalog(java, java.conf.get("spark.sql.catalog.ref.warehouse"))
    java_kept = sorted(s.snapshot_id for s in cat.load_table(f"exp.{name}").metadata.snapshots)
    java_refs = sorted(cat.load_table(f"exp.{name}").metadata.refs)
    shutil.rmtree(root)
    shutil.copytree(backup, root)
    t = cat.load_table(f"exp.{name}")
    ours = t.expire_snapshots(older_than=cutoff, retain_last=retain).collect()[0]
    our_deleted = before - _files(root)
    assert java_deleted, "the case expires nothing"
    assert our_deleted == java_deleted
    assert sorted(s.snapshot_id for s in t.metadata.snapshots) == java_kept and sorted(t.metadata.refs) == java_refs
    assert [ours[c] for c in JAVA_COLUMNS] == [theirs[c] for c in JAVA_COLUMNS]
    java.sql(f"REFRESH TABLE ref.exp.{name}")
    assert sorted(r[0] for r in java.sql(f"SELECT id FROM ref.exp.{name}").collect()) == \
        sorted(r[0] for r in t.to_df().select("id").collect())
