"""Manifest lists and manifests of format versions 1-3, read and written with fastavro.

Reading maps every field by its Avro ``field-id`` (names differ between writers and versions)
into the model of :mod:`sparkberg.format.manifests`; values absent in a version take the spec's read defaults
("sequence_number: v2+, 0 for v1"). This is the reference decoder: planning decodes manifests through
:mod:`sparkberg.avro.decode`, which uses compiled code where it applies and this module otherwise. Entries
already encoded (the manifest rewrite carries them so) are put in a container by :func:`avro_container`, which
only joins and deflates them. Functions take and return bytes; the caller does the I/O.
"""
from __future__ import annotations

import functools
import io
import json
import os
from typing import Any, Iterable, Mapping, Sequence

import fastavro
from isal import isal_zlib as _deflate  # (a dependency: see setup.cfg)

from sparkberg.avro.schemas import (
    field_ids, manifest_entry_schema, manifest_list_names, manifest_list_schema, non_null,
)
from sparkberg.avro.types import from_avro_value, make_compatible_name, partition_record, to_avro_value
from sparkberg.errors import InvalidMetadataError, ValidationError
from sparkberg.format.manifests import (
    ADDED, DATA, DELETED, EXISTING, MANIFEST_DATA, MANIFEST_DELETES, DataFile, FieldSummary, Manifest, ManifestEntry,
    ManifestFile,
)
from sparkberg.format.partitioning import PartitionSpec
from sparkberg.format.types import UUID, DecimalType, Schema, StructType
from sparkberg.format.values import is_nan, to_bytes
from sparkberg.format.scalars import date_to_days, datetime_to_micros, time_to_micros
from sparkberg import state

V1_BLOCK_SIZE = 64 * 1024 * 1024  # what Java writes in the deprecated v1 block_size_in_bytes
AVRO_CODEC = "deflate"
AVRO_DEFLATE_LEVEL = 3  # (ISA-L's levels are 0-3; 3 makes manifests as small as zlib's default level)


# --- reading ----------------------------------------------------------------------------------------------

def _open(data: bytes, path: str | None) -> tuple[Any, dict]:
    """A fastavro reader, and the writer's schema as JSON (with its field ids and logical types)."""
    try:
        reader = fastavro.reader(io.BytesIO(data))
        raw = json.loads(reader.metadata["avro.schema"])
        return reader, raw
    except InvalidMetadataError:
        raise
    except Exception as e:  # fastavro raises many types for foreign or truncated files
        raise InvalidMetadataError(f"not a readable Avro file: {type(e).__name__}: {e}", path) from None


def _records(reader, path: str | None) -> list[dict]:
    try:
        return list(reader)
    except Exception as e:
        raise InvalidMetadataError(f"corrupt or truncated Avro data: {type(e).__name__}: {e}", path) from None


def _kv_map(value: Any) -> dict | None:
    if value is None:
        return None
    if isinstance(value, dict):  # Avro map with string keys (some writers)
        return {int(k): v for k, v in value.items()}
    return {int(kv["key"]): kv["value"] for kv in value}


def _value_converter(avro_type: Any, named: dict[str, dict]):
    """Converter of a decoded partition value to the in-memory form, from the writer's Avro type
    (fastavro decodes logical types into date/datetime/time/Decimal/UUID objects)."""
    t = non_null(avro_type)
    if isinstance(t, str) and t in named:
        t = named[t]
    if isinstance(t, dict):
        logical = t.get("logicalType")
        if logical in ("date", "time-micros", "timestamp-micros", "local-timestamp-micros", "timestamp-nanos",
                       "local-timestamp-nanos", "time-millis", "timestamp-millis"):
            return _temporal_converter(logical)
        if logical == "decimal":
            scale = int(t.get("scale", 0))
            dtype = DecimalType(int(t.get("precision", 38)), scale)
            return lambda v: from_avro_value(dtype, v)
        if logical == "uuid":
            return lambda v: from_avro_value(UUID, v)
        if t.get("type") == "fixed":
            return lambda v: None if v is None else bytes(v)
    return lambda v: v


def _temporal_converter(logical: str):
    import datetime as _dt

    def convert(v):
        if v is None or isinstance(v, int):
            return v
        if logical == "date":
            return date_to_days(v)
        if isinstance(v, _dt.time):
            return time_to_micros(v) // (1000 if logical == "time-millis" else 1)
        micros = datetime_to_micros(v)
        if logical.endswith("nanos"):
            return micros * 1000
        return micros // 1000 if logical.endswith("millis") else micros
    return convert


