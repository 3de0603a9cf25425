"""The changelog of a range of snapshots as rows: Iceberg Java's changelog columns and ``create_changelog_view``'s
semantics, merge-on-read snapshots included.

Each snapshot's rows are read twice over the files it changed (:class:`~sparkberg.planning.changes.SnapshotChange`):
as its parent had them and as it has them, each row with its file and position. A row of the first that the
second lacks is a ``DELETE``, one of the second that the first lacks an ``INSERT``, at the snapshot's ordinal.
So a row a deletion vector or a position or equality delete file removed is a ``DELETE`` of the snapshot that
added that delete, once, where Java's changelog refuses any range with delete files.

Then, as Java's procedure does: rows that a copy-on-write rewrite deleted and inserted unchanged in one snapshot
cancel (carry-overs; a ``DELETE`` and an ``INSERT`` of identical rows); with ``net_changes``, identical rows cancel
across the whole range in ordinal order (Java's ``RemoveNetCarryoverIterator``); with ``compute_updates``, after
carry-overs are removed, a ``DELETE`` and an ``INSERT`` of one key in one snapshot become ``UPDATE_BEFORE`` and
``UPDATE_AFTER`` (Java's ``ComputeUpdateIterator``; two deletes of one key in one snapshot are an error). On v3
tables the key may be ``_row_id``, which row lineage keeps for an updated row.

The changelog without those options and without metadata columns is read with no shuffle
(:func:`changes_by_partition`): identical rows have the same partition, so a Spark task for each partition of each
snapshot reads the files the snapshot changed there, compares positions and cancels carry-overs with Arrow's hash
aggregation. The others read the rows with Spark's reader (:func:`read_changes`, each row's file and position
joined where a file's deletes changed) and cancel carry-overs with a shuffle and a sort, as Java's procedure does.
"""
from __future__ import annotations

import pickle
from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as ST

from sparkberg.arrays import batch_of_rows, scalar
from sparkberg.errors import NotSupportedError, ValidationError
from sparkberg.expressions.predicates import TRUE, Bound
from sparkberg.io.fileio import FileIO
from sparkberg.planning.changes import (
    SnapshotChange, appended_tasks, changelog_snapshots, end_for_timestamp, snapshot_change, snapshots_between,
    start_for_timestamp,
)
from sparkberg.planning.entries import PartitionLayout
from sparkberg.read.arrow import ChangeReader, TaskReader, comparable, read_struct
from sparkberg.read.deletecache import DeleteCache, delete_cache
from sparkberg.read.reader import identity_values, read_tasks
from sparkberg.spark.frames import local_dataframe, map_in_arrow
from sparkberg.spark.settings import default_parallelism
from sparkberg.format import types as T
from sparkberg.format.metadata import TableMetadata

CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID = "_change_type", "_change_ordinal", "_commit_snapshot_id"
INSERT, DELETE, UPDATE_BEFORE, UPDATE_AFTER = "INSERT", "DELETE", "UPDATE_BEFORE", "UPDATE_AFTER"
CHANGE_COLUMNS = (CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID)
_POSITION = ["_file", "_pos"]


def read_appended(spark, metadata: TableMetadata, io: FileIO, start_snapshot_id: int, end_snapshot_id: int | None,
                  bound: Bound, columns: Sequence[str] | None, filter: str | Column | None) -> DataFrame:
    """The rows the ``append`` snapshots after ``start_snapshot_id`` up to ``end_snapshot_id`` (default: the
    current snapshot) added, in the table's schema, as Iceberg Java's incremental append scan reads them."""
    snapshots = snapshots_between(metadata, start_snapshot_id, end_snapshot_id)
    tasks = appended_tasks(metadata, io, snapshots, bound, spark)
    return read_tasks(spark, metadata, metadata.current_schema, tasks.to_pylist(), PartitionLayout(metadata), columns,
                      filter, io)


