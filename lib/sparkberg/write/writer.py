"""Rows to data files: Parquet written with pyarrow inside ``mapInArrow`` (so it runs the same on a classic
session and over Spark Connect), with Iceberg field ids, the table's compression, files cut at
``write.target-file-size-bytes``, and per-file metrics as Iceberg writes them (value, null and NaN counts,
column sizes, lower/upper bounds per Appendix D truncated per ``write.metadata.metrics.*``). Each task
returns one row per file it wrote; the driver turns them into manifest entries.
"""
from __future__ import annotations

import base64
import json
import re
import uuid
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sparkberg.arrays import float_values, from_numpy, strings, true_mask, valid_mask
from sparkberg.errors import NotSupportedError, ValidationError
from sparkberg.io.fileio import FileIO, to_local_path
from sparkberg.format import types as T
from sparkberg.format.manifests import DataFile
from sparkberg.format.geo import geo_box
from sparkberg.format.partitioning import PartitionSpec
from sparkberg.format.properties import compression, target_file_size
from sparkberg.format.values import to_bytes
from sparkberg.format.types import from_json_value, to_json_value
from sparkberg.write.arrow_transforms import physical
from sparkberg.write.footer import AnnotatedFooterSink, logical_type

METRICS_DEFAULT = ("write.metadata.metrics.default", "truncate(16)")
METRICS_COLUMN_PREFIX = "write.metadata.metrics.column."
PARTITION_PREFIX = "_sbp_"
RESULT_DDL = "data_file string"


def uuid_arrow_type() -> pa.DataType:
    """Parquet's UUID: 16 bytes, big-endian, annotated UUID where pyarrow has the extension type."""
    return pa.uuid() if hasattr(pa, "uuid") else pa.binary(16)


def uuids_from_strings(arr: pa.Array, name: str) -> pa.Array:
    """Spark's UUID strings (Iceberg's Spark type for uuid) as the 16-byte values Parquet stores."""
    import uuid as _uuid
    out = []
    for v in arr.to_pylist():
        try:
            out.append(None if v is None else _uuid.UUID(v).bytes)
        except (ValueError, AttributeError, TypeError):
            raise ValidationError(f"column {name!r}: {v!r} is not a UUID") from None
    valid = np.array([b is not None for b in out], bool)
    data = np.frombuffer(b"".join(b if b is not None else bytes(16) for b in out), "V16")
    storage = from_numpy(data, pa.binary(16), valid)
    target = uuid_arrow_type()
    return storage if target == storage.type else pa.ExtensionArray.from_storage(target, storage)


# a variant in Parquet (spec "Parquet"): a group of its metadata and value binaries, whose fields have no ids; the
# VARIANT annotation is left out, as pyarrow cannot write it (readers find the variant by the table's type)
VARIANT_ARROW = pa.struct([pa.field("metadata", pa.binary(), nullable=False),
                           pa.field("value", pa.binary(), nullable=False)])


def arrow_type(t: T.IcebergType, name: str = "") -> pa.DataType | None:
    """The Arrow type a Parquet file stores Iceberg type ``t`` in (nested fields carry field ids); None for
    ``unknown``, whose columns data files never hold (spec "Schema Evolution": always null)."""
    if t == T.UUID:
        return uuid_arrow_type()
    if t == T.UNKNOWN:
        return None
    if isinstance(t, (T.GeometryType, T.GeographyType)):
        return pa.binary()  # (their WKB)
    if isinstance(t, T.VariantType):
        return VARIANT_ARROW
    simple = {T.BOOLEAN: pa.bool_(), T.INT: pa.int32(), T.LONG: pa.int64(), T.FLOAT: pa.float32(),
              T.DOUBLE: pa.float64(), T.DATE: pa.date32(), T.TIME: pa.time64("us"), T.TIMESTAMP: pa.timestamp("us"),
              T.TIMESTAMPTZ: pa.timestamp("us", "UTC"), T.TIMESTAMP_NS: pa.timestamp("ns"),
              T.TIMESTAMPTZ_NS: pa.timestamp("ns", "UTC"), T.STRING: pa.string(), T.BINARY: pa.binary()}
    if t in simple:
        return simple[t]
    if isinstance(t, T.DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, T.FixedType):
        return pa.binary(t.length)
    if isinstance(t, T.StructType):
        return pa.struct([af for af in (arrow_field(f) for f in t.fields) if af is not None])
    if isinstance(t, T.ListType):
        return pa.list_(pa.field("element", _stored(t.element_type, name), nullable=not t.element_required,
                                 metadata={b"PARQUET:field_id": str(t.element_id).encode()}))
    if isinstance(t, T.MapType):
        return pa.map_(pa.field("key", _stored(t.key_type, name), nullable=False,
                                metadata={b"PARQUET:field_id": str(t.key_id).encode()}),
                       pa.field("value", _stored(t.value_type, name), nullable=not t.value_required,
                                metadata={b"PARQUET:field_id": str(t.value_id).encode()}))
    raise NotSupportedError(f"writing column {name!r} of type {t} is not supported yet")


