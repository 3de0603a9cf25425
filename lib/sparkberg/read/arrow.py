"""Scan tasks read one at a time into Arrow, for the SQL views' data source (:mod:`sparkberg.sql.source`) and the
streams (:mod:`sparkberg.sql.stream_source`).

Each task's data file is read by field id (:class:`~sparkberg.read.formats.ArrowFileReader`: nested fields
by id, the name mapping for files without ids, v3 defaults for columns a file lacks), and the rows its deletes
delete are removed as the positions they delete, found by the decoders the DataFrame reader uses: position
delete files and deletion vectors by :class:`~sparkberg.read.positions.DeletedPositions`, equality delete
files by :func:`~sparkberg.read.equality.task_equality_positions` (a row equal to a delete row in every
equality column, null equal to null). Both go through the process's delete cache, so a delete file shared by
many data files is decoded once per worker.

:class:`ChangeReader` reads one snapshot's changes (:class:`~sparkberg.planning.changes.SnapshotChange`) as the
changelog does (:mod:`sparkberg.read.changes`), in one process: the rows of the files the snapshot removed are
deleted, those of the files it added inserted, and in the files it kept, the positions its deletes newly delete
are deleted rows; rows deleted and inserted alike (a copy-on-write rewrite carries them over) are not changes.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import types as ST

from sparkberg.arrays import empty_table, from_bools, indices, row_codes, scalar
from sparkberg.errors import NotSupportedError
from sparkberg.io.fileio import FileIO
from sparkberg.read.columns import check_formats, name_mapping
from sparkberg.read.deletecache import DeleteCache
from sparkberg.read.equality import task_equality_positions
from sparkberg.read.formats import ArrowFileReader
from sparkberg.read.positions import DeletedPositions, PositionSources
from sparkberg.spark.tuning import ReadTuning
from sparkberg.spark.types import arrow_schema, to_spark_read_field
from sparkberg.format import types as T
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.metadata_columns import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID


def read_struct(schema: T.Schema) -> ST.StructType:
    """The Spark columns :class:`TaskReader` gives for ``schema``: those a DataFrame read gives (every column
    nullable, as Spark reads a Parquet file with a schema)."""
    return ST.StructType([to_spark_read_field(f) for f in schema.fields])


class TaskReader:
    """Scan tasks (the dicts of a plan, :meth:`ScanPlan.rows`) -> Arrow batches of ``schema``'s columns
    (Spark's Arrow types), their deleted rows removed; the row-lineage fields, where ``schema`` holds them, as
    the spec's "Row Lineage" says (a null in the file inherits the file's first row id plus the row's position,
    and its data sequence number; neither for a file without a first row id). Picklable: it is sent to the
    executors."""

    def __init__(self, metadata: TableMetadata, schema: T.Schema, io: FileIO):
        self.io = io  # (the table's FileIO: data and delete files open with the table's credentials)
        self.fields = list(schema.fields)
        self.arrow = arrow_schema(read_struct(schema))
        ids = [f.field_id for f in self.fields]
        self.lineage = {name: ids.index(f.field_id) for name, f in (("row_id", ROW_ID),
                                                                   ("seq", LAST_UPDATED_SEQUENCE_NUMBER))
                        if f.field_id in ids}
        self.mapping = name_mapping(metadata, nested=True)
        self.all_fields: dict[int, T.NestedField] = {}
        for s in metadata.schemas:
            self.all_fields.update(s.index_by_id())
        self.top_level = {f.field_id for s in metadata.schemas for f in s.fields}

    def check(self, tasks: list[dict]) -> None:
        """Named errors, on the driver, for what :meth:`read` cannot do: a format not read, an equality delete
        on a column nested in a struct (which the DataFrame read, ``Table.to_df``, applies)."""
        check_formats([(t["file_format"], t["file_path"]) for t in tasks], "data")
        for t in tasks:
            for d in t["deletes"]:
                if d["content"] == 2:
                    nested = [i for i in d["equality_ids"] or () if i not in self.top_level]
                    if nested or not d["equality_ids"]:
                        raise NotSupportedError(
                            f"the SQL view cannot apply equality delete file {d['file_path']}: its equality field "
                            f"ids {list(d['equality_ids'] or [])} are not all top-level columns; read the table "
                            "with Table.to_df()")

    def read(self, tasks: list[dict], cache: DeleteCache | None,
             identity: dict[str, dict[int, Any]] | None = None) -> Iterator[pa.RecordBatch]:
        """The rows of ``tasks``, in order, deleted rows removed; a column a file lacks holds its identity partition
        value (``identity``: path -> {field id: value}, :func:`~sparkberg.read.reader.identity_values`)."""
        for task in tasks:
            deleted = self.deleted(task, cache)
            start = 0
            for batch in self.file(task, identity).read(task["file_path"]):
                n = batch.num_rows
                if self.lineage:
                    batch = self.inherited(batch, task, start)
                if deleted is not None:
                    lo, hi = np.searchsorted(deleted, (start, start + n))
                    if hi > lo:
                        keep = np.ones(n, bool)
                        keep[deleted[lo:hi] - start] = False
                        batch = batch.filter(from_bools(keep))
                start += n
                if batch.num_rows:
                    yield batch

    def file(self, task: dict, identity: dict[str, dict[int, Any]] | None) -> ArrowFileReader:
        """The reader of ``task``'s data file, a column the file lacks holding its identity partition value."""
        return ArrowFileReader(task["file_format"].lower(), self.fields, self.arrow, self.mapping,
                               io=self.io, constants={task["file_path"]: (identity or {}).get(task["file_path"], {})})

    def inherited(self, batch: pa.RecordBatch, task: dict, start: int) -> pa.RecordBatch:
        """``batch`` (rows ``start``... of ``task``'s file) with its row-lineage columns inherited where null."""
        import pyarrow.compute as pc
        first = task["first_row_id"]
        columns = list(batch.columns)
        for name, k in self.lineage.items():
            if first is None:
                columns[k] = pa.nulls(batch.num_rows, pa.int64())
                continue
            inherited = indices(np.arange(first + start, first + start + batch.num_rows)) \
                if name == "row_id" else scalar(task["data_sequence_number"], pa.int64())
            columns[k] = pc.coalesce(columns[k], inherited)
        return pa.RecordBatch.from_arrays(columns, schema=batch.schema)

    def matching(self, task: dict, cache: DeleteCache | None, identity: dict[str, dict[int, Any]] | None,
                 matches: Callable[[pa.RecordBatch], np.ndarray]) -> np.ndarray:
        """The positions (sorted, int64) of the rows of ``task``'s data file that ``matches`` (a batch -> a bool
        array) finds, its deleted rows left out."""
        return self.matched_rows(task, cache, identity, matches, rows=False)[0]

    def matched_rows(self, task: dict, cache: DeleteCache | None, identity: dict[str, dict[int, Any]] | None,
                     matches: Callable[[pa.RecordBatch], np.ndarray], rows: bool = True
                     ) -> tuple[np.ndarray, pa.Table | None]:
        """As :meth:`matching`, with those rows (row lineage inherited) as a table of the reader's columns, in the
        positions' order; None for them when ``rows`` is false."""
        found, kept, start = [], [], 0
        for batch in self.file(task, identity).read(task["file_path"]):
            hit = np.flatnonzero(matches(batch))
            if rows and len(hit):
                kept.append((self.inherited(batch, task, start) if self.lineage else batch).take(indices(hit)))
            found.append(hit + start)
            start += batch.num_rows
        out = np.concatenate(found).astype(np.int64) if found else np.zeros(0, np.int64)
        table = (pa.Table.from_batches(kept) if kept else empty_table(self.arrow)) if rows else None
        deleted = self.deleted(task, cache) if len(out) else None
        if deleted is None:
            return out, table
        live = ~np.isin(out, deleted, assume_unique=True)
        return out[live], None if table is None else table.filter(from_bools(live))

    def deleted(self, task: dict, cache: DeleteCache | None) -> np.ndarray | None:
        """The positions of ``task``'s data file that its deletes delete (sorted), None when none apply."""
        if not task["deletes"]:
            return None
        parts = []
        sources = PositionSources.of([task], [0], None, ReadTuning())  # (its thresholds are not used here)
        if not sources.empty:
            positions = DeletedPositions(sources.applies, sources.limits, cache, io=self.io)
            for unit in sources.units():
                parts.extend(positions.found(json.loads(unit)).get(0, []))
        if any(d["content"] == 2 for d in task["deletes"]):
            parts.append(task_equality_positions(task, self.all_fields, self.mapping, cache, self.io))
        return np.unique(np.concatenate(parts)) if parts else None