def _named_types(schema: Any, out: dict[str, dict]) -> dict[str, dict]:
    if isinstance(schema, list):
        for s in schema:
            _named_types(s, out)
    elif isinstance(schema, dict):
        if schema.get("type") in ("fixed", "record", "enum") and "name" in schema:
            out[schema["name"]] = schema
        for key in ("fields", "items", "values"):
            if key in schema:
                _named_types(schema[key], out)
        if "type" in schema and isinstance(schema["type"], (dict, list)):
            _named_types(schema["type"], out)
    return out


def read_manifest_list(data: bytes, path: str | None = None) -> list[ManifestFile]:
    """Parse a manifest list of any format version into :class:`ManifestFile` entries (the reference decoder;
    planning reads lists through :func:`sparkberg.avro.decode.manifest_list`)."""
    reader, raw = _open(data, path)
    names = manifest_list_names(raw)
    if names is None:
        raise InvalidMetadataError("not a manifest list (no manifest_path field with id 500)", path, "manifest_path")
    name, summary_names = names
    out = []
    for i, r in enumerate(_records(reader, path)):
        def g(fid, default=None, r=r):
            n = name.get(fid)
            v = r.get(n) if n is not None else None
            return default if v is None else v
        try:
            parts = g(507)
            summaries = None if parts is None else tuple(
                FieldSummary(bool(p.get(summary_names.get(509, "contains_null"))),
                             p.get(summary_names.get(518, "contains_nan")),
                             p.get(summary_names.get(510, "lower_bound")),
                             p.get(summary_names.get(511, "upper_bound"))) for p in parts)
            out.append(ManifestFile(
                manifest_path=r[name[500]], manifest_length=int(r[name[501]]), partition_spec_id=int(r[name[502]]),
                added_snapshot_id=int(g(503, 0)), content=int(g(517, 0)), sequence_number=int(g(515, 0)),
                min_sequence_number=int(g(516, 0)), added_files_count=g(504), existing_files_count=g(505),
                deleted_files_count=g(506), added_rows_count=g(512), existing_rows_count=g(513),
                deleted_rows_count=g(514), partitions=summaries, key_metadata=g(519), first_row_id=g(520)))
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidMetadataError(f"malformed manifest list entry {i}: {e}", path, str(e)) from None
    return out


LEGACY_KEEP_IDS = frozenset({105})  # v1 block size: required in v1 files, kept for exact round trips
# data_file fields every reader of entries needs; the metrics maps are the bulk of a manifest
ESSENTIAL_DATA_FILE_IDS = frozenset({134, 100, 101, 102, 103, 104, 135, 140, 142, 143, 144, 145, 131, 132})
METRICS_DATA_FILE_IDS = frozenset({108, 109, 110, 137, 125, 128})


def _projected(raw: dict, keep_ids: frozenset[int]) -> dict:
    """The writer schema with only the ``data_file`` fields in ``keep_ids`` (fastavro then skips the rest)."""
    import copy
    schema = copy.deepcopy(raw)
    for f in schema.get("fields", []):
        if f.get("field-id") == 2:
            record = non_null(f["type"])
            if isinstance(record, dict):
                record["fields"] = [x for x in record["fields"] if x.get("field-id") in keep_ids]
    return schema


@functools.lru_cache(maxsize=64)
def _manifest_layout(schema_json: str) -> tuple:
    """What reading entries needs from a manifest's writer schema: (entry field names by id, data_file field
    names by id, partition fields as (id, name, converter)), or (None, the problem, its field) when it is not a
    manifest's. A table's manifests share a handful of schemas: each worked out once."""
    raw = json.loads(schema_json)
    entry_ids = field_ids(raw)
    if 2 not in entry_ids or 0 not in entry_ids:
        return None, "not a manifest (no status/data_file fields with ids 0 and 2)", "data_file"
    df_ids = field_ids(non_null(entry_ids[2][1]))
    if 100 not in df_ids or 102 not in df_ids:
        return None, "not a manifest (data_file lacks file_path/partition)", "data_file"
    named = _named_types(raw, {})
    part_schema = non_null(df_ids[102][1])
    if isinstance(part_schema, str):
        part_schema = named.get(part_schema, {"fields": []})
    part_fields = tuple((int(f["field-id"]) if "field-id" in f else 1000 + i, f["name"],
                         _value_converter(f["type"], named)) for i, f in enumerate(part_schema.get("fields", [])))
    return ({fid: n for fid, (n, _) in entry_ids.items()}, {fid: n for fid, (n, _) in df_ids.items()},
            part_fields)


