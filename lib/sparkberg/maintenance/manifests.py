"""Manifest rewrite, as Iceberg Java's ``RewriteManifestsSparkAction``: the current snapshot's manifests (of one
partition spec, or all) read on the executors, their live entries clustered by partition and written again as
manifests of about ``commit.manifest.target-size-bytes``, in one ``replace`` snapshot.

Entries keep everything the spec lets a reader inherit (snapshot id, data and file sequence numbers, v3
``first_row_id``), written out explicitly as EXISTING entries, so every row keeps its ``_row_id`` and
``_last_updated_sequence_number`` (Iceberg Java 1.10.2's action gives existing files new row ids; the spec is the
truth). A new data manifest's ``first_row_id`` is the smallest of its entries', so the rewrite consumes no row
ids. A (content, spec) group of one manifest that would be rewritten into one is left alone. The commit keeps
the manifests other writers added meanwhile; if one of the rewritten manifests is no longer in the table, nothing
is committed and the new manifests are deleted.

Entries travel through the shuffle encoded, as the new manifests hold them: the writers only join and deflate
them. A manifest whose ``data_file`` is encoded as the table's own manifests encode it (sparkberg's and Java's of
the same format version) has each entry's ``data_file`` bytes copied, found by the compiled decoder's marks,
with the fields before it encoded anew; any other (a v1 manifest in an upgraded table, another writer's
layout) is decoded and encoded again by fastavro, the reference the copies are tested against.
"""
from __future__ import annotations

import io
import json
import math
import pickle
import struct
import time
import uuid
from dataclasses import replace
from decimal import Decimal
from typing import Any, Iterator, Sequence

import fastavro
import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame

from sparkberg.avro import compiled
from sparkberg.avro.decode import manifest_entries
from sparkberg.avro.manifest import (
    avro_long, entry_record, manifest_avro_schema, manifest_file_of, partition_fields, write_encoded_manifest,
)
from sparkberg.avro.schemas import non_null
from sparkberg.avro.types import from_avro_value
from sparkberg.commit.manifests import merge_settings
from sparkberg.commit.producer import write_snapshot_list
from sparkberg.commit.target import MAIN
from sparkberg.errors import ValidationError
from sparkberg.io.fileio import deleted_on_failure, file_io_for
from sparkberg.planning.entries import manifests_df, manifests_of, snapshot_manifests
from sparkberg.spec import updates as U
from sparkberg.spec.manifests import DELETED, EXISTING, MANIFEST_DATA, ManifestEntry, ManifestFile, inherit_columns
from sparkberg.spec.metadata import TableMetadata
from sparkberg.spec.partitioning import PartitionSpec
from sparkberg.spec.types import BOOLEAN, STRING, Schema
from sparkberg.spec.values import decimal_unscaled, to_bytes
from sparkberg.spec.snapshots import Snapshot, new_snapshot_id

RESULT_DDL = "rewritten_manifests_count int, added_manifests_count int"
_ENTRIES_DDL = ("content int, spec_id int, key binary, entry binary, partition binary, records bigint, "
                "sequence_number bigint, first_row_id bigint")
_ENTRIES_SCHEMA = pa.schema([("content", pa.int32()), ("spec_id", pa.int32()), ("key", pa.binary()),
                             ("entry", pa.binary()), ("partition", pa.binary()), ("records", pa.int64()),
                             ("sequence_number", pa.int64()), ("first_row_id", pa.int64())])
# the summary totals a replace snapshot carries over (it adds and removes no file)
_TOTALS = ("total-records", "total-files-size", "total-data-files", "total-delete-files", "total-position-deletes",
           "total-equality-deletes")


