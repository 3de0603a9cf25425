"""Manifests as a DataFrame: one canonical, field-id keyed row per manifest entry, for every format version.

The manifest list is read on the driver (it is small). The manifests it names become a DataFrame of
paths; ``mapInArrow`` decodes them on the executors into columns (:mod:`sparkberg.avro.decode`), applies
inheritance (snapshot ids, sequence numbers, ``first_row_id``) and, when given, prunes entries by their
partition tuple with the inclusive projection of the scan filter and by their column metrics, all on columns
(:meth:`EntryDecoder._from_columns`), so pruned entries never leave the executor.

Partition tuples of all specs share one struct, :class:`PartitionLayout`: one slot per (partition field
id, result type), named as the newest spec names it, values in Iceberg's physical form (date/day as
int days, time and timestamps as long micros/nanos) so predicates compare exactly, without time zones.
"""
from __future__ import annotations

from collections import ChainMap
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql import types as ST

from sparkberg.arrays import (
    empty_table, from_numpy, from_python, indices, int_values, strings, valid_mask, value_codes,
)
from sparkberg.avro.cache import ManifestCache, remembered_manifest_list
from sparkberg.avro.columnar import METRIC_COLUMNS, ManifestColumns, ManifestListColumns, concat_manifest_columns
from sparkberg.avro.decode import manifest_columns, manifest_entries, manifest_list
from sparkberg.avro.manifest import manifest_file_from_manifest
from sparkberg.errors import SparkbergError
from sparkberg.expressions.evaluators import walk_mask
from sparkberg.expressions.predicates import TRUE, AlwaysTrue, Bound, test_predicate
from sparkberg.io.fileio import FileIO, to_local_path
from sparkberg.planning.deletes import DELETE_FILE_PATH_ID, eq_stats, path_bounds
from sparkberg.spark.frames import local_dataframe, map_in_arrow
from sparkberg.format import types as T
from sparkberg.format.manifests import DELETED, ManifestFile, inherit_columns
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.snapshots import Snapshot
from sparkberg.threads import by_threads

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


def physical_spark_type(t: T.IcebergType) -> ST.DataType:
    """The Spark type of :func:`physical_types`' DDL for ``t``, built in Python (PySpark 3.5 parses DDL
    through the JVM, a round trip a call)."""
    if isinstance(t, T.DecimalType):
        return ST.DecimalType(t.precision, t.scale)
    return {"boolean": ST.BooleanType(), "int": ST.IntegerType(), "bigint": ST.LongType(), "float": ST.FloatType(),
            "double": ST.DoubleType(), "string": ST.StringType(), "binary": ST.BinaryType()}[physical_types(t)[1]]


@dataclass(frozen=True)
class Slot:
    name: str
    field_id: int
    field_type: T.IcebergType
    # False for a transform this version does not know: its values are kept as text, whatever type the
    # manifests store them in (the field prunes nothing)
    known: bool = True


def unknown_as_text(v: Any) -> str:
    """A partition value of an unknown transform as text (bytes as hex)."""
    return v if isinstance(v, str) else v.hex() if isinstance(v, (bytes, bytearray)) else str(v)


