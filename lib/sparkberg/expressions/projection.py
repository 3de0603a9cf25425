"""Projection of row predicates through partition transforms (spec: "Scan Planning"; the rules of Iceberg
Java's ``ProjectionUtil``).

- inclusive: if an expression matches a row, the projected expression matches the row's partition;
  used to select files that *may* hold matching rows.
- strict: if the projected expression matches a partition, the expression matches every row in it;
  used to find files whose rows *all* match (whole-file deletes).

Projected predicates are :class:`BoundPredicate`s on partition field ids with the transform's result
type, so :func:`sparkberg.expressions.predicates.evaluate` tests them on partition tuples.
"""
from __future__ import annotations

import decimal
from typing import Any, Callable

from sparkberg.expressions.predicates import (
    FALSE, TRUE, Bound, BoundPredicate, Expression, Rebuild, and_, or_, rewrite_not, visit,
)
from sparkberg.format import types as T
from sparkberg.format.partitioning import PartitionField, PartitionSpec
from sparkberg.format.transforms import (
    BucketTransform, IdentityTransform, TruncateTransform, VoidTransform, _TimeTransform,
)
from sparkberg.format.scalars import decimal_unscaled, unscaled_to_decimal


def inclusive_projection(expr: Expression, spec: PartitionSpec, schema: T.Schema) -> Bound:
    """A partition predicate matching the partition of every row that ``expr`` (bound) matches."""
    return _project(rewrite_not(expr), spec, schema, strict=False)


def strict_projection(expr: Expression, spec: PartitionSpec, schema: T.Schema) -> Bound:
    """A partition predicate that matches only partitions whose every row ``expr`` (bound) matches."""
    return _project(rewrite_not(expr), spec, schema, strict=True)


class _Projection(Rebuild):
    def __init__(self, spec: PartitionSpec, schema: T.Schema, strict: bool):
        self.spec, self.schema, self.strict = spec, schema, strict

    def not_(self, child: Expression) -> Expression:  # (only left where rewrite_not could not push it down)
        return FALSE if self.strict else TRUE

    def predicate(self, p: Expression) -> Expression:
        return _project_predicate(p, self.spec, self.schema, self.strict)


def _project(e: Expression, spec: PartitionSpec, schema: T.Schema, strict: bool) -> Bound:
    return visit(e, _Projection(spec, schema, strict))


def _project_predicate(e: Expression, spec: PartitionSpec, schema: T.Schema, strict: bool) -> Bound:
    assert isinstance(e, BoundPredicate), f"bind the expression before projecting it: {e!r}"
    by_id = schema.index_by_id()
    parts = []
    for f in spec.fields:
        if f.source_id != e.field_id or len(f.all_source_ids) > 1:
            continue
        src = by_id.get(f.source_id)
        if src is None or not f.transform.is_known:
            continue
        projected = project_predicate(e, f, src.field_type, strict)
        if projected is not None:
            parts.append(projected)
    if strict:
        return or_(*parts) if parts else FALSE
    return and_(*parts) if parts else TRUE


def project_predicate(p: BoundPredicate, field: PartitionField, source: T.IcebergType, strict: bool
                      ) -> Bound | None:
    """Project one predicate through one partition field's transform; None when nothing can be said."""
    tr = field.transform
    result_type = tr.result_type(source)

    def pred(op: str, value: Any = None) -> BoundPredicate:
        return BoundPredicate(op, field.field_id, result_type, value, field.name)

    if isinstance(tr, VoidTransform):
        if p.op == "is_null" and not strict:
            return TRUE
        return None
    if p.op in ("is_null", "not_null"):
        return pred(p.op)
    if isinstance(tr, IdentityTransform):
        return pred(p.op, p.value)
    if p.op in ("is_nan", "not_nan"):
        return None
    apply = tr.apply(source)
    if isinstance(tr, BucketTransform):
        return _bucket(p, apply, pred, strict)
    if isinstance(tr, TruncateTransform):
        if source == T.STRING:
            return _truncate_string(p, tr.width, apply, pred, strict)
        if source == T.BINARY:
            return _truncate_binary(p, tr.width, apply, pred, strict)
        return _ordered(p, apply, pred, strict, _unit_step(source))
    if isinstance(tr, _TimeTransform):
        out = _ordered(p, apply, pred, strict, lambda v, d: v + d)
        return _fix_time_inclusive(out) if not strict else _fix_time_strict(out)
    return None


def _unit_step(source: T.IcebergType) -> Callable[[Any, int], Any]:
    """v + d in units of the type's last digit (1 for integers, 10^-scale for decimals)."""
    if isinstance(source, T.DecimalType):
        def step(v: decimal.Decimal, d: int) -> decimal.Decimal:
            return unscaled_to_decimal(decimal_unscaled(v, source.scale) + d, source.scale)
        return step
    return lambda v, d: v + d


