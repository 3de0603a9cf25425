"""Spark SQL filter strings into Iceberg predicates, for pruning, and into tests of Arrow rows.

The filter itself is applied by Spark to the rows; what :func:`translate_filter` returns is a *weakening*:
every row the SQL filter keeps also satisfies the translation, so pruning with it never drops a
matching file. What it cannot translate (functions, arithmetic, casts, column-to-column comparisons,
literals whose conversion could differ from Spark's) becomes ``TRUE`` (or ``FALSE`` under a ``NOT``).
Comparisons of floating-point columns prune as Iceberg Java's Spark integration prunes them (NaN matches
no ordering comparison, ``-0.0`` sorts before ``0.0``), so the rows are the ones Iceberg Java returns.

:func:`row_filter` is the other use: a filter made only of the predicates translated exactly, evaluated over
Arrow batches of the rows with Spark's semantics, where a small operation finds its rows on the driver instead of
in a Spark job (:func:`sparkberg.operations.rowlevel.matched_on_driver`).
"""
from __future__ import annotations

import datetime as _dt
import functools
import re
import uuid as _uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable

from sparkberg.errors import ValidationError
from sparkberg.expressions.predicates import (
    FALSE, TRUE, Expression, Predicate, and_, convert_literal, not_, or_, rewrite_not,
)
from sparkberg.expressions.spatial import FUNCTIONS as SPATIAL_FUNCTIONS, implied_box
from sparkberg.expressions.tree import Col, Lit, Node, Opaque
from sparkberg.format import types as T
from sparkberg.format.scalars import datetime_to_micros, zone_of

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?(?:BD|bd|[LlDdFfSsYy])?)
  | (?P<str>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*")
  | (?P<bq>`(?:[^`]|``)+`)
  | (?P<op><=>|<=|>=|<>|!=|==|=|<|>|\(|\)|,|\.|\*|\+|-|/|%|!)
  | (?P<id>[A-Za-z_][A-Za-z_0-9]*)
""", re.X)
# a number in a string literal as Spark and Python read it alike: ASCII digits, a point, an exponent
_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_KEYWORDS = {"and", "or", "not", "is", "null", "in", "between", "like", "true", "false", "date", "timestamp",
             "timestamp_ntz", "timestamp_ltz", "x"}


@dataclass(frozen=True)
class Filter:
    """A Spark SQL condition parsed once: ``text``, what Spark evaluates over the rows, and ``tree``, what the
    translations into Iceberg predicates and row tests read (None where no parser read it: a syntax this module's
    parser does not take, which Spark reports when it applies the filter). A filter string is parsed here
    (:meth:`of`); a SQL statement's WHERE arrives with the tree of the statement's own parse."""

    text: str
    tree: Any = None

    @classmethod
    def of(cls, condition: "str | Filter") -> "Filter":
        """``condition`` parsed (a :class:`Filter` as it is)."""
        if isinstance(condition, Filter):
            return condition
        try:
            return cls(condition, _Parser(condition).parse())
        except ValidationError:
            return cls(condition)

    def __str__(self) -> str:
        return self.text


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValidationError(f"cannot parse filter {text!r} at position {pos}: {text[pos:pos + 10]!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind != "ws":
            out.append((kind, m.group()))
    return out


def _unquote(s: str) -> str:
    q = s[0]
    body = s[1:-1]
    if q == "'":
        body = body.replace("''", "'")
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, k: int = 0) -> tuple[str, str] | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def kw(self, word: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t[0] == "id" and t[1].lower() == word

    def take(self) -> tuple[str, str]:
        t = self.peek()
        if t is None:
            raise ValidationError(f"unexpected end of filter {self.text!r}")
        self.i += 1
        return t

    def expect(self, value: str) -> None:
        t = self.take()
        if t[1].lower() != value:
            raise ValidationError(f"expected {value!r} in filter {self.text!r}, found {t[1]!r}")

    def parse(self):
        e = self.or_()
        if self.peek() is not None:
            raise ValidationError(f"unexpected {self.peek()[1]!r} in filter {self.text!r}")
        return e

    def or_(self):
        e = self.and_()
        while self.kw("or"):
            self.take()
            e = Node("or", (e, self.and_()))
        return e

    def and_(self):
        e = self.not_()
        while self.kw("and"):
            self.take()
            e = Node("and", (e, self.not_()))
        return e

    def not_(self):
        if self.kw("not") or (self.peek() and self.peek()[1] == "!"):
            self.take()
            return Node("not", (self.not_(),))
        return self.predicate()

    def predicate(self):
        left = self.operand()
        t = self.peek()
        if t is None:
            return left
        if t[0] == "op" and t[1] in ("=", "==", "<>", "!=", "<", "<=", ">", ">=", "<=>"):
            self.take()
            right = self.operand()
            return Node("cmp", (t[1], left, right))
        negate = False
        if self.kw("is"):
            self.take()
            if self.kw("not"):
                self.take()
                negate = True
            if self.kw("null"):
                self.take()
                return Node("isnull", (left, negate))
            if self.kw("true") or self.kw("false"):
                val = self.take()[1].lower() == "true"
                return Node("isbool", (left, val, negate))
            raise ValidationError(f"unsupported IS expression in filter {self.text!r}")
        if self.kw("not") and (self.kw("in", 1) or self.kw("between", 1) or self.kw("like", 1)):
            self.take()
            negate = True
        if self.kw("in"):
            self.take()
            self.expect("(")
            items = [self.operand()]
            while self.peek() and self.peek()[1] == ",":
                self.take()
                items.append(self.operand())
            self.expect(")")
            return Node("in", (left, tuple(items), negate))
        if self.kw("between"):
            self.take()
            lo = self.operand()
            self.expect("and")
            hi = self.operand()
            return Node("between", (left, lo, hi, negate))
        if self.kw("like"):
            self.take()
            return Node("like", (left, self.operand(), negate))
        return left

    def operand(self):
        """A column, a literal, a parenthesized expression, or anything else (opaque)."""
        node = self.atom()
        # arithmetic, concatenation and the like: consume and give up on translating
        while self.peek() and self.peek()[0] == "op" and self.peek()[1] in ("+", "-", "*", "/", "%"):
            self.take()
            self.atom()
            node = Opaque()
        return node

    def atom(self):
        kind, text = self.take()
        if kind == "op" and text == "(":
            e = self.or_()
            self.expect(")")
            return e
        if kind == "op" and text == "-":
            inner = self.atom()
            if isinstance(inner, Lit) and inner.kind == "number":
                return Lit(_negate(inner.value), "number")
            return Opaque()
        if kind == "num":
            return Lit(number_value(text), "number")
        if kind == "str":
            return Lit(_unquote(text), "string")
        if kind == "bq":
            name = text[1:-1].replace("``", "`")
            return self._dotted(name)
        if kind == "id":
            low = text.lower()
            nxt = self.peek()
            if low in ("date", "timestamp", "timestamp_ntz", "timestamp_ltz") and nxt and nxt[0] == "str":
                self.take()
                return Lit(_unquote(nxt[1]), {"timestamp_ltz": "timestamp"}.get(low, low))
            if low == "x" and nxt and nxt[0] == "str":
                self.take()
                return Lit(bytes.fromhex(_unquote(nxt[1])), "binary")
            if low in ("true", "false"):
                return Lit(low == "true", "bool")
            if low == "null":
                return Lit(None, "null")
            if nxt and nxt[1] == "(":  # a function call
                self.take()
                args = []
                if self.peek() and self.peek()[1] != ")":
                    args.append(self.or_())
                    while self.peek() and self.peek()[1] == ",":
                        self.take()
                        args.append(self.or_())
                self.expect(")")
                if low == "isnan" and len(args) == 1 and isinstance(args[0], Col):
                    return Node("isnan", (args[0],))
                if low in SPATIAL_FUNCTIONS:
                    return Node("call", (low, tuple(args)))
                return Opaque()
            return self._dotted(text)
        raise ValidationError(f"unexpected {text!r} in filter {self.text!r}")

    def _dotted(self, first: str):
        parts = [first]
        while self.peek() and self.peek()[1] == "." and self.peek(1) and self.peek(1)[0] in ("id", "bq"):
            self.take()
            kind, text = self.take()
            parts.append(text[1:-1].replace("``", "`") if kind == "bq" else text)
        return Col(".".join(parts))


