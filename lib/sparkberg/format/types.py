"""Iceberg data types and schemas (spec: "Schemas and Data Types"; JSON form: Appendix C).

Types are immutable values. Primitive types compare by their JSON name, so ``parse_type("decimal(9, 2)")
== DecimalType(9, 2)``. Nested types carry their field ids. A :class:`Schema` is a struct with a
schema id and identifier field ids.

Values of fields (defaults, bounds, partition values) use one in-memory form everywhere in the
library, the same as Iceberg Java's internal representation:
boolean -> bool; int/long -> int; float/double -> float; decimal -> decimal.Decimal;
date -> int days from 1970-01-01; time -> int microseconds from midnight;
timestamp/timestamptz -> int microseconds from the epoch; *_ns -> int nanoseconds from the epoch;
string -> str; uuid -> uuid.UUID; fixed/binary -> bytes;
struct -> dict {field_id: value}; list -> list; map -> dict.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import re
import uuid as _uuid
from dataclasses import dataclass, field
from typing import Any, Iterator

from sparkberg.errors import NotSupportedError, ValidationError
from sparkberg.format.scalars import (
    date_to_days, days_to_date, decimal_unscaled, format_timestamp, micros_to_time, parse_timestamp, time_to_micros,
    unscaled_to_decimal,
)


class IcebergType:
    """Base of all Iceberg types."""

    @property
    def is_primitive(self) -> bool:
        return False

    @property
    def is_nested(self) -> bool:
        return False

    def to_json(self) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class PrimitiveType(IcebergType):
    """A primitive type identified by its canonical JSON name (``"int"``, ``"timestamptz_ns"``...)."""

    name: str

    @property
    def is_primitive(self) -> bool:
        return True

    def to_json(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class DecimalType(PrimitiveType):
    """``decimal(P,S)``: fixed-point decimal, precision at most 38."""

    name: str = field(init=False, default="decimal")
    precision: int = 38
    scale: int = 0

    def __init__(self, precision: int, scale: int):
        object.__setattr__(self, "name", "decimal")
        object.__setattr__(self, "precision", precision)
        object.__setattr__(self, "scale", scale)
        if not 0 < precision <= 38:
            raise ValidationError(f"decimal precision must be in 1..38, got {precision}")

    def to_json(self) -> str:
        return f"decimal({self.precision},{self.scale})"

    def __str__(self) -> str:
        return self.to_json()


@dataclass(frozen=True)
class FixedType(PrimitiveType):
    """``fixed[L]``: byte array of length L."""

    name: str = field(init=False, default="fixed")
    length: int = 0

    def __init__(self, length: int):
        object.__setattr__(self, "name", "fixed")
        object.__setattr__(self, "length", length)
        if length <= 0:
            raise ValidationError(f"fixed length must be positive, got {length}")

    def to_json(self) -> str:
        return f"fixed[{self.length}]"

    def __str__(self) -> str:
        return self.to_json()


DEFAULT_CRS = "OGC:CRS84"
DEFAULT_EDGE_ALGORITHM = "spherical"
EDGE_ALGORITHMS = ("spherical", "vincenty", "thomas", "andoyer", "karney")


@dataclass(frozen=True)
class GeometryType(PrimitiveType):
    """``geometry(C)`` (v3): WKB values with the coordinate reference system ``C`` (Spark sees their bytes)."""

    name: str = field(init=False, default="geometry")
    crs: str = DEFAULT_CRS

    def __init__(self, crs: str = DEFAULT_CRS):
        object.__setattr__(self, "name", "geometry")
        object.__setattr__(self, "crs", crs)

    def to_json(self) -> str:
        return "geometry" if self.crs == DEFAULT_CRS else f"geometry({self.crs})"

    def __str__(self) -> str:
        return self.to_json()


@dataclass(frozen=True)
class GeographyType(PrimitiveType):
    """``geography(C, A)`` (v3): WKB values with the CRS ``C`` and edge algorithm ``A`` (Spark sees their bytes)."""

    name: str = field(init=False, default="geography")
    crs: str = DEFAULT_CRS
    algorithm: str = DEFAULT_EDGE_ALGORITHM

    def __init__(self, crs: str = DEFAULT_CRS, algorithm: str = DEFAULT_EDGE_ALGORITHM):
        object.__setattr__(self, "name", "geography")
        object.__setattr__(self, "crs", crs)
        object.__setattr__(self, "algorithm", algorithm)
        if algorithm not in EDGE_ALGORITHMS:
            raise ValidationError(f"unknown geography edge algorithm {algorithm!r}")

    def to_json(self) -> str:
        if self.algorithm != DEFAULT_EDGE_ALGORITHM:
            return f"geography({self.crs}, {self.algorithm})"
        if self.crs != DEFAULT_CRS:
            return f"geography({self.crs})"
        return "geography"

    def __str__(self) -> str:
        return self.to_json()


@dataclass(frozen=True)
class VariantType(IcebergType):
    """``variant`` (v3): semi-structured; neither primitive nor nested."""

    def to_json(self) -> str:
        return "variant"

    def __str__(self) -> str:
        return "variant"


UNKNOWN = PrimitiveType("unknown")
BOOLEAN = PrimitiveType("boolean")
INT = PrimitiveType("int")
LONG = PrimitiveType("long")
FLOAT = PrimitiveType("float")
DOUBLE = PrimitiveType("double")
DATE = PrimitiveType("date")
TIME = PrimitiveType("time")
TIMESTAMP = PrimitiveType("timestamp")
TIMESTAMPTZ = PrimitiveType("timestamptz")
TIMESTAMP_NS = PrimitiveType("timestamp_ns")
TIMESTAMPTZ_NS = PrimitiveType("timestamptz_ns")
STRING = PrimitiveType("string")
UUID = PrimitiveType("uuid")
BINARY = PrimitiveType("binary")
VARIANT = VariantType()

_SIMPLE = {t.name: t for t in (UNKNOWN, BOOLEAN, INT, LONG, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP,
                                TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS, STRING, UUID, BINARY)}
# Types added by format version 3; using them in older tables breaks forward compatibility.
V3_TYPE_NAMES = frozenset({"unknown", "timestamp_ns", "timestamptz_ns", "variant", "geometry", "geography"})


@dataclass(frozen=True)
class NestedField:
    """A named, id'd field of a struct; ``initial_default``/``write_default`` are v3 defaults."""

    field_id: int
    name: str
    field_type: IcebergType
    required: bool = False
    doc: str | None = None
    initial_default: Any = None
    write_default: Any = None

    @property
    def optional(self) -> bool:
        return not self.required