def _stored(t: T.IcebergType, name: str) -> pa.DataType:
    """:func:`arrow_type` of a list's element or a map's key or value, which a file cannot leave out."""
    out = arrow_type(t, name)
    if out is None:
        raise NotSupportedError(f"writing column {name!r}: a list or map of {t} cannot be stored")
    return out


def arrow_field(f: T.NestedField) -> pa.Field | None:
    """The Parquet (Arrow) field of ``f`` with its field id; None for an ``unknown`` one (never stored)."""
    t = arrow_type(f.field_type, f.name)
    return None if t is None else pa.field(f.name, t, nullable=not f.required,
                                           metadata={b"PARQUET:field_id": str(f.field_id).encode()})


def arrow_schema(schema: T.Schema) -> pa.Schema:
    """The Parquet (Arrow) schema of data files of ``schema``, with field ids (``unknown`` columns left out)."""
    return pa.schema([af for af in (arrow_field(f) for f in schema.fields) if af is not None])


def metrics_mode(props: dict, name: str) -> tuple[str, int]:
    """The metrics mode of column ``name`` (``write.metadata.metrics.column.*``, else the default): (mode, length)."""
    raw = props.get(METRICS_COLUMN_PREFIX + name, props.get(METRICS_DEFAULT[0], METRICS_DEFAULT[1])).strip().lower()
    if raw in ("none", "counts", "full"):
        return raw, 0
    m = re.fullmatch(r"truncate\((\d+)\)", raw)
    if not m or int(m.group(1)) <= 0:
        raise ValidationError(f"invalid metrics mode {raw!r} for column {name!r}")
    return "truncate", int(m.group(1))


def truncate_upper_string(s: str, n: int) -> str | None:
    """The smallest string of at most ``n`` code points that is >= every string with prefix s[:n]
    (increment the last code point that can be incremented, as Iceberg Java does)."""
    if len(s) <= n:
        return s
    chars = list(s[:n])
    while chars:
        c = ord(chars[-1]) + 1
        if 0xD800 <= c <= 0xDFFF:
            c = 0xE000
        if c <= 0x10FFFF:
            chars[-1] = chr(c)
            return "".join(chars)
        chars.pop()
    return None


def truncate_upper_binary(b: bytes, n: int) -> bytes | None:
    if len(b) <= n:
        return b
    out = bytearray(b[:n])
    while out:
        if out[-1] < 0xFF:
            out[-1] += 1
            return bytes(out)
        out.pop()
    return None