def changelog(spark, metadata: TableMetadata, io: FileIO, start_snapshot_id: int | None = None,
              end_snapshot_id: int | None = None, start_timestamp_ms: int | None = None,
              end_timestamp_ms: int | None = None, net_changes: bool = False, updates: bool | None = None,
              identifier_columns: Sequence[str] | None = None, bound: Bound = TRUE,
              filter: str | Column | None = None, columns: Sequence[str] | None = None) -> DataFrame:
    """The changelog of a range (see :meth:`sparkberg.table.Table.changes` for the options and their defaults,
    Java's)."""
    if start_snapshot_id is not None and start_timestamp_ms is not None:
        raise ValidationError("give the start of the changelog as a snapshot id or as a timestamp, not both")
    if end_snapshot_id is not None and end_timestamp_ms is not None:
        raise ValidationError("give the end of the changelog as a snapshot id or as a timestamp, not both")
    if start_timestamp_ms is not None and end_timestamp_ms is not None and start_timestamp_ms >= end_timestamp_ms:
        raise ValidationError(f"the changelog's start timestamp ({start_timestamp_ms}) must be before its end "
                              f"timestamp ({end_timestamp_ms})")
    if updates is None:
        updates = identifier_columns is not None  # (Java's default: updates when the key is given)
    if updates and net_changes:
        raise ValidationError("net_changes cannot be combined with compute_updates (Java: \"Not support net "
                              "changes with update images\")")
    schema = metadata.current_schema
    wanted = list(columns) if columns is not None else [f.name for f in schema.fields]
    keys = list(identifier_columns) if identifier_columns is not None else \
        [schema.name_of(i) for i in schema.identifier_field_ids]
    if updates and not keys:
        if metadata.format_version < 3:
            raise ValidationError("compute_updates needs identifier columns: give identifier_columns or set the "
                                  "table's identifier fields (v3 tables pair rows by _row_id)")
        keys = ["_row_id"]
    known = {f.name for f in schema.fields} | {"_row_id", "_last_updated_sequence_number", "_file", "_pos",
                                                "_spec_id", "_partition"}
    for k in keys:
        if k not in known:
            raise ValidationError(f"identifier column {k!r} is not a column of the table (its columns: "
                                  f"{', '.join(f.name for f in schema.fields)})")
    read_columns = wanted + [k for k in keys if updates and k not in wanted]
    start, end, empty = start_snapshot_id, end_snapshot_id, metadata.current_snapshot is None
    if start_timestamp_ms is not None:
        current = metadata.current_snapshot
        empty = empty or current is None or start_timestamp_ms > current.timestamp_ms
        start = start_for_timestamp(metadata, int(start_timestamp_ms))
    if end_timestamp_ms is not None:
        end = end_for_timestamp(metadata, int(end_timestamp_ms))
        empty = empty or (start is None and end is None) or (start is not None and start == end)
    if empty:
        changes: list[SnapshotChange] = []
    else:
        snapshots = changelog_snapshots(snapshots_between(metadata, start, end))
        changes = [snapshot_change(metadata, io, s, i, bound, spark) for i, s in enumerate(snapshots)]
    if not updates and not net_changes:
        grouped = changes_by_partition(spark, metadata, schema, changes, read_columns, io)
        if grouped is not None:
            maps = unorderable(grouped.schema, read_columns)
            if maps:
                raise ValidationError(f"a changelog of a table with map columns ({', '.join(maps)}) needs "
                                      "identifier columns to compare rows by: give identifier_columns")
            return grouped if filter is None else grouped.where(filter)
    raw = read_changes(spark, metadata, schema, changes, read_columns, filter, io)
    if not keys or not updates:
        maps = unorderable(raw.schema, read_columns)
        if maps:
            raise ValidationError(f"a changelog of a table with map columns ({', '.join(maps)}) needs identifier "
                                  "columns to compare rows by: give identifier_columns")
    if updates:
        out = compute_updates(raw, read_columns, keys)
        return out.select(*[F.col(f"`{c}`") for c in wanted], *CHANGE_COLUMNS) if read_columns != wanted else out
    return remove_net_carryovers(raw, read_columns) if net_changes else remove_carryovers(raw, read_columns)


