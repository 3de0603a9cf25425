"""Partition and sort keys as Spark SQL expressions, so the JVM clusters a write's rows (its shuffle and sort)
without a Python stage that computes the keys first (:class:`~sparkberg.write.ordering.KeyColumns`); the file
writer then computes each row's partition itself, as it reads the clustered rows.

Each expression gives exactly the transform's physical value (tested against
:func:`~sparkberg.write.arrow_transforms.apply_transform`, the writer's), so rows cluster by partition and sort
as Iceberg orders them:

- ``identity`` of any primitive column but a uuid (its Spark strings may differ in case): the column.
- ``bucket[N]`` of int, long, date and timestamptz values: Iceberg hashes each as an 8-byte long with Murmur3
  and seed 0. Spark's ``hash`` is Murmur3 with seed 42, and ``hash(a, b)`` hashes ``b`` with ``a``'s hash as
  its seed; :data:`SEED_ZERO` is the int whose hash is 0, so ``hash(SEED_ZERO, CAST(v AS BIGINT))`` is
  Iceberg's hash of ``v`` (Spark hashes a long as Iceberg does: its two 4-byte halves, low first, then length 8).
  Strings and decimals are hashed differently by the two (Spark's tail bytes, its decimal bytes): not here.
- ``year``, ``month``, ``day``, ``hour`` of date and timestamptz values, from the epoch day or microsecond
  (``unix_date``, ``unix_micros``), with no session time zone involved.

Any other key (truncate; a time transform or bucket of a timestamp without zone or in nanoseconds; a bucket of
strings, binaries, decimals or uuids) has no expression here: such a write computes its keys in Python first.
"""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from sparkberg.format import types as T
from sparkberg.format.transforms import (
    BucketTransform, DayTransform, HourTransform, IdentityTransform, MonthTransform, Transform, YearTransform,
)

# an int whose Murmur3 hash with Spark's seed is 0 (found by running Murmur3's steps backwards; a test checks it)
SEED_ZERO = -1693959553

_INT_MAX = (1 << 31) - 1  # (Iceberg's bucket: the hash's low 31 bits, modulo N)
_BUCKETED = (T.INT, T.LONG, T.DATE, T.TIMESTAMPTZ)
_TEMPORAL = (T.DATE, T.TIMESTAMPTZ)


def _quoted(dotted: str) -> str:
    return ".".join("`" + p.replace("`", "``") + "`" for p in dotted.split("."))


def _floor_div(sql: str, d: int) -> str:
    return f"(({sql}) - pmod({sql}, {d})) div {d}"


def _epoch_days(col: str, t: T.IcebergType) -> str:
    return f"unix_date({col})" if t == T.DATE else _floor_div(f"unix_micros({col})", 86_400_000_000)


def key_sql(transform: Transform, t: T.IcebergType, name: str) -> str | None:
    """The SQL of ``transform`` of the column at dotted ``name`` (of Iceberg type ``t``) as its physical
    partition value; None where there is none (see the module docstring)."""
    col = _quoted(name)
    if isinstance(transform, IdentityTransform):
        return col if t.is_primitive and t != T.UUID and not isinstance(t, (T.GeometryType, T.GeographyType)) \
            else None
    if isinstance(transform, BucketTransform) and t in _BUCKETED:
        value = {T.DATE: f"unix_date({col})", T.TIMESTAMPTZ: f"unix_micros({col})"}.get(t, f"CAST({col} AS BIGINT)")
        return f"CASE WHEN {col} IS NULL THEN NULL ELSE " \
               f"(hash({SEED_ZERO}, CAST({value} AS BIGINT)) & {_INT_MAX}) % {transform.num_buckets} END"
    if isinstance(transform, HourTransform) and t == T.TIMESTAMPTZ:
        return f"CAST({_floor_div(f'unix_micros({col})', 3_600_000_000)} AS INT)"
    if isinstance(transform, DayTransform) and t in _TEMPORAL:
        return f"CAST({_epoch_days(col, t)} AS INT)"
    if isinstance(transform, (MonthTransform, YearTransform)) and t in _TEMPORAL:
        day = col if t == T.DATE else f"date_from_unix_date(CAST({_epoch_days(col, t)} AS INT))"
        if isinstance(transform, YearTransform):
            return f"year({day}) - 1970"
        return f"(year({day}) - 1970) * 12 + month({day}) - 1"
    return None


def key_columns(schema: T.Schema, keys: list[tuple[str, int, Transform]]) -> list[Column] | None:
    """The keys ((name, source field id, transform), as :func:`~sparkberg.write.ordering.spec_keys` gives
    them) as Spark columns, in order; None unless every one has an expression."""
    by_id = schema.index_by_id()
    out = []
    for name, source_id, transform in keys:
        sql = key_sql(transform, by_id[source_id].field_type, schema.name_of(source_id))
        if sql is None:
            return None
        out.append(F.expr(sql).alias(name))
    return out


__all__ = ["SEED_ZERO", "key_sql", "key_columns"]
