"""A DataFrame to data files of a table: the columns checked and aligned to the table schema by name, the
partition values computed (vectorized, on the executors), rows clustered by partition, files written."""
from __future__ import annotations

import uuid
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as ST

from sparkberg.errors import ValidationError
from sparkberg.planning.entries import physical_spark_type
from sparkberg.spark.executors import executor_errors
from sparkberg.spark.session import session_conf
from sparkberg.spark.types import to_spark_type
from sparkberg.spec import types as T
from sparkberg.spec.manifests import DataFile
from sparkberg.spec.metadata import TableMetadata
from sparkberg.spec.values import to_python
from sparkberg.write.ordering import ZORDER_COLUMN, KeyColumns, Ordering, sort_keys, spec_keys
from sparkberg.write.writer import PARTITION_PREFIX, RESULT_DDL, FileWriter, data_file_from_json

# what each write task returns (RESULT_DDL as a StructType: PySpark 3.5 parses DDL through the JVM on every call)
RESULT_SCHEMA = ST.StructType([ST.StructField(RESULT_DDL.split()[0], ST.StringType())])

_WIDENING = {
    (ST.ByteType, ST.IntegerType), (ST.ShortType, ST.IntegerType), (ST.ByteType, ST.LongType),
    (ST.ShortType, ST.LongType), (ST.IntegerType, ST.LongType), (ST.FloatType, ST.DoubleType),
    (ST.NullType, None),
}


def _compatible(src: ST.DataType, dst: ST.DataType) -> bool:
    if src == dst:
        return True
    if isinstance(src, ST.NullType):
        return True
    if (type(src), type(dst)) in _WIDENING:
        return True
    if isinstance(src, ST.DecimalType) and isinstance(dst, ST.DecimalType):
        return src.scale == dst.scale and src.precision <= dst.precision
    if isinstance(src, (ST.IntegerType, ST.LongType, ST.ShortType, ST.ByteType)) and isinstance(dst, ST.DecimalType):
        return dst.precision - dst.scale >= (10 if isinstance(src, ST.IntegerType) else 19)
    if isinstance(src, ST.StructType) and isinstance(dst, ST.StructType):
        names = {f.name.lower(): f for f in src.fields}
        return all(f.name.lower() not in names or _compatible(names[f.name.lower()].dataType, f.dataType)
                   for f in dst.fields) and all(n in {f.name.lower() for f in dst.fields} for n in names)
    if isinstance(src, ST.ArrayType) and isinstance(dst, ST.ArrayType):
        return _compatible(src.elementType, dst.elementType)
    if isinstance(src, ST.MapType) and isinstance(dst, ST.MapType):
        return _compatible(src.keyType, dst.keyType) and _compatible(src.valueType, dst.valueType)
    return False


def align(df: DataFrame, schema: T.Schema) -> DataFrame:
    """``df`` with exactly the table's columns, in order, cast to the table's types; a clear error names the
    first column that is missing, unknown or of an incompatible type (nothing is written)."""
    by_name = {f.name.lower(): f for f in df.schema.fields}
    table_names = {f.name.lower() for f in schema.fields}
    extra = [f.name for f in df.schema.fields if f.name.lower() not in table_names]
    if extra:
        raise ValidationError(f"column {extra[0]!r} is not in the table schema {[f.name for f in schema.fields]}")
    plan: list[tuple[T.NestedField, ST.DataType, ST.StructField | None]] = []
    for f in schema.fields:
        target = to_spark_type(f.field_type, f" (column {f.name!r})")
        src = by_name.get(f.name.lower())
        if src is None and f.required and f.write_default is None:
            raise ValidationError(f"required column {f.name!r} is missing from the data")
        if src is not None and not _compatible(src.dataType, target):
            raise ValidationError(f"column {f.name!r} has type {src.dataType.simpleString()}, which cannot be written "
                                  f"as {f.field_type} ({target.simpleString()})")
        plan.append((f, target, src))
    if [f.name for f in df.schema.fields] == [f.name for f in schema.fields] and \
            all(src is not None and src.dataType == target for _, target, src in plan):
        return df  # already the table's columns, in order, of its types: nothing to project (no Column built)
    cols = []
    for f, target, src in plan:
        if src is None:
            default = None if f.write_default is None else _default_literal(f)
            cols.append(F.lit(default).cast(target).alias(f.name))
        else:
            col = F.col(f"`{src.name}`")
            cols.append((col if src.dataType == target else col.cast(target)).alias(f.name))
    return df.select(*cols)


