"""The Spark session: a builder with the settings of the project's ``spark-defaults.conf``, a setting set for a
block, job labels, what a session keeps for its life (:func:`per_session`), and which Spark runs it (its settings
read: :mod:`sparkberg.spark.settings`). Public PySpark API only: what reaches into the JVM is
:mod:`sparkberg.spark.jvm`."""
from __future__ import annotations

import contextlib
import os
import re
import threading
import weakref
from typing import Any, Callable, Iterator

from sparkberg import state

DEFAULTS_FILE = "spark-defaults.conf"


def read_defaults(path: str) -> Iterator[tuple[str, str]]:
    """(key, value) pairs of a spark-defaults.conf file (whitespace separated, # comments)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 1)
            if len(parts) == 2:
                yield parts[0], parts[1].strip()


def session_builder(app_name: str = "sparkberg", master: str | None = None, defaults: str | None = None):
    """A SparkSession.Builder with the project's defaults applied (found next to the working directory
    or given by ``defaults`` / $SPARKBERG_SPARK_DEFAULTS)."""
    from pyspark.sql import SparkSession

    b = SparkSession.builder.appName(app_name)
    if master:
        b = b.master(master)
    path = defaults or os.environ.get("SPARKBERG_SPARK_DEFAULTS") or DEFAULTS_FILE
    if os.path.exists(path):
        for k, v in read_defaults(path):
            b = b.config(k, v)
    return b


def is_classic(spark) -> bool:
    """Whether ``spark`` is a classic session (a JVM in this process, reached by py4j), not a Spark Connect
    client: the one place that asks (what only a classic session has is its py4j handle)."""
    return getattr(spark, "_jsparkSession", None) is not None


class job_description:
    """Label the Spark jobs run inside the block: the job description on a classic session (shown in the Spark
    UI), a job tag over Spark Connect (``spark.addTag``; shown with the jobs, usable to interrupt them)."""

    def __init__(self, spark: Any, label: str):
        self.spark = spark
        self.label = label
        self.sc = None
        self.tag = None

    def __enter__(self):
        try:
            from pyspark.sql import SparkSession as Classic
            if isinstance(self.spark, Classic):
                self.sc = self.spark.sparkContext
                self.previous = self.sc.getLocalProperty("spark.job.description")
                self.sc.setJobDescription(self.label)
            elif hasattr(self.spark, "addTag"):
                self.tag = re.sub(r"[^A-Za-z0-9_.:=-]+", "_", self.label)  # tags take no commas
                self.spark.addTag(self.tag)
        except Exception:  # noqa: BLE001 - a session that refuses labels still runs the jobs
            self.sc = self.tag = None
        return self

    def __exit__(self, *exc):
        if self.sc is not None:
            self.sc.setJobDescription(self.previous)
        elif self.tag is not None:
            try:
                self.spark.removeTag(self.tag)
            except Exception:  # noqa: BLE001
                pass
        return False


@contextlib.contextmanager
def session_setting(spark, key: str, value: str, when: bool = True):
    """The session setting ``key`` is ``value`` inside the block (when ``when``), as it was after."""
    if not when:
        yield
        return
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


_per_session: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # (what a session keeps goes with it)


_per_session_lock = threading.Lock()


def per_session(spark, name: str, make: Callable[[], Any]) -> Any:
    """The object ``name`` that ``spark`` keeps for as long as it lives (``make()`` the first time); None for a
    session object that takes no weak reference."""
    try:
        with _per_session_lock:
            kept = _per_session.setdefault(spark, {})
            if name not in kept:
                kept[name] = make()
            return kept[name]
    except TypeError:
        return None


def spark_version(spark) -> tuple[int, int]:
    """(major, minor) of the Spark that runs the session's queries: the server's over Spark Connect (asked once
    per session), else PySpark's own."""
    import pyspark

    def ask() -> tuple[int, int]:
        try:
            return _major_minor(spark.version)
        except Exception:  # noqa: BLE001 - a session that cannot tell: the client's
            return _major_minor(pyspark.__version__)
    if spark is None:
        return _major_minor(pyspark.__version__)
    kept = per_session(spark, "spark version", ask)
    return kept if kept is not None else ask()


def _major_minor(text: str) -> tuple[int, int]:
    m = re.match(r"(\d+)(?:\.(\d+))?", text)
    if m is None:
        raise ValueError(f"not a Spark version: {text!r}")
    return int(m.group(1)), int(m.group(2) or 0)


state.register("sparkberg.spark.session._per_session", "per Spark session, gone with it", _per_session.clear)
