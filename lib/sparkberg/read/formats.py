"""Data and delete files read on the executors into Arrow batches of the read schema.

Spark reads Parquet natively and matches columns by field id (see :mod:`sparkberg.read.columns`).
Its ORC reader matches by name and its Avro reader is a separate package, so both formats are read
here with pyarrow (ORC: Iceberg's ``iceberg.id`` type attributes arrive as field metadata) and
fastavro (Avro: ``field-id``, ``element-id``, ``key-id``, ``value-id`` in the schema), each column
found by its field id, at any depth. Files without ids fall back to the table's name mapping, then
to the current names, as Iceberg Java does. Narrower stored types are widened (int->long,
float->double, decimal precision) and columns or nested fields a file lacks take their v3 ``initial-default``.

Each output batch carries ``_key`` (the file's path as a join key) and ``_pos`` (the row's position
in the file), the two columns Spark's ``_metadata`` gives the Parquet path. The same reader decodes
delete files of any of the three formats for the merge-on-read path, and Parquet data files (by field id,
nested fields too) for the SQL views' data source (:mod:`sparkberg.read.arrow`).
"""
from __future__ import annotations

import struct
import uuid
from decimal import Decimal
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from sparkberg.arrays import from_numpy, from_python, indices, int_values, scalar
from sparkberg.avro.manifest import non_null
from sparkberg.errors import MissingFileError, NotSupportedError, ValidationError
from sparkberg.spark.frames import local_dataframe, map_in_arrow
from sparkberg.spark.types import arrow_schema
from sparkberg.format import types as T
from sparkberg.format.variant import unshred

ORC_ID = b"iceberg.id"
PARQUET_ID = b"PARQUET:field_id"
ARROW_READ_FORMATS = ("orc", "avro")


def path_key(path: str) -> str:
    """A file location as a join key: the same for ``/x``, ``file:/x`` and ``file:///x``."""
    for prefix in ("file://", "file:"):
        if path.startswith(prefix):
            rest = path[len(prefix):]
            return rest if rest.startswith("/") else "/" + rest
    return path


def _default_value(f: T.NestedField) -> Any:
    """The in-memory ``initial-default`` of ``f`` as Arrow takes it for the Spark type."""
    v = f.initial_default
    if v is None:
        return None
    if isinstance(f.field_type, T.StructType):  # a struct's default is {}: its fields take their own defaults
        return {c.name: _default_value(c) for c in f.field_type.fields}
    if f.field_type in (T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS):
        return v // 1000
    if f.field_type == T.UUID:
        return str(v)
    return v


def _field_id(field: pa.Field, key: bytes = ORC_ID) -> int | None:
    """The Iceberg field id pyarrow read from a file's schema: ORC's ``iceberg.id`` attribute, Parquet's
    ``field_id`` (``key``)."""
    raw = (field.metadata or {}).get(key)
    return int(raw) if raw is not None else None


def _cast(array: pa.Array, ice: T.IcebergType, target: pa.DataType, where: str) -> pa.Array:
    if ice == T.UUID and not pa.types.is_string(array.type):
        return from_python([None if b is None else str(uuid.UUID(bytes=b)) for b in array.to_pylist()], target)
    if array.type == target:
        return array
    if ice in (T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS) and pa.types.is_timestamp(array.type) and \
            pa.types.is_timestamp(target) and array.type.unit == "ns" and target.unit == "us":
        # the microsecond at or before each value (as Iceberg Java's DateTimeUtil.nanosToMicros; a cast truncates
        # toward zero, which puts -1 ns at the epoch)
        values, valid = int_values(array)
        return from_numpy(np.floor_divide(values, 1000), target, valid)
    if isinstance(ice, T.VariantType) and pa.types.is_struct(array.type) and \
            array.type.get_field_index("typed_value") >= 0:
        try:
            array = unshred(array)  # (shredded by its writer: each row's variant rebuilt)
        except (ValidationError, ValueError, IndexError, struct.error) as e:
            raise ValidationError(f"{where}: a shredded variant that is not as the spec stores one: {e}") from None
    try:
        return array.cast(target, safe=not pa.types.is_timestamp(target))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise ValidationError(f"{where}: stored type {array.type} cannot be read as {ice}: {e}") from None


