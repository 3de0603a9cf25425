"""A MERGE whose ON clause only equates keys and whose clauses are unconditional (an upsert, a delete of the
matched rows, an insert of the new ones) runs on the driver of a merge-on-read table: the source collected, the
target's keys read and joined there, the rows and deletes written there. It leaves what the Spark path leaves:
the same rows, row ids and sequence numbers, over the deletes already there; the same error, and nothing
committed, for a target row two source rows match; and any other MERGE goes to Spark."""
import pytest

import sparkberg
from sparkberg.spark import tuning
import sparkberg.operations.merge as merge
from sparkberg.errors import ValidationError

pytestmark = pytest.mark.spark

SHAPES = {  # (matched clause, not matched clause) as MergeBuilder calls
    "upsert": (("when_matched_update_all",), ("when_not_matched_insert_all",)),
    "delete matched, insert new": (("when_matched_delete",), ("when_not_matched_insert_all",)),
    "insert new only": ((), ("when_not_matched_insert_all",)),
    "update only": (("when_matched_update_all",), ()),
    "delete only": (("when_matched_delete",), ()),
}


def _table(cat, name: str, spark, version: int, key: str):
    t = cat.create_table(name, f"id {key}, p string, v string, x double", partition_by=["p", "bucket(4, id)"],
                         properties={"format-version": str(version), "write.merge.mode": "merge-on-read",
                                     "write.delete.mode": "merge-on-read"})
    for lo in (0, 300):  # (two files in each partition)
        t.append(spark.sql(f"SELECT CAST(id AS {key}) AS id, CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END AS p, "
                           f"concat('v', id) AS v, id / 10 AS x FROM range({lo}, {lo + 300})"))
    t.delete("id % 50 = 3")  # (a DV or position deletes, and an equality delete, already there)
    t.delete_by_keys(spark.sql(f"SELECT CAST(8 AS {key}) AS id, 'a' AS p UNION ALL SELECT CAST(410 AS {key}), 'a'"),
                     ["id"])
    return t


def _state(cat, name: str, version: int, first_new: int | None):
    """The table's rows (a row id the merge gave, from ``first_new`` on, as "new": the ways order new rows alike
    only by chance), its files' sizes and the snapshot's counts."""
    t = cat.load_table(name)
    cols = ["id", "p", "v", "x"] + (["_row_id", "_last_updated_sequence_number"] if version == 3 else [])
    rows = [tuple(r) for r in t.to_df(columns=cols).collect()]
    if version == 3:
        assert len({r[4] for r in rows}) == len(rows)
        rows = [r[:4] + ("new" if r[4] >= first_new else r[4], r[5]) for r in rows]
    return (sorted(rows, key=lambda r: (r[0] is not None, r)),
            sorted(r["record_count"] for r in t.plan_files().collect()),
            {k: v for k, v in t.metadata.current_snapshot.summary.items() if k.endswith(("-records", "-files"))})


@pytest.mark.parametrize("version,key", [(3, "bigint"), (2, "bigint"), (3, "string"), (2, "int")])
def test_a_merge_on_the_driver_leaves_what_spark_leaves(spark, warehouse, monkeypatch, version, key):
    ran = []
    real = merge.MergeBuilder._on_driver
    monkeypatch.setattr(merge.MergeBuilder, "_on_driver", lambda *a: ran.append(real(*a)) or ran[-1])
    # the source: matches (one a deleted row), new keys, a null key, ids of a narrower type than a bigint target
    src_key = "int" if key == "bigint" else key
    source = spark.sql(f"SELECT CAST(id AS {src_key}) AS id, CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END AS p, "
                       "concat('s', id) AS v, id / 100 AS x FROM range(290, 330) "
                       f"UNION ALL SELECT CAST(NULL AS {src_key}), 'a', 'null key', 0D "
                       f"UNION ALL SELECT CAST(553 AS {src_key}), 'b', 'deleted row', 1D")
    results = {}
    for where in ("driver", "spark"):
        if where == "spark":
            monkeypatch.setattr(tuning, "DRIVER_MERGE_ROWS", -1)
        cat = sparkberg.catalog(spark, f"{warehouse}/{where}")
        t = _table(cat, "db.t", spark, version, key)
        base = t.metadata.current_snapshot_id
        for shape, (matched, not_matched) in SHAPES.items():  # (each shape merges into the table as built)
            t = cat.load_table("db.t").rollback_to_snapshot(base)
            ran.clear()
            first_new = t.metadata.next_row_id
            m = t.merge(source, "t.id = s.id")
            for call in matched + not_matched:
                m = getattr(m, call)()
            m.execute()
            assert [isinstance(r, merge._Done) for r in ran] == [where == "driver"], (shape, ran)
            results[where, shape] = _state(cat, "db.t", version, first_new)
    for shape in SHAPES:
        assert results["driver", shape] == results["spark", shape], shape
    rows = {r[0]: r for r in results["driver", "upsert"][0]}
    k = (lambda i: str(i)) if key == "string" else (lambda i: i)
    assert rows[k(295)][2] == "s295" and rows[k(10)][2] == "v10" and k(410) not in rows
    assert rows[k(553)][2] == "deleted row" and rows[k(303)][2] == "s303" and rows[None][2] == "null key"
    assert len(rows) == 600 - 12 - 2 + 3  # (303 and 553 were deleted: inserted again; the null key is new)
    if version == 3:  # (an updated row takes the new sequence number; both ways gave it the same row id)
        assert rows[k(295)][4] != "new" and rows[k(295)][5] > rows[k(10)][5] and rows[k(303)][4] == "new"


