"""A condition's parse tree, as the translations into Iceberg predicates read it.

Columns (dotted names), literals, what they do not read (``Opaque``: a function, arithmetic, a subquery), and the
nodes the translations know: ``and``/``or``/``not`` (operands), ``cmp`` (op, left, right), ``isnull`` (operand,
negated), ``isbool`` (operand, value, negated), ``in`` (operand, items, negated), ``between`` (operand, low, high,
negated), ``like`` (operand, pattern, negated), ``isnan`` (column), ``call`` (name, arguments: the spatial
functions of :mod:`sparkberg.expressions.spatial`, whose boxes prune). :mod:`sparkberg.expressions.sql`'s parser
makes it from a filter string; the SQL statements' parser from a statement's WHERE (:mod:`sparkberg.sql.filters`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Col:
    name: str


@dataclass
class Lit:
    value: Any
    kind: str  # number, string, date, timestamp, timestamp_ntz, bool, null, binary


@dataclass
class Opaque:
    pass


@dataclass
class Node:
    kind: str
    args: tuple