def number_value(text: str) -> Any:
    """The value of a Spark SQL number literal as the parser reads it (``10``, ``10L``, ``1.5``, ``1.5D``, ``1e3``,
    ``1.5BD``)."""
    t = text.rstrip("LlDdFfSsYy")
    if text[-2:].lower() == "bd":
        return Decimal(text[:-2])
    if text[-1:] in "DdFf":
        return float(t)
    if any(c in t for c in ".eE"):
        return Decimal(t) if "e" not in t.lower() else float(t)
    return int(t)


def _negate(v: Any) -> Any:
    return -v


def _column_first(op: str, left, right) -> tuple[str, Any, Any]:
    """A comparison with its literal on the right (``5 < x`` is ``x > 5``)."""
    if isinstance(left, Lit) and isinstance(right, Col):
        return {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op), right, left
    return op, left, right


def _between_as_and(node: Node) -> Node:
    """``x [NOT] BETWEEN lo AND hi`` as Spark reads it: ``[NOT] (x >= lo AND x <= hi)``."""
    col, lo, hi, negate = node.args
    both = Node("and", (Node("cmp", (">=", col, lo)), Node("cmp", ("<=", col, hi))))
    return Node("not", (both,)) if negate else both


def _like_prefix(pattern: str) -> tuple[str | None, bool]:
    """(the text, whether it is the whole value) a LIKE pattern matches by: the pattern itself when it has no
    wildcard, its text before trailing ``%`` s; (None, False) for any other pattern (``_``, an escape, an inner
    ``%``)."""
    body = pattern.rstrip("%")
    if "\\" in pattern or "_" in body or "%" in body:
        return None, False
    return body, body == pattern


