"""Iceberg's metadata tables as Spark DataFrames, with the names, columns and types of Iceberg's Spark
metadata tables (``SELECT * FROM cat.db.t.files`` in Iceberg Java).

Everything that grows with the table (entries, files, partitions, position deletes) is a transformation of
the entries DataFrame that the executors decode from the manifests, as scan planning does; only manifest
lists, snapshots, refs and logs (small, already in the metadata) are built on the driver.

Deliberate differences from Iceberg Java are listed in :data:`DIFFERENCES`.
"""
from __future__ import annotations

from typing import Any, Callable, Collection, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as ST

from sparkberg.arrays import from_bools, from_numpy, from_python, int_values, valid_mask
from sparkberg.avro.columnar import METRIC_COLUMNS
from sparkberg.errors import NotSupportedError, ValidationError
from sparkberg.io.fileio import FileIO
from sparkberg.planning.entries import (
    EntryDecoder, PartitionLayout, entry_count, entries_arrow_schema, entries_df, entry_column_types,
    snapshot_manifests,
)
from sparkberg.planning.scan import partition_column
from sparkberg.read.columns import read_files
from sparkberg.read.formats import path_key
from sparkberg.read.positions import DVDecoder
from sparkberg.spark.frames import (
    arrow_dataframe, counted_dataframe, known_count, local_dataframe, made_on_driver, map_in_arrow,
)
from sparkberg.spark.tuning import ReadTuning
from sparkberg.spark.types import arrow_schema, ddl_items, to_spark_read_field, to_spark_type
from sparkberg.threads import DRIVER_THREADS
from sparkberg.format import types as T
from sparkberg.format.manifests import MANIFEST_DATA, MANIFEST_DELETES, ManifestFile
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.metadata_columns import DELETE_FILE_PATH, DELETE_FILE_POS, DELETE_FILE_ROW_ID, DELETE_FILE_ROW_NAME
from sparkberg.format.snapshots import Snapshot
from sparkberg.format.values import from_bytes

METADATA_TABLES = ("entries", "files", "data_files", "delete_files", "manifests", "history",
                   "metadata_log_entries", "snapshots", "refs", "partitions", "all_data_files", "all_delete_files",
                   "all_files", "all_manifests", "all_entries", "position_deletes")

DIFFERENCES = {
    "readable_metrics": "columns of Iceberg type time are left out on Spark versions without a TIME type",
}

DATA_FILE_COLUMNS = ("content", "file_path", "file_format", "spec_id", "partition", "record_count",
                     "file_size_in_bytes", "column_sizes", "value_counts", "null_value_counts", "nan_value_counts",
                     "lower_bounds", "upper_bounds", "key_metadata", "split_offsets", "equality_ids", "sort_order_id",
                     "first_row_id", "referenced_data_file", "content_offset", "content_size_in_bytes")
# the tables of entries (whose columns :meth:`MetadataTables.table` decodes only as a query needs them)
_ENTRY_TABLES = frozenset({"entries", "all_entries", "files", "data_files", "delete_files", "all_files",
                           "all_data_files", "all_delete_files"})
ENTRIES_COLUMNS = ("status", "snapshot_id", "sequence_number", "file_sequence_number", "data_file",
                   "readable_metrics")
METRIC_FIELDS = ("column_size", "value_count", "null_value_count", "nan_value_count", "lower_bound", "upper_bound")


def entry_table_columns(metadata: TableMetadata, name: str) -> list[str] | None:
    """The columns of metadata table ``name`` when it is a table of entries or files (None for the others), in
    order: the files tables of an unpartitioned table have no ``partition`` (as in Iceberg Java)."""
    if name not in _ENTRY_TABLES:
        return None
    if name.endswith("entries"):
        return list(ENTRIES_COLUMNS)
    parted = any(spec.fields for spec in metadata.partition_specs)
    return [c for c in DATA_FILE_COLUMNS if c != "partition" or parted] + ["readable_metrics"]


_MANIFESTS_DDL = ("content int, path string, length bigint, partition_spec_id int, added_snapshot_id bigint, "
                  "added_data_files_count int, existing_data_files_count int, deleted_data_files_count int, "
                  "added_delete_files_count int, existing_delete_files_count int, deleted_delete_files_count int, "
                  "partition_summaries array<struct<contains_null: boolean, contains_nan: boolean, "
                  "lower_bound: string, upper_bound: string>>")
# the tables made of the metadata on the driver, and their columns
LOCAL_TABLES = {
    "manifests": _MANIFESTS_DDL,
    "all_manifests": _MANIFESTS_DDL + ", reference_snapshot_id bigint",
    "snapshots": "committed_at timestamp_ltz, snapshot_id bigint, parent_id bigint, operation string, "
                 "manifest_list string, summary map<string,string>",
    "history": "made_current_at timestamp_ltz, snapshot_id bigint, parent_id bigint, is_current_ancestor boolean",
    "refs": "name string, type string, snapshot_id bigint, max_reference_age_in_ms bigint, "
            "min_snapshots_to_keep int, max_snapshot_age_in_ms bigint",
    "metadata_log_entries": "timestamp timestamp_ltz, file string, latest_snapshot_id bigint, latest_schema_id int, "
                            "latest_sequence_number bigint",
}


def ddl_columns(ddl: str) -> list[str]:
    """The column names of a DDL string, in order."""
    return [item.split(None, 1)[0] for item in ddl_items(ddl)]


def metadata_table_columns(metadata: TableMetadata, name: str) -> list[str] | None:
    """The columns of metadata table ``name`` known without making it (the tables of entries or files, and those
    made of the metadata on the driver), in order; None for the others (partitions, position deletes)."""
    if name in LOCAL_TABLES:
        return ddl_columns(LOCAL_TABLES[name])
    return entry_table_columns(metadata, name)