def _unknown_as_text(arr: pa.Array) -> pa.Array:
    if pa.types.is_string(arr.type):
        return arr
    if pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type) or pa.types.is_boolean(arr.type):
        return arr.cast(pa.string())
    return strings([None if v is None else unknown_as_text(v) for v in arr.to_pylist()])


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
        # a field a later spec dropped (v1: made void) shares the slot of the same field id in the specs that
        # kept its transform, as in Iceberg Java's unified partition type: its values are all null anyway
        kept_types: dict[int, T.IcebergType] = {}
        for spec in metadata.partition_specs:
            for pf in spec.fields:
                src = all_fields.get(pf.source_id)
                if src is not None and pf.transform.is_known and not pf.transform.is_void:
                    kept_types.setdefault(pf.field_id, pf.transform.result_type(src.field_type))

        def result_type(pf) -> T.IcebergType:
            src = all_fields.get(pf.source_id)
            if pf.transform.is_void and pf.field_id in kept_types:
                return kept_types[pf.field_id]
            return pf.transform.result_type(src.field_type) if src is not None and pf.transform.is_known \
                else T.STRING
        for spec in sorted(metadata.partition_specs, key=lambda s: -s.spec_id):
            for pf in spec.fields:
                rtype = result_type(pf)
                key = (pf.field_id, rtype.to_json())
                if key not in slots:
                    name = pf.name if pf.name not in names else f"{pf.name}_{pf.field_id}"
                    names.add(name)
                    slots[key] = Slot(name, pf.field_id, rtype, pf.transform.is_known)
        self.slots = sorted(slots.values(), key=lambda s: s.field_id)
        index = {(s.field_id, s.field_type.to_json()): i for i, s in enumerate(self.slots)}
        for spec in metadata.partition_specs:
            pairs = []
            for pf in spec.fields:
                pairs.append((pf.field_id, index[(pf.field_id, result_type(pf).to_json())]))
            self.by_spec[spec.spec_id] = pairs
        # the struct's Arrow type (built once: every manifest decoded builds a partition struct of it)
        self.arrow_type = pa.struct([pa.field(s.name, physical_types(s.field_type)[0]) for s in self.slots]) \
            if self.slots else pa.struct([pa.field("_none", pa.int32())])

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
            elif v is not None and not slot.known:
                v = unknown_as_text(v)
            out[slot.name] = v
        return out


# The canonical entries schema (spec field names; `_`-prefixed columns are bookkeeping)
EQ_STATS_DDL = "map<int, struct<nulls: bigint, vals: bigint, lower: binary, upper: binary>>"
EQ_STATS_TYPE = pa.map_(pa.int32(), pa.struct([("nulls", pa.int64()), ("vals", pa.int64()), ("lower", pa.binary()),
                                               ("upper", pa.binary())]))


def _entry_columns(layout: PartitionLayout, with_metrics: bool, with_path_bounds: bool,
                   with_eq_stats: bool) -> list[str]:
    """The canonical entries columns as ``name type`` DDL items."""
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
    if with_eq_stats:
        cols += [f"_eq_stats {EQ_STATS_DDL}", "_has_bounds boolean"]
    return cols


def entry_column_types(layout: PartitionLayout, with_metrics: bool, with_path_bounds: bool = False,
                       with_eq_stats: bool = False) -> dict[str, str]:
    """Each canonical entries column's Spark type as DDL, by name."""
    return dict(c.split(" ", 1) for c in _entry_columns(layout, with_metrics, with_path_bounds, with_eq_stats))