class _Format:
    """How the entries of one partition spec are written again: the manifest schema of the table's format
    version, and what an entry of a manifest whose ``data_file`` is encoded the same way carries over as is."""

    def __init__(self, version: int, spec: PartitionSpec, schema: Schema):
        self.version = version
        self.avro = manifest_avro_schema(version, spec, schema)
        self.parsed = fastavro.parse_schema(self.avro)
        self.pfields = partition_fields(spec, schema)
        self.ptypes = [t for _, _, t in self.pfields]
        self._data_file = _shape(self.avro["fields"][-1]["type"], {})
        self._layouts: dict[str, tuple | None] = {}

    def layout(self, schema_json: str) -> tuple | None:
        """(entry field names by id, data_file name, data_file field names by id, partition field names) of a
        writer schema whose entries end with a ``data_file`` encoded exactly as this format's (field ids and
        types, names aside), else None: its entries are decoded and encoded again."""
        if schema_json not in self._layouts:
            self._layouts[schema_json] = None
            raw = json.loads(schema_json)
            fields = raw.get("fields", []) if isinstance(raw, dict) else []
            if fields and fields[-1].get("field-id") == 2 and _shape(fields[-1]["type"], {}) == self._data_file:
                df = fields[-1]["type"]
                self._layouts[schema_json] = (
                    {f.get("field-id"): f["name"] for f in fields}, fields[-1]["name"],
                    {f.get("field-id"): f["name"] for f in df["fields"]},
                    [f["name"] for f in non_null(next(f["type"] for f in df["fields"] if f.get("field-id") == 102))
                     ["fields"]])
        return self._layouts[schema_json]

    def prefix(self, snapshot_id: int | None, sequence_number: int | None, file_sequence_number: int | None) -> bytes:
        """An EXISTING entry's fields before its ``data_file``, what it inherited written out."""
        if self.version == 1:
            return b"\x00" + avro_long(snapshot_id)
        return b"\x00" + b"".join(b"\x00" if v is None else b"\x02" + avro_long(v)
                                  for v in (snapshot_id, sequence_number, file_sequence_number))


def _shape(t: Any, names: dict) -> Any:
    """What decides how an Avro type's values are encoded: its types, field ids and sizes, not its names."""
    if isinstance(t, list):
        return ("union", *(_shape(b, names) for b in t))
    if isinstance(t, str):
        return _shape(names[t], names) if t in names else t
    kind = t.get("type")
    if kind in ("record", "error", "fixed", "enum") and "name" in t:
        names[t["name"]] = t
    if kind in ("record", "error"):
        return ("record", tuple((f.get("field-id"), _shape(f["type"], names)) for f in t.get("fields", [])))
    if kind == "array":
        return ("array", t.get("element-id"), _shape(t["items"], names))
    if kind == "map":
        return ("map", _shape(t["values"], names))
    if kind == "fixed":
        return ("fixed", t.get("size"))
    if kind == "enum":
        return ("enum", tuple(t.get("symbols", ())))
    return _shape(kind, names)


def sort_key(values: tuple, types: Sequence[Any]) -> bytes:
    """Bytes that order partition tuples as their values order (nulls first), to cluster entries by partition."""
    out = []
    for v, t in zip(values, types):
        if v is None:
            out.append(b"\x00")
        elif isinstance(v, bool):
            out.append(b"\x01\x01" if v else b"\x01\x00")
        elif isinstance(v, int):
            out.append(b"\x01" + ((v + (1 << 63)) & _MASK).to_bytes(8, "big"))
        elif isinstance(v, float):
            bits = int.from_bytes(struct.pack(">d", v), "big")
            out.append(b"\x01" + ((bits ^ _MASK) if bits >> 63 else (bits | (1 << 63))).to_bytes(8, "big"))
        elif isinstance(v, (str, bytes)):
            out.append(b"\x01" + (v.encode("utf-8") if isinstance(v, str) else v) + b"\x00")
        elif isinstance(v, Decimal):
            unscaled = decimal_unscaled(v, t.scale)
            out.append(b"\x01" + ((unscaled + (1 << 127)) & ((1 << 128) - 1)).to_bytes(16, "big"))
        else:
            out.append(b"\x01" + to_bytes(t, v))
    return b"".join(out)


_MASK = (1 << 64) - 1