def readable_columns(schema: T.Schema) -> list[tuple[str, int, T.IcebergType, ST.DataType]]:
    """(full name, field id, type, Spark type) of every primitive column, nested ones included, sorted by name:
    the fields of ``readable_metrics``."""
    out = []
    for name, f in schema.index_by_name().items():
        if not f.field_type.is_primitive:
            continue
        try:
            spark_type = to_spark_type(f.field_type)
        except NotSupportedError:
            continue
        out.append((name, f.field_id, f.field_type, spark_type))
    return sorted(out)


def _readable_type(columns) -> ST.StructType:
    return ST.StructType([ST.StructField(name, ST.StructType(
        [ST.StructField(m, ST.LongType()) for m in METRIC_FIELDS[:4]] +
        [ST.StructField("lower_bound", st), ST.StructField("upper_bound", st)])) for name, _, _, st in columns])


def ddl(dt: ST.DataType) -> str:
    """A Spark type as DDL with every struct field name quoted (``readable_metrics`` has ``loc.lat``), a timestamp
    with a zone named ``timestamp_ltz``: a bare ``timestamp`` means whatever ``spark.sql.timestampType`` says."""
    if isinstance(dt, ST.TimestampType):
        return "timestamp_ltz"
    if isinstance(dt, ST.StructType):
        return "struct<" + ", ".join(f"`{f.name.replace('`', '``')}`: {ddl(f.dataType)}" for f in dt.fields) + ">"
    if isinstance(dt, ST.ArrayType):
        return f"array<{ddl(dt.elementType)}>"
    if isinstance(dt, ST.MapType):
        return f"map<{ddl(dt.keyType)}, {ddl(dt.valueType)}>"
    return dt.simpleString()


def _map_grid(column: pa.ChunkedArray, slot: dict[int, int], n: int) -> tuple[pa.Array, np.ndarray]:
    """A metrics map column (``map<int, V>``, one map per row) as its flattened values and a (readable column,
    row) grid of indexes into them (-1 where the row's map has no item for the column): one pass over the items.
    A key repeated in a map: its last item, as the reference's ``dict`` of the map (and Java's map) keeps."""
    grid = np.full((len(slot), n), -1, np.int64)
    maps = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    values = maps.items
    if not slot or not len(values):
        return values, grid
    offsets = int_values(maps.offsets)[0]
    keys = int_values(maps.keys)[0]
    start, end = int(offsets[0]), int(offsets[-1])  # (a sliced map array's items start past 0)
    rows = np.repeat(np.arange(n), np.diff(offsets))
    # (keys looked up among the sorted field ids: a key may be any int, such as a delete file's path field id)
    fids = np.array(sorted(slot), np.int64)
    k = keys[start:end]
    at = np.minimum(np.searchsorted(fids, k), len(fids) - 1)
    where = np.where(fids[at] == k, np.array([slot[f] for f in fids.tolist()], np.int64)[at], -1)
    items = np.flatnonzero(where >= 0)  # (in order: the last item of a repeated key is written last)
    grid[where[items], rows[items]] = items + start
    return values, grid


def _take(values: pa.Array, grid: np.ndarray, row: int) -> pa.Array:
    """``values`` at the indexes of a row of ``grid``, null where -1."""
    at = grid[row]
    return values.take(from_numpy(np.where(at < 0, 0, at).astype(np.int64), pa.int64(), at >= 0)) if len(values) else \
        pa.nulls(len(at), values.type)


# Appendix D values of these types are little-endian numbers: (width in bytes -> numpy type), the widths of a
# promoted column's older bounds included (int -> long, float -> double, date -> timestamp), as :func:`from_bytes`
_NUMBERS = {T.BOOLEAN: {1: "u1"}, T.INT: {4: "<i4", 8: "<i8"}, T.DATE: {4: "<i4", 8: "<i8"},
            **{t: {4: "<i4", 8: "<i8"} for t in (T.LONG, T.TIME, T.TIMESTAMP, T.TIMESTAMPTZ, T.TIMESTAMP_NS,
                                                 T.TIMESTAMPTZ_NS)},
            T.FLOAT: {4: "<f4"}, T.DOUBLE: {4: "<f4", 8: "<f8"}}


def _bounds(t: T.IcebergType, raw: pa.Array, to: pa.DataType) -> pa.Array:
    """Bounds of type ``t`` (Appendix D bytes, null where absent) as an array of ``to``, the Arrow type of their
    Spark type: numbers decoded as arrays, strings checked as UTF-8, bytes as they are; anything else, and any
    value of an unexpected width, by :func:`_bound`."""
    raw = raw.cast(pa.binary())
    try:
        if t in _NUMBERS:
            decoded = _numbers(raw, _NUMBERS[t])
            if decoded is not None:
                values, valid = decoded
                if t == T.BOOLEAN:
                    values = values != 0
                elif t in (T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS):
                    values = values // 1000  # (Spark's timestamps are in micros)
                elif pa.types.is_date32(to):
                    values = values.astype(np.int32)  # (Arrow makes dates of int32 days)
                return (from_bools(values, valid) if values.dtype == bool else
                        from_numpy(values, pa.from_numpy_dtype(values.dtype), valid)).cast(to)
        elif t == T.STRING:
            return raw.cast(pa.string()).cast(to)
        elif t == T.BINARY or isinstance(t, (T.FixedType, T.GeometryType, T.GeographyType)):
            return raw.cast(to)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass  # (a value the reference decodes or names)
    return from_python([_bound(t, v) for v in raw.to_pylist()], to)


def _numbers(raw: pa.BinaryArray, widths: dict[int, str]) -> tuple[np.ndarray, np.ndarray] | None:
    """(values, valid) of little-endian numbers of the given widths (-> numpy type), as int64 or float64; None
    when a value has another width."""
    valid = valid_mask(raw)
    offsets = np.frombuffer(raw.buffers()[1], np.int32)[raw.offset:raw.offset + len(raw) + 1]
    lengths = np.diff(offsets)
    data = np.frombuffer(raw.buffers()[2], np.uint8) if raw.buffers()[2] is not None else np.zeros(0, np.uint8)
    floating = any(np.dtype(d).kind == "f" for d in widths.values())
    out = np.zeros(len(raw), np.float64 if floating else np.int64)
    seen = np.zeros(len(raw), bool)
    for width, dtype in widths.items():
        rows = np.flatnonzero(valid & (lengths == width))
        if len(rows):
            at = offsets[:-1][rows][:, None] + np.arange(width)
            out[rows] = np.ascontiguousarray(data[at]).view(dtype).reshape(-1)
            seen[rows] = True
    if (valid & ~seen).any():
        return None
    return out, valid


