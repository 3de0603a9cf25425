"""Evaluators that decide from statistics whether rows *may* match (never a false "no"):

- :func:`manifest_may_match`: a partition predicate against a manifest's partition field summaries
  (as Iceberg Java's ``ManifestEvaluator``);
- :func:`metrics_may_match`: a row predicate against a data file's column metrics: value, null and NaN
  counts and lower/upper bounds (as Iceberg Java's ``InclusiveMetricsEvaluator``; bounds may be truncated,
  so string/binary upper bounds are never trusted for equality beyond their prefix).
"""
from __future__ import annotations

import math
import struct
from typing import Any, Callable, Sequence

from sparkberg.arrays import binary_offsets, int_values, valid_mask
from sparkberg.expressions.predicates import Bound, BoundPredicate, Fold, boxes_intersect, rewrite_not, tester, visit
from sparkberg.format import types as T
from sparkberg.format.values import from_bytes

IN_PREDICATE_LIMIT = 200


def _decode(t: T.IcebergType, b: bytes | None) -> Any:
    if b is None:
        return None
    try:
        return from_bytes(t, b)
    except Exception:  # noqa: BLE001 - unreadable bound: treat as absent (may match)
        return None


def _walk(e: Bound, leaf) -> bool:
    """Whether ``e`` may match, ``leaf`` answering for each predicate (negations pushed down first; And and Or
    stop at the first deciding side)."""
    return tester(e)(leaf)


def _is_float(t: T.IcebergType) -> bool:
    return t in (T.FLOAT, T.DOUBLE)


def _cmp_key(v: Any) -> Any:
    if isinstance(v, float) and v == 0.0:
        return (0.0, math.copysign(1.0, v))  # -0.0 before +0.0
    if isinstance(v, float):
        return (v, 0.0)
    return v


def _range_may_match(op: str, value: Any, lower: Any, upper: Any, t: T.IcebergType) -> bool:
    """Whether some x in [lower, upper] (either may be None = unknown) satisfies ``x op value``."""
    if isinstance(value, float) and math.isnan(value):
        return True
    truncatable = t in (T.STRING, T.BINARY)
    if op in ("lt", "lt_eq"):
        if lower is None:
            return True
        lo, v = _cmp_key(lower), _cmp_key(value)
        return lo < v if op == "lt" else lo <= v
    if op in ("gt", "gt_eq"):
        if upper is None:
            return True
        hi, v = _cmp_key(upper), _cmp_key(value)
        return hi > v if op == "gt" else hi >= v
    if op == "eq":
        if lower is not None and _cmp_key(lower) > _cmp_key(value):
            return False
        if upper is not None and _cmp_key(upper) < _cmp_key(value):
            return False
        return True
    if op == "in":
        if len(value) > IN_PREDICATE_LIMIT:
            return True
        return any(_range_may_match("eq", v, lower, upper, t) for v in value)
    if op == "starts_with":
        if lower is not None:
            lp = lower[:len(value)]
            if lp > value:
                return False
        if upper is not None:
            up = upper[:len(value)]
            if up < value:
                return False
        return True
    del truncatable
    return True


def _file_box(lower: bytes | None, upper: bytes | None) -> tuple[float, float, float, float] | None:
    """(xmin, ymin, xmax, ymax) of a geometry or geography column's bounds (two points, x:y first, Appendix D), or
    None where they are missing, unreadable or NaN (the box is then not reliable, as the Parquet spec says)."""
    if lower is None or upper is None or len(lower) < 16 or len(upper) < 16:
        return None
    (xmin, ymin), (xmax, ymax) = struct.unpack_from("<2d", lower), struct.unpack_from("<2d", upper)
    return None if any(map(math.isnan, (xmin, ymin, xmax, ymax))) else (xmin, ymin, xmax, ymax)


# --- manifests ------------------------------------------------------------------------------------------

def manifest_may_match(partition_pred: Bound, partition_type: T.StructType, summaries: Sequence[Any] | None) -> bool:
    """Whether a manifest with these partition field summaries may hold a partition matching the predicate."""
    return manifest_evaluator(partition_pred, partition_type)(summaries)