def changes_by_partition(spark, metadata: TableMetadata, schema: T.Schema, changes: Sequence[SnapshotChange],
                         columns: Sequence[str], io: FileIO | None = None) -> DataFrame | None:
    """The changelog's rows, carryovers removed, read with no shuffle: a Spark task for each partition of each
    snapshot reads the files the snapshot changed in that partition (:class:`~sparkberg.read.arrow.ChangeReader`),
    where identical rows deleted and inserted cancel (a row and its carried-over copy are in one partition, having
    the same values); None when ``columns`` name a metadata column, or a delete the task reader cannot apply (then
    :func:`read_changes` and :func:`remove_carryovers` do it with Spark's reader, a shuffle and a sort)."""
    if any(c not in {f.name for f in schema.fields} for c in columns):
        return None
    reader = TaskReader(metadata, schema, io)
    layout = PartitionLayout(metadata)
    groups = []
    for change in changes:
        before, after = change.before.to_pylist(), change.after.to_pylist()
        try:
            reader.check(before + after)
        except NotSupportedError:
            return None
        identity = identity_values(metadata, schema, before + after, layout)
        by_partition: dict[tuple, tuple[list, list]] = {}
        for side, tasks in ((0, before), (1, after)):
            for t in tasks:
                key = (t["spec_id"], repr(sorted((t["partition"] or {}).items())))
                by_partition.setdefault(key, ([], []))[side].append(t)
        for b, a in by_partition.values():
            paths = {t["file_path"] for t in b + a}
            groups.append(pickle.dumps((b, a, change.ordinal, change.snapshot.snapshot_id,
                                        {p: v for p, v in identity.items() if p in paths})))
    fields = read_struct(schema)
    out = ST.StructType(list(fields.fields) + [ST.StructField(CHANGE_TYPE, ST.StringType()),
                                               ST.StructField(CHANGE_ORDINAL, ST.IntegerType()),
                                               ST.StructField(COMMIT_SNAPSHOT_ID, ST.LongType())])
    cache = delete_cache(spark)
    tasks = local_dataframe(spark, [(g,) for g in groups], "group binary")
    if len(groups) > 1:
        tasks = tasks.repartition(min(len(groups), default_parallelism(spark)))
    rows = map_in_arrow(tasks, _PartitionChanges(ChangeReader(reader), cache.max_bytes if cache else 0), out)
    return rows.select(*[F.col(f"`{c}`") for c in columns], *CHANGE_COLUMNS)


class _PartitionChanges:
    """``mapInArrow``: each input row the pickled changes of one snapshot in one partition; yields their rows with
    the change columns. Picklable."""

    def __init__(self, reader: ChangeReader, cache_bytes: int):
        self.reader, self.cache_bytes = reader, cache_bytes

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        cache = DeleteCache(self.cache_bytes) if self.cache_bytes > 0 else None
        for batch in batches:
            for payload in batch.column(0).to_pylist():
                before, after, ordinal, snapshot_id, identity = pickle.loads(payload)
                deleted, inserted = self.reader.changes(before, after, cache, identity)
                for rows, kind in ((deleted, DELETE), (inserted, INSERT)):
                    n = rows.num_rows
                    if n:
                        yield from pa.Table.from_arrays(
                            [*rows.columns, pa.repeat(scalar(kind, pa.string()), n),
                             pa.repeat(scalar(ordinal, pa.int32()), n), pa.repeat(scalar(snapshot_id, pa.int64()), n)],
                            names=[*rows.column_names, CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID]).to_batches()