def entries_arrow_schema(layout: PartitionLayout, with_metrics: bool, with_path_bounds: bool = False,
                         with_eq_stats: bool = False) -> pa.Schema:
    """The Arrow schema of every canonical entries column (:class:`EntryDecoder` outputs a subset of them)."""
    fields = [
        ("_manifest_ordinal", pa.int32()), ("_entry_ordinal", pa.int32()), ("manifest_path", pa.string()),
        ("status", pa.int32()), ("snapshot_id", pa.int64()), ("sequence_number", pa.int64()),
        ("file_sequence_number", pa.int64()), ("content", pa.int32()), ("file_path", pa.string()),
        ("file_format", pa.string()), ("spec_id", pa.int32()), ("partition", layout.arrow_type),
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
    if with_eq_stats:
        fields += [("_eq_stats", EQ_STATS_TYPE), ("_has_bounds", pa.bool_())]
    return pa.schema(fields)


class EntryDecoder:
    """Executor-side decoding of manifests into canonical entry rows (picklable; no Spark inside)."""

    def __init__(self, layout: PartitionLayout, with_metrics: bool = False, include_deleted: bool = False,
                 partition_filters: dict[int, Bound] | None = None, metrics_filter: Any = None,
                 with_path_bounds: bool = False, columns: Sequence[str] | None = None,
                 eq_types: dict[int, T.IcebergType] | None = None, cache: ManifestCache | None = None,
                 metrics_columns: int | None = None, *, io: FileIO | None):
        self.layout = layout
        # the table's FileIO: the executors read the manifests with the table's properties (its credentials)
        self.io = io  # (None: a decoder for its schema alone, which reads nothing)
        self.cache = cache  # decoded manifests kept between scans (:mod:`sparkberg.avro.cache`), when enabled
        self.with_metrics = with_metrics
        self.with_path_bounds = with_path_bounds  # position delete files' file_path range (delete pruning)
        self.include_deleted = include_deleted
        self.partition_filters = partition_filters or {}
        self.metrics_filter = metrics_filter
        # stats of the equality delete columns (``_eq_stats``, ``_has_bounds``), to prune equality deletes
        self.eq_types = eq_types or {}
        full = entries_arrow_schema(layout, with_metrics, with_path_bounds, bool(self.eq_types))
        # only the columns a step needs leave the executor (planning needs a third of them)
        if columns is not None and self.eq_types:
            columns = [*columns, "_eq_stats", "_has_bounds"]
        self.schema = full if columns is None else pa.schema([full.field(c) for c in columns])
        # the entry columns :meth:`_from_columns` builds (a subclass may add columns of its own to ``schema``)
        self.entries_schema = self.schema
        # the data_file columns this decoder reads, so the columnar reader converts no other
        needed = set(self.schema.names) | {"first_row_id"}
        if with_metrics:
            needed |= set(METRIC_COLUMNS)
        if metrics_filter is not None or self.eq_types:
            needed |= {"value_counts", "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds"}
        if with_path_bounds:
            needed |= {"lower_bounds", "upper_bounds", "referenced_data_file"}
        if self.eq_types:
            needed.add("equality_ids")
        self._needed = frozenset(needed)
        # how many columns the entries' metrics maps may hold items for (the table's): None when unknown
        self.metrics_columns = metrics_columns
        self._metric_keys = self._keys_read(metrics_filter)
        ddl = entry_column_types(layout, with_metrics, with_path_bounds, bool(self.eq_types))
        self._ddl = ", ".join(f"{n} {ddl[n]}" for n in self.schema.names)

    def _keys_read(self, metrics_filter: Any) -> frozenset[int] | None:
        """The field ids whose metrics this decoder reads, when it reads the metrics maps for a few of many
        columns and does not output them: the metrics filter's, the equality delete columns', the delete file
        path's. Only those items are kept of the maps (a 53-column table's maps are most of its manifests);
        where the maps are narrow, reading items by key costs more than keeping them all (None: all kept)."""
        if self.with_metrics or self.metrics_columns is None:
            return None
        keys: set[int] = set(self.eq_types)
        if metrics_filter is not None:
            fids = getattr(metrics_filter, "field_ids", None)
            if fids is None:  # (a filter that does not tell what it reads: every key)
                return None
            keys |= set(fids)
        if self.with_path_bounds:
            keys.add(DELETE_FILE_PATH_ID)
        return frozenset(keys) if self.metrics_columns >= max(KEYED_MIN_COLUMNS, 4 * len(keys)) else None

    @property
    def ddl(self) -> str:
        return self._ddl

    def decode_table(self, mf: ManifestFile, manifest_ordinal: int, data: bytes) -> pa.Table:
        """The entries of one manifest (its bytes), inheritance applied and pruned, in the decoder's schema."""
        return self._decode_batch([(mf, manifest_ordinal, data)])

    def load(self, mf: ManifestFile, manifest_ordinal: int, io: FileIO) -> pa.Table:
        """:meth:`decode_table` of the manifest ``mf`` names, read through the manifest cache when there is
        one: a hit neither reads nor decodes the Avro file."""
        return self.load_many([(mf, manifest_ordinal, io)])

    def load_many(self, manifests: Iterable[tuple[ManifestFile, int, FileIO]], threads: int = 1) -> pa.Table:
        """:meth:`load` of several manifests, their rows one manifest after the other, in the given order.
        Consecutive manifests of one spec are decoded (:func:`~sparkberg.avro.decode.manifest_columns`: one pass
        of the compiled decoder over all of them, when uncached) and filtered together, up to
        :data:`BATCH_ENTRIES` entries or :data:`BATCH_BYTES` of manifests (what a batch's columns take grows with
        both: wide tables' metrics), so the work done per manifest, not per entry, is done once.
        ``threads`` > 1 (the driver, which plans alone): uncached batches are read and decoded that many at a
        time (the compiled decoder, inflating and Arrow's compute run without the GIL), as Iceberg Java plans
        with a worker pool; executors decode one batch at a time, a task per core already."""
        units: list[Callable[[], list[pa.Table]]] = []  # each batch's work, in order
        batch: list[tuple[ManifestFile, int, FileIO]] = []

        def flush() -> None:
            nonlocal batch
            if batch:
                todo, batch = batch, []
                units.append(lambda: [self._cached_batch(todo) if self.cache is not None else self._decode_batch(
                    [(mf, ordinal, data) for (mf, ordinal, _), data in zip(todo, _read_all(todo))])])

        entries = size = 0
        for mf, ordinal, io in manifests:
            if batch and (batch[0][0].partition_spec_id != mf.partition_spec_id or entries >= BATCH_ENTRIES or
                          size + mf.manifest_length > BATCH_BYTES):
                flush()
                entries = size = 0
            batch.append((mf, ordinal, io))
            entries += entry_count(mf)
            size += mf.manifest_length
        flush()
        parts = by_threads(lambda unit: unit(), units, threads if self.cache is None else 1)
        pieces = [t for part in parts for t in part]
        if not pieces:
            return empty_table(self.schema)
        return pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)

    def _decode_batch(self, batch: list[tuple[ManifestFile, int, bytes]]) -> pa.Table:
        """Manifests of one spec, as bytes, decoded (in one pass where compiled code can) and filtered."""
        parts = manifest_columns([(data, mf.manifest_path, known_entries(mf)) for mf, _, data in batch],
                                 self._physical(batch[0][0].partition_spec_id), self._needed, self._metric_keys)
        return self._tables([(mf, ordinal) for mf, ordinal, _ in batch], parts)

    def _tables(self, manifests: list[tuple[ManifestFile, int]], parts: list[ManifestColumns]) -> pa.Table:
        """:meth:`_from_columns` of manifests' columns: one for all of them, or one each."""
        tables = [self._from_columns(manifests, parts[0])] if len(parts) == 1 else \
            [self._from_columns([m], p) for m, p in zip(manifests, parts)]
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)

    def _cached_batch(self, batch: list[tuple[ManifestFile, int, FileIO]]) -> pa.Table:
        """Manifests of one spec through the manifest cache: each one's columns (every column: other scans may
        read other ones) decoded and kept on a miss."""
        parts = []
        for mf, _, io in batch:
            physical = self._physical(mf.partition_spec_id)
            key = (mf.manifest_path, mf.manifest_length, sorted((fid, str(t)) for fid, t in physical.items()))
            cols = self.cache.get(*key)
            if cols is None:
                cols, = manifest_columns([(io.read(mf.manifest_path), mf.manifest_path, None)], physical)
                self.cache.put(*key, cols)
            parts.append(cols)
        joined = concat_manifest_columns(parts)
        return self._tables([(mf, ordinal) for mf, ordinal, _ in batch], parts if joined is None else [joined])

    def _physical(self, spec_id: int) -> dict[int, pa.DataType]:
        # (an unknown transform's values are decoded as the manifest stores them, then made text)
        return {fid: physical_types(self.layout.slots[i].field_type)[0]
                for fid, i in self.layout.by_spec.get(spec_id, ()) if self.layout.slots[i].known}

    def _from_columns(self, manifests: list[tuple[ManifestFile, int]], mc: ManifestColumns) -> pa.Table:
        """The entries of manifests of one spec (``mc``: their columns one after the other, ``mc.file_rows``
        entries each) with inheritance applied and pruned, as :meth:`decode` rows."""
        n, c = mc.num_rows, ChainMap({}, mc.columns)  # (columns replaced here go to the first map)
        m = len(manifests)
        rows = np.asarray(mc.file_rows, np.int64)
        which = np.repeat(np.arange(m), rows)  # each entry's manifest
        first = np.zeros(m, np.int64)
        np.cumsum(rows[:-1], out=first[1:])
        spec_id = manifests[0][0].partition_spec_id
        status = int_values(c["status"])[0]

        # spec "Snapshot ID Inheritance", "Sequence Number Inheritance", "First Row ID Inheritance"
        names = ("snapshot_id", "sequence_number", "file_sequence_number", "first_row_id")
        given = [int_values(c[name]) for name in names]
        inherited = inherit_columns([mf for mf, _ in manifests], which, status, int_values(c["content"])[0],
                                    int_values(c["record_count"])[0], *given)
        for name, before, after in zip(names, given, inherited):
            if after is not before:
                c[name] = from_numpy(np.asarray(after[0], np.int64), pa.int64(), after[1])
        keep = np.ones(n, bool) if self.include_deleted else status != DELETED
        pfilter = self.partition_filters.get(spec_id, TRUE)
        if not isinstance(pfilter, AlwaysTrue) and keep.any():
            keep &= self._partition_mask(pfilter, spec_id, mc.partition, n)
        if self.metrics_filter is not None and keep.any():
            # (a column at a time over every entry, those already pruned too: picking the others out of each
            # column read would cost as much as testing them)
            vectorized = getattr(self.metrics_filter, "mask", None)
            mask = None if vectorized is None else vectorized(
                int_values(c["content"])[0], int_values(c["record_count"])[0],
                mc.value)
            if mask is not None:
                keep &= mask
            else:
                idx = np.flatnonzero(keep)
                keep[idx] = self._metrics_mask(c, idx)
        kept_rows = np.flatnonzero(keep)
        idx = indices(kept_rows)
        k = len(idx)

        def kept(arr: pa.Array) -> pa.Array:
            return arr if k == n else arr.take(idx)  # (most manifests of a full scan keep every entry)
        kept_which = which[kept_rows]
        out = {
            "_manifest_ordinal": from_numpy(np.array([o for _, o in manifests], np.int32)[kept_which], pa.int32()),
            "_entry_ordinal": from_numpy((kept_rows - first[kept_which]).astype(np.int32), pa.int32()),
            "manifest_path": strings([mf.manifest_path for mf, _ in manifests]).take(indices(kept_which))
            if "manifest_path" in self.entries_schema.names else None,
            "spec_id": from_numpy(np.full(k, spec_id, np.int32), pa.int32()),
            "partition": kept(self._partition_struct(spec_id, mc.partition, n)),
        }
        for name in self.entries_schema.names:
            if name not in out and name in c:
                out[name] = kept(c[name])
        if self.with_path_bounds:
            lower, upper = self._path_bounds(c, idx)
            out["_path_lower"], out["_path_upper"] = lower, upper
        if self.eq_types:
            names = ("value_counts", "null_value_counts", "lower_bounds", "upper_bounds")
            maps = {name: c[name].take(idx).to_pylist() for name in names}
            contents, eq_ids = c["content"].take(idx).to_pylist(), c["equality_ids"].take(idx).to_pylist()
            rows = [self._eq_columns(contents[j], eq_ids[j], *(_dict(maps[name][j]) for name in names))
                    for j in range(k)]
            out["_eq_stats"] = from_python([r["_eq_stats"] for r in rows], EQ_STATS_TYPE)
            out["_has_bounds"] = from_python([r["_has_bounds"] for r in rows], pa.bool_())
        return pa.Table.from_arrays([out[f.name] if out[f.name].type == f.type else out[f.name].cast(f.type)
                                     for f in self.entries_schema], schema=self.entries_schema)

    def _eq_columns(self, content, equality_ids, value_counts, null_counts, lower_bounds, upper_bounds) -> dict:
        """Stats of the equality columns: of a data file, every column in ``eq_types``; of an equality delete
        file, its own equality columns; of a position delete file, none."""
        types = self.eq_types if content == 0 else {
            fid: self.eq_types[fid] for fid in (equality_ids or ()) if content == 2 and fid in self.eq_types}
        has_bounds, stats = eq_stats(types, value_counts, null_counts, lower_bounds, upper_bounds)
        return {"_has_bounds": has_bounds, "_eq_stats": [
            (fid, {"nulls": n, "vals": v, "lower": lo, "upper": up}) for fid, (n, v, lo, up) in stats.items()]}

    def _partition_struct(self, spec_id: int, partition: dict[int, pa.Array], n: int) -> pa.StructArray:
        arrays: list[pa.Array | None] = [None] * max(1, len(self.layout.slots))
        for fid, i in self.layout.by_spec.get(spec_id, ()):
            arrays[i] = partition.get(fid)
            if arrays[i] is not None and not self.layout.slots[i].known:
                arrays[i] = _unknown_as_text(arrays[i])
        struct_type = self.layout.arrow_type
        arrays = [a if a is not None else pa.nulls(n, f.type) for a, f in zip(arrays, struct_type)]
        return pa.StructArray.from_arrays(arrays, fields=list(struct_type))

    def _partition_mask(self, pfilter: Bound, spec_id: int, partition: dict[int, pa.Array], n: int) -> np.ndarray:
        """The scalar test of each predicate on each distinct value of its field (manifests hold few), mapped
        back to the rows and combined over the expression's tree a column at a time."""
        uuid_ids = {fid for fid, i in self.layout.by_spec.get(spec_id, ()) if self.layout.slots[i].field_type == T.UUID}
        encoded: dict[int, tuple[np.ndarray, list]] = {}

        def codes_of(fid: int) -> tuple[np.ndarray, list]:
            """Each row's code into the field's distinct values (null one of them) and those values."""
            if fid not in encoded:
                codes, distinct = value_codes(partition[fid])
                if fid in uuid_ids:
                    import uuid
                    distinct = [None if v is None else uuid.UUID(v) for v in distinct]
                encoded[fid] = codes, distinct
            return encoded[fid]

        def leaf(p) -> np.ndarray:
            if p.field_id not in partition:  # (a field this spec lacks: null in every row)
                return np.full(n, test_predicate(p, None))
            codes, values = codes_of(p.field_id)
            return np.array([test_predicate(p, v) for v in values], bool)[codes]
        return walk_mask(pfilter, leaf, n)

    def _metrics_mask(self, c: dict[str, pa.Array], idx: np.ndarray) -> list[bool]:
        take = indices(idx)
        cols = {name: c[name].take(take).to_pylist() for name in
                ("content", "record_count", "value_counts", "null_value_counts", "nan_value_counts",
                 "lower_bounds", "upper_bounds")}
        out = []
        for j in range(len(idx)):
            out.append(bool(self.metrics_filter(_MetricsRow(
                cols["content"][j], cols["record_count"][j],
                *(_dict(cols[name][j]) for name in ("value_counts", "null_value_counts", "nan_value_counts",
                                                    "lower_bounds", "upper_bounds"))))))
        return out

    def _path_bounds(self, c: dict[str, pa.Array], idx: pa.Array) -> tuple[pa.Array, pa.Array]:
        """The ``file_path`` bounds of the position delete files that name no data file (a file that names one
        applies to that file alone, whatever its bounds: Java indexes those by path, not by bounds)."""
        content = int_values(c["content"].take(idx))[0]
        unnamed = ~valid_mask(c["referenced_data_file"].take(idx))
        rows = np.flatnonzero((content == 1) & unnamed).tolist()
        if not rows:
            nulls = pa.nulls(len(content), pa.string())
            return nulls, nulls
        lower, upper = [None] * len(content), [None] * len(content)
        sel = idx.take(indices(rows))
        lows, ups = c["lower_bounds"].take(sel).to_pylist(), c["upper_bounds"].take(sel).to_pylist()
        for j, lo, up in zip(rows, lows, ups):
            lower[j], upper[j] = path_bounds(_dict(lo, DELETE_FILE_PATH_ID), _dict(up, DELETE_FILE_PATH_ID))
        return strings(lower), strings(upper)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return coalesced(self.load_many(group) for group in manifest_groups(manifests_of(batches, self.io)))


