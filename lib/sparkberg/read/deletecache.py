"""Decoded delete files kept in memory between reads, as Iceberg Java's executor cache keeps them.

A merge-on-read scan decodes every position delete file and deletion vector that applies to the files it
reads, each time it is read: on a table read again and again (a notebook, a dashboard), the same immutable
files are decoded each time. This process-wide cache keeps what they decode to, keyed by what names the bytes
(a delete file's path; a DV's Puffin path, offset and length), so a repeated read decodes nothing:

- a position delete file: its rows as (the data file paths it names, each row's index into them, each row's
  position), whatever data files a scan applies it to (that filter is applied after the cache);
- a deletion vector: its positions;
- an equality delete file decoded on the driver: its rows' equality columns (an Arrow table), keyed by the file
  and the columns read;
- the positions a data file's equality deletes delete (found on the driver): keyed by the data file and the
  delete files the plan applies to it, with their equality columns.

Data and delete files never change once written (a table's new deletes are new files), so an entry stays right
for as long as it is kept. The least recently used entries go first when the cache holds more than its bound; an
entry larger than a quarter of the bound is not kept. Spark conf, read on the driver when a read is planned:

- ``spark.sparkberg.delete-cache.enabled``: ``false`` to decode every time (default ``true``, as Iceberg
  Java's ``spark.sql.iceberg.executor-cache.enabled``);
- ``spark.sparkberg.delete-cache.max-bytes``: the bound, per process (default 128 MiB, as Java's).
"""
from __future__ import annotations

from typing import Any, Callable, Hashable

from sparkberg.errors import ValidationError
from sparkberg.lru import LRU
from sparkberg.spark.settings import session_conf
from sparkberg import state

ENABLED = "spark.sparkberg.delete-cache.enabled"
MAX_BYTES = "spark.sparkberg.delete-cache.max-bytes"
MAX_BYTES_DEFAULT = 128 << 20


class DeleteCache:
    """The decoded deletes this process keeps, at most ``max_bytes`` of them. Picklable: executors get the
    bound and keep their own entries."""

    _kept = LRU()  # (shared by every cache object of the process: executors unpickle one per task)

    def __init__(self, max_bytes: int = MAX_BYTES_DEFAULT):
        self.max_bytes = max_bytes

    def __getstate__(self) -> dict:
        return {"max_bytes": self.max_bytes}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["max_bytes"])

    def get(self, key: Hashable, load: Callable[[], Any], nbytes: Callable[[Any], int]) -> Any:
        """The value kept for ``key``, else what ``load`` returns (kept when ``nbytes`` of it fits)."""
        hit = self._kept.get(key)
        if hit is not None:
            return hit
        value = load()  # (outside the lock: threads decode different files at once)
        size = nbytes(value)
        if size <= self.max_bytes // 4:
            self._kept.put(key, value, size, self.max_bytes)
        return value

    @classmethod
    def clear(cls) -> None:
        """Drop every entry of this process."""
        cls._kept.clear()


def delete_cache(spark) -> DeleteCache | None:
    """The session's delete cache (on by default), or None when the session turns it off."""
    if session_conf(spark, ENABLED, "true").strip().lower() == "false":
        return None
    raw = session_conf(spark, MAX_BYTES, str(MAX_BYTES_DEFAULT))
    try:
        return DeleteCache(int(raw))
    except ValueError:
        raise ValidationError(f"{MAX_BYTES} must be a number of bytes, got {raw!r}") from None


state.register("sparkberg.read.deletecache.DeleteCache", f"decoded deletes: {MAX_BYTES} (default "
               f"{MAX_BYTES_DEFAULT >> 20} MiB)", DeleteCache._kept.clear)
