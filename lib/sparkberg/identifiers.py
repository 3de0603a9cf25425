"""Dotted names as Spark SQL writes them, read the same way everywhere a name is given as text.

``db.events``, ```my.db`.events``, ```a``b`.c``: parts are separated by dots outside backquotes; a backquoted
part keeps its dots, loses its quotes, and a doubled backquote inside it is one backquote. So a table identifier
given to the Python API (``cat.create_table("`ns`.t", ...)``) names what the same text names in
``sparkberg.sql``, a procedure's table argument, or an UPDATE's column.
"""
from __future__ import annotations

from sparkberg.errors import InvalidIdentifierError


def split_dotted(text: str) -> list[str]:
    """The parts of dotted name ``text`` (see the module docstring); an unclosed backquote is a named error."""
    if "`" not in text:
        return text.split(".")
    parts: list[str] = []
    cur: list[str] = []
    quoted = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "`":
            if quoted and text[i + 1:i + 2] == "`":  # (a doubled backquote inside quotes: one backquote)
                cur.append("`")
                i += 2
                continue
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    if quoted:
        raise InvalidIdentifierError(f"name {text!r} has an unclosed backquote")
    parts.append("".join(cur))
    return parts
