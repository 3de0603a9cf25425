"""Inclusive and strict projection through every transform: worked examples, and property tests of
soundness (inclusive: a row matching e has a partition matching inclusive(e); strict: a partition
matching strict(e) holds only rows matching e)."""
import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given, settings, strategies as st

from sparkberg.errors import ValidationError
from sparkberg.expressions import (
    FALSE, TRUE, BoundPredicate, Not, Predicate, and_, bind, evaluate, inclusive_projection, or_, strict_projection,
)
from sparkberg.format import types as T
from sparkberg.format.partitioning import PartitionField, PartitionSpec
from sparkberg.format.transforms import (
    BucketTransform, DayTransform, HourTransform, IdentityTransform, MonthTransform, TruncateTransform, VoidTransform,
    YearTransform,
)
from sparkberg.format.scalars import date_to_days, datetime_to_micros

SCHEMA = T.Schema([
    T.NestedField(1, "id", T.LONG), T.NestedField(2, "s", T.STRING), T.NestedField(3, "d", T.DATE),
    T.NestedField(4, "ts", T.TIMESTAMP), T.NestedField(5, "dec", T.DecimalType(9, 2)), T.NestedField(6, "b", T.BINARY),
    T.NestedField(7, "f", T.DOUBLE), T.NestedField(8, "i", T.INT),
])
FIELDS = [
    PartitionField(1, 1000, IdentityTransform(), "id"), PartitionField(1, 1001, BucketTransform(8), "id_bucket"),
    PartitionField(1, 1002, TruncateTransform(10), "id_trunc"), PartitionField(2, 1003, TruncateTransform(2), "s_trunc"),
    PartitionField(2, 1004, BucketTransform(4), "s_bucket"), PartitionField(3, 1005, YearTransform(), "d_year"),
    PartitionField(3, 1006, MonthTransform(), "d_month"), PartitionField(3, 1007, DayTransform(), "d_day"),
    PartitionField(4, 1008, HourTransform(), "ts_hour"), PartitionField(4, 1009, DayTransform(), "ts_day"),
    PartitionField(5, 1010, TruncateTransform(50), "dec_trunc"), PartitionField(6, 1011, TruncateTransform(2), "b_trunc"),
    PartitionField(7, 1012, IdentityTransform(), "f"), PartitionField(8, 1013, VoidTransform(), "i_null"),
    PartitionField(4, 1014, YearTransform(), "ts_year"), PartitionField(4, 1015, MonthTransform(), "ts_month"),
]


def spec_of(*names):
    return PartitionSpec(0, [f for f in FIELDS if f.name in names])


def proj(kind, spec, pred):
    fn = inclusive_projection if kind == "inclusive" else strict_projection
    return fn(bind(pred, SCHEMA), spec, SCHEMA)


def test_identity_projects_unchanged():
    s = spec_of("id")
    assert proj("inclusive", s, Predicate("lt", "id", 5)) == BoundPredicate("lt", 1000, T.LONG, 5, "id")
    assert proj("strict", s, Predicate("not_in", "id", [1, 2])) == \
        BoundPredicate("not_in", 1000, T.LONG, frozenset({1, 2}), "id")


def test_bucket_projects_equality_only():
    s = spec_of("id_bucket")
    b = BucketTransform(8).apply(T.LONG)
    assert proj("inclusive", s, Predicate("eq", "id", 34)) == BoundPredicate("eq", 1001, T.INT, b(34), "id_bucket")
    assert proj("inclusive", s, Predicate("lt", "id", 34)) == TRUE
    assert proj("strict", s, Predicate("eq", "id", 34)) == FALSE
    assert proj("strict", s, Predicate("not_eq", "id", 34)) == BoundPredicate("not_eq", 1001, T.INT, b(34), "id_bucket")