def read_changes(spark, metadata: TableMetadata, schema: T.Schema, changes: Sequence[SnapshotChange],
                 columns: Sequence[str], filter: str | Column | None, io: FileIO | None = None) -> DataFrame:
    """The raw changelog: ``columns`` of every inserted and deleted row, then :data:`CHANGE_COLUMNS`."""
    layout = PartitionLayout(metadata)
    wanted = list(columns)
    parts = []
    for change in changes:
        # (only the files both sides read can hold a row of each, the files whose deletes changed: only those need
        # each row's file and position, which cost the reader a join of its rows with their files)
        shared = set(change.before.column("file_path").to_pylist()) & set(change.after.column("file_path").to_pylist())
        read_columns = wanted + [c for c in _POSITION if c not in wanted] if shared else wanted
        before = read_tasks(spark, metadata, schema, change.before.to_pylist(), layout, read_columns, filter, io) \
            if change.before.num_rows else None
        after = read_tasks(spark, metadata, schema, change.after.to_pylist(), layout, read_columns, filter, io) \
            if change.after.num_rows else None
        if shared and before is not None and after is not None:
            deleted = before.join(after.select(*_POSITION), _POSITION, "left_anti")
            inserted = after.join(before.select(*_POSITION), _POSITION, "left_anti")
        else:
            deleted, inserted = before, after
        for rows, kind in ((deleted, DELETE), (inserted, INSERT)):
            if rows is not None:
                parts.append(rows.select(*[F.col(f"`{c}`") for c in wanted], F.lit(kind).alias(CHANGE_TYPE),
                                         F.lit(change.ordinal).alias(CHANGE_ORDINAL),
                                         F.lit(change.snapshot.snapshot_id).cast("bigint").alias(COMMIT_SNAPSHOT_ID)))
    if not parts:
        empty = read_tasks(spark, metadata, schema, [], layout, wanted, None)
        return empty.select(*[F.col(f"`{c}`") for c in wanted], F.lit(None).cast("string").alias(CHANGE_TYPE),
                            F.lit(None).cast("int").alias(CHANGE_ORDINAL),
                            F.lit(None).cast("bigint").alias(COMMIT_SNAPSHOT_ID)).limit(0)
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def remove_carryovers(df: DataFrame, columns: Sequence[str]) -> DataFrame:
    """Within each snapshot, a ``DELETE`` and an ``INSERT`` of identical rows cancel; of n deletes and m inserts of
    one row, |n - m| of the more numerous remain (what Java's ``RemoveCarryoverIterator`` leaves). One window over
    the rows partitioned by all their columns, deletes first: one shuffle and one sort, as Java's procedure (an
    aggregation's map-side hash tables gain nothing where nearly every row is distinct)."""
    keys = [F.col(f"`{c}`") for c in columns] + [F.col(CHANGE_ORDINAL), F.col(COMMIT_SNAPSHOT_ID)]
    same = Window.partitionBy(*keys)
    deletes = F.sum(F.when(F.col(CHANGE_TYPE) == DELETE, 1).otherwise(0)).over(same)
    inserts = F.sum(F.when(F.col(CHANGE_TYPE) == INSERT, 1).otherwise(0)).over(same)
    n = F.row_number().over(same.orderBy(F.col(CHANGE_TYPE)))  # (DELETE sorts before INSERT)
    counted = df.select("*", deletes.alias("_d"), inserts.alias("_i"), n.alias("_n"))
    d, i, k = F.col("_d"), F.col("_i"), F.col("_n")
    keep = ((F.col(CHANGE_TYPE) == DELETE) & (k <= d - i)) | ((F.col(CHANGE_TYPE) == INSERT) & (k - d <= i - d))
    return counted.where(keep).drop("_d", "_i", "_n")


def remove_net_carryovers(df: DataFrame, columns: Sequence[str]) -> DataFrame:
    """Across the range, identical rows cancel in ordinal order: an ``INSERT`` then a ``DELETE`` of a row (or the
    reverse) is no net change (Java's ``RemoveNetCarryoverIterator``, row for row)."""
    keys = [F.col(f"`{c}`") for c in columns]
    ordered = df.repartition(*keys).sortWithinPartitions(*keys, F.col(CHANGE_ORDINAL), F.col(CHANGE_TYPE))
    return map_in_arrow(ordered, _NetCarryovers(list(columns)), df.schema)


def compute_updates(df: DataFrame, columns: Sequence[str], keys: Sequence[str]) -> DataFrame:
    """Carry-overs removed, then a ``DELETE`` and an ``INSERT`` of one key in one snapshot as ``UPDATE_BEFORE`` and
    ``UPDATE_AFTER`` (Java's ``computeUpdates``: rows partitioned by key and ordinal, sorted by key and type; here
    by ordinal too, so that one key changed in several snapshots that share a partition pairs within each)."""
    key_cols = [F.col(f"`{c}`") for c in keys]
    ordered = df.repartition(*key_cols, F.col(CHANGE_ORDINAL)).sortWithinPartitions(
        *key_cols, F.col(CHANGE_ORDINAL), F.col(CHANGE_TYPE))
    return map_in_arrow(ordered, _Updates(list(columns), list(keys)), df.schema)


