"""Iceberg's Spark SQL, parsed: a script split into statements, Spark's own statements parsed by sqlglot's Spark
dialect, and the statements Iceberg adds to Spark's grammar (its SQL extensions: partition fields, write order,
identifier fields, branches and tags, ``CALL``), which sqlglot does not know, parsed here over sqlglot's tokens,
as Iceberg's own extension parser sits on top of Spark's.

Every syntax error is a :class:`SqlSyntaxError` that names the line and column, what was found and what was
expected there.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from sparkberg.errors import NotSupportedError, SqlSyntaxError, ValidationError

DIALECT = "spark"


@dataclass(frozen=True)
class Statement:
    """One statement of a script: its text, where it starts in the script, and its number (from 1)."""

    text: str
    start: int
    number: int
    script: str = field(repr=False, default="")

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column) in the script of ``offset`` in this statement's text."""
        at = self.start + offset
        return self.script.count("\n", 0, at) + 1, at - self.script.rfind("\n", 0, at)

    def syntax_error(self, offset: int, message: str) -> SqlSyntaxError:
        line, column = self.position(offset)
        return SqlSyntaxError(message, line, column)

    @property
    def summary(self) -> str:
        """The statement's first line, shortened: how an error names it."""
        first = " ".join(self.text.split())
        return first if len(first) <= 80 else first[:77] + "..."


def _tokens(text: str) -> list[Token]:
    try:
        return sqlglot.tokenize(text, read=DIALECT)
    except TokenError as e:
        raise ValidationError(f"cannot read the SQL text: {e}") from None


def split(script: str) -> list[Statement]:
    """The statements of ``script``, separated by ``;`` outside strings, comments and brackets; empty ones dropped."""
    tokens = _tokens(script)
    statements: list[Statement] = []
    start = 0
    cuts = [t.start for t in tokens if t.token_type == TokenType.SEMICOLON] + [len(script)]
    for cut in cuts:
        raw = script[start:cut]
        lead = len(raw) - len(raw.lstrip())
        text = raw.strip()
        if text and not all(line.strip().startswith("--") or not line.strip() for line in text.splitlines()):
            statements.append(Statement(text, start + lead, len(statements) + 1, script))
        start = cut + 1
    return statements


def parse(statement: Statement) -> exp.Expr:
    """A statement of Spark's grammar as sqlglot's tree; a syntax error names where it is."""
    try:
        tree = sqlglot.parse_one(statement.text, read=DIALECT, error_level=sqlglot.ErrorLevel.RAISE)
    except ParseError as e:
        err = e.errors[0] if e.errors else {}
        line, col = err.get("line"), err.get("col")
        if line is not None and col is not None:
            found = (err.get("highlight") or "").strip()
            # (sqlglot's column is the last character of the token it stopped at)
            offset = max(_offset(statement.text, line, col) - max(len(err.get("highlight") or ""), 1) + 1, 0)
            first = statement.text.split(None, 1)[0] if statement.text.split() else ""
            if first.isidentifier() and first.upper() not in STATEMENT_KEYWORDS:
                offset, what, found = 0, f"{first!r} begins no SQL statement", ""
            else:
                what = in_sql_words(err.get("description") or "")
            raise statement.syntax_error(offset, f"{what}{f' at {found!r}' if found else ''} "
                                                 f"in statement {statement.number}: {statement.summary}") from None
        raise ValidationError(f"statement {statement.number} does not parse: {in_sql_words(str(e))}") from None
    if tree is None:
        raise statement.syntax_error(0, "empty statement")
    return tree


# the words a Spark SQL statement (or Iceberg's extensions) can begin with: a statement beginning with another word
# is reported as such, not by where sqlglot's grammar happened to stop
STATEMENT_KEYWORDS = frozenset({
    "SELECT", "WITH", "FROM", "VALUES", "TABLE", "INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "ALTER", "DROP",
    "REPLACE", "CALL", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "TRUNCATE", "USE", "SET", "RESET", "ADD", "LIST",
    "CLEAR", "CACHE", "UNCACHE", "MSCK", "LOAD", "DECLARE", "EXECUTE", "REFRESH", "ANALYZE", "COMMENT", "MAP",
    "REDUCE", "GRANT", "REVOKE", "BEGIN", "COMMIT", "ROLLBACK"})

