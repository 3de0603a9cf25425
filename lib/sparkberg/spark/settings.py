"""The session's settings, read: one (:func:`session_conf`, without making a classic session's SQL conf for it
where Spark has not made it yet), a size, the session's time zone and parallelism, and the file sizes Spark's
scans and collects go by."""
from __future__ import annotations

import re

from sparkberg.spark.jvm import jvm_time_zone, sql_conf_before_made

TIME_ZONE = "spark.sql.session.timeZone"


def session_conf(spark, key: str, default: str | None = None) -> str | None:
    """A session setting, or ``default`` when it is unset or there is no session (metadata-only use). A classic
    session's SQL conf is not made for the read where Spark has not made it yet
    (:func:`~sparkberg.spark.jvm.sql_conf_before_made`: PySpark 3.5 makes its whole SQL state with it). (Read with
    a default, even None: Spark answers the read of an unset key without one by an exception, which costs a fresh
    JVM far more than the read.)"""
    if spark is None:
        return default
    answered, value = sql_conf_before_made(spark, key)
    if answered:
        return default if value is None else value
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
    """The session time zone Spark interprets zone-less timestamp literals in: the session's setting, else Spark's
    default, the driver JVM's own zone (``America/New_York`` on a machine set to it, not UTC); UTC without a
    session."""
    if spark is None:
        return "UTC"
    zone = session_conf(spark, TIME_ZONE) or jvm_time_zone(spark)
    if zone is None:
        try:  # (Spark Connect: the server answers its default, as for any registered setting read without one)
            zone = spark.conf.get(TIME_ZONE)
        except Exception:  # noqa: BLE001 - a session that refuses the read
            zone = None
    return zone or "UTC"