# metrics maps are read by key (:meth:`EntryDecoder._keys_read`) for tables of at least this many columns, and
# four times as many as the keys read: below, the compiled decoder's keyed reading costs more than reading the
# maps whole (README, "Benchmarks")
KEYED_MIN_COLUMNS = 8


def _read_all(manifests: list[tuple[ManifestFile, int, FileIO]]) -> list[bytes]:
    """The bytes of each manifest, those of one FileIO read side by side (:meth:`FileIO.read_all`)."""
    io = manifests[0][2]
    if any(other is not io for _, _, other in manifests):
        return [other.read(mf.manifest_path) for mf, _, other in manifests]
    return io.read_all([mf.manifest_path for mf, _, _ in manifests])


def entry_count(mf: ManifestFile) -> int:
    """How many entries the manifest holds: the manifest list's counts, else a guess from its size (64 bytes
    an entry)."""
    known = known_entries(mf)
    return mf.manifest_length // 64 if known is None else known


def known_entries(mf: ManifestFile) -> int | None:
    """How many entries the manifest list says the manifest holds (None: it does not say)."""
    counts = (mf.added_files_count, mf.existing_files_count, mf.deleted_files_count)
    return None if None in counts else sum(counts)


# entries up to which consecutive manifests are decoded and filtered together (the columns of ~64k entries)
BATCH_ENTRIES = 65_536
# manifest bytes up to which they are decoded together (a Java manifest is up to ~8 MB: decoded alone)
BATCH_BYTES = 4 << 20


