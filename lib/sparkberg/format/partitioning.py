"""Partition specs and sort orders (spec: "Partitioning", "Sorting", Appendix C).

A partition field names its source column(s) by id, so specs survive renames; its ``field_id``
is the id of the partition tuple's field in manifests (from 1000 up).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable
from urllib.parse import quote

from sparkberg.errors import ValidationError
from sparkberg.format.transforms import Transform, parse_transform, parse_transform_call
from sparkberg.format.types import INT, STRING, NestedField, Schema, StructType

PARTITION_DATA_ID_START = 1000
UNPARTITIONED_SPEC_ID = 0


@dataclass(frozen=True)
class PartitionField:
    """One field of a partition spec: source column id(s), partition field id, transform, name."""

    source_id: int
    field_id: int
    transform: Transform
    name: str
    source_ids: tuple[int, ...] = ()

    @property
    def all_source_ids(self) -> tuple[int, ...]:
        return self.source_ids or (self.source_id,)

    def to_json(self, format_version: int = 2) -> dict:
        out: dict[str, Any] = {"name": self.name, "transform": str(self.transform)}
        if len(self.all_source_ids) > 1:
            out["source-ids"] = list(self.all_source_ids)
        else:
            out["source-id"] = self.source_id
        out["field-id"] = self.field_id
        return out

    @staticmethod
    def from_json(obj: dict, fallback_id: int, path: str) -> "PartitionField":
        if not isinstance(obj, dict):
            raise ValidationError(f"partition field at {path} must be an object")
        for key in ("name", "transform"):
            if key not in obj:
                raise ValidationError(f"partition field at {path} is missing required field {key!r}")
        ids = obj.get("source-ids")
        if ids is not None:
            source_ids = tuple(int(i) for i in ids)
            source_id = source_ids[0] if source_ids else -1
        elif "source-id" in obj:
            source_id, source_ids = int(obj["source-id"]), ()
        else:
            raise ValidationError(f"partition field at {path} is missing required field 'source-id'")
        if len(source_ids) == 1:
            source_ids = ()
        return PartitionField(source_id, int(obj.get("field-id", fallback_id)), parse_transform(obj["transform"]),
                              obj["name"], source_ids)


@dataclass(frozen=True)
class PartitionSpec:
    """A partition spec: an id and an ordered tuple of partition fields."""

    spec_id: int = 0
    fields: tuple[PartitionField, ...] = ()

    def __init__(self, spec_id: int = 0, fields=()):
        object.__setattr__(self, "spec_id", spec_id)
        object.__setattr__(self, "fields", tuple(fields))

    @property
    def is_unpartitioned(self) -> bool:
        return all(f.transform.is_void for f in self.fields)

    def last_assigned_field_id(self) -> int:
        return max((f.field_id for f in self.fields), default=PARTITION_DATA_ID_START - 1)

    def to_json(self, format_version: int = 2) -> dict:
        return {"spec-id": self.spec_id, "fields": self.fields_to_json(format_version)}

    def fields_to_json(self, format_version: int = 2) -> list:
        return [f.to_json(format_version) for f in self.fields]

    @staticmethod
    def from_json(obj: dict, path: str = "partition-spec") -> "PartitionSpec":
        if not isinstance(obj, dict) or "fields" not in obj:
            raise ValidationError(f"partition spec at {path} must be an object with 'fields'")
        return PartitionSpec(int(obj.get("spec-id", 0)),
                             PartitionSpec.fields_from_json(obj["fields"], path))

    @staticmethod
    def fields_from_json(fields: list, path: str = "partition-spec") -> tuple[PartitionField, ...]:
        """Parse a list of partition fields; v1 specs without field ids get 1000, 1001, ... as Java assigns."""
        if not isinstance(fields, list):
            raise ValidationError(f"partition fields at {path} must be a list")
        return tuple(PartitionField.from_json(f, PARTITION_DATA_ID_START + i, f"{path}.fields[{i}]")
                     for i, f in enumerate(fields))

    def partition_type(self, schema: Schema) -> StructType:
        """The struct type of this spec's partition tuples (field ids are the partition field ids).

        Fields whose source column no longer exists in ``schema`` keep a best-effort type (the
        transform's result on string) so old manifests remain readable.
        """
        # (the answer for the last schema asked about, kept with that schema so identity decides: callers ask
        # once per file, with the same schema object, and walking the schema each time was most of their cost)
        last = self.__dict__.get("_last_type")
        if last is not None and last[0] is schema:
            return last[1]
        by_id = schema.index_by_id()
        out = []
        for f in self.fields:
            src = by_id.get(f.source_id)
            if src is None or not f.transform.is_known:
                rtype = INT if f.transform.is_void else STRING
            else:
                rtype = f.transform.result_type(src.field_type)
            out.append(NestedField(f.field_id, f.name, rtype, required=False))
        result = StructType(out)
        object.__setattr__(self, "_last_type", (schema, result))
        return result

    def validate(self, schema: Schema, path: str = "partition-spec") -> None:
        """Check source columns exist, are primitive, not in lists/maps, and fit their transforms."""
        by_id = schema.index_by_id()
        parents = schema.parent_ids()
        names = set()
        field_ids = set()
        for f in self.fields:
            if f.name in names:
                raise ValidationError(f"duplicate partition field name {f.name!r} in {path}")
            names.add(f.name)
            if f.field_id in field_ids:
                raise ValidationError(f"duplicate partition field id {f.field_id} in {path}")
            field_ids.add(f.field_id)
            for sid in f.all_source_ids:
                src = by_id.get(sid)
                if src is None:
                    if f.transform.is_void:
                        continue
                    raise ValidationError(f"partition field {f.name!r} in {path} references missing source "
                                          f"column id {sid}")
                if not src.field_type.is_primitive:
                    raise ValidationError(f"partition field {f.name!r} in {path}: source column {src.name!r} "
                                          f"must be primitive, not {src.field_type}")
                p = parents.get(sid)
                while p is not None:
                    if not isinstance(by_id[p].field_type, StructType):
                        raise ValidationError(f"partition field {f.name!r} in {path}: source column "
                                              f"{src.name!r} cannot be nested in a list or map")
                    p = parents.get(p)
                if f.transform.is_known:
                    f.transform.check(src.field_type, f" (partition field {f.name!r} in {path})")

    def compatible_with(self, other: "PartitionSpec") -> bool:
        """Equivalent specs: same fields with the same sources, transforms and names (ids may differ)."""
        if len(self.fields) != len(other.fields):
            return False
        return all(a.all_source_ids == b.all_source_ids and str(a.transform) == str(b.transform)
                   and a.name == b.name for a, b in zip(self.fields, other.fields))

    def partition_to_path(self, partition: dict[int, Any], schema: Schema) -> str:
        """The Hive-style relative path of a partition tuple (``ts_day=2024-01-01/id_bucket=3``)."""
        ptype = self.partition_type(schema)
        parts = []
        for f, pf in zip(self.fields, ptype.fields):
            value = f.transform.to_human_string(pf.field_type, partition.get(f.field_id))
            parts.append(f"{quote(f.name, safe='')}={quote(value, safe='')}")
        return "/".join(parts)


UNPARTITIONED = PartitionSpec(0, ())


# --- sort orders ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class SortField:
    source_id: int
    transform: Transform
    direction: str = "asc"
    null_order: str = "nulls-first"
    source_ids: tuple[int, ...] = ()

    def to_json(self) -> dict:
        out: dict[str, Any] = {"transform": str(self.transform)}
        if len(self.source_ids) > 1:
            out["source-ids"] = list(self.source_ids)
        else:
            out["source-id"] = self.source_id
        out["direction"] = self.direction
        out["null-order"] = self.null_order
        return out

    @staticmethod
    def from_json(obj: dict, path: str) -> "SortField":
        if not isinstance(obj, dict):
            raise ValidationError(f"sort field at {path} must be an object")
        ids = obj.get("source-ids")
        if ids is not None:
            source_ids = tuple(int(i) for i in ids)
            source_id = source_ids[0]
        elif "source-id" in obj:
            source_id, source_ids = int(obj["source-id"]), ()
        else:
            raise ValidationError(f"sort field at {path} is missing required field 'source-id'")
        if len(source_ids) == 1:
            source_ids = ()
        direction = obj.get("direction")
        null_order = obj.get("null-order")
        if direction not in ("asc", "desc"):
            raise ValidationError(f"sort field at {path} has invalid direction {direction!r}")
        if null_order not in ("nulls-first", "nulls-last"):
            raise ValidationError(f"sort field at {path} has invalid null-order {null_order!r}")
        if "transform" not in obj:
            raise ValidationError(f"sort field at {path} is missing required field 'transform'")
        return SortField(source_id, parse_transform(obj["transform"]), direction, null_order, source_ids)


@dataclass(frozen=True)
class SortOrder:
    order_id: int = 0
    fields: tuple[SortField, ...] = ()

    def __init__(self, order_id: int = 0, fields=()):
        object.__setattr__(self, "order_id", order_id)
        object.__setattr__(self, "fields", tuple(fields))

    @property
    def is_unsorted(self) -> bool:
        return not self.fields

    def to_json(self) -> dict:
        return {"order-id": self.order_id, "fields": [f.to_json() for f in self.fields]}

    @staticmethod
    def from_json(obj: dict, path: str = "sort-order") -> "SortOrder":
        if not isinstance(obj, dict) or "order-id" not in obj:
            raise ValidationError(f"sort order at {path} must be an object with 'order-id'")
        order = SortOrder(int(obj["order-id"]),
                          (SortField.from_json(f, f"{path}.fields[{i}]") for i, f in enumerate(obj.get("fields", []))))
        if order.order_id == 0 and order.fields:
            raise ValidationError(f"sort order id 0 is reserved for the unsorted order ({path})")
        return order


UNSORTED = SortOrder(0, ())


# user-facing partition and sort expressions (Iceberg's Spark names)
_PARTITION_SUFFIX = {"bucket": "bucket", "truncate": "trunc", "year": "year", "month": "month", "day": "day",
                     "hour": "hour", "void": "null"}


def partition_field(schema: Schema, expr: str, index: int) -> PartitionField:
    """The partition field of an expression like ``day(ts)`` or ``bucket(16, id)`` (field id ``1000 + index``),
    named as Iceberg's Spark integration names it (``ts_day``, ``id_bucket``)."""
    transform, column = parse_transform_call(expr)
    src = schema.find_field(column)
    full = schema.name_of(src.field_id) or column
    name = full if str(transform) == "identity" else f"{full}_{_PARTITION_SUFFIX[str(transform).split('[')[0]]}"
    transform.check(src.field_type, f" (partition expression {expr!r})")
    return PartitionField(src.field_id, 1000 + index, transform, name)


def build_partition_spec(schema: Schema, partition_by: Iterable[str] | None) -> PartitionSpec:
    """A partition spec from expressions like ``day(ts)``, ``bucket(16, id)``, ``truncate(name, 4)``, ``region``."""
    fields = [partition_field(schema, expr, i) for i, expr in enumerate(partition_by or ())]
    names = [f.name for f in fields]
    for n in names:
        if names.count(n) > 1:
            raise ValidationError(f"partition field {n!r} appears twice in {list(partition_by or ())}")
    return PartitionSpec(0, fields)


def build_sort_order(schema: Schema, sort_by: Iterable[str] | None) -> SortOrder:
    """A sort order from expressions like ``ts DESC NULLS LAST`` or ``bucket(16, id)``."""
    fields = []
    for expr in sort_by or ():
        m = re.match(r"^(.*?)(?:\s+(asc|desc))?(?:\s+nulls\s+(first|last))?\s*$", expr.strip(), re.I)
        body, direction, nulls = m.group(1), (m.group(2) or "asc").lower(), m.group(3)
        transform, column = parse_transform_call(body)
        src = schema.find_field(column)
        transform.check(src.field_type, f" (sort expression {expr!r})")
        null_order = f"nulls-{nulls.lower()}" if nulls else ("nulls-first" if direction == "asc" else "nulls-last")
        fields.append(SortField(src.field_id, transform, direction, null_order))
    return SortOrder(1 if fields else 0, fields)
