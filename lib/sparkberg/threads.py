"""The driver's pool of threads for planning and reading: manifests, delete files and data files decoded side by
side, as Iceberg Java's worker pool does (the compiled Avro decoder, inflate, Arrow's readers and compute all run
without the GIL)."""
from __future__ import annotations

import os
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# a thread per core, at most 8: the driver shares its cores with Spark's own threads
DRIVER_THREADS = max(1, min(8, os.cpu_count() or 1))


def by_threads(fn: Callable[[T], R], items: Sequence[T], threads: int = DRIVER_THREADS) -> list[R]:
    """``fn`` of each item, in order, by up to ``threads`` threads (in this thread for one item or one
    thread)."""
    if threads <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
        return list(pool.map(fn, items))
