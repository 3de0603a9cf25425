"""Incremental append reads and the changelog: Java's semantics on copy-on-write tables, and exact changes of
merge-on-read ones (position deletes, deletion vectors, equality deletes), which Java refuses."""
import random
from collections import Counter

import pytest

import sparkberg
from sparkberg.errors import ValidationError

pytestmark = pytest.mark.spark
CONFIGS = [(2, "copy-on-write"), (2, "merge-on-read"), (3, "copy-on-write"), (3, "merge-on-read")]


def table(spark, warehouse, version, mode, name="t", identifier=False):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table(f"db.{name}", "id bigint NOT NULL, cat string, n int" if identifier else
                         "id bigint, cat string, n int", partition_by=["cat"], properties={
                             "format-version": str(version), "write.update.mode": mode, "write.merge.mode": mode,
                             "write.delete.mode": mode})
    if identifier:
        with t.update_schema() as u:
            u.set_identifier_fields("id")
    return t


def rows(spark, sql):
    return spark.sql(sql)


def evens_odds(spark, lo, hi, n=0):
    return spark.sql(f"SELECT id, CASE WHEN id % 2 = 0 THEN 'even' ELSE 'odd' END AS cat, {n} AS n "
                     f"FROM range({lo}, {hi})")


def collected(df):
    return sorted(tuple(r) for r in df.collect())


@pytest.mark.parametrize("version,mode", CONFIGS)
def test_incremental_reads_take_the_rows_of_the_appends_in_the_range(spark, warehouse, version, mode):
    t = table(spark, warehouse, version, mode)
    t.append(evens_odds(spark, 0, 4))
    s1 = t.current_snapshot().snapshot_id
    t.append(evens_odds(spark, 4, 6))
    s2 = t.current_snapshot().snapshot_id
    t.delete("id = 4")  # (not an append; and the rows it removed are still read, as Java reads them)
    t.update({"n": "n + 1"}, "id = 0")
    t.overwrite(evens_odds(spark, 100, 102), "id = 1")
    t.append(evens_odds(spark, 6, 7))
    s6 = t.current_snapshot().snapshot_id
    assert collected(t.to_df(start_snapshot_id=s1)) == [(4, "even", 0), (5, "odd", 0), (6, "even", 0)]
    assert collected(t.to_df(start_snapshot_id=s1, end_snapshot_id=s2)) == [(4, "even", 0), (5, "odd", 0)]
    assert collected(t.to_df(start_snapshot_id=s2, end_snapshot_id=s6, columns=["id"])) == [(6,)]
    assert collected(t.to_df(start_snapshot_id=s1, filter="cat = 'odd'")) == [(5, "odd", 0)]
    # the table's schema, for rows written before a column was added
    with t.update_schema() as u:
        u.add_column("extra", "string")
    assert collected(t.to_df(start_snapshot_id=s1, end_snapshot_id=s2)) == [(4, "even", 0, None), (5, "odd", 0, None)]


def test_incremental_read_errors_name_the_problem(spark, warehouse):
    t = table(spark, warehouse, 2, "copy-on-write")
    t.append(evens_odds(spark, 0, 2))
    s1 = t.current_snapshot().snapshot_id
    t.create_branch("side")
    t.append(evens_odds(spark, 2, 4), branch="side")
    side = t.metadata.refs["side"].snapshot_id
    t.append(evens_odds(spark, 4, 6))
    s3 = t.current_snapshot().snapshot_id
    with pytest.raises(ValidationError, match=f"start snapshot {side} is not an ancestor of the end snapshot {s3}"):
        t.to_df(start_snapshot_id=side)
    with pytest.raises(ValidationError, match="cannot find the end snapshot 12345"):
        t.to_df(start_snapshot_id=s1, end_snapshot_id=12345)
    with pytest.raises(ValidationError, match="is the end snapshot"):
        t.to_df(start_snapshot_id=s3, end_snapshot_id=s3)
    with pytest.raises(ValidationError, match="needs start_snapshot_id"):
        t.to_df(end_snapshot_id=s3)
    with pytest.raises(ValidationError, match="cannot also time travel"):
        t.to_df(start_snapshot_id=s1, snapshot_id=s3)
    # a range across an expired snapshot
    t.append(evens_odds(spark, 6, 8))
    t.expire_snapshots(snapshot_ids=[s3])
    with pytest.raises(ValidationError, match=f"crosses snapshot {s3}, which has expired"):
        t.to_df(start_snapshot_id=s1)
    with pytest.raises(ValidationError, match=f"crosses snapshot {s3}, which has expired"):
        t.changes(s1)


