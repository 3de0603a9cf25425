"""Iceberg's predicate tree: unbound (by column name) and bound (by field id, literals in the column's type).

    e = And(Predicate("gt_eq", "ts", datetime(2024, 1, 1)), Predicate("eq", "id", 5))
    bound = bind(e, schema)          # names resolved, literals converted, errors named
    evaluate(bound, {1: 5, 2: ...})  # the scalar reference evaluator, rows keyed by field id

Comparison follows Iceberg: nulls match only ``is_null``/``not_in``-style negations as SQL does
(a comparison with a null value is false), NaN matches only ``is_nan``, strings compare by code point
(= UTF-8 byte order), binary unsigned.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import math
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterable, TypeVar, Union

from sparkberg.errors import ValidationError
from sparkberg.format import types as T
from sparkberg.format.values import from_python
from sparkberg.format.types import from_json_value

UNARY = ("is_null", "not_null", "is_nan", "not_nan")
LITERAL = ("lt", "lt_eq", "gt", "gt_eq", "eq", "not_eq", "starts_with", "not_starts_with")
SET = ("in", "not_in")
# a geometry or geography value's bounding box meets (or does not meet) a box (xmin, ymin, xmax, ymax): what a
# spatial filter implies (expressions/spatial.py), pruned by the files' bounding boxes as Iceberg Java's
# ``stIntersects`` / ``stDisjoint`` are
SPATIAL = ("st_intersects", "st_disjoint")
NEGATE = {"is_null": "not_null", "not_null": "is_null", "is_nan": "not_nan", "not_nan": "is_nan", "lt": "gt_eq",
          "lt_eq": "gt", "gt": "lt_eq", "gt_eq": "lt", "eq": "not_eq", "not_eq": "eq", "in": "not_in",
          "not_in": "in", "starts_with": "not_starts_with", "not_starts_with": "starts_with",
          "st_intersects": "st_disjoint", "st_disjoint": "st_intersects"}
FLIP = {"lt": "gt", "lt_eq": "gt_eq", "gt": "lt", "gt_eq": "lt_eq", "eq": "eq", "not_eq": "not_eq"}


class Expression:
    """Base of all expressions."""

    def __and__(self, other: "Expression") -> "Expression":
        return and_(self, other)

    def __or__(self, other: "Expression") -> "Expression":
        return or_(self, other)

    def __invert__(self) -> "Expression":
        return not_(self)


@dataclass(frozen=True)
class AlwaysTrue(Expression):
    def __repr__(self):
        return "true"


@dataclass(frozen=True)
class AlwaysFalse(Expression):
    def __repr__(self):
        return "false"


TRUE = AlwaysTrue()
FALSE = AlwaysFalse()


@dataclass(frozen=True)
class And(Expression):
    left: Expression
    right: Expression

    def __repr__(self):
        return f"({self.left!r} and {self.right!r})"


@dataclass(frozen=True)
class Or(Expression):
    left: Expression
    right: Expression

    def __repr__(self):
        return f"({self.left!r} or {self.right!r})"


@dataclass(frozen=True)
class Not(Expression):
    child: Expression

    def __repr__(self):
        return f"not {self.child!r}"


@dataclass(frozen=True)
class Predicate(Expression):
    """An unbound predicate on a column name: ``op`` from UNARY, LITERAL, SET or SPATIAL (its value a box
    (xmin, ymin, xmax, ymax))."""

    op: str
    term: str
    value: Any = None

    def __post_init__(self):
        if self.op not in UNARY + LITERAL + SET + SPATIAL:
            raise ValidationError(f"unknown predicate operation {self.op!r}")
        if self.op in SET + SPATIAL:
            object.__setattr__(self, "value", tuple(self.value))

    def __repr__(self):
        return f"{self.op}({self.term}{'' if self.op in UNARY else ', ' + repr(self.value)})"


@dataclass(frozen=True)
class BoundPredicate(Expression):
    """A predicate bound to a field id; literals are in the field type's in-memory form."""

    op: str
    field_id: int
    field_type: T.IcebergType
    value: Any = None
    name: str = ""

    def __repr__(self):
        return f"{self.op}({self.name or self.field_id}{'' if self.op in UNARY else ', ' + repr(self.value)})"


Bound = Union[AlwaysTrue, AlwaysFalse, And, Or, Not, BoundPredicate]