def _bound(t: T.IcebergType, raw: bytes | None) -> Any:
    if raw is None:
        return None
    v = from_bytes(t, bytes(raw))
    if t in (T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS):
        return v // 1000
    if t == T.UUID:
        return str(v)
    return v


# the entries columns of planning's bookkeeping, which no metadata table shows
_BOOKKEEPING = frozenset({"_manifest_ordinal", "_entry_ordinal", "manifest_path"})


class MetadataDecoder(EntryDecoder):
    """Entries with their metrics, deleted entries included, and ``readable_metrics`` (bounds decoded per
    Appendix D for the current schema's columns). Only the columns a metadata table needs leave the Python
    workers, and only those are decoded: Spark converts every column of every row a Python stage returns, whatever
    the query reads of them, and cannot ask a Python stage for fewer."""

    def __init__(self, layout: PartitionLayout, schema: T.Schema, io: FileIO | None = None,
                 columns: Sequence[str] | None = None):
        """``columns``: the entry columns (of :func:`entries_arrow_schema` with metrics) and ``readable_metrics``
        to return, in the schema's order whatever the order given; None: every one but planning's bookkeeping."""
        shown = [n for n in entries_arrow_schema(layout, with_metrics=True).names if n not in _BOOKKEEPING]
        # (at least one: Spark counts no rows of a Python stage's batches without columns)
        wanted = set(shown + ["readable_metrics"] if columns is None else columns or ["status"])
        unknown = wanted - set(shown) - {"readable_metrics"}
        if unknown:
            raise ValidationError(f"entries have no column {', '.join(sorted(unknown))}")
        self.with_readable = "readable_metrics" in wanted
        # readable_metrics is made of the metrics maps, which are then left out unless asked for
        decoded = [n for n in shown if n in wanted or (self.with_readable and n in METRIC_COLUMNS)]
        super().__init__(layout, with_metrics=any(n in METRIC_COLUMNS for n in decoded), include_deleted=True,
                         columns=decoded, io=io)
        self.columns = readable_columns(schema)
        self.readable = _readable_type(self.columns)
        returned = [f for f in self.schema if f.name in wanted]
        if self.with_readable:
            returned.append(pa.field("readable_metrics", pa.struct(list(arrow_schema(self.readable)))))
        self.schema = pa.schema(returned)
        types = {**entry_column_types(layout, with_metrics=True), "readable_metrics": ddl(self.readable)}
        self._ddl = ", ".join(f"{n} {types[n]}" for n in self.schema.names)

    def _from_columns(self, manifests: list[tuple[ManifestFile, int]], mc: Any) -> pa.Table:
        entries = super()._from_columns(manifests, mc)
        columns = [entries.column(f.name) for f in self.schema if f.name != "readable_metrics"]
        if self.with_readable:
            columns.append(self.readable_metrics(entries))
        return pa.Table.from_arrays(columns, schema=self.schema)

    def readable_metrics(self, entries: pa.Table) -> pa.StructArray:
        """The ``readable_metrics`` column of entries' columns, a column at a time (:meth:`readable_rows`, the
        reference, does it a row at a time): each metrics map's items placed in a (column, row) grid in one
        pass, then each column's bounds decoded as arrays of its type; bounds of a type or a width this does
        not decode as an array (decimals, UUIDs, a malformed value) go through the reference's
        :func:`_bound`, which names a malformed one."""
        n = entries.num_rows
        slot = {fid: i for i, (_, fid, _, _) in enumerate(self.columns)}  # (a column's field id -> its grid row)
        struct_type = self.schema.field("readable_metrics").type
        grids = {k: _map_grid(entries.column(k), slot, n) for k in
                 ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds",
                  "upper_bounds")}
        columns = []
        for i, (name, _, t, _) in enumerate(self.columns):
            metric_type = struct_type.field(name).type
            bound_type = metric_type.field("lower_bound").type
            children = [_take(*grids[k], i) for k in ("column_sizes", "value_counts", "null_value_counts",
                                                      "nan_value_counts")]
            children += [_bounds(t, _take(*grids[k], i), bound_type) for k in ("lower_bounds", "upper_bounds")]
            columns.append(pa.StructArray.from_arrays(children, fields=list(metric_type)))
        if not columns:
            return from_python([{}] * n, struct_type)
        return pa.StructArray.from_arrays(columns, fields=list(struct_type))

    def readable_rows(self, rows: list[dict]) -> list[dict]:
        """Entry rows with ``readable_metrics`` added (the reference decoder's rows; the
        columnar decoder's are :meth:`readable_metrics`)."""
        for r in rows:
            sizes, values, nulls, nans = (dict(r[k] or ()) for k in ("column_sizes", "value_counts",
                                                                     "null_value_counts", "nan_value_counts"))
            lower, upper = dict(r["lower_bounds"] or ()), dict(r["upper_bounds"] or ())
            r["readable_metrics"] = {name: {
                "column_size": sizes.get(fid), "value_count": values.get(fid), "null_value_count": nulls.get(fid),
                "nan_value_count": nans.get(fid), "lower_bound": _bound(t, lower.get(fid)),
                "upper_bound": _bound(t, upper.get(fid))} for name, fid, t, _ in self.columns}
        return rows


# the partitions table's totals, in the order it shows them: (name, content of the files counted, what of them:
# their rows, their number, their bytes)
PARTITION_TOTALS = (("record_count", 0, "rows"), ("file_count", 0, "files"),
                    ("total_data_file_size_in_bytes", 0, "bytes"), ("position_delete_record_count", 1, "rows"),
                    ("position_delete_file_count", 1, "files"), ("equality_delete_record_count", 2, "rows"),
                    ("equality_delete_file_count", 2, "files"))