def manifest_groups(manifests: Iterable[tuple[ManifestFile, int, FileIO]]
                    ) -> Iterator[list[tuple[ManifestFile, int, FileIO]]]:
    """Manifests (as :func:`manifests_of` gives a planning task's) in groups of about :data:`BATCH_ENTRIES`
    entries: each group decoded together, its rows sent on before the next is read."""
    group: list[tuple[ManifestFile, int, FileIO]] = []
    entries = 0
    for item in manifests:
        group.append(item)
        entries += entry_count(item[0])
        if entries >= BATCH_ENTRIES:
            yield group
            group, entries = [], 0
    if group:
        yield group


def coalesced(tables: Iterator[pa.Table], min_rows: int = 8192) -> Iterator[pa.RecordBatch]:
    """The rows of consecutive tables in batches of at least ``min_rows`` (but the last): each batch sent from
    a Python worker to Spark has a fixed cost, and a manifest of delete files decodes to a handful of rows."""
    pending: list[pa.Table] = []
    rows = 0
    for table in tables:
        pending.append(table)
        rows += table.num_rows
        if rows >= min_rows:
            yield from pa.concat_tables(pending).combine_chunks().to_batches()
            pending, rows = [], 0
    if rows:
        yield from pa.concat_tables(pending).combine_chunks().to_batches()


