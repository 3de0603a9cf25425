"""Manifests decoded straight into Arrow columns, for planning at scale.

fastavro builds a Python dict per entry. Planning reads manifests through :func:`read_manifest_columns`: by
compiled code (:mod:`sparkberg.avro.compiled`, which decodes only the fields asked for), and by
:func:`sparkberg.avro.manifest.read_manifest` (the reference decoder, fastavro) for anything compiled code does
not handle: a codec or a type it cannot decode, a partition type returned in an unexpected form. Both give the
same entries (tested).

Columns are found by the writer schema's field ids, as in the reference decoder; partition values come
out in Iceberg's physical form (dates as int days, times and timestamps as long micros or nanos).
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkberg.arrays import from_bools, from_numpy, from_python, indices, int_values, scalar, strings, valid_mask
from sparkberg.avro import compiled
from sparkberg.avro.compiled import Unsupported
from sparkberg.avro.schemas import field_ids, non_null
from sparkberg.format.manifests import FieldSummary, Manifest, ManifestFile
from sparkberg import state

# data_file field id -> the canonical column name (spec names; v1 manifests hold a subset)
DATA_FILE_COLUMNS = {
    134: "content", 100: "file_path", 101: "file_format", 103: "record_count", 104: "file_size_in_bytes",
    108: "column_sizes", 109: "value_counts", 110: "null_value_counts", 137: "nan_value_counts",
    125: "lower_bounds", 128: "upper_bounds", 131: "key_metadata", 132: "split_offsets", 135: "equality_ids",
    140: "sort_order_id", 142: "first_row_id", 143: "referenced_data_file", 144: "content_offset",
    145: "content_size_in_bytes",
}
ENTRY_COLUMNS = {0: "status", 1: "snapshot_id", 3: "sequence_number", 4: "file_sequence_number"}
_TYPES = {
    "content": pa.int32(), "file_path": pa.string(), "file_format": pa.string(), "record_count": pa.int64(),
    "file_size_in_bytes": pa.int64(), "key_metadata": pa.binary(), "split_offsets": pa.list_(pa.int64()),
    "equality_ids": pa.list_(pa.int32()), "sort_order_id": pa.int32(), "first_row_id": pa.int64(),
    "referenced_data_file": pa.string(), "content_offset": pa.int64(), "content_size_in_bytes": pa.int64(),
    "status": pa.int32(), "snapshot_id": pa.int64(), "sequence_number": pa.int64(),
    "file_sequence_number": pa.int64(),
}
_METRIC_VALUE_TYPES = {"column_sizes": pa.int64(), "value_counts": pa.int64(), "null_value_counts": pa.int64(),
                       "nan_value_counts": pa.int64(), "lower_bounds": pa.binary(), "upper_bounds": pa.binary()}
METRIC_COLUMNS = tuple(_METRIC_VALUE_TYPES)


@dataclass
class ManifestColumns:
    """A manifest's entries as Arrow columns: ``columns`` by canonical name (absent fields are all-null),
    ``partition`` by partition field id (physical form, Arrow type from ``physical``), metrics as maps.
    ``lookups``: for map columns that can answer :meth:`value` without being built whole (a scan reads a few
    keys of them), the function that does. ``metric_keys``: when the metrics maps hold only the items of these
    keys (decoded for a scan that reads no other), else None."""
    num_rows: int
    columns: Mapping[str, pa.Array]
    partition: dict[int, pa.Array]
    lookups: dict[str, Callable[[int], pa.Array]] = field(default_factory=dict, repr=False, compare=False)
    # map values already looked up (:meth:`value`): a cached manifest is filtered by the same metrics again
    _values: dict = field(default_factory=dict, repr=False, compare=False)
    # the entries of each manifest these columns hold, in order (several: :func:`read_manifests_columns`)
    file_rows: list[int] | None = field(default=None, repr=False, compare=False)
    metric_keys: frozenset[int] | None = None

    def __post_init__(self):
        if self.file_rows is None:
            self.file_rows = [self.num_rows]

    def value(self, name: str, key: int) -> pa.Array:
        """:func:`map_get` of the map column ``name``, kept: the manifest's columns never change."""
        if self.metric_keys is not None and key not in self.metric_keys:
            raise KeyError(f"metrics of field {key} were not decoded (only of {sorted(self.metric_keys)})")
        out = self._values.get((name, key))
        if out is None:
            lookup = self.lookups.get(name)
            out = self._values[(name, key)] = map_get(self.columns[name], key) if lookup is None else lookup(key)
        return out


