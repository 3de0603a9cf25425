"""Scan planning as DataFrame transformations: the data files to read and the delete files that apply.

Pruning happens in three places, each only ever dropping what cannot match:
manifests by their partition summaries (driver: the manifest list is small), entries by the inclusive
projection of the filter through their spec's transforms and by their column metrics (executors, while
decoding). Delete files are matched to data files where the data entries are decoded, by one index of the
scan's delete files and the spec's rules (:class:`~sparkberg.planning.deletes.DeleteMatcher`).
"""
from __future__ import annotations

import functools
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as ST

from sparkberg.arrays import empty_table, from_bools, int_values
from sparkberg.avro.cache import manifest_cache
from sparkberg.avro.columnar import ManifestListColumns
from sparkberg.avro.decode import expect
from sparkberg.expressions.evaluators import (
    INTEGRAL_TYPES, manifest_evaluator, manifest_mask, metrics_mask, metrics_may_match, predicate_field_ids,
)
from sparkberg.expressions.predicates import TRUE, AlwaysTrue, Bound
from sparkberg.expressions.projection import inclusive_projection
from sparkberg.io.fileio import FileIO
from sparkberg.planning.deletes import DELETE_STRUCT, DeleteMatcher, eq_columns
from sparkberg.planning.entries import (
    EntryDecoder, PartitionLayout, coalesced, entries_df, known_entries, manifest_groups, manifests_df,
    manifests_of, physical_spark_type, snapshot_manifest_table,
)
from sparkberg.spark.frames import arrow_dataframe, collect_arrow, counted_dataframe, map_in_arrow
from sparkberg.spark.session import job_description
from sparkberg.spark.settings import session_conf
from sparkberg.spark.tuning import (
    DATA_PLANNING_MODE, DELETE_PLANNING_MODE, LOCAL_MAX_BYTES, LOCAL_MAX_BYTES_DEFAULT, LOCAL_MAX_DELETE_ENTRIES,
    LOCAL_MAX_DELETE_ENTRIES_DEFAULT, LOCAL_MAX_FILES, LOCAL_MAX_FILES_DEFAULT, SCOPED_PAIRS_MAX,
    SCOPED_PAIRS_MAX_DEFAULT, int_property, planning_mode,
)
from sparkberg.format import types as T
from sparkberg.format.manifests import MANIFEST_DATA, MANIFEST_DELETES, ManifestFile
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.snapshots import Snapshot
from sparkberg.threads import DRIVER_THREADS

PLAN_COLUMNS = ("file_path", "file_format", "spec_id", "partition", "record_count", "file_size_in_bytes",
                "data_sequence_number", "first_row_id", "deletes")


class MetricsFilter:
    """Picklable metrics pruning of data files (executors)."""

    def __init__(self, pred: Bound, types: dict[int, T.IcebergType]):
        self.pred = pred
        self.types = types
        # the fields whose metrics it reads (None: it cannot tell), so decoders keep only those of the maps
        self.field_ids = predicate_field_ids(pred)

    def mask(self, content, record_counts, metrics):
        """:meth:`__call__` for many files at once (numpy bools), or None where only file by file works."""
        import numpy as np
        mask = metrics_mask(self.pred, self.types, record_counts, metrics)
        return None if mask is None else mask | (np.asarray(content) != 0)

    def __call__(self, d) -> bool:
        if d.content != 0:
            return True
        return metrics_may_match(self.pred, self.types, d.record_count, d.value_counts, d.null_value_counts,
                                 d.nan_value_counts, d.lower_bounds, d.upper_bounds)


# what planning decodes of data and delete entries
DATA_ENTRY_COLUMNS = ("_manifest_ordinal", "_entry_ordinal", "content", "file_path", "file_format", "spec_id",
                      "partition", "record_count", "file_size_in_bytes", "sequence_number", "first_row_id")
DELETE_ENTRY_COLUMNS = ("content", "file_path", "file_format", "spec_id", "partition", "sequence_number",
                        "equality_ids", "referenced_data_file", "content_offset", "content_size_in_bytes",
                        "record_count",
                        "_path_lower", "_path_upper")