def _bucket(p: BoundPredicate, apply, pred, strict: bool):
    if not strict:
        if p.op == "eq":
            return pred("eq", apply(p.value))
        if p.op == "in":
            return pred("in", frozenset(apply(v) for v in p.value))
        return None
    if p.op == "not_eq":
        return pred("not_eq", apply(p.value))
    if p.op == "not_in":
        return pred("not_in", frozenset(apply(v) for v in p.value))
    return None


def _ordered(p: BoundPredicate, apply, pred, strict: bool, step):
    """Order-preserving transforms (integer/decimal truncate, year/month/day/hour)."""
    op, v = p.op, p.value
    if not strict:
        if op == "lt":
            return pred("lt_eq", apply(step(v, -1)))
        if op == "lt_eq":
            return pred("lt_eq", apply(v))
        if op == "gt":
            return pred("gt_eq", apply(step(v, 1)))
        if op == "gt_eq":
            return pred("gt_eq", apply(v))
        if op == "eq":
            return pred("eq", apply(v))
        if op == "in":
            return pred("in", frozenset(apply(x) for x in v))
        return None
    if op == "lt":
        return pred("lt", apply(v))
    if op == "lt_eq":
        return pred("lt", apply(step(v, 1)))
    if op == "gt":
        return pred("gt", apply(v))
    if op == "gt_eq":
        return pred("gt", apply(step(v, -1)))
    if op == "not_eq":
        return pred("not_eq", apply(v))
    if op == "not_in":
        return pred("not_in", frozenset(apply(x) for x in v))
    return None


def _fix_time_inclusive(out):
    """Writers before Iceberg 0.13 rounded pre-epoch times toward zero; widen to also keep those files (as
    Java's ``fixInclusiveTimeProjection``)."""
    if not isinstance(out, BoundPredicate):
        return out
    v = out.value
    if out.op in ("lt", "lt_eq") and v < 0:
        return BoundPredicate(out.op, out.field_id, out.field_type, v + 1, out.name)
    if out.op == "eq" and v < 0:
        return BoundPredicate("in", out.field_id, out.field_type, frozenset((v, v + 1)), out.name)
    if out.op == "in" and any(x < 0 for x in v):
        return BoundPredicate("in", out.field_id, out.field_type, frozenset(v) | {x + 1 for x in v if x < 0},
                              out.name)
    return out


def _fix_time_strict(out):
    """Strictness cannot be promised for pre-epoch partition values (see :func:`_fix_time_inclusive`)."""
    if not isinstance(out, BoundPredicate):
        return out
    values = out.value if out.op == "not_in" else (out.value,)
    if any(x is not None and x <= 0 for x in values):
        return None
    return out


_UNHANDLED = object()


def _prefix_inclusive(op: str, v, apply, pred):
    """Inclusive rules shared by string and binary truncation (prefixes keep order, not strictness)."""
    if op in ("lt", "lt_eq"):
        return pred("lt_eq", apply(v))
    if op in ("gt", "gt_eq"):
        return pred("gt_eq", apply(v))
    if op == "eq":
        return pred("eq", apply(v))
    if op == "in":
        return pred("in", frozenset(apply(x) for x in v))
    return _UNHANDLED


def _truncate_string(p: BoundPredicate, w: int, apply, pred, strict: bool):
    op, v = p.op, p.value
    if not strict:
        shared = _prefix_inclusive(op, v, apply, pred)
        if shared is not _UNHANDLED:
            return shared
        if op == "starts_with":
            return pred("starts_with", v) if len(v) < w else pred("eq", apply(v))
        if op == "not_starts_with":
            if len(v) < w:
                return pred("not_starts_with", v)
            if len(v) == w:
                return pred("not_eq", v)
            return None
        return None
    short = len(v) < w if isinstance(v, str) else False
    if op == "lt":
        return pred("lt", apply(v))
    if op == "lt_eq":
        return pred("lt_eq", v) if short else pred("lt", apply(v))
    if op == "gt":
        return pred("gt", apply(v))
    if op == "gt_eq":
        return pred("gt_eq", v) if short else pred("gt", apply(v))
    if op == "eq":
        return pred("eq", v) if short else None
    if op == "not_eq":
        return pred("not_eq", apply(v))
    if op == "not_in":
        return pred("not_in", frozenset(apply(x) for x in v))
    if op == "starts_with":
        return pred("starts_with", v) if len(v) <= w else None
    if op == "not_starts_with":
        return pred("not_starts_with", apply(v))
    return None


def _truncate_binary(p: BoundPredicate, w: int, apply, pred, strict: bool):
    op, v = p.op, p.value
    if not strict:
        shared = _prefix_inclusive(op, v, apply, pred)
        return None if shared is _UNHANDLED else shared
    if op == "not_eq":
        return pred("not_eq", apply(v))
    if op == "not_in":
        return pred("not_in", frozenset(apply(x) for x in v))
    if op == "lt":
        return pred("lt", apply(v))
    if op == "gt":
        return pred("gt", apply(v))
    return None