def _copied(fmt: _Format, mf: ManifestFile, data: bytes) -> dict | None:
    """The live entries of a manifest as EXISTING entries, their ``data_file``'s bytes copied as they are (a
    v3 data file that inherits its ``first_row_id`` gets it written in): None where the manifest's ``data_file``
    is encoded otherwise than ``fmt``'s or the compiled decoder cannot read it."""
    try:
        meta, _ = compiled.header(data)
        layout = fmt.layout(meta[b"avro.schema"].decode("utf-8"))
    except (compiled.Unsupported, KeyError, ValueError, TypeError, AttributeError, RecursionError):
        return None  # (a header or schema this cannot use: the reference decoder reads it, or names the problem)
    if layout is None:
        return None
    entry, df, df_names, part_names = layout
    first = next(iter(entry.values()))
    row_id = df_names.get(142)
    paths = [(entry[f],) for f in (0, 1, 3, 4) if f in entry] + \
        [(df, df_names[f]) for f in (134, 103, 142) if f in df_names] + [(df, df_names[102], p) for p in part_names]
    marks = [(first,), (df,)] + ([(df, row_id)] if row_id else [])
    cols = compiled.read_columns(data, paths, marks=marks)
    if cols is None:
        return None
    n = cols.num_rows

    def ints(path: tuple[str, ...] | None) -> tuple[np.ndarray, np.ndarray]:
        return cols.ints(path) if path and cols.has(path) else (np.zeros(n, np.int64), np.zeros(n, bool))
    status = ints((entry[0],))[0]
    content = ints((df, df_names.get(134)))[0]
    records = ints((df, df_names[103]))[0]
    written = ints((df, row_id) if row_id else None)
    snapshot_id, seq, file_seq, row_ids = inherit_columns(
        [mf], np.zeros(n, np.int64), status, content, records, ints((entry.get(1),)), ints((entry.get(3),)),
        ints((entry.get(4),)), written)
    buf = cols.data.tobytes()
    starts = cols.ints((compiled.MARK, first))[0]
    ends = np.append(starts[1:], len(buf))
    bodies = cols.ints((compiled.MARK, df))[0]
    patch = row_ids[1] & ~written[1]
    at = cols.ints((compiled.MARK, df, row_id))[0] if row_id else None
    partitions = list(zip(*(_partition_values(cols, (df, df_names[102], p), t) for p, (_, _, t) in
                            zip(part_names, fmt.pfields)))) or [()] * n
    out = _Rows()
    for i in np.flatnonzero(status != DELETED).tolist():
        prefix = fmt.prefix(*(int(c[0][i]) if c[1][i] else None for c in (snapshot_id, seq, file_seq)))
        if patch[i]:  # (null's branch, one byte, becomes the long's)
            body = buf[bodies[i]:at[i]] + b"\x02" + avro_long(int(row_ids[0][i])) + buf[at[i] + 1:ends[i]]
        else:
            body = buf[bodies[i]:ends[i]]
        out.add(mf, prefix + body, partitions[i], fmt, int(records[i]), int(seq[0][i]) if seq[1][i] else None,
                int(row_ids[0][i]) if row_ids[1][i] else None)
    return out.rows


def _partition_values(cols, path: tuple[str, ...], t: Any) -> list:
    """A partition field's values as the entry model holds them (:func:`~sparkberg.avro.types.from_avro_value`)."""
    kind = cols.kind(path)
    if kind == compiled.INTS:
        values, valid = cols.ints(path)
        raw = [bool(v) if t == BOOLEAN else v for v in values.tolist()]
    elif kind == compiled.FLOATS:
        values, valid = cols.floats(path)
        raw = values.tolist()
    else:
        arr = cols.binary(path, string=t == STRING)
        return [from_avro_value(t, v) for v in arr.to_pylist()]
    return [from_avro_value(t, v) if ok else None for v, ok in zip(raw, valid.tolist())]


def _encoded(fmt: _Format, mf: ManifestFile, data: bytes) -> dict:
    """:func:`_copied`'s rows by decoding every entry and encoding it again: the reference, and the way for
    manifests of another encoding (another format version's, another writer's)."""
    out = _Rows()
    for e in manifest_entries(data, mf):
        if e.status == DELETED:
            continue
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, fmt.parsed, entry_record(
            ManifestEntry(EXISTING, e.data_file, e.snapshot_id, e.sequence_number, e.file_sequence_number),
            fmt.version, fmt.pfields))
        out.add(mf, buf.getvalue(), tuple(e.data_file.partition.get(fid) for _, fid, _ in fmt.pfields), fmt,
                e.data_file.record_count, e.sequence_number, e.data_file.first_row_id)
    return out.rows


