"""Cheaper tasks for sparkberg's Python stages on PySpark 3.5 workers.

PySpark 3.5's worker calls ``importlib.invalidate_caches()`` before every task (PySpark 4 only when the task
added a path). On Python 3.11 and 3.12 every ``zipimporter`` in ``sys.path_importer_cache`` then re-reads its
archive's central directory: the worker's path holds ``pyspark.zip``, the py4j zip and the spark-core jar, and
each package imported from them has an importer of its own, so every task paid for re-reading them before
running a line of its function. The archives do not change while a worker lives; the importers installed here
re-read an archive only when its size or modification time changed, and otherwise behave as
``zipimport.zipimporter``. Installed only in PySpark worker processes (and their daemon), when sparkberg is first
imported there (the first sparkberg task of a reused worker still pays once).
"""
from __future__ import annotations

import os
import sys
import zipimport

_WORKER_MODULES = ("pyspark.worker", "pyspark.daemon")
# What Spark's Python worker factory gives every process it starts (a daemon, or a worker started alone) to connect
# back with: the secret, or with Unix domain sockets their directory. A daemon's forked workers inherit it.
_FACTORY_ENV = ("PYTHON_WORKER_FACTORY_SECRET", "PYTHON_WORKER_FACTORY_SOCK_DIR")


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


class StableZipImporter(zipimport.zipimporter):
    """A ``zipimporter`` whose ``invalidate_caches`` re-reads the archive only when the archive changed."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self._archive_stamp = _stamp(self.archive)

    def invalidate_caches(self) -> None:
        """Re-read the archive's index if its size or modification time changed since it was last read."""
        stamp = _stamp(self.archive)
        if stamp is None or stamp != self._archive_stamp:
            super().invalidate_caches()
            self._archive_stamp = stamp


def in_pyspark_worker() -> bool:
    """Whether this process is a PySpark Python worker or their daemon: started by Spark's worker factory, or
    running PySpark's worker or daemon module. The factory's environment is asked first: a daemon module of
    another name (``sparkberg.daemon``, a user's own) imports this package before it imports PySpark."""
    if any(k in os.environ for k in _FACTORY_ENV):
        return True
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    return any(m in sys.modules for m in _WORKER_MODULES) or getattr(main, "name", None) in _WORKER_MODULES


def install() -> int:
    """Replace the plain zip importers of this process (the cached ones and the path hook that makes new ones)
    by ``StableZipImporter``; returns how many cached importers were replaced. Idempotent."""
    hooks = sys.path_hooks
    for i, hook in enumerate(hooks):
        if hook is zipimport.zipimporter:
            hooks[i] = StableZipImporter
    replaced = 0
    for path, finder in list(sys.path_importer_cache.items()):
        if type(finder) is zipimport.zipimporter:
            try:
                sys.path_importer_cache[path] = StableZipImporter(path)
            except zipimport.ZipImportError:
                continue
            replaced += 1
    return replaced


def install_in_worker() -> None:
    """``install()`` when this process is a PySpark worker; nothing elsewhere (a driver's imports are its own)."""
    if in_pyspark_worker():
        install()
