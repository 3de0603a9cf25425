"""The table doctor (``Table.check``, ``Table.repair``, ``sparkberg-doctor``): a healthy table gets no finding at any
level; a table corrupted to break exactly one rule gets exactly that finding; repair's dry run proposes exactly
the remedy for files that are gone, and its commit removes their references and nothing else."""
import dataclasses
import json
import os
import subprocess
import sys

import pytest

import sparkberg
from commits import pending
from sparkberg.catalog.base import Identifier

pytestmark = pytest.mark.spark


def _table(spark, warehouse, name="db.t", version=3):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table(name, "id bigint, p int, v string", partition_by=["p"], properties={
        "format-version": str(version), "write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"})
    t = t.append(spark.sql("SELECT id, CAST(id % 3 AS INT) AS p, CAST(id AS STRING) AS v FROM range(60)"))
    t = t.append(spark.sql("SELECT id, CAST(id % 3 AS INT) AS p, 'b' AS v FROM range(60, 90)"))
    t = t.delete("id % 10 = 0").update({"v": "'u'"}, "id = 61")
    return cat, cat.load_table(name)


def _rules(t, level="metadata"):
    return sorted({(r["rule"], r["severity"]) for r in t.check(level).collect()})


@pytest.mark.parametrize("version", [2, 3])
def test_a_healthy_table_has_no_finding_at_any_level(spark, warehouse, version):
    cat, t = _table(spark, warehouse, version=version)
    t.rewrite_data_files(options={"rewrite-all": "true"})
    t = cat.load_table("db.t")
    t.expire_snapshots(older_than=None, retain_last=2)
    t = cat.load_table("db.t")
    for level in ("metadata", "files", "data"):
        assert t.check(level).collect() == [], level
    assert t.repair().collect() == []
    with pytest.raises(sparkberg.ValidationError, match="level"):
        t.check("everything")


def _commit_metadata(cat, t, load=True, **changes):
    """Commit a copy of the table's metadata with ``changes`` (a corruption no writer would make)."""
    backend = cat._backend
    backend.commit(Identifier(("db",), "t"), t.metadata_location,
                   pending(t.metadata, dataclasses.replace(t.metadata, **changes)))
    return cat.load_table("db.t") if load else None


def test_each_broken_rule_is_exactly_its_finding(spark, warehouse):
    cat, t = _table(spark, warehouse)
    first, *_, last = t.snapshots()
    # summary totals that disagree with the manifests
    wrong = dataclasses.replace(last, summary={**last.summary, "total-records": "7"})
    bad = _commit_metadata(cat, t, snapshots=tuple(wrong if s.snapshot_id == last.snapshot_id else s
                                           for s in t.metadata.snapshots))
    found = bad.check().collect()
    assert [(r["rule"], r["snapshot_id"]) for r in found] == [("summary-totals", last.snapshot_id)]
    assert "total-records is 7" in found[0]["detail"] and found[0]["spec_section"].startswith("Snapshots")
    # a sequence number below its entries', and a next-row-id below the ids assigned
    low = dataclasses.replace(last, sequence_number=1)
    bad = _commit_metadata(cat, bad, snapshots=tuple(low if s.snapshot_id == last.snapshot_id else s
                                                     for s in t.metadata.snapshots))
    assert _rules(bad) == [("sequence-number", "error")]
    bad = _commit_metadata(cat, bad, snapshots=t.metadata.snapshots, next_row_id=10)
    assert _rules(bad) == [("row-lineage-next-row-id", "error")]
    t = _commit_metadata(cat, bad, next_row_id=t.metadata.next_row_id)
    assert _rules(t, "data") == []
    # a manifest list and a manifest that are gone, and an old metadata file
    os.unlink(first.manifest_list.replace("file://", ""))
    assert _rules(t) == [("manifest-list-missing", "error")]
    assert cat.load_table("db.t").to_df().count() == 81  # (the current snapshot reads on)
    os.unlink(t.metadata.metadata_log[0].metadata_file.replace("file://", ""))
    assert _rules(t) == [("manifest-list-missing", "error"), ("metadata-log-missing", "warning")]
    # a ref to a snapshot the table does not have: refused when the metadata is read, naming it
    _commit_metadata(cat, t, load=False, refs={**t.metadata.refs, "audit": dataclasses.replace(
        t.metadata.refs["main"], snapshot_id=123, type="tag")})
    with pytest.raises(sparkberg.InvalidMetadataError, match="ref 'audit' points to unknown snapshot 123"):
        cat.load_table("db.t")


