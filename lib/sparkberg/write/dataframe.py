"""A DataFrame to data files of a table: the columns checked and aligned to the table schema by name, the
partition values computed (vectorized, on the executors), rows clustered by partition, files written."""
from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any, Iterable

import pyarrow as pa

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as ST

from sparkberg.errors import ValidationError
from sparkberg.io.fileio import FileIO
from sparkberg.identifiers import split_dotted
from sparkberg.planning.entries import physical_spark_type
from sparkberg.spark.executors import executor_errors
from sparkberg.spark.frames import map_in_arrow
from sparkberg.spark.settings import session_conf
from sparkberg.spark.types import to_spark_type
from sparkberg.format.properties import data_location as data_location_of
from sparkberg.format import types as T
from sparkberg.format.manifests import DataFile
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.values import to_python
from sparkberg.write.jvm_keys import key_columns
from sparkberg.write.ordering import ZORDER_COLUMN, KeyColumns, Ordering, sort_keys, spec_keys
from sparkberg.write.writer import PARTITION_PREFIX, RESULT_DDL, FileWriter, data_file_from_json

# what each write task returns (RESULT_DDL as a StructType: PySpark 3.5 parses DDL through the JVM on every call)
RESULT_SCHEMA = ST.StructType([ST.StructField(RESULT_DDL.split()[0], ST.StringType())])

STORE_ASSIGNMENT_CONF = "spark.sql.storeAssignmentPolicy"
MERGE_SCHEMA_CONF = "spark.sql.iceberg.merge-schema"  # (Iceberg Spark's session switch for schema-merging writes)

_NUMERIC_RANK = (ST.ByteType, ST.ShortType, ST.IntegerType, ST.LongType, ST.FloatType, ST.DoubleType)
_INTEGRAL_DIGITS = {ST.ByteType: 3, ST.ShortType: 5, ST.IntegerType: 10, ST.LongType: 20}
_INTEGRAL_RANGE = {ST.ByteType: (-(1 << 7), (1 << 7) - 1), ST.ShortType: (-(1 << 15), (1 << 15) - 1),
                   ST.IntegerType: (-(1 << 31), (1 << 31) - 1), ST.LongType: (-(1 << 63), (1 << 63) - 1)}
_DATETIME = (ST.DateType, ST.TimestampType, ST.TimestampNTZType)


def _is_numeric(t: ST.DataType) -> bool:
    return isinstance(t, ST.NumericType)


def _up_cast(src: ST.DataType, dst: ST.DataType) -> bool:
    """Whether a primitive ``src`` value always fits ``dst`` (Spark's ``Cast.canUpCast``): numeric widening in
    Spark's order (byte, short, int, long, float, double), integers and decimals into wide enough decimals, date to
    timestamps, between the two timestamps, anything atomic to string."""
    if src == dst or isinstance(src, ST.NullType):
        return True
    if type(src) in _NUMERIC_RANK and type(dst) in _NUMERIC_RANK:
        return _NUMERIC_RANK.index(type(src)) < _NUMERIC_RANK.index(type(dst))
    if isinstance(dst, ST.DecimalType) and (isinstance(src, ST.DecimalType) or type(src) in _INTEGRAL_DIGITS):
        p, s = (src.precision, src.scale) if isinstance(src, ST.DecimalType) else (_INTEGRAL_DIGITS[type(src)], 0)
        return dst.precision - dst.scale >= p - s and dst.scale >= s
    if isinstance(src, ST.DecimalType) and type(dst) in _INTEGRAL_DIGITS:
        return src.scale == 0 and src.precision < _INTEGRAL_DIGITS[type(dst)]
    if isinstance(src, ST.DateType) and isinstance(dst, (ST.TimestampType, ST.TimestampNTZType)):
        return True
    if isinstance(src, (ST.TimestampType, ST.TimestampNTZType)) and isinstance(dst, (ST.TimestampType,
                                                                                     ST.TimestampNTZType)):
        return True
    return isinstance(dst, ST.StringType) and isinstance(src, ST.AtomicType)