class ColumnStats:
    """The metrics of one column of a file: counts, and bounds kept per the column's metrics mode."""

    def __init__(self, field: T.NestedField, mode: tuple[str, int]):
        self.field = field
        self.mode = mode
        self.values = 0
        self.nulls = 0
        self.nans = 0
        self.lower: Any = None
        self.upper: Any = None
        # a geometry's or geography's bounds are its bounding box's corners, whatever the mode keeping bounds (a
        # truncated corner would be no point); a geography whose edges are not spherical gets none (format/geo.py)
        self.box = geo_box(field.field_type)

    def update(self, arr: pa.Array) -> None:
        t = self.field.field_type
        self.values += len(arr)
        self.nulls += arr.null_count
        if self.mode[0] in ("none", "counts"):
            if t in (T.FLOAT, T.DOUBLE) and self.mode[0] == "counts":
                self.nans += int(pc.sum(pc.is_nan(arr)).as_py() or 0)
            return
        if self.box is not None:
            self.box.update(arr)
            return
        if t == T.UUID:  # bounds are the 16 bytes, ordered as unsigned bytes (spec Appendix D)
            if not pa.types.is_fixed_size_binary(arr.type) and not isinstance(arr.type, pa.BaseExtensionType):
                arr = uuids_from_strings(arr, self.field.name)
            if isinstance(arr.type, pa.BaseExtensionType):
                arr = arr.storage
            arr = arr.cast(pa.binary())
        if t in (T.FLOAT, T.DOUBLE):
            nan = pc.is_nan(arr)
            self.nans += int(pc.sum(nan).as_py() or 0)
            arr = arr.filter(pc.invert(nan))  # (a null mask slot drops its row: nulls go too)
        if t == T.BOOLEAN or t.is_primitive:
            values = physical(arr, t)
            if len(values) - values.null_count == 0:
                return
            mm = pc.min_max(values)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if isinstance(lo, float) and (lo == 0.0 or hi == 0.0):
                # spec: -0.0 must precede +0.0 in bounds; min/max may return either zero
                v = float_values(values.drop_null())
                zeros = v == 0
                if lo == 0.0:
                    lo = -0.0 if np.any(zeros & np.signbit(v)) else 0.0
                if hi == 0.0:
                    hi = 0.0 if np.any(zeros & ~np.signbit(v)) else -0.0
            if self.lower is None or _lt(lo, self.lower):
                self.lower = lo
            if self.upper is None or _lt(self.upper, hi):
                self.upper = hi

    def bounds(self) -> tuple[bytes | None, bytes | None]:
        t = self.field.field_type
        if self.box is not None and self.mode[0] not in ("none", "counts"):
            return self.box.bounds() or (None, None)
        if self.lower is None or self.mode[0] in ("none", "counts"):
            return None, None
        lo, hi = self.lower, self.upper
        if self.mode[0] == "truncate":
            n = self.mode[1]
            if t == T.STRING:
                lo, hi = lo[:n], truncate_upper_string(hi, n)
            elif t in (T.BINARY,) or isinstance(t, T.FixedType):
                lo, hi = lo[:n], truncate_upper_binary(hi, n)
        if t == T.UUID:
            return bytes(lo), bytes(hi)
        try:
            return to_bytes(t, lo), (None if hi is None else to_bytes(t, hi))
        except Exception:  # noqa: BLE001 - a type without a binary form has no bounds
            return None, None


