"""Scan planning as DataFrame transformations: the data files to read and the delete files that apply.

Pruning happens in three places, each only ever dropping what cannot match:
manifests by their partition summaries (driver: the manifest list is small), entries by the inclusive
projection of the filter through their spec's transforms and by their column metrics (executors, while
decoding). Delete files are matched to data files with joins, by the spec's rules
(spec "Scan Planning"):

- position delete files: same spec and partition, data sequence number <= the delete's, and when the delete
  names a ``referenced_data_file``, only that file; files outside the delete file's ``file_path`` bounds are
  skipped, as Iceberg Java's DeleteFileIndex does;
- deletion vectors: exactly their ``referenced_data_file``; a file with a DV ignores its position delete files;
- equality delete files: data sequence number strictly below the delete's, same spec and partition, or every
  partition when the delete file's spec is unpartitioned (a global delete).

Iceberg Java writes equality deletes one rule at a time; here one ">= rule" serves both by comparing against
``data_sequence_number + 1`` for equality deletes (as Java's DeleteFileIndex uses ``seq - 1``).
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from sparkberg.avro.manifest import MANIFEST_DATA, MANIFEST_DELETES
from sparkberg.expressions.evaluators import manifest_may_match, metrics_may_match
from sparkberg.expressions.predicates import TRUE, AlwaysTrue, Bound
from sparkberg.expressions.projection import inclusive_projection
from sparkberg.io.fileio import FileIO
from sparkberg.errors import ValidationError
from sparkberg.planning.entries import EntryDecoder, PartitionLayout, entries_df, snapshot_manifests
from sparkberg.planning.matching import DeleteIndex
from sparkberg.spark.session import job_description
from sparkberg.spec import types as T
from sparkberg.spec.metadata import TableMetadata
from sparkberg.spec.snapshots import Snapshot

DELETE_STRUCT = ("file_path", "content", "file_format", "equality_ids", "referenced_data_file", "content_offset",
                 "content_size_in_bytes")
PLAN_COLUMNS = ("file_path", "file_format", "spec_id", "partition", "record_count", "file_size_in_bytes",
                "data_sequence_number", "first_row_id", "deletes")


class MetricsFilter:
    """Picklable metrics pruning of data files (executors)."""

    def __init__(self, pred: Bound, types: dict[int, T.IcebergType]):
        self.pred = pred
        self.types = types

    def __call__(self, d) -> bool:
        if d.content != 0:
            return True
        return metrics_may_match(self.pred, self.types, d.record_count, d.value_counts, d.null_value_counts,
                                 d.nan_value_counts, d.lower_bounds, d.upper_bounds)


LOCAL_MAX_BYTES = "sparkberg.planning.local-max-bytes"
LOCAL_MAX_BYTES_DEFAULT = 16 * 1024 * 1024


class ScanPlan:
    """What a scan reads: the snapshot, the partition layout, and the tasks, as a DataFrame (distributed
    planning) or as rows planned on the driver (small tables), each available as the other."""

    def __init__(self, spark, snapshot: Snapshot | None, layout: PartitionLayout, tasks: DataFrame | None = None,
                 rows: list[dict] | None = None):
        self.spark = spark
        self.snapshot = snapshot
        self.layout = layout
        self._tasks = tasks
        self._rows = rows

    @property
    def is_local(self) -> bool:
        return self._rows is not None

    @property
    def tasks(self) -> DataFrame:
        if self._tasks is None:
            self._tasks = self.spark.createDataFrame(self._rows, _tasks_schema(self.layout))
        return self._tasks

    def rows(self) -> list:
        if self._rows is None:
            self._rows = self._tasks.collect()
        return self._rows


def _partition_filters(metadata: TableMetadata, bound: Bound) -> dict[int, Bound]:
    schema = metadata.current_schema
    return {spec.spec_id: inclusive_projection(bound, spec, schema) for spec in metadata.partition_specs}


def prune_manifests(metadata: TableMetadata, manifests, filters: dict[int, Bound]):
    """Manifests whose partition summaries may hold matching partitions (driver side)."""
    out = []
    schema = metadata.current_schema
    for m in manifests:
        f = filters.get(m.partition_spec_id, TRUE)
        if isinstance(f, AlwaysTrue):
            out.append(m)
            continue
        ptype = metadata.spec(m.partition_spec_id).partition_type(schema)
        if manifest_may_match(f, ptype, m.partitions):
            out.append(m)
    return out


def plan(spark, metadata: TableMetadata, io: FileIO, snapshot: Snapshot | None, bound: Bound = TRUE,
         mode: str = "auto", label: str = "") -> ScanPlan:
    """The scan tasks of a snapshot: one row per data file with the delete files that apply to it.

    ``mode`` "distributed" decodes manifests on the executors and matches deletes with joins; "local" does
    the same on the driver; "auto" goes local when the manifests to read are smaller than the table
    property ``sparkberg.planning.local-max-bytes`` (16 MiB by default), so small tables pay for no Spark job.
    Distributed, the delete files are decoded once, in a job of their own (``DELETE-PLANNING <label>``), and
    kept on the executors (a local checkpoint) for the joins that match them to data files.
    """
    layout = PartitionLayout(metadata)
    if snapshot is None:
        return ScanPlan(spark, None, layout, rows=[])
    filters = _partition_filters(metadata, bound)
    manifests = prune_manifests(metadata, snapshot_manifests(io, snapshot), filters)
    data_manifests = [m for m in manifests if m.content == MANIFEST_DATA]
    delete_manifests = [m for m in manifests if m.content == MANIFEST_DELETES]
    if not data_manifests:
        return ScanPlan(spark, snapshot, layout, rows=[])
    types = {f.field_id: f.field_type for s in metadata.schemas for f in s.index_by_id().values()}
    types.update({f.field_id: f.field_type for f in metadata.current_schema.index_by_id().values()})
    metrics = None if isinstance(bound, AlwaysTrue) else MetricsFilter(bound, types)
    data_decoder = EntryDecoder(layout, with_metrics=False, partition_filters=filters, metrics_filter=metrics)
    delete_decoder = EntryDecoder(layout, with_metrics=False, partition_filters=filters, with_path_bounds=True)
    unpartitioned = [s.spec_id for s in metadata.partition_specs if s.is_unpartitioned]
    if mode == "local" or (mode == "auto" and sum(m.manifest_length for m in manifests) <= _local_max(metadata)):
        rows = _plan_locally(io, data_manifests, delete_manifests, data_decoder, delete_decoder, set(unpartitioned))
        return ScanPlan(spark, snapshot, layout, rows=rows)
    data = (entries_df(spark, data_manifests, data_decoder)
            .filter(F.col("content") == 0)
            .select("file_path", "file_format", "spec_id", "partition", "record_count", "file_size_in_bytes",
                    F.col("sequence_number").alias("data_sequence_number"), "first_row_id",
                    "_manifest_ordinal", "_entry_ordinal"))
    if not delete_manifests:
        tasks = data.withColumn("deletes", F.array().cast(_deletes_type()))
    else:
        deletes = entries_df(spark, delete_manifests, delete_decoder).filter(F.col("content") != 0)
        try:
            with job_description(spark, f"DELETE-PLANNING {label}".strip()):
                deletes = deletes.localCheckpoint(eager=True)
        except Exception:  # noqa: BLE001 - a session without checkpoints decodes them within the joins
            pass
        tasks = attach_deletes(data, deletes, unpartitioned)
    tasks = tasks.orderBy("_manifest_ordinal", "_entry_ordinal").drop("_manifest_ordinal", "_entry_ordinal")
    return ScanPlan(spark, snapshot, layout, tasks=tasks.select(*PLAN_COLUMNS))


def _local_max(metadata: TableMetadata) -> int:
    raw = metadata.properties.get(LOCAL_MAX_BYTES)
    try:
        return LOCAL_MAX_BYTES_DEFAULT if raw is None else int(raw)
    except ValueError:
        raise ValidationError(f"table property {LOCAL_MAX_BYTES} must be an integer, got {raw!r}") from None


def _plan_locally(io: FileIO, data_manifests, delete_manifests, data_decoder: EntryDecoder,
                  delete_decoder: EntryDecoder, unpartitioned: set[int]) -> list[dict]:
    """The distributed plan's rows, computed on the driver (same decoding, same rules, same order)."""
    def pkey(row: dict) -> tuple:
        return tuple(row["partition"].items())

    deletes = []
    for i, mf in enumerate(delete_manifests):
        for r in delete_decoder.decode(mf, i, io.read(mf.manifest_path)):
            if r["content"] != 0:
                deletes.append((r["spec_id"], pkey(r), r["sequence_number"], {k: r[k] for k in DELETE_STRUCT},
                                (r["_path_lower"], r["_path_upper"]) if "_path_lower" in r else None))
    index = DeleteIndex(deletes, unpartitioned)
    out = []
    for i, mf in enumerate(data_manifests):
        for r in data_decoder.decode(mf, i, io.read(mf.manifest_path)):
            if r["content"] != 0:
                continue
            out.append({
                "file_path": r["file_path"], "file_format": r["file_format"], "spec_id": r["spec_id"],
                "partition": r["partition"], "record_count": r["record_count"],
                "file_size_in_bytes": r["file_size_in_bytes"], "data_sequence_number": r["sequence_number"],
                "first_row_id": r["first_row_id"],
                "deletes": index.for_file(r["spec_id"], pkey(r), r["sequence_number"], r["file_path"]),
            })
    return out


