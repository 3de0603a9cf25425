"""The vectorized metrics evaluator equals the file-by-file one (Iceberg's inclusive metrics evaluator) on
generated metrics: absent maps and keys, all-null and all-NaN columns, 4- and 8-byte and unreadable bounds,
empty files, every predicate on integral columns."""
import pyarrow as pa
from hypothesis import given, settings, strategies as st

from sparkberg.expressions.evaluators import metrics_mask, metrics_may_match
from sparkberg.expressions.predicates import And, BoundPredicate, Not, Or
from sparkberg.format import types as T

TYPES = {1: T.LONG, 2: T.INT, 3: T.TIMESTAMPTZ, 4: T.DATE}
values = st.integers(-5, 5)
bound_bytes = st.one_of(st.integers(-6, 6).map(lambda v: v.to_bytes(8, "little", signed=True)),
                        st.integers(-6, 6).map(lambda v: v.to_bytes(4, "little", signed=True)),
                        st.just(b"\x01\x02\x03"))
counts = st.none() | st.dictionaries(st.sampled_from([1, 2, 3, 4]), st.integers(0, 3), max_size=4)
bounds = st.none() | st.dictionaries(st.sampled_from([1, 2, 3, 4]), bound_bytes, max_size=4)
files = st.tuples(st.integers(0, 3), counts, counts, counts, bounds, bounds)


def leaves():
    fids = st.sampled_from([1, 2, 3, 4])
    unary = st.builds(lambda op, f: BoundPredicate(op, f, TYPES[f]),
                      st.sampled_from(["is_null", "not_null", "is_nan", "not_nan"]), fids)
    literal = st.builds(lambda op, f, v: BoundPredicate(op, f, TYPES[f], v),
                        st.sampled_from(["lt", "lt_eq", "gt", "gt_eq", "eq", "not_eq"]), fids, values)
    sets = st.builds(lambda op, f, vs: BoundPredicate(op, f, TYPES[f], tuple(vs)),
                     st.sampled_from(["in", "not_in"]), fids, st.lists(values, min_size=1, max_size=3))
    return unary | literal | sets


exprs = st.recursive(leaves(), lambda c: st.builds(And, c, c) | st.builds(Or, c, c) | st.builds(Not, c), max_leaves=4)


@settings(max_examples=300, deadline=None)
@given(exprs, st.lists(files, min_size=1, max_size=6))
def test_vectorized_metrics_equal_the_scalar_evaluator(pred, fs):
    expected = [metrics_may_match(pred, TYPES, rc, vc, nc, nn, lo, up) for rc, vc, nc, nn, lo, up in fs]
    names = ("value_counts", "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds")

    def metrics(name, fid):
        i = names.index(name) + 1
        return pa.array([(f[i] or {}).get(fid) for f in fs], pa.binary() if "bounds" in name else pa.int64())
    got = metrics_mask(pred, TYPES, [f[0] for f in fs], metrics)
    assert got is not None and list(got) == expected


def test_other_types_are_left_to_the_scalar_evaluator():
    pred = BoundPredicate("lt", 5, T.STRING, "b")
    assert metrics_mask(pred, {5: T.STRING}, [1], lambda name, fid: pa.nulls(1)) is None


def test_bounds_of_one_width_are_read_from_the_buffer():
    from sparkberg.expressions.evaluators import _integral_bounds
    for width in (4, 8):
        raw = [v.to_bytes(width, "little", signed=True) if v is not None else None for v in (-3, None, 7, 2 ** 20)]
        values, known = _integral_bounds(pa.array(raw, pa.binary()).slice(1))  # an offset slice too
        assert list(known) == [False, True, True] and list(values[known]) == [7, 2 ** 20]
