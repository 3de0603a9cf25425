"""Manifests as a DataFrame: one canonical, field-id keyed row per manifest entry, for every format version.

The manifest list is read on the driver (it is small). The manifests it names become a DataFrame of
paths; ``mapInArrow`` decodes them on the executors with fastavro, applies inheritance (snapshot ids,
sequence numbers, ``first_row_id``) and, when given, prunes entries by their partition tuple with the
inclusive projection of the scan filter, so pruned entries never leave the executor.

Partition tuples of all specs share one struct, :class:`PartitionLayout`: one slot per (partition field
id, result type), named as the newest spec names it, values in Iceberg's physical form (date/day as
int days, time and timestamps as long micros/nanos) so predicates compare exactly, without time zones.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import pyarrow as pa

from sparkberg.avro.manifest import (
    DELETED, ManifestFile, inherit, manifest_file_from_manifest, read_manifest, read_manifest_list,
)
from sparkberg.expressions.predicates import TRUE, AlwaysTrue, Bound, evaluate
from sparkberg.io.fileio import FileIO, file_io_for
from sparkberg.planning.matching import path_bounds
from sparkberg.spec import types as T
from sparkberg.spec.metadata import TableMetadata
from sparkberg.spec.snapshots import Snapshot

# Arrow/Spark types of partition values in their physical form
_PHYSICAL = {
    "boolean": (pa.bool_(), "boolean"), "int": (pa.int32(), "int"), "long": (pa.int64(), "bigint"),
    "float": (pa.float32(), "float"), "double": (pa.float64(), "double"), "date": (pa.int32(), "int"),
    "time": (pa.int64(), "bigint"), "timestamp": (pa.int64(), "bigint"), "timestamptz": (pa.int64(), "bigint"),
    "timestamp_ns": (pa.int64(), "bigint"), "timestamptz_ns": (pa.int64(), "bigint"),
    "string": (pa.string(), "string"), "uuid": (pa.string(), "string"), "binary": (pa.binary(), "binary"),
}


def physical_types(t: T.IcebergType) -> tuple[pa.DataType, str]:
    """(Arrow type, Spark DDL type) holding values of ``t`` in physical form."""
    if isinstance(t, T.DecimalType):
        return pa.decimal128(t.precision, t.scale), f"decimal({t.precision},{t.scale})"
    if isinstance(t, T.FixedType):
        return pa.binary(), "binary"
    if t.to_json() in _PHYSICAL:
        return _PHYSICAL[t.to_json()]
    return pa.string(), "string"


@dataclass(frozen=True)
class Slot:
    name: str
    field_id: int
    field_type: T.IcebergType


class PartitionLayout:
    """The unified partition struct of a table: slots for every partition field of every spec."""

    def __init__(self, metadata: TableMetadata):
        schema = metadata.current_schema
        all_fields = {}
        for f in (f for s in metadata.schemas for f in s.index_by_id().values()):
            all_fields.setdefault(f.field_id, f)
        all_fields.update(schema.index_by_id())
        slots: dict[tuple[int, str], Slot] = {}
        self.by_spec: dict[int, list[tuple[int, int]]] = {}  # spec id -> [(partition field id, slot index)]
        names: set[str] = set()
        for spec in sorted(metadata.partition_specs, key=lambda s: -s.spec_id):
            for pf in spec.fields:
                src = all_fields.get(pf.source_id)
                rtype = (pf.transform.result_type(src.field_type) if src is not None and pf.transform.is_known
                         else T.STRING)
                key = (pf.field_id, rtype.to_json())
                if key not in slots:
                    name = pf.name if pf.name not in names else f"{pf.name}_{pf.field_id}"
                    names.add(name)
                    slots[key] = Slot(name, pf.field_id, rtype)
        self.slots = sorted(slots.values(), key=lambda s: s.field_id)
        index = {(s.field_id, s.field_type.to_json()): i for i, s in enumerate(self.slots)}
        for spec in metadata.partition_specs:
            pairs = []
            for pf in spec.fields:
                src = all_fields.get(pf.source_id)
                rtype = (pf.transform.result_type(src.field_type) if src is not None and pf.transform.is_known
                         else T.STRING)
                pairs.append((pf.field_id, index[(pf.field_id, rtype.to_json())]))
            self.by_spec[spec.spec_id] = pairs

    def arrow_type(self) -> pa.DataType:
        return pa.struct([pa.field(s.name, physical_types(s.field_type)[0]) for s in self.slots]) if self.slots \
            else pa.struct([pa.field("_none", pa.int32())])

    def spark_ddl(self) -> str:
        if not self.slots:
            return "struct<_none: int>"
        return "struct<" + ", ".join(f"`{s.name}`: {physical_types(s.field_type)[1]}" for s in self.slots) + ">"

    def row(self, spec_id: int, partition: dict[int, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {s.name: None for s in self.slots} if self.slots else {"_none": None}
        for fid, i in self.by_spec.get(spec_id, ()):
            slot = self.slots[i]
            v = partition.get(fid)
            if v is not None and slot.field_type == T.UUID:
                v = str(v)
            out[slot.name] = v
        return out


# The canonical entries schema (spec field names; `_`-prefixed columns are bookkeeping)
def entries_ddl(layout: PartitionLayout, with_metrics: bool, with_path_bounds: bool = False) -> str:
    cols = [
        "_manifest_ordinal int", "_entry_ordinal int", "manifest_path string", "status int", "snapshot_id bigint",
        "sequence_number bigint", "file_sequence_number bigint", "content int", "file_path string",
        "file_format string", "spec_id int", f"partition {layout.spark_ddl()}", "record_count bigint",
        "file_size_in_bytes bigint", "equality_ids array<int>", "sort_order_id int", "first_row_id bigint",
        "referenced_data_file string", "content_offset bigint", "content_size_in_bytes bigint",
        "split_offsets array<bigint>", "key_metadata binary",
    ]
    if with_metrics:
        cols += ["column_sizes map<int,bigint>", "value_counts map<int,bigint>", "null_value_counts map<int,bigint>",
                 "nan_value_counts map<int,bigint>", "lower_bounds map<int,binary>", "upper_bounds map<int,binary>"]
    if with_path_bounds:
        cols += ["_path_lower string", "_path_upper string"]
    return ", ".join(cols)


def _arrow_schema(layout: PartitionLayout, with_metrics: bool, with_path_bounds: bool = False) -> pa.Schema:
    fields = [
        ("_manifest_ordinal", pa.int32()), ("_entry_ordinal", pa.int32()), ("manifest_path", pa.string()),
        ("status", pa.int32()), ("snapshot_id", pa.int64()), ("sequence_number", pa.int64()),
        ("file_sequence_number", pa.int64()), ("content", pa.int32()), ("file_path", pa.string()),
        ("file_format", pa.string()), ("spec_id", pa.int32()), ("partition", layout.arrow_type()),
        ("record_count", pa.int64()), ("file_size_in_bytes", pa.int64()), ("equality_ids", pa.list_(pa.int32())),
        ("sort_order_id", pa.int32()), ("first_row_id", pa.int64()), ("referenced_data_file", pa.string()),
        ("content_offset", pa.int64()), ("content_size_in_bytes", pa.int64()),
        ("split_offsets", pa.list_(pa.int64())), ("key_metadata", pa.binary()),
    ]
    if with_metrics:
        fields += [(n, pa.map_(pa.int32(), pa.int64())) for n in ("column_sizes", "value_counts",
                                                                  "null_value_counts", "nan_value_counts")]
        fields += [(n, pa.map_(pa.int32(), pa.binary())) for n in ("lower_bounds", "upper_bounds")]
    if with_path_bounds:
        fields += [("_path_lower", pa.string()), ("_path_upper", pa.string())]
    return pa.schema(fields)


def _map(m: dict | None):
    return None if m is None else list(m.items())


class EntryDecoder:
    """Executor-side decoding of manifests into canonical entry rows (picklable; no Spark inside)."""

    def __init__(self, layout: PartitionLayout, with_metrics: bool = False, include_deleted: bool = False,
                 partition_filters: dict[int, Bound] | None = None, metrics_filter: Any = None,
                 with_path_bounds: bool = False):
        self.layout = layout
        self.with_metrics = with_metrics
        self.with_path_bounds = with_path_bounds  # position delete files' file_path range (delete pruning)
        self.include_deleted = include_deleted
        self.partition_filters = partition_filters or {}
        self.metrics_filter = metrics_filter
        self.schema = _arrow_schema(layout, with_metrics, with_path_bounds)

    @property
    def ddl(self) -> str:
        return entries_ddl(self.layout, self.with_metrics, self.with_path_bounds)

    def decode(self, mf: ManifestFile, manifest_ordinal: int, data: bytes) -> list[dict]:
        m = read_manifest(data, mf.manifest_path, with_metrics=self.with_metrics or self.with_path_bounds or
                          self.metrics_filter is not None)
        pfilter = self.partition_filters.get(mf.partition_spec_id, TRUE)
        rows = []
        for i, e in enumerate(inherit(m.entries, mf)):
            if e.status == DELETED and not self.include_deleted:
                continue
            d = e.data_file
            if not isinstance(pfilter, AlwaysTrue) and not evaluate(pfilter, d.partition):
                continue
            if self.metrics_filter is not None and not self.metrics_filter(d):
                continue
            row = {
                "_manifest_ordinal": manifest_ordinal, "_entry_ordinal": i, "manifest_path": mf.manifest_path,
                "status": e.status, "snapshot_id": e.snapshot_id, "sequence_number": e.sequence_number,
                "file_sequence_number": e.file_sequence_number, "content": d.content, "file_path": d.file_path,
                "file_format": d.file_format.lower(), "spec_id": mf.partition_spec_id,
                "partition": self.layout.row(mf.partition_spec_id, d.partition), "record_count": d.record_count,
                "file_size_in_bytes": d.file_size_in_bytes,
                "equality_ids": None if d.equality_ids is None else list(d.equality_ids),
                "sort_order_id": d.sort_order_id, "first_row_id": d.first_row_id,
                "referenced_data_file": d.referenced_data_file, "content_offset": d.content_offset,
                "content_size_in_bytes": d.content_size_in_bytes,
                "split_offsets": None if d.split_offsets is None else list(d.split_offsets),
                "key_metadata": d.key_metadata,
            }
            if self.with_metrics:
                row.update(column_sizes=_map(d.column_sizes), value_counts=_map(d.value_counts),
                           null_value_counts=_map(d.null_value_counts), nan_value_counts=_map(d.nan_value_counts),
                           lower_bounds=_map(d.lower_bounds), upper_bounds=_map(d.upper_bounds))
            if self.with_path_bounds:
                lower, upper = path_bounds(d.lower_bounds, d.upper_bounds) if d.content == 1 else (None, None)
                row.update(_path_lower=lower, _path_upper=upper)
            rows.append(row)
        return rows

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        io_by_scheme: dict[str, FileIO] = {}
        for batch in batches:
            for r in batch.to_pylist():
                mf = ManifestFile(**{k: r[k] for k in _MANIFEST_COLUMNS if k in r})
                path = mf.manifest_path
                scheme = path.split("://", 1)[0] if "://" in path else "file"
                io = io_by_scheme.get(scheme) or io_by_scheme.setdefault(scheme, file_io_for(path))
                rows = self.decode(mf, r["_manifest_ordinal"], io.read(path))
                if rows:
                    yield pa.RecordBatch.from_pylist(rows, schema=self.schema)


_MANIFEST_COLUMNS = ("manifest_path", "manifest_length", "partition_spec_id", "added_snapshot_id", "content",
                     "sequence_number", "min_sequence_number", "first_row_id")
MANIFESTS_DDL = ("_manifest_ordinal int, manifest_path string, manifest_length bigint, partition_spec_id int, "
                 "added_snapshot_id bigint, content int, sequence_number bigint, min_sequence_number bigint, "
                 "first_row_id bigint")


def snapshot_manifests(io: FileIO, snapshot: Snapshot) -> list[ManifestFile]:
    """The manifests of a snapshot: its manifest list, or (v1) the manifests it lists directly."""
    if snapshot.manifest_list:
        return read_manifest_list(io.read(snapshot.manifest_list), snapshot.manifest_list)
    out = []
    for path in snapshot.manifests or ():
        data = io.read(path)
        out.append(manifest_file_from_manifest(path, len(data), data, snapshot.snapshot_id))
    return out


def manifests_df(spark, manifests: Sequence[ManifestFile]):
    """A DataFrame of manifests with explicit ordinals (the manifest list order)."""
    rows = [(i, m.manifest_path, m.manifest_length, m.partition_spec_id, m.added_snapshot_id, m.content,
             m.sequence_number, m.min_sequence_number, m.first_row_id) for i, m in enumerate(manifests)]
    return spark.createDataFrame(rows, MANIFESTS_DDL)


def entries_df(spark, manifests: Sequence[ManifestFile], decoder: EntryDecoder):
    """Decode the manifests on the executors into the canonical entries DataFrame."""
    df = manifests_df(spark, manifests)
    if len(manifests) > 1:
        df = df.repartition(min(len(manifests), max(2, _parallelism(spark))), "manifest_path")
    return df.mapInArrow(decoder, decoder.ddl)


def _parallelism(spark) -> int:
    try:
        return int(spark.conf.get("spark.sql.shuffle.partitions"))
    except Exception:  # noqa: BLE001 - any config backend
        return 4
