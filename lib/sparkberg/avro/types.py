"""Iceberg types as Avro schemas (spec Appendix A, "Avro"), and Avro values back to the
in-memory value form of :mod:`sparkberg.format.types`.
"""
from __future__ import annotations

import uuid as _uuid
from typing import Any

from sparkberg.errors import NotSupportedError
from sparkberg.format.types import (
    BINARY, BOOLEAN, DATE, DOUBLE, FLOAT, INT, LONG, STRING, TIME, TIMESTAMP, TIMESTAMP_NS, TIMESTAMPTZ,
    TIMESTAMPTZ_NS, UUID, DecimalType, FixedType, IcebergType, StructType,
)
from sparkberg.format.scalars import decimal_unscaled, unscaled_to_decimal

_SIMPLE = {
    BOOLEAN: "boolean", INT: "int", LONG: "long", FLOAT: "float", DOUBLE: "double", STRING: "string",
    BINARY: "bytes",
    DATE: {"type": "int", "logicalType": "date"},
    TIME: {"type": "long", "logicalType": "time-micros"},
    TIMESTAMP: {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": False},
    TIMESTAMPTZ: {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": True},
    TIMESTAMP_NS: {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": False},
    TIMESTAMPTZ_NS: {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": True},
}


def decimal_required_bytes(precision: int) -> int:
    """Fewest bytes whose two's complement range holds every unscaled value of ``precision`` digits."""
    n = 1
    while 2 ** (8 * n - 1) < 10 ** precision:
        n += 1
    return n


def make_compatible_name(name: str) -> str:
    """An Avro-legal name for an Iceberg field name, sanitized the way Iceberg Java does it."""
    def ok_first(c: str) -> bool:
        return c.isascii() and (c.isalpha() or c == "_")

    def ok_rest(c: str) -> bool:
        return c.isascii() and (c.isalnum() or c == "_")

    if name and ok_first(name[0]) and all(ok_rest(c) for c in name[1:]):
        return name

    def sanitize(c: str) -> str:
        return "_" + c if c.isdigit() else "_x" + format(ord(c), "X")

    out = [name[0] if name and ok_first(name[0]) else sanitize(name[0])] if name else ["_"]
    out += [c if ok_rest(c) else sanitize(c) for c in name[1:]]
    return "".join(out)


def to_avro_type(t: IcebergType, named: set[str]) -> Any:
    """The Avro schema of a primitive Iceberg type; ``named`` tracks fixed names already defined."""
    if t in _SIMPLE:
        return dict(_SIMPLE[t]) if isinstance(_SIMPLE[t], dict) else _SIMPLE[t]
    if t == UUID:
        return _named({"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}, named)
    if isinstance(t, FixedType):
        return _named({"type": "fixed", "name": f"fixed_{t.length}", "size": t.length}, named)
    if isinstance(t, DecimalType):
        return _named({"type": "fixed", "name": f"decimal_{t.precision}_{t.scale}",
                       "size": decimal_required_bytes(t.precision), "logicalType": "decimal",
                       "precision": t.precision, "scale": t.scale}, named)
    raise NotSupportedError(f"type {t} cannot be stored in a manifest partition tuple")


def _named(schema: dict, named: set[str]) -> Any:
    if schema["name"] in named:
        return schema["name"]
    named.add(schema["name"])
    return schema


def partition_record(partition_type: StructType) -> dict:
    """The Avro record of a partition tuple (``r102``), fields keyed by partition field id."""
    named: set[str] = set()
    return {"type": "record", "name": "r102", "fields": [
        {"name": make_compatible_name(f.name), "type": ["null", to_avro_type(f.field_type, named)],
         "default": None, "field-id": f.field_id}
        for f in partition_type.fields]}


def from_avro_value(t: IcebergType, value: Any) -> Any:
    """A raw (logical-type-free) Avro value of Iceberg type ``t`` as the in-memory value."""
    if value is None:
        return None
    if isinstance(t, DecimalType):
        if isinstance(value, (bytes, bytearray)):
            return unscaled_to_decimal(int.from_bytes(value, "big", signed=True), t.scale)
        return value
    if t == UUID and isinstance(value, (bytes, bytearray)):
        return _uuid.UUID(bytes=bytes(value))
    if t == UUID and isinstance(value, str):
        return _uuid.UUID(value)
    if isinstance(t, FixedType) or t == BINARY:
        return bytes(value)
    if t == FLOAT or t == DOUBLE:
        return float(value)
    return value


def to_avro_value(t: IcebergType, value: Any) -> Any:
    """An in-memory value as fastavro writes it for the schema of :func:`to_avro_type`."""
    if value is None:
        return None
    if isinstance(t, DecimalType):
        return decimal_unscaled(value, t.scale).to_bytes(decimal_required_bytes(t.precision), "big", signed=True)
    if t == UUID:
        return (value if isinstance(value, _uuid.UUID) else _uuid.UUID(str(value))).bytes
    return value