class LazyColumns(Mapping):
    """Columns built when first read (``builders``: name -> function), kept once built."""

    def __init__(self, built: dict[str, pa.Array], builders: dict[str, Callable[[], pa.Array]]):
        self._built = built
        self._builders = builders

    def __getitem__(self, name: str) -> pa.Array:
        out = self._built.get(name)
        if out is None:
            out = self._built[name] = self._builders[name]()
        return out

    def __iter__(self):
        return iter(list(self._built) + [k for k in self._builders if k not in self._built])

    def __len__(self) -> int:
        return len(set(self._built) | set(self._builders))


# what every reader of the columns gets, whatever it asks for
ALWAYS = frozenset({"content", "file_path", "file_format", "record_count"})


def read_manifest_columns(data: bytes, physical: dict[int, pa.DataType] | None = None,
                          names: frozenset[str] | None = None,
                          metric_keys: frozenset[int] | None = None) -> ManifestColumns | None:
    """The entries of a manifest as Arrow columns, or None when this fast path cannot read it exactly.

    Decoded by compiled code (:mod:`sparkberg.avro.compiled`); None sends the caller to the reference decoder.
    ``physical`` maps partition field ids to the Arrow type their values should have (see
    :func:`sparkberg.planning.entries.physical_types`); other fields keep the physical form of their Avro type.
    ``names``: the ``data_file`` columns the caller reads (all when None); the others are not decoded (the
    metrics maps are most of the work) and are absent from :attr:`ManifestColumns.columns`. ``metric_keys``: the
    field ids whose metrics the caller reads (all when None); the compiled decoder keeps only those items of
    the metrics maps (see :attr:`ManifestColumns.metric_keys`).
    """
    if data[:4] != b"Obj\x01":
        return None  # (before the header is parsed)
    try:
        schema_json = _avro_schema(data)
        layout = _layout(schema_json)
    except Exception:  # noqa: BLE001 - an unreadable header: the reference decoder names the problem
        return None
    if layout is None:
        return None
    try:
        fast = _compiled_columns(data, schema_json, *layout, physical or {}, names, metric_keys)
    except (Unsupported, pa.ArrowException, KeyError, TypeError, ValueError):
        fast = None
    return fast


def read_manifests_columns(datas: Sequence[bytes], physical: dict[int, pa.DataType] | None = None,
                           names: frozenset[str] | None = None,
                           metric_keys: frozenset[int] | None = None) -> ManifestColumns | None:
    """The entries of several manifests of one writer schema as one :class:`ManifestColumns` (theirs one after
    the other, each one's entry count in ``file_rows``), decoded in one pass by compiled code; None where that
    cannot be done (manifests of different schemas, anything :func:`read_manifest_columns` would
    decline)."""
    if not datas or any(d[:4] != b"Obj\x01" for d in datas):
        return None
    try:
        schema_json = _avro_schema(datas[0])
        layout = _layout(schema_json)
        if layout is None:
            return None
        return _compiled_columns(datas, schema_json, *layout, physical or {}, names, metric_keys)
    except (Unsupported, pa.ArrowException, KeyError, TypeError, ValueError):
        return None