def _default_literal(f: T.NestedField) -> Any:
    return to_python(f.field_type, f.write_default)


UNSORTED = Ordering()
DISTRIBUTION_MODES = ("none", "hash", "range")
DISTRIBUTION_CONF = "spark.sql.iceberg.distribution-mode"  # (Iceberg Spark's session override of the properties)


def table_ordering(metadata: TableMetadata) -> Ordering:
    """The table's default sort order as a write ordering (files record its id); unsorted when it has none."""
    order = metadata.sort_order(metadata.default_sort_order_id)
    return UNSORTED if order.is_unsorted else Ordering(sort=order, order_id=order.order_id)


def distribution_mode(spark, metadata: TableMetadata, command: str = "write", position_delta: bool = False,
                      in_place: bool = False) -> str:
    """How a write distributes its rows, as Iceberg Spark's ``SparkWriteConf`` decides: ``command`` is ``write``
    (append, overwrite), ``delete``, ``update`` or ``merge``; ``position_delta`` for merge-on-read. The session conf
    ``spark.sql.iceberg.distribution-mode`` overrides ``write.distribution-mode`` and
    ``write.{delete,update,merge}.distribution-mode``. Appends default to ``range`` on a sorted table, ``hash`` on a
    partitioned one, else ``none``; row-level commands default to ``hash``, copy-on-write merges of an unpartitioned
    table to the append's mode; ``hash`` without partitions, and ``range`` with neither partitions nor a sort
    order, are ``none`` for appends and copy-on-write merges.

    ``in_place``: a copy-on-write ``delete`` or ``update`` whose rows are those of files rewritten in their own
    partition of the current spec, each file the only one rewritten in its partition and small enough that one
    task reads all its rows. Clustering such rows by partition would move no row to another file, so unless a mode
    is named they keep their tasks (``none``): the files written are the ones ``hash`` would write, without the
    shuffle."""
    partitioned = bool(metadata.default_spec.fields)
    is_sorted = not metadata.sort_order(metadata.default_sort_order_id).is_unsorted
    session = session_conf(spark, DISTRIBUTION_CONF)

    def named(key: str) -> str | None:
        value = session or metadata.properties.get(key)
        if value is not None and value.strip().lower() not in DISTRIBUTION_MODES:
            where = DISTRIBUTION_CONF if session else f"table property {key}"
            raise ValidationError(f"{where} must be one of {', '.join(DISTRIBUTION_MODES)}, got {value!r}")
        return None if value is None else value.strip().lower()

    def adjusted(mode: str) -> str:
        if (mode == "range" and not partitioned and not is_sorted) or (mode == "hash" and not partitioned):
            return "none"
        return mode

    def write_mode() -> str:
        mode = named("write.distribution-mode")
        if mode is not None:
            return adjusted(mode)
        return "range" if is_sorted else "hash" if partitioned else "none"

    if command == "write":
        return write_mode()
    if command not in ("delete", "update", "merge"):
        raise ValueError(f"unknown write command {command!r}")
    mode = named(f"write.{command}.distribution-mode")
    if command == "merge" and not position_delta:
        if mode is not None:
            return adjusted(mode)
        return "hash" if partitioned else write_mode()
    return mode or ("none" if in_place and command in ("delete", "update") and not position_delta else "hash")


