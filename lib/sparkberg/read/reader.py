"""Tasks to rows: data files read by Spark's native Parquet reader with columns matched by field id,
deletes applied as anti-joins, metadata columns and row lineage added, the filter applied exactly.

Rows are matched to their task by the file path Spark reports (``_metadata.file_path``: a URI,
percent-encoded) normalized the same way as the manifest's path; position deletes and deletion
vectors by (file, ``_metadata.row_index``); equality deletes by null-safe equality on their columns.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Sequence

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as ST

from sparkberg.errors import ValidationError
from sparkberg.io.fileio import FileIO
from sparkberg.expressions.sql import Filter, referenced_names
from sparkberg.planning.entries import PartitionLayout, physical_spark_type
from sparkberg.planning.scan import partition_column
from sparkberg.read.columns import (
    NO_SPARK_READS, empty_frame, ensure_session_conf, name_mapping, read_data_parquet, read_files, read_schema,
    servable, spark_parses, spark_reads,
)
from sparkberg.read.deletecache import delete_cache
from sparkberg.read.equality import apply_equality_deletes, equality_positions
from sparkberg.read.fileids import FileIds
from sparkberg.read.positions import PositionSources, apply_position_deletes, position_scan_filter
from sparkberg.spark.frames import local_dataframe
from sparkberg.spark.tuning import ReadTuning
from sparkberg.spark.types import to_spark_read_field, to_spark_type
from sparkberg.format import types as T
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.values import to_python
from sparkberg.format.metadata_columns import (
    FILE_PATH, LAST_UPDATED_SEQUENCE_NUMBER, LINEAGE_COLUMNS, PARTITION_NAME, READ_COLUMNS, ROW_ID, ROW_POSITION,
    SPEC_ID,
)


def _expression_text(filter: str | Column) -> str:
    """A filter's SQL text: a Column's as PySpark renders it (``Column<'(id = 1)'>``)."""
    if isinstance(filter, str):
        return filter
    text = str(filter)
    m = re.match(r"^Column<'(.*)'>$", text, re.S)
    return m.group(1) if m else text


def identity_values(metadata: TableMetadata, schema: T.Schema, tasks: list, layout: PartitionLayout
                    ) -> dict[str, dict[int, Any]]:
    """File path -> {source field id: value (a Python date, datetime...)} of the identity partition fields of each
    task's spec: what a file without the column holds in it (spec "Column Projection"; files imported from Hive
    tables lack them). Empty for a table without a name mapping: only such tables hold files written without
    Iceberg, and looking for the columns in every footer would cost every read a job."""
    if not name_mapping(metadata):
        return {}
    top = {f.field_id: f.field_type for f in schema.fields}
    by_spec: dict[int, list[tuple[int, str]]] = {}  # spec id -> [(source field id, partition slot name)]
    for spec in metadata.partition_specs:
        slots = dict(layout.by_spec.get(spec.spec_id, ()))
        by_spec[spec.spec_id] = [(pf.source_id, layout.slots[slots[pf.field_id]].name) for pf in spec.fields
                                 if str(pf.transform) == "identity" and pf.source_id in top and pf.field_id in slots]
    out: dict[str, dict[int, Any]] = {}
    for t in tasks:
        pairs = by_spec.get(t["spec_id"])
        if pairs:
            values = t["partition"] if isinstance(t["partition"], dict) else t["partition"].asDict()
            out[t["file_path"]] = {source_id: to_python(top[source_id], values[name]) for source_id, name in pairs}
    return out


def read_tasks(spark, metadata: TableMetadata, schema: T.Schema, tasks: list, layout: PartitionLayout,
               columns: Sequence[str] | None, filter: str | Filter | Column | None, io: FileIO | None = None
               ) -> DataFrame:
    """Rows of the given scan tasks (collected rows of the plan), projected to ``columns``; ``io``: the table's
    FileIO, which reads data files on object stores."""
    if isinstance(filter, Filter):  # (Spark evaluates its text)
        filter = filter.text
    ensure_session_conf(spark)
    tuning = ReadTuning.of(spark)
    if not spark_parses(spark, metadata):
        tuning = dataclasses.replace(tuning, spark_file_systems=NO_SPARK_READS)
    v3 = metadata.format_version >= 3
    wanted = list(columns) if columns is not None else [f.name for f in schema.fields]
    _check_columns(wanted, schema, metadata.format_version)
    schema, wanted = servable(schema, wanted, named=columns is not None)
    all_fields = {}
    for s in metadata.schemas:
        all_fields.update(s.index_by_id())
    hidden = _hidden_equality_fields(schema, tasks, all_fields)
    lineage = [ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER] if v3 else []
    spark_schema = read_schema(schema, hidden + lineage)
    output_schema = ST.StructType([to_spark_read_field(f) for f in schema.fields])
    if not tasks:
        return _select(empty_frame(spark, _with_metadata(output_schema, layout, v3)), wanted)
    fields = list(schema.fields) + hidden + lineage
    has_deletes = any(t["deletes"] for t in tasks)
    # rows are matched to their task (a join on their file) only for deletes and metadata columns
    # metadata columns come from the task of each row's file (a join on its file id)
    filtered_by = referenced_names(_expression_text(filter)) if filter is not None else frozenset()
    needs_info = any(c in READ_COLUMNS and c != ROW_POSITION.name for c in wanted) or \
        bool(filtered_by & set(READ_COLUMNS))
    per_file = has_deletes or needs_info  # rows matched to their file, by its name or its path
    ids = FileIds([t["file_path"] for t in tasks], tuning.name_ids_max_files) if per_file else None

    mapping = name_mapping(metadata, nested=True)
    identity = identity_values(metadata, schema, tasks, layout)

    def read(some: list, matched: bool = True, row_filter: Column | None = None) -> DataFrame:
        """The rows of ``some`` tasks; ``matched``: each with its file's id (``_file_id``, in a per-file read),
        else with ``_pos`` only when the read wants it; ``row_filter``: applied to the Parquet relations."""
        matched = matched and per_file
        keys = True if matched else "pos" if "_pos" in wanted else False
        file_ids = ids if matched else None
        return read_files(spark, fields, [(t["file_format"], t["file_path"]) for t in some], "data",
                          parquet=lambda paths: read_data_parquet(spark, metadata, schema, spark_schema, paths,
                                                              keys=keys, file_ids=file_ids, row_filter=row_filter,
                                                              identity=identity),
                          mapping=mapping, file_ids=file_ids, keys=keys, io=io,
                          spark_schemes=tuning.spark_file_systems, identity=identity)

    # the columns of an unmatched read, in order: the read schema's, and _pos when wanted
    plain_columns = spark_schema.fieldNames() + (["_pos"] if "_pos" in wanted else [])
    if not per_file:
        rows = read(tasks)
        if filter is not None:
            rows = filtered(rows, filter)
        return rows if wanted == plain_columns else _select(rows, wanted)
    # equality deletes found here as the positions they delete, where they can be (None: joined by Spark)
    derived = equality_positions(metadata, tasks, ids.ids, all_fields, delete_cache(spark), tuning, io) \
        if has_deletes else {}
    if derived:
        tasks = _without_idle_deletes(tasks, ids.ids, derived)
    rows, columns_now = _rows_with_deletes(spark, read, tasks, ids.ids, derived, needs_info, plain_columns, tuning,
                                           lambda part, some, some_ids: apply_equality_deletes(
                                               spark, metadata, part, some, some_ids, schema, all_fields, hidden,
                                               tuning, io), io)
    plain = [t for t in tasks if not t["deletes"]]
    if plain:  # rows no delete applies to are matched to their file only for metadata columns
        part = read(plain, matched=needs_info)
        if rows is None:
            rows, columns_now = part, None if needs_info else plain_columns
        elif needs_info:
            rows = rows.unionByName(part, allowMissingColumns=True)
        elif columns_now == plain_columns:
            rows = rows.union(part)
        else:  # (deletes applied, the rows need no match to their file: both sides take the plain columns)
            rows, columns_now = _select(rows, plain_columns).union(part), plain_columns
    if needs_info:
        rows = _with_task_columns(spark, rows, tasks, ids.ids, layout, set(wanted) | filtered_by, v3)
    if filter is not None:
        rows = filtered(rows, filter)
    return rows if wanted == columns_now else _select(rows, wanted)


# PySpark 4's loggers that print an analysis error's query context, with the JVM's stack, as it raises the error
_CONTEXT_LOGGERS = ("DataFrameQueryContextLogger", "SQLQueryContextLogger")


def filtered(rows: DataFrame, filter: str | Column) -> DataFrame:
    """``rows.filter(filter)``; a filter Spark cannot apply to the table's rows (an unknown column, a type that
    does not compare) is a :class:`ValidationError` naming the filter and Spark's reason, in place of Spark's
    error and the copy of it, with the JVM's stack, that PySpark 4 logs (on a classic session, where Spark
    analyses the filter here; Spark Connect analyses it when the rows are read)."""
    quieted = []
    try:
        from pyspark.logger import PySparkLogger  # (PySpark 4; 3.5 logs no query context)
    except ImportError:
        PySparkLogger = None
    for name in _CONTEXT_LOGGERS if PySparkLogger is not None else ():
        # (made as PySpark makes them: a plain Logger of that name would break PySpark's calls to it)
        logger = PySparkLogger.getLogger(name)
        if not logger.disabled:
            logger.disabled = True
            quieted.append(logger)
    try:
        return rows.filter(filter)
    except AnalysisException as e:
        reason = str(e).split(";\n", 1)[0].split("\n", 1)[0]
        shown = filter if isinstance(filter, str) else str(filter)
        raise ValidationError(f"filter {shown!r} cannot be applied to the table's rows: {reason}") from None
    finally:
        for logger in quieted:
            logger.disabled = False


def _rows_with_deletes(spark, read: Callable[..., DataFrame], tasks: list, ids: list[int], derived: dict | None,
                       needs_info: bool, plain_columns: list[str], tuning: ReadTuning,
                       apply_equality: Callable[[DataFrame, list, list[int]], DataFrame], io: FileIO | None = None
                       ) -> tuple[DataFrame | None, list[str] | None]:
    """The rows of the tasks deletes apply to, the deletes applied (None when no delete applies), and their
    columns in order where known here. ``read(tasks, matched=..., row_filter=...)`` reads files; ``derived``: the
    positions equality deletes were found to delete (None: Spark joins them, ``apply_equality``).

    Only the rows of files that deletes apply to are matched against them, and only those of files that equality
    deletes apply to against those: each kind of file is read apart and the parts unioned. Deletes that are all
    by position (equality deletes found as positions included), in Parquet files, for a read without metadata
    columns, become a filter of the Parquet scan itself where they can (:func:`position_scan_filter`)."""
    def has_eq(t) -> bool:
        return derived is None and any(d["content"] == 2 for d in t["deletes"])

    def pick(keep) -> tuple[list, list[int]]:
        ks = [k for k, t in enumerate(tasks) if keep(t)]
        return [tasks[k] for k in ks], [ids[k] for k in ks]

    rows, columns_now = None, None
    scan_filter, sources = None, None
    if not needs_info and derived is not None:  # (then every file with deletes is matched by position alone)
        some, some_ids = pick(lambda t: t["deletes"])
        # (a filter of Spark's own Parquet scan: not for files sparkberg's Arrow reader reads, on object stores)
        if some and all(t["file_format"].lower() == "parquet"
                        and spark_reads(t["file_path"], tuning.spark_file_systems) for t in some):
            sources = PositionSources.of(some, some_ids, derived, tuning, io)
            scan_filter = position_scan_filter(spark, some, some_ids, sources)
        if scan_filter is not None:
            return read(some, matched=False, row_filter=scan_filter), plain_columns
    deleted_tasks, deleted_ids = [], []
    for equality, (some, some_ids) in ((True, pick(has_eq)), (False, pick(lambda t: t["deletes"] and not has_eq(t)))):
        if some:
            part = read(some)
            if equality:
                part = apply_equality(part, some, some_ids)
            rows = part if rows is None else rows.unionByName(part)
            deleted_tasks, deleted_ids = deleted_tasks + some, deleted_ids + some_ids
    if deleted_tasks:  # position deletes once over both kinds (a delete file may apply to files of each)
        # (the sources the scan filter declined are those of the same files, in the same order)
        sources = sources or PositionSources.of(deleted_tasks, deleted_ids, derived, tuning, io)
        rows = apply_position_deletes(spark, rows, sources)
    return rows, columns_now


def _check_columns(wanted: Sequence[str], schema: T.Schema, format_version: int) -> None:
    """Every column asked for is the schema's or a metadata column of this format version."""
    for c in wanted:
        if c in READ_COLUMNS:
            if c in LINEAGE_COLUMNS and format_version < 3:
                raise ValidationError(f"metadata column {c!r} exists only on v3 tables (this table is "
                                      f"v{format_version})")
        elif schema.as_struct.field_by_name(c) is None:
            raise ValidationError(f"unknown column {c!r}; columns are {[f.name for f in schema.fields]} and the "
                                  f"metadata columns {list(READ_COLUMNS)}")