class ScanPlan:
    """What a scan reads: the snapshot, the partition layout, and the tasks, as a DataFrame (distributed
    planning) or as an Arrow table planned on the driver (small tables and selective scans), each available as
    the other and as rows."""

    def __init__(self, spark, snapshot: Snapshot | None, layout: PartitionLayout, tasks: DataFrame | None = None,
                 table: pa.Table | None = None):
        self.spark = spark
        self.snapshot = snapshot
        self.layout = layout
        self._tasks = tasks
        self._table = table
        self._rows: list | None = None

    @property
    def is_local(self) -> bool:
        return self._table is not None

    @property
    def tasks(self) -> DataFrame:
        if self._tasks is None:
            self._tasks = _local_dataframe(self.spark, self._table, self.rows, self.layout)
        return self._tasks

    def rows(self) -> list:
        """The tasks on the driver: dicts (planned here) or Rows (collected), with the plan's columns."""
        if self._rows is None:
            self._rows = self._table.to_pylist() if self._table is not None else self._tasks.collect()
        return self._rows

    def arrow(self) -> pa.Table:
        """The tasks on the driver as an Arrow table of the plan's columns (collected from the executors when
        the plan is distributed)."""
        return self._table if self._table is not None else collect_arrow(self.tasks, _tasks_arrow_schema(self.layout))

    def files(self) -> DataFrame:
        """The tasks as :meth:`Table.plan_files` returns them: the partition struct in Iceberg's Spark types
        (:func:`partition_column`). A plan made on the driver becomes that DataFrame straight from its Arrow
        table, the partition values typed there (no projection for Spark to analyse), when it is first used, and
        counts its rows without a Spark job (:func:`~sparkberg.spark.frames.counted_dataframe`)."""
        if self._table is None:
            return self._typed(self.tasks)
        if self.layout.slots:
            return counted_dataframe(self.spark, self._typed_table_dataframe, self._table.num_rows)
        return counted_dataframe(self.spark, lambda: self._typed(self.tasks), self._table.num_rows)

    def _typed_table_dataframe(self) -> DataFrame:
        """The plan's Arrow table as a DataFrame, its partition values typed on the driver (made on first use:
        a count needs none of it)."""
        table = self._table.set_column(PLAN_COLUMNS.index("partition"), "partition",
                                       typed_partition(self.layout, self._table.column("partition")))
        return arrow_dataframe(self.spark, table, tasks_struct(self.layout, typed=True), lambda: table.to_pylist())

    def _typed(self, tasks: DataFrame) -> DataFrame:
        """``tasks`` with the partition struct in Iceberg's Spark types."""
        try:
            return tasks.withColumn("partition", partition_column(self.layout, F.col("partition")))
        except Exception:  # noqa: BLE001 - Spark 3.5 cannot encode the empty struct of an unpartitioned table
            if self.layout.slots:
                raise
            return tasks  # its placeholder struct<_none: int>, always null


def _field_types(metadata: TableMetadata) -> dict[int, T.IcebergType]:
    """Every field id's type, the current schema's where schemas differ (a promoted column)."""
    types = {f.field_id: f.field_type for s in metadata.schemas for f in s.index_by_id().values()}
    types.update({f.field_id: f.field_type for f in metadata.current_schema.index_by_id().values()})
    return types


def _pruning(spark, metadata: TableMetadata, io: FileIO, snapshot: Snapshot, bound: Bound
             ) -> tuple[dict[int, Bound], Any, list[ManifestFile], MetricsFilter | None]:
    """What a scan of ``bound`` at ``snapshot`` prunes with (:func:`plan`, :func:`planned_metrics`): each spec's
    partition filter, the session's manifest cache, the manifests whose partition summaries may match, and the
    metrics filter (None: no filter)."""
    filters = _partition_filters(metadata, bound)
    cache = manifest_cache(functools.partial(session_conf, spark))
    manifests = prune_manifests(metadata, snapshot_manifest_table(io, snapshot, remember=cache is not None), filters)
    metrics = None if isinstance(bound, AlwaysTrue) else MetricsFilter(bound, _field_types(metadata))
    return filters, cache, manifests, metrics


def _partition_filters(metadata: TableMetadata, bound: Bound) -> dict[int, Bound]:
    schema = metadata.current_schema
    return {spec.spec_id: inclusive_projection(bound, spec, schema) for spec in metadata.partition_specs}