def test_a_wrong_summary_total_is_restated_by_repair(spark, warehouse):
    cat, t = _table(spark, warehouse)
    last = t.current_snapshot()
    wrong = dataclasses.replace(last, summary={**last.summary, "total-records": "7"})
    bad = _commit_metadata(cat, t, snapshots=tuple(wrong if s.snapshot_id == last.snapshot_id else s
                                                   for s in t.metadata.snapshots))
    # proposed first, then (committed) a replace snapshot that changes no file and states the totals right
    proposed = [(r["remedy"], r["file_path"], r["detail"]) for r in bad.repair().collect()]
    assert proposed == [("restate-summary", None, "total-records is 7 in the summary, 91 in the manifests")]
    assert cat.load_table("db.t").metadata_location == bad.metadata_location
    bad.repair(dry_run=False)
    fixed = cat.load_table("db.t")
    snap = fixed.current_snapshot()
    assert (snap.summary["operation"], snap.summary["total-records"]) == ("replace", last.summary["total-records"])
    assert snap.summary["sparkberg.repair.restated-totals"] == "total-records"
    assert all(snap.summary[k] == last.summary[k] for k in ("total-data-files", "total-delete-files",
                                                            "total-position-deletes", "total-files-size"))
    assert [r for r in fixed.check().collect() if r["snapshot_id"] == snap.snapshot_id] == []
    assert fixed.to_df().count() == 81 and fixed.repair().collect() == []


def test_files_that_are_gone_or_resized_and_their_repair(spark, warehouse):
    cat, t = _table(spark, warehouse)
    files = t.plan_files().collect()
    gone = next(f for f in files if f["deletes"])  # (a data file with a deletion vector)
    resized = next(f for f in files if f["file_path"] != gone["file_path"])
    os.unlink(gone["file_path"].replace("file://", ""))
    with open(resized["file_path"].replace("file://", ""), "ab") as f:
        f.write(b"junk")
    assert _rules(t) == []  # (the metadata level reads no data file)
    found = {(r["rule"], r["location"]) for r in t.check("files").collect()}
    assert ("file-missing", gone["file_path"]) in found and ("file-size", resized["file_path"]) in found
    assert {rule for rule, _ in found} == {"file-missing", "file-size"}
    # repair: the dry run proposes the data file and its deletion vector, and changes nothing
    proposed = {(r["file_path"], r["content"]) for r in t.repair().collect() if r["remedy"] == "remove-reference"}
    dv = gone["deletes"][0]["file_path"]
    assert proposed == {(gone["file_path"], 0), (dv, 1)}
    assert cat.load_table("db.t").metadata_location == t.metadata_location
    t.repair(dry_run=False)
    fixed = cat.load_table("db.t")
    assert fixed.current_snapshot().summary["operation"] == "delete"
    assert fixed.current_snapshot().summary["sparkberg.repair.removed-missing-files"] == "2"
    assert gone["file_path"] not in {r["file_path"] for r in fixed.plan_files().collect()}
    assert os.path.exists(dv.replace("file://", ""))  # (repair never deletes a file)
    current = {(r["rule"], r["location"]) for r in fixed.check("files").collect()
               if r["snapshot_id"] == fixed.current_snapshot().snapshot_id}
    assert current == {("file-size", resized["file_path"])}  # (older snapshots still name the gone file)


def test_the_doctor_command(spark, warehouse, tmp_path):
    cat, t = _table(spark, warehouse)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    ok = subprocess.run([sys.executable, "-m", "sparkberg.jobs.doctor", "--catalog", warehouse, "db.t"],
                        capture_output=True, text=True, timeout=300, env=env)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert "healthy" in ok.stdout
    os.unlink(t.plan_files().collect()[0]["file_path"].replace("file://", ""))
    bad = subprocess.run([sys.executable, "-m", "sparkberg.jobs.doctor", "--catalog", warehouse, "--level", "files",
                          "--json", "db.t"], capture_output=True, text=True, timeout=300, env=env)
    assert bad.returncode == 1, bad.stderr[-2000:]
    rows = [json.loads(line) for line in bad.stdout.splitlines() if line.startswith("{")]
    assert [r["rule"] for r in rows] == ["file-missing"]


