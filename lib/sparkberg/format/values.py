"""Binary single-value serialization (spec Appendix D: bounds, partition summaries), and conversions between the
in-memory value form (see :mod:`sparkberg.format.types`) and Python's datetime/decimal/uuid objects. JSON
single values (defaults, partition values in REST and metadata) are :func:`sparkberg.format.types.to_json_value`
and :func:`~sparkberg.format.types.from_json_value`: a field's defaults are part of a schema's JSON.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import math
import struct
import uuid as _uuid
from typing import Any

from sparkberg.errors import NotSupportedError, ValidationError
from sparkberg.format.scalars import (
    NANOS_PER_MICRO, date_to_days, datetime_to_micros, decimal_unscaled, days_to_date, micros_to_datetime,
    micros_to_time, time_to_micros, unscaled_to_decimal,
)
from sparkberg.format.types import (
    BINARY, BOOLEAN, DATE, DOUBLE, FLOAT, INT, LONG, STRING, TIME, TIMESTAMP, TIMESTAMP_NS, TIMESTAMPTZ,
    TIMESTAMPTZ_NS, UUID, DecimalType, FixedType, GeographyType, GeometryType, IcebergType,
)



# --- binary (Appendix D) ---------------------------------------------------------------------------

def int_to_min_bytes(n: int) -> bytes:
    """Two's complement big-endian bytes of ``n`` using the fewest bytes (at least one)."""
    length = max(1, (n.bit_length() + 8) // 8) if n >= 0 else max(1, ((~n).bit_length() + 8) // 8)
    return n.to_bytes(length, "big", signed=True)


def to_bytes(t: IcebergType, value: Any) -> bytes:
    """Serialize one value of type ``t`` to its Appendix D binary form."""
    if t == BOOLEAN:
        return b"\x01" if value else b"\x00"
    if t in (INT, DATE):
        return struct.pack("<i", value)
    if t in (LONG, TIME, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS):
        return struct.pack("<q", value)
    if t == FLOAT:
        return struct.pack("<f", value)
    if t == DOUBLE:
        return struct.pack("<d", value)
    if t == STRING:
        return value.encode("utf-8")
    if t == UUID:
        return value.bytes if isinstance(value, _uuid.UUID) else _uuid.UUID(str(value)).bytes
    if isinstance(t, FixedType) or t == BINARY:
        return bytes(value)
    if isinstance(t, DecimalType):
        return int_to_min_bytes(decimal_unscaled(value, t.scale))
    if isinstance(t, (GeometryType, GeographyType)):
        return bytes(value)
    raise NotSupportedError(f"binary single-value serialization is not defined for {t}")


def from_bytes(t: IcebergType, data: bytes) -> Any:
    """Deserialize an Appendix D binary value of type ``t``."""
    try:
        if t == BOOLEAN:
            return data != b"\x00"
        if t in (INT, DATE):
            if len(data) == 8:  # bounds of a column promoted from int to long keep their 4 bytes; be lenient
                return struct.unpack("<q", data)[0]
            return struct.unpack("<i", data)[0]
        if t in (LONG, TIME, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS):
            if len(data) == 4:  # promoted from int (or date to timestamp): widen
                return struct.unpack("<i", data)[0]
            return struct.unpack("<q", data)[0]
        if t == FLOAT:
            return struct.unpack("<f", data)[0]
        if t == DOUBLE:
            if len(data) == 4:  # promoted from float
                return struct.unpack("<f", data)[0]
            return struct.unpack("<d", data)[0]
        if t == STRING:
            return bytes(data).decode("utf-8")
        if t == UUID:
            return _uuid.UUID(bytes=bytes(data))
        if isinstance(t, FixedType) or t == BINARY:
            return bytes(data)
        if isinstance(t, DecimalType):
            return unscaled_to_decimal(int.from_bytes(data, "big", signed=True), t.scale)
        if isinstance(t, (GeometryType, GeographyType)):
            return bytes(data)
    except (struct.error, UnicodeDecodeError, ValueError) as e:
        raise ValidationError(f"cannot deserialize {len(data)} bytes as {t}: {e}") from None
    raise NotSupportedError(f"binary single-value serialization is not defined for {t}")


def to_python(t: IcebergType, value: Any) -> Any:
    """Convert an in-memory value to the natural Python object (date, datetime, time...)."""
    if value is None:
        return None
    if t == DATE:
        return days_to_date(value)
    if t == TIME:
        return micros_to_time(value)
    if t == TIMESTAMP:
        return micros_to_datetime(value)
    if t == TIMESTAMPTZ:
        return micros_to_datetime(value).replace(tzinfo=_dt.timezone.utc)
    if t == TIMESTAMP_NS:
        return micros_to_datetime(value // NANOS_PER_MICRO)
    if t == TIMESTAMPTZ_NS:
        return micros_to_datetime(value // NANOS_PER_MICRO).replace(tzinfo=_dt.timezone.utc)
    return value


def from_python(t: IcebergType, value: Any) -> Any:
    """Convert a natural Python object (date, datetime, Decimal, str uuid...) to the in-memory form."""
    if value is None:
        return None
    if t == DATE and isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        return date_to_days(value)
    if t == TIME and isinstance(value, _dt.time):
        return time_to_micros(value)
    if t in (TIMESTAMP, TIMESTAMPTZ) and isinstance(value, _dt.datetime):
        return datetime_to_micros(value)
    if t in (TIMESTAMP_NS, TIMESTAMPTZ_NS) and isinstance(value, _dt.datetime):
        return datetime_to_micros(value) * NANOS_PER_MICRO
    if t == UUID and isinstance(value, (str, bytes)):
        return _uuid.UUID(value) if isinstance(value, str) else _uuid.UUID(bytes=value)
    if isinstance(t, DecimalType) and not isinstance(value, decimal.Decimal):
        return decimal.Decimal(str(value))
    return value


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)