@functools.lru_cache(maxsize=64)
def _planning_schema(schema_json: str) -> dict:
    """The writer schema without the metrics maps (:func:`_projected`), made once per schema."""
    return _projected(json.loads(schema_json), ESSENTIAL_DATA_FILE_IDS | LEGACY_KEEP_IDS)


def read_manifest(data: bytes, path: str | None = None, with_metrics: bool = True) -> Manifest:
    """Parse a manifest of any format version (raw: no inheritance applied). Without ``with_metrics`` the
    column metrics maps are not decoded (they stay None), which makes planning reads several times cheaper."""
    try:
        reader = fastavro.reader(io.BytesIO(data))
        schema_json = reader.metadata["avro.schema"]
        if not with_metrics:
            reader = fastavro.reader(io.BytesIO(data), reader_schema=_planning_schema(schema_json))
    except Exception as e:  # fastavro raises many types for foreign or truncated files
        raise InvalidMetadataError(f"not a readable Avro file: {type(e).__name__}: {e}", path) from None
    meta = {k: (v.decode("utf-8") if isinstance(v, bytes) else v) for k, v in reader.metadata.items()
            if not k.startswith("avro.")}
    en, dn, part_fields = _manifest_layout(schema_json)
    if en is None:
        raise InvalidMetadataError(dn, path, part_fields)
    try:
        fv = int(meta.get("format-version", "1"))
    except ValueError:
        raise InvalidMetadataError(f"bad format-version {meta.get('format-version')!r}", path,
                                   "format-version") from None
    content_name = meta.get("content", "data")
    if content_name not in ("data", "deletes"):
        raise InvalidMetadataError(f"bad manifest content {content_name!r}", path, "content")
    entries = []
    for i, r in enumerate(_records(reader, path)):
        try:
            d = r[en[2]]

            def g(fid, d=d):
                n = dn.get(fid)
                return None if n is None else d.get(n)

            part = d[dn[102]] or {}
            split = g(132)
            eq = g(135)
            df = DataFile(
                file_path=d[dn[100]], file_format=str(d[dn[101]]).lower(),
                partition={fid: conv(part.get(n)) for fid, n, conv in part_fields},
                record_count=int(d[dn[103]]), file_size_in_bytes=int(d[dn[104]]),
                content=int(g(134) or 0), column_sizes=_kv_map(g(108)), value_counts=_kv_map(g(109)),
                null_value_counts=_kv_map(g(110)), nan_value_counts=_kv_map(g(137)),
                lower_bounds=_kv_map(g(125)), upper_bounds=_kv_map(g(128)), key_metadata=g(131),
                split_offsets=None if split is None else tuple(split), equality_ids=None if eq is None else tuple(eq),
                sort_order_id=g(140), first_row_id=g(142), referenced_data_file=g(143), content_offset=g(144),
                content_size_in_bytes=g(145), block_size_in_bytes=g(105), distinct_counts=_kv_map(g(111)))
            entries.append(ManifestEntry(
                status=int(r[en[0]]), data_file=df, snapshot_id=r.get(en[1]) if 1 in en else None,
                sequence_number=r.get(en[3]) if 3 in en else None,
                file_sequence_number=r.get(en[4]) if 4 in en else None))
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidMetadataError(f"malformed manifest entry {i}: {type(e).__name__}: {e}", path) from None
    try:
        spec_id = int(meta.get("partition-spec-id", "0"))
        schema_id = int(meta["schema-id"]) if "schema-id" in meta else None
    except ValueError as e:
        raise InvalidMetadataError(f"bad manifest key-value metadata: {e}", path, "partition-spec-id") from None
    return Manifest(tuple(entries), fv, MANIFEST_DELETES if content_name == "deletes" else MANIFEST_DATA, spec_id,
                    meta.get("schema"), meta.get("partition-spec"), schema_id, meta)


