"""Schema, partition and sort-order evolution of a table (the calls of :class:`sparkberg.table.Table` that change
them): each one metadata commit, asserted against the state it was planned on, so a concurrent change of the
same kind is a conflict rather than a silent overwrite."""
from __future__ import annotations

import json
from typing import Any, Iterable

from sparkberg.errors import CommitFailedException, ValidationError
from sparkberg.spark.types import parse_type, schema_from, to_spark_schema
from sparkberg.spec import types as I, updates as U
from sparkberg.spec.partitioning import build_sort_order, partition_field
from sparkberg.spec.properties import NAME_MAPPING
from sparkberg.spec.schema_update import ROOT, SchemaUpdate
from sparkberg.spec.spec_update import SpecUpdate
from sparkberg.spec.transforms import VoidTransform



class EvolutionMixin:
    """The evolution calls of :class:`sparkberg.table.Table`."""

    def update_schema(self) -> SchemaUpdate:
        """A schema update (:class:`~sparkberg.spec.schema_update.SchemaUpdate`) of the current schema, committed
        once by ``commit()`` or at the end of a ``with`` block:

            with t.update_schema() as u:
                u.add_column("address.zip", "string", doc="postal code", after="address.street")
                u.rename_column("v", "value"); u.delete_column("legacy"); u.update_column("n", "bigint")

        Types are Spark DDL strings; paths name the schema before the update. A table with a name mapping
        (``schema.name-mapping.default``) gets the new names and columns added to it in the same commit."""
        base = self._metadata

        def parse(given: Any) -> I.IcebergType:
            if isinstance(given, str):
                return parse_type(self.spark, given)
            return schema_from(self.spark, given).as_struct

        def commit(u: SchemaUpdate) -> None:
            schema = u.apply()
            updates = [U.AddSchema(schema, u.last_column_id), U.SetCurrentSchema(U.LAST_ADDED)]
            raw = base.properties.get(NAME_MAPPING)
            if raw:
                updates.append(U.SetProperties({NAME_MAPPING: _mapping_updated(raw, u, schema)}))
            self.commit_updates(updates, [U.AssertCurrentSchemaId(base.current_schema_id),
                                          U.AssertLastAssignedFieldId(base.last_column_id)])
        return SchemaUpdate(base.current_schema, base.last_column_id, base.format_version, base.default_spec,
                            base.sort_order(), parse, on_commit=commit)

    def _merged(self, incoming: Any) -> "EvolutionMixin":
        """The table to write ``incoming`` (a Spark schema) through with its schema merged in: the table itself
        when the schema already holds it, else a view whose current schema is the union
        (:class:`WithSchema`), added to the table by the write's own commit."""
        u = self.update_schema()
        schema = u.union_by_name(incoming).apply()
        base = self._metadata
        if schema.fields == base.current_schema.fields:
            return self
        raw = base.properties.get(NAME_MAPPING)
        updates = [U.AddSchema(schema, u.last_column_id), U.SetCurrentSchema(U.LAST_ADDED)] + (
            [U.SetProperties({NAME_MAPPING: _mapping_updated(raw, u, schema)})] if raw else [])
        return WithSchema(self, updates)

    def add_columns(self, columns: Any) -> "EvolutionMixin":
        """Add columns (Spark StructType or DDL) at the end of the schema, with new ids (a shortcut of
        :meth:`update_schema`'s ``add_column``; required ones need a default, so are refused)."""
        incoming = schema_from(self.spark, columns)
        with self.update_schema() as u:
            for f in incoming.fields:
                u.add_column(f.name, f.field_type, f.doc, required=f.required)
        return self

    def update_spec(self, partition_by: Iterable[str] | None = None) -> SpecUpdate | "EvolutionMixin":
        """Partition evolution. Without arguments, a builder (:class:`~sparkberg.spec.spec_update.SpecUpdate`)
        committed once by ``commit()`` or at the end of a ``with`` block:

            with t.update_spec() as u:
                u.add_field("bucket(8, id)"); u.remove_field("ts_day"); u.rename_field("region", "area")

        With a list of expressions (``["day(ts)", "bucket(8, id)"]``), the spec becomes those fields: the builder
        removes the others and adds the missing ones, and commits. Existing data keeps the spec it was written
        with; fields keep or reuse their ids as the spec's "Partition Evolution" asks."""
        base = self._metadata

        def commit(u: SpecUpdate) -> None:
            self.commit_updates([U.AddPartitionSpec(u.apply()), U.SetDefaultSpec(U.LAST_ADDED)],
                                [U.AssertDefaultSpecId(base.default_spec_id),
                                 U.AssertLastAssignedPartitionId(base.last_partition_id)])
        u = SpecUpdate(base.default_spec, tuple(base.partition_specs), base.current_schema, base.last_partition_id,
                       base.format_version, on_commit=commit)
        if partition_by is None:
            return u
        wanted = [partition_field(base.current_schema, expr, 0) for expr in partition_by]
        keys = {(f.source_id, str(f.transform)) for f in wanted}
        live = [f for f in base.default_spec.fields if not isinstance(f.transform, VoidTransform)]
        for f in live:
            if (f.source_id, str(f.transform)) not in keys:
                u.remove_field(f.name)
        have = {(f.source_id, str(f.transform)) for f in live}
        for expr, f in zip(partition_by, wanted):
            if (f.source_id, str(f.transform)) not in have:
                u.add_field(expr)
        u.commit()
        return self

    def replace_sort_order(self, *fields: str) -> "EvolutionMixin":
        """Make the table's default sort order ``fields`` (Spark SQL's ``WRITE ORDERED BY``): each a column or a
        transform of one with an optional direction and null order (``"ts"``, ``"id DESC NULLS LAST"``,
        ``"bucket(4, k)"``; a bare column is ASC NULLS FIRST, DESC is NULLS LAST); none makes it unsorted. An order
        equal to an existing one reuses its id. Writes sort their rows by it within each file (and range-distribute
        them, unless ``write.distribution-mode`` says otherwise) and record its id on the files."""
        base = self._metadata
        order = build_sort_order(base.current_schema, list(fields))
        return self.commit_updates([U.AddSortOrder(order), U.SetDefaultSortOrder(U.LAST_ADDED)],
                                   [U.AssertCurrentSchemaId(base.current_schema_id),
                                    U.AssertDefaultSortOrderId(base.default_sort_order_id)])


