"""Manifest entries written again with their ``data_file`` bytes copied, not decoded and encoded again.

Rewriting a manifest's entries (the manifest rewrite; a commit that marks files DELETED in the manifests holding
them) changes only the fields before an entry's ``data_file``: its status and what it inherits (snapshot id, data
and file sequence numbers). Where a manifest encodes ``data_file`` exactly as the table's own manifests do (the
same field ids and types, names aside: sparkberg's and Iceberg Java's of one format version), each entry's
``data_file`` bytes are copied as they are, found by the compiled decoder's marks (where each field starts), and
the fields before it are encoded anew; a v3 data file that inherits its ``first_row_id`` gets it written into
the copy. Any other manifest (a v1 manifest in an upgraded table, another writer's layout, anything the compiled
decoder declines) gets None here, and its entries are decoded and encoded again by fastavro: the reference the
copies are tested against.
"""
from __future__ import annotations

import json
from typing import Any

import fastavro
import numpy as np

from sparkberg.avro import compiled
from sparkberg.avro.manifest import avro_long, manifest_avro_schema, partition_fields
from sparkberg.avro.schemas import non_null
from sparkberg.format.manifests import ManifestFile, inherit_columns
from sparkberg.format.partitioning import PartitionSpec
from sparkberg.format.types import Schema


class EntryFormat:
    """How entries of one partition spec are written in the table's manifests: the manifest schema of the table's
    format version, and which manifests encode ``data_file`` the same way."""

    def __init__(self, version: int, spec: PartitionSpec, schema: Schema):
        self.version = version
        self.avro = manifest_avro_schema(version, spec, schema)
        self.parsed = fastavro.parse_schema(self.avro)
        self.pfields = partition_fields(spec, schema)
        self.ptypes = [t for _, _, t in self.pfields]
        self._data_file = shape(self.avro["fields"][-1]["type"], {})
        self._layouts: dict[str, tuple | None] = {}

    def layout(self, schema_json: str) -> tuple | None:
        """(entry field names by id, data_file name, data_file field names by id, partition field names) of a
        writer schema whose entries end with a ``data_file`` encoded exactly as this format's (field ids and
        types, names aside), else None."""
        if schema_json not in self._layouts:
            self._layouts[schema_json] = None
            raw = json.loads(schema_json)
            fields = raw.get("fields", []) if isinstance(raw, dict) else []
            if fields and fields[-1].get("field-id") == 2 and shape(fields[-1]["type"], {}) == self._data_file:
                df = fields[-1]["type"]
                self._layouts[schema_json] = (
                    {f.get("field-id"): f["name"] for f in fields}, fields[-1]["name"],
                    {f.get("field-id"): f["name"] for f in df["fields"]},
                    [f["name"] for f in non_null(next(f["type"] for f in df["fields"] if f.get("field-id") == 102))
                     ["fields"]])
        return self._layouts[schema_json]

    def prefix(self, status: int, snapshot_id: int | None, sequence_number: int | None,
               file_sequence_number: int | None) -> bytes:
        """An entry's fields before its ``data_file``: its status and what it inherits, written out (v1 has no
        sequence numbers and a required snapshot id)."""
        if self.version == 1:
            return avro_long(status) + avro_long(snapshot_id)
        return avro_long(status) + b"".join(b"\x00" if v is None else b"\x02" + avro_long(v)
                                            for v in (snapshot_id, sequence_number, file_sequence_number))


def shape(t: Any, names: dict) -> Any:
    """What decides how an Avro type's values are encoded: its types, field ids and sizes, not its names."""
    if isinstance(t, list):
        return ("union", *(shape(b, names) for b in t))
    if isinstance(t, str):
        return shape(names[t], names) if t in names else t
    kind = t.get("type")
    if kind in ("record", "error", "fixed", "enum") and "name" in t:
        names[t["name"]] = t
    if kind in ("record", "error"):
        return ("record", tuple((f.get("field-id"), shape(f["type"], names)) for f in t.get("fields", [])))
    if kind == "array":
        return ("array", t.get("element-id"), shape(t["items"], names))
    if kind == "map":
        return ("map", shape(t["values"], names))
    if kind == "fixed":
        return ("fixed", t.get("size"))
    if kind == "enum":
        return ("enum", tuple(t.get("symbols", ())))
    return shape(kind, names)