def and_(*exprs: Expression) -> Expression:
    """Conjunction that simplifies constants."""
    out: Expression = TRUE
    for e in exprs:
        if isinstance(e, AlwaysFalse) or isinstance(out, AlwaysFalse):
            return FALSE
        if isinstance(e, AlwaysTrue):
            continue
        out = e if isinstance(out, AlwaysTrue) else And(out, e)
    return out


def or_(*exprs: Expression) -> Expression:
    """Disjunction that simplifies constants."""
    out: Expression = FALSE
    for e in exprs:
        if isinstance(e, AlwaysTrue) or isinstance(out, AlwaysTrue):
            return TRUE
        if isinstance(e, AlwaysFalse):
            continue
        out = e if isinstance(out, AlwaysFalse) else Or(out, e)
    return out


def not_(e: Expression) -> Expression:
    if isinstance(e, AlwaysTrue):
        return FALSE
    if isinstance(e, AlwaysFalse):
        return TRUE
    if isinstance(e, Not):
        return e.child
    return Not(e)


R = TypeVar("R")


class Visitor(Generic[R]):
    """What an expression tree folds to, leaves first (Iceberg Java's ``ExpressionVisitors``): :func:`visit` calls
    one method a node with what it made of the node's children. The one walk of ``And``/``Or``/``Not`` trees; a
    visitor that wants no negation left visits ``rewrite_not(e)`` (negations pushed down to the predicates)."""

    def always_true(self) -> R:
        raise NotImplementedError

    def always_false(self) -> R:
        raise NotImplementedError

    def and_(self, left: R, right: R) -> R:
        raise NotImplementedError

    def or_(self, left: R, right: R) -> R:
        raise NotImplementedError

    def not_(self, child: R) -> R:
        raise NotImplementedError(f"{type(self).__name__} visits expressions without negation: rewrite_not first")

    def predicate(self, p: Expression) -> R:
        raise NotImplementedError


def visit(e: Expression, visitor: Visitor[R]) -> R:
    """``e`` folded by ``visitor`` (see :class:`Visitor`)."""
    if isinstance(e, AlwaysTrue):
        return visitor.always_true()
    if isinstance(e, AlwaysFalse):
        return visitor.always_false()
    if isinstance(e, And):
        return visitor.and_(visit(e.left, visitor), visit(e.right, visitor))
    if isinstance(e, Or):
        return visitor.or_(visit(e.left, visitor), visit(e.right, visitor))
    if isinstance(e, Not):
        return visitor.not_(visit(e.child, visitor))
    return visitor.predicate(e)


class Fold(Visitor[R]):
    """A visitor of a negation-free tree made of functions: ``leaf`` of each predicate, the values of true and
    false, and how ``both`` (and) and ``either`` (or) combine their children's."""

    def __init__(self, leaf: Callable[[Any], R], true: R, false: R, both: Callable[[R, R], R],
                 either: Callable[[R, R], R]):
        self.leaf, self.true, self.false, self.both, self.either = leaf, true, false, both, either

    def always_true(self) -> R:
        return self.true

    def always_false(self) -> R:
        return self.false

    def and_(self, left: R, right: R) -> R:
        return self.both(left, right)

    def or_(self, left: R, right: R) -> R:
        return self.either(left, right)

    def predicate(self, p: Expression) -> R:
        return self.leaf(p)


def rewrite_not(e: Expression) -> Expression:
    """Push negations down to predicates (De Morgan), so projections see no Not. A tree without a negation comes
    back as itself, nothing rebuilt: the evaluators call this for every file they test."""
    if isinstance(e, Not):
        c = e.child
        if isinstance(c, Not):
            return rewrite_not(c.child)
        if isinstance(c, And):
            return or_(rewrite_not(Not(c.left)), rewrite_not(Not(c.right)))
        if isinstance(c, Or):
            return and_(rewrite_not(Not(c.left)), rewrite_not(Not(c.right)))
        if isinstance(c, (AlwaysTrue, AlwaysFalse)):
            return not_(c)
        if isinstance(c, Predicate):
            return Predicate(NEGATE[c.op], c.term, c.value)
        if isinstance(c, BoundPredicate):
            return BoundPredicate(NEGATE[c.op], c.field_id, c.field_type, c.value, c.name)
    if isinstance(e, (And, Or)):
        left, right = rewrite_not(e.left), rewrite_not(e.right)
        if left is e.left and right is e.right:
            return e
        return and_(left, right) if isinstance(e, And) else or_(left, right)
    return e