class WithSchema:
    """A table as a write that merges its data's schema sees it: ``metadata`` has the merged schema current, and its
    commits add that schema to the freshest base before building on it, so the schema and the data land in one
    commit (Iceberg Java commits the schema first, on its own). A concurrent schema change is a conflict."""

    def __init__(self, table: Any, updates: list):
        self._table, self._updates = table, updates  # (the schema added and made current, the name mapping's)
        self.metadata = U.apply_all(updates, table.metadata)
        self._from_schema_id = table.metadata.current_schema_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)

    def schema(self, schema_id: int | None = None) -> I.Schema:
        """The merged schema (or another of the table's)."""
        return self.metadata.schema(schema_id)

    def spark_schema(self):
        """The merged schema as a Spark StructType."""
        return to_spark_schema(self.metadata.current_schema)

    def commit_metadata(self, build) -> None:
        """The table's commit, with the merged schema added first to every base it builds on."""
        schema = self.metadata.current_schema

        def with_schema(base, n: int):
            if base.current_schema_id != self._from_schema_id:
                raise CommitFailedException(f"conflict: the schema of table {self._table.name} changed while a write "
                                            "merged its data's columns into it")
            evolved = U.apply_all(self._updates, base)
            if evolved.current_schema_id != schema.schema_id:  # (the data files were written for that id)
                raise CommitFailedException(f"conflict: table {self._table.name} gained schemas while a write "
                                            "merged its data's columns into it")
            return build(evolved, n)
        self._table.commit_metadata(with_schema)
        self.metadata = self._table.metadata


def mapping_of(fields: Iterable[I.NestedField]) -> list[dict]:
    """The name mapping (spec Appendix C) of ``fields``: each by its id and current name, nested ones beneath."""
    out = []
    for f in fields:
        entry: dict = {"field-id": f.field_id, "names": [f.name]}
        nested = mapping_of(I.children(f.field_type))
        if nested:
            entry["fields"] = nested
        out.append(entry)
    return out


def _mapping_updated(raw: str, u: SchemaUpdate, schema: I.Schema) -> str:
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


__all__ = ["EvolutionMixin", "WithSchema", "mapping_of", "NAME_MAPPING"]