def manifest_evaluator(partition_pred: Bound, partition_type: T.StructType
                       ) -> Callable[[Sequence[Any] | None], bool]:
    """:func:`manifest_may_match` of one predicate made once, for the summaries of many manifests."""
    pos = {f.field_id: i for i, f in enumerate(partition_type.fields)}
    test = tester(partition_pred)

    def may_match(summaries: Sequence[Any] | None) -> bool:
        if summaries is None:
            return True

        def leaf(p: BoundPredicate) -> bool:
            i = pos.get(p.field_id)
            if i is None or i >= len(summaries):
                return True
            s = summaries[i]
            t = partition_type.fields[i].field_type
            lower, upper = _decode(t, s.lower_bound), _decode(t, s.upper_bound)
            all_null_or_nan = lower is None and upper is None
            if p.op == "is_null":
                return bool(s.contains_null)
            if p.op == "not_null":
                return not (s.contains_null and all_null_or_nan and s.contains_nan is False)
            if p.op == "is_nan":
                return s.contains_nan is not False
            if p.op == "not_nan":
                return not (s.contains_nan and all_null_or_nan and not s.contains_null)
            if p.op in ("not_eq", "not_in", "not_starts_with"):
                return True
            if all_null_or_nan:
                return False  # only nulls/NaNs: no comparison can match
            return _range_may_match(p.op, p.value, lower, upper, t)

        return test(leaf)
    return may_match


def manifest_mask(partition_pred: Bound, partition_type: T.StructType, n: int, summaries) -> Any:
    """:func:`manifest_may_match` for ``n`` manifests at once, as a numpy bool array, or None when the predicate
    has a leaf this vectorized form does not cover (then evaluate manifest by manifest). ``summaries(k)``
    returns partition field ``k``'s summaries of every manifest: (known, contains_null, contains_nan as -1
    unknown / 0 / 1, lower bounds, upper bounds as Arrow binary arrays), ``known`` false where a manifest has
    no summary for the field (it may match). Covered: predicates on fields of integral types."""
    import numpy as np

    leaves: list[BoundPredicate] = []
    pos = {f.field_id: i for i, f in enumerate(partition_type.fields)}
    if not _collect_leaves(partition_pred, leaves) or any(
            p.field_id in pos and (partition_type.fields[pos[p.field_id]].field_type not in INTEGRAL_TYPES or
                                   p.op not in _OPS) for p in leaves):
        return None
    cache: dict[int, tuple] = {}

    def field(k: int) -> tuple:
        if k not in cache:
            known, nulls, nans, lower, upper = summaries(k)
            lo, lo_known = _integral_bounds(lower)
            hi, hi_known = _integral_bounds(upper)
            cache[k] = known, nulls, nans, lo, lo_known, hi, hi_known
        return cache[k]

    def leaf(p: BoundPredicate):
        k = pos.get(p.field_id)
        if k is None:
            return np.ones(n, bool)
        known, nulls, nans, lo, lo_known, hi, hi_known = field(k)
        all_null_or_nan = ~lo_known & ~hi_known
        if p.op == "is_null":
            out = nulls
        elif p.op == "not_null":
            out = ~(nulls & all_null_or_nan & (nans == 0))
        elif p.op == "is_nan":
            out = nans != 0
        elif p.op == "not_nan":
            out = ~((nans == 1) & all_null_or_nan & ~nulls)
        elif p.op in ("not_eq", "not_in", "not_starts_with"):
            out = np.ones(n, bool)
        else:
            out = ~all_null_or_nan & _range_mask(p.op, p.value, lo, lo_known, hi, hi_known, n)
        return out | ~known

    return walk_mask(partition_pred, leaf, n)


def walk_mask(e: Bound, leaf: Callable[[Any], Any], n: int) -> Any:
    """:func:`_walk` of many rows at once: ``leaf`` returns a numpy bool array of ``n`` per predicate; the
    expression's negations pushed down first, as every evaluator here."""
    import numpy as np
    return visit(rewrite_not(e), Fold(leaf, np.ones(n, bool), np.zeros(n, bool), lambda a, b: a & b,
                                      lambda a, b: a | b))


