"""The reference planner: the same plan as :mod:`sparkberg.planning.scan`, row at a time, in plain Python
with the scalar evaluators of :mod:`sparkberg.expressions` and no Spark. Tests run both on the same tables
and filters and expect the same files with the same deletes.
"""
from __future__ import annotations

from sparkberg.avro.manifest import DELETED, MANIFEST_DATA, inherit, read_manifest
from sparkberg.expressions.evaluators import manifest_may_match, metrics_may_match
from sparkberg.expressions.predicates import TRUE, Bound, evaluate
from sparkberg.expressions.projection import inclusive_projection
from sparkberg.io.fileio import FileIO
from sparkberg.planning.matching import DeleteIndex, eq_columns, eq_stats, partition_key, path_bounds
from sparkberg.spec.metadata import TableMetadata
from sparkberg.spec.snapshots import Snapshot


def reference_plan(metadata: TableMetadata, io: FileIO, snapshot: Snapshot | None, bound: Bound = TRUE
                   ) -> dict[str, set[str]]:
    """{data file path: {paths of the delete files that apply}} for a snapshot and a bound filter."""
    from sparkberg.planning.entries import snapshot_manifests

    if snapshot is None:
        return {}
    schema = metadata.current_schema
    types = {f.field_id: f.field_type for s in metadata.schemas for f in s.index_by_id().values()}
    types.update({f.field_id: f.field_type for f in schema.index_by_id().values()})
    projections = {s.spec_id: inclusive_projection(bound, s, schema) for s in metadata.partition_specs}
    data, deletes = [], []
    for mf in snapshot_manifests(io, snapshot):
        proj = projections.get(mf.partition_spec_id, TRUE)
        if not manifest_may_match(proj, metadata.spec(mf.partition_spec_id).partition_type(schema), mf.partitions):
            continue
        for e in inherit(read_manifest(io.read(mf.manifest_path), mf.manifest_path).entries, mf):
            d = e.data_file
            if e.status == DELETED or not evaluate(proj, d.partition):
                continue
            if mf.content == MANIFEST_DATA:
                if d.content == 0 and metrics_may_match(bound, types, d.record_count, d.value_counts,
                                                        d.null_value_counts, d.nan_value_counts, d.lower_bounds,
                                                        d.upper_bounds):
                    data.append((mf.partition_spec_id, e))
            elif d.content != 0:
                deletes.append((mf.partition_spec_id, e))
    unpartitioned = {s.spec_id for s in metadata.partition_specs if s.is_unpartitioned}
    # equality deletes are pruned by the stats of their equality columns (Iceberg Java's DeleteFileIndex)
    eq_ids = {i for _, e in deletes if e.data_file.content == 2 for i in e.data_file.equality_ids or ()}
    eq_types, required, prunable = eq_columns(schema, eq_ids)

    def stats(d, types):
        return eq_stats(types, d.value_counts, d.null_value_counts, d.lower_bounds, d.upper_bounds)

    index = DeleteIndex(((spec_id, partition_key(e.data_file.partition), e.sequence_number,
                          {"file_path": e.data_file.file_path, "content": e.data_file.content,
                           "file_format": e.data_file.file_format.lower(),
                           "referenced_data_file": e.data_file.referenced_data_file,
                           "equality_ids": e.data_file.equality_ids},
                          path_bounds(e.data_file.lower_bounds, e.data_file.upper_bounds),
                          stats(e.data_file, {i: eq_types[i] for i in e.data_file.equality_ids or () if i in eq_types})
                          if e.data_file.content == 2 else None)
                         for spec_id, e in deletes), unpartitioned, required, prunable)
    return {e.data_file.file_path: {d["file_path"] for d in index.for_file(
        spec_id, partition_key(e.data_file.partition), e.sequence_number, e.data_file.file_path,
        stats(e.data_file, eq_types) if eq_types else None)}
        for spec_id, e in data}
