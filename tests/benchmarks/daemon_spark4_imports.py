"""PySpark 3.5's Python worker daemon, with one change for the commit benchmark's second row: before a task,
``importlib.invalidate_caches()`` runs only when the task added a path to ``sys.path``, as PySpark 4 does
(``pyspark/worker_util.py``, ``setup_spark_files``). PySpark 3.5 calls it before every task; on Python 3.11+
a zipimporter then re-reads its archive's index, and the worker's path holds pyspark.zip and the spark-core
jar (~60 ms a task on the bench machine). Used as ``spark.python.daemon.module``; not part of sparkberg.
"""
import importlib
import sys

import pyspark.worker as _worker


class _Imports:
    """``importlib`` for the worker module, whose ``invalidate_caches`` acts only when ``sys.path`` changed."""

    def __init__(self) -> None:
        self._seen = list(sys.path)

    def __getattr__(self, name):
        return getattr(importlib, name)

    def invalidate_caches(self) -> None:
        if sys.path != self._seen:
            self._seen = list(sys.path)
            importlib.invalidate_caches()


_worker.importlib = _Imports()

if __name__ == "__main__":
    import pyspark.daemon
    pyspark.daemon.manager()
