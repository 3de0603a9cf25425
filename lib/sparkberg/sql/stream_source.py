"""The ``sparkberg-stream`` Python streaming data source (PySpark 4.0+): the rows appended to a table, each micro-batch
the data files of the next ``append`` snapshots, as Iceberg Java's ``SparkMicroBatchStream`` reads them.

An offset is a position in the table's history: ``{"snapshot_id": S, "position": p}`` says that every data file of
the snapshots before ``S`` (along the current snapshot's ancestry) and the first ``p`` data files ``S`` added (in
the order of their paths) are read; ``snapshot_id`` -1 is the start, before any snapshot. Spark keeps the offsets
in the query's checkpoint, so a restarted query reads every appended file once. A micro-batch reads the files
between its start and end offsets as written (as Java's, a delete committed later is not applied to them).

What a snapshot of another kind does to the stream is Java's rule: ``replace`` (compactions, rewrites) adds no rows
and is passed; ``delete`` and ``overwrite`` stop the query with a named error unless ``skip_delete_snapshots`` or
``skip_overwrite_snapshots`` lets it pass them. Where the stream begins: after ``start_snapshot_id``; else at the
oldest snapshot committed at or after ``stream_from_timestamp_ms``; else at the oldest ancestor of the current
snapshot. ``max_files_per_trigger`` and ``max_rows_per_trigger`` bound a micro-batch (rows: the batch stops after
the file that reaches the bound, as Java's does), unless the trigger asks for everything available (Spark then
hands :meth:`latestOffset` ``ReadAllAvailable``).

With ``changes=True`` the stream is the table's changelog (:meth:`~sparkberg.table.Table.changes`): every snapshot
but ``replace`` ones, deletes, updates and merges of merge-on-read tables included, whole snapshots a micro-batch
(``position`` 1: the snapshot is read). A micro-batch's rows are those of ``t.changes(start, end)`` for its range
(``_change_ordinal`` counts its snapshots from 0), read by :class:`~sparkberg.read.arrow.ChangeReader`, a
partition a snapshot; the limits bound it by the files and records the snapshots' summaries count (data and delete
files added and removed, records added and deleted), at least one snapshot.

The reader runs in a Python worker on the driver, which Spark keeps for the query: it opens the catalog again from
its arguments, as the batch data source does (:mod:`sparkberg.sql.source`), and keeps the added files of the
snapshots it has planned. Each partition reads its files with :class:`~sparkberg.read.arrow.TaskReader`.
"""
from __future__ import annotations

import json
from typing import Any, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import types as ST
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from sparkberg.arrays import scalar
from sparkberg.errors import NotSupportedError, SparkbergError, ValidationError
from sparkberg.planning.changes import APPEND, REPLACE, appended_tasks, snapshot_change
from sparkberg.planning.entries import PartitionLayout
from sparkberg.read.arrow import ChangeReader, TaskReader, read_struct
from sparkberg.read.changes import CHANGE_ORDINAL, CHANGE_TYPE, COMMIT_SNAPSHOT_ID, DELETE, INSERT
from sparkberg.read.reader import identity_values
from sparkberg.spark.jvm import as_active
from sparkberg.spark.session import per_session, spark_version
from sparkberg.spark.settings import default_parallelism
from sparkberg.format.snapshots import Snapshot
from sparkberg.sql.splits import CONFIG_OPTION, split_tasks
from sparkberg.table import Table, catalog

NAME = "sparkberg-stream"
START = {"snapshot_id": -1, "position": 0}
OPTIONS = ("start_snapshot_id", "stream_from_timestamp_ms", "max_files_per_trigger", "max_rows_per_trigger",
           "skip_delete_snapshots", "skip_overwrite_snapshots", "changes")
# (the summary counts that bound a changelog stream's micro-batch)
CHANGED_FILES = ("added-data-files", "deleted-data-files", "added-delete-files", "removed-delete-files")
CHANGED_ROWS = ("added-records", "deleted-records", "added-position-deletes", "added-equality-deletes")
CHANGE_STRUCT = ST.StructType([ST.StructField(CHANGE_TYPE, ST.StringType()),
                               ST.StructField(CHANGE_ORDINAL, ST.IntegerType()),
                               ST.StructField(COMMIT_SNAPSHOT_ID, ST.LongType())])
DELETED_ROWS, OVERWROTE_ROWS = "delete", "overwrite"  # (snapshot operations)


