"""Partition transforms (spec: "Partition Transforms", "Bucket/Truncate Transform Details", Appendix B).

Each transform is an immutable value parsed from its JSON name (``bucket[16]``, ``truncate[4]``,
``day``...). ``transform.apply(source_type)`` returns a scalar function over in-memory values
(see :mod:`sparkberg.format.types`); it is the reference the Spark Column versions are tested against.
Transforms this library does not know parse as :class:`UnknownTransform`, which readers ignore
when filtering (required by v3) and writers refuse.
"""
from __future__ import annotations

import datetime as _dt
import math
import re
import struct
import uuid as _uuid
from dataclasses import dataclass
from typing import Any, Callable

import mmh3

from sparkberg.errors import ValidationError
from sparkberg.format.types import (
    BINARY, BOOLEAN, DATE, DOUBLE, FLOAT, INT, LONG, STRING, TIME, TIMESTAMP, TIMESTAMP_NS, TIMESTAMPTZ,
    TIMESTAMPTZ_NS, UUID, DecimalType, FixedType, GeographyType, GeometryType, IcebergType, PrimitiveType,
)
from sparkberg.format.values import int_to_min_bytes
from sparkberg.format.scalars import EPOCH_DATE, MICROS_PER_DAY, NANOS_PER_MICRO, decimal_unscaled, unscaled_to_decimal
from sparkberg.format.types import to_json_value

_TIMESTAMPS = (TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS)
_NANO_TIMESTAMPS = (TIMESTAMP_NS, TIMESTAMPTZ_NS)


# --- Appendix B: 32-bit Murmur3 hashes -------------------------------------------------------------

def hash_long(v: int) -> int:
    return mmh3.hash(struct.pack("<q", v), 0, signed=True)


def hash_bytes(b: bytes) -> int:
    return mmh3.hash(bytes(b), 0, signed=True)


