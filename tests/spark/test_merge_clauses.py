"""Every MERGE clause, alone and combined, against a reference of Spark's MERGE semantics written row by row in
Python: matched clauses tried in order (update, update_all, delete, with conditions), then not matched (insert,
insert_all) and not matched by source (update, delete); v2 and v3, copy-on-write and merge-on-read; v3 rows
updated keep their ``_row_id``, inserted rows get new ones."""
import pytest

import sparkberg

pytestmark = pytest.mark.spark

TARGET = [(i, f"t{i}", i % 4) for i in range(0, 40)]
SOURCE = [(i, f"s{i}", i % 3) for i in range(20, 60, 2)]  # ids 20..58 even: half match, half new


def merge_reference(target, source, matched, not_matched, by_source):
    """The rows a MERGE leaves: each clause is (kind, python condition, python values) as Spark evaluates it."""
    by_id = {s[0]: s for s in source}
    out = []
    for t in target:
        s = by_id.get(t[0])
        clauses, args = (matched, (t, s)) if s is not None else (by_source, (t,))
        for kind, cond, values in clauses:
            if cond is None or cond(*args):
                if kind == "update":
                    out.append(values(*args))
                break
        else:
            out.append(t)
    hit = {t[0] for t in target}
    for s in source:
        if s[0] in hit:
            continue
        for cond, values in not_matched:
            if cond is None or cond(s):
                out.append(values(s))
                break
    return sorted(out)


COMBINATIONS = {
    "update and delete by condition, conditional insert": (
        [("update", ("s.n = 0", lambda t, s: s[2] == 0), ({"v": "s.v"}, lambda t, s: (t[0], s[1], t[2]))),
         ("delete", ("s.n = 1", lambda t, s: s[2] == 1), None)],
        [(("s.id < 50", lambda s: s[0] < 50), (None, lambda s: s))], []),
    "delete only": ([("delete", None, None)], [], []),
    "insert_all only": ([], [(None, (None, lambda s: s))], []),
    "update_all, then deletes and updates of rows no source row matches": (
        [("update", None, (None, lambda t, s: s))], [],
        [("delete", ("t.n = 3", lambda t: t[2] == 3), None),
         ("update", None, ({"v": "'orphan'", "n": "t.n + 10"}, lambda t: (t[0], "orphan", t[2] + 10)))]),
    "every clause kind, several of each, in order": (
        [("delete", ("t.n = 0 AND s.n = 0", lambda t, s: t[2] == 0 and s[2] == 0), None),
         ("update", ("s.n = 1", lambda t, s: s[2] == 1), ({"n": "t.n + s.n + 100"},
                                                          lambda t, s: (t[0], t[1], t[2] + s[2] + 100))),
         ("update", None, ({"v": "concat(t.v, '-', s.v)"}, lambda t, s: (t[0], f"{t[1]}-{s[1]}", t[2])))],
        [(("s.n = 2", lambda s: s[2] == 2), ({"id": "s.id", "v": "'two'"}, lambda s: (s[0], "two", None))),
         (None, (None, lambda s: s))],
        [("update", ("t.id < 5", lambda t: t[0] < 5), ({"v": "upper(t.v)"}, lambda t: (t[0], t[1].upper(), t[2]))),
         ("delete", ("t.id >= 15", lambda t: t[0] >= 15), None)]),
}


@pytest.mark.parametrize("version,mode", [(2, "copy-on-write"), (2, "merge-on-read"), (3, "merge-on-read"),
                                          (3, "copy-on-write")])
def test_merge_clauses_match_the_reference(spark, warehouse, version, mode):
    cat = sparkberg.catalog(spark, warehouse)
    source = spark.createDataFrame(SOURCE, "id bigint, v string, n int")
    for i, (name, (matched, not_matched, by_source)) in enumerate(COMBINATIONS.items()):
        t = cat.create_table(f"db.m{i}", "id bigint, v string, n int", partition_by=["bucket(4, id)"],
                             properties={"format-version": str(version), "write.merge.mode": mode})
        t.append(spark.createDataFrame(TARGET, "id bigint, v string, n int"))
        ids = dict(t.to_df(columns=["id", "_row_id"]).collect()) if version == 3 else {}
        m = t.merge(source, "t.id = s.id")
        for kind, cond, values in matched:
            sql = cond[0] if cond else None
            if kind == "delete":
                m.when_matched_delete(sql)
            elif values[0] is None:
                m.when_matched_update_all(sql)
            else:
                m.when_matched_update(values[0], sql)
        for cond, values in not_matched:
            sql = cond[0] if cond else None
            m.when_not_matched_insert_all(sql) if values[0] is None else m.when_not_matched_insert(values[0], sql)
        for kind, cond, values in by_source:
            sql = cond[0] if cond else None
            m.when_not_matched_by_source_delete(sql) if kind == "delete" else \
                m.when_not_matched_by_source_update(values[0], sql)
        m.execute()
        py = lambda clauses: [(k, c[1] if c else None, v[1] if v else None) for k, c, v in clauses]  # noqa: E731
        expected = merge_reference(TARGET, SOURCE, py(matched), [(c[1] if c else None, v[1]) for c, v in not_matched],
                                   py(by_source))
        got = cat.load_table(f"db.m{i}")
        assert sorted(tuple(r) for r in got.to_df().collect()) == expected, name
        if version == 3:
            after = dict(got.to_df(columns=["id", "_row_id"]).collect())
            assert len(set(after.values())) == len(after), name
            assert all(after[k] == ids[k] for k in after if k in ids), name  # (updated rows keep theirs)
            assert not set(after[k] for k in after if k not in ids) & set(ids.values()), name