# sqlglot's names of binary operators, as SQL writes them
_OPERATORS = {"Mul": "*", "Div": "/", "IntDiv": "DIV", "Add": "+", "Sub": "-", "Mod": "%", "EQ": "=", "NEQ": "<>",
              "NullSafeEQ": "<=>", "GT": ">", "GTE": ">=", "LT": "<", "LTE": "<=", "And": "AND", "Or": "OR",
              "Like": "LIKE", "ILike": "ILIKE", "RLike": "RLIKE", "DPipe": "||", "BitwiseAnd": "&",
              "BitwiseOr": "|", "BitwiseXor": "^", "Is": "IS", "In": "IN", "Between": "BETWEEN"}


def in_sql_words(description: str) -> str:
    """sqlglot's description of a syntax error in SQL's words: no parser class or token object in it
    (``Required keyword: 'expression' missing for <class '...Mul'>`` becomes ``the right operand of '*' is
    missing``)."""
    d = description.strip().rstrip(".")
    m = re.match(r"Required keyword: '(\w+)' missing for <class '[\w.]+\.(\w+)'>", d)
    if m:
        key, node = m.groups()
        if node in _OPERATORS:
            return f"the {'left' if key == 'this' else 'right'} operand of {_OPERATORS[node]!r} is missing"
        return f"incomplete {_words(node)}: its {key.replace('_', ' ')} is missing"
    if d.startswith("Invalid expression / Unexpected token"):
        return "unexpected token"
    m = re.match(r"Expecting (.+)$", d)
    if m:
        return f"expected {m.group(1).strip()!r}"
    m = re.match(r"Expected (.+?) but got <Token token_type: TokenType\.(\w+), text: (.*?), line", d)
    if m:
        wanted, kind, text = m.groups()
        return f"expected a {wanted}, found {'the end of the statement' if kind == 'SENTINEL' else repr(text)}"
    d = re.sub(r"<class '[\w.]+\.(\w+)'>", lambda c: _words(c.group(1)), d)
    d = re.sub(r"<Token token_type: TokenType\.\w+, text: (.*?), line[^>]*>", lambda t: repr(t.group(1)), d)
    return d or "invalid syntax"


def _words(name: str) -> str:
    """A parser node's class name as words (``ColumnDef`` -> ``column def``)."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower()


def _offset(text: str, line: int, col: int) -> int:
    lines = text.split("\n")
    return sum(len(x) + 1 for x in lines[:line - 1]) + max(col - 1, 0)


# --- the extension grammar ----------------------------------------------------------------------------------
class Cursor:
    """A position in the tokens of one statement, for the extension grammar (recursive descent)."""

    def __init__(self, statement: Statement, text_offset: int = 0):
        self.statement = statement
        self.base = text_offset
        self.text = statement.text[text_offset:]
        self.tokens = _tokens(self.text)
        self.i = 0

    # (tokens)
    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.tokens[j] if j < len(self.tokens) else None

    def word(self, k: int = 0) -> str:
        t = self.peek(k)
        return "" if t is None or t.token_type in (TokenType.STRING, TokenType.IDENTIFIER) else t.text.upper()

    def at(self, *words: str) -> bool:
        return all(self.word(k) == w for k, w in enumerate(words))

    def accept(self, *words: str) -> bool:
        if self.at(*words):
            self.i += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error(" ".join(words))

    def done(self) -> bool:
        return self.i >= len(self.tokens)

    def end(self) -> None:
        if not self.done():
            raise self.error("the end of the statement")

    def error(self, expected: str) -> SqlSyntaxError:
        t = self.peek()
        if t is None:
            offset, found = len(self.text), "the end of the statement"
        else:
            offset, found = t.start, repr(self.text[t.start:t.end + 1])
        return self.statement.syntax_error(self.base + offset, f"expected {expected}, found {found} in statement "
                                                               f"{self.statement.number}: {self.statement.summary}")

    # (pieces)
    def identifier(self, what: str = "a name") -> str:
        t = self.peek()
        if t is None or t.token_type in (TokenType.STRING, TokenType.NUMBER) or not _name_like(t):
            raise self.error(what)
        self.i += 1
        return t.text

    def name(self, what: str = "a name") -> list[str]:
        """A dotted name (``cat.db.t``, ```a b`.c``)."""
        parts = [self.identifier(what)]
        while self.peek() is not None and self.peek().token_type == TokenType.DOT:
            self.i += 1
            parts.append(self.identifier(what))
        return parts

    def integer(self, what: str = "an integer") -> int:
        t = self.peek()
        negative = t is not None and t.token_type == TokenType.DASH
        if negative:
            self.i += 1
            t = self.peek()
        if t is None or t.token_type != TokenType.NUMBER or not t.text.isdigit():
            raise self.error(what)
        self.i += 1
        return -int(t.text) if negative else int(t.text)

    def symbol(self, kind: TokenType, text: str) -> None:
        t = self.peek()
        if t is None or t.token_type != kind:
            raise self.error(repr(text))
        self.i += 1

    def accept_symbol(self, kind: TokenType) -> bool:
        t = self.peek()
        if t is not None and t.token_type == kind:
            self.i += 1
            return True
        return False

    def expression(self, stops: tuple[str, ...] = (), what: str = "an expression") -> str:
        """The text of an expression: tokens up to a ``,`` or ``)`` outside brackets, or a word of ``stops``."""
        depth, first = 0, self.i
        while not self.done():
            t = self.peek()
            kind = t.token_type
            if depth == 0 and (kind in (TokenType.COMMA, TokenType.R_PAREN) or
                               (t.token_type not in (TokenType.STRING, TokenType.IDENTIFIER) and
                                t.text.upper() in stops)):
                break
            if kind in (TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.LT):
                depth += 1
            elif kind in (TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.GT):
                depth -= 1
            self.i += 1
        if self.i == first:
            raise self.error(what)
        return self.text[self.tokens[first].start:self.tokens[self.i - 1].end + 1]


def _name_like(t: Token) -> bool:
    return t.token_type in (TokenType.VAR, TokenType.IDENTIFIER) or t.text.replace("_", "").isalnum()


# What the extension statements parse to: a kind and its arguments.
@dataclass
class Extension:
    """A statement of Iceberg's SQL extensions (or of Spark's grammar that sqlglot does not parse): ``kind`` and
    its arguments, the table's dotted name among them."""

    kind: str
    table: list[str]
    args: dict[str, Any]


