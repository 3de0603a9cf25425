"""Iceberg <-> Spark types, as Iceberg's own Spark integration maps them.

timestamp -> TIMESTAMP_NTZ, timestamptz -> TIMESTAMP, uuid -> STRING, fixed/binary -> BINARY,
byte/short -> int on the way in, char/varchar -> string. Of format v3's types: timestamp_ns and timestamptz_ns ->
TIMESTAMP_NTZ and TIMESTAMP (Spark has no nanosecond timestamp: reads drop the sub-microsecond digits toward
negative infinity, as Iceberg Java's ``DateTimeUtil.nanosToMicros``), geometry and geography -> BINARY (their WKB),
unknown -> NULL (VOID), variant -> VARIANT where PySpark has it (4.0+). Types Spark cannot hold raise
:class:`NotSupportedError` naming the column.
"""
from __future__ import annotations

import functools
import re
from dataclasses import replace
from typing import Any

from pyspark.sql import types as T

from sparkberg import state
from sparkberg.errors import NotSupportedError, ValidationError
from sparkberg.format import types as I


def _spark_time_type():
    return getattr(T, "TimeType", None)


def to_spark_type(t: I.IcebergType, where: str = "") -> T.DataType:
    """The Spark type that holds values of Iceberg type ``t``."""
    simple = {
        I.BOOLEAN: T.BooleanType(), I.INT: T.IntegerType(), I.LONG: T.LongType(), I.FLOAT: T.FloatType(),
        I.DOUBLE: T.DoubleType(), I.DATE: T.DateType(), I.TIMESTAMP: T.TimestampNTZType(),
        I.TIMESTAMPTZ: T.TimestampType(), I.STRING: T.StringType(), I.UUID: T.StringType(),
        I.BINARY: T.BinaryType(), I.UNKNOWN: T.NullType(), I.TIMESTAMP_NS: T.TimestampNTZType(),
        I.TIMESTAMPTZ_NS: T.TimestampType(),
    }
    if t in simple:
        return simple[t]
    if isinstance(t, (I.GeometryType, I.GeographyType)):
        return T.BinaryType()
    if isinstance(t, I.DecimalType):
        return T.DecimalType(t.precision, t.scale)
    if isinstance(t, I.FixedType):
        return T.BinaryType()
    if t == I.TIME:
        tt = _spark_time_type()
        if tt is not None:
            return tt(6)
        raise NotSupportedError(f"Spark {_spark_version()} has no type for Iceberg time{where}")
    if isinstance(t, I.StructType):
        return T.StructType([to_spark_field(f) for f in t.fields])
    if isinstance(t, I.ListType):
        return T.ArrayType(to_spark_type(t.element_type, where), containsNull=not t.element_required)
    if isinstance(t, I.MapType):
        return T.MapType(to_spark_type(t.key_type, where), to_spark_type(t.value_type, where),
                         valueContainsNull=not t.value_required)
    if isinstance(t, I.VariantType):
        if hasattr(T, "VariantType"):
            return T.VariantType()
        raise NotSupportedError(f"PySpark {_spark_version()} has no variant type (PySpark 4.0 has){where}")
    raise NotSupportedError(f"Iceberg type {t} cannot be represented in Spark{where}; not supported yet")


def to_spark_field(f: I.NestedField) -> T.StructField:
    meta = {"comment": f.doc} if f.doc else {}
    return T.StructField(f.name, to_spark_type(f.field_type, f" (column {f.name!r})"), nullable=not f.required,
                         metadata=meta)


def to_spark_schema(schema: I.Schema) -> T.StructType:
    """The Spark StructType of an Iceberg schema."""
    return T.StructType([to_spark_field(f) for f in schema.fields])


def _spark_version() -> str:
    import pyspark
    return pyspark.__version__


def from_spark_type(dt: T.DataType, next_id, where: str = "") -> I.IcebergType:
    """The Iceberg type for a Spark type; ``next_id()`` hands out field ids for nested fields."""
    if isinstance(dt, T.BooleanType):
        return I.BOOLEAN
    if isinstance(dt, (T.ByteType, T.ShortType, T.IntegerType)):
        return I.INT
    if isinstance(dt, T.LongType):
        return I.LONG
    if isinstance(dt, T.FloatType):
        return I.FLOAT
    if isinstance(dt, T.DoubleType):
        return I.DOUBLE
    if isinstance(dt, T.DecimalType):
        return I.DecimalType(dt.precision, dt.scale)
    if isinstance(dt, T.DateType):
        return I.DATE
    if isinstance(dt, T.TimestampNTZType):
        return I.TIMESTAMP
    if isinstance(dt, T.TimestampType):
        return I.TIMESTAMPTZ
    if isinstance(dt, (T.StringType, T.CharType, T.VarcharType)):
        return I.STRING
    if isinstance(dt, T.BinaryType):
        return I.BINARY
    if isinstance(dt, T.NullType):
        return I.UNKNOWN
    tt = _spark_time_type()
    if tt is not None and isinstance(dt, tt):
        return I.TIME
    if hasattr(T, "VariantType") and isinstance(dt, T.VariantType):
        return I.VARIANT
    if isinstance(dt, T.StructType):
        ids = [next_id() for _ in dt.fields]
        return I.StructType(_field(f, fid, next_id, where) for f, fid in zip(dt.fields, ids))
    if isinstance(dt, T.ArrayType):
        eid = next_id()
        return I.ListType(eid, from_spark_type(dt.elementType, next_id, where), not dt.containsNull)
    if isinstance(dt, T.MapType):
        kid, vid = next_id(), next_id()
        return I.MapType(kid, from_spark_type(dt.keyType, next_id, where), vid,
                         from_spark_type(dt.valueType, next_id, where), not dt.valueContainsNull)
    raise ValidationError(f"Spark type {dt.simpleString()} has no Iceberg equivalent{where}")


