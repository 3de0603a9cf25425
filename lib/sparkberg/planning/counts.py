"""Exact row counts, minimums and maximums from a scan's manifests, where the manifests hold the answer.

A data file's ``record_count`` is its rows. A deletion vector's ``record_count`` is its cardinality (the spec:
the number of deleted positions), and a position delete file scoped to one data file (``referenced_data_file``,
as Iceberg's writers and sparkberg's write them) lists distinct positions of that file: when each data file has
at most one of these and no equality delete applies, the table's rows are the data files' counts less the
deletes'. With a filter, every planned file must match whole: its partition satisfies the filter's strict
projection (a filter that implies the user's, :func:`~sparkberg.expressions.sql.translate_filter` with
``strengthen``), and the files the plan left out hold no matching row. Anything else (equality deletes, several
position delete files on one data file, partition-scoped ones, a filter the partitions do not decide) is
answered by reading the rows: :func:`exact_count` says None.

A column's minimum and maximum are its files' bounds (:func:`exact_bounds`) when the bounds are the values
themselves: no delete applies to any of the files (a deleted row may hold the bound), every file that has a
non-null value has both bounds, no float column has a NaN (the bounds leave NaN out; Spark's max puts it above
every number) or a bound of zero (the bounds do not tell -0.0 from 0.0 as Spark's result would), the column
has had one type (bounds written before a promotion are of the older type), and for strings and binaries the
column's metrics mode is ``full`` (a truncated bound is a prefix, not a value). UUIDs, which Spark reads as
strings, are not answered this way.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkberg.arrays import int_values, true_mask, valid_mask
from sparkberg.expressions.predicates import TRUE, Bound, evaluate
from sparkberg.expressions.projection import strict_projection
from sparkberg.planning.entries import PartitionLayout
from sparkberg.format.metadata import TableMetadata
from sparkberg.format import types as T
from sparkberg.format.types import Schema
from sparkberg.format.values import from_bytes


def exact_count(tasks: pa.Table, layout: PartitionLayout, metadata: TableMetadata, schema: Schema,
                must_match: Bound = TRUE) -> int | None:
    """The rows of a plan's ``tasks`` (its Arrow table: ``record_count``, ``deletes``, ``spec_id``,
    ``partition``) that match ``must_match`` (a bound filter implying the read's), from the manifests alone;
    None when the manifests cannot give it exactly (see the module docstring)."""
    if tasks.num_rows == 0:
        return 0
    deletes = tasks.column("deletes").combine_chunks()
    flat = pc.list_flatten(deletes)
    if len(flat):
        # (numpy where a Python value would meet Arrow: pyarrow imports pandas to convert one, ~0.3 s a process)
        if (int_values(flat.field("content"))[0] != 1).any():
            return None  # (equality deletes: which rows they delete, only the rows tell)
        owners = pc.list_parent_indices(deletes)
        paths = tasks.column("file_path").combine_chunks().take(owners)
        scoped = valid_mask(flat.field("content_offset")) | \
            true_mask(pc.equal(flat.field("referenced_data_file"), paths))
        if not scoped.all() or np.bincount(int_values(owners)[0], minlength=tasks.num_rows).max() > 1:
            return None
    if must_match is not TRUE and not _all_match(tasks, layout, metadata, schema, must_match):
        return None
    deleted = pc.sum(flat.field("record_count")).as_py() if len(flat) else 0
    return int(pc.sum(tasks.column("record_count")).as_py() or 0) - int(deleted or 0)


def any_deletes(tasks: pa.Table) -> bool:
    """Whether a delete file applies to any of a plan's ``tasks``."""
    return bool(pc.sum(pc.list_value_length(tasks.column("deletes"))).as_py())


def _all_match(tasks: pa.Table, layout: PartitionLayout, metadata: TableMetadata, schema: Schema,
               must_match: Bound) -> bool:
    """Whether every row of every task's file matches ``must_match``, as its partition values decide."""
    projections = {s.spec_id: strict_projection(must_match, s, schema) for s in metadata.partition_specs}
    partitions = tasks.column("partition").to_pylist()
    for spec_id, partition in zip(tasks.column("spec_id").to_pylist(), partitions):
        values = {fid: (partition or {}).get(layout.slots[i].name) for fid, i in layout.by_spec.get(spec_id, ())}
        if evaluate(projections[spec_id], values) is not True:
            return False
    return True


# the types whose bounds order their values as Spark's min and max do, whatever the metrics mode (not time or the
# nanosecond timestamps, which Spark reads as other types, nor UUIDs, which it reads as strings)
_ORDERED_AS_SPARK = (T.BOOLEAN, T.INT, T.LONG, T.FLOAT, T.DOUBLE, T.DATE, T.TIMESTAMP, T.TIMESTAMPTZ)


def metrics_rows(files: pa.Table) -> list[tuple]:
    """Each file's (record count, null counts, NaN counts, lower bounds, upper bounds), the maps as dicts: what
    :func:`exact_bounds` reads, made once for all the columns a query asks about."""
    columns = [files.column(c).to_pylist() for c in ("record_count", "null_value_counts", "nan_value_counts",
                                                      "lower_bounds", "upper_bounds")]
    return [(records, *(dict(m or ()) for m in maps)) for records, *maps in zip(*columns)]


def exact_bounds(files: list[tuple], field_id: int, field_type: T.IcebergType, full_bounds: bool
                 ) -> tuple[Any, Any] | None:
    """(min, max) of column ``field_id`` (of ``field_type``) over ``files`` (:func:`metrics_rows` of
    :data:`~sparkberg.planning.scan.METRICS_ENTRY_COLUMNS`, none of them with a delete that applies), as in-memory
    values ((None, None) when every value is null), from their bounds alone; None when the bounds cannot give
    them exactly (the module docstring). ``full_bounds``: the column's metrics mode is ``full`` (strings and
    binaries are answered only then)."""
    if field_type in (T.STRING, T.BINARY) or isinstance(field_type, T.FixedType):
        if not full_bounds:
            return None
    elif field_type not in _ORDERED_AS_SPARK and not isinstance(field_type, T.DecimalType):
        return None
    floating = field_type in (T.FLOAT, T.DOUBLE)
    low = high = None
    for records, nulls, nans, lowers, uppers in files:
        if not records:
            continue
        if floating and nans.get(field_id, 1) != 0:
            return None  # (NaNs, or no NaN count to say there are none)
        if nulls.get(field_id) == records:
            continue  # (only nulls)
        lower, upper = lowers.get(field_id), uppers.get(field_id)
        if lower is None or upper is None:
            return None
        lower, upper = from_bytes(field_type, lower), from_bytes(field_type, upper)
        if floating and (lower == 0 or upper == 0 or math.isnan(lower) or math.isnan(upper)):
            return None
        low = lower if low is None or lower < low else low
        high = upper if high is None or upper > high else high
    return low, high