_TIME_UNITS = {"DAYS": 86_400_000, "HOURS": 3_600_000, "MINUTES": 60_000}


def parse_extension(statement: Statement) -> Extension | None:
    """The statement as an :class:`Extension` when it is one of Iceberg's extension statements (or one of Spark's
    that sqlglot does not parse: ``SHOW ...``, ``ALTER COLUMN ... FIRST``, ``UNSET TBLPROPERTIES``); None
    when sqlglot's Spark grammar is the one to parse it."""
    head = statement.text.split(None, 1)[0].upper() if statement.text.split() else ""
    if head == "CALL":
        return _call(Cursor(statement, len(head)))  # (sqlglot's tokenizer takes all after CALL as one string)
    if head == "SHOW":
        return _show(Cursor(statement, len(head)))  # (as after CALL)
    if head == "ALTER":
        c = Cursor(statement)
        if c.accept("ALTER", "VIEW"):
            view = c.name("a view name")
            if not c.at("UNSET"):
                return None  # (ALTER VIEW ... AS, SET TBLPROPERTIES, RENAME TO: sqlglot's grammar)
            ext = _alter(c, view)
            return Extension("unset_view_properties", view, ext.args)
        if not c.accept("ALTER", "TABLE"):
            return None
        table = c.name("a table name")
        return _alter(c, table)
    return None


def _call(c: Cursor) -> Extension:
    name = c.name("a procedure name")
    c.symbol(TokenType.L_PAREN, "(")
    positional: list[str] = []
    named: dict[str, str] = {}
    if not c.accept_symbol(TokenType.R_PAREN):
        while True:
            if c.peek(1) is not None and c.peek(1).token_type == TokenType.FARROW:
                key = c.identifier("an argument name").lower()
                c.i += 1
                if key in named:
                    raise c.error(f"one value for argument {key!r}")
                named[key] = c.expression(what=f"a value for argument {key!r}")
            else:
                if named:
                    raise c.error("a named argument (positional arguments come first)")
                positional.append(c.expression(what="an argument"))
            if c.accept_symbol(TokenType.R_PAREN):
                break
            c.symbol(TokenType.COMMA, ",")
    c.end()
    return Extension("call", [], {"procedure": name, "positional": positional, "named": named})


def _show(c: Cursor) -> Extension:
    if c.accept("TBLPROPERTIES"):
        table = c.name("a table name")
        key = None
        if c.accept_symbol(TokenType.L_PAREN):
            key = _string_or_name(c)
            c.symbol(TokenType.R_PAREN, ")")
        c.end()
        return Extension("show_properties", table, {"key": key})
    if c.accept("CREATE", "TABLE"):
        table = c.name("a table name")
        c.end()
        return Extension("show_create", table, {})
    for kind in ("TABLES", "VIEWS"):
        if c.accept(kind):
            namespace = None
            if c.accept("IN") or c.accept("FROM"):
                namespace = c.name("a namespace")
            pattern = None
            if c.accept("LIKE"):
                pattern = _string(c)
            elif not c.done():
                pattern = _string(c)
            c.end()
            return Extension(f"show_{kind.lower()}", [], {"namespace": namespace, "pattern": pattern})
    return Extension("spark", [], {})  # (any other SHOW is Spark's own: SHOW DATABASES, SHOW FUNCTIONS, ...)