@pytest.mark.parametrize("op,value,inclusive,strict", [
    ("lt", 100, ("lt_eq", 90), ("lt", 100)),
    ("lt_eq", 100, ("lt_eq", 100), ("lt", 100)),
    ("gt", 100, ("gt_eq", 100), ("gt", 100)),
    ("gt_eq", 100, ("gt_eq", 100), ("gt", 90)),
    ("eq", 105, ("eq", 100), None),
    ("not_eq", 105, None, ("not_eq", 100)),
])
def test_integer_truncate(op, value, inclusive, strict):
    s = spec_of("id_trunc")

    def expect(x):
        return (TRUE if x is None else BoundPredicate(x[0], 1002, T.LONG, x[1], "id_trunc"))
    assert proj("inclusive", s, Predicate(op, "id", value)) == expect(inclusive)
    assert proj("strict", s, Predicate(op, "id", value)) == (FALSE if strict is None else expect(strict))


def test_string_truncate_and_starts_with():
    s = spec_of("s_trunc")
    assert proj("inclusive", s, Predicate("starts_with", "s", "a")) == \
        BoundPredicate("starts_with", 1003, T.STRING, "a", "s_trunc")
    assert proj("inclusive", s, Predicate("starts_with", "s", "abc")) == \
        BoundPredicate("eq", 1003, T.STRING, "ab", "s_trunc")
    assert proj("strict", s, Predicate("starts_with", "s", "abc")) == FALSE
    assert proj("strict", s, Predicate("starts_with", "s", "ab")) == \
        BoundPredicate("starts_with", 1003, T.STRING, "ab", "s_trunc")


def test_time_projection_uses_ordinals():
    s = spec_of("ts_day")
    ts = datetime_to_micros(dt.datetime(2024, 1, 2, 0, 0))
    day = date_to_days(dt.date(2024, 1, 2))
    assert proj("inclusive", s, Predicate("gt_eq", "ts", dt.datetime(2024, 1, 2))) == \
        BoundPredicate("gt_eq", 1009, T.DATE, day, "ts_day")
    # lt midnight: the previous day at most
    assert proj("inclusive", s, Predicate("lt", "ts", ts)) == BoundPredicate("lt_eq", 1009, T.DATE, day - 1, "ts_day")
    assert proj("strict", s, Predicate("lt", "ts", ts)) == BoundPredicate("lt", 1009, T.DATE, day, "ts_day")


def test_pre_epoch_time_projection_is_widened():
    s = spec_of("ts_day")
    e = proj("inclusive", s, Predicate("eq", "ts", dt.datetime(1969, 12, 31, 12)))
    assert e == BoundPredicate("in", 1009, T.DATE, frozenset({-1, 0}), "ts_day")
    assert proj("strict", s, Predicate("lt", "ts", dt.datetime(1969, 12, 31, 12))) == FALSE


def test_void_and_null_predicates():
    s = spec_of("i_null", "id_bucket")
    assert proj("inclusive", s, Predicate("eq", "i", 5)) == TRUE
    assert proj("inclusive", s, Predicate("is_null", "id")) == BoundPredicate("is_null", 1001, T.INT, None, "id_bucket")
    assert proj("strict", s, Predicate("not_null", "id")) == BoundPredicate("not_null", 1001, T.INT, None,
                                                                             "id_bucket")


def test_and_or_not():
    s = spec_of("id")
    e = Not(and_(Predicate("lt", "id", 5), Predicate("gt", "id", 1)))
    assert proj("inclusive", s, e) == or_(BoundPredicate("gt_eq", 1000, T.LONG, 5, "id"),
                                          BoundPredicate("lt_eq", 1000, T.LONG, 1, "id"))


def test_binding_errors_are_named():
    with pytest.raises(ValidationError, match="no column 'nope'"):
        bind(Predicate("eq", "nope", 1), SCHEMA)
    with pytest.raises(ValidationError, match="column 'id'"):
        bind(Predicate("eq", "id", "abc"), SCHEMA)
    with pytest.raises(ValidationError, match="out of range"):
        bind(Predicate("eq", "i", 2 ** 40), SCHEMA)
    assert bind(Predicate("eq", "d", "2024-01-02"), SCHEMA).value == date_to_days(dt.date(2024, 1, 2))
    assert bind(Predicate("eq", "f", float("nan")), SCHEMA).op == "is_nan"
    assert bind(Predicate("in", "id", []), SCHEMA) == FALSE