class PartitionTotals:
    """The ``partitions`` table's totals of the live entries of some manifests, added up where they are decoded
    (by each task of a Python stage, or the driver): a row per partition tuple and number of its spec's fields
    (:func:`partition_key_fields`) holding the sums and the (commit time, snapshot, spec) of its most recent
    file. Spark adds up these rows and groups them as the table groups, so what leaves the Python workers is a
    row per partition (for each batch the decoder gives) rather than per file. Picklable; used as a decoder is
    (``ddl``, a Python stage's function, ``load_many``)."""

    COLUMNS = ("status", "snapshot_id", "content", "spec_id", "partition", "record_count", "file_size_in_bytes")

    def __init__(self, layout: PartitionLayout, schema: T.Schema, io: FileIO | None, projected: dict[int, int],
                 times: dict[int, int]):
        """``projected``: spec id -> number of its fields in the unified partition type; ``times``: snapshot id
        -> its commit time in epoch millis (a file of a snapshot not in it has none, as in a left join)."""
        self.decoder = MetadataDecoder(layout, schema, io, self.COLUMNS)
        self.keyed = bool(layout.slots)
        self.projected = projected
        self.times = times
        arrow = self.decoder.schema
        fields = ([arrow.field("partition"), pa.field("_projected", pa.int32())] if self.keyed else []) + \
            [pa.field(name, pa.int64()) for name, _, _ in PARTITION_TOTALS] + \
            [pa.field("_ts", pa.int64()), pa.field("_snapshot_id", pa.int64()), pa.field("_spec_id", pa.int32())]
        self.schema = pa.schema(fields)
        types = dict(item.strip().split(None, 1) for item in ddl_items(self.decoder.ddl))
        self.ddl = ", ".join(f"{f.name} {types['partition'] if f.name == 'partition' else _INT_DDL[f.type]}"
                             for f in fields)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # (each batch the decoder gives, tens of thousands of entries, added up alone: a task holds no more of its
        # entries than the decoder does, and Spark adds up the batches' rows as it adds up the tasks')
        for batch in self.decoder(batches):
            yield from self.totals(pa.Table.from_batches([batch])).to_batches()

    def load_many(self, manifests: Iterable[tuple[ManifestFile, int, FileIO]], threads: int = 1) -> pa.Table:
        """The totals of these manifests' entries, decoded on the driver."""
        return self.totals(self.decoder.load_many(manifests, threads))

    def totals(self, entries: pa.Table) -> pa.Table:
        """The totals of decoded entries (:data:`COLUMNS`), deleted ones and contents other than files left out."""
        status, content = int_values(entries["status"])[0], int_values(entries["content"])[0]
        live = (status != 2) & (content >= 0) & (content <= 2)
        if not live.all():
            entries, content = entries.filter(from_bools(live)), content[live]
        n = entries.num_rows
        if n == 0:
            return self.schema.empty_table()
        rows, size = int_values(entries["record_count"])[0], int_values(entries["file_size_in_bytes"])[0]
        sid, spec = int_values(entries["snapshot_id"])[0], int_values(entries["spec_id"])[0]
        ts, has_ts = _looked_up(self.times, sid)
        columns: dict[str, np.ndarray] = {}
        for name, kind, what in PARTITION_TOTALS:
            of = content == kind
            columns[name] = of.astype(np.int64) if what == "files" else \
                np.where(of, rows if what == "rows" else size, 0)
        # the most recent file: the greatest (commit time, snapshot id, spec id), an unknown time the least, as
        # Spark orders structs; each row's rank in that order, so a group's greatest rank names its row
        order = np.lexsort((spec, sid, np.where(has_ts, ts, np.iinfo(np.int64).min)))
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n, dtype=np.int64)
        table = pa.table({name: from_numpy(values, pa.int64()) for name, values in columns.items()})
        table = table.append_column("_rank", from_numpy(rank, pa.int64()))
        keys = []
        if self.keyed:
            part = entries["partition"].combine_chunks()
            for i, child in enumerate(part.flatten()):
                table = table.append_column(f"_k{i}", child)
                keys.append(f"_k{i}")
            table = table.append_column("_projected", from_numpy(_looked_up(self.projected, spec)[0], pa.int64()))
            keys.append("_projected")
        grouped = table.group_by(keys).aggregate([(c, "sum") for c in columns] + [("_rank", "max")])
        last = order[int_values(grouped["_rank_max"])[0]]
        out = [pa.StructArray.from_arrays([grouped[k].combine_chunks() for k in keys[:-1]],
                                          fields=list(part.type)),
               grouped["_projected"].cast(pa.int32())] if self.keyed else []
        out += [grouped[f"{c}_sum"] for c in columns]
        out += [from_numpy(ts[last], pa.int64(), has_ts[last]), from_numpy(sid[last], pa.int64()),
                from_numpy(spec[last].astype(np.int32), pa.int32())]
        return pa.Table.from_arrays(out, schema=self.schema)


_INT_DDL = {pa.int32(): "int", pa.int64(): "bigint"}


def _looked_up(mapping: dict[int, int], keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the value ``mapping`` holds for each of ``keys``, 0 where none; whether it holds one) as int64 arrays."""
    known = np.fromiter(mapping.keys(), np.int64, len(mapping))
    values = np.fromiter(mapping.values(), np.int64, len(mapping))
    order = np.argsort(known)
    known, values = known[order], values[order]
    at = np.minimum(np.searchsorted(known, keys), max(len(known) - 1, 0))
    found = known[at] == keys if len(known) else np.zeros(len(keys), bool)
    return np.where(found, values[at] if len(known) else 0, 0), found


def snapshot_rows(m: TableMetadata) -> list[dict]:
    """The ``snapshots`` table's rows, in metadata order (``committed_at`` in epoch millis)."""
    return [{"committed_at": s.timestamp_ms, "snapshot_id": s.snapshot_id, "parent_id": s.parent_snapshot_id,
             "operation": s.operation, "manifest_list": s.manifest_list,
             "summary": {k: v for k, v in (s.summary or {}).items() if k != "operation"}} for s in m.snapshots]