# --- binding --------------------------------------------------------------------------------------

def convert_literal(t: T.IcebergType, value: Any, where: str = "") -> Any:
    """A user literal (Python object or ISO string) as an in-memory value of type ``t``; named error if it
    cannot be."""
    if value is None:
        raise ValidationError(f"null literal in a comparison{where}; use is_null/not_null")
    try:
        if isinstance(value, str) and t not in (T.STRING,) and not isinstance(t, (T.FixedType,)) and t != T.BINARY:
            if t == T.UUID:
                return from_python(t, value)
            if t in (T.INT, T.LONG):
                return _check_range(t, int(value))
            if t in (T.FLOAT, T.DOUBLE):
                return float(value)
            if isinstance(t, T.DecimalType):
                return from_json_value(t, value)
            if t == T.BOOLEAN:
                return {"true": True, "false": False}[value.lower()]
            if t in (T.TIMESTAMPTZ, T.TIMESTAMPTZ_NS) and not _has_zone(value):
                value = value.replace(" ", "T") + "+00:00"
            return from_json_value(t, value.replace(" ", "T") if "T" not in value and t not in (T.DATE, T.TIME)
                                   else value)
        if t in (T.INT, T.LONG):
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, float) and value.is_integer():
                    return _check_range(t, int(value))
                raise ValueError(f"{value!r} is not an integer")
            return _check_range(t, value)
        if t in (T.FLOAT, T.DOUBLE):
            return float(value)
        if isinstance(t, T.DecimalType):
            d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
            return from_json_value(t, str(d.quantize(decimal.Decimal(1).scaleb(-t.scale))) if t.scale >= 0 else d)
        if t == T.DATE and isinstance(value, _dt.datetime):
            raise ValueError("a timestamp cannot compare with a date column")
        if t in (T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS) and isinstance(value, int):
            return value
        if t in (T.DATE, T.TIME, T.TIMESTAMP, T.TIMESTAMPTZ) and isinstance(value, int) and not isinstance(value, bool):
            return value
        converted = from_python(t, value)
        if isinstance(t, T.FixedType) and len(converted) != t.length:
            raise ValueError(f"fixed[{t.length}] needs {t.length} bytes")
        return converted
    except (ValueError, KeyError, TypeError, decimal.InvalidOperation, ValidationError) as e:
        raise ValidationError(f"cannot use {value!r} as a {t} value{where}: {e}") from None


def _has_zone(s: str) -> bool:
    s = s.strip()
    return s.endswith("Z") or (len(s) > 6 and s[-6] in "+-" and s[-3] == ":")


def _check_range(t: T.IcebergType, v: int) -> int:
    bits = 32 if t == T.INT else 64
    if not -(2 ** (bits - 1)) <= v < 2 ** (bits - 1):
        raise ValueError(f"{v} is out of range for {t}")
    return v


class Rebuild(Visitor[Expression]):
    """A visitor that builds an expression again from what it makes of the predicates (simplified as ``and_``,
    ``or_`` and ``not_`` simplify); subclasses say what a predicate becomes."""

    def always_true(self) -> Expression:
        return TRUE

    def always_false(self) -> Expression:
        return FALSE

    def and_(self, left: Expression, right: Expression) -> Expression:
        return and_(left, right)

    def or_(self, left: Expression, right: Expression) -> Expression:
        return or_(left, right)

    def not_(self, child: Expression) -> Expression:
        return not_(child)


class _Binder(Rebuild):
    def __init__(self, schema: T.Schema, case_sensitive: bool):
        self.schema, self.case_sensitive = schema, case_sensitive

    def predicate(self, p: Expression) -> Expression:
        return p if isinstance(p, BoundPredicate) else _bind_predicate(p, self.schema, self.case_sensitive)


def bind(e: Expression, schema: T.Schema, case_sensitive: bool = False) -> Bound:
    """Resolve column names against ``schema`` and convert literals to the columns' types."""
    return visit(e, _Binder(schema, case_sensitive))