def _lt(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.encode("utf-8") < b.encode("utf-8")
    return a < b


class FileWriter:
    """Executor side: writes the rows it is given (clustered by partition) into Parquet files and returns
    one JSON-encoded data-file row per file. The rows carry their partition keys (``_sbp_<i>`` columns), or
    ``key_columns``, when given, adds them to each batch first; rows whose keys it adds come unclustered unless
    ``clustered`` says they are (the JVM clustered them by expressions of the keys)."""

    def __init__(self, schema: T.Schema, spec: PartitionSpec, data_location: str, properties: dict[str, str],
                 write_id: str, sort_order_id: int = 0,
                 key_columns: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]] | None = None,
                 clustered: bool = False, *, io: FileIO):
        self.schema = schema
        self.io = io  # (the table's: the tasks write with its credentials)
        self.sort_order_id = sort_order_id
        self.spec = spec
        self.data_location = data_location.rstrip("/")
        self.properties = dict(properties)
        self.write_id = write_id
        self.arrow_schema = arrow_schema(schema)
        self.target = target_file_size(self.properties)
        self.compression = compression(self.properties)
        if self.compression == "uncompressed":
            self.compression = "none"
        self.required = [f.name for f in schema.fields if f.required]
        self.variants = {f.name for f in schema.fields if _has_variant(f.field_type)}
        self.annotations = {f.field_id: annotation for f in schema.index_by_id().values()
                            if (annotation := logical_type(f.field_type)) is not None}
        self.stat_fields = [f for f in schema.fields if f.field_type.is_primitive and f.field_type != T.UNKNOWN]
        self.metrics_modes = {f.name: metrics_mode(self.properties, f.name) for f in self.stat_fields}
        for f in self.stat_fields:  # (a geography without a box keeps counts: format/geo.py::geo_box says why)
            if isinstance(f.field_type, T.GeographyType) and geo_box(f.field_type) is None and \
                    self.metrics_modes[f.name][0] != "none":
                self.metrics_modes[f.name] = ("counts", 0)
        self.ptype = spec.partition_type(schema)
        self.key_columns = key_columns
        self.clustered = clustered

    def _conform(self, batch: pa.RecordBatch) -> pa.Table:
        for name in self.required:
            idx = batch.schema.get_field_index(name)
            if idx >= 0 and batch.column(idx).null_count:
                raise ValidationError(f"column {name!r} is required (NOT NULL) but the data has nulls")
        arrays = []
        for f in self.arrow_schema:
            src = batch.column(batch.schema.get_field_index(f.name))
            out = _cast(src, f.type, f.name)
            if f.name in self.variants:
                out = _variant_nulls(out, self.schema.as_struct.field_by_name(f.name).field_type)
            arrays.append(out)
        return pa.Table.from_arrays(arrays, schema=self.arrow_schema)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Rows clustered by partition are written a file at a time (a partition's file is closed when the next
        partition begins), whether they carry their keys or the writer computes them; rows that come
        unclustered (``key_columns`` without ``clustered``) are fanned out, a file open for each partition met,
        each batch's rows grouped by partition first (Iceberg Java's fanout writer). Either way a file is rolled
        at the target size."""
        fanout = self.key_columns is not None and not self.clustered
        files: dict[tuple, _OpenFile] = {}  # partition key -> its open file
        n_files = 0
        results = []
        nparts = len(self.spec.fields)
        if self.key_columns is not None:
            batches = self.key_columns(batches)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            keys = [batch.column(batch.schema.get_field_index(f"{PARTITION_PREFIX}{i}")) for i in range(nparts)]
            data = self._conform(batch)
            if fanout and nparts:  # (the batch's rows grouped by partition: a stable sort by their keys)
                order = pc.sort_indices(pa.table(keys, names=[str(i) for i in range(nparts)]),
                                        sort_keys=[(str(i), "ascending") for i in range(nparts)])
                data, keys = data.take(order), [k.take(order) for k in keys]
            runs = key_runs(keys, batch.num_rows)
            row_bytes = max(1, data.nbytes // max(1, data.num_rows))
            step = max(1, min(batch.num_rows, self.target // row_bytes))  # rows per piece, so files roll in time
            for start, end, key in runs:
                slot = _hashable(key)
                if not fanout:  # (clustered: the previous partition's file is done)
                    for other in [k for k in files if k != slot]:
                        results.append(files.pop(other).close())
                for piece in range(start, end, step):
                    chunk = data.slice(piece, min(step, end - piece))
                    current = files.get(slot)
                    if current is not None and current.size() >= self.target:
                        results.append(files.pop(slot).close())
                        current = None
                    if current is None:
                        n_files += 1
                        current = files[slot] = _OpenFile(self, key, n_files, buffered=fanout)
                    current.write(chunk)
            if fanout and sum(f.pending_bytes for f in files.values()) > FANOUT_BUFFER_BYTES:
                for f in files.values():
                    f.flush()
        results += [f.close() for f in files.values()]
        if results:
            yield pa.RecordBatch.from_arrays([strings(results)], names=["data_file"])


def _has_variant(t: T.IcebergType) -> bool:
    return isinstance(t, T.VariantType) or any(_has_variant(c.field_type) for c in T.children(t))


def _variant_nulls(arr: pa.Array, t: T.IcebergType) -> pa.Array:
    """``arr`` with empty bytes in a variant's ``metadata`` and ``value`` under each null variant (at any depth):
    Parquet's writer refuses a null in a required field even where its parent is null and no reader looks."""
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([_variant_nulls(c, t) for c in arr.chunks], arr.type)
    if isinstance(t, T.VariantType):
        if not arr.null_count:
            return arr
        valid = pc.is_valid(arr)
        kids = [pc.if_else(valid, arr.field(i), pa.scalar(b"", pa.binary())) for i in range(arr.type.num_fields)]
        return pa.StructArray.from_arrays(kids, fields=list(arr.type), mask=pc.invert(valid))
    if isinstance(t, T.StructType):
        kids = [_variant_nulls(arr.field(i), f.field_type) if _has_variant(f.field_type) else arr.field(i)
                for i, f in enumerate(f for f in t.fields if f.field_type != T.UNKNOWN)]
        return pa.StructArray.from_arrays(kids, fields=list(arr.type), mask=pc.is_null(arr) if arr.null_count else None)
    if isinstance(t, T.ListType):
        return pa.ListArray.from_arrays(arr.offsets, _variant_nulls(arr.values, t.element_type), type=arr.type,
                                        mask=pc.is_null(arr) if arr.null_count else None)
    if isinstance(t, T.MapType):
        return pa.MapArray.from_arrays(arr.offsets, arr.keys, _variant_nulls(arr.items, t.value_type), type=arr.type,
                                       mask=pc.is_null(arr) if arr.null_count else None)
    return arr