def manifests_of(batches: Iterator[pa.RecordBatch], io: FileIO) -> Iterator[tuple[ManifestFile, int, FileIO]]:
    """(manifest, ordinal, ``io``: the table's FileIO, which reads it) of each row of a :func:`manifests_df` batch
    (executors)."""
    for batch in batches:
        for r in batch.to_pylist():
            mf = ManifestFile(**{k: r[k] for k in _MANIFEST_COLUMNS if k in r})
            yield mf, r["_manifest_ordinal"], io


@dataclass(frozen=True)
class _MetricsRow:
    """What the metrics filter reads of a data file."""
    content: int
    record_count: int
    value_counts: dict | None
    null_value_counts: dict | None
    nan_value_counts: dict | None
    lower_bounds: dict | None
    upper_bounds: dict | None


def _dict(pairs: list | None, only: int | None = None) -> dict | None:
    if pairs is None:
        return None
    return dict(pairs) if only is None else {k: v for k, v in pairs if k == only}


_MANIFEST_COLUMNS = ("manifest_path", "manifest_length", "partition_spec_id", "added_snapshot_id", "content",
                     "sequence_number", "min_sequence_number", "first_row_id", "added_files_count",
                     "existing_files_count", "deleted_files_count")
MANIFESTS_DDL = ("_manifest_ordinal int, manifest_path string, manifest_length bigint, partition_spec_id int, "
                 "added_snapshot_id bigint, content int, sequence_number bigint, min_sequence_number bigint, "
                 "first_row_id bigint, added_files_count int, existing_files_count int, deleted_files_count int")