def _assignable(src: ST.DataType, dst: ST.DataType, policy: str) -> bool:
    """Whether a column of type ``src`` may be written into one of type ``dst`` under Spark's store assignment
    ``policy`` (``spark.sql.storeAssignmentPolicy``): STRICT takes up-casts alone; ANSI (Spark's default) also any
    numeric into any numeric (checked for overflow as the row is written) and between dates and timestamps;
    LEGACY also strings into any atomic type. Struct fields match by name (a field the data lacks is null),
    lists and maps element by element."""
    if isinstance(src, ST.StructType) and isinstance(dst, ST.StructType):
        names = {f.name.lower(): f for f in dst.fields}
        return all(f.name.lower() in names and _assignable(f.dataType, names[f.name.lower()].dataType, policy)
                   for f in src.fields)
    if isinstance(src, ST.ArrayType) and isinstance(dst, ST.ArrayType):
        return _assignable(src.elementType, dst.elementType, policy)
    if isinstance(src, ST.MapType) and isinstance(dst, ST.MapType):
        return _assignable(src.keyType, dst.keyType, policy) and _assignable(src.valueType, dst.valueType, policy)
    if _up_cast(src, dst):
        return True
    if policy == "STRICT" or not isinstance(src, ST.AtomicType) or not isinstance(dst, ST.AtomicType):
        return False
    if (_is_numeric(src) and _is_numeric(dst)) or (isinstance(src, _DATETIME) and isinstance(dst, _DATETIME)):
        return True
    return policy == "LEGACY" and isinstance(src, ST.StringType)


def _out_of_range(col: Column, src: ST.DataType, dst: ST.DataType) -> Column | None:
    """Where a numeric ``col`` of type ``src`` does not fit ``dst`` (a condition), None when it always fits.
    Fractions are dropped or rounded as Spark's cast does; what overflows is an error, as ANSI casts make it.
    (Compared in double, exact at these bounds, or in decimal for a decimal column.)"""
    if not _is_numeric(src) or not _is_numeric(dst) or _up_cast(src, dst):
        return None
    exact = isinstance(src, ST.DecimalType)
    value = col if exact else col.cast("double")

    def bound(x: int | float) -> Column:
        return F.lit(Decimal(x)) if exact else F.lit(float(x))

    if type(dst) in _INTEGRAL_RANGE:
        lo, hi = _INTEGRAL_RANGE[type(dst)]
        bad = (value < bound(lo)) | (value >= bound(hi + 1))
    elif isinstance(dst, ST.DecimalType):
        bad = F.abs(F.round(value, dst.scale)) >= bound(10 ** (dst.precision - dst.scale))
    elif exact:  # float from decimal: a decimal's magnitude is under 10^38, inside float's range
        return None
    else:  # float from double
        bad = F.abs(value) > bound(3.4028234663852886e38)
    return F.isnan(col) | bad if isinstance(src, (ST.FloatType, ST.DoubleType)) else bad


def _assign(col: Column, src: ST.DataType, dst: ST.DataType, where: str) -> Column:
    """``col`` (of type ``src``) as a value of type ``dst`` (:func:`_assignable`); a numeric value that does not fit
    fails the write with an error naming the column (``where``) and the value."""
    if src == dst:
        return col
    if src.simpleString() == dst.simpleString():  # (the same names and types in order, only nullability differs:
        return col.cast(dst)                      # Spark's cast, not a rebuild of every element)
    if isinstance(src, ST.StructType) and isinstance(dst, ST.StructType):
        names = {f.name.lower(): f for f in src.fields}
        parts = []
        for f in dst.fields:
            given = names.get(f.name.lower())
            value = F.lit(None).cast(f.dataType) if given is None else \
                _assign(col.getField(given.name), given.dataType, f.dataType, f"{where}.{f.name}")
            parts.append(value.alias(f.name))
        return F.when(col.isNull(), F.lit(None).cast(dst)).otherwise(F.struct(*parts))
    if isinstance(src, ST.ArrayType) and isinstance(dst, ST.ArrayType):
        return F.transform(col, lambda e: _assign(e, src.elementType, dst.elementType, f"{where}.element"))
    if isinstance(src, ST.MapType) and isinstance(dst, ST.MapType):
        if src.keyType != dst.keyType:
            col = F.transform_keys(col, lambda k, v: _assign(k, src.keyType, dst.keyType, f"{where}.key"))
        if src.valueType != dst.valueType:
            col = F.transform_values(col, lambda k, v: _assign(v, src.valueType, dst.valueType, f"{where}.value"))
        return col
    bad = _out_of_range(col, src, dst)
    if bad is None:
        return col.cast(dst)
    message = F.concat(F.lit(f"column {where!r}: value "), col.cast("string"),
                       F.lit(f" of type {src.simpleString()} does not fit {dst.simpleString()}"))
    return F.when(col.isNotNull() & bad, F.raise_error(message)).otherwise(col.cast(dst))