def columns_from_manifest(manifest: Manifest, physical: dict[int, pa.DataType] | None = None,
                          names: frozenset[str] | None = None) -> ManifestColumns:
    """The entries of a manifest the reference decoder read (raw, before inheritance) as the columns
    :func:`read_manifest_columns` gives: what planning reads where compiled code does not. ``names``: the
    ``data_file`` columns made (all when None; :data:`ALWAYS` whatever it says)."""
    entries = manifest.entries
    n = len(entries)
    files = [e.data_file for e in entries]
    columns: dict[str, pa.Array] = {
        name: from_python([getattr(e, name) for e in entries], _TYPES[name]) for name in ENTRY_COLUMNS.values()}
    builders: dict[str, Callable[[], pa.Array]] = {}
    lookups: dict[str, Callable[[int], pa.Array]] = {}
    for name in DATA_FILE_COLUMNS.values():
        if names is not None and name not in names and name not in ALWAYS:
            continue
        values = [getattr(d, name) for d in files]
        if name in _METRIC_VALUE_TYPES:
            # (the maps are already dicts: a scan's few keys are looked up in them, the Arrow maps built only
            # for a reader of the whole column)
            builders[name] = functools.partial(_map_array, values, _METRIC_VALUE_TYPES[name])
            lookups[name] = functools.partial(_dict_lookup, values, _METRIC_VALUE_TYPES[name])
        else:
            columns[name] = from_python(values, _TYPES[name])
    physical = physical or {}
    partition = {}
    for fid in (files[0].partition if files else {}):
        values = [d.partition.get(fid) for d in files]
        target = physical.get(fid)
        if target is not None and pa.types.is_string(target):
            values = [None if v is None else str(v) for v in values]  # (UUIDs: as text)
        partition[fid] = from_python(values, target)
    return ManifestColumns(n, LazyColumns(columns, builders) if builders else columns, partition, lookups)


def _map_array(values: list[dict | None], value_type: pa.DataType) -> pa.Array:
    return from_python(values, pa.map_(pa.int32(), value_type))


def _dict_lookup(values: list[dict | None], value_type: pa.DataType, key: int) -> pa.Array:
    return from_python([None if v is None else v.get(key) for v in values], value_type)


def concat_manifest_columns(parts: Sequence[ManifestColumns]) -> ManifestColumns | None:
    """Manifests' columns one after the other (None when they do not hold the same columns). Columns are
    joined when read, and map lookups join each part's (kept with it)."""
    first = parts[0]
    if len(parts) == 1:
        return first
    names, fids = set(first.columns), list(first.partition)
    if any(set(p.columns) != names or list(p.partition) != fids or p.metric_keys != first.metric_keys
           for p in parts):
        return None
    try:
        partition = {fid: pa.concat_arrays([p.partition[fid] for p in parts]) for fid in fids}
    except pa.ArrowException:  # (partition types that differ)
        return None
    builders = {name: functools.partial(_concat_column, parts, name) for name in names}
    lookups = {name: functools.partial(_concat_lookup, parts, name) for name in names
               if pa.types.is_map(first.columns[name].type)}
    out = ManifestColumns(sum(p.num_rows for p in parts), LazyColumns({}, builders), partition, lookups,
                          metric_keys=first.metric_keys)
    out.file_rows = [p.num_rows for p in parts]
    return out


def _concat_column(parts: Sequence[ManifestColumns], name: str) -> pa.Array:
    return pa.concat_arrays([p.columns[name] for p in parts])


def _concat_lookup(parts: Sequence[ManifestColumns], name: str, key: int) -> pa.Array:
    return pa.concat_arrays([p.value(name, key) for p in parts])