class Copies:
    """The entries of one manifest, in its order, as :func:`copies` reads them: ``status`` and ``records`` (numpy
    arrays), what each inherits (``snapshot_id``, ``sequence_number``, ``file_sequence_number``, ``first_row_id``:
    (values, valid) pairs of numpy arrays, by the spec's inheritance rules), ``cols`` (the decoder's columns, for
    the partition values at ``partition_paths``) and :meth:`data_file` (an entry's ``data_file`` bytes)."""

    def __init__(self, cols: compiled.Columns, layout: tuple, mf: ManifestFile):
        entry, df, df_names, part_names = layout
        self.cols = cols
        self.partition_paths = [(df, df_names[102], p) for p in part_names]
        n = self.count = cols.num_rows
        row_id = df_names.get(142)

        def ints(path: tuple[str, ...] | None) -> tuple[np.ndarray, np.ndarray]:
            return cols.ints(path) if path and cols.has(path) else (np.zeros(n, np.int64), np.zeros(n, bool))
        self.status = ints((entry[0],))[0]
        content = ints((df, df_names.get(134)))[0]
        self.records = ints((df, df_names[103]))[0]
        written = ints((df, row_id) if row_id else None)
        self.snapshot_id, self.sequence_number, self.file_sequence_number, self.first_row_id = inherit_columns(
            [mf], np.zeros(n, np.int64), self.status, content, self.records, ints((entry.get(1),)),
            ints((entry.get(3),)), ints((entry.get(4),)), written)
        self._buf = cols.data.tobytes()
        self._bodies = cols.ints((compiled.MARK, df))[0]
        self._ends = np.append(cols.ints((compiled.MARK, next(iter(entry.values()))))[0][1:], len(self._buf))
        self._patch = self.first_row_id[1] & ~written[1]
        self._at = cols.ints((compiled.MARK, df, row_id))[0] if row_id else None

    def data_file(self, i: int) -> bytes:
        """Entry ``i``'s ``data_file`` bytes, its inherited ``first_row_id`` written in where it had none."""
        start, end = int(self._bodies[i]), int(self._ends[i])
        if not self._patch[i]:
            return self._buf[start:end]
        at = int(self._at[i])  # (null's branch, one byte, becomes the long's)
        return self._buf[start:at] + b"\x02" + avro_long(int(self.first_row_id[0][i])) + self._buf[at + 1:end]

    def inherited(self, i: int) -> tuple[int | None, int | None, int | None]:
        """Entry ``i``'s (snapshot id, data sequence number, file sequence number), as it inherits them."""
        return tuple(int(c[0][i]) if c[1][i] else None
                     for c in (self.snapshot_id, self.sequence_number, self.file_sequence_number))


def copies(fmt: EntryFormat, mf: ManifestFile, data: bytes) -> Copies | None:
    """The entries of a manifest (``data``, listed as ``mf``) with their ``data_file`` bytes to copy, or None where
    the manifest's ``data_file`` is encoded otherwise than ``fmt``'s or the compiled decoder cannot read it."""
    try:
        meta, _ = compiled.header(data)
        layout = fmt.layout(meta[b"avro.schema"].decode("utf-8"))
    except (compiled.Unsupported, KeyError, ValueError, TypeError, AttributeError, RecursionError):
        return None  # (a header or schema this cannot use: the reference decoder reads it, or names the problem)
    if layout is None:
        return None
    entry, df, df_names, part_names = layout
    row_id = df_names.get(142)
    paths = [(entry[f],) for f in (0, 1, 3, 4) if f in entry] + \
        [(df, df_names[f]) for f in (134, 103, 142) if f in df_names] + [(df, df_names[102], p) for p in part_names]
    marks = [(next(iter(entry.values())),), (df,)] + ([(df, row_id)] if row_id else [])
    cols = compiled.read_columns(data, paths, marks=marks)
    return None if cols is None else Copies(cols, layout, mf)