@pytest.mark.parametrize("version,mode", CONFIGS)
def test_the_changelog_of_deletes_updates_and_merges(spark, warehouse, version, mode):
    t = table(spark, warehouse, version, mode)
    t.append(evens_odds(spark, 0, 6))
    s0 = t.current_snapshot().snapshot_id
    t.delete("id = 3")
    t.update({"n": "n + 5"}, "id = 4")
    src = spark.createDataFrame([(0, "even", 9), (7, "odd", 1)], "id bigint, cat string, n int")
    t.merge(src, "t.id = s.id").when_matched_update({"n": "s.n"}).when_not_matched_insert_all().execute()
    snaps = [s.snapshot_id for s in t.metadata.snapshots][1:]
    raw = [(3, "odd", 0, "DELETE", 0, snaps[0]),
           (4, "even", 0, "DELETE", 1, snaps[1]), (4, "even", 5, "INSERT", 1, snaps[1]),
           (0, "even", 0, "DELETE", 2, snaps[2]), (0, "even", 9, "INSERT", 2, snaps[2]),
           (7, "odd", 1, "INSERT", 2, snaps[2])]
    assert collected(t.changes(s0)) == sorted(raw)
    updates = [(i, c, n, {"DELETE": "UPDATE_BEFORE", "INSERT": "UPDATE_AFTER"}[k] if i in (0, 4) else k, o, s)
               for i, c, n, k, o, s in raw]
    assert collected(t.changes(s0, identifier_columns=["id"])) == sorted(updates)
    assert collected(t.changes(s0, identifier_columns=["id"], compute_updates=False)) == sorted(raw)
    if version == 3:  # (row lineage keeps an updated row's _row_id: the key without identifier columns)
        assert collected(t.changes(s0, compute_updates=True)) == sorted(updates)
        ids = collected(t.changes(s0, columns=["id", "n", "_row_id"]))
        assert {(i, k) for i, _, _, k, _, _ in ids} == {(3, "DELETE"), (4, "DELETE"), (4, "INSERT"), (0, "DELETE"),
                                                        (0, "INSERT"), (7, "INSERT")}
        by_id = {}
        for i, _, row_id, *_ in ids:
            by_id.setdefault(i, set()).add(row_id)
        assert all(len(v) == 1 for k, v in by_id.items() if k in (0, 4))  # (before and after: one row id)
    else:
        with pytest.raises(ValidationError, match="compute_updates needs identifier columns"):
            t.changes(s0, compute_updates=True)
    # the whole history, and its net changes: every row once, as it is now
    assert len(collected(t.changes())) == 6 + len(raw)
    net = collected(t.changes(net_changes=True))
    assert sorted((i, c, n, k) for i, c, n, k, _, _ in net) == sorted(
        (i, c, n, "INSERT") for i, c, n in collected(t.to_df()))
    with pytest.raises(ValidationError, match="net_changes cannot be combined with compute_updates"):
        t.changes(net_changes=True, compute_updates=True)
    with pytest.raises(ValidationError, match="identifier column 'nope' is not a column of the table"):
        t.changes(s0, identifier_columns=["nope"])
    # a view, named as Java names it
    assert t.create_changelog_view(start_snapshot_id=s0) == "t_changes"
    assert spark.sql("SELECT count(*) FROM t_changes WHERE _change_type = 'DELETE'").first()[0] == 3
    assert t.create_changelog_view("mine", start_snapshot_id=s0, filter="id = 7") == "mine"
    assert collected(spark.table("mine")) == [(7, "odd", 1, "INSERT", 2, snaps[2])]