def prune_manifests(metadata: TableMetadata, listing: ManifestListColumns, filters: dict[int, Bound]
                    ) -> list[ManifestFile]:
    """The manifests of a manifest list's columns whose partition summaries may hold matching partitions
    (driver side): each spec's manifests evaluated at once (:func:`manifest_mask`); manifest by manifest where
    that cannot be vectorized, or where the list was decoded into objects already (a short list, read by the
    reference decoder: evaluating a few objects costs a tenth of building their columns). ManifestFile objects
    are built for the manifests kept only."""
    spec_ids = listing.column("partition_spec_id")
    keep = np.ones(len(listing), bool)
    schema = metadata.current_schema
    for spec_id in np.unique(spec_ids).tolist():
        f = filters.get(spec_id, TRUE)
        if isinstance(f, AlwaysTrue):
            continue
        rows = np.flatnonzero(spec_ids == spec_id)
        ptype = metadata.spec(spec_id).partition_type(schema)
        mask = None if listing.decoded_as_objects else \
            manifest_mask(f, ptype, len(rows), lambda k: listing.summaries(rows, k))
        if mask is None:
            may_match = manifest_evaluator(f, ptype)
            mask = [may_match(m.partitions) for m in listing.manifests(rows)]
        keep[rows] = mask
    return listing.manifests(np.flatnonzero(keep))