def conform(array: pa.Array, ice: T.IcebergType, target: pa.DataType, where: str, key: bytes = ORC_ID,
            names: dict[int, list[str]] | None = None) -> pa.Array:
    """``array`` (as pyarrow reads it from ORC or Parquet, with field ids in its fields' metadata under ``key``)
    as the Arrow ``target`` type of Iceberg type ``ice``: struct fields by id (in a file without ids, by the
    table's name mapping ``names``, field id -> names, else by the current name), lists and maps element-wise,
    primitives cast."""
    if isinstance(ice, T.StructType):
        flat = array.flatten()
        ids = [_field_id(array.type.field(i), key) for i in range(len(flat))]
        if any(i is not None for i in ids):
            children = {(i if i is not None else -1): a for i, a in zip(ids, flat)}
        else:  # (no ids: a file written without Iceberg, its struct fields matched by name)
            by_name = {array.type.field(i).name: a for i, a in enumerate(flat)}
            children = {f.field_id: next((by_name[n] for n in (names or {}).get(f.field_id, [f.name])
                                          if n in by_name), None) for f in ice.fields}
        out = []
        for f, tf in zip(ice.fields, target):
            a = children.get(f.field_id)
            if a is None:  # a field the file lacks: its initial-default (v3), else null
                d = _default_value(f)
                out.append(pa.nulls(len(array), tf.type) if d is None else pa.repeat(scalar(d, tf.type), len(array)))
            else:
                out.append(conform(a, f.field_type, tf.type, f"{where}.{f.name}", key, names))
        return pa.StructArray.from_arrays(out, fields=list(target), mask=array.is_null())
    if isinstance(ice, T.ListType):
        values = conform(array.values, ice.element_type, target.value_type, f"{where}.element", key, names)
        return pa.ListArray.from_arrays(array.offsets, values, type=target, mask=array.is_null())
    if isinstance(ice, T.MapType):
        keys = conform(array.keys, ice.key_type, target.key_type, f"{where}.key", key, names)
        items = conform(array.items, ice.value_type, target.item_type, f"{where}.value", key, names)
        return pa.MapArray.from_arrays(array.offsets, keys, items, type=target, mask=array.is_null())
    return _cast(array, ice, target, where)


def _strip_logical(schema: Any) -> Any:
    """The Avro schema with logical types removed, so fastavro hands back the stored values."""
    if isinstance(schema, list):
        return [_strip_logical(s) for s in schema]
    if isinstance(schema, dict):
        return {k: _strip_logical(v) for k, v in schema.items() if k != "logicalType"}
    return schema


def _avro_primitive(ice: T.IcebergType) -> Callable[[Any], Any]:
    if isinstance(ice, T.DecimalType):
        scale = ice.scale
        return lambda b: Decimal(int.from_bytes(b, "big", signed=True)).scaleb(-scale) \
            if isinstance(b, (bytes, bytearray)) else Decimal(b)
    if ice == T.UUID:
        return lambda b: str(uuid.UUID(bytes=b)) if isinstance(b, (bytes, bytearray)) else str(b)
    if ice in (T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS):
        return lambda v: v // 1000
    return lambda v: v


