"""Exact row counts from a scan's manifests, where the manifests hold the answer.

A data file's ``record_count`` is its rows. A deletion vector's ``record_count`` is its cardinality (the spec:
the number of deleted positions), and a position delete file scoped to one data file (``referenced_data_file``,
as Iceberg's writers and sparkberg's write them) lists distinct positions of that file: when each data file has
at most one of these and no equality delete applies, the table's rows are the data files' counts less the
deletes'. With a filter, every planned file must match whole: its partition satisfies the filter's strict
projection (a filter that implies the user's, :func:`~sparkberg.expressions.sql.translate_filter` with
``strengthen``), and the files the plan left out hold no matching row. Anything else (equality deletes, several
position delete files on one data file, partition-scoped ones, a filter the partitions do not decide) is
answered by reading the rows: :func:`exact_count` says None.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkberg.expressions.predicates import TRUE, Bound, evaluate
from sparkberg.expressions.projection import strict_projection
from sparkberg.planning.entries import PartitionLayout
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.types import Schema


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
        if pc.any(pc.not_equal(flat.field("content"), 1)).as_py():
            return None  # (equality deletes: which rows they delete, only the rows tell)
        owners = pc.list_parent_indices(deletes)
        paths = tasks.column("file_path").combine_chunks().take(owners)
        scoped = pc.or_(pc.is_valid(flat.field("content_offset")),
                        pc.fill_null(pc.equal(flat.field("referenced_data_file"), paths), False))
        if not pc.all(scoped).as_py() or np.bincount(owners.to_numpy(), minlength=tasks.num_rows).max() > 1:
            return None
    if must_match is not TRUE and not _all_match(tasks, layout, metadata, schema, must_match):
        return None
    deleted = pc.sum(flat.field("record_count")).as_py() if len(flat) else 0
    return int(pc.sum(tasks.column("record_count")).as_py() or 0) - int(deleted or 0)


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