@dataclass(frozen=True)
class StructType(IcebergType):
    """A tuple of named fields, each with a unique id."""

    fields: tuple[NestedField, ...] = ()

    def __init__(self, fields=()):
        object.__setattr__(self, "fields", tuple(fields))

    @property
    def is_nested(self) -> bool:
        return True

    def field_by_name(self, name: str) -> NestedField | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def to_json(self) -> dict:
        return {"type": "struct", "fields": [_field_to_json(f) for f in self.fields]}

    def __str__(self) -> str:
        return "struct<" + ", ".join(f"{f.field_id}: {f.name}: {'required' if f.required else 'optional'} "
                                     f"{f.field_type}" for f in self.fields) + ">"


@dataclass(frozen=True)
class ListType(IcebergType):
    """A list of elements of one type; the element has its own field id."""

    element_id: int
    element_type: IcebergType
    element_required: bool = False

    @property
    def is_nested(self) -> bool:
        return True

    @property
    def element_field(self) -> NestedField:
        return NestedField(self.element_id, "element", self.element_type, self.element_required)

    def to_json(self) -> dict:
        return {"type": "list", "element-id": self.element_id, "element": self.element_type.to_json(),
                "element-required": self.element_required}

    def __str__(self) -> str:
        return f"list<{self.element_type}>"


