"""A griffe extension for the documentation site: the docstrings use reStructuredText's inline markup
(``code``, :class:`Name`, :meth:`~pkg.Class.name`); the site renders Markdown, so each docstring is rewritten
as it is loaded: literals become Markdown code spans and cross-references become code spans of the name shown
(the text after a ``~`` prefix's last dot)."""
from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|meth|func|mod|attr|exc|data|obj):`(~?)([^`]+)`")
_LITERAL = re.compile(r"``(.+?)``", re.S)


def markdown(text: str) -> str:
    """``text``'s reStructuredText inline markup as Markdown."""
    def role(m: re.Match) -> str:
        name = m.group(2)
        return f"`{name.rsplit('.', 1)[-1] if m.group(1) else name}`"
    return _LITERAL.sub(lambda m: f"`{m.group(1)}`", _ROLE.sub(role, text))


class RstMarkup(griffe.Extension):
    """Rewrites each loaded object's docstring (:func:`markdown`)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