def _bind_predicate(e: Predicate, schema: T.Schema, case_sensitive: bool) -> Bound:
    assert isinstance(e, Predicate)
    by_name = schema.index_by_name()
    f = by_name.get(e.term)
    if f is None and not case_sensitive:
        f = {k.lower(): v for k, v in by_name.items()}.get(e.term.lower())
    if f is None:
        raise ValidationError(f"cannot bind predicate {e!r}: no column {e.term!r} in schema {schema.schema_id}")
    t = f.field_type
    where = f" (column {e.term!r})"
    if not t.is_primitive:
        raise ValidationError(f"cannot filter on non-primitive column {e.term!r} of type {t}")
    if e.op in UNARY:
        if e.op in ("is_nan", "not_nan") and t not in (T.FLOAT, T.DOUBLE):
            return (FALSE if e.op == "is_nan" else BoundPredicate("not_null", f.field_id, t, None, e.term))
        if f.required and e.op == "is_null":
            return FALSE
        if f.required and e.op == "not_null":
            return TRUE
        return BoundPredicate(e.op, f.field_id, t, None, e.term)
    if e.op in SPATIAL:
        return BoundPredicate(e.op, f.field_id, t, _spatial_box(t, e.value, where), e.term)
    if isinstance(t, (T.GeometryType, T.GeographyType)):  # (their bounds are boxes: no order to compare with)
        raise ValidationError(f"cannot filter column {e.term!r} of type {t} by {e.op}: a geometry or geography "
                              f"column is filtered by IS NULL, IS NOT NULL or a box (st_intersects, st_disjoint)")
    if e.op in ("starts_with", "not_starts_with") and t != T.STRING:
        raise ValidationError(f"{e.op} needs a string column, {e.term!r} is {t}")
    if e.op in SET:
        values = tuple(dict.fromkeys(convert_literal(t, v, where) for v in e.value if v is not None))
        if not values:
            return FALSE if e.op == "in" else TRUE  # SQL: x IN () is false
        if len(values) == 1:
            return BoundPredicate("eq" if e.op == "in" else "not_eq", f.field_id, t, values[0], e.term)
        return BoundPredicate(e.op, f.field_id, t, frozenset(values), e.term)
    value = convert_literal(t, e.value, where)
    if isinstance(value, float) and math.isnan(value) and e.op in ("eq", "not_eq"):
        return BoundPredicate("is_nan" if e.op == "eq" else "not_nan", f.field_id, t, None, e.term)
    return BoundPredicate(e.op, f.field_id, t, value, e.term)


def _spatial_box(t: T.IcebergType, box: tuple, where: str) -> tuple[float, float, float, float]:
    """A spatial predicate's box, checked: four finite numbers, ymin <= ymax; xmin <= xmax for a geometry, and for a
    geography longitudes and latitudes in range (xmin > xmax: across the antimeridian)."""
    if not isinstance(t, (T.GeometryType, T.GeographyType)):
        raise ValidationError(f"a box filters geometry and geography columns only{where}, not {t}")
    try:
        xmin, ymin, xmax, ymax = (float(v) for v in box)
    except (TypeError, ValueError):
        raise ValidationError(f"a box is (xmin, ymin, xmax, ymax), got {box!r}{where}") from None
    if not all(map(math.isfinite, (xmin, ymin, xmax, ymax))) or ymin > ymax:
        raise ValidationError(f"box {box!r} is not (xmin, ymin, xmax, ymax) with ymin <= ymax{where}")
    if isinstance(t, T.GeometryType) and xmin > xmax:
        raise ValidationError(f"box {box!r} has xmin > xmax{where}: only a geography's box crosses the antimeridian")
    if isinstance(t, T.GeographyType) and not (max(abs(xmin), abs(xmax)) <= 180 and max(abs(ymin), abs(ymax)) <= 90):
        raise ValidationError(f"box {box!r} is outside longitudes [-180, 180] and latitudes [-90, 90]{where}")
    return xmin, ymin, xmax, ymax


# --- evaluation ---------------------------------------------------------------------------------------