def avro_converter(node: Any, ice: T.IcebergType, where: str) -> Callable[[Any], Any]:
    """A function from a value fastavro decodes (logical types stripped) for the writer schema ``node`` to
    the Python value Arrow takes for Iceberg type ``ice``; fields matched by Avro ``field-id``."""
    node = non_null(node)
    if isinstance(ice, T.StructType):
        if not isinstance(node, dict) or node.get("type") != "record":
            raise ValidationError(f"{where}: expected an Avro record for {ice}, found {node}")
        by_id = {f["field-id"]: f for f in node["fields"] if "field-id" in f}
        by_name = {f["name"]: f for f in node["fields"]}
        parts = []
        for f in ice.fields:
            af = by_id.get(f.field_id) if by_id else by_name.get(f.name)
            if af is None:  # a field the file lacks: its initial-default (v3), else null
                parts.append((f.name, None, _default_value(f)))
            else:
                parts.append((f.name, af["name"], avro_converter(af["type"], f.field_type, f"{where}.{f.name}")))

        def record(r: dict) -> dict | None:
            if r is None:
                return None
            return {name: (conv if src is None else None if r.get(src) is None else conv(r[src]))
                    for name, src, conv in parts}
        return record
    if isinstance(ice, T.ListType):
        element = avro_converter(node["items"], ice.element_type, f"{where}.element")
        return lambda xs: None if xs is None else [None if x is None else element(x) for x in xs]
    if isinstance(ice, T.MapType):
        if isinstance(node, dict) and node.get("type") == "map":
            key, value = (lambda k: k), avro_converter(node["values"], ice.value_type, f"{where}.value")
            return lambda m: None if m is None else [(key(k), None if v is None else value(v)) for k, v in m.items()]
        # a map with non-string keys: an array of key/value records
        kv = non_null(node["items"])
        fields = {f.get("field-id"): f for f in kv["fields"]}
        kf, vf = fields.get(ice.key_id, kv["fields"][0]), fields.get(ice.value_id, kv["fields"][1])
        key = avro_converter(kf["type"], ice.key_type, f"{where}.key")
        value = avro_converter(vf["type"], ice.value_type, f"{where}.value")
        kn, vn = kf["name"], vf["name"]
        return lambda xs: None if xs is None else [(key(x[kn]), None if x[vn] is None else value(x[vn])) for x in xs]
    return _avro_primitive(ice)