def test_a_target_row_two_source_rows_match_fails_on_the_driver_and_commits_nothing(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = _table(cat, "db.t", spark, 3, "bigint")
    before = t.metadata.current_snapshot_id
    source = spark.sql("SELECT 5L AS id, 'b' AS p, 'one' AS v, 0D AS x UNION ALL SELECT 5L, 'b', 'two', 1D")
    with pytest.raises(ValidationError, match=r"more than one source row \(the row where id = 5, file .*, "
                                              r"position \d+\)"):
        t.merge(source, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert cat.load_table("db.t").metadata.current_snapshot_id == before
    # (two source rows matching one target row are no error for a merge that only deletes it)
    t.merge(source, "t.id = s.id").when_matched_delete().execute()
    assert t.to_df().where("id = 5").count() == 0


@pytest.mark.parametrize("condition,clause,expected", [
    ("t.id = s.id AND t.p = 'a'", ("when_matched_update_all",), ["v5"]),  # (a conjunct on the target alone)
    ("t.id = s.id", ("when_matched_delete", "s.x > 1"), []),  # (a condition)
    ("t.id <=> s.id", ("when_matched_update_all",), ["five"]),  # (a null-safe key)
    ("t.x = s.x", ("when_matched_update_all",), ["five", "v5"]),  # (a double key: row 20 becomes a second 5)
])
def test_any_other_merge_goes_to_spark(spark, warehouse, monkeypatch, condition, clause, expected):
    ran = []
    real = merge.MergeBuilder._on_driver
    monkeypatch.setattr(merge.MergeBuilder, "_on_driver", lambda *a: ran.append(real(*a)) or ran[-1])
    cat = sparkberg.catalog(spark, warehouse)
    t = _table(cat, "db.t", spark, 3, "bigint")
    getattr(t.merge(spark.sql("SELECT 5L AS id, 'b' AS p, 'five' AS v, 2D AS x"), condition), clause[0])(
        *clause[1:]).execute()
    assert ran in ([], [False]), ran
    assert sorted(r[0] for r in cat.load_table("db.t").to_df().where("id = 5").select("v").collect()) == expected


def test_a_source_too_wide_to_collect_goes_to_spark(spark, warehouse, monkeypatch):
    # (Spark fails a collect above spark.driver.maxResultSize, a setting of the running context: the merge then
    # runs on Spark, as for a source of more than DRIVER_MERGE_ROWS rows)
    def too_wide(*_):
        raise RuntimeError("Total size of serialized results of 3 tasks (1100.0 MiB) is bigger than "
                           "spark.driver.maxResultSize (1024.0 MiB)")
    monkeypatch.setattr(merge, "collect_arrow", too_wide)
    ran = []
    real = merge.MergeBuilder._on_driver
    monkeypatch.setattr(merge.MergeBuilder, "_on_driver", lambda *a: ran.append(real(*a)) or ran[-1])
    cat = sparkberg.catalog(spark, warehouse)
    t = _table(cat, "db.t", spark, 3, "bigint")
    t.merge(spark.sql("SELECT 5L AS id, 'b' AS p, 'five' AS v, 2D AS x UNION ALL SELECT 9999L, 'a', 'new', 0D"),
            "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert ran == [False]
    assert sorted(r[0] for r in cat.load_table("db.t").to_df().where("id IN (5, 9999)").select("v").collect()) == \
        ["five", "new"]


@pytest.mark.parametrize("kinds", [("int",), ("str",), ("int", "str"), ("str", "int", "int")])
def test_the_drivers_key_pairs_are_arrows_inner_join(kinds):
    """The driver's MERGE pairs target and source rows as Arrow's inner join does (the reference): every pair of
    rows whose keys are equal in every column, nulls matching nothing, a key repeated on either side paired with
    each of the other side's; here on random keys with repeats and nulls, in one chunk and in several."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(len(kinds))

    def side(n: int, chunks: int) -> list[pa.ChunkedArray]:
        out = []
        for kind in kinds:
            raw = rng.integers(0, 6, n)
            values = [None if v == 0 else (int(v) if kind == "int" else f"k{v}") for v in raw.tolist()]
            t = pa.int64() if kind == "int" else pa.large_string()
            cut = np.array_split(np.arange(n), chunks)
            out.append(pa.chunked_array([pa.array([values[i] for i in part], t) for part in cut], t))
        return out
    for n, m, chunks in ((40, 30, 1), (200, 50, 3), (25, 0, 1), (1, 80, 2)):
        left, right = side(n, chunks), side(m, chunks)
        got_left, got_right = merge._inner_pairs(left, right)
        names = [f"k{i}" for i in range(len(kinds))]
        lt = pa.table(left + [pa.array(np.arange(n))], names=names + ["l"])
        rt = pa.table(right + [pa.array(np.arange(m))], names=names + ["r"])
        want = lt.join(rt, names, join_type="inner")
        assert sorted(zip(got_left.tolist(), got_right.tolist())) == \
            sorted(zip(want.column("l").to_pylist(), want.column("r").to_pylist()))
        assert list(got_left) == sorted(got_left)  # (each left row's pairs together, in left order)