@dataclass(frozen=True)
class MapType(IcebergType):
    """A map; keys are always required, values optional or required; both have field ids."""

    key_id: int
    key_type: IcebergType
    value_id: int
    value_type: IcebergType
    value_required: bool = False

    @property
    def is_nested(self) -> bool:
        return True

    @property
    def key_field(self) -> NestedField:
        return NestedField(self.key_id, "key", self.key_type, True)

    @property
    def value_field(self) -> NestedField:
        return NestedField(self.value_id, "value", self.value_type, self.value_required)

    def to_json(self) -> dict:
        return {"type": "map", "key-id": self.key_id, "key": self.key_type.to_json(),
                "value-id": self.value_id, "value": self.value_type.to_json(),
                "value-required": self.value_required}

    def __str__(self) -> str:
        return f"map<{self.key_type}, {self.value_type}>"


_DECIMAL_RE = re.compile(r"^decimal\s*\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")
_FIXED_RE = re.compile(r"^fixed\s*\[\s*(\d+)\s*\]$")
_GEOMETRY_RE = re.compile(r"^geometry\s*(?:\(\s*([^,()]*?)\s*\))?$")
_GEOGRAPHY_RE = re.compile(r"^geography\s*(?:\(\s*([^,()]*?)\s*(?:,\s*([A-Za-z]+)\s*)?\))?$")


def parse_type(obj: Any, path: str = "type") -> IcebergType:
    """Parse a type from its Appendix C JSON form (a string or an object)."""
    if isinstance(obj, str):
        s = obj.strip()
        if s in _SIMPLE:
            return _SIMPLE[s]
        if s == "variant":
            return VARIANT
        m = _DECIMAL_RE.match(s)
        if m:
            return DecimalType(int(m.group(1)), int(m.group(2)))
        m = _FIXED_RE.match(s)
        if m:
            return FixedType(int(m.group(1)))
        m = _GEOMETRY_RE.match(s)
        if m:
            return GeometryType(m.group(1) or DEFAULT_CRS)
        m = _GEOGRAPHY_RE.match(s)
        if m:
            return GeographyType(m.group(1) or DEFAULT_CRS, (m.group(2) or DEFAULT_EDGE_ALGORITHM).lower())
        raise ValidationError(f"unknown type {obj!r} at {path}")
    if isinstance(obj, dict):
        kind = obj.get("type")
        try:
            if kind == "struct":
                return StructType(parse_field(f, f"{path}.fields[{i}]") for i, f in enumerate(obj["fields"]))
            if kind == "list":
                return ListType(int(obj["element-id"]), parse_type(obj["element"], f"{path}.element"),
                                bool(obj["element-required"]))
            if kind == "map":
                return MapType(int(obj["key-id"]), parse_type(obj["key"], f"{path}.key"),
                               int(obj["value-id"]), parse_type(obj["value"], f"{path}.value"),
                               bool(obj["value-required"]))
        except KeyError as e:
            raise ValidationError(f"{kind} type at {path} is missing required field {e.args[0]!r}") from None
        raise ValidationError(f"unknown type {kind!r} at {path}")
    raise ValidationError(f"cannot parse type from {obj!r} at {path}")


def parse_field(obj: dict, path: str = "field") -> NestedField:
    """Parse one struct field from its JSON object, including v3 defaults."""
    if not isinstance(obj, dict):
        raise ValidationError(f"struct field at {path} must be an object, got {obj!r}")
    for key in ("id", "name", "required", "type"):
        if key not in obj:
            raise ValidationError(f"struct field at {path} is missing required field {key!r}")
    ftype = parse_type(obj["type"], f"{path}.type")
    initial = obj.get("initial-default")
    write = obj.get("write-default")
    name = obj["name"]
    if (initial is not None or write is not None) and (
            ftype in (UNKNOWN, VARIANT) or isinstance(ftype, (GeometryType, GeographyType))):
        raise ValidationError(f"field {name!r} of type {ftype} must default to null (at {path})")
    return NestedField(
        field_id=int(obj["id"]), name=name, field_type=ftype, required=bool(obj["required"]),
        doc=obj.get("doc"),
        initial_default=None if initial is None else from_json_value(ftype, initial),
        write_default=None if write is None else from_json_value(ftype, write),
    )