# --- writing ----------------------------------------------------------------------------------------------

def _kv_list(m: dict | None) -> list | None:
    return None if m is None else [{"key": k, "value": v} for k, v in m.items()]


def entry_record(e: ManifestEntry, version: int, pfields: list[tuple[str, int, Any]]) -> dict:
    """The Avro record of an entry, as fastavro writes it; ``pfields``: :func:`partition_fields`."""
    d = e.data_file
    if version == 1 and d.content != DATA:
        raise ValidationError(f"v1 manifests cannot hold delete files ({d.file_path})")
    values = d.partition
    part = {name: to_avro_value(t, values.get(fid)) for name, fid, t in pfields}
    df: dict[str, Any] = {
        "content": d.content, "file_path": d.file_path, "file_format": d.file_format.upper(),
        "partition": part, "record_count": d.record_count, "file_size_in_bytes": d.file_size_in_bytes,
        "block_size_in_bytes": d.block_size_in_bytes if d.block_size_in_bytes is not None else V1_BLOCK_SIZE,
        "column_sizes": _kv_list(d.column_sizes), "value_counts": _kv_list(d.value_counts),
        "null_value_counts": _kv_list(d.null_value_counts), "nan_value_counts": _kv_list(d.nan_value_counts),
        "lower_bounds": _kv_list(d.lower_bounds), "upper_bounds": _kv_list(d.upper_bounds),
        "key_metadata": d.key_metadata, "split_offsets": None if d.split_offsets is None else list(d.split_offsets),
        "equality_ids": None if d.equality_ids is None else list(d.equality_ids), "sort_order_id": d.sort_order_id,
        "first_row_id": d.first_row_id if d.content == DATA else None,
        "referenced_data_file": d.referenced_data_file,
        "content_offset": d.content_offset, "content_size_in_bytes": d.content_size_in_bytes,
    }
    rec: dict[str, Any] = {"status": e.status, "snapshot_id": e.snapshot_id, "data_file": df,
                           "sequence_number": e.sequence_number, "file_sequence_number": e.file_sequence_number}
    if version == 1:
        if e.snapshot_id is None:
            raise ValidationError(f"v1 manifest entries need a snapshot id ({d.file_path})")
    return rec


def manifest_avro_schema(format_version: int, spec: PartitionSpec, schema: Schema) -> dict:
    """The Avro schema of a manifest of ``spec``'s entries (:func:`write_manifest`'s)."""
    if format_version not in (1, 2, 3):
        raise ValidationError(f"unsupported manifest format version {format_version}")
    return manifest_entry_schema(format_version, partition_record(spec.partition_type(schema)))


def partition_fields(spec: PartitionSpec, schema: Schema) -> list[tuple[str, int, Any]]:
    """(Avro name, field id, Iceberg type) of each field of ``spec``'s partition record."""
    return [(make_compatible_name(f.name), f.field_id, f.field_type) for f in spec.partition_type(schema).fields]


def _manifest_meta(format_version: int, spec: PartitionSpec, schema: Schema, content: int) -> dict[str, str]:
    """A manifest's key-value metadata, as Java writes it."""
    meta = {
        "schema": json.dumps(schema.to_json()), "schema-id": str(schema.schema_id),
        "partition-spec": json.dumps(spec.fields_to_json(format_version)),
        "partition-spec-id": str(spec.spec_id), "format-version": str(format_version),
    }
    if format_version >= 2:
        meta["content"] = "deletes" if content == MANIFEST_DELETES else "data"
    return meta


def write_manifest(entries: Sequence[ManifestEntry], *, format_version: int, spec: PartitionSpec, schema: Schema,
                   content: int = MANIFEST_DATA) -> bytes:
    """Serialize manifest entries with the spec's Avro schema and key-value metadata."""
    avro_schema = manifest_avro_schema(format_version, spec, schema)
    pfields = partition_fields(spec, schema)
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(avro_schema),
                    (entry_record(e, format_version, pfields) for e in entries), codec=AVRO_CODEC,
                    metadata=_manifest_meta(format_version, spec, schema, content))
    return buf.getvalue()