class _Rows:
    """The rows :class:`_Entries` yields for a manifest's entries."""

    def __init__(self):
        self.rows: dict[str, list] = {name: [] for name in _ENTRIES_SCHEMA.names}

    def add(self, mf: ManifestFile, entry: bytes, partition: tuple, fmt: _Format, records: int, seq: int | None,
            first_row_id: int | None) -> None:
        for name, value in (("content", mf.content), ("spec_id", mf.partition_spec_id),
                            ("key", sort_key(partition, fmt.ptypes)), ("entry", entry),
                            ("partition", pickle.dumps(partition)), ("records", records),
                            ("sequence_number", seq), ("first_row_id", first_row_id)):
            self.rows[name].append(value)


class _Entries:
    """The live entries of each manifest (executors; picklable), as EXISTING entries with what they inherit
    written out, encoded in the table's manifest schema, with their partition's sort key."""

    def __init__(self, metadata: TableMetadata):
        self.version = metadata.format_version
        self.specs = metadata.specs_by_id
        self.schema = metadata.current_schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        formats: dict[int, _Format] = {}
        for mf, _, io_ in manifests_of(batches):
            fmt = formats.get(mf.partition_spec_id)
            if fmt is None:
                fmt = formats[mf.partition_spec_id] = _Format(self.version, self.specs[mf.partition_spec_id],
                                                               self.schema)
            data = io_.read(mf.manifest_path)
            rows = _copied(fmt, mf, data)
            yield pa.RecordBatch.from_pydict(rows if rows is not None else _encoded(fmt, mf, data), _ENTRIES_SCHEMA)


class _Writer:
    """Writes a task's entries (sorted by content, spec and partition) as manifests (executors; picklable)."""

    def __init__(self, metadata: TableMetadata, snapshot_id: int, entries_per_manifest: int):
        self.specs = metadata.specs_by_id
        self.schema = metadata.current_schema
        self.version = metadata.format_version
        self.directory = f"{metadata.location.rstrip('/')}/metadata"
        self.snapshot_id = snapshot_id
        self.entries_per_manifest = entries_per_manifest  # (rolls a task's manifest over at the target size)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        io_ = file_io_for(self.directory)
        out: list[bytes] = []
        group: list[dict] = []
        current: tuple | None = None

        def flush() -> None:
            if group:
                out.append(pickle.dumps(self._write(io_, group, *current)))
                group.clear()
        for batch in batches:
            for row in batch.to_pylist():
                if (row["content"], row["spec_id"]) != current or len(group) >= self.entries_per_manifest:
                    flush()
                    current = (row["content"], row["spec_id"])
                group.append(row)
        flush()
        yield pa.RecordBatch.from_pydict({"manifest": out}, pa.schema([("manifest", pa.binary())]))

    def _write(self, io_, rows: list[dict], content: int, spec_id: int) -> ManifestFile:
        spec = self.specs[spec_id]
        path = f"{self.directory}/{uuid.uuid4()}-m-rewritten.avro"
        data = write_encoded_manifest([r["entry"] for r in rows], format_version=self.version, spec=spec,
                                      schema=self.schema, content=content)
        io_.create(path, data)
        ids = [r["first_row_id"] for r in rows]
        fids = [fid for _, fid, _ in partition_fields(spec, self.schema)]
        return manifest_file_of(
            ((EXISTING, r["records"], r["sequence_number"], dict(zip(fids, pickle.loads(r["partition"]))))
             for r in rows), path=path, length=len(data), spec=spec, schema=self.schema,
            added_snapshot_id=self.snapshot_id, content=content,
            # (every entry has its own: no new row ids consumed)
            first_row_id=min(ids) if self.version >= 3 and content == MANIFEST_DATA and None not in ids else None)


