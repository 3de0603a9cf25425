"""The Spark session: a builder with the settings of the project's ``spark-defaults.conf``, the session's settings
read and set for a block, job labels, what a session keeps for its life (:func:`per_session`), and which Spark
runs it. Public PySpark API only: what reaches into the JVM is :mod:`sparkberg.spark.jvm`."""
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


def session_conf(spark, key: str, default: str | None = None) -> str | None:
    """A session setting, or ``default`` when it is unset or there is no session (metadata-only use). (Read with a
    default, even None: Spark answers the read of an unset key without one by an exception, which costs a fresh JVM
    far more than the read.)"""
    if spark is None:
        return default
    try:
        value = spark.conf.get(key, default)
    except Exception:  # noqa: BLE001 - a session that refuses the read: as if unset
        return default
    return default if value is None else value


_BYTE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
               "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50}


def _conf_bytes(spark, key: str, default: int) -> int:
    """A size setting of the session (Spark's ``134217728b``, ``4m``, ``1g``...) in bytes; ``default`` when unset
    or unreadable (:func:`session_conf`: ``spark.driver.maxResultSize`` is usually unset)."""
    value = session_conf(spark, key)
    if value is None:
        return default
    text = str(value).strip().lower()
    m = re.fullmatch(r"(\d+)\s*([a-z]*)", text)
    return int(m.group(1)) * _BYTE_UNITS[m.group(2)] if m and m.group(2) in _BYTE_UNITS else default


def unsplit_file_bytes(spark) -> int:
    """The size up to which a file's rows are all read by one task of Spark's file scans: Spark cuts a file into
    splits of ``min(maxPartitionBytes, max(openCostInBytes, bytes per core))``, never less than the smaller of
    the two settings."""
    return min(_conf_bytes(spark, "spark.sql.files.maxPartitionBytes", 128 << 20),
               _conf_bytes(spark, "spark.sql.files.openCostInBytes", 4 << 20))


def max_result_bytes(spark) -> int:
    """``spark.driver.maxResultSize`` in bytes: what Spark lets a collect bring to the driver (1 GiB by default;
    unlimited, 0, counts as the default: a bound for what sparkberg itself collects)."""
    return _conf_bytes(spark, "spark.driver.maxResultSize", 1 << 30) or 1 << 30


def default_parallelism(spark) -> int:
    """The session's default parallelism (the cores of a classic session's executors; a Spark Connect client sees
    only ``spark.default.parallelism`` when it is set, else 2, a local session's least)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext on the client
        return int(session_conf(spark, "spark.default.parallelism", "2") or 2)


def session_time_zone(spark) -> str:
    """The session time zone Spark interprets zone-less timestamp literals in (UTC without a session)."""
    return session_conf(spark, "spark.sql.session.timeZone") or "UTC"


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