def comparable(v: Any) -> Any:
    """A value of a row as changelogs compare rows: hashable, NaN equal to NaN and -0.0 not equal to 0.0 (as Java's
    ``Objects.equals`` of doubles)."""
    if isinstance(v, float) and (math.isnan(v) or (v == 0 and math.copysign(1.0, v) < 0)):
        return ("NaN",) if math.isnan(v) else ("-0.0",)
    if isinstance(v, dict):
        return tuple((k, comparable(x)) for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return tuple(comparable(x) for x in v)
    return v


class ChangeReader:
    """The rows one snapshot changed, as Arrow tables of ``reader``'s columns: see the module docstring.
    Picklable."""

    def __init__(self, reader: TaskReader):
        self.reader = reader

    def changes(self, before: list[dict], after: list[dict], cache: DeleteCache | None,
                identity: dict[str, dict[int, Any]] | None = None) -> tuple[pa.Table, pa.Table]:
        """(deleted rows, inserted rows) of the snapshot whose tasks, as of its parent and as of itself, are
        ``before`` and ``after``."""
        now = {t["file_path"]: t for t in after}
        was = {t["file_path"]: t for t in before}
        deleted, inserted = [], []
        for path in sorted(was.keys() & now.keys()):  # (kept files whose deletes changed)
            gone = self.reader.deleted(was[path], cache)
            going = self.reader.deleted(now[path], cache)
            gone = np.zeros(0, np.int64) if gone is None else gone
            going = np.zeros(0, np.int64) if going is None else going
            deleted += self.rows_at(now[path], np.setdiff1d(going, gone), identity)
            inserted += self.rows_at(now[path], np.setdiff1d(gone, going), identity)
        removed = [t for p, t in was.items() if p not in now]
        added = [t for p, t in now.items() if p not in was]
        carried_out = self._table(list(self.reader.read(removed, cache, identity)))
        carried_in = self._table(list(self.reader.read(added, cache, identity)))
        carried_out, carried_in = _without_carryovers(carried_out, carried_in)
        return (pa.concat_tables([self._table(deleted), carried_out]),
                pa.concat_tables([self._table(inserted), carried_in]))

    def rows_at(self, task: dict, positions: np.ndarray, identity: dict[str, dict[int, Any]] | None
                ) -> list[pa.RecordBatch]:
        """The rows at ``positions`` (sorted) of ``task``'s data file, no delete applied."""
        if not len(positions):
            return []
        out, start = [], 0
        for batch in self.reader.file(task, identity).read(task["file_path"]):
            lo, hi = np.searchsorted(positions, (start, start + batch.num_rows))
            if hi > lo:
                out.append(batch.take(indices(positions[lo:hi] - start)))
            start += batch.num_rows
        return out

    def _table(self, batches: list[pa.RecordBatch]) -> pa.Table:
        return pa.Table.from_batches(batches, schema=self.reader.arrow)


def _without_carryovers(deleted: pa.Table, inserted: pa.Table) -> tuple[pa.Table, pa.Table]:
    """``deleted`` and ``inserted`` without the rows found in both, as many times as in both (Java's
    ``RemoveCarryoverIterator``: a copy-on-write rewrite deletes and inserts them unchanged). Identical rows are
    interchangeable, so each distinct row is kept as many times as one side has it more than the other: counted
    by the rows' codes (:func:`~sparkberg.arrays.row_codes`), or as Python values where a column is nested. The
    rows kept of each side are its first of each distinct row, in its order."""
    if not deleted.num_rows or not inserted.num_rows:
        return deleted, inserted
    if any(pa.types.is_nested(f.type) for f in deleted.schema):
        return _without_carryovers_by_rows(deleted, inserted)
    n = deleted.num_rows
    codes = row_codes([pa.chunked_array(deleted.column(k).chunks + inserted.column(k).chunks, f.type)
                       for k, f in enumerate(deleted.schema)])[0]
    out, into = codes[:n], codes[n:]
    distinct = int(codes.max()) + 1
    net = np.bincount(out, minlength=distinct) - np.bincount(into, minlength=distinct)

    def kept(side: pa.Table, side_codes: np.ndarray, more: np.ndarray) -> pa.Table:
        times, count = more[side_codes], np.bincount(side_codes, minlength=distinct)[side_codes]
        keep = times >= count  # (a row none of whose copies is carried over)
        partly = np.flatnonzero((times > 0) & (times < count))
        if len(partly):  # (a row some of whose copies are: its first ones kept, by each copy's rank among them)
            order = partly[np.argsort(side_codes[partly], kind="stable")]
            ordered = side_codes[order]
            starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
            rank = np.arange(len(ordered)) - np.repeat(starts, np.diff(np.r_[starts, len(ordered)]))
            keep[order[rank < more[ordered]]] = True
        return side if keep.all() else side.take(indices(np.flatnonzero(keep)))
    return kept(deleted, out, np.maximum(net, 0)), kept(inserted, into, np.maximum(-net, 0))


def _without_carryovers_by_rows(deleted: pa.Table, inserted: pa.Table) -> tuple[pa.Table, pa.Table]:
    """:func:`_without_carryovers` comparing rows as Python values (:func:`comparable`), for nested columns."""
    def keys(t: pa.Table) -> list[tuple]:
        return [tuple(comparable(v) for v in row.values()) for row in t.to_pylist()]
    out_keys, in_keys = keys(deleted), keys(inserted)
    both = Counter(out_keys) & Counter(in_keys)
    if not both:
        return deleted, inserted

    def kept(row_keys: list[tuple]) -> pa.Array:
        left = Counter(both)
        mask = []
        for k in row_keys:
            carried = left[k] > 0
            left[k] -= carried
            mask.append(not carried)
        return from_bools(np.array(mask, bool))
    return deleted.filter(kept(out_keys)), inserted.filter(kept(in_keys))