def _field(f: T.StructField, fid: int, next_id, where: str) -> I.NestedField:
    doc = (f.metadata or {}).get("comment")
    return I.NestedField(fid, f.name, from_spark_type(f.dataType, next_id, f" (column {f.name!r})"),
                         required=not f.nullable, doc=doc)


def from_spark_schema(struct: T.StructType) -> I.Schema:
    """An Iceberg schema for a Spark StructType, ids assigned 1.. parents before children."""
    counter = [0]

    def next_id() -> int:
        counter[0] += 1
        return counter[0]

    t = from_spark_type(struct, next_id)
    return I.Schema(t.fields, 0)


FIELD_ID_KEY = "parquet.field.id"


def to_spark_read_type(t: I.IcebergType, where: str = "") -> T.DataType:
    """Like :func:`to_spark_type`, with the Parquet field id on every nested struct field."""
    if isinstance(t, I.StructType):
        return T.StructType([to_spark_read_field(f) for f in t.fields])
    if isinstance(t, I.ListType):
        return T.ArrayType(to_spark_read_type(t.element_type, where), containsNull=not t.element_required)
    if isinstance(t, I.MapType):
        return T.MapType(to_spark_read_type(t.key_type, where), to_spark_read_type(t.value_type, where),
                         valueContainsNull=not t.value_required)
    return to_spark_type(t, where)


def to_spark_read_field(f: I.NestedField, name: str | None = None) -> T.StructField:
    """A StructField that Spark's Parquet reader matches by Iceberg field id (always nullable: a column
    added later is missing, hence null, in older files), with the column's doc as Spark's comment (a query's
    columns carry it, as CREATE TABLE AS SELECT copies it)."""
    meta = {FIELD_ID_KEY: f.field_id, **({"comment": f.doc} if f.doc else {})}
    return T.StructField(name or f.name, to_spark_read_type(f.field_type, f" (column {f.name!r})"), nullable=True,
                         metadata=meta)


def arrow_schema(struct: T.StructType):
    """The Arrow schema Spark exchanges for ``struct`` (``mapInArrow``), timestamps in UTC, on PySpark 3.5 and 4:
    PySpark's ``to_arrow_schema`` for these types, made here because PySpark 3.5's imports ``distutils`` (through
    setuptools' shim, slow to import in a fresh driver); PySpark's own for types not mapped here."""
    import pyarrow as pa
    try:
        return pa.schema([pa.field(f.name, _arrow_type(f.dataType), nullable=f.nullable) for f in struct])
    except _NotMapped:
        pass
    from pyspark.sql.pandas.types import to_arrow_schema
    try:
        return to_arrow_schema(struct, timezone="UTC")
    except TypeError:  # PySpark 3.5 takes no time zone and uses UTC
        return to_arrow_schema(struct)


class _NotMapped(Exception):
    pass


def _arrow_type(dt: T.DataType):
    import pyarrow as pa
    kind = type(dt)
    simple = {
        T.BooleanType: pa.bool_, T.ByteType: pa.int8, T.ShortType: pa.int16, T.IntegerType: pa.int32,
        T.LongType: pa.int64, T.FloatType: pa.float32, T.DoubleType: pa.float64, T.StringType: pa.string,
        T.BinaryType: pa.binary, T.DateType: pa.date32, T.NullType: pa.null,
        T.TimestampType: lambda: pa.timestamp("us", tz="UTC"), T.TimestampNTZType: lambda: pa.timestamp("us"),
        T.DayTimeIntervalType: lambda: pa.duration("us"),
    }.get(kind)
    if simple is not None:
        return simple()
    if kind is T.DecimalType:
        return pa.decimal128(dt.precision, dt.scale)
    if kind is T.ArrayType:
        return pa.list_(pa.field("element", _arrow_type(dt.elementType), nullable=dt.containsNull))
    if kind is T.MapType:
        return pa.map_(pa.field("key", _arrow_type(dt.keyType), nullable=False),
                       pa.field("value", _arrow_type(dt.valueType), nullable=dt.valueContainsNull))
    if kind is T.StructType:
        return pa.struct([pa.field(f.name, _arrow_type(f.dataType), nullable=f.nullable) for f in dt])
    raise _NotMapped(dt)