def history_rows(m: TableMetadata) -> list[dict]:
    """The ``history`` table's rows (``made_current_at`` in epoch millis)."""
    current = {s.snapshot_id for s in m.ancestors(m.current_snapshot_id)}
    out = []
    for e in m.snapshot_log:
        s = m.snapshot_by_id(e.snapshot_id)
        out.append({"made_current_at": e.timestamp_ms, "snapshot_id": e.snapshot_id,
                    "parent_id": s.parent_snapshot_id if s else None, "is_current_ancestor": e.snapshot_id in current})
    return out


def refs_rows(m: TableMetadata) -> list[dict]:
    """The ``refs`` table's rows."""
    return [{"name": name, "type": r.type.upper(), "snapshot_id": r.snapshot_id,
             "max_reference_age_in_ms": r.max_ref_age_ms, "min_snapshots_to_keep": r.min_snapshots_to_keep,
             "max_snapshot_age_in_ms": r.max_snapshot_age_ms} for name, r in m.refs.items()]


def partition_key_fields(metadata: TableMetadata) -> dict[int, int]:
    """Spec id -> how many fields of the table's unified partition type the spec has (its own fields whose source
    column is in the current schema, void ones included). Iceberg Java 1.10's partitions table keys its rows by
    this number and the file's tuple in the unified type, so files of two specs with the same tuple are one row
    when the specs have as many such fields (a v2 spec that dropped one field and added another), and two when
    not (a v1 spec that made a field void, beside the spec before it)."""
    current = set(metadata.current_schema.index_by_id())
    active = {pf.field_id for spec in metadata.partition_specs for pf in spec.fields if pf.source_id in current}
    return {spec.spec_id: len({pf.field_id for pf in spec.fields} & active) for spec in metadata.partition_specs}


class SummaryStrings:
    """The partition summaries of one table's manifests as the ``manifests`` table shows them: each bound as a
    human string (as Java prints it; a missing bound is "null"). Each distinct bound of a spec's field is converted
    once: a table's manifests share most of their bounds (its days, its buckets)."""

    def __init__(self, m: TableMetadata):
        self.m = m
        self._fields: dict[int, list] = {}
        self._strings: dict[tuple[int, int, bytes], str] = {}

    def __call__(self, mf: ManifestFile) -> list[tuple]:
        """(contains_null, contains_nan, lower bound, upper bound) of each field of ``mf``'s spec."""
        spec_id = mf.partition_spec_id
        fields = self._fields.get(spec_id)
        if fields is None:
            spec = self.m.spec(spec_id)
            fields = self._fields[spec_id] = list(zip(spec.fields, spec.partition_type(self.m.current_schema).fields))
        return [(s.contains_null, s.contains_nan, self._string(spec_id, i, pf, field, s.lower_bound),
                 self._string(spec_id, i, pf, field, s.upper_bound))
                for i, ((pf, field), s) in enumerate(zip(fields, mf.partitions or ()))]

    def _string(self, spec_id: int, i: int, pf, field, raw) -> str:
        if raw is None:
            return "null"
        key = (spec_id, i, bytes(raw))
        shown = self._strings.get(key)
        if shown is None:
            shown = self._strings[key] = pf.transform.to_human_string(field.field_type,
                                                                      from_bytes(field.field_type, key[2]))
        return shown


def manifest_row(mf: ManifestFile, strings: SummaryStrings | None) -> dict:
    """A ``manifests`` table row: the file counts under data or delete columns by the manifest's content, the
    partition summaries' bounds as human strings (``strings``, the table's :class:`SummaryStrings`); without
    ``strings``, None in their place (a query that does not read them)."""
    shown = strings(mf) if strings is not None else None
    data = mf.content == MANIFEST_DATA
    counts = (mf.added_files_count or 0, mf.existing_files_count or 0, mf.deleted_files_count or 0)
    return {"content": mf.content, "path": mf.manifest_path, "length": mf.manifest_length,
            "partition_spec_id": mf.partition_spec_id, "added_snapshot_id": mf.added_snapshot_id,
            **dict(zip(("added_data_files_count", "existing_data_files_count", "deleted_data_files_count"),
                       counts if data else (0, 0, 0))),
            **dict(zip(("added_delete_files_count", "existing_delete_files_count", "deleted_delete_files_count"),
                       (0, 0, 0) if data else counts)),
            "partition_summaries": shown}


def listed_entries(manifests: Sequence[ManifestFile], live: Sequence[int] | None) -> int | None:
    """How many entries ``manifests`` hold by the manifest list's counts (the spec's ``added_files_count``,
    ``existing_files_count``, ``deleted_files_count``: the entries of each status), or with ``live`` how many of
    them are live (added or existing) and of those contents: every entry of a manifest of the kind that holds
    them (data files, or delete files), as Iceberg Java's planning trusts those counts to skip a manifest. None
    where a count is missing (optional in v1) or ``live`` leaves out some contents a manifest may hold."""
    total = 0
    for mf in manifests:
        if live is None:
            counts = (mf.added_files_count, mf.existing_files_count, mf.deleted_files_count)
        elif mf.content in _HOLDS and set(_HOLDS[mf.content]) <= set(live):
            counts = (mf.added_files_count, mf.existing_files_count)
        else:
            return None
        if None in counts:
            return None
        total += sum(counts)
    return total


_HOLDS = {MANIFEST_DATA: (0,), MANIFEST_DELETES: (1, 2)}  # (the contents of the entries a manifest may hold)


# a metadata table of at most this many entries (the manifest list's counts) is decoded on the driver, into a
# local relation: a Python stage's fixed cost is more than the driver's decoding until every column of ~70,000
# entries goes to Spark through one thread (docs/contributing/benchmarks.md, "Where the thresholds ... come from")
DRIVER_ENTRIES = 50_000