def _field_to_json(f: NestedField) -> dict:
    out: dict[str, Any] = {"id": f.field_id, "name": f.name, "required": f.required,
                           "type": f.field_type.to_json()}
    if f.doc is not None:
        out["doc"] = f.doc
    if f.initial_default is not None:
        out["initial-default"] = to_json_value(f.field_type, f.initial_default)
    if f.write_default is not None:
        out["write-default"] = to_json_value(f.field_type, f.write_default)
    return out


@dataclass(frozen=True)
class Schema:
    """A table schema: a struct of fields, a schema id and optional identifier field ids."""

    fields: tuple[NestedField, ...]
    schema_id: int = 0
    identifier_field_ids: tuple[int, ...] = ()

    def __init__(self, fields=(), schema_id: int = 0, identifier_field_ids=()):
        object.__setattr__(self, "fields", tuple(fields))
        object.__setattr__(self, "schema_id", schema_id)
        object.__setattr__(self, "identifier_field_ids", tuple(identifier_field_ids))

    @property
    def as_struct(self) -> StructType:
        return StructType(self.fields)

    def to_json(self) -> dict:
        out = {"type": "struct", "schema-id": self.schema_id}
        if self.identifier_field_ids:
            out["identifier-field-ids"] = list(self.identifier_field_ids)
        out["fields"] = [_field_to_json(f) for f in self.fields]
        return out

    @staticmethod
    def from_json(obj: dict, path: str = "schema") -> "Schema":
        """Parse a schema object (Appendix C); ``schema-id`` defaults to 0 as v1 allows."""
        if not isinstance(obj, dict) or obj.get("type", "struct") != "struct" or "fields" not in obj:
            raise ValidationError(f"schema at {path} must be a struct object with 'fields'")
        struct = parse_type({"type": "struct", "fields": obj["fields"]}, path)
        schema = Schema(struct.fields, int(obj.get("schema-id", 0)), obj.get("identifier-field-ids") or ())
        schema.validate(path)
        return schema

    # --- lookups -------------------------------------------------------------------------------
    def index_by_id(self) -> dict[int, NestedField]:
        """Every field, nested ones included (list elements and map keys/values), by field id."""
        return {f.field_id: f for f, _ in _walk(self.fields, ())}

    def index_by_name(self) -> dict[str, NestedField]:
        """Every field by its full dotted name (``location.lat``; list elements as ``tags.element``)."""
        return {".".join(p + (f.name,)): f for f, p in _walk(self.fields, ())}

    def name_of(self, field_id: int) -> str | None:
        for f, p in _walk(self.fields, ()):
            if f.field_id == field_id:
                return ".".join(p + (f.name,))
        return None

    def find_field(self, key: int | str) -> NestedField:
        """Find a field by id or dotted name; raises a ValidationError naming the key."""
        found = self.index_by_id().get(key) if isinstance(key, int) else self.index_by_name().get(key)
        if found is None and isinstance(key, str):
            lowered = {k.lower(): v for k, v in self.index_by_name().items()}
            found = lowered.get(key.lower())
        if found is None:
            raise ValidationError(f"cannot find field {key!r} in schema {self.schema_id}")
        return found

    def parent_ids(self) -> dict[int, int]:
        """Map of field id to the id of its enclosing field (for fields nested in structs/lists/maps)."""
        out: dict[int, int] = {}

        def visit(t: IcebergType, parent: int | None):
            for child in children(t):
                if parent is not None:
                    out[child.field_id] = parent
                visit(child.field_type, child.field_id)

        visit(self.as_struct, None)
        return out

    def highest_field_id(self) -> int:
        return max((f.field_id for f, _ in _walk(self.fields, ())), default=0)

    def validate(self, path: str = "schema") -> None:
        """Check ids are unique, names unique per struct, identifier fields legal, defaults legal."""
        seen: set[int] = set()
        for f, p in _walk(self.fields, ()):
            if f.field_id in seen:
                raise ValidationError(f"duplicate field id {f.field_id} ({'.'.join(p + (f.name,))}) in {path}")
            seen.add(f.field_id)
            ftype = f.field_type
            if ftype.to_json() in ("unknown", "variant") or isinstance(ftype, (GeometryType, GeographyType)):
                if f.required and ftype == UNKNOWN:
                    raise ValidationError(f"field {f.name!r} of type unknown must be optional in {path}")
                if f.initial_default is not None or f.write_default is not None:
                    raise ValidationError(f"field {f.name!r} of type {ftype} must default to null in {path}")
        for struct in _structs(self.as_struct):
            names = [f.name for f in struct.fields]
            dup = {n for n in names if names.count(n) > 1}
            if dup:
                raise ValidationError(f"duplicate field name {sorted(dup)[0]!r} in {path}")
        if self.identifier_field_ids:
            by_id = self.index_by_id()
            parents = self.parent_ids()
            for fid in self.identifier_field_ids:
                f = by_id.get(fid)
                if f is None:
                    raise ValidationError(f"identifier field id {fid} not found in {path}")
                if not f.field_type.is_primitive or f.field_type in (FLOAT, DOUBLE):
                    raise ValidationError(f"identifier field {f.name!r} must be a primitive non-floating type")
                if not f.required:
                    raise ValidationError(f"identifier field {f.name!r} must be required in {path}")
                p = parents.get(fid)
                while p is not None:
                    pf = by_id[p]
                    if not isinstance(pf.field_type, StructType):
                        raise ValidationError(f"identifier field {f.name!r} cannot be nested in a list or map")
                    if not pf.required:
                        raise ValidationError(f"identifier field {f.name!r} cannot be nested in an optional struct")
                    p = parents.get(p)

    def __str__(self) -> str:
        return "table {\n" + "\n".join(
            f"  {f.field_id}: {f.name}: {'required' if f.required else 'optional'} {f.field_type}"
            for f in self.fields) + "\n}"


