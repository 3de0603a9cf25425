"""Values kept in memory by key, the least recently used dropped first: what the process-wide caches of decoded
manifests (:mod:`sparkberg.avro.cache`), of decoded deletes (:mod:`sparkberg.read.deletecache`) and a session's
Parquet relations (:mod:`sparkberg.spark.jvm`) keep, each with its own bound."""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Hashable


class LRU:
    """Values by key, each with a weight (bytes, files...). Each :meth:`put` says the bounds: the least recently
    used values go until the weights add up to at most ``max_weight`` and there are at most ``max_entries``
    values, the most recent one always kept. Thread-safe."""

    def __init__(self):
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self.weight = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The value kept for ``key`` (now the most recently used), or None."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return None
            self._entries.move_to_end(key)
            return hit[0]

    def put(self, key: Hashable, value: Any, weight: int = 1, max_weight: int | None = None,
            max_entries: int | None = None) -> None:
        """Keep ``value`` for ``key`` (unless a value is kept for it already), then drop the least recently used
        beyond the bounds."""
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (value, weight)
                self.weight += weight
            while len(self._entries) > 1 and ((max_weight is not None and self.weight > max_weight) or
                                              (max_entries is not None and len(self._entries) > max_entries)):
                self.weight -= self._entries.popitem(last=False)[1][1]

    def clear(self) -> None:
        """Drop every value."""
        with self._lock:
            self._entries.clear()
            self.weight = 0

    def __len__(self) -> int:
        return len(self._entries)