def _compiled_columns(data: bytes | Sequence[bytes], schema_json: str, entry_ids, df_ids, part_schema: dict,
                      physical: dict[int, pa.DataType], names: frozenset[str] | None,
                      metric_keys: frozenset[int] | None = None) -> ManifestColumns | None:
    """:func:`read_manifest_columns` by the compiled decoder (None where it is not available or declines); of
    several manifests when ``data`` is a list of them (their entry counts in ``file_rows``)."""
    df = entry_ids[2][0]
    wanted = {fid: name for fid, name in DATA_FILE_COLUMNS.items()
              if names is None or name in names or name in ALWAYS}
    paths = [(entry_ids[fid][0],) for fid in ENTRY_COLUMNS if fid in entry_ids]
    paths += [(df, df_ids[fid][0]) for fid in wanted if fid in df_ids] + [(df, df_ids[102][0])]
    maps = [(df, df_ids[fid][0]) for fid, name in wanted.items() if name in _METRIC_VALUE_TYPES and fid in df_ids]
    cols = compiled.read_columns(data, paths, schema_json,
                                 None if metric_keys is None else {path: metric_keys for path in maps})
    if cols is None:
        return None
    n = cols.num_rows
    columns: dict[str, pa.Array] = {}
    builders: dict[str, Callable[[], pa.Array]] = {}
    lookups: dict[str, Callable[[int], pa.Array]] = {}
    for fid, name in ENTRY_COLUMNS.items():
        columns[name] = _compiled_leaf(cols, (entry_ids[fid][0],), entry_ids[fid][1], _TYPES[name]) \
            if fid in entry_ids else pa.nulls(n, _TYPES[name])
    for fid, name in wanted.items():
        if fid not in df_ids:
            columns[name] = pa.nulls(n, pa.map_(pa.int32(), _METRIC_VALUE_TYPES[name])
                                     if name in _METRIC_VALUE_TYPES else _TYPES[name])
            continue
        path, avro_type = (df, df_ids[fid][0]), df_ids[fid][1]
        if name in _METRIC_VALUE_TYPES:  # (built when read: planning looks up a few keys, :meth:`value`)
            if not cols.has(path + (compiled.ITEMS, "key")):
                raise Unsupported(f"{'.'.join(path)} is not an array of key/value records")
            builders[name] = functools.partial(_compiled_map, cols, path, _METRIC_VALUE_TYPES[name])
            lookups[name] = functools.partial(_compiled_map_get, cols, path, _METRIC_VALUE_TYPES[name])
        elif pa.types.is_list(_TYPES[name]):
            offsets, valid = cols.offsets(path)
            item = non_null(avro_type)["items"]
            values = _compiled_leaf(cols, path + (compiled.ITEMS,), item, _TYPES[name].value_type)
            columns[name] = pa.ListArray.from_arrays(from_numpy(offsets, pa.int32()), values,
                                                     mask=None if valid.all() else from_bools(~valid))
        else:
            columns[name] = _compiled_leaf(cols, path, avro_type, _TYPES[name])
    if columns["file_path"].null_count or columns["record_count"].null_count:
        raise ValueError("required data_file field is null")
    columns["content"] = pc.fill_null(columns["content"], scalar(0, columns["content"].type))
    columns["file_format"] = pc.utf8_lower(columns["file_format"])
    partition = {}
    for i, f in enumerate(part_schema.get("fields", [])):
        fid = int(f["field-id"]) if "field-id" in f else 1000 + i
        partition[fid] = _compiled_partition(cols, (df, df_ids[102][0], f["name"]), f["type"], physical.get(fid))
    out = ManifestColumns(n, LazyColumns(columns, builders), partition, lookups, metric_keys=metric_keys)
    out.file_rows = cols.file_rows
    return out


