"""Snapshot properties: what a job records in the summaries of the snapshots it commits (Iceberg Spark's
``snapshot-property.*`` write options): a write's ``snapshot_properties=``, and those of the user's enclosing
``with snapshot_properties({...}):`` blocks (as Iceberg Java's ``CommitMetadata.withCommitProperties``, a
thread's ambient setting). The block's properties are read once, where a write builds its
:class:`~sparkberg.operations.request.CommitRequest` (``Table._write``), and travel in the request from there: nothing
in the commit path reads the block."""
from __future__ import annotations

import contextlib
import contextvars
import re
from typing import Iterator

from sparkberg.errors import ValidationError

# the properties of the user's enclosing ``snapshot_properties`` blocks, read where a write builds its request
_PROPERTIES: contextvars.ContextVar[dict[str, str]] = contextvars.ContextVar("snapshot_properties", default={})
# summary keys a writer computes: a snapshot property may not claim them
_RESERVED = re.compile(r"^(operation|engine-.*|(added|deleted|removed|total|changed)-.*|partition-summaries-.*|"
                       r"partitions\..*|manifests-.*|entries-.*|first-row-id|added-rows|wap\..*|published-wap-id|"
                       r"source-snapshot-id|replace-partitions|sparkberg\.idempotency\..*)$")


def checked(properties: dict[str, str] | None) -> dict[str, str]:
    """``properties`` as snapshot properties: string keys and values, none a summary field the producer
    computes (``operation``, ``added-*``, ``total-*``, an idempotency key's ``sparkberg.idempotency.*``...); else
    a named error."""
    given = dict(properties or {})
    for k, v in given.items():
        if not isinstance(k, str) or not k or not isinstance(v, str):
            raise ValidationError(f"snapshot properties are non-empty string keys with string values, got "
                                  f"{k!r}: {v!r}")
        if _RESERVED.match(k):
            raise ValidationError(f"snapshot property {k!r} is a summary field sparkberg computes; pick another name")
    return given


@contextlib.contextmanager
def snapshot_properties(properties: dict[str, str] | None) -> Iterator[None]:
    """Within the block, every snapshot this thread commits carries ``properties`` (:func:`checked`) in its
    summary, with those of enclosing blocks."""
    token = _PROPERTIES.set({**_PROPERTIES.get(), **checked(properties)})
    try:
        yield
    finally:
        _PROPERTIES.reset(token)


def current_snapshot_properties() -> dict[str, str]:
    """The snapshot properties of the enclosing ``snapshot_properties`` blocks (none outside one): for the
    request of a write made in them."""
    return dict(_PROPERTIES.get())


__all__ = ["snapshot_properties", "current_snapshot_properties", "checked"]
