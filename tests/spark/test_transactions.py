"""Transactions (``with t.transaction() as tx``): schema, spec, sort-order, property and ref changes and writes
committed as one metadata commit; replayed with their own validation when another writer committed first; nothing
committed, and nothing left on disk, when the block raises or the commit fails."""
import os
import sys

import pytest

import sparkberg
from sparkberg.errors import CommitFailedException, NotSupportedError, SparkbergError, ValidationError

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from restserver import RestServer  # noqa: E402

pytestmark = pytest.mark.spark

DDL = "id bigint, v string"


@pytest.fixture
def cat(spark, warehouse):
    return sparkberg.catalog(spark, warehouse)


def rows(t, **kw):
    return sorted(tuple(r) for r in t.to_df(**kw).collect())


def files_under(t):
    root = t.location.replace("file://", "")
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def metadata_files(t):
    return {p for p in files_under(t) if p.endswith(".metadata.json")}


def unreferenced(t):
    """The files under the table that none of its metadata references."""
    referenced = {p.replace("file://", "").replace("file:", "") for p in
                  [r.path for r in t.metadata_table("all_manifests").select("path").collect()]
                  + [s.manifest_list for s in t.snapshots()]
                  + [r.file_path for r in t.metadata_table("all_files").select("file_path").collect()]}
    return {p for p in files_under(t) if not p.endswith((".metadata.json", ".crc", "version-hint.text"))
            and p not in referenced}


def make(cat, spark, name="db.t", props=None, n=10):
    t = cat.create_table(name, DDL, partition_by=["bucket(2, id)"],
                         properties={"format-version": "2", **(props or {})})
    t.append(spark.createDataFrame([(i, "a") for i in range(n)], DDL))
    return t


def test_evolution_properties_and_writes_commit_once(spark, cat):
    t = make(cat, spark)
    before = metadata_files(t)
    head = t.metadata.current_snapshot_id
    with t.transaction() as tx:
        with tx.update_schema() as u:
            u.add_column("region", "string")
        tx.set_properties({"owner": "etl"})
        tx.append(spark.createDataFrame([(100, "n", "eu")], "id bigint, v string, region string"),
                  snapshot_properties={"batch": "42"})
        tx.delete("id < 3")
        tx.replace_sort_order("id")
        # the transaction reads what it has staged; the table does not see it yet
        assert (100, "n", "eu") in rows(tx)
        assert [(r[0],) for r in rows(tx) if r[0] < 3] == []
        assert t.metadata.current_snapshot_id == head and "region" not in t.spark_schema().names
        assert metadata_files(cat.load_table("db.t")) == before
    assert len(metadata_files(t) - before) == 1  # one commit
    t2 = cat.load_table("db.t")
    assert t2.metadata_location == t.metadata_location
    assert t2.properties["owner"] == "etl" and t2.sort_order().fields
    assert rows(t2) == sorted([(i, "a", None) for i in range(3, 10)] + [(100, "n", "eu")])
    added = [s for s in t2.snapshots() if s.snapshot_id != head]
    assert [s.operation for s in added] == ["append", "overwrite"]  # (a copy-on-write delete)
    assert added[0].parent_snapshot_id == head and added[1].parent_snapshot_id == added[0].snapshot_id
    assert added[0].summary["batch"] == "42"
    assert [e.snapshot_id for e in t2.metadata.snapshot_log][-2:] == [s.snapshot_id for s in added]


def test_spec_change_and_branch_in_one_transaction(spark, cat):
    t = make(cat, spark)
    with t.transaction() as tx:
        tx.update_spec(["bucket(4, id)"])
        tx.create_branch("audit")
        tx.append(spark.createDataFrame([(50, "x")], DDL), branch="audit")
        tx.append(spark.createDataFrame([(51, "y")], DDL))
    t = cat.load_table("db.t")
    assert [str(f.transform) for f in t.spec().fields] == ["bucket[4]"]
    assert rows(t, ref="audit") == sorted([(i, "a") for i in range(10)] + [(50, "x")])
    assert rows(t) == sorted([(i, "a") for i in range(10)] + [(51, "y")])
    spec_of = dict(t.to_df(columns=["id", "_spec_id"]).collect())
    assert spec_of[51] == t.spec().spec_id != spec_of[0]  # (written with the spec the transaction made)


def test_a_block_that_raises_commits_nothing_and_leaves_no_file(spark, cat):
    t = make(cat, spark, props={"commit.manifest.min-count-to-merge": "2"})
    before, location = files_under(t), t.metadata_location
    with pytest.raises(RuntimeError, match="job failed"):
        with t.transaction() as tx:
            tx.update_schema().add_column("region", "string").commit()
            tx.append(spark.createDataFrame([(100, "n", "eu")], "id bigint, v string, region string"))
            tx.delete("id = 1")
            tx.update({"v": "'u'"}, "id = 2")
            raise RuntimeError("job failed")
    assert cat.load_table("db.t").metadata_location == location
    assert files_under(t) == before
    with pytest.raises(SparkbergError, match="transaction .* has ended"):
        tx.append(spark.createDataFrame([(7, "z")], DDL))


