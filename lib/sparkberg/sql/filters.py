"""A SQL statement's condition (a DELETE's or UPDATE's WHERE, an INSERT's REPLACE WHERE, a count's WHERE) as a
:class:`~sparkberg.expressions.sql.Filter`: its Spark SQL text, which Spark evaluates over the rows, and the tree the
translations into Iceberg predicates read, made from the statement's own parse (sqlglot's) rather than by parsing
the text again. The tree is the one :mod:`sparkberg.expressions.sql` makes of a filter string, so a condition
prunes the same whichever way it came; what that module's parser leaves opaque (a function, arithmetic, a cast of
a column) is opaque here too, and a subquery, which that parser does not read at all, is opaque within the rest.
"""
from __future__ import annotations

from decimal import Decimal, InvalidOperation

from sqlglot import exp

from sparkberg.expressions.spatial import FUNCTIONS as SPATIAL_FUNCTIONS
from sparkberg.expressions.sql import Col, Filter, Lit, Node, Opaque, number_value

_COMPARISONS = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
                exp.NullSafeEQ: "<=>"}
# the type of a literal Spark writes with a suffix (10L, 1.5F, 1.5BD), which sqlglot reads as a cast of it
_INTEGERS = {exp.DataType.Type.BIGINT, exp.DataType.Type.INT, exp.DataType.Type.SMALLINT, exp.DataType.Type.TINYINT}
_FLOATS = {exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT}
_TEMPORAL = {exp.DataType.Type.DATE: "date", exp.DataType.Type.TIMESTAMPTZ: "timestamp",
             exp.DataType.Type.TIMESTAMPLTZ: "timestamp", exp.DataType.Type.TIMESTAMP: "timestamp",
             exp.DataType.Type.TIMESTAMPNTZ: "timestamp_ntz"}


def filter_of(node: exp.Expr) -> Filter:
    """The condition ``node`` as a Filter: its Spark SQL text and its tree."""
    return Filter(node.sql(dialect="spark"), _tree(node))


def _tree(node: exp.Expr):
    if isinstance(node, exp.Paren):
        return _tree(node.this)
    if isinstance(node, exp.And):
        return Node("and", (_tree(node.this), _tree(node.expression)))
    if isinstance(node, exp.Or):
        return Node("or", (_tree(node.this), _tree(node.expression)))
    if isinstance(node, exp.Not):
        inner = node.this.this if isinstance(node.this, exp.Paren) else node.this
        if isinstance(inner, (exp.In, exp.Between, exp.Is)) or (isinstance(inner, exp.Like)
                                                                 and not inner.args.get("negate")):
            return _predicate(inner, negate=True)
        return Node("not", (_tree(node.this),))
    return _predicate(node, negate=False)


def _predicate(node: exp.Expr, negate: bool):
    op = _COMPARISONS.get(type(node))
    if op is not None:
        return Node("cmp", (op, _operand(node.this), _operand(node.expression)))
    if isinstance(node, exp.Is):
        what = node.expression
        if isinstance(what, exp.Null):
            return Node("isnull", (_operand(node.this), negate))
        if isinstance(what, exp.Boolean):
            return Node("isbool", (_operand(node.this), bool(what.this), negate))
        return Opaque()
    if isinstance(node, exp.In):
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            return Opaque()  # (a subquery: Spark runs it; the rowlevel semi-join prunes by its values)
        return Node("in", (_operand(node.this), tuple(_operand(e) for e in node.expressions), negate))
    if isinstance(node, exp.Between):
        return Node("between", (_operand(node.this), _operand(node.args["low"]), _operand(node.args["high"]),
                                negate))
    if isinstance(node, exp.Like) and not node.args.get("escape"):
        return Node("like", (_operand(node.this), _operand(node.expression), negate or bool(node.args.get("negate"))))
    if isinstance(node, exp.IsNan) and isinstance(node.this, exp.Column):
        return Node("isnan", (_operand(node.this),))
    return _operand(node)


def _operand(node: exp.Expr):
    """A column, a literal (as :mod:`sparkberg.expressions.sql` reads it), or opaque."""
    if isinstance(node, exp.Paren):
        return _tree(node.this)
    if isinstance(node, exp.Column):
        if not all(isinstance(p, exp.Identifier) for p in node.parts):
            return Opaque()
        return Col(".".join(p.name for p in node.parts))
    if isinstance(node, exp.Boolean):
        return Lit(bool(node.this), "bool")
    if isinstance(node, exp.Null):
        return Lit(None, "null")
    if isinstance(node, exp.Literal):
        return Lit(node.this, "string") if node.is_string else _number(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        lit = _number(node.this.this)
        return Lit(-lit.value, "number") if isinstance(lit, Lit) else lit
    if isinstance(node, exp.HexString):
        return Lit(bytes.fromhex(node.this), "binary")
    if isinstance(node, (exp.Cast, exp.TryCast)) and isinstance(node.this, exp.Literal):
        return _typed_literal(node, node.this, node.to)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in SPATIAL_FUNCTIONS:
        return Node("call", (str(node.this).lower(), tuple(_operand(e) for e in node.expressions)))
    if isinstance(node, exp.StPoint):  # (the one spatial function sqlglot has a class for: ST_Point, ST_MakePoint)
        coords = (node.args.get(k) for k in ("this", "expression", "z", "m"))
        return Node("call", ("st_point", tuple(_operand(c) for c in coords if c is not None)))
    return Opaque()


def _number(text: str):
    try:
        return Lit(number_value(str(text)), "number")
    except (ValueError, InvalidOperation):
        return Opaque()


def _typed_literal(node: exp.Expr, lit: exp.Literal, to: exp.DataType):
    """A literal Spark writes with a type: a suffixed number (``10L``, ``1.5F``, ``1.5BD``), which sqlglot reads as
    a cast of the number; a date or timestamp literal (``DATE '...'``). A cast that could change the value (of a
    fraction to an integer, of a string to a number) stays opaque, as the filter parser leaves every cast."""
    kind = to.this
    if isinstance(node, exp.Cast) and lit.is_string and kind in _TEMPORAL:
        return Lit(lit.this, _TEMPORAL[kind])
    text = str(lit.this)
    if not lit.is_string and kind in _INTEGERS and text.isdigit():
        return Lit(int(text), "number")
    if not lit.is_string and kind in _FLOATS:
        return _float(text)
    if lit.is_string and kind == exp.DataType.Type.DECIMAL:  # (1.5BD: the decimal of exactly its digits)
        try:
            value = Decimal(text)
        except InvalidOperation:
            return Opaque()
        params = [int(p.name) for p in to.expressions] if to.expressions else []
        exponent = value.as_tuple().exponent
        exact = len(params) == 2 and isinstance(exponent, int) and -exponent == params[1] and \
            len(value.as_tuple().digits) <= params[0]
        return Lit(value, "number") if exact else Opaque()
    return Opaque()


def _float(text: str):
    try:
        return Lit(float(text), "number")
    except ValueError:
        return Opaque()


__all__ = ["filter_of"]