def _data_files(t):
    from sparkberg.avro.decode import manifest_entries
    from sparkberg.planning.entries import snapshot_manifests
    return [e.data_file for mf in snapshot_manifests(t.io, t.current_snapshot())
            for e in manifest_entries(t.io.read(mf.manifest_path), mf) if e.status != 2 and e.data_file.content == 0]


@pytest.mark.parametrize("corruption", ["partition-value", "row-lineage-overlap"])
def test_a_file_committed_with_a_wrong_partition_or_row_ids_is_found(spark, warehouse, corruption):
    from commits import fast_append
    from sparkberg.operations.request import MAIN_REQUEST
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.t", "id bigint, p int", partition_by=["p"], properties={"format-version": "3"})
    t = t.append(spark.sql("SELECT id, CAST(id % 2 AS INT) AS p FROM range(20)"))
    d = next(f for f in _data_files(t) if f.partition[1000] == 1)
    if corruption == "partition-value":  # (the file's rows all have p = 1; its entry says 3)
        bad = dataclasses.replace(d, partition={1000: 3}, first_row_id=None)
    else:  # (a second entry claiming the row ids of the first)
        bad = dataclasses.replace(d, first_row_id=d.first_row_id)
    fast_append(t, [bad], MAIN_REQUEST)
    t = cat.load_table("db.t")
    found = [(r["rule"], r["location"]) for r in t.check().collect()]
    assert found == [(corruption, d.file_path)]


@pytest.mark.parametrize("corruption", ["dv-cardinality", "dv-dangling"])
def test_a_deletion_vector_entry_that_lies_is_found(spark, warehouse, corruption):
    from sparkberg.avro.decode import manifest_entries
    from commits import Changes, commit_changes
    from sparkberg.operations.request import MAIN_REQUEST
    from sparkberg.planning.entries import snapshot_manifests
    cat, t = _table(spark, warehouse)
    dv = next(e.data_file for mf in snapshot_manifests(t.io, t.current_snapshot())
              for e in manifest_entries(t.io.read(mf.manifest_path), mf)
              if e.status != 2 and e.data_file.content == 1)
    spec_id = 0
    if corruption == "dv-cardinality":  # (the entry says one position more than its blob holds)
        lie = dataclasses.replace(dv, record_count=dv.record_count + 1)
    else:  # (the entry names a data file the table does not have)
        lie = dataclasses.replace(dv, referenced_data_file=f"{t.location}/data/nowhere.parquet")
    commit_changes(t, Changes("overwrite", added_deletes=[(spec_id, lie)], removed={(dv.file_path, dv.content_offset)}),
                   MAIN_REQUEST)
    t = cat.load_table("db.t")
    level = "files" if corruption == "dv-cardinality" else "metadata"
    found = [(r["rule"], r["location"]) for r in t.check(level).collect()
             if r["snapshot_id"] == t.current_snapshot().snapshot_id]
    assert found == [(corruption, dv.file_path)]


def test_an_unreadable_manifest_and_a_footer_that_disagrees(spark, warehouse):
    cat, t = _table(spark, warehouse)
    # a data file replaced by one of other rows (its size changes too: both are said, at level data)
    d = t.plan_files().collect()[0]
    local = d["file_path"].replace("file://", "")
    spark.range(d["record_count"] + 5).selectExpr("id", "CAST(1 AS INT) AS p", "'x' AS v").coalesce(1) \
        .write.mode("overwrite").parquet(str(local) + ".tmp")
    written = next(f for f in os.listdir(local + ".tmp") if f.endswith(".parquet"))
    os.replace(os.path.join(local + ".tmp", written), local)
    found = {r["rule"] for r in t.check("data").collect() if r["location"] == d["file_path"]}
    assert found == {"file-size", "row-count"}
    # a manifest overwritten with bytes that are not Avro
    first = t.snapshots()[0]
    from sparkberg.planning.entries import snapshot_manifests
    manifest = snapshot_manifests(t.io, first)[0].manifest_path
    with open(manifest.replace("file://", ""), "wb") as f:
        f.write(b"not an avro file")
    rules = {(r["rule"], r["location"]) for r in t.check().collect()}
    assert ("manifest-unreadable", manifest) in rules and {r for r, _ in rules} == {"manifest-unreadable"}