# --- soundness -----------------------------------------------------------------------------------------------
VALUES = {
    "id": st.integers(-300, 300), "s": st.text("ab\u00e9", max_size=4), "d": st.integers(-800, 800),
    "ts": st.integers(-10 ** 11, 10 ** 11) | st.sampled_from([0, -1, 1, 86_400_000_000, -86_400_000_000]),
    "dec": st.integers(-2000, 2000).map(lambda u: Decimal(u).scaleb(-2)), "b": st.binary(max_size=3),
    "f": st.floats(-5, 5) | st.just(float("nan")) | st.just(-0.0), "i": st.integers(-5, 5),
}
OPS = {"id": ["lt", "lt_eq", "gt", "gt_eq", "eq", "not_eq", "in", "not_in", "is_null", "not_null"],
       "s": ["lt", "lt_eq", "gt", "gt_eq", "eq", "not_eq", "in", "not_in", "starts_with", "not_starts_with"],
       "d": ["lt", "lt_eq", "gt", "gt_eq", "eq", "not_eq", "in", "not_in"],
       "ts": ["lt", "lt_eq", "gt", "gt_eq", "eq", "not_eq", "in", "not_in"],
       "dec": ["lt", "lt_eq", "gt", "gt_eq", "eq", "not_eq", "in", "not_in"],
       "b": ["lt", "lt_eq", "gt", "gt_eq", "eq", "not_eq", "in", "not_in"],
       "f": ["lt", "gt_eq", "eq", "not_eq", "is_nan", "not_nan"], "i": ["eq", "lt", "is_null"]}


@st.composite
def predicate(draw):
    col = draw(st.sampled_from(sorted(OPS)))
    op = draw(st.sampled_from(OPS[col]))
    if op in ("is_null", "not_null", "is_nan", "not_nan"):
        return Predicate(op, col)
    if op in ("in", "not_in"):
        return Predicate(op, col, draw(st.lists(VALUES[col], min_size=1, max_size=3)))
    value = draw(VALUES[col])
    if col == "f" and value != value:
        value = 1.0
    return Predicate(op, col, value)


@st.composite
def row(draw):
    by_name = {f.name: f.field_id for f in SCHEMA.fields}
    return {by_name[c]: draw(st.none() | VALUES[c]) for c in VALUES}


def partition_of(r, spec):
    types = SCHEMA.index_by_id()
    return {f.field_id: f.transform.apply(types[f.source_id].field_type)(r.get(f.source_id)) for f in spec.fields}


SPEC_ALL = PartitionSpec(0, FIELDS)


@settings(max_examples=1500, deadline=None)
@given(st.lists(predicate(), min_size=1, max_size=3), st.sampled_from(["and", "or", "not"]), row())
def test_projection_soundness(preds, combine, r):
    e = and_(*preds) if combine == "and" else or_(*preds)
    if combine == "not":
        e = Not(e)
    bound = bind(e, SCHEMA)
    part = partition_of(r, SPEC_ALL)
    matches = evaluate(bound, r)
    if matches:
        assert evaluate(inclusive_projection(bound, SPEC_ALL, SCHEMA), part)
    if evaluate(strict_projection(bound, SPEC_ALL, SCHEMA), part):
        assert matches


@settings(max_examples=800, deadline=None)
@given(predicate(), row(), st.sampled_from([f.name for f in FIELDS]))
def test_projection_soundness_per_field(p, r, field_name):
    spec = spec_of(field_name)
    bound = bind(p, SCHEMA)
    part = partition_of(r, spec)
    if evaluate(bound, r):
        assert evaluate(inclusive_projection(bound, spec, SCHEMA), part)
    if evaluate(strict_projection(bound, spec, SCHEMA), part):
        assert evaluate(bound, r)
