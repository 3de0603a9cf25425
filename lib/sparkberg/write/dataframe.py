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
from sparkberg.spark.types import to_spark_type
from sparkberg.spec import types as T
from sparkberg.spec.manifests import DataFile
from sparkberg.spec.metadata import TableMetadata
from sparkberg.spec.values import to_python
from sparkberg.write.writer import PARTITION_PREFIX, RESULT_DDL, FileWriter, PartitionColumns, data_file_from_json

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


def write_files(spark, metadata: TableMetadata, df: DataFrame, extra_fields=(),
                properties: dict[str, str] | None = None) -> list[DataFile]:
    """Write ``df`` as data files for the table's default spec; returns their manifest descriptions.
    ``extra_fields`` are metadata columns to write too (the v3 row-lineage columns of rewritten rows);
    ``properties`` replace the table's write properties (a compaction's target file size)."""
    table_schema = metadata.current_schema
    schema = T.Schema(table_schema.fields + tuple(extra_fields), table_schema.schema_id,
                      table_schema.identifier_field_ids)
    spec = metadata.default_spec
    if any(not f.transform.is_known for f in spec.fields):
        raise ValidationError("cannot write with a partition spec that has an unknown transform")
    for f in schema.index_by_id().values():
        if isinstance(f.field_type, (T.GeometryType, T.GeographyType, T.VariantType)):
            raise ValidationError(f"writing column {f.name!r} of type {f.field_type} is not supported yet")
    aligned = align(df, schema)
    write_id = uuid.uuid4().hex[:16]
    data_location = metadata.properties.get("write.data.path", f"{metadata.location}/data")
    writer = FileWriter(schema, spec, data_location, dict(properties or metadata.properties), write_id)
    if spec.fields:
        by_id = schema.index_by_id()
        part_cols = [f"{PARTITION_PREFIX}{i}" for i in range(len(spec.fields))]
        out_schema = ST.StructType(list(aligned.schema.fields) + [
            ST.StructField(f"{PARTITION_PREFIX}{i}", physical_spark_type(
                pf.transform.result_type(by_id[pf.source_id].field_type))) for i, pf in enumerate(spec.fields)])
        with_parts = aligned.mapInArrow(PartitionColumns(schema, spec), out_schema)
        clustered = with_parts.repartition(*[F.col(c) for c in part_cols]).sortWithinPartitions(*part_cols)
        with executor_errors(spark):
            rows = clustered.mapInArrow(writer, RESULT_SCHEMA).collect()
    else:
        with executor_errors(spark):
            rows = aligned.mapInArrow(writer, RESULT_SCHEMA).collect()
    return [data_file_from_json(r["data_file"], spec, table_schema) for r in rows]