def hash_value(t: IcebergType, v: Any) -> int:
    """The Appendix B 32-bit hash of an in-memory value of type ``t`` (signed, as Java's int)."""
    if t in (INT, LONG, DATE, TIME, TIMESTAMP, TIMESTAMPTZ):
        return hash_long(v)
    if t in _NANO_TIMESTAMPS:
        return hash_long(v // NANOS_PER_MICRO)  # floor to micros, so ns and us timestamps agree
    if isinstance(t, DecimalType):
        return hash_bytes(int_to_min_bytes(decimal_unscaled(v, t.scale)))
    if t == STRING:
        return hash_bytes(v.encode("utf-8"))
    if t == UUID:
        return hash_bytes((v if isinstance(v, _uuid.UUID) else _uuid.UUID(str(v))).bytes)
    if isinstance(t, FixedType) or t == BINARY:
        return hash_bytes(v)
    if t == BOOLEAN:
        return hash_long(1 if v else 0)
    if t in (FLOAT, DOUBLE):
        d = float(v)
        if math.isnan(d):
            bits = 0x7FF8000000000000
        elif d == 0.0:
            bits = 0
        else:
            bits = struct.unpack("<q", struct.pack("<d", d))[0]
        return hash_long(bits)
    raise ValidationError(f"cannot hash values of type {t}")


# --- transforms -------------------------------------------------------------------------------------

class Transform:
    """A partition or sort transform; subclasses define the per-type behaviour."""

    name: str = ""

    def __str__(self) -> str:
        return self.name

    def to_json(self) -> str:
        return str(self)

    def can_transform(self, source: IcebergType) -> bool:
        raise NotImplementedError

    def result_type(self, source: IcebergType) -> IcebergType:
        raise NotImplementedError

    def apply(self, source: IcebergType) -> Callable[[Any], Any]:
        """A scalar function computing this transform of one value of ``source`` type (None-safe)."""
        raise NotImplementedError

    @property
    def preserves_order(self) -> bool:
        return False

    @property
    def is_void(self) -> bool:
        return False

    @property
    def is_known(self) -> bool:
        return True

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        """The value as Iceberg Java prints it in partition paths (``ts_day=2024-01-01``)."""
        if value is None:
            return "null"
        return _human(result_type, value)

    def check(self, source: IcebergType, where: str = "") -> None:
        if not self.can_transform(source):
            raise ValidationError(f"transform {self} cannot be applied to type {source}{where}")


def _human(t: IcebergType, value: Any) -> str:
    if t == DATE:
        return (EPOCH_DATE + _dt.timedelta(days=value)).isoformat()
    if t in (BINARY,) or isinstance(t, FixedType):
        import base64
        return base64.b64encode(bytes(value)).decode("ascii")
    if t == BOOLEAN:
        return "true" if value else "false"
    if t in (TIME, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS):
        return str(to_json_value(t, value))
    if isinstance(t, DecimalType):
        return str(to_json_value(t, value))
    return str(value)


@dataclass(frozen=True, eq=True)
class IdentityTransform(Transform):
    name = "identity"

    def can_transform(self, source):
        return source.is_primitive and not isinstance(source, (GeometryType, GeographyType)) \
            and source != PrimitiveType("unknown")

    def result_type(self, source):
        return source

    def apply(self, source):
        return lambda v: v

    @property
    def preserves_order(self):
        return True

    def __str__(self):
        return "identity"


@dataclass(frozen=True)
class BucketTransform(Transform):
    num_buckets: int

    def __post_init__(self):
        if self.num_buckets <= 0:
            raise ValidationError(f"bucket transform needs a positive number of buckets, got {self.num_buckets}")

    def can_transform(self, source):
        return source in (INT, LONG, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS, STRING,
                          UUID, BINARY) or isinstance(source, (DecimalType, FixedType))

    def result_type(self, source):
        return INT

    def apply(self, source):
        n = self.num_buckets
        return lambda v: None if v is None else (hash_value(source, v) & 0x7FFFFFFF) % n

    def __str__(self):
        return f"bucket[{self.num_buckets}]"


@dataclass(frozen=True)
class TruncateTransform(Transform):
    width: int

    def __post_init__(self):
        if self.width <= 0:
            raise ValidationError(f"truncate transform needs a positive width, got {self.width}")

    def can_transform(self, source):
        return source in (INT, LONG, STRING, BINARY) or isinstance(source, DecimalType)

    def result_type(self, source):
        return source

    @property
    def preserves_order(self):
        return True

    def apply(self, source):
        w = self.width
        if source in (INT, LONG):
            bits = 32 if source == INT else 64
            # Python's % is non-negative for w > 0; the result wraps like Java's int/long arithmetic at the edge
            return lambda v: None if v is None else _wrap(v - (v % w), bits)
        if isinstance(source, DecimalType):
            def trunc_decimal(v):
                if v is None:
                    return None
                u = decimal_unscaled(v, source.scale)
                return unscaled_to_decimal(u - (u % w), source.scale)
            return trunc_decimal
        if source == STRING:
            return lambda v: None if v is None else v[:w]  # Python str indexes code points, as the spec asks
        if source == BINARY:
            return lambda v: None if v is None else bytes(v[:w])
        raise ValidationError(f"transform {self} cannot be applied to type {source}")

    def __str__(self):
        return f"truncate[{self.width}]"


def _wrap(v: int, bits: int) -> int:
    """Two's complement wrap-around, as Java's fixed-width integer arithmetic."""
    half = 1 << (bits - 1)
    return (v + half) % (1 << bits) - half


class _TimeTransform(Transform):
    """year/month/day/hour: ordinal from the epoch, floor semantics for values before 1970."""

    granularity = ""

    def can_transform(self, source):
        return source == DATE or source in _TIMESTAMPS

    def result_type(self, source):
        return INT

    @property
    def preserves_order(self):
        return True

    def apply(self, source):
        if source == DATE:
            to_days = lambda v: v  # noqa: E731
        elif source in _NANO_TIMESTAMPS:
            to_days = lambda v: v // (MICROS_PER_DAY * NANOS_PER_MICRO)  # noqa: E731
        else:
            to_days = lambda v: v // MICROS_PER_DAY  # noqa: E731
        g = self.granularity
        if g == "day":
            return lambda v: None if v is None else to_days(v)
        if g == "hour":
            per_hour = 3_600_000_000 * (NANOS_PER_MICRO if source in _NANO_TIMESTAMPS else 1)
            return lambda v: None if v is None else v // per_hour

        def by_calendar(v):
            if v is None:
                return None
            d = EPOCH_DATE + _dt.timedelta(days=to_days(v))
            return d.year - 1970 if g == "year" else (d.year - 1970) * 12 + d.month - 1
        return by_calendar

    def to_human_string(self, result_type, value):
        if value is None:
            return "null"
        g = self.granularity
        if g == "year":
            return f"{1970 + value:04d}"
        if g == "month":
            y, m = divmod(value, 12)
            return f"{1970 + y:04d}-{m + 1:02d}"
        if g == "day":
            return (EPOCH_DATE + _dt.timedelta(days=value)).isoformat()
        days, hour = divmod(value, 24)
        return f"{(EPOCH_DATE + _dt.timedelta(days=days)).isoformat()}-{hour:02d}"

    def __str__(self):
        return self.granularity

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(self.granularity)

    def __repr__(self):
        return f"{type(self).__name__}()"


class YearTransform(_TimeTransform):
    granularity = "year"


class MonthTransform(_TimeTransform):
    granularity = "month"


class DayTransform(_TimeTransform):
    granularity = "day"

    def result_type(self, source):
        return DATE  # spec note [1]: day produces a date (readers also accept int)


class HourTransform(_TimeTransform):
    granularity = "hour"

    def can_transform(self, source):
        return source in _TIMESTAMPS


@dataclass(frozen=True, eq=True)
class VoidTransform(Transform):
    def can_transform(self, source):
        return True

    def result_type(self, source):
        return source

    def apply(self, source):
        return lambda v: None

    @property
    def is_void(self):
        return True

    def __str__(self):
        return "void"


@dataclass(frozen=True)
class UnknownTransform(Transform):
    """A transform this library does not know; kept verbatim, ignored for filtering."""

    text: str

    def can_transform(self, source):
        return True

    def result_type(self, source):
        return STRING

    def apply(self, source):
        raise ValidationError(f"cannot apply unknown transform {self.text!r}; writers may not use it")

    @property
    def is_known(self):
        return False

    def __str__(self):
        return self.text


_PARAM_RE = re.compile(r"^(bucket|truncate)\s*\[\s*(\d+)\s*\]$")
_SIMPLE = {"identity": IdentityTransform(), "year": YearTransform(), "month": MonthTransform(),
           "day": DayTransform(), "hour": HourTransform(), "void": VoidTransform()}
_ALIASES = {"years": "year", "months": "month", "days": "day", "hours": "hour", "date": "day", "date_hour": "hour"}


def parse_transform(text: str) -> Transform:
    """Parse a transform from its JSON name; unknown names give an :class:`UnknownTransform`."""
    if not isinstance(text, str):
        raise ValidationError(f"transform must be a string, got {text!r}")
    s = text.strip()
    lowered = s.lower()
    if lowered in _SIMPLE:
        return _SIMPLE[lowered]
    m = _PARAM_RE.match(lowered)
    if m:
        n = int(m.group(2))
        return BucketTransform(n) if m.group(1) == "bucket" else TruncateTransform(n)
    return UnknownTransform(s)


def parse_transform_call(text: str) -> tuple[Transform, str]:
    """Parse a user partition expression like ``day(ts)``, ``bucket(16, id)``, ``truncate(id, 4)``
    or a bare column name into (transform, source column name)."""
    s = text.strip()
    m = re.match(r"^([A-Za-z_]+)\s*\((.*)\)$", s, re.S)
    if not m:
        if not s:
            raise ValidationError("empty partition expression")
        return IdentityTransform(), s.strip("`")
    fn = m.group(1).lower()
    args = [a.strip().strip("`") for a in m.group(2).split(",")]
    fn = _ALIASES.get(fn, fn)
    if fn in ("bucket", "truncate"):
        if len(args) != 2:
            raise ValidationError(f"partition expression {text!r} needs two arguments: {fn}(N, column)")
        a, b = args
        if a.isdigit():
            n, col = int(a), b
        elif b.isdigit():
            n, col = int(b), a
        else:
            raise ValidationError(f"partition expression {text!r} needs an integer argument")
        return (BucketTransform(n) if fn == "bucket" else TruncateTransform(n)), col
    if fn in _SIMPLE and len(args) == 1 and args[0]:
        return _SIMPLE[fn], args[0]
    raise ValidationError(f"unknown partition transform in {text!r}")