def _cast(arr: pa.Array, target: pa.DataType, name: str) -> pa.Array:
    if arr.type.equals(target):
        return arr
    if target == uuid_arrow_type() and (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return uuids_from_strings(arr, name)
    try:
        if pa.types.is_timestamp(target) and pa.types.is_timestamp(arr.type):
            return arr.cast(target)
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise ValidationError(f"column {name!r}: cannot write {arr.type} data as {target}: {e}") from None


def key_runs(keys: list[pa.Array], n: int) -> Iterator[tuple[int, int, tuple]]:
    """(start, end, key) of runs of equal keys (partition keys, data files: rows arrive clustered), found by
    comparing each row's keys with the previous row's in Arrow: nulls equal nulls and NaNs equal NaNs, as they
    share a partition."""
    if not keys:
        yield 0, n, ()
        return
    changed = np.zeros(max(n - 1, 0), dtype=bool)
    for k in keys:
        after, before = k.slice(1), k.slice(0, n - 1)
        same = true_mask(pc.equal(after, before)) | ~(valid_mask(after) | valid_mask(before))
        if pa.types.is_floating(k.type):
            same |= true_mask(pc.and_(pc.is_nan(after), pc.is_nan(before)))
        changed |= ~same
    starts = [0] + (np.flatnonzero(changed) + 1).tolist()
    for start, end in zip(starts, starts[1:] + [n]):
        yield start, end, tuple(k[start].as_py() for k in keys)


def _hashable(key: tuple) -> tuple:
    """A partition key as a dict key: NaN is NaN (the float values of an identity partition)."""
    return tuple(("NaN",) if isinstance(v, float) and v != v else v for v in key)


# A fanned-out file buffers its rows up to this size before it writes them as a row group (a batch's rows of one
# partition are a small part of it: written as they come, a file of 1M rows from 10k-row batches over 8 partitions
# had 800 row groups of 1250 rows); all files' buffers together are written out past the second.
FANOUT_ROW_GROUP_BYTES = 16 * 1024 * 1024
FANOUT_BUFFER_BYTES = 256 * 1024 * 1024


class _OpenFile:
    def __init__(self, w: FileWriter, key: tuple, ordinal: int, buffered: bool = False):
        self.w = w
        self.buffered = buffered
        self.pending: list[pa.Table] = []
        self.pending_bytes = 0
        self.key = key
        self.partition = {f.field_id: v for f, v in zip(w.spec.fields, key)}
        rel = w.spec.partition_to_path(self.partition, w.schema) if w.spec.fields else ""
        name = f"{ordinal:05d}-{w.write_id}-{uuid.uuid4().hex[:12]}.parquet"
        self.path = "/".join(p for p in (w.data_location, rel, name) if p)
        local = to_local_path(self.path)
        if local is not None:
            import os
            os.makedirs(os.path.dirname(local), exist_ok=True)
            self.sink = pa.OSFile(local, "wb")
        else:
            self.sink = w.io.open_output(self.path)
        self.footer: list = []  # (the footer as written, which the writer hands back as it closes the file)
        # (variant, geometry and geography columns get their logical types in the footer: write/footer.py)
        self.annotated = AnnotatedFooterSink(self.sink, w.annotations) if w.annotations else None
        self.writer = pq.ParquetWriter(self.annotated or self.sink, w.arrow_schema, compression=w.compression,
                                       write_statistics=True, metadata_collector=self.footer)
        self.records = 0
        self.stats = [ColumnStats(f, w.metrics_modes[f.name]) for f in w.stat_fields]

    def size(self) -> int:
        return (self.annotated or self.sink).tell() + self.pending_bytes

    def write(self, table: pa.Table) -> None:
        self.records += table.num_rows
        for s in self.stats:
            s.update(table.column(s.field.name).combine_chunks())
        if not self.buffered:
            self.writer.write_table(table)
            return
        self.pending.append(table)
        self.pending_bytes += table.nbytes
        if self.pending_bytes >= FANOUT_ROW_GROUP_BYTES:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows as one row group."""
        if self.pending:
            self.writer.write_table(pa.concat_tables(self.pending).combine_chunks())
            self.pending, self.pending_bytes = [], 0

    def close(self) -> str:
        self.flush()
        if self.annotated is not None:
            self.annotated.hold()
            self.writer.close()
            size = self.annotated.finish()
        else:
            self.writer.close()
            size = self.sink.tell()
        self.sink.close()
        meta = self.footer[0]  # (not read back from the file: on an object store that is a request a file)
        ids = {f.name: f.field_id for f in self.w.schema.fields}
        column_sizes: dict[int, int] = {}
        offsets = []
        for rg in range(meta.num_row_groups):
            g = meta.row_group(rg)
            offsets.append(g.column(0).dictionary_page_offset or g.column(0).data_page_offset)
            for c in range(g.num_columns):
                col = g.column(c)
                fid = ids.get(col.path_in_schema)
                if fid is not None:
                    column_sizes[fid] = column_sizes.get(fid, 0) + col.total_compressed_size
        lower, upper = {}, {}
        value_counts, null_counts, nan_counts = {}, {}, {}
        for s in self.stats:
            fid = s.field.field_id
            if s.mode[0] == "none":
                continue
            value_counts[fid] = s.values
            null_counts[fid] = s.nulls
            if s.field.field_type in (T.FLOAT, T.DOUBLE):
                nan_counts[fid] = s.nans
            lo, hi = s.bounds()
            if lo is not None:
                lower[fid] = lo
            if hi is not None:
                upper[fid] = hi
        enc = {k: base64.b64encode(v).decode("ascii") for k, v in lower.items()}
        enc_u = {k: base64.b64encode(v).decode("ascii") for k, v in upper.items()}
        part = {str(f.field_id): to_json_value(pf.field_type, self.partition[f.field_id])
                for f, pf in zip(self.w.spec.fields, self.w.ptype.fields)}
        return json.dumps({"file_path": self.path, "record_count": self.records, "file_size_in_bytes": size,
                           "partition": part, "column_sizes": column_sizes, "value_counts": value_counts,
                           "null_value_counts": null_counts, "nan_value_counts": nan_counts,
                           "lower_bounds": enc, "upper_bounds": enc_u, "split_offsets": sorted(offsets),
                           "sort_order_id": self.w.sort_order_id})


def read_footer(path: str, io: FileIO):
    """The Parquet footer of the file at ``path`` (a local path, or a location ``io`` opens)."""
    local = to_local_path(path)
    if local is not None:
        return pq.read_metadata(local)
    with io.open_input(path) as f:
        return pq.read_metadata(f)


def data_file_from_json(text: str, spec: PartitionSpec, schema: T.Schema) -> DataFile:
    """The manifest's data file for one row the writer returned."""
    d = json.loads(text)
    ptype = spec.partition_type(schema)
    partition = {f.field_id: from_json_value(pf.field_type, d["partition"].get(str(f.field_id)))
                 for f, pf in zip(spec.fields, ptype.fields)}

    def ints(m):
        return {int(k): int(v) for k, v in m.items()} or None

    return DataFile(
        file_path=d["file_path"], file_format="parquet", partition=partition, record_count=d["record_count"],
        file_size_in_bytes=d["file_size_in_bytes"], column_sizes=ints(d["column_sizes"]),
        value_counts=ints(d["value_counts"]), null_value_counts=ints(d["null_value_counts"]),
        nan_value_counts=ints(d["nan_value_counts"]),
        lower_bounds={int(k): base64.b64decode(v) for k, v in d["lower_bounds"].items()} or None,
        upper_bounds={int(k): base64.b64decode(v) for k, v in d["upper_bounds"].items()} or None,
        split_offsets=tuple(d["split_offsets"]) or None, sort_order_id=d["sort_order_id"])
