"""Existing Parquet files described for a table's manifests, as Iceberg Java's ``add_files`` and PyIceberg's
``add_files`` import them: nothing is read but the footer.

Columns are matched to the table's fields by the Parquet field ids, or, in files without ids, by the table's name
mapping (spec Appendix C). Metrics come from the footer's row group statistics (value and null counts, and bounds
truncated per ``write.metadata.metrics.*`` as written files' are; no NaN counts: footers have none), for primitive
columns outside lists and maps. Partition values come from the metastore's partition of the file (a Hive or Glue
table's files), else from Hive-style directories (``region=eu/``, identity
fields and ``day`` ones by their value; a timestamp as Spark spells it, in the writing session's zone) or else from
the column's bounds: a file whose rows do not all fall in one partition (bounds that transform to different values,
or a bucket over a range) is an error naming the file.
"""
from __future__ import annotations

import base64
import decimal
import json
import re
import uuid
from typing import Any, Iterator
from urllib.parse import unquote

import pyarrow as pa

from sparkberg.arrays import strings
from sparkberg.errors import ValidationError
from sparkberg.io.fileio import FileIO
from sparkberg.format import types as T
from sparkberg.format.partitioning import PartitionSpec
from sparkberg.format.scalars import zone_of
from sparkberg.format.types import from_json_value, to_json_value
from sparkberg.write.writer import ColumnStats, metrics_mode, read_footer

RESULT_DDL = "data_file string"
_UNITS = {"MILLIS": 1000, "MICROS": 1, "NANOS": 1}


def _leaves(schema: T.Schema) -> dict[int, tuple[str, T.NestedField]]:
    """Primitive fields outside lists and maps: id -> (dotted path, field)."""
    out = {}

    def visit(fields, prefix):
        for f in fields:
            path = f"{prefix}{f.name}"
            if isinstance(f.field_type, T.StructType):
                visit(f.field_type.fields, path + ".")
            elif f.field_type.is_primitive:
                out[f.field_id] = (path, f)
    visit(schema.fields, "")
    return out


def _raw_value(t: T.IcebergType, raw: Any, column) -> Any:
    """A footer statistic (the physical value) as the in-memory value of Iceberg type ``t``; None when it has
    none that orders."""
    if isinstance(t, T.DecimalType):
        unscaled = int.from_bytes(raw, "big", signed=True) if isinstance(raw, (bytes, bytearray)) else int(raw)
        return decimal.Decimal(unscaled).scaleb(-t.scale)
    if t == T.STRING:
        return raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else str(raw)
    if t in (T.TIMESTAMP, T.TIMESTAMPTZ, T.TIME):
        if isinstance(raw, (bytes, bytearray)):
            return None  # (INT96, Spark's legacy timestamps: their statistics are not ordered values)
        logical = str(column.logical_type)
        unit = next((u for u in _UNITS if u.lower() in logical.lower() or u in logical), "MICROS")
        return int(raw) * _UNITS[unit] if unit != "NANOS" else int(raw) // 1000
    if t == T.UUID:
        return uuid.UUID(bytes=bytes(raw))
    return raw