def _string(c: Cursor) -> str:
    t = c.peek()
    if t is None or t.token_type != TokenType.STRING:
        raise c.error("a string")
    c.i += 1
    return t.text


def _string_or_name(c: Cursor) -> str:
    t = c.peek()
    if t is not None and t.token_type == TokenType.STRING:
        c.i += 1
        return t.text
    return ".".join(c.name("a property key"))


def _alter(c: Cursor, table: list[str]) -> Extension | None:
    if c.accept("ADD", "PARTITION", "FIELD"):
        term = _transform(c)
        alias = c.identifier("a partition field name") if c.accept("AS") else None
        c.end()
        return Extension("add_partition_field", table, {"term": term, "name": alias})
    if c.accept("DROP", "PARTITION", "FIELD"):
        term = _transform(c)
        c.end()
        return Extension("drop_partition_field", table, {"term": term})
    if c.accept("REPLACE", "PARTITION", "FIELD"):
        old = _transform(c)
        c.expect("WITH")
        new = _transform(c)
        alias = c.identifier("a partition field name") if c.accept("AS") else None
        c.end()
        return Extension("replace_partition_field", table, {"old": old, "term": new, "name": alias})
    if c.accept("WRITE"):
        return _write_spec(c, table)
    if c.accept("SET", "IDENTIFIER", "FIELDS"):
        fields = _field_list(c)
        c.end()
        return Extension("set_identifier_fields", table, {"fields": fields})
    if c.accept("DROP", "IDENTIFIER", "FIELDS"):
        fields = _field_list(c)
        c.end()
        return Extension("drop_identifier_fields", table, {"fields": fields})
    if c.at("CREATE") or c.at("REPLACE") or (c.at("DROP") and c.word(1) in ("BRANCH", "TAG")):
        return _ref(c, table)
    if c.accept("UNSET", "TBLPROPERTIES"):
        if_exists = c.accept("IF", "EXISTS")
        c.symbol(TokenType.L_PAREN, "(")
        keys = [_string_or_name(c)]
        while c.accept_symbol(TokenType.COMMA):
            keys.append(_string_or_name(c))
        c.symbol(TokenType.R_PAREN, ")")
        c.end()
        return Extension("unset_properties", table, {"keys": keys, "if_exists": if_exists})
    if c.accept("ALTER") or c.accept("CHANGE"):
        c.accept("COLUMN")
        column = ".".join(c.name("a column name"))
        if c.accept("FIRST"):
            c.end()
            return Extension("move_column", table, {"column": column, "first": True, "after": None})
        if c.accept("AFTER"):
            after = ".".join(c.name("a column name"))
            c.end()
            return Extension("move_column", table, {"column": column, "first": False, "after": after})
        if c.accept("SET", "NOT", "NULL"):
            c.end()
            return Extension("set_not_null", table, {"column": column})
    return None


def _field_list(c: Cursor) -> list[str]:
    fields = [".".join(c.name("a column name"))]
    while c.accept_symbol(TokenType.COMMA):
        fields.append(".".join(c.name("a column name")))
    return fields


def _transform(c: Cursor) -> str:
    """A partition or sort term: ``col``, ``days(ts)``, ``bucket(16, id)``, ``truncate(4, s)``: its text, which
    :func:`sparkberg.format.transforms.parse_transform_call` reads."""
    start = c.i
    c.name("a column or a transform")
    if c.accept_symbol(TokenType.L_PAREN):
        depth = 1
        while depth and not c.done():
            kind = c.peek().token_type
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(kind, 0)
            c.i += 1
        if depth:
            raise c.error("')'")
    return c.text[c.tokens[start].start:c.tokens[c.i - 1].end + 1]


