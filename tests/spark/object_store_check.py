"""One table's life on an object store, for the processes that check a session of another kind (a multi-process
cluster: cluster_check.py; Spark Connect: connect_check.py): the catalog's FileIO properties are the only
credentials, and must reach the executors (or the Connect server's workers) with the tasks.

    check(spark, "s3://bucket", json.load(open(properties_file)))"""
import sparkberg


def check(spark, root: str, properties: dict) -> None:
    """Create, append, delete, update, merge, read back, travel in time and read the changelog of a v3
    merge-on-read table in a file-system catalog at ``root``; raise AssertionError on a wrong answer."""
    cat = sparkberg.catalog(spark, f"{root}/wh", properties=properties)
    t = cat.create_table("db.t", "id bigint, v string", partition_by=["bucket(2, id)"], properties={
        "format-version": "3", "write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read",
        "write.merge.mode": "merge-on-read"})
    t = t.append(spark.sql("SELECT id, 'a' AS v FROM range(40)").repartition(4))
    first = t.current_snapshot().snapshot_id
    t = t.delete("id < 4")
    t = t.update({"v": "'b'"}, "id >= 30")
    src = spark.sql("SELECT 5L AS id, 'm' AS v UNION ALL SELECT 100L, 'n'")
    t.merge(src, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
    t = cat.load_table("db.t")
    expected = {i: "b" if i >= 30 else "a" for i in range(4, 40)}
    expected.update({5: "m", 100: "n"})
    got = {r.id: r.v for r in t.to_df().collect()}
    assert got == expected, got
    assert t.to_df(snapshot_id=first).count() == 40
    changes = sorted(tuple(r) for r in t.changes(first).groupBy("_change_type").count().collect())
    assert changes == [("DELETE", 4 + 10 + 1), ("INSERT", 10 + 1 + 1)], changes  # (the updates as pairs)
    assert all(p.startswith(root) for p in (r["file_path"] for r in t.metadata_table("all_files").collect()))