class ArrowFileReader:
    """Executor side: paths of ORC or Avro files -> Arrow batches with the read schema's columns (by field id),
    ``_key`` and ``_pos``. (:meth:`read` also reads top-level primitive columns of Parquet files, for the
    readers of delete files.)"""

    def __init__(self, fmt: str, fields: Sequence[T.NestedField], arrow_schema: pa.Schema,
                 mapping: dict[int, list[str]] | None = None, batch_rows: int = 65536, *, io: Any,
                 constants: dict[str, dict[int, Any]] | None = None):
        if fmt not in (*ARROW_READ_FORMATS, "parquet"):
            raise NotSupportedError(f"reading {fmt} files is not supported")
        self.fmt, self.fields, self.mapping, self.batch_rows = fmt, list(fields), mapping or {}, batch_rows
        # (the table's FileIO, which opens files on object stores with the table's credentials)
        self.io = io
        # (path -> field id -> the value a column that file lacks holds: its identity partition value, spec
        # "Column Projection"; before the field's default)
        self.constants = constants or {}
        self.schema = arrow_schema
        self.data_schema = pa.schema(list(arrow_schema)[:len(self.fields)])

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path in batch.column(0).to_pylist():
                start = 0
                for rb in self.read(path):
                    n = rb.num_rows
                    cols = list(rb.columns) + [pa.repeat(scalar(path_key(path), pa.string()), n),
                                               indices(np.arange(start, start + n))]
                    start += n
                    yield pa.RecordBatch.from_arrays(cols, schema=self.schema)

    def _open(self, path: str):
        try:
            return self.io.open_input(path)
        except FileNotFoundError:
            raise MissingFileError(f"file {path} does not exist", path) from None

    def _top_level(self, names: list[str], ids: list[int | None]) -> dict[int, int]:
        """Field id -> column index in a file, by id, else by name mapping, else by current name."""
        if any(i is not None for i in ids):
            return {i: k for k, i in enumerate(ids) if i is not None}
        out = {}
        for f in self.fields:
            for n in self.mapping.get(f.field_id, [f.name]):
                if n in names:
                    out[f.field_id] = names.index(n)
                    break
        return out

    def _fill(self, columns: dict[int, pa.Array], n: int, path: str) -> pa.RecordBatch:
        constants = self.constants.get(path, {})
        arrays = []
        for f, tf in zip(self.fields, self.data_schema):
            a = columns.get(f.field_id)
            if a is None:
                d = constants[f.field_id] if f.field_id in constants else _default_value(f)
                a = pa.nulls(n, tf.type) if d is None else pa.repeat(scalar(d, tf.type), n)
            arrays.append(a)
        return pa.RecordBatch.from_arrays(arrays, schema=self.data_schema)

    def read(self, path: str) -> Iterator[pa.RecordBatch]:
        """The file's rows as batches of the read schema's columns (without ``_key`` and ``_pos``)."""
        return {"orc": self._orc, "avro": self._avro, "parquet": self._parquet}[self.fmt](path)

    def _parquet(self, path: str) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq
        with self._open(path) as fo:
            f = pq.ParquetFile(fo)
            schema = f.schema_arrow
            ids = [_field_id(x, PARQUET_ID) for x in schema]
            index = self._top_level(schema.names, ids)
            wanted = [(fld, tf, schema.names[index[fld.field_id]]) for fld, tf in zip(self.fields, self.data_schema)
                      if fld.field_id in index]
            for rb in f.iter_batches(batch_size=self.batch_rows, columns=[n for _, _, n in wanted] or None):
                cols = {fld.field_id: conform(rb.column(rb.schema.get_field_index(n)), fld.field_type, tf.type,
                                              f"{path}: {fld.name}", PARQUET_ID, self.mapping) for fld, tf, n in wanted}
                yield self._fill(cols, rb.num_rows, path)

    def _orc(self, path: str) -> Iterator[pa.RecordBatch]:
        import pyarrow.orc as orc
        with self._open(path) as fo:
            f = orc.ORCFile(fo)
            names = f.schema.names
            index = self._top_level(names, [_field_id(x) for x in f.schema])
            wanted = [(fld, tf, index[fld.field_id]) for fld, tf in zip(self.fields, self.data_schema)
                      if fld.field_id in index]
            for s in range(f.nstripes):
                stripe = f.read_stripe(s, columns=[names[k] for _, _, k in wanted] or None)
                by_name = {stripe.schema.names[k]: stripe.column(k) for k in range(stripe.num_columns)}
                cols = {fld.field_id: conform(by_name[names[k]], fld.field_type, tf.type, f"{path}: {fld.name}",
                                              names=self.mapping) for fld, tf, k in wanted}
                yield self._fill(cols, stripe.num_rows, path)

    def _avro(self, path: str) -> Iterator[pa.RecordBatch]:
        import fastavro
        with self._open(path) as fo:
            header = fastavro.reader(fo)
            writer = header.writer_schema
        top = writer["fields"]
        index = self._top_level([f["name"] for f in top], [f.get("field-id") for f in top])
        converters = [(fld.field_id, tf.type, top[index[fld.field_id]]["name"],
                       avro_converter(top[index[fld.field_id]]["type"], fld.field_type, f"{path}: {fld.name}"))
                      for fld, tf in zip(self.fields, self.data_schema) if fld.field_id in index]
        with self._open(path) as fo:
            rows = fastavro.reader(fo, reader_schema=_strip_logical(writer))
            chunk: list[dict] = []
            for r in rows:
                chunk.append(r)
                if len(chunk) >= self.batch_rows:
                    yield self._avro_batch(chunk, converters, path)
                    chunk = []
            if chunk:
                yield self._avro_batch(chunk, converters, path)

    def _avro_batch(self, rows: list[dict], converters: list, path: str) -> pa.RecordBatch:
        cols = {}
        for fid, typ, name, conv in converters:
            cols[fid] = from_python([None if r.get(name) is None else conv(r[name]) for r in rows], typ)
        return self._fill(cols, len(rows), path)


def read_with_arrow(spark, fmt: str, fields: Sequence[T.NestedField], spark_fields: Sequence, paths: Sequence[str],
                    mapping: dict[int, list[str]] | None = None, io: Any = None,
                    identity: dict[str, dict[int, Any]] | None = None):
    """A DataFrame of the rows of files ``paths`` (ORC, Avro, or Parquet on an object store Spark's reader does
    not serve): ``spark_fields`` (the Spark fields of ``fields``) plus ``_key`` and ``_pos``, decoded on the
    executors, opened by ``io`` (the table's FileIO) where it is given; a column a file lacks holds its identity
    partition value (``identity``: path -> {field id: value})."""
    from pyspark.sql import types as ST
    out = ST.StructType(list(spark_fields) + [ST.StructField("_key", ST.StringType()),
                                              ST.StructField("_pos", ST.LongType())])
    wanted = set(paths)
    reader = ArrowFileReader(fmt, fields, arrow_schema(out), mapping, io=io,
                             constants={p: v for p, v in (identity or {}).items() if p in wanted})
    return map_in_arrow(local_dataframe(spark, [(p,) for p in paths], "file_path string"), reader, out)
