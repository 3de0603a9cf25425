"""Schema evolution as a set of changes to one schema, applied at once (spec "Schema Evolution"; the shape of Iceberg
Java's ``SchemaUpdate``): columns added (at any depth, with fresh ids), renamed, deleted, promoted, made optional,
documented, moved within their struct, identifier fields set, another schema unioned in by name.

Paths are dotted and name the fields of the schema *before* the changes (``address.zip``; list elements and map
values as ``points.element.x``, ``attrs.value.b``), matched exactly, else case-insensitively. Every rule is checked
when the change is asked for, with an error naming the column: an invalid promotion, a duplicate name, a required
column without a default, deleting an identifier field or the source of a current partition or sort field, a
move across structs. Identifier fields are checked on the result (required, primitive, not floating point, not in a
list, a map or an optional struct).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

from sparkberg.errors import ValidationError
from sparkberg.format import types as T
from sparkberg.format.properties import NAME_MAPPING
from sparkberg.format.partitioning import PartitionSpec, SortOrder
from sparkberg.format.values import from_python

ROOT = -1  # the parent id of top-level columns
_V3_PROMOTIONS = {(T.DATE, T.TIMESTAMP), (T.DATE, T.TIMESTAMP_NS)}


class CommitsOnce:
    """A builder of changes that a table commits once: by ``commit()``, or at the end of a ``with`` block that
    raised nothing (one that raised commits nothing). ``on_commit`` is what committing does."""

    on_commit: Callable | None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()

    def commit(self) -> None:
        """Commit the changes (once)."""
        if self.on_commit is None:
            raise ValidationError(f"this {type(self).__name__} is not bound to a table, or was committed; apply() "
                                  "gives its result")
        commit, self.on_commit = self.on_commit, None
        commit(self)


@dataclass
class _Move:
    kind: str  # "first", "before" or "after"
    field_id: int
    ref_id: int | None = None


@dataclass
class SchemaUpdate(CommitsOnce):
    """Pending changes to ``base``; :meth:`apply` returns the new schema. ``parse_type`` turns a type string (Spark
    DDL: ``"bigint"``, ``"struct<a: int>"``), or another engine's schema (a Spark StructType), into an Iceberg type
    (its field ids are replaced)."""

    base: T.Schema
    last_column_id: int
    format_version: int
    spec: PartitionSpec
    sort_order: SortOrder
    parse_type: Callable[[str], T.IcebergType]
    adds: dict[int, list[T.NestedField]] = field(default_factory=dict)
    updates: dict[int, T.NestedField] = field(default_factory=dict)
    deletes: set[int] = field(default_factory=set)
    moves: dict[int, list[_Move]] = field(default_factory=dict)
    identifier_names: tuple[str, ...] | None = None
    on_commit: Callable[["SchemaUpdate"], None] | None = None  # what commit() does (a table's update commits)

    def __post_init__(self):
        self._by_id = self.base.index_by_id()
        self._parents = self.base.parent_ids()

    # --- lookups ---------------------------------------------------------------------------------
    def _find(self, path: str) -> T.NestedField:
        if not isinstance(path, str) or not path:
            raise ValidationError(f"a column path must be a non-empty string, got {path!r}")
        names = self.base.index_by_name()
        found = names.get(path)
        if found is None:
            matches = [f for n, f in names.items() if n.lower() == path.lower()]
            found = matches[0] if len(matches) == 1 else None
        if found is None:
            raise ValidationError(f"cannot find column {path!r} in the table schema")
        fid: int | None = found.field_id
        while fid is not None:  # (a column under a deleted one goes with it)
            if fid in self.deletes:
                raise ValidationError(f"column {path!r} is deleted in this update")
            fid = self._parents.get(fid)
        return found

    def _parent(self, field_id: int) -> int:
        return self._parents.get(field_id, ROOT)

    def _struct_of(self, parent_path: str | None) -> tuple[int, T.StructType]:
        """The id (ROOT for the top level) and type of the struct ``parent_path`` names."""
        if parent_path is None:
            return ROOT, self.base.as_struct
        parent = self._find(parent_path)
        t = parent.field_type
        if isinstance(t, T.ListType) and isinstance(t.element_type, T.StructType):
            return t.element_id, t.element_type
        if isinstance(t, T.MapType) and isinstance(t.value_type, T.StructType):
            return t.value_id, t.value_type
        if not isinstance(t, T.StructType):
            raise ValidationError(f"cannot add a column to {parent_path!r}: it is a {t}, not a struct")
        return parent.field_id, t

    def _sibling_names(self, parent_id: int, struct: T.StructType, but: int | None = None) -> set[str]:
        names = {(self.updates.get(f.field_id) or f).name.lower() for f in struct.fields
                 if f.field_id not in self.deletes and f.field_id != but}
        return names | {f.name.lower() for f in self.adds.get(parent_id, [])}

    def _struct_by_id(self, parent_id: int) -> T.StructType:
        if parent_id == ROOT:
            return self.base.as_struct
        t = self._by_id[parent_id].field_type
        return t if isinstance(t, T.StructType) else t.element_type if isinstance(t, T.ListType) else t.value_type

    def _fresh(self, t: T.IcebergType) -> T.IcebergType:
        """``t`` with new field ids, parents before children (as Java assigns them)."""
        def nxt() -> int:
            self.last_column_id += 1
            return self.last_column_id
        if isinstance(t, T.StructType):
            ids = [nxt() for _ in t.fields]
            return T.StructType(replace(f, field_id=i, field_type=self._fresh(f.field_type))
                                for f, i in zip(t.fields, ids))
        if isinstance(t, T.ListType):
            return T.ListType(nxt(), self._fresh(t.element_type), t.element_required)
        if isinstance(t, T.MapType):
            kid, vid = nxt(), nxt()
            return T.MapType(kid, self._fresh(t.key_type), vid, self._fresh(t.value_type), t.value_required)
        return t

    def _type(self, t: str | T.IcebergType) -> T.IcebergType:
        return self.parse_type(t) if isinstance(t, str) else t

    # --- changes ---------------------------------------------------------------------------------
    def add_column(self, path: str, type: str | T.IcebergType, doc: str | None = None, after: str | None = None,
                   required: bool = False, default=None) -> "SchemaUpdate":
        """Add column ``path`` (its parent must be a struct, or a list or map of structs) of ``type``; ``after``
        a sibling (its name, or its path from the top) places it (else last); ``default`` sets its ``initial-default`` and ``write-default``
        (v3); a required column needs one."""
        if not isinstance(path, str) or not path.strip():
            raise ValidationError(f"a column path must be a non-empty string, got {path!r}")
        parent_path, _, name = path.rpartition(".")
        parent_id, struct = self._struct_of(parent_path or None)
        if name.lower() in self._sibling_names(parent_id, struct):
            raise ValidationError(f"cannot add column {path!r}: a column of that name already exists")
        self.last_column_id += 1  # (the column's id first, then its nested fields', as Java numbers them)
        new_id = self.last_column_id
        t = self._fresh(self._type(type))
        value = None
        if default is not None:
            if not t.is_primitive:
                raise ValidationError(f"cannot add column {path!r} with a default: only primitive columns take one")
            if self.format_version < 3:
                raise ValidationError(f"cannot add column {path!r} with a default: default values need format "
                                      f"version 3, the table is v{self.format_version}")
            try:
                value = from_python(t, default)
            except (TypeError, ValueError) as e:
                raise ValidationError(f"default {default!r} of column {path!r} is not a {t}: {e}") from None
        if required and value is None:
            raise ValidationError(f"cannot add required column {path!r} without a default value (existing rows "
                                  "would have none)")
        new = T.NestedField(new_id, name, t, bool(required), doc, value, value)
        self.adds.setdefault(parent_id, []).append(new)
        if after is not None:
            self._move(_Move("after", new.field_id, self._sibling(after, parent_id, path).field_id), parent_id)
        return self

    def rename_column(self, path: str, new_name: str) -> "SchemaUpdate":
        """Rename column ``path`` to ``new_name`` (a leaf name, in the same struct)."""
        f = self._find(path)
        if not isinstance(new_name, str) or not new_name or "." in new_name:
            raise ValidationError(f"cannot rename {path!r} to {new_name!r}: give a non-empty name without dots")
        parent_id = self._parent(f.field_id)
        if parent_id != ROOT and isinstance(self._by_id[parent_id].field_type, (T.ListType, T.MapType)):
            raise ValidationError(f"cannot rename {path!r}: list elements and map keys and values have fixed names")
        if new_name.lower() in self._sibling_names(parent_id, self._struct_by_id(parent_id), but=f.field_id):
            raise ValidationError(f"cannot rename {path!r} to {new_name!r}: a column of that name already exists")
        self.updates[f.field_id] = replace(self.updates.get(f.field_id, f), name=new_name)
        return self

    def delete_column(self, path: str) -> "SchemaUpdate":
        """Delete column ``path`` (with its nested fields); not an identifier field, nor the source of a field of
        the current partition spec or sort order."""
        f = self._find(path)
        gone = {f.field_id} | {c.field_id for c in T.Schema([f]).index_by_id().values()}
        if gone & set(self.base.identifier_field_ids):
            raise ValidationError(f"cannot delete column {path!r}: it is (or holds) an identifier field")
        for pf in self.spec.fields:
            if set(pf.all_source_ids) & gone:
                raise ValidationError(f"cannot delete column {path!r}: partition field {pf.name!r} of the current "
                                      "spec uses it")
        for sf in self.sort_order.fields:
            if set(getattr(sf, "source_ids", None) or (sf.source_id,)) & gone:
                raise ValidationError(f"cannot delete column {path!r}: the table's sort order uses it")
        if f.field_id in self.updates:
            raise ValidationError(f"cannot delete column {path!r}: it is renamed or changed in this update")
        self.deletes.add(f.field_id)
        return self

    def update_column(self, path: str, type: str | T.IcebergType | None = None,
                      doc: str | None = None) -> "SchemaUpdate":
        """Promote column ``path`` to ``type`` (the spec's promotions: int to long, float to double, decimal
        precision widened; v3: date to timestamp) and/or set its ``doc``."""
        f = self._find(path)
        current = self.updates.get(f.field_id, f)
        if type is not None:
            new = self._type(type)
            old = f.field_type
            if old == T.UNKNOWN and self.format_version >= 3 and not new.is_primitive:
                # (spec "Schema Evolution": unknown may become any type; a nested one's fields get new ids)
                new = self._fresh(new)
            elif not old.is_primitive or not new.is_primitive:
                raise ValidationError(f"cannot change column {path!r} from {old} to {new}: only primitive types are "
                                      "promoted")
            if new != old:
                if not T.is_promotion_allowed(old, new) or ((old, new) in _V3_PROMOTIONS or old == T.UNKNOWN) \
                        and self.format_version < 3:
                    raise ValidationError(f"cannot change column {path!r} from {old} to {new}: not a valid type "
                                          f"promotion for a v{self.format_version} table")
                # (year, month and day give a date and its midnight the same value; identity and bucket do not)
                changed = [pf for pf in self.spec.fields if f.field_id in pf.all_source_ids
                           and str(pf.transform).split("[")[0] in ("identity", "bucket")]
                if (old, new) in _V3_PROMOTIONS and changed:
                    raise ValidationError(f"cannot change column {path!r} from {old} to {new}: partition field "
                                          f"{changed[0].name!r} of the current spec would change value")
            current = replace(current, field_type=new)
        if doc is not None:
            current = replace(current, doc=doc)
        self.updates[f.field_id] = current
        return self

    def make_optional(self, path: str) -> "SchemaUpdate":
        """Let column ``path`` hold nulls."""
        f = self._find(path)
        self.updates[f.field_id] = replace(self.updates.get(f.field_id, f), required=False)
        return self

    def _sibling(self, path: str, parent_id: int, moving: str) -> T.NestedField:
        """The column ``path`` names beside ``moving``: a bare name next to a nested column is its sibling in that
        struct (as Spark's ``AFTER name`` names one), else a path from the top."""
        parent_path = moving.rpartition(".")[0]
        if parent_path and "." not in path:
            try:
                ref, ref_parent = self._moving(f"{parent_path}.{path}")
                if ref_parent == parent_id:
                    return ref
            except ValidationError:
                pass
        ref, ref_parent = self._moving(path)
        if ref_parent != parent_id:
            raise ValidationError(f"cannot move {moving!r} next to {path!r}: they are not in the same struct")
        return ref

    def _move(self, move: _Move, parent_id: int) -> None:
        if move.field_id == move.ref_id:
            raise ValidationError(f"cannot move column {self.base.name_of(move.field_id)!r} relative to itself")
        self.moves.setdefault(parent_id, []).append(move)

    def _moving(self, path: str) -> tuple[T.NestedField, int]:
        """The column ``path`` names, existing or added in this update, and its parent's id."""
        try:
            f = self._find(path)
            return f, self._parent(f.field_id)
        except ValidationError:
            parent_path, _, name = path.rpartition(".")
            parent_id, _ = self._struct_of(parent_path or None)
            for g in self.adds.get(parent_id, []):
                if g.name.lower() == name.lower():
                    return g, parent_id
            raise

    def move_first(self, path: str) -> "SchemaUpdate":
        """Make ``path`` the first column of its struct."""
        f, parent_id = self._moving(path)
        self._move(_Move("first", f.field_id), parent_id)
        return self

    def move_before(self, path: str, before: str) -> "SchemaUpdate":
        """Place ``path`` just before its sibling ``before``."""
        f, parent_id = self._moving(path)
        self._move(_Move("before", f.field_id, self._sibling(before, parent_id, path).field_id), parent_id)
        return self

    def move_after(self, path: str, after: str) -> "SchemaUpdate":
        """Place ``path`` just after its sibling ``after``."""
        f, parent_id = self._moving(path)
        self._move(_Move("after", f.field_id, self._sibling(after, parent_id, path).field_id), parent_id)
        return self

    def set_identifier_fields(self, *paths: str) -> "SchemaUpdate":
        """Make ``paths`` (in the new schema) the identifier fields, replacing the current ones."""
        self.identifier_names = tuple(paths)
        return self

    def union_by_name(self, other) -> "SchemaUpdate":
        """Bring in every column of ``other`` by name: missing ones added (optional, nested ones too), narrower
        existing types promoted, required ones made optional where ``other`` allows nulls; nothing is deleted,
        and a type that can neither stay nor be promoted is an error."""
        struct = other.as_struct if isinstance(other, T.Schema) else other if isinstance(other, T.StructType) \
            else self.parse_type(other)
        if not isinstance(struct, T.StructType):
            raise ValidationError(f"union_by_name needs a schema, got {other!r}")
        self._union(struct, None, self.base.as_struct)
        return self

    def _union(self, incoming: T.StructType, prefix: str | None, existing: T.StructType) -> None:
        """Depth first, as Java's ``UnionByNameVisitor``: the fields a struct's existing fields gain are added
        before the struct's own new fields, so twins evolved by either engine get the same ids."""
        by_name = {f.name.lower(): f for f in existing.fields}
        for f in incoming.fields:
            mine = by_name.get(f.name.lower())
            if mine is not None:
                mine_path = mine.name if prefix is None else f"{prefix}.{mine.name}"
                if mine.required and not f.required:
                    self.make_optional(mine_path)
                self._union_type(f.field_type, mine.field_type, mine_path)
        for f in incoming.fields:
            if f.name.lower() not in by_name:
                self.add_column(f.name if prefix is None else f"{prefix}.{f.name}", f.field_type, f.doc)

    def _union_type(self, new: T.IcebergType, mine: T.IcebergType, path: str) -> None:
        if isinstance(new, T.StructType) and isinstance(mine, T.StructType):
            self._union(new, path, mine)
        elif isinstance(new, T.ListType) and isinstance(mine, T.ListType):
            if mine.element_required and not new.element_required:
                self.make_optional(f"{path}.element")
            self._union_type(new.element_type, mine.element_type, f"{path}.element")
        elif isinstance(new, T.MapType) and isinstance(mine, T.MapType):
            self._union_type(new.key_type, mine.key_type, f"{path}.key")
            if mine.value_required and not new.value_required:
                self.make_optional(f"{path}.value")
            self._union_type(new.value_type, mine.value_type, f"{path}.value")
        elif new.is_primitive and mine.is_primitive:
            if new != mine and not T.is_promotion_allowed(new, mine):  # (a narrower incoming type is written as is)
                self.update_column(path, new)
        else:
            raise ValidationError(f"cannot union column {path!r}: the table has {mine}, the other schema {new}")

    # --- the result ------------------------------------------------------------------------------
    def renamed(self) -> dict[int, str]:
        """Field id -> new name, of the columns this update renames."""
        return {i: f.name for i, f in self.updates.items() if f.name != self._by_id[i].name}

    def apply(self) -> T.Schema:
        """The schema with every change applied (its id is assigned when it is added to the table)."""
        fields = self._struct(self.base.fields, ROOT)
        schema = T.Schema(fields, 0)
        if self.identifier_names is None:
            ids = tuple(i for i in self.base.identifier_field_ids if i not in self.deletes)
        else:
            names = schema.index_by_name()
            lowered = {k.lower(): v for k, v in names.items()}
            missing = [n for n in self.identifier_names if n not in names and n.lower() not in lowered]
            if missing:
                raise ValidationError(f"cannot make {missing[0]!r} an identifier field: no such column")
            ids = tuple((names.get(n) or lowered[n.lower()]).field_id for n in self.identifier_names)
        schema = T.Schema(fields, 0, ids)
        try:
            schema.validate("the new schema")
        except ValidationError as e:
            raise ValidationError(f"cannot update the schema: {e}") from None
        return schema

    def _struct(self, fields: Iterable[T.NestedField], parent_id: int) -> tuple[T.NestedField, ...]:
        out = []
        for f in fields:
            if f.field_id in self.deletes:
                continue
            f = self.updates.get(f.field_id, f)
            out.append(replace(f, field_type=_rebuild(self, f.field_type, f.field_id)))
        out += self.adds.get(parent_id, [])
        for move in self.moves.get(parent_id, []):
            moving = next(g for g in out if g.field_id == move.field_id)
            out.remove(moving)
            if move.kind == "first":
                out.insert(0, moving)
            else:
                at = next(i for i, g in enumerate(out) if g.field_id == move.ref_id)
                out.insert(at if move.kind == "before" else at + 1, moving)
        return tuple(out)


def _rebuild(update: SchemaUpdate, t: T.IcebergType, owner_id: int) -> T.IcebergType:
    """``t`` (the type of field ``owner_id``) with the update's changes applied beneath it."""
    if isinstance(t, T.StructType):
        return T.StructType(update._struct(t.fields, owner_id))
    if isinstance(t, T.ListType):
        e = update.updates.get(t.element_id)
        et = e.field_type if e is not None else t.element_type
        required = e.required if e is not None else t.element_required
        return T.ListType(t.element_id, _rebuild(update, et, t.element_id), required)
    if isinstance(t, T.MapType):
        v = update.updates.get(t.value_id)
        k = update.updates.get(t.key_id)
        return T.MapType(t.key_id, _rebuild(update, k.field_type if k else t.key_type, t.key_id), t.value_id,
                         _rebuild(update, v.field_type if v else t.value_type, t.value_id),
                         v.required if v is not None else t.value_required)
    return t


def mapping_of(fields: Iterable[T.NestedField]) -> list[dict]:
    """The name mapping (spec Appendix C) of ``fields``: each by its id and current name, nested ones beneath."""
    out = []
    for f in fields:
        entry: dict = {"field-id": f.field_id, "names": [f.name]}
        nested = mapping_of(T.children(f.field_type))
        if nested:
            entry["fields"] = nested
        out.append(entry)
    return out


def mapping_updated(raw: str, u: SchemaUpdate, schema: T.Schema) -> str:
    """The name mapping ``raw`` (spec Appendix C) with renamed columns given their new names too (files written
    before keep the old ones) and added columns mapped by their names, as Iceberg Java's ``MappingUtil.update``."""
    try:
        mapping = json.loads(raw)
    except ValueError as e:
        raise ValidationError(f"table property {NAME_MAPPING} is not valid JSON: {e}") from None
    renamed = u.renamed()
    by_id: dict[int, dict] = {}

    def visit(entries: list) -> None:
        for e in entries:
            if "field-id" in e:
                by_id[e["field-id"]] = e
                if e["field-id"] in renamed and renamed[e["field-id"]] not in e.setdefault("names", []):
                    e["names"].append(renamed[e["field-id"]])
            visit(e.get("fields") or [])
    visit(mapping)

    for parent_id, added in u.adds.items():
        if parent_id == ROOT:
            siblings = mapping
        elif parent_id in by_id:
            siblings = by_id[parent_id].setdefault("fields", [])
        else:
            continue  # (a struct the mapping does not describe)
        siblings += mapping_of([schema.find_field(f.field_id) for f in added])
    return json.dumps(mapping)


__all__ = ["SchemaUpdate", "CommitsOnce", "mapping_of", "mapping_updated"]