def _compiled_leaf(cols, path: tuple[str, ...], avro_type: Any, to: pa.DataType) -> pa.Array:
    """A primitive column of the compiled decoder as an Arrow array of type ``to``."""
    t = non_null(avro_type)
    base = t.get("type") if isinstance(t, dict) else t
    if base in ("string", "bytes", "fixed"):
        arr = cols.binary(path, string=base == "string")
    elif base in ("int", "long", "boolean", "enum"):
        values, valid = cols.ints(path)
        arr = from_bools(values != 0, valid) if base == "boolean" else \
            from_numpy(np.asarray(values, np.int64), pa.int64(), valid)
    elif base in ("float", "double"):
        values, valid = cols.floats(path)
        values = np.where(valid, values, 0.0)  # (a null's slot holds whatever was there)
        arr = from_numpy(values.astype(np.float32), pa.float32(), valid) if base == "float" else \
            from_numpy(np.asarray(values, np.float64), pa.float64(), valid)
    else:
        raise compiled.Unsupported(f"{'.'.join(path)}: {avro_type}")
    return arr if arr.type == to else arr.cast(to)


def _compiled_map(cols, path: tuple[str, ...], value_type: pa.DataType) -> pa.Array:
    """An Iceberg metrics map (Avro array of key/value records) of the compiled decoder as map<int, value>."""
    offsets, valid = cols.offsets(path)
    keys, keys_valid = cols.ints(path + (compiled.ITEMS, "key"))
    if not keys_valid.all():
        raise ValueError("null metrics key")
    value_path = path + (compiled.ITEMS, "value")
    if pa.types.is_binary(value_type):
        values = cols.binary(value_path)
    else:
        raw, values_valid = cols.ints(value_path)
        values = from_numpy(np.asarray(raw, np.int64), pa.int64(), values_valid)
    return pa.MapArray.from_arrays(from_numpy(offsets, pa.int32()), from_numpy(keys.astype(np.int32), pa.int32()),
                                   values.cast(value_type), mask=None if valid.all() else from_bools(~valid))


def _compiled_map_get(cols, path: tuple[str, ...], value_type: pa.DataType, key: int) -> pa.Array:
    """:func:`map_get` of a metrics map of the compiled decoder, from its keys and values in place (only the
    values found are gathered)."""
    n = cols.num_rows
    keys, _ = cols.ints(path + (compiled.ITEMS, "key"))
    hits = np.flatnonzero(keys == key)
    if not len(hits):
        return pa.nulls(n, value_type)
    rows = cols.item_rows(path)[hits]  # (ascending, as the hits)
    first = np.flatnonzero(np.diff(rows, prepend=-1))  # the first hit of each map, should a map repeat a key
    if len(first) == n:  # (every map has the key, as the metrics of a column every file has)
        index, found = hits[first], np.ones(n, bool)
    else:
        index = np.zeros(n, np.int64)
        found = np.zeros(n, bool)
        index[rows[first]], found[rows[first]] = hits[first], True
    value_path = path + (compiled.ITEMS, "value")
    if pa.types.is_binary(value_type):
        data, starts, lengths, valid = cols.raw(value_path)
        return compiled.binary_array(data, starts[index], lengths[index], found & valid[index])
    values, valid = cols.ints(value_path)
    found &= valid[index]
    return from_numpy(np.asarray(values[index], np.int64), pa.int64(), found).cast(value_type)


def _compiled_partition(cols, path: tuple[str, ...], avro_type: Any, target: pa.DataType | None) -> pa.Array:
    """A partition field of the compiled decoder in Iceberg's physical form (as :func:`_physical`)."""
    t = non_null(avro_type)
    logical = t.get("logicalType") if isinstance(t, dict) else None
    base = t.get("type") if isinstance(t, dict) else t
    if logical in ("time-millis", "timestamp-millis", "local-timestamp-millis") or isinstance(base, (dict, list)):
        raise compiled.Unsupported(f"partition field {path[-1]}: {avro_type}")
    if logical == "decimal" or logical == "uuid" or (base == "fixed" and target is not None and
                                                     pa.types.is_string(target)):
        raw = cols.binary(path).to_pylist()
        if logical == "decimal":
            from decimal import Decimal
            scale = int(t.get("scale", 0))
            arr = from_python([None if v is None else Decimal(int.from_bytes(v, "big", signed=True)).scaleb(-scale)
                               for v in raw], pa.decimal128(int(t["precision"]), scale))
        else:
            import uuid
            arr = strings([None if v is None else str(uuid.UUID(bytes=v) if len(v) == 16 else uuid.UUID(v.decode()))
                           for v in raw])
    else:
        default = {"int": pa.int32(), "long": pa.int64(), "boolean": pa.bool_(), "float": pa.float32(),
                   "double": pa.float64(), "string": pa.string(), "bytes": pa.binary(), "fixed": pa.binary()}
        if base not in default:
            raise compiled.Unsupported(f"partition field {path[-1]}: {avro_type}")
        arr = _compiled_leaf(cols, path, t, default[base])
    return arr if target is None or arr.type == target else arr.cast(target)


