"""Partition evolution as a set of changes to the default spec, applied at once (spec "Partition Evolution"; the
rules of Iceberg Java's ``BaseUpdatePartitionSpec``):

- an added field of v2+ tables reuses the id (and name) of a field with the same source and transform in any
  earlier spec, else takes the next partition field id; unnamed, it is named as Java names evolved fields
  (``id_bucket_8``, ``s_trunc_4``, ``ts_day``, an identity field by its column);
- re-adding a field removed in the same update cancels the removal; two time transforms of one column, a field
  already in the spec, and two fields of one name are named errors;
- removed fields leave v2+ specs; on v1 tables they stay as ``void`` (v1 field ids are positional), and a field
  whose name a new one takes is renamed ``<name>_<field id>``, as Java does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from sparkberg.errors import ValidationError
from sparkberg.format import types as T
from sparkberg.format.partitioning import PartitionField, PartitionSpec, parse_transform_call
from sparkberg.format.schema_update import CommitsOnce
from sparkberg.format.transforms import Transform, VoidTransform

_TIME = ("year", "month", "day", "hour")


def evolved_name(transform: Transform, column: str) -> str:
    """The name Iceberg Java gives a partition field added by evolution."""
    kind = str(transform).split("[")[0]
    arg = str(transform)[len(kind) + 1:-1] if "[" in str(transform) else ""
    if kind == "identity":
        return column
    if kind == "bucket":
        return f"{column}_bucket_{arg}"
    if kind == "truncate":
        return f"{column}_trunc_{arg}"
    if kind == "void":
        return f"{column}_null"
    return f"{column}_{kind}"


@dataclass
class SpecUpdate(CommitsOnce):
    """Pending changes to the default spec ``spec`` of a table (``specs``: all its specs, for reusing ids);
    :meth:`apply` returns the new spec (id 0 until the table adds it)."""

    spec: PartitionSpec
    specs: tuple[PartitionSpec, ...]
    schema: T.Schema
    last_partition_id: int
    format_version: int
    on_commit: Callable[["SpecUpdate"], None] | None = None
    adds: list[PartitionField] = field(default_factory=list)
    deletes: set[int] = field(default_factory=set)
    renames: dict[str, str] = field(default_factory=dict)

    def _by_name(self, name: str) -> PartitionField | None:
        return next((f for f in self.spec.fields if f.name == name), None)

    def _by_key(self, key: tuple[int, str], fields) -> PartitionField | None:
        return next((f for f in fields if (f.source_id, str(f.transform)) == key), None)

    def add_field(self, expr: str, name: str | None = None) -> "SpecUpdate":
        """Partition by ``expr`` (``"bucket(8, id)"``, ``"day(ts)"``, ``"region"``), named ``name`` or as Java
        names evolved fields."""
        transform, column = parse_transform_call(expr)
        src = self.schema.find_field(column)
        transform.check(src.field_type, f" (partition expression {expr!r})")
        key = (src.field_id, str(transform))
        if name is not None and any(f.name == name for f in self.adds):
            raise ValidationError(f"cannot add partition field {name!r} twice")
        existing = self._by_key(key, self.spec.fields)
        if existing is not None and existing.field_id in self.deletes:  # removed then re-added: kept
            self.deletes.discard(existing.field_id)
            if name is not None and name != existing.name:
                self.rename_field(existing.name, name)
            return self
        if existing is not None and not isinstance(existing.transform, VoidTransform):
            raise ValidationError(f"cannot add partition field {expr!r}: the spec already has it as "
                                  f"{existing.name!r}")
        if self._by_key(key, self.adds) is not None:
            raise ValidationError(f"cannot add partition field {expr!r} twice")
        kind = str(transform).split("[")[0]
        if kind in _TIME:
            for f in list(self.spec.fields) + self.adds:
                if f.source_id == src.field_id and str(f.transform) in _TIME and f.field_id not in self.deletes:
                    raise ValidationError(f"cannot add partition field {expr!r}: the spec already partitions "
                                          f"{column!r} by time ({f.name!r} is {f.transform})")
        new = self._recycled(key, name) or PartitionField(src.field_id, self._next_id(), transform,
                                                          name or evolved_name(transform, self.schema.name_of(
                                                              src.field_id) or column))
        clash = self._by_name(new.name)
        if clash is not None:
            if clash.field_id in self.deletes or isinstance(clash.transform, VoidTransform):
                self.renames[clash.name] = f"{clash.name}_{clash.field_id}"
            else:
                raise ValidationError(f"cannot add partition field {new.name!r}: the spec has a field of that name")
        self.adds.append(new)
        return self

    def _next_id(self) -> int:
        self.last_partition_id += 1
        return self.last_partition_id

    def _recycled(self, key: tuple[int, str], name: str | None) -> PartitionField | None:
        if self.format_version < 2:
            return None
        for spec in self.specs:
            for f in spec.fields:
                if (f.source_id, str(f.transform)) == key and (name is None or f.name == name):
                    return f
        return None

    def remove_field(self, name: str) -> "SpecUpdate":
        """Stop partitioning by the field ``name`` (or by the expression ``name``: ``"bucket(8, id)"``)."""
        if any(f.name == name for f in self.adds):
            raise ValidationError(f"cannot remove partition field {name!r}: it is added in this update")
        f = self._by_name(name)
        if f is None and "(" in name:
            transform, column = parse_transform_call(name)
            f = self._by_key((self.schema.find_field(column).field_id, str(transform)), self.spec.fields)
        if f is None:
            raise ValidationError(f"cannot remove partition field {name!r}: the spec has no such field")
        if f.name in self.renames:
            raise ValidationError(f"cannot rename and remove partition field {f.name!r}")
        self.deletes.add(f.field_id)
        return self

    def rename_field(self, name: str, new_name: str) -> "SpecUpdate":
        """Rename partition field ``name`` to ``new_name``."""
        if any(f.name == name for f in self.adds):
            raise ValidationError(f"cannot rename partition field {name!r}: it is added in this update")
        f = self._by_name(name)
        if f is None:
            raise ValidationError(f"cannot rename partition field {name!r}: the spec has no such field")
        if f.field_id in self.deletes:
            raise ValidationError(f"cannot rename partition field {name!r}: it is removed in this update")
        clash = self._by_name(new_name)
        if clash is not None and isinstance(clash.transform, VoidTransform):
            self.renames[clash.name] = f"{clash.name}_{clash.field_id}"
        self.renames[name] = new_name
        return self

    def apply(self) -> PartitionSpec:
        """The new spec: kept fields (renamed), v1's removed ones as ``void``, then the added ones."""
        fields = []
        for f in self.spec.fields:
            name = self.renames.get(f.name, f.name)
            if f.field_id not in self.deletes:
                fields.append(PartitionField(f.source_id, f.field_id, f.transform, name, f.source_ids))
            elif self.format_version < 2:
                fields.append(PartitionField(f.source_id, f.field_id, VoidTransform(), name, f.source_ids))
        fields += self.adds
        names = [f.name for f in fields]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValidationError(f"the new partition spec would have two fields named {dup[0]!r}")
        return PartitionSpec(0, fields)


__all__ = ["SpecUpdate", "evolved_name"]