def write_encoded_manifest(records: Sequence[bytes], *, format_version: int, spec: PartitionSpec, schema: Schema,
                           content: int = MANIFEST_DATA) -> bytes:
    """A manifest of entries already encoded in :func:`manifest_avro_schema`'s schema (each one record's
    bytes, as the manifest rewrite carries them), with :func:`write_manifest`'s metadata."""
    meta = {"avro.schema": json.dumps(manifest_avro_schema(format_version, spec, schema)), "avro.codec": AVRO_CODEC,
            **_manifest_meta(format_version, spec, schema, content)}
    return avro_container(meta, records)


# records per container block: at most this many bytes of them before deflate (Java's default sync interval)
BLOCK_BYTES = 64_000


def avro_container(meta: dict[str, str], records: Sequence[bytes]) -> bytes:
    """An Avro object container file of encoded ``records`` (deflated, as ``meta``'s ``avro.codec`` says) in
    blocks of about :data:`BLOCK_BYTES`."""
    if meta.get("avro.codec") != "deflate":
        raise ValidationError(f"unsupported Avro codec {meta.get('avro.codec')!r}")
    sync = os.urandom(16)
    out = [b"Obj\x01", avro_long(len(meta))]
    for k, v in meta.items():
        for b in (k.encode("utf-8"), v.encode("utf-8")):
            out += [avro_long(len(b)), b]
    out += [b"\x00", sync]
    start = size = 0
    for i, r in enumerate(records):
        size += len(r)
        if size >= BLOCK_BYTES or i == len(records) - 1:
            block = _deflate.compress(b"".join(records[start:i + 1]), AVRO_DEFLATE_LEVEL, -15)
            out += [avro_long(i + 1 - start), avro_long(len(block)), block, sync]
            start, size = i + 1, 0
    return b"".join(out)


def avro_long(v: int) -> bytes:
    """The Avro encoding of a long: zigzag, then 7 bits a byte, low first."""
    n = (v << 1) ^ (v >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def write_manifest_list(manifests: Sequence[ManifestFile], *, format_version: int, snapshot_id: int,
                        parent_snapshot_id: int | None, sequence_number: int,
                        first_row_id: int | None = None) -> bytes:
    """Serialize a manifest list with the spec's Avro schema and Java's key-value metadata."""
    meta = {"snapshot-id": str(snapshot_id), "parent-snapshot-id": str(parent_snapshot_id) if parent_snapshot_id
            is not None else "null", "format-version": str(format_version)}
    if format_version >= 2:
        meta["sequence-number"] = str(sequence_number)
    if format_version >= 3 and first_row_id is not None:
        meta["first-row-id"] = str(first_row_id)

    def rec(m: ManifestFile) -> dict:
        if format_version == 1 and m.content != MANIFEST_DATA:
            raise ValidationError(f"v1 manifest lists cannot track delete manifests ({m.manifest_path})")
        return {
            "manifest_path": m.manifest_path, "manifest_length": m.manifest_length,
            "partition_spec_id": m.partition_spec_id, "content": m.content, "sequence_number": m.sequence_number,
            "min_sequence_number": m.min_sequence_number, "added_snapshot_id": m.added_snapshot_id,
            "added_files_count": m.added_files_count, "existing_files_count": m.existing_files_count,
            "deleted_files_count": m.deleted_files_count, "added_rows_count": m.added_rows_count,
            "existing_rows_count": m.existing_rows_count, "deleted_rows_count": m.deleted_rows_count,
            "partitions": None if m.partitions is None else [
                {"contains_null": s.contains_null, "contains_nan": s.contains_nan, "lower_bound": s.lower_bound,
                 "upper_bound": s.upper_bound} for s in m.partitions],
            "key_metadata": m.key_metadata,
            "first_row_id": m.first_row_id if m.content == MANIFEST_DATA else None,
        }
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(manifest_list_schema(format_version)), (rec(m) for m in manifests),
                    codec=AVRO_CODEC, metadata=meta)
    return buf.getvalue()


