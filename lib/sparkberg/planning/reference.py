"""The reference planner: the same plan as :mod:`sparkberg.planning.scan`, row at a time, in plain Python
with the scalar evaluators of :mod:`sparkberg.expressions` and no Spark. Tests run both on the same tables
and filters and expect the same files with the same deletes; :class:`DeleteIndex` is the oracle the planners'
delete matching (:class:`sparkberg.planning.deletes.DeleteMatcher`) is compared against.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from sparkberg.avro.manifest import read_manifest
from sparkberg.expressions.evaluators import manifest_may_match, metrics_may_match
from sparkberg.expressions.predicates import TRUE, AlwaysTrue, Bound, evaluate
from sparkberg.expressions.projection import inclusive_projection
from sparkberg.io.fileio import FileIO
from sparkberg.planning.deletes import EqStats, delete_sort_key, eq_columns, eq_delete_may_apply, eq_stats, in_path_bounds, path_bounds
from sparkberg.planning.entries import EntryDecoder, snapshot_manifests
from sparkberg.format.manifests import DELETED, MANIFEST_DATA, ManifestFile, inherit
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.snapshots import Snapshot


def reference_plan(metadata: TableMetadata, io: FileIO, snapshot: Snapshot | None, bound: Bound = TRUE
                   ) -> dict[str, set[str]]:
    """{data file path: {paths of the delete files that apply}} for a snapshot and a bound filter."""
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


class DeleteIndex:
    """Delete entries indexed for lookups by data file. Entries are (spec id, partition key, data sequence
    number, delete file dict[, file_path bounds]) where the dict has the plan's delete fields."""

    def __init__(self, deletes: Iterable[tuple], unpartitioned_spec_ids: set[int], required: frozenset = frozenset(),
                 prunable: frozenset = frozenset()):
        self.by_partition: dict[tuple, list] = defaultdict(list)  # position and equality deletes
        self.dvs: dict[str, list] = defaultdict(list)
        self.global_eq: list = []
        self.bounds: dict[int, tuple] = {}
        self.stats: dict[int, EqStats] = {}
        self.required, self.prunable = required, prunable
        for spec_id, pkey, seq, d, *rest in deletes:
            if rest and rest[0]:
                self.bounds[id(d)] = rest[0]
            if len(rest) > 1 and rest[1] is not None:
                self.stats[id(d)] = rest[1]
            if d["content"] == 1 and d["file_format"] == "puffin":
                self.dvs[d["referenced_data_file"]].append((seq, d))
            elif d["content"] == 2 and spec_id in unpartitioned_spec_ids:
                self.global_eq.append((seq, d))
            else:
                self.by_partition[(spec_id, pkey)].append((seq, d))

    def for_file(self, spec_id: int, pkey: Any, data_seq: int, path: str, stats: EqStats | None = None) -> list[dict]:
        """The delete files that apply to one data file, sorted as the distributed planner sorts them;
        ``stats`` (of the data file's equality columns) prune equality deletes as Iceberg Java does."""
        out = [d for seq, d in self.dvs.get(path, ()) if data_seq <= seq]
        has_dv = bool(out)
        for seq, d in self.by_partition.get((spec_id, pkey), ()):
            if d["content"] == 1:
                if not has_dv and data_seq <= seq and d["referenced_data_file"] in (None, path) and \
                        in_path_bounds(path, self.bounds.get(id(d))):
                    out.append(d)
            elif data_seq < seq and self._eq_applies(stats, d):
                out.append(d)
        out += [d for seq, d in self.global_eq if data_seq < seq and self._eq_applies(stats, d)]
        return sorted(out, key=delete_sort_key)


    def _eq_applies(self, stats: EqStats | None, d: dict) -> bool:
        return eq_delete_may_apply(stats, self.stats.get(id(d)), d.get("equality_ids"), self.required, self.prunable)


def partition_key(partition: dict) -> tuple:
    return tuple(sorted(partition.items(), key=lambda kv: str(kv[0])))


def reference_entries(decoder: EntryDecoder, mf: ManifestFile, manifest_ordinal: int, data: bytes) -> list[dict]:
    """What ``decoder`` makes of a manifest (its bytes), row at a time from the reference decoder's objects:
    inheritance by :func:`~sparkberg.format.manifests.inherit`, pruning by the scalar evaluators. The oracle the
    columnar entries are compared against."""
    m = read_manifest(data, mf.manifest_path, with_metrics=decoder.with_metrics or decoder.with_path_bounds or
                      bool(decoder.eq_types) or
                      decoder.metrics_filter is not None)
    pfilter = decoder.partition_filters.get(mf.partition_spec_id, TRUE)
    rows = []
    for i, e in enumerate(inherit(m.entries, mf)):
        if e.status == DELETED and not decoder.include_deleted:
            continue
        d = e.data_file
        if not isinstance(pfilter, AlwaysTrue) and not evaluate(pfilter, d.partition):
            continue
        if decoder.metrics_filter is not None and not decoder.metrics_filter(d):
            continue
        row = {
            "_manifest_ordinal": manifest_ordinal, "_entry_ordinal": i, "manifest_path": mf.manifest_path,
            "status": e.status, "snapshot_id": e.snapshot_id, "sequence_number": e.sequence_number,
            "file_sequence_number": e.file_sequence_number, "content": d.content, "file_path": d.file_path,
            "file_format": d.file_format.lower(), "spec_id": mf.partition_spec_id,
            "partition": decoder.layout.row(mf.partition_spec_id, d.partition), "record_count": d.record_count,
            "file_size_in_bytes": d.file_size_in_bytes,
            "equality_ids": None if d.equality_ids is None else list(d.equality_ids),
            "sort_order_id": d.sort_order_id, "first_row_id": d.first_row_id,
            "referenced_data_file": d.referenced_data_file, "content_offset": d.content_offset,
            "content_size_in_bytes": d.content_size_in_bytes,
            "split_offsets": None if d.split_offsets is None else list(d.split_offsets),
            "key_metadata": d.key_metadata,
        }
        if decoder.with_metrics:
            row.update(column_sizes=_map(d.column_sizes), value_counts=_map(d.value_counts),
                       null_value_counts=_map(d.null_value_counts), nan_value_counts=_map(d.nan_value_counts),
                       lower_bounds=_map(d.lower_bounds), upper_bounds=_map(d.upper_bounds))
        if decoder.with_path_bounds:
            lower, upper = path_bounds(d.lower_bounds, d.upper_bounds) \
                if d.content == 1 and d.referenced_data_file is None else (None, None)
            row.update(_path_lower=lower, _path_upper=upper)
        if decoder.eq_types:
            row.update(decoder._eq_columns(d.content, d.equality_ids, d.value_counts, d.null_value_counts,
                                           d.lower_bounds, d.upper_bounds))
        rows.append(row)
    readable = getattr(decoder, "readable_rows", None)
    return rows if readable is None else readable(rows)


def _map(m: dict | None) -> list | None:
    return None if m is None else list(m.items())