def stream_frame(table: Table, options: dict[str, Any]) -> Any:
    """A streaming DataFrame of the rows appended to ``table`` (checked ``options``: :data:`OPTIONS`)."""
    if table.catalog is None or table.identifier is None:
        raise SparkbergError(f"table {table.name} was loaded by path: a stream reads a table of a catalog")
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValidationError(f"unknown read_stream options {unknown}; known: {', '.join(OPTIONS)}")
    settings = {k: v for k, v in options.items() if v is not None and v is not False}
    for k in ("max_files_per_trigger", "max_rows_per_trigger"):
        if k in settings and (isinstance(settings[k], bool) or not isinstance(settings[k], int) or settings[k] < 1):
            raise ValidationError(f"{k} must be a positive integer, got {settings[k]!r}")
    if settings.get("changes") and ("skip_delete_snapshots" in settings or "skip_overwrite_snapshots" in settings):
        raise ValidationError("a changelog stream (changes=True) reads delete and overwrite snapshots: the skip "
                              "options are for the stream of appends")
    if "start_snapshot_id" in settings and "stream_from_timestamp_ms" in settings:
        raise ValidationError("give start_snapshot_id or stream_from_timestamp_ms, not both")
    if "start_snapshot_id" in settings and table.metadata.snapshot_by_id(int(settings["start_snapshot_id"])) is None:
        raise ValidationError(f"cannot start the stream after snapshot {settings['start_snapshot_id']}: table "
                              f"{table.name} has no such snapshot")
    spark = table.spark
    bounds = [k for k in ("max_files_per_trigger", "max_rows_per_trigger") if k in settings]
    if bounds and (spark_version(None) < (4, 2) or spark_version(spark) < (4, 2)):
        # (Spark hands a Python stream source its read limit from 4.2 on; before, every micro-batch would read all
        # that is available, whatever the bound said)
        verb = "need" if len(bounds) > 1 else "needs"
        raise NotSupportedError(f"{' and '.join(bounds)} {verb} PySpark and Spark 4.2 or later (read limits of "
                                "Python streaming data sources); before, each micro-batch reads all that is available")
    with as_active(spark):  # (the data source's name is resolved in the active session)
        if per_session(spark, "sparkberg stream source", lambda: spark.dataSource.register(StreamSource) or True) \
                is None:
            spark.dataSource.register(StreamSource)
        schema = read_struct(table.schema())
        if settings.get("changes"):
            schema = ST.StructType(schema.fields + CHANGE_STRUCT.fields)
        return spark.readStream.format(NAME).schema(schema).options(**{
            CONFIG_OPTION: json.dumps(table.catalog.config), "table": str(table.identifier),
            "schema-id": str(table.schema().schema_id), "settings": json.dumps(settings),
            "parallelism": str(default_parallelism(spark))}).load()