def children(t: IcebergType) -> tuple[NestedField, ...]:
    """The fields directly beneath a type: a struct's fields, a list's element, a map's key and value."""
    if isinstance(t, StructType):
        return t.fields
    if isinstance(t, ListType):
        return (t.element_field,)
    if isinstance(t, MapType):
        return (t.key_field, t.value_field)
    return ()


def _walk(fields, prefix: tuple[str, ...]) -> Iterator[tuple[NestedField, tuple[str, ...]]]:
    for f in fields:
        yield f, prefix
        yield from _walk(children(f.field_type), prefix + (f.name,))


def _structs(t: IcebergType) -> Iterator[StructType]:
    if isinstance(t, StructType):
        yield t
    for c in children(t):
        yield from _structs(c.field_type)


def type_min_format_version(t: IcebergType) -> int:
    """The lowest table format version that allows this type (3 for v3 types, else 1)."""
    if isinstance(t, (VariantType, GeometryType, GeographyType)) or (
            isinstance(t, PrimitiveType) and t.name in V3_TYPE_NAMES):
        return 3
    return max((type_min_format_version(c.field_type) for c in children(t)), default=1)


def is_promotion_allowed(old: IcebergType, new: IcebergType) -> bool:
    """Whether a column of type ``old`` may evolve to ``new`` (spec: "Schema Evolution")."""
    if old == new:
        return True
    if old == INT and new == LONG:
        return True
    if old == FLOAT and new == DOUBLE:
        return True
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        return old.scale == new.scale and new.precision >= old.precision
    if old == DATE and new in (TIMESTAMP, TIMESTAMP_NS):
        return True
    if old == UNKNOWN:
        return True
    return False


# --- JSON single values (Appendix D): a field's defaults in its schema's JSON --------------------------------

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
        return format_timestamp(value, 1_000_000, 6)
    if t == TIMESTAMPTZ:
        return format_timestamp(value, 1_000_000, 6) + "+00:00"
    if t == TIMESTAMP_NS:
        return format_timestamp(value, 1_000_000_000, 9)
    if t == TIMESTAMPTZ_NS:
        return format_timestamp(value, 1_000_000_000, 9) + "+00:00"
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
            return parse_timestamp(obj, zoned=False, nanos=False)
        if t == TIMESTAMPTZ:
            return parse_timestamp(obj, zoned=True, nanos=False)
        if t == TIMESTAMP_NS:
            return parse_timestamp(obj, zoned=False, nanos=True)
        if t == TIMESTAMPTZ_NS:
            return parse_timestamp(obj, zoned=True, nanos=True)
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
