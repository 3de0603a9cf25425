"""A PySpark worker daemon that imports what sparkberg's Python stages run before it forks the Python workers.

PySpark starts a daemon (``python -m pyspark.daemon``) on each executor, and on a local session on the driver's
machine, at the first Python task, and forks a worker from it for each task slot; a forked worker keeps the
daemon's imported modules. With PySpark's own daemon, each new worker imports pyarrow, numpy and sparkberg's
modules itself, in the first task that needs them: a scheduled job's first Python stage pays that on every core.
Named as the daemon module, this one imports them once, in the daemon, before it forks any worker::

    SparkSession.builder.config("spark.python.daemon.module", "sparkberg.daemon")

It must be set when the session (the executors) starts: a classic session's builder, ``spark-submit --conf``, a
cluster's defaults, or a Spark Connect server's own configuration (a Connect client cannot set it). The executors'
Python must have sparkberg installed (pip): where it only arrives with a job (``addPyFile``), the daemon starts
before it is there, and this module does what PySpark's daemon does. Anything it fails to import is left to the
workers, which import it as they would have (and name the failure there).

A daemon module of your own composes: call :func:`preload` in it before ``pyspark.daemon.manager()``.
"""
from __future__ import annotations

import importlib

# what sparkberg's Python stages import in a worker: Arrow and numpy, the manifest decoders, planning, reading,
# writing and maintenance (the modules whose functions the stages run)
PRELOADED = ("pyarrow", "pyarrow.compute", "pyarrow.parquet", "numpy", "sparkberg.avro.decode",
             "sparkberg.planning.scan", "sparkberg.read.reader", "sparkberg.read.positions", "sparkberg.read.equality",
             "sparkberg.write.writer", "sparkberg.write.deletes", "sparkberg.write.dataframe",
             "sparkberg.operations.rowlevel", "sparkberg.maintenance.manifests", "sparkberg.maintenance.orphans")


def preload() -> list[str]:
    """Import :data:`PRELOADED`; returns the names that did not import (left to the workers). Never raises: a
    daemon that cannot start stops every Python task."""
    failed = []
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a worker imports it again, and reports the failure with its task
            failed.append(name)
    return failed


if __name__ == "__main__":
    import pyspark.daemon  # (first: sparkberg's package, imported next, sees a PySpark worker process)

    preload()
    pyspark.daemon.manager()
