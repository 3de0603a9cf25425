"""Python scalars and the in-memory form of Iceberg values (see :mod:`sparkberg.format.types`), without types:
the epoch, days and microseconds, time zone names, exact decimals, and timestamps as Appendix D's JSON writes them.
"""
from __future__ import annotations

import datetime as _dt
import decimal

from sparkberg.errors import ValidationError

EPOCH = _dt.datetime(1970, 1, 1)
EPOCH_DATE = _dt.date(1970, 1, 1)
EPOCH_TZ = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
MICROS_PER_DAY = 86_400_000_000
_EXACT = decimal.Context(prec=100)  # decimal(38, s) needs more than the default 28 digits
NANOS_PER_MICRO = 1000


def decimal_unscaled(value: decimal.Decimal, scale: int) -> int:
    """The unscaled integer of a decimal at the given scale (exact; raises if it does not fit)."""
    q = value.scaleb(scale, _EXACT)
    if q != q.to_integral_value():
        raise ValidationError(f"decimal {value} does not fit scale {scale}")
    return int(q)


def unscaled_to_decimal(unscaled: int, scale: int) -> decimal.Decimal:
    return decimal.Decimal(unscaled).scaleb(-scale, _EXACT)


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
        raise ValidationError(f"unknown time zone {name!r}") from None


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


def format_timestamp(total: int, per_second: int, digits: int) -> str:
    """``total`` units (``per_second`` of them a second) since the epoch as ISO-8601 with ``digits`` fraction digits."""
    seconds, frac = divmod(total, per_second)
    base = EPOCH + _dt.timedelta(seconds=seconds)
    return (f"{base.year:04d}-{base.month:02d}-{base.day:02d}T{base.hour:02d}:{base.minute:02d}:{base.second:02d}"
            f".{str(frac).rjust(digits, '0')}")


def parse_timestamp(text: str, zoned: bool, nanos: bool) -> int:
    """An ISO-8601 timestamp (with a zone offset when ``zoned``, without otherwise) in micros or nanos since the epoch."""
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
