"""How a write orders its rows: by a sort order (Iceberg sort fields: a transform of a column, a direction and a
null order) or by a z-order of columns, within and across the files it writes.

A sort key is the transform's physical value (``bucket(4, k)`` sorts by bucket number, ``day(ts)`` by day), as
Iceberg sorts. A z-order interleaves the bits of each column's value in a byte form that sorts as the value does,
as Iceberg Java's ``ZOrderByteUtils`` does: integers, dates and timestamps as 8 big-endian bytes with the sign bit
flipped; floating point as the IEEE bits flipped so that they sort as numbers; strings and binary as their first
``var-length-contribution`` bytes, zero-filled; nulls as zero bytes, first. Rows close in z-value are close in
every column, so each file covers a small range of each of them and scans filtering on any of them prune.

The keys are computed on the executors (``mapInArrow``), next to the partition values; the write then
range-partitions the rows by (partition values, keys), so each task's rows are a contiguous range of the order,
and sorts each task's rows.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkberg.arrays import binary_offsets, float_values, int_values, valid_mask
from sparkberg.errors import ValidationError
from sparkberg.format import types as T
from sparkberg.format.partitioning import PartitionSpec, SortOrder, build_sort_order
from sparkberg.write.arrow_transforms import apply_transform
from sparkberg.write.writer import uuids_from_strings

SORT_PREFIX = "_sbs_"
ZORDER_COLUMN = "_sbz"
PRIMITIVE_BYTES = 8  # Iceberg Java's ZOrderByteUtils.PRIMITIVE_BUFFER_SIZE
_ZORDER = re.compile(r"^\s*zorder\s*\((.*)\)\s*$", re.I | re.S)
_INTEGRAL = (T.INT, T.LONG, T.DATE, T.TIME, T.TIMESTAMP, T.TIMESTAMPTZ, T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS)


@dataclass(frozen=True)
class ZOrder:
    """Rows ordered by the interleaved bits of ``columns`` (dotted names); the z-value is cut to
    ``max_output_bytes``."""

    columns: tuple[str, ...]
    var_length_bytes: int = PRIMITIVE_BYTES
    max_output_bytes: int = 2 ** 31 - 1


@dataclass(frozen=True)
class Ordering:
    """What a write sorts by: a sort order's fields or a z-order (one of them), and the id of the table sort order
    the written files are recorded with (0, unsorted, for an order the table does not have)."""

    sort: SortOrder | None = None
    zorder: ZOrder | None = None
    order_id: int = 0


def parse_ordering(schema: T.Schema, text: str | Sequence[str], orders: Sequence[SortOrder] = (),
                   var_length_bytes: int = PRIMITIVE_BYTES, max_output_bytes: int = 2 ** 31 - 1) -> Ordering:
    """An ordering from Spark-style text: ``"id DESC NULLS LAST, bucket(4, k)"`` (a bare column is ASC NULLS
    FIRST) or ``"zorder(a, b)"``. ``orders``: the table's sort orders; a sort order equal to one of them is
    recorded with its id."""
    parts = _split(text) if isinstance(text, str) else [p.strip() for p in text]
    if not parts or not all(parts):
        raise ValidationError(f"sort order {text!r} is empty")
    z = _ZORDER.match(parts[0]) if len(parts) == 1 else None
    if z is not None:
        given = tuple(c.strip().strip("`") for c in _split(z.group(1)))
        if not given or not all(given):
            raise ValidationError(f"zorder needs at least one column: {text!r}")
        for c in given:
            f = schema.find_field(c)
            if not f.field_type.is_primitive:
                raise ValidationError(f"cannot z-order by column {c!r} of type {f.field_type}")
        columns = tuple(schema.name_of(schema.find_field(c).field_id) for c in given)  # (as the schema spells them)
        return Ordering(zorder=ZOrder(columns, var_length_bytes, max_output_bytes))
    if any(_ZORDER.match(p) for p in parts):
        raise ValidationError(f"zorder(...) cannot be combined with other sort fields: {text!r}")
    sort = build_sort_order(schema, parts)
    same = [o for o in orders if o.fields == sort.fields]
    return Ordering(sort=sort, order_id=same[0].order_id if same else 0)


def _split(text: str) -> list[str]:
    """Comma-separated items, commas inside parentheses kept (``bucket(4, k), ts``)."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur.append(ch)
    out.append("".join(cur).strip())
    return out if any(out) else []