def _range_mask(op: str, value: Any, lower, lower_known, upper, upper_known, n: int):
    """:func:`_range_may_match` of integer bounds (unknown where not ``*_known``) for many at once."""
    import numpy as np
    if op == "in":
        if len(value) > IN_PREDICATE_LIMIT:
            return np.ones(n, bool)
        out = np.zeros(n, bool)
        for v in value:
            out |= _range_mask("eq", v, lower, lower_known, upper, upper_known, n)
        return out
    if op == "lt":
        return ~lower_known | (lower < value)
    if op == "lt_eq":
        return ~lower_known | (lower <= value)
    if op == "gt":
        return ~upper_known | (upper > value)
    if op == "gt_eq":
        return ~upper_known | (upper >= value)
    return (~lower_known | ~(lower > value)) & (~upper_known | ~(upper < value))  # eq


# --- data file metrics -------------------------------------------------------------------------------------

def metrics_may_match(pred: Bound, schema_types: dict[int, T.IcebergType], record_count: int,
                      value_counts: dict | None, null_counts: dict | None, nan_counts: dict | None,
                      lower_bounds: dict | None, upper_bounds: dict | None) -> bool:
    """Whether a file with these metrics may hold a row matching ``pred`` (bound to the table schema)."""
    if record_count == 0:
        return False
    value_counts = value_counts or {}
    null_counts = null_counts or {}
    nan_counts = nan_counts or {}
    lower_bounds = lower_bounds or {}
    upper_bounds = upper_bounds or {}

    def all_nulls(fid: int) -> bool:
        vc, nc = value_counts.get(fid), null_counts.get(fid)
        return vc is not None and nc is not None and vc == nc

    def all_nans(fid: int) -> bool:
        vc, nn = value_counts.get(fid), nan_counts.get(fid)
        return vc is not None and nn is not None and vc == nn

    def leaf(p: BoundPredicate) -> bool:
        fid = p.field_id
        t = schema_types.get(fid, p.field_type)
        if not t.is_primitive:
            return True
        if p.op == "is_null":
            nc = null_counts.get(fid)
            return nc is None or nc > 0
        if p.op == "not_null":
            return not all_nulls(fid)
        if p.op == "is_nan":
            nn = nan_counts.get(fid)
            if nn is not None and nn == 0:
                return False
            return not all_nulls(fid)
        if p.op == "not_nan":
            return not all_nans(fid)
        if p.op in ("not_eq", "not_in", "not_starts_with", "st_disjoint"):
            return True
        if all_nulls(fid) or all_nans(fid):
            return False
        if p.op == "st_intersects":
            box = _file_box(lower_bounds.get(fid), upper_bounds.get(fid))
            return box is None or boxes_intersect(box, p.value, isinstance(t, T.GeographyType))
        lower = _decode(t, lower_bounds.get(fid))
        upper = _decode(t, upper_bounds.get(fid))
        if _is_float(t):
            # a NaN bound was written by a broken writer: trust nothing; NaNs are not in bounds anyway
            if (lower is not None and math.isnan(lower)) or (upper is not None and math.isnan(upper)):
                return True
        if p.op == "starts_with" and t != T.STRING:
            return True
        return _range_may_match(p.op, p.value, lower, upper, t)

    return _walk(pred, leaf)