def rewrite_manifests(table, spec_id: int | None = None, dry_run: bool = False) -> DataFrame:
    """See :meth:`sparkberg.table.Table.rewrite_manifests`."""
    spark = table.spark
    table.refresh()
    start = table.metadata
    empty = spark.createDataFrame([(0, 0)], RESULT_DDL)
    if start.current_snapshot is None:
        return empty
    if spec_id is not None and spec_id not in start.specs_by_id:
        raise ValidationError(f"table {table.name} has no partition spec {spec_id}")
    _, _, target = merge_settings(start.properties)
    groups: dict[tuple[int, int], list[ManifestFile]] = {}
    for m in snapshot_manifests(table.io, start.current_snapshot):
        if spec_id is None or m.partition_spec_id == spec_id:
            groups.setdefault((m.content, m.partition_spec_id), []).append(m)
    counts = {k: max(1, math.ceil(sum(m.manifest_length for m in g) / target)) for k, g in groups.items()}
    groups = {k: g for k, g in groups.items() if not (len(g) == 1 and counts[k] == 1)}
    chosen = [m for g in groups.values() for m in g]
    if not chosen:
        return empty
    if dry_run:  # (the manifests it would write: as planned, one per target size of each group)
        return spark.createDataFrame([(len(chosen), sum(counts[k] for k in groups))], RESULT_DDL)
    snapshot_id = new_snapshot_id({s.snapshot_id for s in start.snapshots})
    entries = sum((m.existing_files_count or 0) + (m.added_files_count or 0) for m in chosen)
    per_manifest = max(1, math.ceil(entries * target / max(1, sum(m.manifest_length for m in chosen))))
    written = manifests_df(spark, chosen).mapInArrow(_Entries(start), _ENTRIES_DDL) \
        .repartitionByRange(sum(counts[k] for k in groups), "content", "spec_id", "key") \
        .sortWithinPartitions("content", "spec_id", "key") \
        .mapInArrow(_Writer(start, snapshot_id, per_manifest), "manifest binary")
    new = [pickle.loads(r["manifest"]) for r in written.collect()]
    with deleted_on_failure(table.io, lambda: [m.manifest_path for m in new]):
        table.commit_metadata(lambda base, n: _replace(table, base, n, snapshot_id, chosen, new))
    return spark.createDataFrame([(len(chosen), len(new))], RESULT_DDL)


def _replace(table, base: TableMetadata, n: int, snapshot_id: int, rewritten: list[ManifestFile],
             new: list[ManifestFile]) -> tuple[TableMetadata, list[str]]:
    """The ``replace`` snapshot on ``base``: the new manifests and every current one not rewritten."""
    current = snapshot_manifests(table.io, base.current_snapshot)
    paths = {m.manifest_path for m in current}
    gone = [m.manifest_path for m in rewritten if m.manifest_path not in paths]
    if gone:
        raise ValidationError(f"cannot rewrite the manifests of table {table.name}: {len(gone)} of them were "
                              f"replaced by a concurrent commit (e.g. {gone[0]}); nothing committed")
    v = base.format_version
    seq = base.last_sequence_number + 1 if v >= 2 else 0
    done = {m.manifest_path for m in rewritten}
    manifests = [replace(m, sequence_number=seq, added_snapshot_id=snapshot_id) for m in new] + \
        [m for m in current if m.manifest_path not in done]
    manifests, list_path, first_row_id, added_rows = write_snapshot_list(
        table.io, f"{base.location.rstrip('/')}/metadata", manifests, base, snapshot_id, seq, n,
        base.current_snapshot_id)
    previous = base.current_snapshot.summary
    summary = {"operation": "replace", "manifests-created": str(len(new)),
               "manifests-kept": str(len(manifests) - len(new)), "manifests-replaced": str(len(rewritten)),
               "entries-processed": str(sum((m.existing_files_count or 0) + (m.added_files_count or 0)
                                            for m in new)),
               **{k: previous[k] for k in _TOTALS if k in previous}}
    snap = Snapshot(snapshot_id=snapshot_id, timestamp_ms=int(time.time() * 1000),
                    parent_snapshot_id=base.current_snapshot_id, sequence_number=seq if v >= 2 else None,
                    manifest_list=list_path, summary=summary, schema_id=base.current_schema_id,
                    first_row_id=first_row_id, added_rows=added_rows)
    return U.apply_all(MAIN.updates(base, snap), base), [list_path]