class StreamSource(DataSource):
    """Options: ``catalog-config-secret`` (JSON: the catalog's arguments), ``table``, ``schema-id`` (the schema
    the stream gives), ``settings`` (JSON: the stream's options) and ``parallelism`` (the session's default
    parallelism, which sizes the splits)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        raise SparkbergError("the sparkberg stream is given its schema: use Table.read_stream")

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return StreamReader(dict(self.options))


try:  # (PySpark 4.2+: Trigger.AvailableNow keeps the read limits of a source that says it supports it)
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow as _AvailableNow
except ImportError:  # pragma: no cover - PySpark 4.0, 4.1
    _AvailableNow = object


class StreamReader(DataSourceStreamReader, _AvailableNow):
    """Offsets and partitions over the table's appended files (see the module docstring)."""

    def __init__(self, options: dict[str, str]):
        self.options = options
        self.settings = json.loads(options.get("settings", "{}"))
        self._table: Table | None = None
        self._added: dict[int, list[dict]] = {}  # snapshot id -> the data files it added, as scan tasks
        self._until: int | None = None  # (Trigger.AvailableNow: the last snapshot the query reads)
        self.changes = bool(self.settings.get("changes"))

    def table(self, refresh: bool = True) -> Table:
        """The table, refreshed (``refresh``) to its current metadata."""
        if self._table is None:
            config = json.loads(self.options[CONFIG_OPTION])
            self._table = catalog(None, config.pop("uri"), **config).load_table(self.options["table"])
        elif refresh:
            self._table.refresh()
        return self._table

    def initialOffset(self) -> dict:
        start = self.settings.get("start_snapshot_id")
        if start is None:
            return dict(START)
        snap = self.table().metadata.snapshot_by_id(int(start))
        return {"snapshot_id": snap.snapshot_id, "position": 1 if self.changes else len(self.added(snap))}

    def prepareForTriggerAvailableNow(self) -> None:
        current = self.table().current_snapshot()
        self._until = -1 if current is None else current.snapshot_id

    def getDefaultReadLimit(self) -> Any:
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles, ReadMaxRows  # (PySpark 4.2+)
        if "max_files_per_trigger" in self.settings:
            return ReadMaxFiles(int(self.settings["max_files_per_trigger"]))
        if "max_rows_per_trigger" in self.settings:
            return ReadMaxRows(int(self.settings["max_rows_per_trigger"]))
        return ReadAllAvailable()

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        # (PySpark 4.0 and 4.1 ask with neither: everything available, from the start of the stream)
        bounded = limit is not None and type(limit).__name__ != "ReadAllAvailable"
        max_files = int(self.settings.get("max_files_per_trigger", 0)) if bounded else 0
        max_rows = int(self.settings.get("max_rows_per_trigger", 0)) if bounded else 0
        start = start if start is not None else dict(START)
        if self.changes:
            return self.latest_change(start, max_files, max_rows)
        end, files, rows = dict(start), 0, 0
        for snap, first in self.chain(start):
            if snap.operation != APPEND:
                end = {"snapshot_id": snap.snapshot_id, "position": 0}
                continue
            added = self.added(snap)
            for i in range(first, len(added)):
                if max_files and files + 1 > max_files:
                    return end
                files, rows = files + 1, rows + added[i]["record_count"]
                end = {"snapshot_id": snap.snapshot_id, "position": i + 1}
                if max_rows and rows >= max_rows:
                    return end
            end = {"snapshot_id": snap.snapshot_id, "position": len(added)}
        return end

    def latest_change(self, start: dict, max_files: int, max_rows: int) -> dict:
        """:meth:`latestOffset` of a changelog stream: whole snapshots, as many as the bounds allow (at least one)."""
        end, files, rows = dict(start), 0, 0
        for snap, first in self.chain(start):
            if first:  # (the snapshot the offset ends a batch with: read)
                continue
            if snap.operation == REPLACE:  # (no change: passed, uncounted)
                end = {"snapshot_id": snap.snapshot_id, "position": 1}
                continue
            summary = snap.summary or {}
            files += sum(int(summary.get(k, 0)) for k in CHANGED_FILES)
            rows += sum(int(summary.get(k, 0)) for k in CHANGED_ROWS)
            if end != start and ((max_files and files > max_files) or (max_rows and rows > max_rows)):
                return end
            end = {"snapshot_id": snap.snapshot_id, "position": 1}
        return end

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        if start == end:
            return []
        if self.changes:
            return self.change_partitions(start, end)
        tasks: list[dict] = []
        for snap, first in self.chain(start, end["snapshot_id"], refresh=False):
            if snap.operation == APPEND:
                added = self.added(snap)
                last = end["position"] if snap.snapshot_id == end["snapshot_id"] else len(added)
                tasks += added[first:last]
            if snap.snapshot_id == end["snapshot_id"]:
                break
        if not tasks:
            return []
        table = self.table(refresh=False)
        schema = table.metadata.schema(int(self.options["schema-id"]))
        reader = TaskReader(table.metadata, schema, table.io)
        reader.check(tasks)
        identity = identity_values(table.metadata, schema, tasks, PartitionLayout(table.metadata))
        groups = split_tasks(tasks, int(self.options.get("parallelism", "1")))
        return [InputPartition((reader, group, {t["file_path"]: identity[t["file_path"]] for t in group
                                                 if t["file_path"] in identity})) for group in groups]

    def change_partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        """A partition a snapshot of the range that changed rows: its tasks as of its parent and as of itself."""
        table = self.table(refresh=False)
        schema = table.metadata.schema(int(self.options["schema-id"]))
        reader = ChangeReader(TaskReader(table.metadata, schema, table.io))
        layout = PartitionLayout(table.metadata)
        out = []
        snapshots = [snap for snap, first in self.chain(start, end["snapshot_id"], refresh=False)
                     if not first and snap.operation != REPLACE]
        for ordinal, snap in enumerate(snapshots):
            change = snapshot_change(table.metadata, table.io, snap, ordinal)
            before, after = change.before.to_pylist(), change.after.to_pylist()
            reader.reader.check(before + after)
            identity = identity_values(table.metadata, schema, before + after, layout)
            out.append(InputPartition(("changes", reader, before, after, ordinal, snap.snapshot_id, identity)))
        return out

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if partition.value[0] == "changes":
            _, reader, before, after, ordinal, snapshot_id, identity = partition.value
            deleted, inserted = reader.changes(before, after, None, identity)
            for rows, kind in ((deleted, DELETE), (inserted, INSERT)):
                if rows.num_rows:
                    n = rows.num_rows
                    yield from pa.Table.from_arrays(
                        [*rows.columns, pa.repeat(scalar(kind, pa.string()), n),
                         pa.repeat(scalar(ordinal, pa.int32()), n), pa.repeat(scalar(snapshot_id, pa.int64()), n)],
                        names=[*rows.column_names, CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID]).to_batches()
            return
        reader, tasks, identity = partition.value
        yield from reader.read(tasks, None, identity)

    def commit(self, end: dict) -> None:
        # (the added files of the snapshots the stream has passed are not needed again)
        table = self._table
        if table is None or end["snapshot_id"] < 0:
            return
        passed = {s.snapshot_id for s in table.metadata.ancestors(end["snapshot_id"])} - {end["snapshot_id"]}
        for sid in passed & set(self._added):
            del self._added[sid]

    def added(self, snap: Snapshot) -> list[dict]:
        """The data files ``snap`` (an append) added, as scan tasks, in the order of their paths."""
        if snap.snapshot_id not in self._added:
            table = self.table(refresh=False)
            tasks = appended_tasks(table.metadata, table.io, [snap]).to_pylist()
            self._added[snap.snapshot_id] = sorted(tasks, key=lambda t: t["file_path"])
        return self._added[snap.snapshot_id]

    def chain(self, start: dict, end: int | None = None, refresh: bool = True) -> Iterator[tuple[Snapshot, int]]:
        """The snapshots from ``start`` to ``end`` (default: the current snapshot, or under Trigger.AvailableNow the
        one current when the query began), oldest first, each with the position of the first of its files to
        read; a delete or overwrite snapshot the settings do not skip is a named error."""
        table = self.table(refresh)
        meta = table.metadata
        end = end if end is not None else self._until if self._until is not None else meta.current_snapshot_id
        if end is None or end < 0:
            return
        back: list[Snapshot] = []
        for snap in meta.ancestors(end):
            if snap.snapshot_id == start["snapshot_id"]:
                back.append(snap)
                break
            back.append(snap)
        else:
            if start["snapshot_id"] >= 0:
                raise ValidationError(f"the stream's offset is at snapshot {start['snapshot_id']}, which is no longer "
                                      f"an ancestor of snapshot {end} of table {table.name} (expired, or the branch "
                                      "was rolled back)")
        since = self.settings.get("stream_from_timestamp_ms")
        for snap in reversed(back):
            if snap.snapshot_id == start["snapshot_id"]:
                yield snap, int(start["position"])
                continue
            if since is not None and start["snapshot_id"] < 0 and snap.timestamp_ms < int(since):
                continue
            if snap.operation not in (APPEND, REPLACE) and not self.changes:
                self.check_passable(table, snap)
            yield snap, 0

    def check_passable(self, table: Table, snap: Snapshot) -> None:
        """A named error for a delete or overwrite snapshot the settings do not let the stream pass."""
        op = snap.operation
        for kind, option in ((DELETED_ROWS, "skip_delete_snapshots"), (OVERWROTE_ROWS, "skip_overwrite_snapshots")):
            if op == kind:
                if not self.settings.get(option):
                    raise ValidationError(f"the stream cannot read {kind} snapshot {snap.snapshot_id} of table "
                                          f"{table.name}: it removes rows a stream of appends cannot take back; "
                                          f"to pass such snapshots, read_stream({option}=True)")
                return
        raise ValidationError(f"the stream cannot read snapshot {snap.snapshot_id} of table {table.name}: unknown "
                              f"operation {op!r}")


__all__ = ["stream_frame", "StreamSource", "NAME"]