def _write_spec(c: Cursor, table: list[str]) -> Extension:
    distributed = unordered = locally = False
    order: list[str] | None = None
    while not c.done():
        if c.accept("DISTRIBUTED", "BY", "PARTITION"):
            distributed = True
        elif c.accept("UNORDERED"):
            unordered = True
        elif c.accept("LOCALLY", "ORDERED", "BY"):
            locally, order = True, _order_fields(c)
        elif c.accept("ORDERED", "BY"):
            order = _order_fields(c)
        else:
            raise c.error("DISTRIBUTED BY PARTITION, [LOCALLY] ORDERED BY or UNORDERED")
    if not distributed and not unordered and order is None:
        raise c.error("DISTRIBUTED BY PARTITION, [LOCALLY] ORDERED BY or UNORDERED")
    if unordered and order is not None:
        raise c.error("either UNORDERED or ORDERED BY")
    # (Iceberg's rule: DISTRIBUTED BY PARTITION is hash; UNORDERED is none; ORDERED BY alone is range; LOCALLY
    #  ORDERED BY alone sets the sort order and leaves write.distribution-mode as it is)
    mode = "hash" if distributed else "none" if unordered else None if locally else "range"
    return Extension("write_order", table, {"order": order or [], "distribution": mode})


def _order_fields(c: Cursor) -> list[str]:
    fields = []
    while True:
        term = _transform(c)
        direction = "ASC" if c.accept("ASC") else "DESC" if c.accept("DESC") else ""
        nulls = ""
        if c.accept("NULLS"):
            nulls = "NULLS FIRST" if c.accept("FIRST") else "NULLS LAST" if c.accept("LAST") else ""
            if not nulls:
                raise c.error("FIRST or LAST")
        fields.append(" ".join(x for x in (term, direction, nulls) if x))
        if not c.accept_symbol(TokenType.COMMA):
            return fields


def _ref(c: Cursor, table: list[str]) -> Extension:
    if c.accept("DROP"):
        kind = c.identifier().upper()
        if_exists = c.accept("IF", "EXISTS")
        name = c.identifier(f"a {kind.lower()} name")
        c.end()
        return Extension(f"drop_{kind.lower()}", table, {"name": name, "if_exists": if_exists})
    create = c.accept("CREATE")
    replace = c.accept("OR", "REPLACE") if create else c.accept("REPLACE")
    kind = "BRANCH" if c.accept("BRANCH") else "TAG" if c.accept("TAG") else None
    if kind is None:
        raise c.error("BRANCH or TAG")
    if_not_exists = c.accept("IF", "NOT", "EXISTS")
    if if_not_exists and replace:
        raise c.error(f"a {kind.lower()} name (IF NOT EXISTS cannot go with REPLACE)")
    name = c.identifier(f"a {kind.lower()} name")
    args: dict[str, Any] = {"name": name, "create": create, "replace": replace, "if_not_exists": if_not_exists,
                            "snapshot_id": None, "max_ref_age_ms": None, "min_snapshots_to_keep": None,
                            "max_snapshot_age_ms": None}
    if c.accept("AS", "OF", "VERSION"):
        args["snapshot_id"] = c.integer("a snapshot id")
    if c.accept("RETAIN"):
        args["max_ref_age_ms"] = _duration(c)
    if kind == "BRANCH" and c.accept("WITH", "SNAPSHOT", "RETENTION"):
        n = c.integer("a number of snapshots or an age")
        if c.accept("SNAPSHOTS"):
            args["min_snapshots_to_keep"] = n
            if c.peek() is not None and c.peek().token_type == TokenType.NUMBER:
                args["max_snapshot_age_ms"] = _duration(c)
        else:
            args["max_snapshot_age_ms"] = n * _unit(c)
    c.end()
    return Extension(f"{'replace' if replace else 'create'}_{kind.lower()}", table, args)


def _duration(c: Cursor) -> int:
    n = c.integer("a number")
    return n * _unit(c)


def _unit(c: Cursor) -> int:
    for unit, ms in _TIME_UNITS.items():
        if c.accept(unit):
            return ms
    raise c.error("DAYS, HOURS or MINUTES")


def property_text(node: exp.Expr) -> str:
    """A property key or value of a statement (``'k'``, ``k``, ``1``) as text."""
    return node.name if isinstance(node, (exp.Literal, exp.Identifier, exp.Var)) else node.sql(dialect="spark")


def set_properties(statement: Statement, action: exp.Expr, what: str) -> dict[str, str]:
    """The properties ``SET TBLPROPERTIES (...)`` of an ``ALTER`` sets; anything else it sets is unsupported."""
    props = {}
    for p in action.expressions:
        for kv in (p.expressions if isinstance(p, exp.Properties) else [p]):
            if type(kv) is not exp.Property:
                raise unsupported(statement, f"{what} ... SET {kv.sql(dialect='spark')}")
            props[property_text(kv.this)] = property_text(kv.args["value"])
    return props


def unsupported(statement: Statement, what: str) -> NotSupportedError:
    """The error of a statement sparkberg does not run, naming it."""
    return NotSupportedError(f"statement {statement.number} is not supported by sparkberg.sql: {what} "
                             f"({statement.summary})")