def plan(spark, metadata: TableMetadata, io: FileIO, snapshot: Snapshot | None, bound: Bound = TRUE,
         mode: str | None = None, label: str = "") -> ScanPlan:
    """The scan tasks of a snapshot: one row per data file with the delete files that apply to it.

    ``mode`` (else the table property ``read.data-planning-mode``, else "auto"; :mod:`sparkberg.spark.tuning`):
    "distributed" decodes the data manifests on the executors; "local" does the same on the driver; "auto" goes
    local when the manifests to read are smaller than the table property ``sparkberg.planning.local-max-bytes``
    and list at most ``sparkberg.planning.local-max-files`` entries, so small tables and selective scans pay for
    no Spark job.
    Delete files are decoded first (as ``read.delete-planning-mode`` says: on the driver, or in a job of their
    own, ``DELETE-PLANNING <label>``; "auto": on the driver up to ``sparkberg.planning.local-max-delete-entries``
    manifest entries, and by the planning tasks of a distributed plan without equality deletes), indexed on the
    driver (:class:`DeleteMatcher`, as Iceberg Java's ``DeleteFileIndex``) and sent with the data manifests'
    decoder, which attaches to each data file the deletes that apply to it as it decodes: one pass over the data
    manifests, no join, no shuffle, the manifest list's order kept. A distributed plan without equality deletes
    leaves the delete manifests to the executors: each task decodes and indexes those whose partitions overlap
    its data manifests' (:class:`ScopedTaskDecoder`, :func:`overlapping_delete_manifests`), so the driver
    decodes none before the job starts.
    Manifests are decoded into Arrow columns (:mod:`sparkberg.avro.columnar`), kept decoded between scans when
    the session enables the manifest cache (:mod:`sparkberg.avro.cache`), only the columns planning needs
    leave the executors, and metrics pruning runs a column at a time where it can.
    """
    layout = PartitionLayout(metadata)
    if snapshot is None:
        return ScanPlan(spark, None, layout, table=empty_table(_tasks_arrow_schema(layout)))
    filters, cache, manifests, metrics = _pruning(spark, metadata, io, snapshot, bound)
    data_manifests = [m for m in manifests if m.content == MANIFEST_DATA]
    delete_manifests = [m for m in manifests if m.content == MANIFEST_DELETES]
    if not data_manifests:
        return ScanPlan(spark, snapshot, layout, table=empty_table(_tasks_arrow_schema(layout)))
    # (data files' metrics maps hold an item per column: read by key where they are wide. Delete files' maps
    # hold a few columns' items whatever the table: read whole)
    metrics_columns = sum(1 for f in metadata.current_schema.index_by_id().values() if f.field_type.is_primitive)
    # equality delete files are pruned by comparing their column stats with the data file's (as Iceberg Java):
    # delete entries carry the stats of their equality columns, data entries those of every equality column
    # the scan's equality deletes use, once known
    may_have_eq = bool(delete_manifests) and snapshot.summary.get("total-equality-deletes") != "0"
    schema_eq_types, required, prunable = eq_columns(metadata.current_schema) if may_have_eq else ({}, None, None)

    def data_decoder(eq_ids) -> EntryDecoder:
        return EntryDecoder(layout, with_metrics=False, partition_filters=filters, metrics_filter=metrics,
                            columns=DATA_ENTRY_COLUMNS, eq_types={i: schema_eq_types[i] for i in eq_ids
                                                                  if i in schema_eq_types}, cache=cache,
                            metrics_columns=metrics_columns, io=io)
    delete_decoder = EntryDecoder(layout, with_metrics=False, partition_filters=filters, with_path_bounds=True,
                                  columns=DELETE_ENTRY_COLUMNS, eq_types=schema_eq_types, cache=cache, io=io)
    unpartitioned = {s.spec_id for s in metadata.partition_specs if s.is_unpartitioned}
    mode = planning_mode(metadata, DATA_PLANNING_MODE, mode)
    delete_mode = planning_mode(metadata, DELETE_PLANNING_MODE)
    local = mode == "local" or (mode == "auto" and _small_enough(metadata, manifests))
    if not local and delete_manifests and not may_have_eq and delete_mode != "local" and \
            len(data_manifests) * len(delete_manifests) <= int_property(metadata, SCOPED_PAIRS_MAX,
                                                                        SCOPED_PAIRS_MAX_DEFAULT):
        # no equality deletes: each data manifest's decoder decodes (and indexes) only the delete manifests whose
        # partitions overlap its own, on the executors, so the driver decodes no delete manifest before the job
        tasks = ScopedTaskDecoder(data_decoder(()), delete_decoder, delete_manifests, unpartitioned, layout,
                                  overlapping_delete_manifests(metadata, data_manifests, delete_manifests))
        return ScanPlan(spark, snapshot, layout, tasks=map_in_arrow(
            manifests_df(spark, data_manifests), tasks, tasks_struct(layout)))
    # the delete files are indexed on the driver and go with the data manifests' decoder, which attaches them to
    # the data entries it decodes (on the executors, or here): one pass over the data manifests
    if not delete_manifests:
        deletes = empty_table(delete_decoder.schema)
    elif delete_mode == "local" or (delete_mode == "auto" and (
            local or _entries(delete_manifests) <= int_property(metadata, LOCAL_MAX_DELETE_ENTRIES,
                                                                LOCAL_MAX_DELETE_ENTRIES_DEFAULT))):
        here = [*delete_manifests, *(data_manifests if local else ())]  # (all decoded here)
        expect(_entries(here), len(here))
        deletes = delete_decoder.load_many(((mf, i, io) for i, mf in enumerate(delete_manifests)), DRIVER_THREADS)
    else:
        with job_description(spark, f"DELETE-PLANNING {label}".strip()):
            deletes = collect_arrow(entries_df(spark, delete_manifests, delete_decoder), delete_decoder.schema)
    matcher = DeleteMatcher(deletes, unpartitioned, required or frozenset(), prunable or frozenset())
    tasks = TaskDecoder(data_decoder(matcher.equality_ids()), matcher, layout)
    if local:
        return ScanPlan(spark, snapshot, layout,
                        table=tasks.table([(mf, i, io) for i, mf in enumerate(data_manifests)], DRIVER_THREADS))
    return ScanPlan(spark, snapshot, layout, tasks=map_in_arrow(
        manifests_df(spark, data_manifests), tasks, tasks_struct(layout)))


# what answering min and max from the manifests reads of the data entries a plan keeps
METRICS_ENTRY_COLUMNS = ("content", "file_path", "record_count", "null_value_counts", "nan_value_counts",
                         "lower_bounds", "upper_bounds")