def write_files(spark, metadata: TableMetadata, df: DataFrame, extra_fields=(),
                properties: dict[str, str] | None = None, ordering: Ordering | None = None,
                distribution: str | None = None, num_partitions: int | None = None,
                command: str = "write", position_delta: bool = False, in_place: bool = False) -> list[DataFile]:
    """Write ``df`` as data files for the table's default spec; returns their manifest descriptions.
    ``extra_fields`` are metadata columns to write too (the v3 row-lineage columns of rewritten rows);
    ``properties`` replace the table's write properties (a compaction's target file size).

    ``ordering`` is the table's sort order unless given (:data:`UNSORTED`: none), ``distribution`` what
    :func:`distribution_mode` says of ``command`` unless given. ``distribution`` is how rows reach the write
    tasks: ``hash`` clusters them by partition (hashed, then sorted by partition values within each task);
    ``range`` range-partitions them by (partition values, ``ordering``) into ``num_partitions`` tasks (Spark's
    shuffle partitions, which adaptive execution may coalesce, when None), so every task holds a contiguous range
    of the order; ``none`` keeps the tasks the DataFrame has (the caller clustered the rows by partition, or each
    task writes one file per partition it meets). Each task sorts its rows by the ``ordering``, and the files
    record its ``order_id``."""
    table_schema = metadata.current_schema
    schema = T.Schema(table_schema.fields + tuple(extra_fields), table_schema.schema_id,
                      table_schema.identifier_field_ids)
    spec = metadata.default_spec
    if any(not f.transform.is_known for f in spec.fields):
        raise ValidationError("cannot write with a partition spec that has an unknown transform")
    for f in schema.index_by_id().values():
        if isinstance(f.field_type, (T.GeometryType, T.GeographyType, T.VariantType)):
            raise ValidationError(f"writing column {f.name!r} of type {f.field_type} is not supported yet")
    ordering = table_ordering(metadata) if ordering is None else ordering
    distribution = distribution_mode(spark, metadata, command, position_delta, in_place) \
        if distribution is None else distribution
    if distribution not in DISTRIBUTION_MODES:
        raise ValidationError(f"unknown write distribution mode {distribution!r} (none, hash or range)")
    aligned = align(df, schema)
    write_id = uuid.uuid4().hex[:16]
    data_location = metadata.properties.get("write.data.path", f"{metadata.location}/data")
    keys = spec_keys(spec, PARTITION_PREFIX)
    order: list = [F.col(name).asc_nulls_first() for name, _, _ in keys]
    if ordering.sort is not None:
        sorted_by = sort_keys(ordering.sort)
        keys += sorted_by
        order += [_direction(F.col(name), f) for (name, _, _), f in zip(sorted_by, ordering.sort.fields)]
    zorder = ordering.zorder
    if zorder is not None:
        order.append(F.col(ZORDER_COLUMN).asc_nulls_first())
    in_writer = None  # the keys the writer computes itself, for rows it writes as they come
    if keys or zorder is not None:
        by_id = schema.index_by_id()
        out_schema = ST.StructType(list(aligned.schema.fields) + [
            ST.StructField(name, physical_spark_type(tr.result_type(by_id[source_id].field_type)))
            for name, source_id, tr in keys] + ([ST.StructField(ZORDER_COLUMN, ST.BinaryType())] if zorder else []))
        key_columns = KeyColumns(schema, keys, zorder)
        with_keys = aligned.mapInArrow(key_columns, out_schema)
        if distribution == "range" and order:
            # (without a number, Spark's adaptive execution may coalesce small ranges, as it does for Java's writes)
            ranged = with_keys.repartitionByRange(num_partitions, *order) if num_partitions else \
                with_keys.repartitionByRange(*order)
            clustered = ranged.sortWithinPartitions(*order)
        elif distribution == "hash" and spec.fields:
            clustered = with_keys.repartition(*[F.col(name) for name, _, _ in keys[:len(spec.fields)]]) \
                .sortWithinPartitions(*order)
        elif ordering != UNSORTED:
            clustered = with_keys.sortWithinPartitions(*order)
        else:  # (rows kept in their tasks and order: the writer computes their keys itself, in the same pass)
            clustered, in_writer = aligned, key_columns
    else:
        clustered = aligned
    writer = FileWriter(schema, spec, data_location, dict(properties or metadata.properties), write_id,
                        sort_order_id=ordering.order_id, key_columns=in_writer)
    with executor_errors(spark):
        rows = clustered.mapInArrow(writer, RESULT_SCHEMA).collect()
    return [data_file_from_json(r["data_file"], spec, table_schema) for r in rows]


def _direction(col, f) -> Any:
    if f.direction == "asc":
        return col.asc_nulls_first() if f.null_order == "nulls-first" else col.asc_nulls_last()
    return col.desc_nulls_first() if f.null_order == "nulls-first" else col.desc_nulls_last()