def referenced_by(io: FileIO, snapshot: Snapshot, path: str) -> str:
    """What in ``snapshot`` references the file ``path`` (for the message of an error about it): its manifest
    list, the manifest list that lists a manifest, or the manifest that lists a data or delete file. Reads the
    snapshot's manifests one by one: for error paths only."""
    def key(p: str) -> str:
        return to_local_path(p) or p
    target = key(path)
    sid = snapshot.snapshot_id
    if snapshot.manifest_list and key(snapshot.manifest_list) == target:
        return f"snapshot {sid} (its manifest list)"
    try:
        manifests = snapshot_manifests(io, snapshot)
    except (SparkbergError, OSError):
        return f"snapshot {sid}"
    for mf in manifests:
        if key(mf.manifest_path) == target:
            return f"manifest list {snapshot.manifest_list} of snapshot {sid}"
    for mf in manifests:
        try:
            entries = manifest_entries(io.read(mf.manifest_path), mf, inherited=False)
        except (SparkbergError, OSError):
            continue
        if any(key(e.data_file.file_path) == target for e in entries):
            return f"manifest {mf.manifest_path} of snapshot {sid}"
    return f"snapshot {sid}"


def snapshot_manifests(io: FileIO, snapshot: Snapshot, remember: bool = False) -> list[ManifestFile]:
    """The manifests of a snapshot: its manifest list, or (v1) the manifests it lists directly. With ``remember``,
    a manifest list this process has read is not read again (:func:`~sparkberg.avro.cache.remembered_manifest_list`;
    readers that must see a list deleted or damaged since, such as the doctor and commits, read it each time)."""
    return snapshot_manifest_table(io, snapshot, remember).manifests()