class MetadataTables:
    """The metadata tables of one table (``t.metadata_table(name)``)."""

    def __init__(self, spark, metadata: TableMetadata, io, metadata_location: str | None):
        self.spark, self.m, self.io, self.location = spark, metadata, io, metadata_location
        self.layout = PartitionLayout(metadata)

    def table(self, name: str, snapshot_id: int | None = None, columns: Sequence[str] | None = None) -> DataFrame:
        """Metadata table ``name`` of the snapshot ``snapshot_id`` (the current one when None); ``columns``: only
        these (matched as Spark matches names, without regard to case), in the order given; the tables read from
        manifests then decode only what they need for them."""
        if name not in METADATA_TABLES:
            raise ValidationError(f"unknown metadata table {name!r}; there are {', '.join(METADATA_TABLES)}")
        snap = self._snapshot(snapshot_id)
        build = getattr(self, f"_{name}")
        if columns is None:
            return build(snap)
        shown, df = metadata_table_columns(self.m, name), None
        if shown is None:
            df = build(snap)
            if not columns:  # (a count: no column to find, so the table need not be made to know them)
                return self._counted(lambda: df.select(), known_count(df), made_on_driver(df))
            shown = df.columns
        by_lower = {c.lower(): c for c in shown}
        unknown = [c for c in columns if c.lower() not in by_lower]
        if unknown:
            raise ValidationError(f"metadata table {name} has no column {', '.join(map(repr, unknown))}; its columns "
                                  f"are {', '.join(shown)}")
        picked = [by_lower[c.lower()] for c in columns]
        if df is None:
            df = build(snap, frozenset(picked))
            if picked and picked == [c for c in shown if c in picked]:
                return df  # (the builders give the columns picked in the table's order: another select would only
                # cost the JVM one more analysis, a query's fixed cost on the tables made on the driver)
        return self._counted(lambda: df.select(*picked), known_count(df), made_on_driver(df))

    def _snapshot(self, snapshot_id: int | None) -> Snapshot | None:
        if snapshot_id is None:
            return self.m.current_snapshot
        snap = self.m.snapshot_by_id(snapshot_id)
        if snap is None:
            raise ValidationError(f"table has no snapshot {snapshot_id}")
        return snap

    # --- entries and files -------------------------------------------------------------------------
    # (the manifest lists read here are kept in the process's memory, as Iceberg Java's cached table keeps them:
    # a repeated query reads none again; :func:`~sparkberg.avro.cache.remembered_manifest_list`)
    def _manifests_of(self, snap: Snapshot | None) -> list[ManifestFile]:
        return snapshot_manifests(self.io, snap, remember=True) if snap is not None else []

    def _all_manifest_files(self) -> list[ManifestFile]:
        seen, out = set(), []
        for s in self.m.snapshots:
            for mf in snapshot_manifests(self.io, s, remember=True):
                if mf.manifest_path not in seen:
                    seen.add(mf.manifest_path)
                    out.append(mf)
        return out

    def _raw_entries(self, manifests: Sequence[ManifestFile], columns: Collection[str],
                     live: Sequence[int] | None = None, decoder: PartitionTotals | None = None
                     ) -> tuple[Callable[[], DataFrame], int | None, bool]:
        """What makes the DataFrame of the entries of ``manifests`` with ``columns`` (:class:`MetadataDecoder`'s),
        deleted ones included, or with ``live`` only the live ones of those contents (``columns`` then has
        ``status`` and ``content``), or ``decoder``'s rows of them; their number where it is known without a Spark
        job: the manifest list counts them (:func:`listed_entries`; not ``decoder``'s rows: then nothing is decoded
        until the DataFrame is used for more than its count), or the driver decoded them; None: Spark counts them;
        and whether the driver decodes them (a local relation)."""
        totals = decoder is not None  # (the partitions table's rows: sums over the entries, not the entries)
        decoder = decoder or MetadataDecoder(self.layout, self.m.current_schema, self.io, columns)
        if not manifests:
            return (lambda: local_dataframe(self.spark, [], decoder.ddl)), 0, True
        listed = None if totals else listed_entries(manifests, live)
        if sum(entry_count(mf) for mf in manifests) > DRIVER_ENTRIES:
            def staged() -> DataFrame:
                df = entries_df(self.spark, manifests, decoder)
                return df if live is None else df.filter((F.col("status") != 2) & F.col("content").isin(list(live)))
            return staged, listed, False

        def decoded() -> pa.Table:
            table = decoder.load_many([(mf, i, self.io) for i, mf in enumerate(manifests)], DRIVER_THREADS)
            if live is not None:
                table = table.filter(pc.and_(pc.not_equal(table["status"], 2),
                                             pc.is_in(table["content"], pa.array(live, table["content"].type))))
            return table
        if listed is not None:
            return (lambda: arrow_dataframe(self.spark, decoded(), decoder.ddl)), listed, True
        table = decoded()
        return (lambda: arrow_dataframe(self.spark, table, decoder.ddl)), table.num_rows, True

    def _counted(self, make: Callable[[], DataFrame], rows: int | None, on_driver: bool) -> DataFrame:
        """``make()``, or where its rows are known, a DataFrame counted without being made
        (:func:`counted_dataframe`); ``on_driver``: a local relation of rows the driver made."""
        return make() if rows is None else counted_dataframe(self.spark, make, rows, on_driver)

    def _file_columns(self) -> list[str]:
        return entry_table_columns(self.m, "files")

    def _data_file(self, names: Collection[str]) -> list[Column]:
        """The files tables' columns of the entries' columns, those of ``names``, in the tables' order."""
        cols = []
        for c in self._file_columns():
            if c not in names:
                continue
            if c == "partition":
                cols.append(partition_column(self.layout, "partition").alias("partition"))
            elif c == "file_format":
                cols.append(F.upper("file_format").alias("file_format"))  # (as Java names it: PARQUET)
            else:
                cols.append(F.col(c))
        return cols

    def _entries_table(self, manifests, picked: Collection[str] = ENTRIES_COLUMNS) -> DataFrame:
        data_file = [c for c in self._file_columns() if c != "readable_metrics"] if "data_file" in picked else []
        make, rows, on_driver = self._raw_entries(manifests, {*picked, *data_file} - {"data_file"})
        return self._counted(lambda: make().select(*[F.struct(*self._data_file(data_file)).alias("data_file")
                                                     if c == "data_file" else c
                                                     for c in ENTRIES_COLUMNS if c in picked]), rows, on_driver)

    def _files_table(self, manifests, content: Sequence[int], picked: Collection[str] | None = None) -> DataFrame:
        picked = self._file_columns() if picked is None else picked
        make, rows, on_driver = self._raw_entries(manifests, {"status", "content", *picked}, live=content)
        return self._counted(lambda: make().select(*self._data_file(picked)), rows, on_driver)

    def _entries(self, snap, picked=ENTRIES_COLUMNS):
        return self._entries_table(self._manifests_of(snap), picked)

    def _all_entries(self, snap, picked=ENTRIES_COLUMNS):
        return self._entries_table(self._all_manifest_files(), picked)

    def _files(self, snap, picked=None):
        return self._files_table(self._manifests_of(snap), (0, 1, 2), picked)

    def _data_files(self, snap, picked=None):
        return self._files_table([m for m in self._manifests_of(snap) if m.content == MANIFEST_DATA], (0,), picked)

    def _delete_files(self, snap, picked=None):
        return self._files_table([m for m in self._manifests_of(snap) if m.content != MANIFEST_DATA], (1, 2), picked)

    def _all_files(self, snap, picked=None):
        return self._files_table(self._all_manifest_files(), (0, 1, 2), picked)

    def _all_data_files(self, snap, picked=None):
        return self._files_table([m for m in self._all_manifest_files() if m.content == MANIFEST_DATA], (0,), picked)

    def _all_delete_files(self, snap, picked=None):
        return self._files_table([m for m in self._all_manifest_files() if m.content != MANIFEST_DATA], (1, 2),
                                 picked)

    # --- the tables made of the metadata on the driver -------------------------------------------------
    def _local(self, rows: list[tuple], ddl: str, picked: Collection[str] | None = None) -> DataFrame:
        """A table made of the metadata on the driver, counted without being made (:func:`counted_dataframe`),
        of the columns ``picked`` (every column when None; the first one, which keeps the rows, when empty).
        Its timestamps are given as microseconds, the unit of its Arrow type: a column Spark converted from
        epoch millis would cost each query a projection, as much as the rows' conversion."""
        if picked is None:
            return self._counted(lambda: local_dataframe(self.spark, rows, ddl), len(rows), True)
        parts = [item.strip() for item in ddl_items(ddl)]
        keep = [i for i, part in enumerate(parts) if part.split(None, 1)[0] in picked] or [0]
        kept = [tuple(r[i] for i in keep) for r in rows]
        return self._counted(lambda: local_dataframe(self.spark, kept, ", ".join(parts[i] for i in keep)), len(rows),
                             True)

    # --- manifests -----------------------------------------------------------------------------------
    def _summary_strings(self, picked: Collection[str] | None) -> SummaryStrings | None:
        """The table's :class:`SummaryStrings` when the columns ``picked`` (every one when None) show them."""
        return SummaryStrings(self.m) if picked is None or "partition_summaries" in picked else None

    def _manifests(self, snap, picked=None):
        strings = self._summary_strings(picked)
        rows = [tuple(manifest_row(mf, strings).values()) for mf in self._manifests_of(snap)]
        return self._local(rows, LOCAL_TABLES["manifests"], picked)

    def _all_manifests(self, snap, picked=None):
        strings = self._summary_strings(picked)
        # every snapshot lists again most of its parent's manifests: a row is made once per manifest list entry
        # (the entry, not its path, is the key: what the row shows is the entry's)
        made: dict[ManifestFile, tuple] = {}
        rows = []
        for s in self.m.snapshots:
            for mf in snapshot_manifests(self.io, s, remember=True):
                row = made.get(mf)
                if row is None:
                    row = made[mf] = tuple(manifest_row(mf, strings).values())
                rows.append(row + (s.snapshot_id,))
        return self._local(rows, LOCAL_TABLES["all_manifests"], picked)

    # --- snapshots, history, refs, logs ----------------------------------------------------------------
    def _snapshots(self, snap, picked=None):
        return self._local([(r["committed_at"] * 1000, *list(r.values())[1:]) for r in snapshot_rows(self.m)],
                           LOCAL_TABLES["snapshots"], picked)

    def _history(self, snap, picked=None):
        return self._local([(r["made_current_at"] * 1000, *list(r.values())[1:]) for r in history_rows(self.m)],
                           LOCAL_TABLES["history"], picked)

    def _refs(self, snap, picked=None):
        return self._local([tuple(r.values()) for r in refs_rows(self.m)], LOCAL_TABLES["refs"], picked)

    def _metadata_log_entries(self, snap, picked=None):
        entries = [(e.timestamp_ms, e.metadata_file) for e in self.m.metadata_log]
        if self.location:
            current = self.location
            if entries and not entries[-1][1].startswith("file:") and current.startswith("file:"):
                current = path_key(current)  # named like the files the log lists (as the writer named them)
            entries.append((self.m.last_updated_ms, current))
        rows = []
        for ts, path in entries:
            s = self._snapshot_as_of(ts)
            rows.append((ts * 1000, path, s.snapshot_id if s else None, s.schema_id if s else None,
                         (s.sequence_number or 0) if s else None))
        return self._local(rows, LOCAL_TABLES["metadata_log_entries"], picked)

    def _snapshot_as_of(self, ts: int) -> Snapshot | None:
        found = None
        for e in self.m.snapshot_log:
            if e.timestamp_ms <= ts:
                found = e.snapshot_id
        return self.m.snapshot_by_id(found) if found is not None else None

    # --- partitions and position deletes ----------------------------------------------------------------
    def _partitions(self, snap):
        totals = PartitionTotals(self.layout, self.m.current_schema, self.io, partition_key_fields(self.m),
                                 {s.snapshot_id: s.timestamp_ms for s in self.m.snapshots})
        make, _, on_driver = self._raw_entries(self._manifests_of(snap), totals.COLUMNS, decoder=totals)
        # (the totals of entries the driver decoded are grouped in one task: a local relation's rows would be
        # shuffled across two stages for it; :func:`made_on_driver`)
        df = make().coalesce(1) if on_driver else make()
        # the tasks' totals added up by partition tuple, as Iceberg Java's partitions table groups
        # (PartitionTotals); the aggregates as SQL text, one JVM call each where Columns built of functions cost
        # dozens (this table's fixed cost, paid by every query of it)
        keys = [F.col("partition"), F.col("_projected")] if totals.keyed else []
        # (Spark groups -0.0 with 0.0, normalizing floating-point keys; Iceberg Java keeps them apart, as it keeps
        # their files, by Double.compare: each float field's text is a key too, and a row's tuple is taken from its
        # files rather than from Spark's normalized key)
        signed = [s.name for s in self.layout.slots if s.field_type in (T.FLOAT, T.DOUBLE)] if keys else []
        keys += [F.expr(f"CAST(partition.`{name.replace('`', '``')}` AS STRING)") for name in signed]
        agg = df.groupBy(*keys).agg(
            *(F.expr(f"CAST(coalesce(sum({name}), 0) AS {'INT' if what == 'files' else 'BIGINT'}) AS {name}")
              for name, _, what in PARTITION_TOTALS),
            F.expr("max(struct(_ts, _snapshot_id, _spec_id)) AS _last"),
            *([F.expr("first(partition) AS _tuple")] if signed else []))
        tuple_ = "_tuple" if signed else "partition"
        return agg.select(*([partition_column(self.layout, tuple_).alias("partition"),
                             F.expr("_last._spec_id AS spec_id")] if keys else []),
                          *(F.expr(name) for name, _, _ in PARTITION_TOTALS),
                          F.expr("timestamp_millis(_last._ts) AS last_updated_at"),
                          F.expr("_last._snapshot_id AS last_updated_snapshot_id"))

    def _position_deletes(self, snap):
        schema = self.m.current_schema
        row_field = T.NestedField(DELETE_FILE_ROW_ID, DELETE_FILE_ROW_NAME, T.StructType(schema.fields))
        v3 = self.m.format_version >= 3
        wanted = ("file_path", "file_format", "spec_id", "partition", "referenced_data_file", "content_offset",
                  "content_size_in_bytes")
        deletes = (self._raw_entries([m for m in self._manifests_of(snap) if m.content != MANIFEST_DATA],
                                     ("status", "content", *wanted), live=(1,))[0]()
                   .select(*wanted).collect())
        row_type = to_spark_read_field(row_field).dataType
        parted = bool(self.layout.slots)
        out_cols = ["file_path", "pos", "row"] + (["partition"] if parted else []) + ["spec_id", "delete_file_path"] \
            + (["content_offset", "content_size_in_bytes"] if v3 else [])
        info_ddl = (f"_del_key string, _df_path string, spec_id int, _phys {self.layout.spark_ddl()}, "
                    "content_offset bigint, content_size_in_bytes bigint")
        files = [d for d in deletes if d["file_format"] != "puffin"]
        dvs = [d for d in deletes if d["file_format"] == "puffin"]
        parts = []
        if files:
            rows = read_files(self.spark, [DELETE_FILE_PATH, DELETE_FILE_POS, row_field],
                              [(d["file_format"], d["file_path"]) for d in files], "position delete", io=self.io,
                              spark_schemes=ReadTuning.of(self.spark).spark_file_systems)
            info = local_dataframe(self.spark, [(path_key(d["file_path"]), d["file_path"], d["spec_id"],
                                                 d["partition"], None, None) for d in files], info_ddl)
            parts.append(rows.withColumnRenamed("_key", "_del_key").drop("_pos").join(F.broadcast(info), "_del_key"))
        if dvs:
            refs = local_dataframe(
                self.spark, [(d["referenced_data_file"], d["file_path"], d["content_offset"],
                              d["content_size_in_bytes"]) for d in dvs],
                "data_file string, puffin_path string, content_offset bigint, content_size_in_bytes bigint")
            positions = map_in_arrow(refs, DVDecoder(io=self.io), "_del_file string, _del_pos bigint")
            info = local_dataframe(self.spark, [(d["referenced_data_file"], d["file_path"], d["spec_id"],
                                                 d["partition"], d["content_offset"], d["content_size_in_bytes"])
                                                for d in dvs], info_ddl.replace("_del_key", "_del_file"))
            parts.append(positions.join(F.broadcast(info), "_del_file").select(
                F.col("_del_file").alias("file_path"), F.col("_del_pos").alias("pos"),
                F.lit(None).cast(row_type).alias("row"), "_df_path", "spec_id", "_phys", "content_offset",
                "content_size_in_bytes"))
        if not parts:
            empty_ddl = (f"file_path string, pos bigint, row {ddl(row_type)}, "
                         f"partition {self.layout.spark_ddl()}, spec_id int, delete_file_path string"
                         + (", content_offset bigint, content_size_in_bytes bigint" if v3 else ""))
            df = local_dataframe(self.spark, [], empty_ddl)
            if parted:
                df = df.withColumn("partition", partition_column(self.layout, "partition"))
            return df.select(*out_cols)
        df = parts[0].select("file_path", "pos", "row", "_df_path", "spec_id", "_phys", "content_offset",
                             "content_size_in_bytes")
        for p in parts[1:]:
            df = df.unionByName(p)
        partition = [partition_column(self.layout, "_phys").alias("partition")] if parted else []
        return df.select("file_path", "pos", "row", *partition, "spec_id",
                         F.col("_df_path").alias("delete_file_path"),
                         *(["content_offset", "content_size_in_bytes"] if v3 else [])).select(*out_cols)