@pytest.mark.parametrize("version,mode", CONFIGS)
def test_a_compaction_in_the_range_is_no_change(spark, warehouse, version, mode):
    t = table(spark, warehouse, version, mode)
    for lo in range(0, 8, 2):
        t.append(evens_odds(spark, lo, lo + 2))
    t.delete("id = 5")
    s = t.current_snapshot().snapshot_id
    t.rewrite_data_files(options={"min-input-files": "1"})
    t.append(evens_odds(spark, 8, 9))
    assert t.current_snapshot().operation == "append"
    assert collected(t.changes(s)) == [(8, "even", 0, "INSERT", 0, t.current_snapshot().snapshot_id)]
    assert {r[3] for r in t.changes().collect()} == {"INSERT", "DELETE"}


def test_changelog_by_timestamps_as_java_picks_the_snapshots(spark, warehouse):
    t = table(spark, warehouse, 2, "copy-on-write")
    for lo in range(0, 6, 2):
        t.append(evens_odds(spark, lo, lo + 2))
    s = t.metadata.snapshots
    ordinals = lambda df: sorted({(r[4], r[5]) for r in df.collect()})  # noqa: E731
    # from a snapshot's own time: that snapshot is the exclusive start, as in Java
    assert ordinals(t.changes(start_timestamp_ms=s[1].timestamp_ms)) == [(0, s[2].snapshot_id)]
    assert ordinals(t.changes(start_timestamp_ms=s[1].timestamp_ms - 1)) in (
        [(0, s[1].snapshot_id), (1, s[2].snapshot_id)], [(0, s[2].snapshot_id)])
    assert ordinals(t.changes(start_timestamp_ms=0, end_timestamp_ms=s[0].timestamp_ms)) == [(0, s[0].snapshot_id)]
    assert t.changes(start_timestamp_ms=s[2].timestamp_ms + 10_000).count() == 0
    with pytest.raises(ValidationError, match="must be before its end"):
        t.changes(start_timestamp_ms=5, end_timestamp_ms=5)
    with pytest.raises(ValidationError, match="not both"):
        t.changes(s[0].snapshot_id, start_timestamp_ms=5)


def test_equality_deletes_and_upserts_in_the_changelog(spark, warehouse):
    t = table(spark, warehouse, 2, "merge-on-read", identifier=True)
    t.append(evens_odds(spark, 0, 6))
    s0 = t.current_snapshot().snapshot_id
    t.upsert(spark.createDataFrame([(2, "even", 7), (9, "odd", 1)], "id bigint, cat string, n int"), "id")
    t.delete_by_keys(spark.createDataFrame([(5, "odd")], "id bigint, cat string"), ["id"])
    s1, s2 = (s.snapshot_id for s in t.metadata.snapshots[1:])
    assert collected(t.changes(s0)) == sorted([
        (2, "even", 0, "DELETE", 0, s1), (2, "even", 7, "INSERT", 0, s1), (9, "odd", 1, "INSERT", 0, s1),
        (5, "odd", 0, "DELETE", 1, s2)])
    # the table's identifier fields are the key
    assert collected(t.changes(s0, compute_updates=True))[:2] == [
        (2, "even", 0, "UPDATE_BEFORE", 0, s1), (2, "even", 7, "UPDATE_AFTER", 0, s1)]


