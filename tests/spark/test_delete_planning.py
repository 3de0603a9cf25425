"""Delete planning on Spark: wherever the delete files are decoded (the driver, a job of their own, the planning
tasks themselves), every plan attaches the same delete files to each data file."""
import pytest


def test_distributed_planning_decodes_many_deletes_once_in_a_labelled_job(spark, warehouse, monkeypatch):
    import contextlib

    import sparkberg
    import sparkberg.planning.scan as scan
    labels = []

    @contextlib.contextmanager
    def record(session, label):
        labels.append(label)
        yield

    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.lbl", "id bigint, p int", partition_by=["p"],
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, CAST(id % 3 AS int) AS p FROM range(0, 30)"))
    t.delete("id % 7 = 0")
    # (with equality deletes: without, the planning job's tasks decode the delete manifests themselves)
    t.delete_by_keys(spark.sql("SELECT 10L AS id, 1 AS p"), ["id"])
    monkeypatch.setattr(scan, "job_description", record)

    def files_and_deletes(mode):
        return {r["file_path"]: sorted(d["file_path"] for d in r["deletes"]) for r in t.plan_files(planning=mode).collect()}
    distributed = files_and_deletes("distributed")
    assert labels == []  # a few delete manifests: decoded on the driver
    local = files_and_deletes("local")
    assert distributed == local and any(distributed.values())
    t.set_properties({"sparkberg.planning.local-max-delete-entries": "0"})  # many: decoded by the executors, in a job
    assert files_and_deletes("distributed") == local
    assert labels == ["DELETE-PLANNING db.lbl"]


def test_without_equality_deletes_planning_tasks_decode_the_delete_manifests_they_need(spark, warehouse,
                                                                                     monkeypatch):
    """Position deletes and deletion vectors apply within their partition: a distributed plan's tasks decode
    the delete manifests whose partitions overlap their data manifests', the driver none; the plan is the
    driver's."""
    import sparkberg
    from sparkberg.planning.entries import EntryDecoder
    cat = sparkberg.catalog(spark, warehouse)
    plans = {}
    for version in ("2", "3"):  # position delete files, deletion vectors
        t = cat.create_table(f"db.scoped{version}", "id bigint, p int", partition_by=["p"],
                             properties={"format-version": version, "write.delete.mode": "merge-on-read"})
        for k in range(3):
            t.append(spark.sql(f"SELECT id, CAST(id % 4 AS int) + {2 * k} AS p FROM range({40 * k}, {40 * k + 40})"))
            t.delete(f"id % 5 = {k} AND p < {2 * k + 3}")
        t.delete("id % 9 = 0 AND p = 0")
        assert t.current_snapshot().summary["total-equality-deletes"] == "0"
        plans[version] = (t, [(r["file_path"], [(d["file_path"], d["content"]) for d in r["deletes"]])
                              for r in t.plan_files(planning="local").collect()],
                          sorted(r[0] for r in t.to_df(planning="local").select("id").collect()))

    def no_driver_decoding(*args, **kwargs):
        raise AssertionError("a manifest decoded on the driver")
    monkeypatch.setattr(EntryDecoder, "load", no_driver_decoding)
    for t, local, rows in plans.values():
        distributed = [(r["file_path"], [(d["file_path"], d["content"]) for d in r["deletes"]])
                       for r in t.plan_files(planning="distributed").collect()]
        assert distributed == local and sum(1 for _, ds in local if ds) > 4 and any(not ds for _, ds in local)
        assert sorted(r[0] for r in t.to_df(planning="distributed").select("id").collect()) == rows
        assert 40 < len(rows) < 100 and 0 not in rows and 1 not in rows and 3 in rows


