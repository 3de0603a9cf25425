"""Process-wide state: every cache and registry sparkberg keeps beyond one call, listed in one place.

Each module that keeps one registers it here when it is imported (:func:`register`), with its bound and how to
empty it; :func:`entries` lists what this process has registered, :func:`clear` empties them (a test, or a
long-lived driver whose settings changed). What a Spark session keeps goes with the session
(:func:`sparkberg.spark.session.per_session`); the manifest cache's files on disk are bounded by their own setting
(:mod:`sparkberg.avro.cache`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable


@dataclass(frozen=True)
class Kept:
    """One cache or registry: ``name`` (module.attribute), what bounds it, and the function that empties it."""

    name: str
    bound: str
    clear: Callable[[], None]


_KEPT: dict[str, Kept] = {}  # (this list itself: one entry per registered name)


def register(name: str, bound: str, clear: Callable[[], None]) -> None:
    """Name a cache or registry of this process (again: the later registration stands)."""
    _KEPT[name] = Kept(name, bound, clear)


def entries() -> list[Kept]:
    """What this process keeps, by name (the modules imported so far)."""
    return [_KEPT[n] for n in sorted(_KEPT)]


def clear(names: Iterable[str] | None = None) -> None:
    """Empty the named caches and registries (all when None)."""
    for n in sorted(_KEPT) if names is None else names:
        _KEPT[n].clear()


__all__ = ["Kept", "register", "entries", "clear"]
