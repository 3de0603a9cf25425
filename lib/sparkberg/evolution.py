"""Schema, partition and sort-order evolution of a table (the calls of :class:`sparkberg.table.Table` that change
them): each one metadata commit, asserted against the state it was planned on, so a concurrent change of the
same kind is a conflict rather than a silent overwrite."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from sparkberg.commit.pending import MetadataChange
from sparkberg.spark.types import parse_type, schema_from
from sparkberg.format import types as I, updates as U
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.partitioning import build_sort_order, partition_field
from sparkberg.format.properties import NAME_MAPPING
from sparkberg.format.schema_update import SchemaUpdate, mapping_updated
from sparkberg.format.spec_update import SpecUpdate
from sparkberg.format.transforms import VoidTransform



class EvolutionMixin:
    """The evolution calls of :class:`sparkberg.table.Table`."""

    def update_schema(self) -> SchemaUpdate:
        """A schema update (:class:`~sparkberg.format.schema_update.SchemaUpdate`) of the current schema, committed
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
                updates.append(U.SetProperties({NAME_MAPPING: mapping_updated(raw, u, schema)}))
            self._commit(MetadataChange("update-schema", tuple(updates), (
                U.AssertCurrentSchemaId(base.current_schema_id), U.AssertLastAssignedFieldId(base.last_column_id))))
        return SchemaUpdate(base.current_schema, base.last_column_id, base.format_version, base.default_spec,
                            base.sort_order(), parse, on_commit=commit)

    def _merged(self, incoming: Any) -> "SchemaMerge | None":
        """The schema merge a write of ``incoming`` (a Spark schema) makes: None when the schema already holds it,
        else the updates that make the union current (committed with the write's snapshot)."""
        u = self.update_schema()
        schema = u.union_by_name(incoming).apply()
        base = self._metadata
        if schema.fields == base.current_schema.fields:
            return None
        raw = base.properties.get(NAME_MAPPING)
        updates = (U.AddSchema(schema, u.last_column_id), U.SetCurrentSchema(U.LAST_ADDED)) + (
            (U.SetProperties({NAME_MAPPING: mapping_updated(raw, u, schema)}),) if raw else ())
        # (a concurrent schema change is a conflict: the data was written for the union of this schema)
        requirements = (U.AssertCurrentSchemaId(base.current_schema_id),
                        U.AssertLastAssignedFieldId(base.last_column_id))
        return SchemaMerge(updates, requirements, U.apply_all(updates, base))

    def add_columns(self, columns: Any) -> "EvolutionMixin":
        """Add columns (Spark StructType or DDL) at the end of the schema, with new ids (a shortcut of
        :meth:`update_schema`'s ``add_column``; required ones need a default, so are refused)."""
        incoming = schema_from(self.spark, columns)
        with self.update_schema() as u:
            for f in incoming.fields:
                u.add_column(f.name, f.field_type, f.doc, required=f.required)
        return self

    def update_spec(self, partition_by: Iterable[str] | None = None) -> SpecUpdate | "EvolutionMixin":
        """Partition evolution. Without arguments, a builder (:class:`~sparkberg.format.spec_update.SpecUpdate`)
        committed once by ``commit()`` or at the end of a ``with`` block:

            with t.update_spec() as u:
                u.add_field("bucket(8, id)"); u.remove_field("ts_day"); u.rename_field("region", "area")

        With a list of expressions (``["day(ts)", "bucket(8, id)"]``), the spec becomes those fields: the builder
        removes the others and adds the missing ones, and commits. Existing data keeps the spec it was written
        with; fields keep or reuse their ids as the spec's "Partition Evolution" asks."""
        base = self._metadata

        def commit(u: SpecUpdate) -> None:
            self._commit(MetadataChange("update-spec", (U.AddPartitionSpec(u.apply()), U.SetDefaultSpec(U.LAST_ADDED)),
                                        (U.AssertDefaultSpecId(base.default_spec_id),
                                         U.AssertLastAssignedPartitionId(base.last_partition_id))))
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
        self._commit(MetadataChange("replace-sort-order", (U.AddSortOrder(order), U.SetDefaultSortOrder(U.LAST_ADDED)),
                                    (U.AssertCurrentSchemaId(base.current_schema_id),
                                     U.AssertDefaultSortOrderId(base.default_sort_order_id))))
        return self


@dataclass(frozen=True)
class SchemaMerge:
    """A write's schema merge: the ``updates`` that add the union of the table's schema and the data's and make
    it current (and extend the name mapping), what they ``require`` of each base (the schema they merged into
    still current), and the table's ``metadata`` with them applied, on which the write plans."""

    updates: tuple[U.TableUpdate, ...]
    requirements: tuple[U.TableRequirement, ...]
    metadata: TableMetadata


__all__ = ["EvolutionMixin", "SchemaMerge"]