def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def test_predicate(p: BoundPredicate, v: Any) -> bool:
    """Whether value ``v`` of the predicate's field satisfies it (SQL null semantics, Iceberg NaN rules)."""
    op = p.op
    if op == "is_null":
        return v is None
    if op == "not_null":
        return v is not None
    if op == "is_nan":
        return _is_nan(v)
    if op == "not_nan":
        return not _is_nan(v)
    if v is None:
        return False
    if op in SPATIAL:
        from sparkberg.format.geo import box_of  # (numpy and pyarrow: only once a spatial predicate is tested)
        box = box_of(p.field_type, v)  # (a value without a box, as a file without bounds, may meet any)
        meets = box is None or boxes_intersect(box, p.value, isinstance(p.field_type, T.GeographyType))
        return meets if op == "st_intersects" else not meets
    if op == "in":
        return v in p.value
    if op == "not_in":
        return v not in p.value
    if op == "starts_with":
        return v.startswith(p.value)
    if op == "not_starts_with":
        return not v.startswith(p.value)
    if _is_nan(v):
        return op == "not_eq"
    x = p.value
    if op == "eq":
        return v == x
    if op == "not_eq":
        return v != x
    if op == "lt":
        return v < x
    if op == "lt_eq":
        return v <= x
    if op == "gt":
        return v > x
    if op == "gt_eq":
        return v >= x
    raise ValidationError(f"unknown operation {op!r}")


def boxes_intersect(a: tuple, b: tuple, wraps: bool) -> bool:
    """Whether boxes (xmin, ymin, xmax, ymax) share a point; with ``wraps`` (geography), a box whose xmin is greater
    than its xmax crosses the antimeridian (it holds x >= xmin or x <= xmax), as the spec's bounds say."""
    if a[1] > b[3] or a[3] < b[1]:
        return False

    def spans(lo: float, hi: float) -> list[tuple[float, float]]:
        return [(lo, hi)] if lo <= hi or not wraps else [(lo, 180.0), (-180.0, hi)]

    return any(lo1 <= hi2 and lo2 <= hi1 for lo1, hi1 in spans(a[0], a[2]) for lo2, hi2 in spans(b[0], b[2]))


Leaf = Callable[[Any], bool]


class _Tester(Visitor[Callable[[Leaf], bool]]):
    """A tree as one function of a leaf test: nested closures that stop at the first deciding side."""

    def always_true(self) -> Callable[[Leaf], bool]:
        return lambda leaf: True

    def always_false(self) -> Callable[[Leaf], bool]:
        return lambda leaf: False

    def and_(self, left: Callable[[Leaf], bool], right: Callable[[Leaf], bool]) -> Callable[[Leaf], bool]:
        return lambda leaf: left(leaf) and right(leaf)

    def or_(self, left: Callable[[Leaf], bool], right: Callable[[Leaf], bool]) -> Callable[[Leaf], bool]:
        return lambda leaf: left(leaf) or right(leaf)

    def predicate(self, p: Expression) -> Callable[[Leaf], bool]:
        return lambda leaf: leaf(p)


def tester(e: Expression) -> Callable[[Leaf], bool]:
    """``e`` (negations pushed down first) made once into a function of a leaf test, ``leaf(predicate) -> bool``:
    And and Or stop at the first side that decides, as Iceberg's evaluators do."""
    return visit(rewrite_not(e), _Tester())


def row_evaluator(e: Bound) -> Callable[[dict[int, Any]], bool]:
    """:func:`evaluate` of ``e`` made once, for many rows (partition tuples, files): the tree is walked once,
    each row only tests its predicates."""
    test = tester(e)
    return lambda row: test(lambda p: test_predicate(p, row.get(p.field_id)))


def evaluate(e: Bound, row: dict[int, Any]) -> bool:
    """The reference evaluator: whether a row (values keyed by field id) matches a bound expression (negations
    pushed down first, as Iceberg evaluates: NOT(x < 5) is x >= 5, false for null)."""
    return row_evaluator(e)(row)


class _Predicates(Visitor[list]):
    def always_true(self) -> list:
        return []

    def always_false(self) -> list:
        return []

    def and_(self, left: list, right: list) -> list:
        return left + right

    def or_(self, left: list, right: list) -> list:
        return left + right

    def not_(self, child: list) -> list:
        return child

    def predicate(self, p: Expression) -> list:
        return [p] if isinstance(p, (Predicate, BoundPredicate)) else []


def predicates(e: Expression) -> Iterable[Expression]:
    """Every predicate of an expression tree."""
    return iter(visit(e, _Predicates()))