# --- translation -----------------------------------------------------------------------------------------

class _Translator:
    def __init__(self, schema: T.Schema, time_zone: str | Callable[[], str]):
        self.by_name = {k.lower(): v for k, v in schema.index_by_name().items()}
        self.time_zone = time_zone

    @functools.cached_property
    def tz(self) -> str:
        return self.time_zone() if callable(self.time_zone) else self.time_zone

    def field(self, node) -> T.NestedField | None:
        if isinstance(node, Col):
            f = self.by_name.get(node.name.lower())
            if f is not None and f.field_type.is_primitive:
                return f
        return None

    def geo_field(self, node) -> T.NestedField | None:
        """The geometry or geography field a column node names, or None."""
        f = self.field(node)
        return f if f is not None and isinstance(f.field_type, (T.GeometryType, T.GeographyType)) else None

    def literal(self, f: T.NestedField, lit: Lit) -> Any:
        """The literal as a value of the column's type the way Spark would compare them, or raise."""
        t = f.field_type
        if lit.kind == "null":
            raise ValueError("null literal")
        if t == T.STRING:
            if lit.kind != "string":
                raise ValueError("Spark compares a string column with a non-string literal numerically")
            return lit.value
        if t == T.BOOLEAN:
            if lit.kind != "bool":
                raise ValueError("not a boolean literal")
            return lit.value
        if t in (T.TIMESTAMPTZ, T.TIMESTAMPTZ_NS, T.TIMESTAMP, T.TIMESTAMP_NS):
            if lit.kind not in ("string", "timestamp", "timestamp_ntz", "date"):
                raise ValueError("not a timestamp literal")
            micros = self._micros(lit, zoned=t in (T.TIMESTAMPTZ, T.TIMESTAMPTZ_NS))
            return micros * 1000 if t in (T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS) else micros
        if t == T.DATE:
            if lit.kind not in ("string", "date"):
                raise ValueError("Spark compares a date with a timestamp as timestamps")
            return convert_literal(t, _dt.date.fromisoformat(lit.value.strip()[:10]) if lit.kind == "date"
                                   else lit.value.strip())
        if t == T.BINARY or isinstance(t, T.FixedType):
            # (Spark compares bytes as unsigned, as bounds do)
            if lit.kind != "binary":
                raise ValueError("not a binary literal")
            if isinstance(t, T.FixedType) and len(lit.value) != t.length:
                raise ValueError(f"a fixed[{t.length}] value has {t.length} bytes")
            return lit.value
        if t == T.UUID:
            # Spark compares the column as a string: only the canonical form orders (and equals) as the bytes do
            if lit.kind != "string" or str(_uuid.UUID(lit.value)) != lit.value:
                raise ValueError("not a UUID in canonical form")
            return convert_literal(t, lit.value)
        if lit.kind not in ("number", "string"):
            raise ValueError("not a numeric literal")
        if lit.kind == "string":  # (Python also reads '1_000' and other scripts' digits, which Spark casts to NULL)
            text = lit.value.strip(" \t\n\r\x0b\x0c")
            if not _DECIMAL_TEXT.fullmatch(text):
                raise ValueError("a string Spark may not read as this number")
            return convert_literal(t, text)
        return convert_literal(t, lit.value)

    def _micros(self, lit: Lit, zoned: bool) -> int:
        text = lit.value.strip().replace("T", " ")
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        ts = _dt.datetime.fromisoformat(text)
        if ts.tzinfo is None and zoned:
            ts = ts.replace(tzinfo=zone_of(self.tz))
        if ts.tzinfo is not None and not zoned:
            raise ValueError("a zoned literal against a timestamp without zone")
        return datetime_to_micros(ts)

    def translate(self, node, positive: bool, negated: bool = False) -> Expression:
        """A weakening of ``node`` (``positive``) or a strengthening; ``negated``: ``node`` is under an odd number
        of NOTs, which turn a row's FALSE into TRUE and leave its NULL NULL."""
        unknown = TRUE if positive else FALSE
        if isinstance(node, Node):
            k, a = node.kind, node.args
            if k == "and":
                return and_(self.translate(a[0], positive, negated), self.translate(a[1], positive, negated))
            if k == "or":
                return or_(self.translate(a[0], positive, negated), self.translate(a[1], positive, negated))
            if k == "not":
                return rewrite_not(not_(self.translate(a[0], not positive, not negated)))
            if k == "between":  # (either comparison may be one it cannot translate)
                return self.translate(_between_as_and(node), positive, negated)
            if k == "call":  # (a spatial relation implies its box, never the other way: no strengthening)
                implied = implied_box(node, self.geo_field) if positive else None
                return unknown if implied is None else Predicate("st_intersects", *implied)
            if k == "in" and negated and any(isinstance(i, Lit) and i.kind == "null" for i in a[1]):
                # (a value the list lacks makes it NULL, never FALSE: no negation of its translation holds)
                return unknown
            try:
                exact = self.predicate(node)
            except (ValueError, ValidationError, ArithmeticError, KeyError):
                return unknown
            return unknown if exact is None else exact
        if isinstance(node, Col):
            f = self.field(node)
            if f is not None and f.field_type == T.BOOLEAN:
                return Predicate("eq", node.name, True)
        return unknown

    def predicate(self, node: Node) -> Expression | None:
        """The exact translation of one predicate, or None."""
        k, a = node.kind, node.args
        if k == "isnull":
            f = self.field(a[0])
            if f is None:
                return None
            p = Predicate("not_null" if a[1] else "is_null", a[0].name)
            return p
        if k == "isnan":
            f = self.field(a[0])
            return Predicate("is_nan", a[0].name) if f is not None and f.field_type in (T.FLOAT, T.DOUBLE) else None
        if k == "cmp":
            op, left, right = _column_first(*a)
            f = self.field(left)
            if f is None or not isinstance(right, Lit):
                return None
            if op == "<=>" and right.kind == "null":
                return Predicate("is_null", left.name)
            v = self.literal(f, right)
            iceberg_op = {"=": "eq", "==": "eq", "<=>": "eq", "<>": "not_eq", "!=": "not_eq", "<": "lt",
                          "<=": "lt_eq", ">": "gt", ">=": "gt_eq"}[op]
            return self._compare(left.name, f, iceberg_op, v)
        if k == "in":
            col, items, negate = a
            f = self.field(col)
            if f is None or not all(isinstance(i, Lit) for i in items):
                return None
            if any(i.kind == "null" for i in items):
                return None if negate else self.predicate(Node("in", (col, tuple(i for i in items if i.kind !=
                                                                                 "null"), False)))
            values = [self.literal(f, i) for i in items]
            if f.field_type in (T.FLOAT, T.DOUBLE) and any(v != v for v in values):
                return None
            return Predicate("not_in" if negate else "in", col.name, values)
        if k == "like":
            col, pat, negate = a
            f = self.field(col)
            if f is None or f.field_type != T.STRING or not isinstance(pat, Lit) or pat.kind != "string":
                return None
            body, whole = _like_prefix(pat.value)
            if body is None:
                return None
            if whole:
                return Predicate("not_eq" if negate else "eq", col.name, body)
            return Predicate("not_starts_with" if negate else "starts_with", col.name, body)
        return None

    @staticmethod
    def _compare(name: str, f: T.NestedField, op: str, v: Any) -> Expression:
        if f.field_type in (T.FLOAT, T.DOUBLE) and v != v:
            # as Iceberg's SparkFilters: x = NaN is isNaN(x); other comparisons with NaN translate to nothing
            return {"eq": Predicate("is_nan", name), "not_eq": Predicate("not_nan", name)}.get(op, TRUE)
        return Predicate(op, name, v)