def _avro_schema(data: bytes) -> str:
    """The writer schema in an Avro object container file's header (a map of metadata after the magic)."""
    try:
        meta, _ = compiled.header(data)
    except Unsupported as e:
        raise ValueError(str(e)) from None
    if b"avro.schema" not in meta:
        raise ValueError("no avro.schema in the Avro header")
    return meta[b"avro.schema"].decode("utf-8")


@functools.lru_cache(maxsize=64)
def _layout(schema_json: str):
    """(entry field ids, data_file field ids, partition schema) of a manifest schema, or None when it does not
    look like one. Manifests of a table share a handful of schemas: parsed once each."""
    raw = json.loads(schema_json)
    entry_ids = field_ids(raw)
    if 0 not in entry_ids or 2 not in entry_ids:
        return None
    df_schema = non_null(entry_ids[2][1])
    if not isinstance(df_schema, dict):
        return None
    df_ids = field_ids(df_schema)
    if 100 not in df_ids or 102 not in df_ids:
        return None
    part_schema = non_null(df_ids[102][1])
    if not isinstance(part_schema, dict):
        return None
    return entry_ids, df_ids, part_schema


def map_get(maps: pa.Array, key: int) -> pa.Array:
    """The value under ``key`` in each map of a map<int, _> array (null where the map is null or lacks the
    key; the first, should a map repeat it): one pass over the keys, instead of a lookup per map."""
    import numpy as np
    n = len(maps)
    offsets = int_values(maps.offsets)[0]  # (a slice's offsets index the whole child)
    hits = np.flatnonzero(int_values(maps.keys)[0] == key)
    rows = np.searchsorted(offsets, hits, side="right") - 1
    inside = (rows >= 0) & (rows < n) & (hits < offsets[-1] if n else False)
    rows, hits = rows[inside], hits[inside]
    rows, first = np.unique(rows, return_index=True)  # hits are ascending: the first of each map
    index = np.zeros(n, np.int64)
    found = np.zeros(n, bool)
    index[rows], found[rows] = hits[first], True
    if maps.null_count:
        found &= valid_mask(maps)
    return maps.items.take(from_numpy(index, pa.int64(), found))


# manifest_file field id -> ManifestFile attribute (and default when the field or its value is absent)
_MANIFEST_FILE_FIELDS = {
    500: ("manifest_path", None), 501: ("manifest_length", None), 502: ("partition_spec_id", None),
    503: ("added_snapshot_id", 0), 517: ("content", 0), 515: ("sequence_number", 0),
    516: ("min_sequence_number", 0), 504: ("added_files_count", None), 505: ("existing_files_count", None),
    506: ("deleted_files_count", None), 512: ("added_rows_count", None), 513: ("existing_rows_count", None),
    514: ("deleted_rows_count", None), 519: ("key_metadata", None), 520: ("first_row_id", None),
}