class KeyColumns:
    """Executor side: the input batch plus computed key columns: transforms of source columns (partition values,
    sort keys; physical form) and, with a z-order, its z-value."""

    def __init__(self, schema: T.Schema, keys: Sequence[tuple[str, int, object]], zorder: ZOrder | None = None):
        by_id = schema.index_by_id()
        self.keys = [(name, schema.name_of(source_id), by_id[source_id].field_type, transform)
                     for name, source_id, transform in keys]
        self.zorder = zorder
        self.z_types = [] if zorder is None else [schema.find_field(c).field_type for c in zorder.columns]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            cols = list(batch.columns)
            names = list(batch.schema.names)
            for name, source, t, transform in self.keys:
                src = column(batch, source)
                if t == T.UUID and not pa.types.is_fixed_size_binary(src.type) and \
                        not isinstance(src.type, pa.ExtensionType):  # a malformed UUID string is bad data
                    src = uuids_from_strings(src, source).storage
                cols.append(apply_transform(transform, t, src))
                names.append(name)
            if self.zorder is not None:
                z = self.zorder
                cols.append(z_values([(column(batch, c), t) for c, t in zip(z.columns, self.z_types)],
                                     z.var_length_bytes, z.max_output_bytes))
                names.append(ZORDER_COLUMN)
            yield pa.RecordBatch.from_arrays(cols, names=names)


def column(batch: pa.RecordBatch, dotted: str) -> pa.Array:
    """A (possibly nested) column of a batch by dotted name."""
    parts = dotted.split(".")
    arr = batch.column(batch.schema.get_field_index(parts[0]))
    for p in parts[1:]:
        arr = pc.struct_field(arr, p)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr


def ordered_bytes(arr: pa.Array, t: T.IcebergType, var_length_bytes: int) -> np.ndarray:
    """(n, width) uint8: each value in a byte form whose unsigned lexicographic order is the value order
    (nulls: zeros)."""
    n = len(arr)
    valid = valid_mask(arr)
    if t in _INTEGRAL or t == T.BOOLEAN:
        bits = int_values(arr)[0].view(np.uint64) ^ np.uint64(1 << 63)
        out = bits.astype(">u8").view(np.uint8).reshape(n, 8)
    elif t in (T.FLOAT, T.DOUBLE) or isinstance(t, T.DecimalType):
        values = float_values(pc.cast(arr, pa.float64()))
        raw = values.view(np.int64)
        flipped = raw ^ ((raw >> np.int64(63)) | np.int64(-(1 << 63)))
        out = flipped.view(np.uint64).astype(">u8").view(np.uint8).reshape(n, 8)
    elif t in (T.STRING, T.BINARY, T.UUID) or isinstance(t, T.FixedType):
        if isinstance(arr.type, pa.ExtensionType):
            arr = arr.storage
        barr, offsets = binary_offsets(arr)
        buf = barr.buffers()[2]
        data = np.frombuffer(buf, np.uint8) if buf is not None else np.zeros(0, np.uint8)
        width = np.arange(var_length_bytes)[None, :]
        take = width < np.minimum(np.diff(offsets), var_length_bytes)[:, None]
        out = np.zeros((n, var_length_bytes), np.uint8)
        if data.size:
            out[take] = data[np.minimum(offsets[:-1, None] + width, data.size - 1)][take]
    else:
        raise ValidationError(f"cannot z-order by a column of type {t}")
    if not valid.all():
        out[~valid] = 0
    return out


def z_values(columns: list[tuple[pa.Array, T.IcebergType]], var_length_bytes: int = PRIMITIVE_BYTES,
             max_output_bytes: int = 2 ** 31 - 1) -> pa.Array:
    """The z-value of each row: the bits of the columns' ordered bytes interleaved, most significant first, a
    column dropping out once its bits are used (as Java's ``ZOrderByteUtils.interleaveBits``)."""
    parts = [np.unpackbits(ordered_bytes(arr, t, var_length_bytes), axis=1) for arr, t in columns]
    widths = [p.shape[1] for p in parts]
    offsets = np.concatenate([[0], np.cumsum(widths)[:-1]])
    order = [offsets[c] + b for b in range(max(widths)) for c in range(len(parts)) if b < widths[c]]
    packed = np.packbits(np.concatenate(parts, axis=1)[:, order], axis=1)
    packed = np.ascontiguousarray(packed[:, :max_output_bytes])
    n, width = packed.shape
    offsets = pa.py_buffer(np.arange(0, (n + 1) * width, width, dtype=np.int32))
    return pa.BinaryArray.from_buffers(pa.binary(), n, [None, offsets, pa.py_buffer(packed)])


def spec_keys(spec: PartitionSpec, prefix: str) -> list[tuple[str, int, object]]:
    """The key columns of a partition spec (one per field: name, source id, transform)."""
    return [(f"{prefix}{i}", f.source_id, f.transform) for i, f in enumerate(spec.fields)]


def sort_keys(order: SortOrder) -> list[tuple[str, int, object]]:
    """The key columns of a sort order."""
    return [(f"{SORT_PREFIX}{i}", f.source_id, f.transform) for i, f in enumerate(order.fields)]


__all__ = ["Ordering", "ZOrder", "parse_ordering", "KeyColumns", "z_values", "ordered_bytes",
           "spec_keys", "sort_keys", "column", "SORT_PREFIX", "ZORDER_COLUMN"]
