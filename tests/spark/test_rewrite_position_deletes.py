"""Position delete compaction (``Table.rewrite_position_delete_files``): fewer delete files with the same rows
deleted, dangling deletes dropped, v2 position deletes of a v3 table turned into deletion vectors, options
checked."""
import pytest

import sparkberg
from sparkberg.operations.request import MAIN_REQUEST
from commits import Changes, commit_changes
from sparkberg.errors import ValidationError


def ids(t):
    return sorted(r[0] for r in t.to_df().select("id").collect())


def delete_files(t):
    return {d["file_path"] for r in t.plan_files().collect() for d in r["deletes"]}


def result(df):
    (row,), = [df.collect()]
    return tuple(row)


@pytest.fixture
def mor(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    cat.create_namespace("db")
    t = cat.create_table("db.t", "id bigint, p int", partition_by=["p"],
                         properties={"write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, CAST(id % 2 AS int) AS p FROM range(0, 40)"))
    for k in range(3):
        t.delete(f"id % 10 = {k}")  # (three position delete files per data file)
    return cat, t


def test_position_deletes_are_compacted_per_partition(spark, mor):
    cat, t = mor
    rows, before = ids(t), delete_files(t)
    assert result(t.rewrite_position_delete_files()) == (0, 0, 0, 0)  # (fewer than min-input-files)
    location = t.metadata_location
    planned = result(t.rewrite_position_delete_files(options={"rewrite-all": "true"}, dry_run=True))
    assert cat.load_table("db.t").metadata_location == location and delete_files(t) == before  # (nothing done)
    rewritten, added, old_bytes, new_bytes = result(t.rewrite_position_delete_files(options={"rewrite-all": "true"}))
    assert planned == (rewritten, added, old_bytes, 0)  # a dry run's counts are the real run's
    after = delete_files(t)
    assert rewritten == len(before) and added == len(after) == 2  # (one per partition p=0, p=1)
    assert not after & before and old_bytes > 0 < new_bytes
    assert ids(t) == rows == ids(cat.load_table("db.t"))
    assert t.current_snapshot().summary["operation"] == "replace"


def test_dangling_deletes_are_dropped(spark, mor):
    cat, t = mor
    rows, every = ids(t), delete_files(t)
    gone = sorted(r["file_path"] for r in t.plan_files().collect())[0]
    # (a data file removed, its deletes left behind)
    commit_changes(t, Changes("delete", [], [], {(gone, None)}), MAIN_REQUEST)
    rows_left, used = ids(t), delete_files(t)
    assert len(rows_left) < len(rows) and used < every
    rewritten, added, _, _ = result(t.rewrite_position_delete_files(options={"rewrite-all": "true"}))
    assert rewritten == len(every) and added == 1  # (the dangling files dropped, the others compacted)
    assert ids(t) == rows_left


def test_a_v3_table_gets_deletion_vectors(spark, mor):
    cat, t = mor
    rows = ids(t)
    t.upgrade_format_version(3)
    planned = result(t.rewrite_position_delete_files(dry_run=True))
    rewritten, added, old_bytes, _ = result(t.rewrite_position_delete_files())
    assert planned == (rewritten, added, old_bytes, 0)
    formats = {d["file_format"] for r in t.plan_files().collect() for d in r["deletes"]}
    assert formats == {"puffin"} and rewritten == 3 and added >= 1
    assert ids(t) == rows
    t.delete("id = 15")  # (a later delete merges into the DV)
    assert ids(t) == [i for i in rows if i != 15]


def test_bad_options_are_named(spark, mor):
    _, t = mor
    with pytest.raises(ValidationError, match="unknown option"):
        t.rewrite_position_delete_files(options={"max-concurrent": "2"})
    with pytest.raises(ValidationError, match="min-input-files must be at least 1"):
        t.rewrite_position_delete_files(options={"min-input-files": "0"})