class ManifestListColumns:
    """A manifest list's entries as columns: what planning prunes by (spec ids, contents, partition field
    summaries) as arrays, :class:`~sparkberg.format.manifests.ManifestFile` objects built only for the entries
    asked for (:meth:`manifests`). Never changes once read."""

    def __init__(self, n: int, paths: pa.Array, ints: dict[str, tuple[np.ndarray, np.ndarray]],
                 key_metadata: pa.Array, summaries: tuple | None):
        self.num_rows = n
        self._paths = paths
        self._ints = ints
        self._key_metadata = key_metadata
        # (offsets into the items, list valid, contains_null, (contains_nan, valid), lower, upper) or None
        self._summaries = summaries
        self._objects: list[ManifestFile] | None = None  # (the entries as objects, when made from them)

    @classmethod
    def from_manifests(cls, manifests: Sequence[ManifestFile]) -> ManifestListColumns:
        """The entries of a manifest list already decoded (by the reference decoder) as objects: their integer
        columns are built when first asked for; a list of objects is pruned object by object
        (:func:`~sparkberg.planning.scan.prune_manifests`), so it has no summary columns."""
        out = cls(len(manifests), None, {}, None, None)
        out._objects = list(manifests)
        return out

    def __len__(self) -> int:
        return self.num_rows

    @property
    def decoded_as_objects(self) -> bool:
        """Whether the entries were decoded into ManifestFile objects (then :meth:`manifests` costs nothing)."""
        return self._objects is not None

    def column(self, attr: str) -> np.ndarray:
        """The values of an integer attribute of :class:`ManifestFile` (its default where absent)."""
        if attr not in self._ints and self._objects is not None:
            values = [getattr(m, attr) for m in self._objects]
            self._ints[attr] = (np.array([0 if v is None else v for v in values], np.int64),
                                np.array([v is not None for v in values], bool))
        values, valid = self._ints[attr]
        default = _MANIFEST_FILE_DEFAULTS[attr]
        return values if valid.all() or default is None else np.where(valid, values, default)

    def manifests(self, rows: Sequence[int] | np.ndarray | None = None) -> list:
        """The entries at ``rows`` (all when None), in that order, as ManifestFile objects."""
        if self._objects is not None:
            return list(self._objects) if rows is None else [self._objects[i] for i in np.asarray(rows).tolist()]
        rows = np.arange(self.num_rows) if rows is None else np.asarray(rows, np.int64)
        take = indices(rows)
        values = {"manifest_path": self._paths.take(take).to_pylist(),
                  "key_metadata": self._key_metadata.take(take).to_pylist()}
        for attr, (raw, valid) in self._ints.items():
            default = _MANIFEST_FILE_DEFAULTS[attr]
            picked, known = raw[rows].tolist(), valid[rows].tolist()
            values[attr] = [v if k else default for v, k in zip(picked, known)]
        partitions: list = [None] * len(rows)
        if self._summaries is not None:
            offsets, list_valid, nulls, (nans, nans_valid), lower, upper = self._summaries
            starts, ends, listed = offsets[rows], offsets[rows + 1], list_valid[rows]
            items = np.concatenate([np.arange(a, b) for a, b in zip(starts[listed], ends[listed])]) \
                if listed.any() else np.zeros(0, np.int64)
            take = indices(items)
            # each summary's values as Python objects, in the order of ``items``
            fields = zip(nulls[items].tolist(), np.where(nans_valid[items], nans[items], -1).tolist(),
                         lower.take(take).to_pylist(), upper.take(take).to_pylist())
            summaries = [FieldSummary(bool(n), None if nan < 0 else bool(nan), lo, up) for n, nan, lo, up in fields]
            at = 0
            for j, (a, b, ok) in enumerate(zip(starts.tolist(), ends.tolist(), listed.tolist())):
                if ok:
                    partitions[j] = tuple(summaries[at:at + b - a])
                    at += b - a
        names = list(values)
        return [ManifestFile(**{a: values[a][j] for a in names}, partitions=partitions[j]) for j in range(len(rows))]

    def summaries(self, rows: np.ndarray, k: int):
        """Partition field ``k``'s summaries of the entries at ``rows``: (known, contains_null, contains_nan as
        -1 unknown / 0 / 1, lower bounds, upper bounds), the bounds as Arrow binary arrays (null where absent),
        ``known`` false where an entry has no summaries or fewer than ``k + 1``."""
        n = len(rows)
        if self._objects is not None:
            raise ValueError("a manifest list decoded as objects has no summary columns: prune its objects")
        if self._summaries is None:
            nulls = pa.nulls(n, pa.binary())
            return np.zeros(n, bool), np.zeros(n, bool), np.full(n, -1, np.int8), nulls, nulls
        offsets, list_valid, contains_null, (nans, nans_valid), lower, upper = self._summaries
        known = list_valid[rows] & (offsets[rows + 1] - offsets[rows] > k)
        item = np.where(known, offsets[rows] + k, 0)
        if not len(contains_null):  # (no entry has summaries)
            nulls = pa.nulls(n, pa.binary())
            return known, np.zeros(n, bool), np.full(n, -1, np.int8), nulls, nulls
        nan = np.where(nans_valid[item], nans[item].astype(np.int8), np.int8(-1))
        take = from_numpy(np.asarray(item, np.int64), pa.int64(), known)
        return known, contains_null[item] & known, nan, lower.take(take), upper.take(take)