def metrics_must_match(pred: Bound, schema_types: dict[int, T.IcebergType], record_count: int,
                       value_counts: dict | None, null_counts: dict | None, nan_counts: dict | None,
                       lower_bounds: dict | None, upper_bounds: dict | None) -> bool:
    """Whether every row of a file with these metrics matches ``pred`` (Iceberg Java's StrictMetricsEvaluator), so a
    delete by ``pred`` can drop the file whole. Unknown metrics prove nothing; a column that may hold nulls or NaNs
    proves no comparison (a null or NaN compares true with nothing in Spark SQL)."""
    if record_count == 0:
        return True
    value_counts, null_counts = value_counts or {}, null_counts or {}
    nan_counts, lower_bounds, upper_bounds = nan_counts or {}, lower_bounds or {}, upper_bounds or {}

    def nulls_only(fid: int) -> bool:
        vc, nc = value_counts.get(fid), null_counts.get(fid)
        return vc is not None and nc is not None and vc == nc

    def no_nulls_nor_nans(fid: int, t: T.IcebergType) -> bool:
        return null_counts.get(fid) == 0 and (not _is_float(t) or nan_counts.get(fid) == 0)

    def leaf(p: BoundPredicate) -> bool:
        fid = p.field_id
        t = schema_types.get(fid, p.field_type)
        if not t.is_primitive:
            return False
        if p.op == "is_null":
            return nulls_only(fid)
        if p.op == "not_null":
            return null_counts.get(fid) == 0
        if p.op == "not_nan":
            return _is_float(t) and (nan_counts.get(fid) == 0 or nulls_only(fid))
        if p.op == "is_nan" or not no_nulls_nor_nans(fid, t):
            return False
        if p.op in ("st_intersects", "st_disjoint"):
            # no geometry's box meets the query's if the file's does not. Not a geography's: which side of a ring
            # is a polygon's inside is the engine's to say (format/geo.py takes the smaller), and a file dropped
            # whole on that reading cannot be taken back
            box = _file_box(lower_bounds.get(fid), upper_bounds.get(fid))
            return p.op == "st_disjoint" and isinstance(t, T.GeometryType) and box is not None and \
                not boxes_intersect(box, p.value, False)
        lower, upper = _decode(t, lower_bounds.get(fid)), _decode(t, upper_bounds.get(fid))
        if _is_float(t) and any(b is not None and math.isnan(b) for b in (lower, upper)):
            return False
        lo = None if lower is None else _cmp_key(lower)
        hi = None if upper is None else _cmp_key(upper)
        if p.op in ("lt", "lt_eq"):
            v = _cmp_key(p.value)
            return hi is not None and (hi < v if p.op == "lt" else hi <= v)
        if p.op in ("gt", "gt_eq"):
            v = _cmp_key(p.value)
            return lo is not None and (lo > v if p.op == "gt" else lo >= v)
        if lo is None or hi is None:
            return False
        truncatable = t in (T.STRING, T.BINARY)  # (their bounds may be prefixes: equal bounds prove no equality)
        if p.op == "eq":
            return not truncatable and lo == hi == _cmp_key(p.value)
        if p.op == "in":
            return not truncatable and lo == hi and any(lo == _cmp_key(v) for v in p.value)
        if p.op == "not_eq":
            v = _cmp_key(p.value)
            return v < lo or v > hi
        if p.op == "not_in":
            return all(_cmp_key(v) < lo or _cmp_key(v) > hi for v in p.value)
        if p.op == "starts_with" and t == T.STRING:
            return lower.startswith(p.value) and upper.startswith(p.value) and \
                len(lower) >= len(p.value) and len(upper) >= len(p.value)
        return False

    return _walk(pred, leaf)


# --- data file metrics, a column at a time ------------------------------------------------------------------

# types whose single-value bounds are little-endian two's-complement integers (Appendix D) and compare as ints
INTEGRAL_TYPES = (T.INT, T.LONG, T.DATE, T.TIME, T.TIMESTAMP, T.TIMESTAMPTZ, T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS)
_OPS = ("is_null", "not_null", "is_nan", "not_nan", "not_eq", "not_in", "not_starts_with", "lt", "lt_eq", "gt",
        "gt_eq", "eq", "in")


