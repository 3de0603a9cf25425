"""PySpark's Python worker daemon, importing PySpark from the installed package's bytecode.

Spark starts each executor's Python workers through a daemon (``python -m pyspark.daemon``) whose path begins with
the ``pyspark.zip`` of the Spark installation. Python cannot cache bytecode inside a zip, so every new daemon
compiles PySpark's modules from source: the larger part of what a fresh process's first Python stage spends before
its workers start. When that zip is the one shipped inside the installed ``pyspark`` package (``pip install
pyspark``: the zip is built from the same sources as the package), the package's own modules are the same code,
already compiled.

Set ``spark.python.daemon.module`` to ``sparkberg.daemon`` when the session (or the Spark Connect server) starts.
The daemon then moves that zip behind the installed package on its path and runs PySpark's daemon unchanged.
The workers it forks inherit the path. A zip anywhere else, such as a Spark distribution's
``$SPARK_HOME/python/lib``, is left first: its modules may differ from any installed package's. Nothing heavy is
imported before the workers fork: PySpark imports what could start threads (Arrow, pandas) in each worker.

A daemon module of one's own composes by calling :func:`prefer_installed_pyspark` before it imports PySpark.
"""
from __future__ import annotations

import importlib.machinery
import os
import runpy
import sys

_ZIP = "pyspark.zip"


def _installed_package_of(zip_entry: str) -> str | None:
    """The ``pyspark`` package directory that ships ``zip_entry`` as its ``python/lib/pyspark.zip``, by the zip's
    place; None for a zip elsewhere (a Spark distribution's)."""
    lib = os.path.dirname(os.path.realpath(zip_entry))
    package = os.path.dirname(os.path.dirname(lib))
    if (os.path.basename(lib), os.path.basename(os.path.dirname(lib)), os.path.basename(package)) != \
            ("lib", "python", "pyspark"):
        return None
    return package


def prefer_installed_pyspark(path: list[str] | None = None) -> bool:
    """Move the installed ``pyspark`` package's own ``pyspark.zip`` to the end of ``path`` (``sys.path`` by default),
    so that PySpark is imported from the package's compiled modules; True when it moved. Unchanged, and False, when
    PySpark is already imported, no entry is such a zip, or PySpark would then not be imported from that package
    (its directory is not on ``path`` after the zip, or another ``pyspark`` comes first)."""
    path = sys.path if path is None else path
    if path is sys.path and "pyspark" in sys.modules:
        return False
    for i, entry in enumerate(path):
        if os.path.basename(entry) != _ZIP:
            continue
        package = _installed_package_of(entry)
        root = os.path.dirname(package) if package else None
        if root is None or not any(os.path.realpath(p or os.curdir) == root for p in path[i + 1:]):
            return False  # (no package's zip, or its package is not behind it: nothing to gain)
        moved = path[:i] + path[i + 1:] + [entry]
        found = importlib.machinery.PathFinder.find_spec("pyspark", moved)
        if found is None or os.path.dirname(os.path.realpath(found.origin or "")) != package:
            return False  # (not a package, or another pyspark between the zip and it would win)
        path[:] = moved
        return True
    return False


def main() -> None:
    """Run PySpark's daemon (``pyspark.daemon`` as ``__main__``, with this process's arguments) after
    :func:`prefer_installed_pyspark`."""
    prefer_installed_pyspark()
    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