def unorderable(schema: ST.StructType, columns: Sequence[str]) -> list[str]:
    """The columns Spark cannot group or sort (maps, at any depth), which a changelog without a key cannot
    compare."""
    def has_map(t: ST.DataType) -> bool:
        if isinstance(t, ST.MapType):
            return True
        if isinstance(t, ST.ArrayType):
            return has_map(t.elementType)
        if isinstance(t, ST.StructType):
            return any(has_map(f.dataType) for f in t.fields)
        return False
    return [f.name for f in schema.fields if f.name in columns and has_map(f.dataType)]


class _RowPass:
    """A pass over sorted rows (``mapInArrow``): rows in, rows out, their columns unchanged. Picklable."""

    def __init__(self, columns: list[str]):
        self.columns = columns

    def same(self, a: dict, b: dict, columns: Sequence[str]) -> bool:
        return all(comparable(a[c]) == comparable(b[c]) for c in columns)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        schema = None
        rows: list[dict] = []
        for b in batches:
            schema = b.schema
            rows.extend(b.to_pylist())
        if schema is None:
            return
        out = list(self.run(rows))
        if out:
            yield batch_of_rows(out, schema)

    def run(self, rows: list[dict]) -> Iterator[dict]:
        raise NotImplementedError


class _NetCarryovers(_RowPass):
    def run(self, rows: list[dict]) -> Iterator[dict]:
        # (as Java's iterator: the first row of a run of identical rows counts 1, each next one +1 of its type and
        # -1 of the opposite type; at 0 the run ends; what is left is the first row, that many times)
        i, n = 0, len(rows)
        while i < n:
            first, count, j = rows[i], 1, i + 1
            while j < n and self.same(first, rows[j], self.columns):
                count += -1 if rows[j][CHANGE_TYPE] != first[CHANGE_TYPE] else 1
                j += 1
                if count <= 0:
                    break
            for _ in range(max(count, 0)):
                yield first
            i = j


class _Updates(_RowPass):
    def __init__(self, columns: list[str], keys: list[str]):
        super().__init__(columns)
        self.keys = keys

    def run(self, rows: list[dict]) -> Iterator[dict]:
        kept = list(_carryovers_removed(rows, self))
        i, n = 0, len(kept)
        while i < n:
            row = kept[i]
            if row[CHANGE_TYPE] == DELETE and i + 1 < n and self.same(row, kept[i + 1], self.keys) and \
                    row[CHANGE_ORDINAL] == kept[i + 1][CHANGE_ORDINAL]:
                nxt = kept[i + 1]
                if nxt[CHANGE_TYPE] != INSERT:
                    raise ValidationError(
                        "cannot compute updates: several rows of one snapshot have the same identifier columns "
                        f"({', '.join(self.keys)} = {', '.join(repr(row[k]) for k in self.keys)})")
                yield {**row, CHANGE_TYPE: UPDATE_BEFORE}
                yield {**nxt, CHANGE_TYPE: UPDATE_AFTER}
                i += 2
                continue
            yield row
            i += 1


def _carryovers_removed(rows: list[dict], rp: _RowPass) -> Iterator[dict]:
    """Java's ``RemoveCarryoverIterator`` over rows sorted by key and type: identical delete and insert rows
    cancel, the rest pass in order."""
    full = rp.columns + [CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID]
    i, n = 0, len(rows)
    while i < n:
        row = rows[i]
        if row[CHANGE_TYPE] != DELETE:
            yield row
            i += 1
            continue
        deletes, j = 1, i + 1
        while j < n and deletes > 0 and rp.same(row, rows[j], full):
            deletes += -1 if rows[j][CHANGE_TYPE] == INSERT else 1
            j += 1
        for _ in range(deletes):
            yield row
        i = j


__all__ = ["read_changes", "remove_carryovers", "remove_net_carryovers", "compute_updates", "unorderable",
           "CHANGE_TYPE", "CHANGE_ORDINAL", "COMMIT_SNAPSHOT_ID", "CHANGE_COLUMNS", "INSERT", "DELETE",
           "UPDATE_BEFORE", "UPDATE_AFTER"]