def metrics_mask(pred: Bound, schema_types: dict[int, T.IcebergType], record_counts, metrics) -> Any:
    """:func:`metrics_may_match` for many files at once, as a numpy bool array, or None when ``pred`` has a
    predicate this vectorized form does not cover (then evaluate file by file). ``metrics(name, field_id)``
    returns the per-file values of one metrics map (``value_counts``, ``null_value_counts``,
    ``nan_value_counts``, ``lower_bounds``, ``upper_bounds``) for one field as an Arrow array (null = absent).
    Covered: every predicate on int, long, date, time and timestamp columns (their bounds compare as integers)."""
    import numpy as np

    leaves: list[BoundPredicate] = []
    if not _collect_leaves(pred, leaves) or any(
            schema_types.get(p.field_id, p.field_type) not in INTEGRAL_TYPES or p.op not in _OPS for p in leaves):
        return None
    n = len(record_counts)
    cache: dict[tuple[str, int], Any] = {}

    def counts(name: str, fid: int):
        key = (name, fid)
        if key not in cache:
            cache[key] = int_values(metrics(name, fid))
        return cache[key]

    def bound(name: str, fid: int):
        key = (name, fid)
        if key not in cache:
            cache[key] = _integral_bounds(metrics(name, fid))
        return cache[key]

    def all_of(count_name: str, fid: int):
        vc, vc_known = counts("value_counts", fid)
        c, c_known = counts(count_name, fid)
        return vc_known & c_known & (vc == c)

    def range_match(op: str, value: Any, fid: int):
        lower, lower_known = bound("lower_bounds", fid)
        upper, upper_known = bound("upper_bounds", fid)
        return _range_mask(op, value, lower, lower_known, upper, upper_known, n)

    def leaf(p: BoundPredicate):
        fid = p.field_id
        if p.op == "is_null":
            nc, known = counts("null_value_counts", fid)
            return ~known | (nc > 0)
        if p.op == "not_null":
            return ~all_of("null_value_counts", fid)
        if p.op == "is_nan":
            nn, known = counts("nan_value_counts", fid)
            return ~(known & (nn == 0)) & ~all_of("null_value_counts", fid)
        if p.op == "not_nan":
            return ~all_of("nan_value_counts", fid)
        if p.op in ("not_eq", "not_in", "not_starts_with"):
            return np.ones(n, bool)
        return ~all_of("null_value_counts", fid) & ~all_of("nan_value_counts", fid) & range_match(p.op, p.value, fid)

    return (np.asarray(record_counts) != 0) & walk_mask(pred, leaf, n)


def _integral_bounds(arr) -> tuple:
    """(values, known) of Appendix D integer bounds (4 or 8 bytes, little-endian; other lengths are unreadable,
    hence unknown) in a binary Arrow array: straight from the buffer when every bound has the same width."""
    import numpy as np
    arr, offsets = binary_offsets(arr)
    n = len(arr)
    valid = valid_mask(arr)
    if not valid.any():
        return np.zeros(n, np.int64), valid
    lengths = np.diff(offsets)
    widths = np.unique(lengths[valid])
    if len(widths) == 1 and widths[0] in (4, 8) and not lengths[~valid].any():  # null slots hold no bytes
        data = np.frombuffer(arr.buffers()[2], np.uint8)[offsets[0]:offsets[-1]]
        values = np.zeros(n, np.int64)
        values[valid] = data.view("<i4" if widths[0] == 4 else "<i8")
        return values, valid
    known = valid & ((lengths == 4) | (lengths == 8))
    raw = arr.to_pylist()
    return np.array([int.from_bytes(b, "little", signed=True) if k else 0 for b, k in zip(raw, known)],
                    np.int64), known


def predicate_field_ids(pred: Bound) -> frozenset[int] | None:
    """The field ids whose metrics :func:`metrics_may_match` and :func:`metrics_mask` read to evaluate
    ``pred`` (those of its predicates), or None for an expression of another kind (then any may be read)."""
    leaves: list[BoundPredicate] = []
    return frozenset(p.field_id for p in leaves) if _collect_leaves(pred, leaves) else None


def _collect_leaves(e: Bound, out: list) -> bool:
    """Whether every predicate of ``e`` (negations pushed down) is bound; each appended to ``out``."""
    def leaf(p) -> bool:
        if isinstance(p, BoundPredicate):
            out.append(p)
            return True
        return False
    return visit(rewrite_not(e), Fold(leaf, True, True, lambda a, b: a and b, lambda a, b: a and b))
