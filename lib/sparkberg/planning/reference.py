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
    out: dict[str, set[str]] = {}
    for spec_id, e in data:
        d, seq = e.data_file, e.sequence_number
        applied, has_dv = set(), False
        positions = set()
        for dspec, de in deletes:
            dd, dseq = de.data_file, de.sequence_number
            same_partition = dspec == spec_id and dd.partition == d.partition
            if dd.content == 1 and dd.file_format.lower() == "puffin":
                if dd.referenced_data_file == d.file_path and seq <= dseq:
                    applied.add(dd.file_path)
                    has_dv = True
            elif dd.content == 1:
                if same_partition and seq <= dseq and dd.referenced_data_file in (None, d.file_path):
                    positions.add(dd.file_path)
            elif dd.content == 2:
                if seq < dseq and (dspec in unpartitioned or same_partition):
                    applied.add(dd.file_path)
        if not has_dv:
            applied |= positions
        out[d.file_path] = applied
    return out