def planned_metrics(spark, metadata: TableMetadata, io: FileIO, snapshot: Snapshot, bound: Bound = TRUE
                    ) -> pa.Table:
    """The data files :func:`plan` keeps for ``bound`` at ``snapshot`` (the same manifest, partition and metrics
    pruning), with their null and NaN counts and bounds (:data:`METRICS_ENTRY_COLUMNS`), decoded on the driver:
    what :func:`~sparkberg.planning.counts.exact_bounds` reads."""
    filters, cache, manifests, metrics = _pruning(spark, metadata, io, snapshot, bound)
    manifests = [m for m in manifests if m.content == MANIFEST_DATA]
    decoder = EntryDecoder(PartitionLayout(metadata), with_metrics=True, partition_filters=filters, cache=cache,
                           io=io, metrics_filter=metrics, columns=METRICS_ENTRY_COLUMNS)
    if not manifests:
        return empty_table(decoder.schema)
    entries = decoder.load_many([(mf, i, io) for i, mf in enumerate(manifests)], DRIVER_THREADS)
    data = int_values(entries.column("content"))[0] == 0
    return entries if data.all() else entries.filter(from_bools(data))


class TaskDecoder:
    """Data manifests decoded into scan tasks (the plan's columns), each data file with the delete files that
    apply to it (:class:`DeleteMatcher`); on the executors (``mapInArrow``) or on the driver. Picklable."""

    def __init__(self, decoder: EntryDecoder, matcher: DeleteMatcher, layout: PartitionLayout):
        self.decoder = decoder
        self.matcher = matcher
        self.schema = _tasks_arrow_schema(layout)

    def table(self, manifests: Sequence[tuple[ManifestFile, int, FileIO]], threads: int = 1) -> pa.Table:
        """The tasks of data manifests ((manifest, ordinal, FileIO to read it)), in manifest order, decoded by
        ``threads`` threads (:meth:`EntryDecoder.load_many`)."""
        entries = self.decoder.load_many(manifests, threads)
        content = entries.column("content")
        data = int_values(content)[0] == 0
        if not data.all():
            entries = entries.filter(from_bools(data))
        columns = {"data_sequence_number": entries.column("sequence_number"),
                   "deletes": self.matcher.deletes_for(entries)}
        return pa.Table.from_arrays([columns[c] if c in columns else entries.column(c) for c in PLAN_COLUMNS],
                                    schema=self.schema)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return coalesced(self.table(group) for group in manifest_groups(manifests_of(batches, self.decoder.io)))


class ScopedTaskDecoder(TaskDecoder):
    """A :class:`TaskDecoder` for the executors that finds its delete files itself: a task decodes the delete
    manifests that may hold deletes for its data manifests (``scoped[ordinal]``: indexes into
    ``delete_manifests``), indexes them once, then decodes its data manifests. The driver decodes none, and
    the tasks share the work. Only for scans without equality deletes (their stats pruning needs every
    equality delete known before the data entries are decoded). Picklable."""

    def __init__(self, decoder: EntryDecoder, delete_decoder: EntryDecoder, delete_manifests, unpartitioned: set[int],
                 layout: PartitionLayout, scoped: list[tuple[int, ...]]):
        super().__init__(decoder, None, layout)
        self.delete_decoder = delete_decoder
        self.delete_manifests = list(delete_manifests)
        self.unpartitioned = unpartitioned
        self.scoped = scoped

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        manifests = list(manifests_of(batches, self.decoder.io))  # (a few rows: the task's data manifests)
        needed = sorted({i for _, ordinal, _ in manifests for i in self.scoped[ordinal]})
        counts = [known_entries(self.delete_manifests[i]) for i in needed] + [known_entries(m) for m, _, _ in manifests]
        expect(None if None in counts else sum(counts), len(counts))
        deletes = self.delete_decoder.load_many(
            (self.delete_manifests[i], i, self.decoder.io) for i in needed)
        self.matcher = DeleteMatcher(deletes, self.unpartitioned)
        return coalesced(self.table(group) for group in manifest_groups(manifests))