def partition_summaries(partitions: Iterable[Mapping[int, Any]], ptype: StructType) -> tuple[FieldSummary, ...]:
    """Per partition field: contains null/NaN and the lower/upper bound of the other values (Appendix D bytes),
    over the partition tuples (field id -> value) of a manifest's live entries."""
    stats = [[False, False, None, None] for _ in ptype.fields]
    for partition in partitions:
        for i, f in enumerate(ptype.fields):
            v = partition.get(f.field_id)
            s = stats[i]
            if v is None:
                s[0] = True
            elif is_nan(v):
                s[1] = True
            else:
                if s[2] is None or _order_key(v) < _order_key(s[2]):
                    s[2] = v
                if s[3] is None or _order_key(v) > _order_key(s[3]):
                    s[3] = v
    out = []
    for f, (has_null, has_nan, lo, hi) in zip(ptype.fields, stats):
        out.append(FieldSummary(has_null, has_nan if f.field_type.to_json() in ("float", "double") else False,
                                None if lo is None else to_bytes(f.field_type, lo),
                                None if hi is None else to_bytes(f.field_type, hi)))
    return tuple(out)


def _order_key(v: Any) -> Any:
    if isinstance(v, float):
        import math
        # -0.0 sorts before +0.0 (IEEE totalOrder, spec note on bounds)
        return (v, math.copysign(1.0, v))
    if isinstance(v, str):
        return v.encode("utf-8")  # Iceberg compares strings by UTF-8 bytes (unsigned)
    return v


def manifest_file_for(entries: Sequence[ManifestEntry], *, path: str, length: int, spec: PartitionSpec,
                      schema: Schema, added_snapshot_id: int, content: int = MANIFEST_DATA,
                      sequence_number: int = 0, first_row_id: int | None = None) -> ManifestFile:
    """The manifest-list entry describing a manifest with these entries (counts, summaries, min seq)."""
    return manifest_file_of(((e.status, e.data_file.record_count, e.sequence_number, e.data_file.partition)
                             for e in entries), path=path, length=length, spec=spec, schema=schema,
                            added_snapshot_id=added_snapshot_id, content=content, sequence_number=sequence_number,
                            first_row_id=first_row_id)


def manifest_file_of(entries: Iterable[tuple[int, int, int | None, Mapping[int, Any]]], *, path: str, length: int,
                     spec: PartitionSpec, schema: Schema, added_snapshot_id: int, content: int = MANIFEST_DATA,
                     sequence_number: int = 0, first_row_id: int | None = None) -> ManifestFile:
    """:func:`manifest_file_for` of entries given as (status, record count, data sequence number, partition by
    field id), for writers that hold them so rather than as entry objects (the manifest rewrite)."""
    files = {ADDED: 0, EXISTING: 0, DELETED: 0}
    rows = {ADDED: 0, EXISTING: 0, DELETED: 0}
    live_seqs, partitions = [], []
    for status, records, seq, partition in entries:
        files[status] += 1
        rows[status] += records
        if status != DELETED:
            live_seqs.append(seq if seq is not None else sequence_number)
            partitions.append(partition)
    return ManifestFile(
        manifest_path=path, manifest_length=length, partition_spec_id=spec.spec_id, added_snapshot_id=added_snapshot_id,
        content=content, sequence_number=sequence_number, min_sequence_number=min(live_seqs, default=sequence_number),
        added_files_count=files[ADDED], existing_files_count=files[EXISTING], deleted_files_count=files[DELETED],
        added_rows_count=rows[ADDED], existing_rows_count=rows[EXISTING], deleted_rows_count=rows[DELETED],
        partitions=partition_summaries(partitions, spec.partition_type(schema)), first_row_id=first_row_id)


def manifest_file_from_manifest(path: str, length: int, data: bytes, snapshot_id: int) -> ManifestFile:
    """The manifest-list entry of a manifest named by a v1 snapshot's ``manifests`` list (no manifest list
    exists): spec id and content from the manifest's key-value metadata, counts from its entries,
    sequence numbers 0 as v1 requires, ``added_snapshot_id`` the snapshot's."""
    m = read_manifest(data, path)
    spec_fields = m.partition_spec
    schema = m.schema
    if spec_fields is None or schema is None:
        raise InvalidMetadataError("manifest lacks the 'schema'/'partition-spec' key-value metadata that v1 "
                                   "manifests must carry", path, "partition-spec")
    return manifest_file_for(m.entries, path=path, length=length, spec=spec_fields, schema=schema,
                             added_snapshot_id=snapshot_id, content=MANIFEST_DATA, sequence_number=0)


state.register("sparkberg.avro.manifest._manifest_layout", "64 manifest schemas", _manifest_layout.cache_clear)
state.register("sparkberg.avro.manifest._planning_schema", "64 manifest schemas", _planning_schema.cache_clear)