def test_a_changelog_with_map_columns_needs_a_key(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.m", "id bigint, tags map<string, string>")
    t.append(spark.sql("SELECT 1L AS id, map('a', 'b') AS tags"))
    with pytest.raises(ValidationError, match=r"map columns \(tags\) needs identifier columns"):
        t.changes()
    assert [r[0] for r in t.changes(identifier_columns=["id"]).collect()] == [1]


@pytest.mark.parametrize("version,mode", CONFIGS)
def test_the_changelog_of_a_range_takes_its_start_to_its_end(spark, warehouse, version, mode):
    """Property: for random appends, deletes, updates, merges and overwrites, the start snapshot's rows with the
    changelog's deletes taken out and its inserts put in are the end snapshot's rows, for every range."""
    rng = random.Random(version * 10 + len(mode))
    t = table(spark, warehouse, version, mode)
    t.append(evens_odds(spark, 0, 8))
    next_id = 8
    for _ in range(6):
        op = rng.choice(["append", "delete", "update", "merge", "overwrite"])
        k = rng.randrange(0, next_id)
        if op == "append":
            t.append(evens_odds(spark, next_id, next_id + 2, rng.randrange(5)))
            next_id += 2
        elif op == "delete":
            t.delete(f"id % 5 = {k % 5}")
        elif op == "update":
            t.update({"n": f"n + {rng.randrange(1, 4)}"}, f"id % 3 = {k % 3}")
        elif op == "merge":
            src = spark.createDataFrame([(k, "even" if k % 2 == 0 else "odd", 50), (next_id, "odd", 1)],
                                        "id bigint, cat string, n int")
            next_id += 1
            t.merge(src, "t.id = s.id").when_matched_update({"n": "s.n"}).when_not_matched_insert_all().execute()
        else:
            t.overwrite(evens_odds(spark, next_id, next_id + 1, 3), f"id = {k}")
            next_id += 1
    snaps = [s.snapshot_id for s in t.metadata.snapshots]
    state = {s: Counter(tuple(r) for r in t.to_df(snapshot_id=s).collect()) for s in snaps}
    for start, end in [(snaps[0], snaps[-1]), (snaps[1], snaps[4]), (snaps[3], snaps[5])]:
        got = Counter(state[start])
        for i, c, n, kind, *_ in t.changes(start, end).collect():
            if kind == "DELETE":
                got[(i, c, n)] -= 1
            else:
                got[(i, c, n)] += 1
        assert +got == state[end] and all(v >= 0 for v in got.values()), (start, end)
        net = Counter()
        for i, c, n, kind, *_ in t.changes(start, end, net_changes=True).collect():
            net[(i, c, n)] += 1 if kind == "INSERT" else -1
        assert +(state[start] + +net) - +(-net) == state[end]


def test_a_one_snapshot_changelog_reads_only_what_the_snapshot_touched(spark, warehouse):
    """A merge-on-read delete in one partition of a table of many: its changelog plans from the snapshot's own
    manifests and the manifests of that partition, and reads that partition's file."""
    from sparkberg.planning.changes import snapshot_change
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.wide", "id bigint, p int", partition_by=["p"], properties={
        "format-version": "3", "write.delete.mode": "merge-on-read"})
    for p in range(12):
        t.append(spark.sql(f"SELECT id, {p} AS p FROM range({p * 10}, {p * 10 + 10})"))
    t.delete("id = 55")
    read = []

    class Counting:
        def __init__(self, io):
            self.io = io

        def read(self, path):
            read.append(path)
            return self.io.read(path)

        def __getattr__(self, name):
            return getattr(self.io, name)
    change = snapshot_change(t.metadata, Counting(t.io), t.current_snapshot(), 0)
    assert change.before.column("file_path").to_pylist() == change.after.column("file_path").to_pylist()
    assert len(change.before) == 1
    manifests = [p for p in read if not p.split("/")[-1].startswith("snap-")]
    assert len(manifests) <= 3, manifests  # (its delete manifest, and the one data manifest of partition 5)
    assert collected(t.changes(t.metadata.snapshots[-2].snapshot_id)) == [
        (55, 5, "DELETE", 0, t.current_snapshot().snapshot_id)]


@pytest.mark.parametrize("version,mode", [(2, "merge-on-read"), (3, "copy-on-write")])
def test_change_planning_on_the_executors_plans_what_the_driver_plans(spark, warehouse, version, mode):
    """``read.data-planning-mode=distributed``: a changelog and an incremental read decode their manifests in Spark
    jobs (the planner's DataFrame path), and find the same changes as on the driver."""
    t = table(spark, warehouse, version, mode)
    t.append(evens_odds(spark, 0, 8))
    s0 = t.current_snapshot().snapshot_id
    t.append(evens_odds(spark, 8, 12))
    t.delete("id IN (1, 8)")
    t.update({"n": "n + 1"}, "id = 2")
    t.append(evens_odds(spark, 12, 14))
    local = (collected(t.changes(s0)), collected(t.changes(s0, net_changes=True)),
             collected(t.to_df(start_snapshot_id=s0)))
    t.set_properties({"read.data-planning-mode": "distributed"})
    distributed = (collected(t.changes(s0)), collected(t.changes(s0, net_changes=True)),
                   collected(t.to_df(start_snapshot_id=s0)))
    assert distributed == local and len(local[0]) == 4 + 2 + 2 + 2
