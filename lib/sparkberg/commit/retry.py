"""Retrying a commit that lost a race, per the table's ``commit.retry.*`` properties, as Iceberg Java's
``SnapshotProducer.commit()``: every commit, of metadata updates or of a snapshot, retries through
:func:`retrying`.

An attempt that raises :class:`~sparkberg.errors.CommitFailedException` is tried again after an exponential
backoff with jitter (``min-wait-ms`` doubling up to ``max-wait-ms``), on a refreshed table, at most
``num-retries`` times and within ``total-timeout-ms``; then the last failure is raised. Any other error ends
the commit at once. An attempt cleans up what it wrote before it raises.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable, Mapping, TypeVar

from sparkberg.errors import CommitFailedException, ValidationError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """The ``commit.retry.*`` table properties (Iceberg's names and defaults)."""

    num_retries: int = 4
    min_wait_ms: int = 100
    max_wait_ms: int = 60_000
    total_timeout_ms: int = 1_800_000

    @classmethod
    def of(cls, properties: Mapping[str, str]) -> "RetryPolicy":
        """The policy a table's properties set; a value that is not a non-negative integer is a named error."""
        values = {}
        for name, key in (("num_retries", "commit.retry.num-retries"), ("min_wait_ms", "commit.retry.min-wait-ms"),
                          ("max_wait_ms", "commit.retry.max-wait-ms"),
                          ("total_timeout_ms", "commit.retry.total-timeout-ms")):
            raw = properties.get(key)
            if raw is None:
                continue
            try:
                values[name] = int(raw)
            except ValueError:
                raise ValidationError(f"table property {key} must be an integer, got {raw!r}") from None
            if values[name] < 0:
                raise ValidationError(f"table property {key} must not be negative, got {raw!r}")
        return cls(**values)

    def wait_ms(self, attempt: int) -> float:
        """How long to wait before retry number ``attempt`` (1, 2, ...): the backoff, with jitter."""
        return min(self.max_wait_ms, self.min_wait_ms * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)


def retrying(policy: RetryPolicy, attempt: Callable[[int], T], refresh: Callable[[], None]) -> T:
    """``attempt(n)`` (n = 0, 1, ...) until it returns, calling ``refresh`` before each retry; a lost race
    (CommitFailedException) is retried as the policy allows, then raised."""
    deadline = time.monotonic() + policy.total_timeout_ms / 1000
    n = 0
    while True:
        try:
            return attempt(n)
        except CommitFailedException:
            n += 1
            if n > policy.num_retries or time.monotonic() > deadline:
                raise
            time.sleep(policy.wait_ms(n) / 1000)
            refresh()