def own_entries(io: FileIO, snapshot: Snapshot, content: int, status: int) -> Iterator[tuple[ManifestFile, Any]]:
    """(manifest, entry) of the entries of ``status`` that ``snapshot`` itself wrote in its manifests of ``content``
    (data or deletes): what a commit added or removed, as conflict checks and cherry-picks read it."""
    for mf in snapshot_manifests(io, snapshot):
        if mf.content == content and mf.added_snapshot_id == snapshot.snapshot_id:
            for e in manifest_entries(io.read(mf.manifest_path), mf):
                if e.status == status and e.snapshot_id == snapshot.snapshot_id:
                    yield mf, e


def snapshot_manifest_table(io: FileIO, snapshot: Snapshot, remember: bool = False) -> ManifestListColumns:
    """:func:`snapshot_manifests` as columns (planning prunes them before any ManifestFile is built)."""
    path = snapshot.manifest_list
    if path and remember:
        return remembered_manifest_list(path, lambda: manifest_list(io.read(path), path))
    if path:
        return manifest_list(io.read(path), path)
    out = []
    for manifest_path in snapshot.manifests or ():
        data = io.read(manifest_path)
        out.append(manifest_file_from_manifest(manifest_path, len(data), data, snapshot.snapshot_id))
    return ManifestListColumns.from_manifests(out)


def manifests_df(spark, manifests: Sequence[ManifestFile]):
    """A DataFrame of manifests with explicit ordinals (the manifest list order)."""
    rows = [(i, *(getattr(m, c) for c in _MANIFEST_COLUMNS)) for i, m in enumerate(manifests)]
    return local_dataframe(spark, rows, MANIFESTS_DDL)


def entries_df(spark, manifests: Sequence[ManifestFile], decoder: EntryDecoder):
    """Decode the manifests on the executors into the canonical entries DataFrame."""
    # a local relation is split over the default parallelism in manifest-list order: no shuffle before decoding
    return map_in_arrow(manifests_df(spark, manifests), decoder, decoder.ddl)