def overlapping_delete_manifests(metadata: TableMetadata, data_manifests, delete_manifests) -> list[tuple[int, ...]]:
    """For each data manifest, the delete manifests (their indexes) that may list a delete file applying to one of
    its data files: position deletes and deletion vectors apply only within their own spec and partition (spec
    "Scan Planning"), so a delete manifest of another spec, or whose partition summaries do not overlap the data
    manifest's on some integral field (identity of int/long/date/time/timestamp, bucket, day, hour...), holds
    none. Manifests of unpartitioned specs are always kept (their equality deletes are global); fields of
    other types, and manifests without summaries, are taken to overlap."""
    import numpy as np

    schema = metadata.current_schema
    unpartitioned = {s.spec_id for s in metadata.partition_specs if s.is_unpartitioned}
    by_spec: dict[int, list[int]] = {}
    for j, m in enumerate(delete_manifests):
        by_spec.setdefault(m.partition_spec_id, []).append(j)
    always = sorted(j for spec_id in unpartitioned for j in by_spec.get(spec_id, ()))

    def summary(m, k: int) -> tuple[bool, bool, int, int, bool]:
        """(summary known, bounds known, lower, upper, contains null) of partition field ``k``."""
        parts = m.partitions
        if parts is None or k >= len(parts):
            return False, False, 0, 0, True
        f = parts[k]
        if f.lower_bound is None or f.upper_bound is None:
            return True, False, 0, 0, bool(f.contains_null)
        if len(f.lower_bound) not in (4, 8) or len(f.upper_bound) not in (4, 8):
            return False, False, 0, 0, True  # unreadable bounds: unknown, so overlapping
        # (Appendix D: these types' bounds are little-endian two's complement integers)
        return (True, True, int.from_bytes(f.lower_bound, "little", signed=True),
                int.from_bytes(f.upper_bound, "little", signed=True), bool(f.contains_null))

    def summaries(manifests, spec_fields) -> list[np.ndarray]:
        """known, bounds known, lower, upper, contains null: one (manifests, fields) array each."""
        rows = [[summary(m, k) for k in spec_fields] for m in manifests]
        cols = np.array(rows, dtype=object).reshape(len(manifests), len(spec_fields), 5)
        return [cols[:, :, c].astype(dt) for c, dt in enumerate((bool, bool, np.int64, np.int64, bool))]

    data_by_spec: dict[int, list[int]] = {}
    for i, m in enumerate(data_manifests):
        data_by_spec.setdefault(m.partition_spec_id, []).append(i)
    out: list[tuple[int, ...]] = [()] * len(data_manifests)
    for spec_id, data_idx in data_by_spec.items():
        candidates = np.asarray(by_spec.get(spec_id, []), np.int64)
        try:
            ptype = metadata.spec(spec_id).partition_type(schema)
            spec_fields = [k for k, f in enumerate(ptype.fields) if f.field_type in INTEGRAL_TYPES]
        except Exception:  # noqa: BLE001 - a spec the schema no longer binds: no pruning for it
            spec_fields = []
        deletes = summaries([delete_manifests[j] for j in candidates], spec_fields) if spec_fields else None
        step = max(1, (1 << 22) // max(1, len(candidates)))  # (4M pairs at a time)
        for start in range(0, len(data_idx), step):  # data manifests x delete manifests, in slices
            chunk = data_idx[start:start + step]
            keep = np.ones((len(chunk), len(candidates)), bool)
            if deletes is not None and len(candidates):
                data = summaries([data_manifests[i] for i in chunk], spec_fields)
                for k in range(len(spec_fields)):  # (a field at a time, in place: no 3-d temporaries)
                    known, has, lo, hi, nulls = (a[:, k, None] for a in data)
                    d_known, d_has, d_lo, d_hi, d_nulls = (a[None, :, k] for a in deletes)
                    overlap = d_lo <= hi
                    overlap &= lo <= d_hi
                    overlap &= d_has & has
                    overlap |= (d_nulls & nulls) | ~d_known | ~known
                    keep &= overlap
            rows, cols = np.nonzero(keep)
            found = np.split(candidates[cols], np.searchsorted(rows, np.arange(1, len(chunk))))
            for i, js in zip(chunk, found):
                out[i] = tuple(sorted(set(js.tolist()) | set(always))) if always else tuple(js.tolist())
    return out


def _entries(manifests) -> int:
    """The entries the manifests list, by the manifest list's counts (unknown counts: as many as bytes)."""
    counts = [(m.added_files_count, m.existing_files_count, m.deleted_files_count) for m in manifests]
    return sum(m.manifest_length if None in c else sum(c) for m, c in zip(manifests, counts))


def _small_enough(metadata: TableMetadata, manifests) -> bool:
    """Whether the manifests left after pruning are few enough to plan on the driver: under both the bytes
    bound and the entries bound (the manifest list's file counts). The driver's per-entry cost beats a Spark
    job's fixed one up to a few hundred thousand entries; the bytes bound is for wide tables, whose entries
    carry metrics of many columns (README, "Benchmarks", for the measurements)."""
    if sum(m.manifest_length for m in manifests) > int_property(metadata, LOCAL_MAX_BYTES, LOCAL_MAX_BYTES_DEFAULT):
        return False
    counts = [(m.added_files_count, m.existing_files_count, m.deleted_files_count) for m in manifests]
    if any(c is None for cs in counts for c in cs):
        return True  # (v1 lists may lack the counts: the bytes decide)
    return sum(map(sum, counts)) <= int_property(metadata, LOCAL_MAX_FILES, LOCAL_MAX_FILES_DEFAULT)


def _local_dataframe(spark, table: pa.Table, rows, layout: PartitionLayout) -> DataFrame:
    """Tasks planned on the driver as a DataFrame (from their Arrow table where the session takes one)."""
    return arrow_dataframe(spark, table, tasks_struct(layout), rows)


def tasks_struct(layout: PartitionLayout, typed: bool = False) -> ST.StructType:
    """The plan's columns as a Spark StructType (built here: PySpark 3.5 parses DDL through the JVM); ``typed``:
    the partition struct in Iceberg's Spark types, as :func:`partition_column` makes it (never null)."""
    partition = ST.StructType([ST.StructField(s.name, _SPARK_TYPES.get(s.field_type) if typed and s.field_type in
                                              _SPARK_TYPES else physical_spark_type(s.field_type))
                               for s in layout.slots]) if layout.slots else \
        ST.StructType([ST.StructField("_none", ST.IntegerType())])
    return ST.StructType([
        ST.StructField("file_path", ST.StringType()), ST.StructField("file_format", ST.StringType()),
        ST.StructField("spec_id", ST.IntegerType()), ST.StructField("partition", partition, not typed),
        ST.StructField("record_count", ST.LongType()), ST.StructField("file_size_in_bytes", ST.LongType()),
        ST.StructField("data_sequence_number", ST.LongType()), ST.StructField("first_row_id", ST.LongType()),
        ST.StructField("deletes", DELETES_TYPE)])


# the plan's deletes: the delete files that apply to a data file
DELETES_TYPE = ST.ArrayType(ST.StructType([
    ST.StructField("file_path", ST.StringType()), ST.StructField("content", ST.IntegerType()),
    ST.StructField("file_format", ST.StringType()), ST.StructField("equality_ids", ST.ArrayType(ST.IntegerType())),
    ST.StructField("referenced_data_file", ST.StringType()), ST.StructField("content_offset", ST.LongType()),
    ST.StructField("content_size_in_bytes", ST.LongType()), ST.StructField("record_count", ST.LongType())]))


# the Spark types partition_column gives physical values of these Iceberg types, and their Arrow types
_SPARK_TYPES = {T.DATE: ST.DateType(), T.TIMESTAMPTZ: ST.TimestampType(), T.TIMESTAMP: ST.TimestampNTZType()}
_ARROW_TYPES = {T.DATE: pa.date32(), T.TIMESTAMPTZ: pa.timestamp("us", "UTC"), T.TIMESTAMP: pa.timestamp("us")}


def typed_partition(layout: PartitionLayout, column) -> pa.StructArray:
    """The plan's physical partition struct (days, micros) with Iceberg's Spark types, as Arrow (dates as date32,
    timestamps as timestamp[us], with UTC for timestamptz): what :func:`partition_column` computes in Spark."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    children = [arr.field(i) for i in range(len(layout.slots))]
    typed = [c.cast(_ARROW_TYPES[s.field_type]) if s.field_type in _ARROW_TYPES else c
             for s, c in zip(layout.slots, children)]
    return pa.StructArray.from_arrays(typed, names=[s.name for s in layout.slots],
                                      mask=arr.is_null() if arr.null_count else None)


def _tasks_arrow_schema(layout: PartitionLayout):
    """The plan's columns as Arrow types, taken from the canonical entries schema."""
    import pyarrow as pa
    entry = EntryDecoder(layout, io=None).schema
    delete = pa.struct([entry.field(c) for c in DELETE_STRUCT])
    return pa.schema([entry.field("sequence_number").with_name("data_sequence_number") if c == "data_sequence_number"
                      else pa.field("deletes", pa.list_(delete)) if c == "deletes" else entry.field(c)
                      for c in PLAN_COLUMNS])


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