def store_assignment_policy(spark) -> str:
    """The session's ``spark.sql.storeAssignmentPolicy`` (Spark checks its value): ANSI when unset."""
    return (session_conf(spark, STORE_ASSIGNMENT_CONF) or "ANSI").strip().upper()


def align(df: DataFrame, schema: T.Schema, policy: str = "ANSI") -> DataFrame:
    """``df`` with exactly the table's columns, in order, of the table's types: each column assigned as Spark's
    store assignment ``policy`` allows (:func:`_assignable`); a clear error names the first column that is missing,
    unknown or of a type the policy does not assign (nothing is written)."""
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
        if src is not None and not _assignable(src.dataType, target, policy):
            raise _not_assignable(f.name, src.dataType, f"{f.field_type} ({target.simpleString()})", policy)
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
            cols.append(_assign(F.col(f"`{src.name}`"), src.dataType, target, f.name).alias(f.name))
    return df.select(*cols)


def _not_assignable(name: str, src: ST.DataType, dst: str, policy: str, expression: str | None = None
                    ) -> ValidationError:
    """The one error of a value a write, an UPDATE or a MERGE would store into a column of a type the store
    assignment policy does not assign it to."""
    given = f" (set to {expression})" if expression else ""
    # (Spark 4.1's GEOMETRY and GEOGRAPHY: a table's geometry or geography column holds WKB, which st_asbinary gives)
    hint = "; write st_asbinary(...) of it, its WKB" if src.typeName() in ("geometry", "geography") else ""
    return ValidationError(f"column {name!r} has type {src.simpleString()}{given}, which cannot be written as {dst} "
                           f"under {STORE_ASSIGNMENT_CONF}={policy}{hint}")


def _field_path(target: ST.StructType, name: str) -> list[str]:
    """The field names (as the schema spells them) of the column or nested struct field ``name`` names: a
    top-level column by its whole name, else dotted parts (```a.b`.c``: backquoted parts kept whole), matched
    case-insensitively; a named error for a name that is no field."""
    fields = {f.name.lower(): f for f in target.fields}
    if name.lower() in fields:
        return [fields[name.lower()].name]
    parts = split_dotted(name)
    path: list[str] = []
    dtype: ST.DataType = target
    for part in parts:
        if not isinstance(dtype, ST.StructType):
            raise ValidationError(f"cannot assign {name!r}: {'.'.join(path)!r} is not a struct")
        found = {f.name.lower(): f for f in dtype.fields}.get(part.lower())
        if found is None:
            raise ValidationError(f"cannot update unknown column {name!r}")
        path.append(found.name)
        dtype = found.dataType
    return path


def _type_at(target: ST.StructType, path: list[str]) -> ST.DataType:
    dtype: ST.DataType = target
    for name in path:
        dtype = next(f.dataType for f in dtype.fields if f.name == name)
    return dtype