def _table_with_deletes(spark, warehouse, name):
    """A v2 table partitioned by p, with position deletes and equality deletes."""
    import sparkberg
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table(f"db.{name}", "id bigint, p int", partition_by=["p"],
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, CAST(id % 3 AS int) AS p FROM range(0, 60)"))
    t.delete("id % 7 = 0")
    t.delete_by_keys(spark.sql("SELECT 10L AS id, 1 AS p UNION ALL SELECT 11L, 2"), ["id"])
    return t


def test_plans_through_the_manifest_cache_equal_plans_without_it(spark, warehouse, tmp_path):
    t = _table_with_deletes(spark, warehouse, "cached")

    def plans():
        return [{r["file_path"]: sorted(d["file_path"] for d in r["deletes"])
                 for r in t.plan_files(filter=f, planning=mode).collect()}
                for f in (None, "id < 20", "p = 1") for mode in ("local", "distributed")]
    expected = plans()
    cache_dir = tmp_path / "manifest-cache"
    spark.conf.set("spark.sparkberg.manifest-cache.enabled", "true")
    spark.conf.set("spark.sparkberg.manifest-cache.dir", str(cache_dir))
    try:
        assert plans() == expected  # filling the cache
        kept = sorted(p.name for p in cache_dir.iterdir())
        assert kept and all(name.endswith(".arrow") for name in kept)
        assert plans() == expected  # reading it
        assert sorted(p.name for p in cache_dir.iterdir()) == kept
        t.append(spark.sql("SELECT id, 1 AS p FROM range(100, 103)"))  # a new manifest joins the cached ones
        after = plans()
    finally:
        spark.conf.unset("spark.sparkberg.manifest-cache.enabled")
        spark.conf.unset("spark.sparkberg.manifest-cache.dir")
    assert after == plans() and len(after[0]) == len(expected[0]) + 1


def test_plans_indexing_delete_files_on_the_driver_equal_plans_whose_tasks_index_their_own(spark, warehouse,
                                                                                          monkeypatch):
    """Without equality deletes a distributed plan's tasks decode the delete manifests they need; beyond
    SCOPED_PAIRS_MAX manifest pairs the driver indexes them all, as for equality deletes: the same plan."""
    import sparkberg
    import sparkberg.planning.scan as scan
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.driver_indexed", "id bigint, p int", partition_by=["p"],
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    for k in range(3):
        t.append(spark.sql(f"SELECT id, CAST(id % 3 AS int) AS p FROM range({30 * k}, {30 * k + 30})"))
        t.delete(f"id % 7 = {k}")
    t.append(spark.sql("SELECT id, 1 AS p FROM range(100, 103)"))  # files no delete applies to
    assert t.current_snapshot().summary["total-equality-deletes"] == "0"

    def plan(mode):
        return [(r["file_path"], [(d["file_path"], d["content"]) for d in r["deletes"]])
                for r in t.plan_files(planning=mode).collect()]
    scoped = plan("distributed")
    assert plan("local") == scoped and any(ds for _, ds in scoped) and any(not ds for _, ds in scoped)
    t.set_properties({"sparkberg.planning.scoped-pairs-max": "0"})
    decoded_where = []
    load_many = scan.EntryDecoder.load_many

    def recorded(self, *args, **kwargs):
        decoded_where.append("driver")
        return load_many(self, *args, **kwargs)
    monkeypatch.setattr(scan.EntryDecoder, "load_many", recorded)
    assert plan("distributed") == scoped and decoded_where == ["driver"]


def test_planning_modes_follow_icebergs_table_properties(spark, warehouse, monkeypatch):
    """``read.data-planning-mode`` and ``read.delete-planning-mode`` (Iceberg's table properties, auto | local |
    distributed) choose where manifests are decoded; the ``planning`` argument overrides the first; the plan
    is the same whichever is chosen."""
    import contextlib

    import sparkberg.planning.scan as scan
    from sparkberg.errors import ValidationError
    t = _table_with_deletes(spark, warehouse, "modes")
    labels = []

    @contextlib.contextmanager
    def record(session, label):
        labels.append(label)
        yield
    monkeypatch.setattr(scan, "job_description", record)

    def plan(**kw):
        return sorted((r["file_path"], sorted(d["file_path"] for d in r["deletes"]))
                      for r in t.plan_files(**kw).collect())
    expected = plan(planning="local")
    assert labels == [] and any(ds for _, ds in expected)
    t.set_properties({"read.data-planning-mode": "local"})
    assert scan.plan(spark, t.metadata, t.io, t.current_snapshot()).is_local
    t.set_properties({"read.data-planning-mode": "distributed", "read.delete-planning-mode": "distributed"})
    assert not scan.plan(spark, t.metadata, t.io, t.current_snapshot()).is_local
    assert scan.plan(spark, t.metadata, t.io, t.current_snapshot(), mode="local").is_local  # (the argument wins)
    labels.clear()
    assert plan() == expected and labels == ["DELETE-PLANNING db.modes"]  # (deletes decoded in a job)
    t.set_properties({"read.delete-planning-mode": "local"})
    assert plan() == expected and labels == ["DELETE-PLANNING db.modes"]  # (decoded on the driver)
    t.set_properties({"read.data-planning-mode": "everywhere"})
    with pytest.raises(ValidationError, match="read.data-planning-mode"):
        t.plan_files()
    with pytest.raises(ValidationError, match="planning must be one of"):
        t.plan_files(planning="nowhere")