def _tasks_schema(layout: PartitionLayout) -> str:
    return (f"file_path string, file_format string, spec_id int, partition {layout.spark_ddl()}, "
            f"record_count bigint, file_size_in_bytes bigint, data_sequence_number bigint, first_row_id bigint, "
            f"deletes {_deletes_type()}")


def _deletes_type() -> str:
    return ("array<struct<file_path: string, content: int, file_format: string, equality_ids: array<int>, "
            "referenced_data_file: string, content_offset: bigint, content_size_in_bytes: bigint>>")


def attach_deletes(data: DataFrame, deletes: DataFrame, unpartitioned_spec_ids: list[int]) -> DataFrame:
    """Each data file with the array of delete files that apply to it (joins, by the spec's rules)."""
    d = deletes.select(
        F.col("spec_id").alias("_d_spec"), F.col("partition").alias("_d_partition"),
        F.col("sequence_number").alias("_d_seq"), F.col("content").alias("_d_content"),
        F.col("file_format").alias("_d_format"), F.col("referenced_data_file").alias("_d_ref"),
        *([F.col("_path_lower").alias("_d_lower"), F.col("_path_upper").alias("_d_upper")]
          if "_path_lower" in deletes.columns else [F.lit(None).cast("string").alias("_d_lower"),
                                                    F.lit(None).cast("string").alias("_d_upper")]),
        F.struct(*[F.col(c) for c in DELETE_STRUCT]).alias("_delete"))
    a = data.select(F.col("file_path").alias("_a_path"), F.col("spec_id").alias("_a_spec"),
                    F.col("partition").alias("_a_partition"), F.col("data_sequence_number").alias("_a_seq"))
    is_dv = (F.col("_d_content") == 1) & (F.col("_d_format") == "puffin")
    same_partition = (F.col("_a_spec") == F.col("_d_spec")) & F.col("_a_partition").eqNullSafe(F.col("_d_partition"))
    positions = d.filter((F.col("_d_content") == 1) & ~is_dv)
    # a position delete file whose file_path bounds exclude the data file cannot apply (as Java's DeleteFileIndex)
    in_bounds = ((F.col("_d_lower").isNull() | (F.col("_a_path") >= F.col("_d_lower"))) &
                 (F.col("_d_upper").isNull() | (F.col("_a_path") <= F.col("_d_upper"))))
    pos_match = a.join(positions, same_partition & (F.col("_a_seq") <= F.col("_d_seq")) & in_bounds & (
        F.col("_d_ref").isNull() | (F.col("_d_ref") == F.col("_a_path"))))
    dv_match = a.join(d.filter(is_dv), (F.col("_d_ref") == F.col("_a_path")) & (F.col("_a_seq") <= F.col("_d_seq")))
    equality = d.filter(F.col("_d_content") == 2)
    is_global = F.col("_d_spec").isin(unpartitioned_spec_ids) if unpartitioned_spec_ids else F.lit(False)
    eq_part = a.join(equality.filter(~is_global), same_partition & (F.col("_a_seq") < F.col("_d_seq")))
    eq_global = a.join(F.broadcast(equality.filter(is_global)), F.col("_a_seq") < F.col("_d_seq"))
    cols = [F.col("_a_path"), F.col("_delete"), is_dv.alias("_is_dv")]
    matches = (pos_match.select(*cols).unionByName(dv_match.select(*cols))
               .unionByName(eq_part.select(*cols)).unionByName(eq_global.select(*cols)))
    grouped = matches.groupBy("_a_path").agg(F.collect_list("_delete").alias("_deletes"),
                                             F.max(F.col("_is_dv").cast("int")).alias("_has_dv"))
    # a DV replaces the position delete files of its data file (spec "Deletion Vectors")
    kept = F.when(F.col("_has_dv") == 1, F.filter("_deletes", lambda x: ~(
        (x["content"] == 1) & (x["file_format"] != "puffin")))).otherwise(F.col("_deletes"))
    grouped = grouped.select("_a_path", F.array_sort(kept).alias("deletes"))
    out = data.join(grouped, data["file_path"] == grouped["_a_path"], "left").drop("_a_path")
    return out.withColumn("deletes", F.coalesce(F.col("deletes"), F.array().cast(_deletes_type())))


def partition_column(layout: PartitionLayout, col: Column | str = "partition") -> Column:
    """The physical partition struct as Iceberg's Spark types (dates as DATE, timestamps as TIMESTAMP...)."""
    c = F.col(col) if isinstance(col, str) else col
    if not layout.slots:
        return F.struct().alias("partition") if hasattr(F, "struct") else c
    fields = []
    for s in layout.slots:
        v = c[s.name]
        fields.append(physical_to_spark(v, s.field_type).alias(s.name))
    return F.struct(*fields)


def physical_to_spark(v: Column, t: T.IcebergType) -> Column:
    """A Column of Iceberg physical values (int days, long micros...) as the Spark type Iceberg maps ``t`` to."""
    if t == T.DATE:
        return F.date_from_unix_date(v)
    if t == T.TIMESTAMPTZ:
        return F.timestamp_micros(v)
    if t == T.TIMESTAMP:
        return F.expr("TIMESTAMP_NTZ'1970-01-01 00:00:00'") + F.make_dt_interval(
            secs=(v.cast("decimal(20,0)") / F.lit(1_000_000)).cast("decimal(18,6)"))
    return v