def assignments(frame: DataFrame, target: ST.StructType, values: dict[str, str | Column], policy: str,
                current: Any) -> dict[str, Column]:
    """The new value of each top-level column that ``values`` assign, as SQL's ``UPDATE ... SET`` and MERGE's
    ``SET`` assign them (Spark's ``AssignmentUtils``): a key names a column or a nested struct field
    (``addr.city``); each expression, of the type Spark gives it over ``frame``, must be assignable to its field
    under the store assignment ``policy`` as a write's columns are (:func:`_assignable`), else a named error names
    the field, both types and the policy; a struct with assigned fields is rebuilt from its other fields'
    current values (``current(name)``: a top-level column's value before the assignment). Two assignments of one
    field, or of a struct and a field inside it, are an error."""
    paths = {key: _field_path(target, key) for key in values}
    ordered = sorted(paths.values(), key=len)
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            if b[:len(a)] == a:
                raise ValidationError(f"conflicting assignments of {'.'.join(a)!r} and {'.'.join(b)!r}")
    exprs = {key: v if isinstance(v, Column) else F.expr(v) for key, v in values.items()}
    keys = list(values)
    analysed = frame.select(*[exprs[k].alias(f"_assigned{i}") for i, k in enumerate(keys)]).schema.fields
    assigned: dict[tuple[str, ...], Column] = {}
    for key, field in zip(keys, analysed):
        path = paths[key]
        src, dst = field.dataType, _type_at(target, path)
        shown = ".".join(path)
        if not _assignable(src, dst, policy):
            raise _not_assignable(shown, src, dst.simpleString(), policy,
                                  values[key] if isinstance(values[key], str) else None)
        assigned[tuple(path)] = _assign(exprs[key], src, dst, shown)

    def rebuilt(value: Column, path: tuple[str, ...], dtype: ST.DataType) -> Column:
        if path in assigned:
            return assigned[path]
        inner = [p for p in assigned if p[:len(path)] == path]
        if not inner:
            return value
        return F.struct(*[rebuilt(value.getField(f.name), (*path, f.name), f.dataType).alias(f.name)
                          for f in dtype.fields])
    tops = dict.fromkeys(p[0] for p in paths.values())
    return {top: rebuilt(current(top), (top,), _type_at(target, [top])) for top in tops}


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
                command: str = "write", position_delta: bool = False, in_place: bool = False,
                io: FileIO | None = None) -> list[DataFile]:
    """Write ``df`` as data files for the table's default spec; returns their manifest descriptions.
    ``extra_fields`` are metadata columns to write too (the v3 row-lineage columns of rewritten rows);
    ``properties`` replace the table's write properties (a compaction's target file size); ``io`` is the
    table's FileIO, which the write tasks write with.

    ``ordering`` is the table's sort order unless given (:data:`UNSORTED`: none), ``distribution`` what
    :func:`distribution_mode` says of ``command`` unless given. ``distribution`` is how rows reach the write
    tasks: ``hash`` clusters them by partition (hashed, then sorted by partition values within each task);
    ``range`` range-partitions them by (partition values, ``ordering``) into ``num_partitions`` tasks (Spark's
    shuffle partitions, which adaptive execution may coalesce, when None), so every task holds a contiguous range
    of the order; ``none`` keeps the tasks the DataFrame has (the caller clustered the rows by partition, or each
    task writes one file per partition it meets). Each task sorts its rows by the ``ordering``, and the files
    record its ``order_id``. The shuffle and the sort use Spark expressions of the partition and sort keys where
    every key has one (:mod:`sparkberg.write.jvm_keys`), and the writer computes each row's partition as it
    writes; otherwise (a z-order, a transform with no expression) a Python stage computes the keys first."""
    schema, spec = _written_schema(metadata, extra_fields)
    table_schema = metadata.current_schema
    ordering = table_ordering(metadata) if ordering is None else ordering
    distribution = distribution_mode(spark, metadata, command, position_delta, in_place) \
        if distribution is None else distribution
    if distribution not in DISTRIBUTION_MODES:
        raise ValidationError(f"unknown write distribution mode {distribution!r} (none, hash or range)")
    aligned = align(df, schema, store_assignment_policy(spark))
    write_id = uuid.uuid4().hex[:16]
    data_location = data_location_of(metadata)
    keys = spec_keys(spec, PARTITION_PREFIX)
    nparts = len(spec.fields)
    if ordering.sort is not None:
        keys += sort_keys(ordering.sort)
    jvm = key_columns(schema, keys) if keys and ordering.zorder is None else None
    if jvm is not None:  # (the JVM clusters the rows by expressions of the keys; the writer computes them)
        rows, by, values = aligned, jvm[:nparts], jvm
        in_writer = KeyColumns(schema, keys[:nparts]) if nparts else None
    elif keys or ordering.zorder is not None:  # (a Python stage adds the key columns, which the writer reads)
        by_id = schema.index_by_id()
        out_schema = ST.StructType(list(aligned.schema.fields) + [
            ST.StructField(name, physical_spark_type(tr.result_type(by_id[source_id].field_type)))
            for name, source_id, tr in keys] + ([ST.StructField(ZORDER_COLUMN, ST.BinaryType())]
                                                if ordering.zorder is not None else []))
        rows = map_in_arrow(aligned, KeyColumns(schema, keys, ordering.zorder), out_schema)
        values = [F.col(name) for name, _, _ in keys]
        by, in_writer = values[:nparts], None
    else:
        rows, by, values, in_writer = aligned, [], [], None
    order = [c.asc_nulls_first() for c in values[:nparts]]
    if ordering.sort is not None:
        order += [_direction(c, f) for c, f in zip(values[nparts:], ordering.sort.fields)]
    if ordering.zorder is not None:
        order.append(F.col(ZORDER_COLUMN).asc_nulls_first())
    clustered_input = True
    if distribution == "range" and order:
        # (without a number, Spark's adaptive execution may coalesce small ranges, as it does for Java's writes)
        ranged = rows.repartitionByRange(num_partitions, *order) if num_partitions else rows.repartitionByRange(*order)
        clustered = ranged.sortWithinPartitions(*order)
    elif distribution == "hash" and by:
        clustered = rows.repartition(*by).sortWithinPartitions(*order)
    elif ordering != UNSORTED and order:
        clustered = rows.sortWithinPartitions(*order)
    else:  # (rows kept in their tasks and order: the writer computes their partitions itself, as it writes them)
        clustered = aligned
        if by:
            clustered_input, in_writer = False, KeyColumns(schema, keys[:nparts])
    writer = FileWriter(schema, spec, data_location, dict(properties or metadata.properties), write_id,
                        sort_order_id=ordering.order_id, key_columns=in_writer, clustered=clustered_input, io=io)
    with executor_errors(spark):
        written = map_in_arrow(clustered, writer, RESULT_SCHEMA).collect()
    return [data_file_from_json(r["data_file"], spec, table_schema) for r in written]


