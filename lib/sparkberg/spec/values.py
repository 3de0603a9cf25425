"""Single-value serialization (spec Appendix D): binary (bounds, partition summaries) and JSON
(defaults, partition values in REST/metadata contexts), plus conversions between the in-memory
value form (see :mod:`sparkberg.spec.types`) and Python's datetime/decimal/uuid objects.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import math
import struct
import uuid as _uuid
from typing import Any

from sparkberg.errors import NotSupportedError, ValidationError
from sparkberg.spec.types import (
    BINARY, BOOLEAN, DATE, DOUBLE, FLOAT, INT, LONG, STRING, TIME, TIMESTAMP, TIMESTAMP_NS, TIMESTAMPTZ,
    TIMESTAMPTZ_NS, UNKNOWN, UUID, DecimalType, FixedType, GeographyType, GeometryType, IcebergType, ListType,
    MapType, StructType, VariantType,
)

EPOCH = _dt.datetime(1970, 1, 1)
EPOCH_DATE = _dt.date(1970, 1, 1)
EPOCH_TZ = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
MICROS_PER_DAY = 86_400_000_000
_EXACT = decimal.Context(prec=100)  # decimal(38, s) needs more than the default 28 digits
NANOS_PER_MICRO = 1000


# --- binary (Appendix D) ---------------------------------------------------------------------------

def decimal_unscaled(value: decimal.Decimal, scale: int) -> int:
    """The unscaled integer of a decimal at the given scale (exact; raises if it does not fit)."""
    q = value.scaleb(scale, _EXACT)
    if q != q.to_integral_value():
        raise ValidationError(f"decimal {value} does not fit scale {scale}")
    return int(q)


def unscaled_to_decimal(unscaled: int, scale: int) -> decimal.Decimal:
    return decimal.Decimal(unscaled).scaleb(-scale, _EXACT)


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


# --- JSON (Appendix D) -----------------------------------------------------------------------------

def days_to_date(days: int) -> _dt.date:
    return EPOCH_DATE + _dt.timedelta(days=days)


def date_to_days(d: _dt.date) -> int:
    return (d - EPOCH_DATE).days


def micros_to_datetime(micros: int) -> _dt.datetime:
    return EPOCH + _dt.timedelta(microseconds=micros)


def zone_of(name: str) -> _dt.tzinfo:
    """The time zone a Spark session's time zone setting names: a region (``America/Los_Angeles``), ``UTC`` or
    ``Z``, or an offset (``+08:00``, ``UTC+8``, ``GMT-03:30``); a ValueError for anything else."""
    import re
    from zoneinfo import ZoneInfo

    text = name.strip()
    if text.upper() in ("Z", "UTC", "GMT", "UT"):
        return _dt.timezone.utc
    m = re.fullmatch(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?", text, re.IGNORECASE)
    if m is not None:
        sign, hours, minutes, seconds = m.groups()
        delta = _dt.timedelta(hours=int(hours), minutes=int(minutes or 0), seconds=int(seconds or 0))
        return _dt.timezone(-delta if sign == "-" else delta)
    try:
        return ZoneInfo(text)
    except (KeyError, ValueError, OSError):  # (ZoneInfoNotFoundError is a KeyError)
        raise ValueError(f"unknown time zone {name!r}") from None


def datetime_to_micros(ts: _dt.datetime) -> int:
    if ts.tzinfo is not None:
        delta = ts - EPOCH_TZ
    else:
        delta = ts - EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def micros_to_time(micros: int) -> _dt.time:
    s, us = divmod(micros, 1_000_000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return _dt.time(h, m, s, us)


def time_to_micros(t: _dt.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond


def _format_ts(total: int, per_second: int, digits: int) -> str:
    seconds, frac = divmod(total, per_second)
    base = EPOCH + _dt.timedelta(seconds=seconds)
    return (f"{base.year:04d}-{base.month:02d}-{base.day:02d}T{base.hour:02d}:{base.minute:02d}:{base.second:02d}"
            f".{str(frac).rjust(digits, '0')}")


def _parse_ts(text: str, zoned: bool, nanos: bool) -> int:
    s = text.strip()
    offset = _dt.timedelta(0)
    if zoned:
        if s.endswith("Z"):
            s = s[:-1]
        elif len(s) > 6 and s[-6] in "+-" and s[-3] == ":":
            sign = 1 if s[-6] == "+" else -1
            offset = sign * _dt.timedelta(hours=int(s[-5:-3]), minutes=int(s[-2:]))
            s = s[:-6]
        else:
            raise ValidationError(f"timestamptz value {text!r} must include a zone offset")
    elif len(s) > 6 and (s[-6] in "+-" and s[-3] == ":" or s.endswith("Z")):
        raise ValidationError(f"timestamp value {text!r} must not include a zone offset")
    date_part, _, time_part = s.partition("T")
    hms, _, frac = time_part.partition(".")
    base = _dt.datetime.fromisoformat(f"{date_part}T{hms or '00:00:00'}") - offset
    digits = 9 if nanos else 6
    frac_value = int((frac + "0" * digits)[:digits]) if frac else 0
    delta = base - EPOCH
    whole = delta.days * 86400 + delta.seconds
    return whole * (1_000_000_000 if nanos else 1_000_000) + frac_value


def to_json_value(t: IcebergType, value: Any) -> Any:
    """Serialize one in-memory value of type ``t`` to its Appendix D JSON form."""
    if value is None:
        return None
    if t in (BOOLEAN, INT, LONG):
        return value
    if t in (FLOAT, DOUBLE):
        return float(value)
    if isinstance(t, DecimalType):
        d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(value)
        d = unscaled_to_decimal(decimal_unscaled(d, t.scale), t.scale)
        return format(d, "f") if t.scale >= 0 else f"{decimal_unscaled(d, t.scale)}E+{-t.scale}"
    if t == DATE:
        return days_to_date(value).isoformat()
    if t == TIME:
        return micros_to_time(value).strftime("%H:%M:%S.%f")
    if t == TIMESTAMP:
        return _format_ts(value, 1_000_000, 6)
    if t == TIMESTAMPTZ:
        return _format_ts(value, 1_000_000, 6) + "+00:00"
    if t == TIMESTAMP_NS:
        return _format_ts(value, 1_000_000_000, 9)
    if t == TIMESTAMPTZ_NS:
        return _format_ts(value, 1_000_000_000, 9) + "+00:00"
    if t == STRING:
        return value
    if t == UUID:
        return str(value if isinstance(value, _uuid.UUID) else _uuid.UUID(str(value))).lower()
    if isinstance(t, FixedType) or t == BINARY:
        return bytes(value).hex()
    if isinstance(t, StructType):
        return {str(f.field_id): to_json_value(f.field_type, value[f.field_id])
                for f in t.fields if value.get(f.field_id) is not None}
    if isinstance(t, ListType):
        return [to_json_value(t.element_type, v) for v in value]
    if isinstance(t, MapType):
        items = list(value.items())
        return {"keys": [to_json_value(t.key_type, k) for k, _ in items],
                "values": [to_json_value(t.value_type, v) for _, v in items]}
    if isinstance(t, (GeometryType, GeographyType, VariantType)) or t == UNKNOWN:
        raise ValidationError(f"values of type {t} must be null")
    raise NotSupportedError(f"JSON single-value serialization is not defined for {t}")


def from_json_value(t: IcebergType, obj: Any) -> Any:
    """Parse an Appendix D JSON value of type ``t`` into the in-memory form."""
    if obj is None:
        return None
    try:
        if t == BOOLEAN:
            if not isinstance(obj, bool):
                raise ValueError("expected a JSON boolean")
            return obj
        if t in (INT, LONG):
            if isinstance(obj, bool) or not isinstance(obj, int):
                raise ValueError("expected a JSON integer")
            return obj
        if t in (FLOAT, DOUBLE):
            if isinstance(obj, bool) or not isinstance(obj, (int, float)):
                raise ValueError("expected a JSON number")
            return float(obj)
        if isinstance(t, DecimalType):
            d = decimal.Decimal(obj)
            if not d.is_finite():
                raise ValueError("expected a finite decimal")
            return unscaled_to_decimal(decimal_unscaled(d, t.scale), t.scale)
        if t == DATE:
            return date_to_days(_dt.date.fromisoformat(obj))
        if t == TIME:
            hms, _, frac = obj.partition(".")
            base = _dt.time.fromisoformat(hms)
            return time_to_micros(base) + (int((frac + "000000")[:6]) if frac else 0)
        if t == TIMESTAMP:
            return _parse_ts(obj, zoned=False, nanos=False)
        if t == TIMESTAMPTZ:
            return _parse_ts(obj, zoned=True, nanos=False)
        if t == TIMESTAMP_NS:
            return _parse_ts(obj, zoned=False, nanos=True)
        if t == TIMESTAMPTZ_NS:
            return _parse_ts(obj, zoned=True, nanos=True)
        if t == STRING:
            if not isinstance(obj, str):
                raise ValueError("expected a JSON string")
            return obj
        if t == UUID:
            return _uuid.UUID(obj)
        if isinstance(t, FixedType) or t == BINARY:
            b = bytes.fromhex(obj)
            if isinstance(t, FixedType) and len(b) != t.length:
                raise ValueError(f"expected {t.length} bytes, got {len(b)}")
            return b
        if isinstance(t, StructType):
            if not isinstance(obj, dict):
                raise ValueError("expected a JSON object keyed by field id")
            return {f.field_id: from_json_value(f.field_type, obj.get(str(f.field_id))) for f in t.fields}
        if isinstance(t, ListType):
            return [from_json_value(t.element_type, v) for v in obj]
        if isinstance(t, MapType):
            return {from_json_value(t.key_type, k): from_json_value(t.value_type, v)
                    for k, v in zip(obj["keys"], obj["values"])}
    except (ValidationError, ValueError, TypeError, KeyError, decimal.InvalidOperation) as e:
        raise ValidationError(f"invalid JSON value {obj!r} for type {t}: {e}") from None
    raise ValidationError(f"type {t} cannot have a non-null value (got {obj!r})")


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
