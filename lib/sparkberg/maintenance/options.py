"""The ``options`` map of a maintenance call, read as Iceberg Java's procedures read theirs: Java's names, values
given as strings or as Python values, defaults where a name is absent, and a named error for an unknown name or a
value out of range (before anything is read or written)."""
from __future__ import annotations

from typing import Any, Iterable

from sparkberg.errors import ValidationError


class Options:
    """``given`` checked against the ``known`` names of ``action``; typed getters with defaults."""

    def __init__(self, action: str, given: dict[str, Any] | None, known: Iterable[str]):
        self.action = action
        self.values = {str(k): v for k, v in (given or {}).items()}
        known = set(known)
        unknown = sorted(set(self.values) - known)
        if unknown:
            raise ValidationError(f"unknown option(s) {', '.join(unknown)} of {action} (known: "
                                  f"{', '.join(sorted(known))})")

    def __contains__(self, name: str) -> bool:
        return name in self.values

    def boolean(self, name: str, default: bool) -> bool:
        """A true/false option."""
        v = self.values.get(name, default)
        if isinstance(v, bool):
            return v
        if str(v).strip().lower() in ("true", "false"):
            return str(v).strip().lower() == "true"
        raise ValidationError(f"{self.action}: option {name} must be true or false, got {v!r}")

    def integer(self, name: str, default: int | None, minimum: int | None = None) -> int | None:
        """An integer option, at least ``minimum``."""
        v = self.values.get(name, default)
        if v is None:
            return None
        try:
            if isinstance(v, bool) or not isinstance(v, (int, str)):
                raise ValueError
            value = v if isinstance(v, int) else int(v.strip())
        except ValueError:
            raise ValidationError(f"{self.action}: option {name} must be an integer, got {v!r}") from None
        if minimum is not None and value < minimum:
            raise ValidationError(f"{self.action}: option {name} must be at least {minimum}, got {value}")
        return value

    def number(self, name: str, default: float, low: float, high: float, low_open: bool = False) -> float:
        """A number option within [``low``, ``high``] (``low_open``: above ``low``)."""
        v = self.values.get(name, default)
        try:
            value = float(str(v).strip())
        except ValueError:
            raise ValidationError(f"{self.action}: option {name} must be a number, got {v!r}") from None
        if value > high or value < low or (low_open and value == low):
            bound = f"above {low}" if low_open else f"at least {low}"
            raise ValidationError(f"{self.action}: option {name} must be {bound} and at most {high}, got {v!r}")
        return value

    def choice(self, name: str, default: str, choices: Iterable[str]) -> str:
        """One of ``choices`` (case-insensitive)."""
        v = str(self.values.get(name, default)).strip().lower()
        choices = list(choices)
        if v not in choices:
            raise ValidationError(f"{self.action}: option {name} must be one of {', '.join(choices)}, "
                                  f"got {self.values.get(name)!r}")
        return v


__all__ = ["Options"]
