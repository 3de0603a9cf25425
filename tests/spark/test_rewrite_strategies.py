"""Compaction strategies and options (``rewrite_data_files`` as Iceberg's procedure): sort and z-order, file
groups, partial progress, dangling deletes, bad options."""
import glob
import os

import pyarrow.parquet as pq
import pytest

import sparkberg
from sparkberg.errors import ValidationError
from sparkberg.format.values import from_bytes
from sparkberg.format import types as T
from sparkberg.format.transforms import parse_transform

pytestmark = pytest.mark.spark


def result(df):
    return df.collect()[0].asDict()


def data_files(t):
    return t.metadata_table("data_files").collect()


def rows(t, cols):
    return sorted(tuple(r) for r in t.to_df(columns=list(cols)).collect())


def local(path):
    return path[len("file://"):] if path.startswith("file://") else path


def shuffled_table(spark, warehouse, version, name, sort_by=None, partition_by=("cat",)):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table(f"db.{name}", "id bigint, cat string, x int, y int, s string",
                         partition_by=list(partition_by), sort_by=sort_by,
                         properties={"format-version": str(version), "write.delete.mode": "merge-on-read"})
    for i in range(6):  # ids scattered over the files: (id * 7919) % 600 is a permutation of 0..599
        t.append(spark.sql(f"SELECT (id * 7919) % 600 AS id, IF(id % 2 = 0, 'even', 'odd') AS cat, "
                           f"CAST((id * 37) % 100 AS INT) AS x, CAST((id * 53) % 100 AS INT) AS y, "
                           f"concat('s', id % 13) AS s FROM range({i * 100}, {i * 100 + 100})"))
    return cat, t


