"""Equality deletes: ``t.delete_by_keys(df, ["id"])`` deletes every row whose key columns equal a row of ``df``
(null-safe), without reading the table, by writing equality delete files (spec "Equality Delete Files") for
the table's default spec: one set per partition when the table is partitioned (``df`` must then carry the
partition source columns), global when it is not. Rows added later are not affected (sequence numbers)."""
from __future__ import annotations

from dataclasses import replace

from sparkberg.errors import ValidationError
from sparkberg.io.fileio import deleted_on_failure
from sparkberg.operations.changes import Changes
from sparkberg.format import types as T
from sparkberg.format.manifests import EQUALITY_DELETES
from sparkberg.format.metadata import TableMetadata
from sparkberg.write.dataframe import UNSORTED, write_files


def delete_by_keys(table, df, key_columns) -> Changes | None:
    """What :meth:`sparkberg.table.Table.delete_by_keys` changes (None: ``df`` has no row)."""
    deletes = equality_deletes(table, df, key_columns)
    return Changes("delete", [], deletes, set()) if deletes else None


def upsert(table, df, key_columns) -> Changes:
    """What replacing the rows whose keys a row of ``df`` has with the rows of ``df``, and inserting the others,
    changes, without reading the table: equality deletes of ``df``'s keys and ``df``'s rows, in one snapshot
    (Iceberg's row delta, as streaming writers upsert: the deletes apply only to rows committed before, so the new
    rows stay)."""
    deletes = equality_deletes(table, df, key_columns)
    with deleted_on_failure(table.io, lambda: [d.file_path for _, d in deletes]):
        added = write_files(table.spark, table.metadata, df, io=table.io)
    return Changes("overwrite", added, deletes, set())


def equality_deletes(table, df, key_columns) -> list:
    """Equality delete files of the keys (and partition source columns) of ``df``'s rows: (spec id, file)."""
    m: TableMetadata = table.metadata
    if m.format_version < 2:
        raise ValidationError("equality deletes need format version 2 or later; upgrade the table")
    schema = m.current_schema
    keys = [key_columns] if isinstance(key_columns, str) else list(key_columns)
    if not keys:
        raise ValidationError("equality deletes need at least one key column")
    by_name = {f.name.lower(): f for f in schema.fields}
    key_fields = []
    for k in keys:
        f = by_name.get(k.lower())
        if f is None:
            raise ValidationError(f"key column {k!r} is not a top-level column of the table")
        if not f.field_type.is_primitive or f.field_type in (T.FLOAT, T.DOUBLE):
            raise ValidationError(f"key column {k!r} of type {f.field_type} cannot be an equality delete column")
        key_fields.append(f)
    spec = m.default_spec
    part_fields = []
    for pf in spec.fields:
        src = schema.index_by_id().get(pf.source_id)
        if src is None or src.name.lower() not in by_name:
            raise ValidationError(f"partition source column of {pf.name!r} must be a top-level column")
        if src not in key_fields and src not in part_fields:
            part_fields.append(src)
    columns = {f.name.lower() for f in key_fields + part_fields}
    present = {c.lower(): c for c in df.columns}
    missing = [f.name for f in key_fields + part_fields if f.name.lower() not in present]
    if missing:
        raise ValidationError(f"the data lacks column {missing[0]!r} (equality deletes need the key columns and, on a "
                              "partitioned table, the partition source columns are needed)")
    delete_schema = T.Schema([replace(f, required=False) for f in schema.fields if f.name.lower() in columns],
                             schema.schema_id)
    narrowed = replace(m, schemas=tuple(s if s.schema_id != schema.schema_id else delete_schema
                                        for s in m.schemas))
    data = df.select(*[present[f.name.lower()] for f in delete_schema.fields]).dropDuplicates()
    files = write_files(table.spark, narrowed, data, ordering=UNSORTED, distribution="hash", io=table.io)
    ids = tuple(f.field_id for f in key_fields)
    return [(spec.spec_id, replace(f, content=EQUALITY_DELETES, equality_ids=ids, sort_order_id=None))
            for f in files]