def _hidden_equality_fields(schema: T.Schema, tasks: list, all_fields: dict[int, T.NestedField]
                            ) -> list[T.NestedField]:
    """The equality delete columns missing from ``schema`` (dropped since), read under hidden names."""
    current_ids = set(schema.index_by_id())
    eq_ids = sorted({i for t in tasks for d in t["deletes"] if d["content"] == 2 for i in d["equality_ids"] or ()})
    return [T.NestedField(i, f"_eq_{i}", all_fields[i].field_type) for i in eq_ids
            if i not in current_ids and i in all_fields]


def _without_idle_deletes(tasks: list, ids: list[int], derived: dict[int, Any]) -> list:
    """The tasks, without the equality deletes of the data files they were found to delete no row of (where no
    other delete applies to them)."""
    untouched = {i for i, p in derived.items() if not len(p)}
    return [dict(t.asDict() if hasattr(t, "asDict") else t, deletes=[])
            if i in untouched and all(d["content"] == 2 for d in t["deletes"]) else t for i, t in zip(ids, tasks)]


def _with_task_columns(spark, rows: DataFrame, tasks: list, ids: list[int], layout: PartitionLayout,
                       used: set[str], v3: bool) -> DataFrame:
    """Rows (with their file's id, ``_file_id``) with the metadata columns of ``used`` (what the read returns or
    filters by) that come from their file's task: ``_file``, ``_spec_id``, ``_partition`` and, on v3 tables,
    the inherited ``_row_id`` and ``_last_updated_sequence_number`` (spec "Row Lineage")."""
    lineage = [c for c in LINEAGE_COLUMNS if v3 and c in used]
    taken = {}  # the columns the rows take from their task: name -> (type, the task's value)
    if FILE_PATH.name in used:
        taken["_file"] = (ST.StringType(), lambda t: t["file_path"])
    if SPEC_ID.name in used:
        taken["_spec_id"] = (ST.IntegerType(), lambda t: t["spec_id"])
    if PARTITION_NAME in used:
        taken["_phys_partition"] = (physical_partition_struct(layout), lambda t: t["partition"])
    if LAST_UPDATED_SEQUENCE_NUMBER.name in lineage:
        taken["_data_seq"] = (ST.LongType(), lambda t: t["data_sequence_number"])
    if lineage:
        taken["_first_row_id"] = (ST.LongType(), lambda t: t["first_row_id"])
    schema = ST.StructType([ST.StructField("_file_id", ST.IntegerType())] +
                           [ST.StructField(name, kind) for name, (kind, _) in taken.items()])
    table = local_dataframe(spark, [(i,) + tuple(value(t) for _, value in taken.values()) for i, t in zip(ids, tasks)],
                            schema)
    rows = rows.join(F.broadcast(table), "_file_id")
    if PARTITION_NAME in used:  # (an unpartitioned table's is an empty struct, which Spark 3.5 cannot encode)
        rows = rows.withColumn(PARTITION_NAME, partition_column(layout, "_phys_partition"))
    if lineage:
        has_id = F.col("_first_row_id").isNotNull()
    if ROW_ID.name in lineage:
        rows = rows.withColumn(ROW_ID.name, F.when(has_id, F.coalesce(F.col(ROW_ID.name), F.col("_first_row_id") +
                                                                     F.col("_pos"))))
    if LAST_UPDATED_SEQUENCE_NUMBER.name in lineage:
        rows = rows.withColumn(LAST_UPDATED_SEQUENCE_NUMBER.name, F.when(has_id, F.coalesce(
            F.col(LAST_UPDATED_SEQUENCE_NUMBER.name), F.col("_data_seq"))))
    return rows