def _written_schema(metadata: TableMetadata, extra_fields) -> tuple[T.Schema, Any]:
    """The schema a write writes (the table's, with ``extra_fields``) and its spec, the table's default; named
    errors for what no write writes."""
    table_schema = metadata.current_schema
    schema = T.Schema(table_schema.fields + tuple(extra_fields), table_schema.schema_id,
                      table_schema.identifier_field_ids)
    spec = metadata.default_spec
    if any(not f.transform.is_known for f in spec.fields):
        raise ValidationError("cannot write with a partition spec that has an unknown transform")
    return schema, spec


def write_on_driver(metadata: TableMetadata, batches: Iterable[pa.RecordBatch], extra_fields=(),
                    properties: dict[str, str] | None = None, io: FileIO | None = None) -> list[DataFile]:
    """``batches`` (rows of the table's columns and ``extra_fields``, in the types a read gives them) written by
    this process as data files for the table's default spec, by the writer the executors run: a file open for
    each partition met (Iceberg Java's fanout writer), rolled at the target size; for a table whose rows need no
    sort (:func:`table_ordering` is :data:`UNSORTED`, which the caller checks)."""
    schema, spec = _written_schema(metadata, extra_fields)
    keys = KeyColumns(schema, spec_keys(spec, PARTITION_PREFIX)) if spec.fields else None
    writer = FileWriter(schema, spec, data_location_of(metadata), dict(properties or metadata.properties),
                        uuid.uuid4().hex[:16], key_columns=keys, io=io)
    return [data_file_from_json(text, spec, metadata.current_schema)
            for out in writer(iter(batches)) for text in out.column(0).to_pylist()]


def _direction(col, f) -> Any:
    if f.direction == "asc":
        return col.asc_nulls_first() if f.null_order == "nulls-first" else col.asc_nulls_last()
    return col.desc_nulls_first() if f.null_order == "nulls-first" else col.desc_nulls_last()