@pytest.mark.parametrize("version", [2, 3])
def test_sort_by_the_table_order_sorts_every_file_and_records_the_order(spark, warehouse, version):
    cat, t = shuffled_table(spark, warehouse, version, "srt", sort_by=["id DESC NULLS LAST"])
    t.delete("id % 10 = 3")
    lineage = ("id", "_row_id", "_last_updated_sequence_number") if version == 3 else ("id", "x")
    before, lineage_before = rows(t, ("id", "cat", "x", "y", "s")), rows(t, lineage)
    written = data_files(t)  # (the appends range-distribute by the table's order: a few files each)
    small = str(sum(f["file_size_in_bytes"] for f in written) // 4)  # ~ two files a partition
    out = result(t.rewrite_data_files(strategy="sort", options={"target-file-size-bytes": small,
                                                                "min-file-size-bytes": "0", "rewrite-all": "true"}))
    assert out["rewritten_data_files_count"] == len(written) >= 12 and out["failed_data_files_count"] == 0
    assert rows(t, ("id", "cat", "x", "y", "s")) == before and rows(t, lineage) == lineage_before
    files = data_files(t)
    assert len(files) == out["added_data_files_count"] and {f["sort_order_id"] for f in files} == {1}
    by_partition = {}
    for f in files:
        ids = pq.read_table(local(f["file_path"]), columns=["id"]).column("id").to_pylist()
        assert ids == sorted(ids, reverse=True)  # each file sorted by the order
        by_partition.setdefault(f["partition"]["cat"], []).append((min(ids), max(ids)))
    for ranges in by_partition.values():  # and the files of a partition hold disjoint ranges of it
        ranges.sort()
        assert all(hi < lo for (_, hi), (lo, _) in zip(ranges, ranges[1:]))
    assert t.metadata.current_snapshot.operation == "replace"


def test_sort_by_another_order_sorts_with_transforms_but_records_unsorted(spark, warehouse):
    cat, t = shuffled_table(spark, warehouse, 2, "srt2")
    before = rows(t, ("id", "cat", "x"))
    out = result(t.rewrite_data_files(sort_order="bucket(4, id), x DESC", options={"rewrite-all": True}))
    assert out["rewritten_data_files_count"] == 12 and out["added_data_files_count"] == 2
    assert rows(t, ("id", "cat", "x")) == before
    to_bucket = parse_transform("bucket[4]").apply(T.LONG)
    for f in data_files(t):
        assert f["sort_order_id"] == 0  # not one of the table's orders
        got = pq.read_table(local(f["file_path"]), columns=["id", "x"]).to_pylist()
        keys = [(to_bucket(r["id"]), -r["x"]) for r in got]
        assert keys == sorted(keys)
    with pytest.raises(ValidationError, match="unsorted and no sort_order"):
        t.rewrite_data_files(strategy="sort")


def _ranges(t, names):
    """Per data file, the fraction of each column's full range it covers (from its metrics)."""
    schema = t.metadata.current_schema
    ids = {n: schema.find_field(n).field_id for n in names}
    full = {}
    out = []
    for f in data_files(t):
        bounds = {n: (from_bytes(T.INT, f["lower_bounds"][i]), from_bytes(T.INT, f["upper_bounds"][i]))
                  for n, i in ids.items()}
        out.append(bounds)
        for n, (lo, hi) in bounds.items():
            a, b = full.get(n, (lo, hi))
            full[n] = (min(a, lo), max(b, hi))
    return [{n: (hi - lo) / max(1, full[n][1] - full[n][0]) for n, (lo, hi) in b.items()} for b in out]


def test_zorder_clusters_files_on_every_column(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.z", "x int, y int, k string", partition_by=["k"])
    for i in range(4):
        t.append(spark.sql(f"SELECT CAST((id * 7919) % 1000 AS INT) AS x, CAST((id * 104729) % 1000 AS INT) AS y, "
                           f"'one' AS k FROM range({i * 20000}, {i * 20000 + 20000})"))
    before = rows(t, ("x", "y"))
    assert all(r["x"] > 0.9 and r["y"] > 0.9 for r in _ranges(t, ["x", "y"]))  # every file spans everything
    target = str(sum(f["file_size_in_bytes"] for f in data_files(t)) // 8)
    out = result(t.rewrite_data_files(sort_order="zorder(x, y, k)",  # k: an identity partition column, left out
                                      options={"target-file-size-bytes": target, "min-file-size-bytes": "0",
                                               "rewrite-all": "true"}))
    assert out["rewritten_data_files_count"] == 4 and out["added_data_files_count"] >= 6
    assert rows(t, ("x", "y")) == before
    spans = _ranges(t, ["x", "y"])
    assert {f["sort_order_id"] for f in data_files(t)} == {0}
    # each file covers a small box of the (x, y) square: area well under a sort by one column's (~1/files)
    assert sum(r["x"] * r["y"] for r in spans) / len(spans) < 0.35
    assert sum(r["x"] for r in spans) / len(spans) < 0.8 and sum(r["y"] for r in spans) / len(spans) < 0.8
    with pytest.raises(ValidationError, match="identity partition columns"):
        t.rewrite_data_files(sort_order="zorder(k)")
    with pytest.raises(ValidationError, match="cannot find field 'nope'"):
        t.rewrite_data_files(sort_order="zorder(x, nope)")


def test_bad_strategies_and_options_are_named_and_change_nothing(spark, warehouse):
    cat, t = shuffled_table(spark, warehouse, 2, "bad")
    snaps, location = len(t.metadata.snapshots), t.metadata_location
    cases = [
        (dict(strategy="shuffle"), "unknown rewrite strategy 'shuffle'"),
        (dict(strategy="binpack", sort_order="id"), "sort_order needs the sort strategy"),
        (dict(options={"no-such-option": "1"}), r"unknown option\(s\) no-such-option of rewrite_data_files"),
        (dict(options={"var-length-contribution": "4"}), r"unknown option\(s\) var-length-contribution"),
        (dict(options={"rewrite-job-order": "random"}), "option rewrite-job-order must be one of none, bytes-asc"),
        (dict(options={"target-file-size-bytes": "100", "min-file-size-bytes": "200"}), "must be above"),
        (dict(options={"partial-progress.enabled": "yes"}), "must be true or false"),
        (dict(options={"max-concurrent-file-group-rewrites": "0"}), "at least 1"),
        (dict(options={"delete-ratio-threshold": "0"}), "must be above 0"),
        (dict(sort_order="zorder(x), id"), "cannot be combined"),
        (dict(sort_order="zorder(x)", options={"var-length-contribution": "0"}), "at least 1"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValidationError, match=message):
            t.rewrite_data_files(**kwargs)
    t = cat.load_table("db.bad")
    assert (len(t.metadata.snapshots), t.metadata_location) == (snaps, location)


def test_file_groups_job_order_caps_and_a_dry_run(spark, warehouse):
    cat, t = shuffled_table(spark, warehouse, 2, "grp")
    snaps = len(t.metadata.snapshots)
    size = max(f["file_size_in_bytes"] for f in data_files(t))
    planned = result(t.rewrite_data_files(dry_run=True))
    assert planned["rewritten_data_files_count"] == 12 and planned["added_data_files_count"] == 2
    assert result(t.rewrite_data_files(options={"max-files-to-rewrite": "7"}, dry_run=True))[
        "rewritten_data_files_count"] == 7
    # groups of at most two files: three groups a partition, each with too few files for min-input-files
    assert result(t.rewrite_data_files(options={"max-file-group-size-bytes": str(2 * size + 1)},
                                       dry_run=True))["rewritten_data_files_count"] == 0
    assert result(t.rewrite_data_files(options={"max-file-group-size-bytes": str(2 * size + 1),
                                                "min-input-files": "2"}, dry_run=True))[
        "added_data_files_count"] == 6
    assert len(cat.load_table("db.grp").metadata.snapshots) == snaps  # dry runs commit nothing
    out = result(t.rewrite_data_files(options={"max-file-group-input-files": "2", "min-input-files": "2",
                                               "rewrite-job-order": "bytes-desc",
                                               "max-concurrent-file-group-rewrites": "2"}))
    assert out["rewritten_data_files_count"] == 12 and out["added_data_files_count"] == 6
    assert len(cat.load_table("db.grp").metadata.snapshots) == snaps + 1  # one commit for every group


def _data_dir_files(t):
    return sorted(glob.glob(os.path.join(local(t.location), "data", "**", "*.parquet"), recursive=True))


def test_partial_progress_commits_what_it_can_and_counts_failures(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.pp", "id bigint, p int", partition_by=["p"])
    for i in range(5):
        t.append(spark.sql(f"SELECT id, CAST(id % 3 AS INT) AS p FROM range({i * 30}, {i * 30 + 30})"))
    broken = [f["file_path"] for f in data_files(t) if f["partition"]["p"] == 2][0]
    os.remove(local(broken))  # one group's rewrite fails: a file of partition 2 is gone
    snaps, files = len(t.metadata.snapshots), _data_dir_files(t)
    with pytest.raises(Exception):  # without partial progress one failed group fails the call...
        t.rewrite_data_files()
    t = cat.load_table("db.pp")
    assert len(t.metadata.snapshots) == snaps and _data_dir_files(t) == files  # ...and leaves no file behind
    out = result(t.rewrite_data_files(options={"partial-progress.enabled": "true",
                                               "partial-progress.max-commits": "5"}))
    assert out["failed_data_files_count"] == 5 and out["rewritten_data_files_count"] == 10
    t = cat.load_table("db.pp")
    assert len(t.metadata.snapshots) == snaps + 2  # a commit for each group that was rewritten
    assert sorted(f["partition"]["p"] for f in data_files(t)).count(2) == 5
    assert len([f for f in data_files(t) if f["partition"]["p"] != 2]) == 2


def test_remove_dangling_deletes(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.dd", "id bigint, cat string", partition_by=["cat"],
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, IF(id % 2 = 0, 'even', 'odd') AS cat FROM range(0, 20)"))
    t.append(spark.sql("SELECT id, IF(id % 2 = 0, 'even', 'odd') AS cat FROM range(20, 40)"))
    t.append(spark.sql("SELECT id, CAST(NULL AS STRING) AS cat FROM range(40, 44)"))
    t.delete("id IN (1, 21, 2)")  # position deletes, each naming its one data file: they go with it
    t.delete_by_keys(spark.sql("SELECT 3L AS id, 'odd' AS cat UNION ALL SELECT 41L, NULL"), ["id"])
    t.append(spark.sql("SELECT 101L AS id, 'odd' AS cat"))
    before = rows(t, ("id", "cat"))
    assert 3 not in [r[0] for r in before] and 41 not in [r[0] for r in before]
    deletes = {r["file_path"] for r in t.metadata_table("delete_files").collect()}
    assert len(deletes) == 5
    opts = {"rewrite-all": "true", "remove-dangling-deletes": "true"}
    # the rewritten 'odd' files keep the starting sequence number, which is above the 'odd' equality delete's:
    # it can no longer apply to anything. The null partition's still applies (a null-safe partition match)
    # (as Java's rewrite counts: the two position delete files go with the files they name, uncounted; the
    # equality delete remove-dangling-deletes finds is counted)
    assert result(t.rewrite_data_files(filter="cat = 'odd'", options={"rewrite-all": "true"}, dry_run=True))[
        "removed_delete_files_count"] == 0
    assert result(t.rewrite_data_files(filter="cat = 'odd'", options=opts, dry_run=True))[
        "removed_delete_files_count"] == 1
    out = result(t.rewrite_data_files(filter="cat = 'odd'", options=opts))
    assert out["rewritten_data_files_count"] == 3 and out["removed_delete_files_count"] == 1
    assert rows(t, ("id", "cat")) == before
    left = t.metadata_table("delete_files").collect()
    assert len(left) == 2 and {r["file_path"] for r in left} < deletes
    assert sorted((r["content"], r["partition"]["cat"]) for r in left) == [(1, "even"), (2, None)]
    assert t.metadata.current_snapshot.operation == "replace"