class FileImporter:
    """Executor side: each Parquet file of a batch of paths described as a data file of ``spec`` (JSON, as the
    writer's results are); a second column, where the batch has one, holds each file's partition values as its
    metastore gives them (a JSON object of text by partition column). ``time_zone``: the zone of the session that
    wrote Hive-style directories, which spell a timestamp with a zone in it without naming it."""

    def __init__(self, schema: T.Schema, spec: PartitionSpec, mapping: dict[str, int], properties: dict[str, str],
                 time_zone: str, io: FileIO):
        self.schema, self.spec, self.mapping, self.properties = schema, spec, mapping, properties
        self.io = io  # (the table's: the footers are read with its credentials)
        self.time_zone = time_zone
        self.leaves = _leaves(schema)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            given = batch.column(1).to_pylist() if batch.num_columns > 1 else [None] * batch.num_rows
            out = [self.describe(p, json.loads(v) if v else None) for p, v in zip(batch.column(0).to_pylist(), given)]
            yield pa.RecordBatch.from_arrays([strings(out)], names=["data_file"])

    def _ids(self, meta) -> dict[int, int]:
        """Parquet leaf column index -> table field id."""
        arrow = meta.schema.to_arrow_schema()
        by_path: dict[str, int] = {}

        def visit(field: pa.Field, prefix: str) -> None:
            fid = (field.metadata or {}).get(b"PARQUET:field_id")
            path = f"{prefix}{field.name}"
            if fid is not None:
                by_path[path] = int(fid)
            if pa.types.is_struct(field.type):
                for i in range(field.type.num_fields):
                    visit(field.type.field(i), path + ".")
        for f in arrow:
            visit(f, "")
        ids = {}
        for i in range(meta.num_columns):
            path = meta.schema.column(i).path
            fid = by_path.get(path) if by_path else self.mapping.get(path)
            if fid in self.leaves:
                ids[i] = fid
        return ids

    def describe(self, path: str, given: dict[str, str] | None = None) -> str:
        try:
            meta = read_footer(path, self.io)
        except pa.ArrowInvalid:
            raise ValidationError(f"cannot add {path}: it is not a Parquet file") from None
        ids = self._ids(meta)
        stats = {fid: ColumnStats(self.leaves[fid][1], metrics_mode(self.properties, self.leaves[fid][0]))
                 for fid in ids.values()}
        sizes: dict[int, int] = {}
        bounded = {fid: True for fid in ids.values()}
        offsets = []
        for rg in range(meta.num_row_groups):
            g = meta.row_group(rg)
            offsets.append(g.column(0).dictionary_page_offset or g.column(0).data_page_offset)
            for i, fid in ids.items():
                col, s = g.column(i), stats[fid]
                sizes[fid] = sizes.get(fid, 0) + col.total_compressed_size
                st = col.statistics
                s.values += g.num_rows
                if st is None or not st.has_null_count:
                    bounded[fid] = False
                    continue
                s.nulls += st.null_count
                if not st.has_min_max:
                    bounded[fid] = bounded[fid] and st.null_count == g.num_rows
                    continue
                t = s.field.field_type
                lo, hi = (_raw_value(t, v, meta.schema.column(i)) for v in (st.min_raw, st.max_raw))
                if lo is None or hi is None or isinstance(lo, float) and (lo != lo or hi != hi):
                    bounded[fid] = False
                    continue
                if s.lower is None or lo < s.lower:
                    s.lower = lo
                if s.upper is None or s.upper < hi:
                    s.upper = hi
        lower, upper, values, nulls = {}, {}, {}, {}
        for fid, s in stats.items():
            if s.mode[0] == "none":
                continue
            values[fid], nulls[fid] = s.values, s.nulls
            if bounded[fid]:
                lo, hi = s.bounds()
                if lo is not None:
                    lower[fid] = base64.b64encode(lo).decode("ascii")
                if hi is not None:
                    upper[fid] = base64.b64encode(hi).decode("ascii")
        partition = self._partition(path, {fid: (s.lower, s.upper) if bounded[fid] else (None, None)
                                           for fid, s in stats.items()}, given)
        return json.dumps({"file_path": path, "record_count": meta.num_rows,
                           "file_size_in_bytes": self.io.size(path),
                           "partition": partition, "column_sizes": sizes, "value_counts": values,
                           "null_value_counts": nulls, "nan_value_counts": {}, "lower_bounds": lower,
                           "upper_bounds": upper, "split_offsets": sorted(offsets), "sort_order_id": 0})

    def _partition(self, path: str, bounds: dict[int, tuple[Any, Any]], values: dict[str, str] | None
                   ) -> dict[str, Any]:
        hive = {}
        for seg in path.split("/")[:-1]:
            if "=" in seg:
                k, _, v = seg.partition("=")
                hive[unquote(k)] = unquote(v)
        hive.update(values or {})
        ptype = self.spec.partition_type(self.schema)
        out = {}
        for f, pf in zip(self.spec.fields, ptype.fields):
            kind = str(f.transform).split("[")[0]
            src = self.schema.find_field(f.source_id)
            text = hive.get(f.name)
            if text is not None and kind in ("identity", "day", "void"):
                value = None if text in ("null", "__HIVE_DEFAULT_PARTITION__") or kind == "void" else \
                    _from_text(pf.field_type, text, path, f.name, self.time_zone)
            else:
                lo, hi = bounds.get(f.source_id, (None, None))
                fn = f.transform.apply(src.field_type)
                if lo is None or (lo != hi and not f.transform.preserves_order) or fn(lo) != fn(hi):
                    raise ValidationError(f"cannot add {path}: its partition value for {f.name!r} is unknown (no "
                                          f"Hive-style directory names it, and the values of {src.name!r} do not all "
                                          "fall in one partition)")
                value = fn(lo)
            out[str(f.field_id)] = to_json_value(pf.field_type, value)
        return out


def _from_text(t: T.IcebergType, text: str, path: str, name: str, time_zone: str = "UTC") -> Any:
    try:
        if t in (T.INT, T.LONG):
            return int(text)
        if t in (T.FLOAT, T.DOUBLE):
            return float(text)
        if t == T.BOOLEAN:
            return text.lower() == "true"
        if t in (T.TIMESTAMP, T.TIMESTAMP_NS) + _ZONED:
            return _timestamp_from_text(t, text, time_zone)
        return from_json_value(t, text)
    except (ValueError, TypeError, ValidationError) as e:
        raise ValidationError(f"cannot add {path}: {name}={text!r} is not a {t} ({e})") from None


_ZONED = (T.TIMESTAMPTZ, T.TIMESTAMPTZ_NS)
_HIVE_TIMESTAMP = re.compile(
    r"(\d{4}-\d{2}-\d{2})[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?")


def _timestamp_from_text(t: T.IcebergType, text: str, time_zone: str) -> Any:
    """A timestamp as a Hive-style directory spells it (Spark writes ``2024-01-01 00:00:00`` or
    ``2024-01-01 10:11:12.5``: for a timestamp with a zone, the time in the writing session's ``time_zone``, unnamed;
    an ISO offset is taken too) as the value of ``t``."""
    import datetime as dt

    m = _HIVE_TIMESTAMP.fullmatch(text.strip())
    if m is None:
        raise ValueError("expected yyyy-mm-dd hh:mm[:ss[.fraction]]")
    day, hours, minutes, seconds, fraction, offset = m.groups()
    iso = f"{day}T{hours}:{minutes}:{seconds or '00'}"
    if t not in _ZONED:
        if offset is not None:
            raise ValueError("a timestamp without a zone has no offset")
        return from_json_value(t, iso + (f".{fraction}" if fraction else ""))
    # the offset written, else the session zone's at that time, as the +hh:mm the JSON form takes
    local = dt.datetime.fromisoformat(iso).replace(tzinfo=zone_of(offset or time_zone))
    east = int(local.utcoffset().total_seconds()) // 60
    return from_json_value(t, iso + (f".{fraction}" if fraction else "") +
                           f"{'-' if east < 0 else '+'}{abs(east) // 60:02d}:{abs(east) % 60:02d}")


__all__ = ["FileImporter", "RESULT_DDL"]
