"""Errors raised in Spark's Python workers, re-raised on the driver as sparkberg's own.

Spark reports a failed Python task as one exception whose message holds the worker's traceback, after a JVM
stack trace. Two kinds are turned back into what they are:

- a sparkberg error raised by sparkberg's code on an executor (bad data found while writing, a file the
  metadata references that is gone) is raised again as its own class, with its own message;
- a worker that cannot import sparkberg (``ModuleNotFoundError: No module named 'sparkberg'``: the workers
  run another interpreter than the driver, or the cluster's executors lack the package) becomes one
  :class:`~sparkberg.errors.WorkerEnvironmentError` that names the interpreter and how to fix it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Any

import sparkberg.errors as errors
from sparkberg import state
from sparkberg.spark.settings import session_conf

_RAISED = re.compile(r"sparkberg\.errors\.(\w+): ([^\n]+)")
_NOT_IMPORTABLE = re.compile(r"ModuleNotFoundError: No module named '(sparkberg[\w.]*)'")


def worker_python(spark: Any) -> str:
    """The interpreter Spark starts its Python workers with, as the driver knows it: ``spark.pyspark.python``,
    else ``$PYSPARK_PYTHON``, else Spark's default ``python3``."""
    configured = session_conf(spark, "spark.pyspark.python")
    if not configured:
        try:
            configured = spark.sparkContext.pythonExec  # (classic sessions: what PySpark sends with each task)
        except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext on the client
            configured = None
    return configured or os.environ.get("PYSPARK_PYTHON") or "python3"


def translate(exc: BaseException, spark: Any = None) -> errors.SparkbergError | None:
    """The sparkberg error that ``exc`` (raised by a Spark action) reports from a worker, or None."""
    if isinstance(exc, errors.SparkbergError):
        return None
    text = str(exc)
    m = _RAISED.search(text)
    if m:
        cls = getattr(errors, m.group(1), None)
        if cls is errors.MissingFileError:
            named = re.search(r"file (\S+) does not exist", m.group(2))
            return cls(m.group(2).strip(), named.group(1) if named else None)
        if isinstance(cls, type) and issubclass(cls, errors.SparkbergError):
            return cls(m.group(2).strip())
    m = _NOT_IMPORTABLE.search(text)
    if m:
        return _cannot_import(m.group(1), worker_python(spark))
    return None


def _cannot_import(module: str, python: str) -> errors.WorkerEnvironmentError:
    return errors.WorkerEnvironmentError(
        f"Spark's Python workers cannot import {module}: they run {python!r}, which does "
        "not have sparkberg installed. Install sparkberg (and its dependencies) into that interpreter, or "
        "point the workers at one that has it: PYSPARK_PYTHON or spark.pyspark.python (for example the "
        "driver's own virtualenv). On a cluster, the executors need the package too: install it on every "
        "node, or ship it with --py-files / spark.submit.pyFiles or a packed environment in spark.archives.")


# (context, worker interpreter, PYTHONPATH) -> None when the workers import sparkberg (or are not checked here),
# else the error: found once per context and interpreter, so a Python stage pays a dictionary look-up
_WORKERS_CHECKED: dict[tuple, errors.WorkerEnvironmentError | None] = {}
state.register("sparkberg.spark.executors._WORKERS_CHECKED", "one entry per context and worker interpreter",
               _WORKERS_CHECKED.clear)
_PROBE = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('sparkberg') else 3)"


def check_workers(spark: Any) -> None:
    """Before a Python stage: a :class:`~sparkberg.errors.WorkerEnvironmentError` now, and no job run, when the
    session's Python workers run on this machine (a ``local`` or ``local-cluster`` master) with an interpreter
    other than the driver's that cannot import sparkberg; otherwise the stage's first task would fail with it,
    after the executor logged the task's whole stack. Asked once per context and interpreter (a start of that
    interpreter, tens of milliseconds); not asked where the driver's own interpreter runs the workers, where
    sparkberg reaches them another way (``spark.submit.pyFiles``, ``spark.archives``, ``addPyFile``), on a
    cluster's other machines, or from a Spark Connect client (:func:`translate` names it there, after the task)."""
    try:
        sc = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect: the workers are the server's
        return
    key = (id(sc), getattr(sc, "pythonExec", None), os.environ.get("PYTHONPATH", ""),
           len(getattr(sc, "_python_includes", None) or ()))  # (a file added since is another answer)
    if key not in _WORKERS_CHECKED:
        _WORKERS_CHECKED[key] = _probe_workers(spark, sc)
    if _WORKERS_CHECKED[key] is not None:
        raise _WORKERS_CHECKED[key]


def _probe_workers(spark: Any, sc: Any) -> errors.WorkerEnvironmentError | None:
    """:func:`check_workers`'s answer for one context and interpreter."""
    if not str(sc.master).startswith("local") or getattr(sc, "_python_includes", None) or \
            session_conf(spark, "spark.submit.pyFiles") or session_conf(spark, "spark.archives"):
        return None
    python = worker_python(spark)
    found = shutil.which(python)
    if found is not None and os.path.abspath(found) == os.path.abspath(sys.executable):
        return None
    try:
        done = subprocess.run([python, "-c", _PROBE], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_S)
        failed = done.returncode != 0
    except (OSError, subprocess.TimeoutExpired):  # (no such interpreter: Spark cannot start it either)
        failed = True
    return _cannot_import("sparkberg", python) if failed else None


PROBE_TIMEOUT_S = 30.0  # (an interpreter that does not start within it is taken as one that cannot run sparkberg)


class executor_errors:
    """Within the block, a Spark action that failed in a Python worker raises the sparkberg error it reports
    (:func:`translate`) instead of Spark's wrapper around the worker's traceback."""

    def __init__(self, spark: Any = None):
        self.spark = spark

    def __enter__(self) -> "executor_errors":
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if exc is None:
            return False
        found = translate(exc, self.spark)
        if found is not None:
            raise found from None
        return False
