"""The delete matching by shuffle joins (planning with very many delete files) equals the spec's rules row at
a time (DeleteIndex), on generated data and delete files: sequence numbers, partitions, global equality deletes,
DVs, referenced files, bounds."""
from hypothesis import HealthCheck, given, settings, strategies as st

from sparkberg.planning.matching import DeleteIndex, eq_delete_sql, sortable_key
from sparkberg.planning.scan import DELETE_STRUCT, attach_deletes
from sparkberg.spec import types as T
from sparkberg.spec.values import to_bytes

PATHS = ["/w/a", "/w/b", "/w/c", "/w/d"]
keys = st.none() | st.integers(0, 4).map(lambda v: sortable_key(T.LONG, to_bytes(T.LONG, v)))
# equality column stats of a file: (has bounds maps, null count, value count, lower, upper)
stats = st.none() | st.tuples(st.booleans(), st.none() | st.integers(0, 2), st.none() | st.just(2), keys, keys)
data_files = st.lists(st.tuples(st.sampled_from([0, 1]), st.integers(0, 2), st.integers(1, 6), stats), min_size=1,
                      max_size=4)
delete_files = st.lists(st.tuples(
    st.sampled_from(["pos", "eq", "dv"]), st.sampled_from([0, 1]), st.integers(0, 2), st.integers(1, 6),
    st.sampled_from([None] + PATHS), st.sampled_from([None] + PATHS), st.sampled_from([None] + PATHS), stats),
    max_size=6)
STATS_DDL = "_eq_stats map<int, struct<nulls: bigint, vals: bigint, lower: binary, upper: binary>>, _has_bounds boolean"


def _stats_columns(s):
    if s is None:
        return None, None
    has, nulls, vals, lower, upper = s
    return {1: {"nulls": nulls, "vals": vals, "lower": lower, "upper": upper}}, has


def _stats(s):
    return None if s is None else (s[0], {1: s[1:]})


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data_files, delete_files, st.booleans())
def test_joins_equal_the_rules(spark, data, deletes, required):
    """With equality deletes pruned by column stats."""
    data_rows = [(PATHS[i], spec, {"p": None if spec == 1 else p}, seq, *_stats_columns(s))
                 for i, (spec, p, seq, s) in enumerate(data)]
    delete_rows, index_rows = [], []
    for i, (kind, spec, p, seq, ref, lower, upper, s) in enumerate(deletes):
        content = 2 if kind == "eq" else 1
        fmt = "puffin" if kind == "dv" else "parquet"
        ref = ref or PATHS[0] if kind == "dv" else (None if kind == "eq" else ref)
        d = {"file_path": f"/w/del-{i}", "content": content, "file_format": fmt, "equality_ids": [1] if content == 2
             else None, "referenced_data_file": ref, "content_offset": None, "content_size_in_bytes": None,
             "record_count": 1}
        bounds = (lower, upper) if kind == "pos" else (None, None)
        partition = {"p": None if spec == 1 else p}
        s = s if content == 2 else None
        delete_rows.append((spec, partition, seq, *[d[k] for k in DELETE_STRUCT], *bounds, *_stats_columns(s)))
        index_rows.append((spec, tuple(partition.items()), seq, d, bounds, _stats(s)))
    data_df = spark.createDataFrame(data_rows, "file_path string, spec_id int, partition struct<p: int>, "
                                               f"data_sequence_number bigint, {STATS_DDL}")
    deletes_df = spark.createDataFrame(delete_rows, "spec_id int, partition struct<p: int>, sequence_number bigint, "
                                                    "file_path string, content int, file_format string, "
                                                    "equality_ids array<int>, referenced_data_file string, "
                                                    "content_offset bigint, content_size_in_bytes bigint, "
                                                    f"record_count bigint, _path_lower string, _path_upper string, {STATS_DDL}")
    req = frozenset({1}) if required else frozenset()

    def rule(**kw):
        return eq_delete_sql(data_stats="_eq_stats", data_has_bounds="_has_bounds", required=req,
                             prunable=frozenset({1}), **kw)
    index = DeleteIndex(index_rows, {1}, req, frozenset({1}))
    expected = {path: sorted(d["file_path"] for d in index.for_file(spec, tuple(part.items()), seq, path,
                                                                      _stats(s)))
                for (path, spec, part, seq, *_), (*_, s) in zip(data_rows, data)}
    join = attach_deletes(data_df, deletes_df, [1], eq_rule=rule)
    got = {r["file_path"]: sorted(d["file_path"] for d in r["deletes"]) for r in join.collect()}
    assert got == expected


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
    monkeypatch.setattr(scan, "DRIVER_DELETE_ENTRIES_MAX", 0)  # many: decoded by the executors, in one job
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


def test_plans_with_very_many_delete_files_match_by_joins_like_the_matcher(spark, warehouse, monkeypatch):
    """Above MATCHER_DELETES_MAX delete files planning matches them by shuffle joins: the same plan."""
    import sparkberg.planning.scan as scan
    t = _table_with_deletes(spark, warehouse, "joins")
    t.append(spark.sql("SELECT id, 1 AS p FROM range(100, 103)"))

    def plan(mode):
        return [(r["file_path"], [(d["file_path"], d["content"]) for d in r["deletes"]])
                for r in t.plan_files(planning=mode).collect()]
    matched = plan("distributed")
    assert plan("local") == matched and any(ds for _, ds in matched) and any(not ds for _, ds in matched)
    monkeypatch.setattr(scan, "MATCHER_DELETES_MAX", 0)
    assert sorted(plan("distributed")) == sorted(matched)