def test_replayed_on_another_writers_commit(spark, cat):
    # appends fold their new manifests into merged ones: a replay must still find them, and no file is left over
    t = make(cat, spark, props={"commit.manifest.min-count-to-merge": "2"})
    with t.transaction() as tx:
        tx.append(spark.createDataFrame([(20, "t")], DDL), snapshot_properties={"batch": "7"})
        tx.delete("id = 3")
        cat.load_table("db.t").append(spark.createDataFrame([(30, "other")], DDL))
        tx.append(spark.createDataFrame([(21, "t")], DDL))
    t = cat.load_table("db.t")
    expected = sorted([(i, "a") for i in range(10) if i != 3] + [(20, "t"), (21, "t"), (30, "other")])
    assert rows(t) == expected
    ops = [(s.operation, (s.summary or {}).get("batch")) for s in t.snapshots()]
    assert ops == [("append", None), ("append", None), ("append", "7"), ("overwrite", None), ("append", None)]
    chain = [s.snapshot_id for s in t.metadata.ancestors(t.metadata.current_snapshot_id)]
    assert len(chain) == 5
    assert unreferenced(t) == set()  # the replaced attempt's lists and the folded manifests are gone


def test_replay_validates_against_the_other_writers_commit(spark, cat):
    # the delete is planned on the transaction's state; the other writer's append to the rows it deletes is a
    # conflict when the delete is replayed, although the transaction's own append came in between
    t = make(cat, spark, props={"commit.retry.num-retries": "1", "commit.retry.min-wait-ms": "1"})
    with pytest.raises(CommitFailedException, match="conflict"):
        with t.transaction() as tx:
            tx.append(spark.createDataFrame([(40, "t")], DDL))
            tx.delete("id < 5")
            other = cat.load_table("db.t")
            other.append(spark.createDataFrame([(2, "late")], DDL))
    t = cat.load_table("db.t")
    assert t.metadata_location == other.metadata_location
    assert rows(t) == sorted([(i, "a") for i in range(10)] + [(2, "late")])
    assert unreferenced(t) == set()


def test_a_conflicting_schema_change_fails_the_transaction(spark, cat):
    t = make(cat, spark, props={"commit.retry.num-retries": "0"})
    with pytest.raises(CommitFailedException):
        with t.transaction() as tx:
            tx.update_schema().add_column("a", "int").commit()
            cat.load_table("db.t").update_schema().add_column("b", "int").commit()
    assert cat.load_table("db.t").spark_schema().names == ["id", "v", "b"]


def test_rule_broken_inside_a_transaction_fails_it_cleanly(spark, cat):
    t = make(cat, spark)
    location = t.metadata_location
    with pytest.raises(ValidationError, match="does not exist"):
        with t.transaction() as tx:
            tx.set_properties({"x": "1"})
            tx.append(spark.createDataFrame([(9, "b")], DDL), branch="nope")
    assert cat.load_table("db.t").metadata_location == location


def test_what_a_transaction_cannot_hold(spark, cat):
    t = make(cat, spark)
    location = t.metadata_location
    for call in (lambda tx: tx.expire_snapshots(), lambda tx: tx.rewrite_data_files(),
                 lambda tx: tx.rewrite_manifests(), lambda tx: tx.remove_orphan_files(),
                 lambda tx: tx.rewrite_position_delete_files()):
        with pytest.raises(NotSupportedError, match="cannot be part of a transaction"):
            with t.transaction() as tx:
                call(tx)
    with pytest.raises(NotSupportedError, match="do not nest"):
        with t.transaction() as tx:
            tx.transaction()
    assert cat.load_table("db.t").metadata_location == location
    with t.transaction():
        pass
    assert cat.load_table("db.t").metadata_location == location
    with pytest.raises(SparkbergError, match="read-only"):
        with sparkberg.load_table(spark, t.location).transaction():
            pass


def test_merge_and_upsert_in_a_transaction_on_v3_keep_row_lineage(spark, cat):
    t = make(cat, spark, props={"format-version": "3", "write.merge.mode": "merge-on-read"})
    ids = dict(t.to_df(columns=["id", "_row_id"]).collect())
    with t.transaction() as tx:
        tx.merge(spark.createDataFrame([(1, "m"), (200, "new")], DDL), "t.id = s.id") \
            .when_matched_update({"v": "s.v"}).when_not_matched_insert_all().execute()
        tx.upsert(spark.createDataFrame([(2, "u")], DDL), ["id"])
    t = cat.load_table("db.t")
    got = {r.id: (r.v, r._row_id) for r in t.to_df(columns=["id", "v", "_row_id"]).collect()}
    assert got[1] == ("m", ids[1]) and got[2][0] == "u" and got[5] == ("a", ids[5])
    assert got[200][1] not in ids.values()


@pytest.mark.parametrize("kind", ["sql", "rest"])
def test_one_commit_and_a_replay_through_sql_and_rest_catalogs(spark, tmp_path, kind):
    if kind == "sql":
        cat, server = sparkberg.catalog(spark, f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh")), None
    else:
        server = RestServer(str(tmp_path / "server"))
        cat = sparkberg.catalog(spark, server.uri)
    try:
        cat.create_namespace("db")
        t = make(cat, spark, props={"format-version": "3"})
        with t.transaction() as tx:
            with tx.update_schema() as u:
                u.add_column("region", "string")
            tx.append(spark.createDataFrame([(100, "n", "eu")], "id bigint, v string, region string"))
            cat.load_table("db.t").append(spark.createDataFrame([(30, "other")], DDL))  # (the staged base is stale)
            tx.delete("id < 2")
            tx.set_properties({"owner": "etl"})
        t = cat.load_table("db.t")
        assert rows(t) == sorted([(i, "a", None) for i in range(2, 10)] + [(30, "other", None), (100, "n", "eu")])
        assert t.properties["owner"] == "etl"
        assert [s.operation for s in t.snapshots()] == ["append", "append", "append", "overwrite"]
        row_ids = [r._row_id for r in t.to_df(columns=["_row_id"]).collect()]
        assert len(set(row_ids)) == len(row_ids) == 10
    finally:
        if server is not None:
            server.close()
            assert server.violations == []