_MANIFEST_FILE_DEFAULTS = {attr: default for attr, default in _MANIFEST_FILE_FIELDS.values()}


def read_manifest_list_compiled(data: bytes, ids: dict[int, str],
                                summary_names: dict[int, str]) -> ManifestListColumns | None:
    """A manifest list's entries as :class:`ManifestListColumns`, decoded by compiled code, or None when that
    decoder cannot read it (the reference decoder then does);
    ``ids`` / ``summary_names``: the writer's field names by field id, of the manifest_file and field_summary
    records."""
    if any(f not in ids for f in (500, 501, 502)):
        return None
    cols = compiled.read_columns(data, [(name,) for name in ids.values()])
    if cols is None:
        return None
    try:
        ints = {}
        for fid, (attr, _) in _MANIFEST_FILE_FIELDS.items():
            name = ids.get(fid)
            if attr in ("manifest_path", "key_metadata"):
                continue
            if name is None or not cols.has((name,)):
                ints[attr] = (np.zeros(cols.num_rows, np.int64), np.zeros(cols.num_rows, bool))
            else:
                ints[attr] = cols.ints((name,))
        paths = cols.binary((ids[500],), string=True)
        key_metadata = cols.binary((ids[519],)) if 519 in ids and cols.has((ids[519],)) \
            else pa.nulls(cols.num_rows, pa.binary())
        summaries = None
        if 507 in ids and cols.has((ids[507],)):
            part = (ids[507], compiled.ITEMS)
            names = [summary_names.get(fid, default) for fid, default in (
                (509, "contains_null"), (518, "contains_nan"), (510, "lower_bound"), (511, "upper_bound"))]
            offsets, list_valid = cols.offsets((ids[507],))
            items = cols.rows(part + (names[0],))

            def present(name: str, kind: str):
                if cols.has(part + (name,)):
                    return cols.ints(part + (name,)) if kind == "ints" else cols.binary(part + (name,))
                return (np.zeros(items, np.int64), np.zeros(items, bool)) if kind == "ints" else \
                    pa.nulls(items, pa.binary())
            contains_null, _ = present(names[0], "ints")
            summaries = (offsets, list_valid, contains_null != 0, present(names[1], "ints"),
                         present(names[2], "binary"), present(names[3], "binary"))
    except (Unsupported, KeyError, TypeError, ValueError, pa.ArrowException):
        return None
    for attr in ("manifest_length", "partition_spec_id"):
        if not ints[attr][1].all():
            return None  # (the reference decoder names the malformed entry)
    if paths.null_count:
        return None
    return ManifestListColumns(cols.num_rows, paths, ints, key_metadata, summaries)


state.register("sparkberg.avro.columnar._layout", "64 manifest schemas", _layout.cache_clear)
