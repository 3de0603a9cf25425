"""The strict metrics evaluator (Iceberg's StrictMetricsEvaluator, which makes a DELETE metadata-only): when it says
every row of a file matches, every row does, under Spark SQL's three-valued logic (a comparison with a null is not
true), for files whose metrics are computed from generated rows, with metrics partly missing too."""
from hypothesis import given, settings, strategies as st

from sparkberg.expressions.evaluators import metrics_may_match, metrics_must_match
from sparkberg.expressions.predicates import And, BoundPredicate, Not, Or
from sparkberg.format import types as T

TYPES = {1: T.LONG, 2: T.INT}
values = st.integers(-4, 4)


def leaves():
    fids = st.sampled_from([1, 2])
    unary = st.builds(lambda op, f: BoundPredicate(op, f, TYPES[f]), st.sampled_from(["is_null", "not_null"]), fids)
    literal = st.builds(lambda op, f, v: BoundPredicate(op, f, TYPES[f], v),
                        st.sampled_from(["lt", "lt_eq", "gt", "gt_eq", "eq", "not_eq"]), fids, values)
    sets = st.builds(lambda op, f, vs: BoundPredicate(op, f, TYPES[f], tuple(vs)),
                     st.sampled_from(["in", "not_in"]), fids, st.lists(values, min_size=1, max_size=3))
    return unary | literal | sets


exprs = st.recursive(leaves(), lambda c: st.builds(And, c, c) | st.builds(Or, c, c) | st.builds(Not, c), max_leaves=4)
rows = st.lists(st.tuples(st.none() | values, st.none() | values), min_size=1, max_size=6)


def sql(e, row):
    """``e`` on one row as Spark SQL evaluates it: True, False or None (unknown)."""
    if isinstance(e, And):
        a, b = sql(e.left, row), sql(e.right, row)
        return False if a is False or b is False else None if a is None or b is None else True
    if isinstance(e, Or):
        a, b = sql(e.left, row), sql(e.right, row)
        return True if a is True or b is True else None if a is None or b is None else False
    if isinstance(e, Not):
        a = sql(e.child, row)
        return None if a is None else not a
    v = row[e.field_id - 1]
    if e.op in ("is_null", "not_null"):
        return (v is None) == (e.op == "is_null")
    if v is None:
        return None
    return {"lt": lambda: v < e.value, "lt_eq": lambda: v <= e.value, "gt": lambda: v > e.value,
            "gt_eq": lambda: v >= e.value, "eq": lambda: v == e.value, "not_eq": lambda: v != e.value,
            "in": lambda: v in e.value, "not_in": lambda: v not in e.value}[e.op]()


def metrics(rs, keep):
    out = {"vc": {}, "nc": {}, "lo": {}, "up": {}}
    for fid in (1, 2):
        col = [r[fid - 1] for r in rs]
        present = [v for v in col if v is not None]
        out["vc"][fid], out["nc"][fid] = len(col), len(col) - len(present)
        if present:
            out["lo"][fid] = min(present).to_bytes(8 if fid == 1 else 4, "little", signed=True)
            out["up"][fid] = max(present).to_bytes(8 if fid == 1 else 4, "little", signed=True)
    return {k: {f: v for f, v in m.items() if (k, f) in keep} for k, m in out.items()}


@settings(max_examples=500, deadline=None)
@given(exprs, rows, st.sets(st.sampled_from([(k, f) for k in ("vc", "nc", "lo", "up") for f in (1, 2)])))
def test_a_file_the_strict_evaluator_proves_matches_in_every_row(pred, rs, keep):
    m = metrics(rs, keep)
    must = metrics_must_match(pred, TYPES, len(rs), m["vc"], m["nc"], {}, m["lo"], m["up"])
    if must:
        assert all(sql(pred, r) is True for r in rs)
        assert metrics_may_match(pred, TYPES, len(rs), m["vc"], m["nc"], {}, m["lo"], m["up"])


def test_full_metrics_prove_the_plain_cases():
    full = {(k, f) for k in ("vc", "nc", "lo", "up") for f in (1, 2)}
    m = metrics([(2, 1), (3, 1)], full)
    def must(p):
        return metrics_must_match(p, TYPES, 2, m["vc"], m["nc"], {}, m["lo"], m["up"])
    assert must(BoundPredicate("gt_eq", 1, T.LONG, 2)) and must(BoundPredicate("eq", 2, T.INT, 1))
    assert must(BoundPredicate("not_in", 1, T.LONG, (0, 7))) and must(BoundPredicate("not_null", 1, T.LONG))
    assert not must(BoundPredicate("eq", 1, T.LONG, 2)) and not must(BoundPredicate("lt", 1, T.LONG, 3))
    with_null = metrics([(2, 1), (None, 1)], full)
    assert not metrics_must_match(BoundPredicate("gt", 1, T.LONG, 0), TYPES, 2, with_null["vc"], with_null["nc"],
                                  {}, with_null["lo"], with_null["up"])