def physical_partition_struct(layout: PartitionLayout) -> ST.StructType:
    """The Spark struct of the layout's physical partition values (as in the entries DataFrame)."""
    if not layout.slots:
        return ST.StructType([ST.StructField("_none", ST.IntegerType())])
    return ST.StructType([ST.StructField(s.name, physical_spark_type(s.field_type)) for s in layout.slots])


def _with_metadata(schema: ST.StructType, layout: PartitionLayout, v3: bool) -> ST.StructType:
    fields = list(schema.fields) + [ST.StructField("_file", ST.StringType()), ST.StructField("_pos", ST.LongType()),
                                    ST.StructField("_spec_id", ST.IntegerType()),
                                    ST.StructField("_partition", _typed_partition(layout))]
    if v3:
        fields += [ST.StructField("_row_id", ST.LongType()),
                   ST.StructField("_last_updated_sequence_number", ST.LongType())]
    return ST.StructType(fields)


def _typed_partition(layout: PartitionLayout) -> ST.StructType:
    if not layout.slots:
        return ST.StructType([])
    return ST.StructType([ST.StructField(s.name, to_spark_type(s.field_type)) for s in layout.slots])


def _select(df: DataFrame, wanted: Sequence[str]) -> DataFrame:
    return df.selectExpr(*["`" + c.replace("`", "``") + "`" for c in wanted])
