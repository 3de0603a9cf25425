"""Scan tasks read one at a time into Arrow, for the SQL views' data source (:mod:`sparkberg.sql.source`).

Each task's data file is read by field id (:class:`~sparkberg.read.formats.ArrowFileReader`: nested fields
by id, the name mapping for files without ids, v3 defaults for columns a file lacks), and the rows its deletes
delete are removed as the positions they delete, found by the decoders the DataFrame reader uses: position
delete files and deletion vectors by :class:`~sparkberg.read.positions.DeletedPositions`, equality delete
files by :func:`~sparkberg.read.equality.task_equality_positions` (a row equal to a delete row in every
equality column, null equal to null). Both go through the process's delete cache, so a delete file shared by
many data files is decoded once per worker.
"""
from __future__ import annotations

import json
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import types as ST

from sparkberg.errors import NotSupportedError
from sparkberg.read.columns import check_formats, name_mapping
from sparkberg.read.deletecache import DeleteCache
from sparkberg.read.equality import task_equality_positions
from sparkberg.read.formats import ArrowFileReader
from sparkberg.read.positions import DeletedPositions, PositionSources
from sparkberg.spark.tuning import ReadTuning
from sparkberg.spark.types import arrow_schema, to_spark_read_field
from sparkberg.spec import types as T
from sparkberg.spec.metadata import TableMetadata


def read_struct(schema: T.Schema) -> ST.StructType:
    """The Spark columns :class:`TaskReader` gives for ``schema``: those a DataFrame read gives (every column
    nullable, as Spark reads a Parquet file with a schema)."""
    return ST.StructType([to_spark_read_field(f) for f in schema.fields])


class TaskReader:
    """Scan tasks (the dicts of a plan, :meth:`ScanPlan.rows`) -> Arrow batches of ``schema``'s columns
    (Spark's Arrow types), their deleted rows removed. Picklable: it is sent to the executors."""

    def __init__(self, metadata: TableMetadata, schema: T.Schema):
        self.fields = list(schema.fields)
        self.arrow = arrow_schema(read_struct(schema))
        self.mapping = name_mapping(metadata)
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
        ios: dict[str, Any] = {}
        for task in tasks:
            deleted = self.deleted(task, ios, cache)
            reader = ArrowFileReader(task["file_format"].lower(), self.fields, self.arrow, self.mapping,
                                     constants=(identity or {}).get(task["file_path"]))
            start = 0
            for batch in reader.read(task["file_path"]):
                n = batch.num_rows
                if deleted is not None:
                    lo, hi = np.searchsorted(deleted, (start, start + n))
                    if hi > lo:
                        keep = np.ones(n, bool)
                        keep[deleted[lo:hi] - start] = False
                        batch = batch.filter(pa.array(keep))
                start += n
                if batch.num_rows:
                    yield batch

    def deleted(self, task: dict, ios: dict[str, Any], cache: DeleteCache | None) -> np.ndarray | None:
        """The positions of ``task``'s data file that its deletes delete (sorted), None when none apply."""
        if not task["deletes"]:
            return None
        parts = []
        sources = PositionSources.of([task], [0], None, ReadTuning())  # (its thresholds are not used here)
        if not sources.empty:
            positions = DeletedPositions(sources.applies, sources.limits, cache)
            for unit in sources.units():
                parts.extend(positions.found(json.loads(unit), ios).get(0, []))
        if any(d["content"] == 2 for d in task["deletes"]):
            parts.append(task_equality_positions(task, self.all_fields, self.mapping, cache))
        return np.unique(np.concatenate(parts)) if parts else None