# Iceberg types Spark's DDL has no name for (format v3), written in DDL by their Iceberg names
_ICEBERG_ONLY = re.compile(r"^(timestamp_ns|timestamptz_ns|unknown|variant|geometry\s*(\(.*\))?|"
                           r"geography\s*(\(.*\))?)$", re.IGNORECASE | re.DOTALL)


def _iceberg_only(text: str) -> I.IcebergType | None:
    """The Iceberg type a DDL type names when Spark's DDL cannot (``timestamp_ns``, ``geometry(OGC:CRS84)``...)."""
    text = text.strip()
    if not _ICEBERG_ONLY.match(text):
        return None
    name, paren, rest = text.partition("(")
    return I.parse_type(name.strip().lower() + paren + rest)


def ddl_items(ddl: str) -> list[str]:
    """A DDL column list split at its top-level commas (not those inside ``<>``, ``()`` or quotes)."""
    items, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(ddl):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "`'\"":
            quote = ch
        elif ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(ddl[start:i])
            start = i + 1
    return items + [ddl[start:]]


def schema_from(spark: Any, schema: Any) -> I.Schema:
    """A sparkberg Schema from a Spark StructType, a DDL string, or a Schema. A DDL string's top-level columns
    may have the v3 types Spark has no DDL name for (``ts timestamp_ns``, ``g geometry``, ``v variant``...)."""
    if isinstance(schema, I.Schema):
        return schema
    iceberg_only: dict[int, I.IcebergType] = {}
    if isinstance(schema, str):
        items = []
        for pos, item in enumerate(ddl_items(schema)):
            m = re.match(r"\s*(`(?:[^`]|``)+`|[^\s`]+)\s+(.*?)\s*(\s(?:NOT\s+NULL|COMMENT\s.*))?$", item,
                         re.IGNORECASE | re.DOTALL)
            t = _iceberg_only(m.group(2)) if m else None
            if t is not None:
                iceberg_only[pos] = t
                item = f"{m.group(1)} binary{m.group(3) or ''}"  # (a placeholder of one field id)
            items.append(item)
        schema = parse_ddl(spark, ",".join(items))
    if not isinstance(schema, T.StructType):
        raise ValidationError(f"schema must be a Spark StructType, a DDL string or a sparkberg Schema, "
                              f"got {type(schema).__name__}")
    out = from_spark_schema(schema)
    if not iceberg_only:
        return out
    return I.Schema([replace(f, field_type=iceberg_only[i]) if i in iceberg_only else f
                     for i, f in enumerate(out.fields)], out.schema_id)


def parse_type(spark: Any, text: str) -> I.IcebergType:
    """The Iceberg type of a Spark DDL type (``"bigint"``, ``"decimal(12,2)"``, ``"struct<a: int>"``), or of one
    of the v3 types Spark's DDL has no name for (``"timestamp_ns"``, ``"variant"``...), nested field ids numbered
    from 1."""
    own = _iceberg_only(text)
    if own is not None:
        return own
    parsed = parse_ddl(spark, f"`x` {text}")
    if len(parsed.fields) != 1:
        raise ValidationError(f"{text!r} is not one Spark type")
    counter = [0]

    def next_id() -> int:
        counter[0] += 1
        return counter[0]
    return from_spark_type(parsed.fields[0].dataType, next_id, f" (type {text!r})")


def parse_ddl(spark: Any, ddl: str) -> T.StructType:
    """The columns a Spark DDL string describes (``"id bigint, v string"``), on any session; a clear error
    otherwise. The same string gives the same object, not to be changed: parsing is a call into the JVM (or the
    Connect server), which every DataFrame sparkberg makes on the driver, a metadata table's, would pay again."""
    return _parsed_ddl(ddl)


@functools.lru_cache(maxsize=256)  # (a process's DDL strings: sparkberg's own, and the few its caller names)
def _parsed_ddl(ddl: str) -> T.StructType:
    try:
        if hasattr(T.StructType, "fromDDL"):
            parsed = T.StructType.fromDDL(ddl)
        else:  # PySpark 3.5 (classic session)
            from pyspark.sql.types import _parse_datatype_string
            parsed = _parse_datatype_string(ddl)
    except Exception as e:
        raise ValidationError(f"cannot parse schema DDL {ddl!r}: {e}") from None
    if not isinstance(parsed, T.StructType):
        raise ValidationError(f"schema DDL {ddl!r} must describe columns, like 'id bigint, v string'")
    return parsed


state.register("sparkberg.spark.types._parsed_ddl", "256 DDL strings", _parsed_ddl.cache_clear)