def referenced_names(text: str) -> frozenset[str]:
    """Every name a Spark SQL expression (or a Column's rendering) may use as a column: its identifiers, quoted or
    not, and each part of a dotted name, outside string literals. A superset of the columns it refers to, never
    a name found inside another (a column ``is_file`` is not ``_file``)."""
    try:
        tokens = _tokens(text)
    except ValidationError:  # (not an expression this parser reads: every identifier-like word)
        return frozenset(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    return frozenset(t if kind == "id" else t[1:-1].replace("``", "`") for kind, t in tokens if kind in ("id", "bq"))


def conjuncts(text: str) -> list[str]:
    """The top-level AND operands of a SQL condition (none split inside parentheses or quotes)."""
    out, depth, quoted, start, i = [], 0, False, 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "'":
            quoted = not quoted
        elif not quoted:
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and re.match(r"\sand\s", text[i:i + 5], re.I):
                out.append(text[start:i].strip())
                start = i = i + 5
                continue
        i += 1
    out.append(text[start:].strip())
    return [c for c in out if c]


def translate_filter(condition: "str | Filter", schema: T.Schema, time_zone: str | Callable[[], str] = "UTC",
                     strengthen: bool = False) -> Expression:
    """An unbound Iceberg expression implied by the Spark SQL filter ``condition`` (for pruning); with
    ``strengthen``, one that implies it instead (for deciding that every row of a file matches). ``time_zone``
    (the zone of timestamp literals without one) may be a function that reads it, called only for such a
    literal (reading the session's costs a call into the JVM)."""
    tree = Filter.of(condition).tree
    if tree is None:
        return FALSE if strengthen else TRUE  # Spark reports the syntax error when it applies the filter
    return _Translator(schema, time_zone).translate(tree, not strengthen)


# --- evaluation on the driver ----------------------------------------------------------------------------

# the column types a :class:`RowFilter` reads, as Arrow holds them in a read (dates and timestamps compared as
# their days and microseconds, as the translator's literals are); float's literals are rounded to its 32 bits
# by the translator where Spark widens the column instead, decimals and nanoseconds have no place here yet
_ROW_TYPES = {T.BOOLEAN: None, T.INT: None, T.LONG: None, T.DOUBLE: None, T.STRING: None, T.DATE: "int32",
              T.TIMESTAMP: "int64", T.TIMESTAMPTZ: "int64"}
_ARROW_CMP = {"=": "equal", "==": "equal", "<=>": "equal", "<>": "not_equal", "!=": "not_equal", "<": "less",
              "<=": "less_equal", ">": "greater", ">=": "greater_equal"}


class _Unsupported(Exception):
    pass


class RowFilter:
    """A Spark SQL filter evaluated over Arrow batches of a table's columns as Spark evaluates it: three-valued
    logic (a row matches where the filter is TRUE, not NULL), NaN greater than every double and equal to itself,
    literals taken as the translator takes them for pruning (:meth:`_Translator.literal`). Made by
    :func:`row_filter` only for filters every part of which it reads so."""

    def __init__(self, test: Callable[[dict], Any], columns: list[str]):
        self._test = test
        self.columns = columns

    def matches(self, batch) -> Any:
        """A numpy bool array: whether each row of ``batch`` (an Arrow record batch holding :attr:`columns`)
        matches."""
        from sparkberg.arrays import true_mask  # (it imports pyarrow, which this module puts off)
        return true_mask(self._test({name: batch.column(name) for name in self.columns}))


def row_filter(condition: "str | Filter", schema: T.Schema, time_zone: str | Callable[[], str] = "UTC"
               ) -> RowFilter | None:
    """``condition`` as a :class:`RowFilter` over ``schema``'s top-level columns (named as the schema names them), or
    None where a part of it is not one this module evaluates exactly: a function, arithmetic, another column, a
    nested field, a type outside ``_ROW_TYPES``, a literal the translator does not take, a NaN literal, LIKE
    beyond a prefix, IS TRUE/FALSE. Spark then applies the filter (and reports what is wrong with it)."""
    tree = Filter.of(condition).tree
    if tree is None:
        return None
    fields = {f.name: f for f in schema.fields if f.field_type in _ROW_TYPES}
    used: dict[str, None] = {}
    try:
        test = _RowCompiler(_Translator(schema, time_zone), fields, used).compile(tree)
    except (_Unsupported, ValueError, ValidationError, ArithmeticError, KeyError):
        return None
    return RowFilter(test, list(used))


class _RowCompiler:
    """Parse tree -> a function of {column: Arrow array} giving a nullable boolean array (raises _Unsupported)."""

    def __init__(self, translator: _Translator, fields: dict[str, T.NestedField], used: dict[str, None]):
        import pyarrow as pa
        import pyarrow.compute as pc
        from sparkberg import arrays  # (it imports pyarrow, which this module puts off until a filter is compiled)
        self.pa, self.pc, self.arrays = pa, pc, arrays
        self.translator, self.fields, self.used = translator, fields, used

    def column(self, node) -> tuple[T.NestedField, Callable[[dict], Any]]:
        if not isinstance(node, Col) or node.name not in self.fields:
            raise _Unsupported
        f = self.fields[node.name]
        self.used[f.name] = None
        cast = _ROW_TYPES[f.field_type]
        return f, (lambda c: c[f.name]) if cast is None else (lambda c: c[f.name].cast(cast))

    def value(self, f: T.NestedField, lit) -> Any:
        if not isinstance(lit, Lit) or lit.kind == "null":
            raise _Unsupported
        v = self.translator.literal(f, lit)
        if f.field_type == T.DOUBLE and v != v:
            raise _Unsupported  # (NaN literals: the translator rewrites them for pruning, not for rows)
        return v

    def compile(self, node) -> Callable[[dict], Any]:
        pc, scalar = self.pc, self.arrays.scalar
        if isinstance(node, Col):
            f, col = self.column(node)
            if f.field_type != T.BOOLEAN:
                raise _Unsupported
            return col
        if not isinstance(node, Node):
            raise _Unsupported
        k, a = node.kind, node.args
        if k in ("and", "or"):
            left, right = self.compile(a[0]), self.compile(a[1])
            both = pc.and_kleene if k == "and" else pc.or_kleene
            return lambda c: both(left(c), right(c))
        if k == "not":
            inner = self.compile(a[0])
            return lambda c: pc.invert(inner(c))
        if k == "between":
            return self.compile(_between_as_and(node))
        if k == "isnull":
            _, col = self.column(a[0])
            return (lambda c: pc.is_valid(col(c))) if a[1] else (lambda c: pc.is_null(col(c)))
        if k == "isnan":
            f, col = self.column(a[0])
            if f.field_type != T.DOUBLE:
                raise _Unsupported
            false = scalar(False, self.pa.bool_())
            return lambda c: pc.fill_null(pc.is_nan(col(c)), false)  # (Spark: isnan(NULL) is false)
        if k == "cmp":
            return self.comparison(*a)
        if k == "in":
            return self.membership(*a)
        if k == "like":
            return self.like(*a)
        raise _Unsupported

    def comparison(self, op: str, left, right) -> Callable[[dict], Any]:
        pc, scalar = self.pc, self.arrays.scalar
        op, left, right = _column_first(op, left, right)
        f, col = self.column(left)
        if op == "<=>" and isinstance(right, Lit) and right.kind == "null":
            return lambda c: pc.is_null(col(c))
        v = scalar(self.value(f, right))  # (typed as pa.scalar would type it, made without pandas)
        fn = getattr(pc, _ARROW_CMP[op])
        if op == "<=>":
            false = scalar(False, self.pa.bool_())
            return lambda c: pc.fill_null(fn(col(c), v), false)
        if f.field_type == T.DOUBLE and op in (">", ">="):  # (NaN is greater than every double)
            return lambda c: pc.or_kleene(fn(col(c), v), pc.is_nan(col(c)))
        return lambda c: fn(col(c), v)

    def membership(self, node, items, negate: bool) -> Callable[[dict], Any]:
        import numpy as np
        pa, pc, arrays = self.pa, self.pc, self.arrays
        from_bools, from_python, scalar = arrays.from_bools, arrays.from_python, arrays.scalar
        f, col = self.column(node)
        if not items or not all(isinstance(i, Lit) for i in items):
            raise _Unsupported
        values = [self.value(f, i) for i in items if i.kind != "null"]
        has_null = len(values) < len(items)
        true, false, null = (scalar(v, pa.bool_()) for v in (True, False, None))
        each = [scalar(v) for v in values]

        def test(c):
            x = col(c)
            if f.field_type == T.DOUBLE:  # (equality as Spark's: -0.0 is 0.0, which hashing may not hold)
                got = from_bools(np.zeros(len(x), bool))
                for v in each:
                    got = pc.or_(got, pc.fill_null(pc.equal(x, v), false))
            else:
                got = pc.is_in(x, value_set=from_python(values, x.type)) if values else \
                    from_bools(np.zeros(len(x), bool))
            got = pc.if_else(pc.is_valid(x), got, null)  # (NULL IN (...) is NULL)
            if has_null:  # (a value the list lacks is NULL against its null)
                got = pc.if_else(got, true, null)
            return pc.invert(got) if negate else got
        return test

    def like(self, node, pattern, negate: bool) -> Callable[[dict], Any]:
        pc, scalar = self.pc, self.arrays.scalar
        f, col = self.column(node)
        if f.field_type != T.STRING or not isinstance(pattern, Lit) or pattern.kind != "string":
            raise _Unsupported
        body, whole = _like_prefix(pattern.value)
        if body is None:
            raise _Unsupported
        if whole:
            text = scalar(body, self.pa.string())
            test = lambda c: pc.equal(col(c), text)  # noqa: E731
        else:
            test = lambda c: pc.starts_with(col(c), pattern=body)  # noqa: E731
        return (lambda c: pc.invert(test(c))) if negate else test
