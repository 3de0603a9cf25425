"""Data and delete files read as Spark rows, with columns matched by field id.

Parquet files are read by Spark's own reader (``spark.sql.parquet.fieldId.read.enabled``), each file's columns
matched by the field ids in its footer, else by the table's name mapping; ORC and Avro files by Arrow. Columns
a file lacks read as their ``initial-default`` (spec "Default values"), else null; promoted types are cast.
"""
from __future__ import annotations

import datetime as _dt
import re
from collections import defaultdict
from typing import Any, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as ST

from sparkberg.arrays import strings
from sparkberg.errors import NotSupportedError, ValidationError
from sparkberg.io.fileio import FileIO, to_local_path
from sparkberg.io.stores import HDFS, LOCAL, store_of
from sparkberg.read.fileids import FileIds
from sparkberg.read.formats import ARROW_READ_FORMATS, ArrowFileReader, path_key, read_with_arrow
from sparkberg.spark.frames import local_dataframe, map_in_arrow
from sparkberg.spark.jvm import read_parquet
from sparkberg.spark.session import spark_version
from sparkberg.spark.tuning import ReadTuning
from sparkberg.spark.types import FIELD_ID_KEY, arrow_schema, to_spark_read_field
from sparkberg.format import types as T
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.properties import NAME_MAPPING
from sparkberg.format.values import to_python


# (nanosAsLong: Spark has no nanosecond timestamp, and without it refuses to read a Parquet TIMESTAMP(NANOS) column
# at all; read as the longs they are, the nanoseconds become timestamps here, :func:`nanos_timestamp`)
SPARK_CONF = {"spark.sql.parquet.fieldId.read.enabled": "true",
              "spark.sql.parquet.fieldId.read.ignoreMissing": "true",
              "spark.sql.legacy.parquet.nanosAsLong": "true"}
NANOS = (T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS)


def spark_path_key(col: Column) -> Column:
    """:func:`path_key` of the paths Spark reports in ``_metadata.file_path`` (percent-encoded URIs)."""
    decoded = F.url_decode(F.regexp_replace(col, r"\+", "%2B"))
    return F.regexp_replace(decoded, r"^file:(//)?(?=/)", "")


def ensure_session_conf(spark) -> None:
    """The settings the field-id reader needs; set on the session when not already set."""
    for k, v in SPARK_CONF.items():
        try:
            if str(spark.conf.get(k, None)).lower() != v:
                spark.conf.set(k, v)
        except Exception:  # noqa: BLE001 - a session that refuses the setting still reads by name
            pass


def servable(schema: T.Schema, wanted: Sequence[str], named: bool) -> tuple[T.Schema, list[str]]:
    """``schema`` without the columns Spark cannot hold (a ``variant`` on PySpark 3.5, a ``time`` where Spark has
    no TIME type), and ``wanted`` without them, so a table with such a column stays readable. A column ``named``
    by the read (its ``columns``) that Spark cannot hold is a :class:`NotSupportedError` naming it and its type;
    a read of every column leaves it out, with a warning naming it."""
    left: dict[str, str] = {}
    for f in schema.fields:
        try:
            to_spark_read_field(f)
        except NotSupportedError as e:
            left[f.name] = str(e)
    if not left:
        return schema, list(wanted)
    asked = [c for c in wanted if c in left]
    if asked and named:
        f = schema.as_struct.field_by_name(asked[0])
        raise NotSupportedError(f"column {f.name!r} of type {f.field_type} cannot be read: {left[f.name]}")
    import logging
    logging.getLogger("sparkberg").warning(
        "reading without column(s) %s: %s", ", ".join(repr(n) for n in left), "; ".join(left.values()))
    kept = [f for f in schema.fields if f.name not in left]
    ids = {f.field_id for f in kept}
    return (T.Schema(kept, schema.schema_id, [i for i in schema.identifier_field_ids if i in ids]),
            [c for c in wanted if c not in left])


def nanos_timestamp(col: Column, target: ST.DataType) -> Column:
    """Nanoseconds from the epoch (a long) as a Spark timestamp of type ``target`` (TIMESTAMP_NTZ or TIMESTAMP):
    the microsecond at or before it (floor division, as Iceberg Java's ``DateTimeUtil.nanosToMicros``: -1 ns is
    the microsecond before the epoch; exact in decimal, where a double would round), added to the epoch as an
    interval (exact on every Spark version: ``timestamp_micros`` makes no TIMESTAMP_NTZ, and a cast would bring
    in a time zone)."""
    micros = F.floor(col.cast("decimal(20,0)") / F.lit(1000)).cast("bigint")
    epoch = "TIMESTAMP_NTZ '1970-01-01 00:00:00'" if isinstance(target, ST.TimestampNTZType) else \
        "TIMESTAMP_LTZ '1970-01-01 00:00:00 UTC'"
    return F.expr(epoch) + micros * F.expr("INTERVAL '0.000001' SECOND")


def _physical_type(t: T.IcebergType, want: ST.DataType) -> ST.DataType:
    """The type Spark's Parquet reader is asked for where a column of Iceberg type ``t`` is ``want`` to Spark:
    a UUID as its 16 bytes, a nanosecond timestamp as its long, an ``unknown`` (never in a data file) as a
    placeholder int (PySpark 3.5's reader refuses VOID); at any depth, struct fields by field id."""
    if isinstance(t, T.StructType) and isinstance(want, ST.StructType):
        by_id = {f.field_id: f.field_type for f in t.fields}
        return ST.StructType([
            ST.StructField(sf.name, _physical_type(by_id[int(sf.metadata[FIELD_ID_KEY])], sf.dataType)
                           if int(sf.metadata.get(FIELD_ID_KEY, -1)) in by_id else sf.dataType,
                           sf.nullable, sf.metadata) for sf in want.fields])
    if isinstance(t, T.ListType) and isinstance(want, ST.ArrayType):
        return ST.ArrayType(_physical_type(t.element_type, want.elementType), want.containsNull)
    if isinstance(t, T.MapType) and isinstance(want, ST.MapType):
        return ST.MapType(_physical_type(t.key_type, want.keyType), _physical_type(t.value_type, want.valueType),
                          want.valueContainsNull)
    if t == T.UUID:
        return ST.BinaryType()
    if t in NANOS:
        return ST.LongType()
    if t == T.UNKNOWN:
        return ST.IntegerType()
    return want


def _from_physical(col: Column, t: T.IcebergType, want: ST.DataType, got: ST.DataType) -> Column:
    """``col``, read as :func:`_physical_type` ``got``, as ``want``."""
    if want == got:
        return col
    if isinstance(want, ST.StructType):
        by_id = {f.field_id: f.field_type for f in t.fields}
        parts = [_from_physical(col.getField(w.name), by_id[int(w.metadata[FIELD_ID_KEY])], w.dataType, g.dataType)
                 .alias(w.name) if w.dataType != g.dataType else col.getField(w.name).alias(w.name)
                 for w, g in zip(want.fields, got.fields)]
        return F.when(col.isNull(), F.lit(None).cast(want)).otherwise(F.struct(*parts))
    if isinstance(want, ST.ArrayType):
        return F.transform(col, lambda e: _from_physical(e, t.element_type, want.elementType, got.elementType))
    if isinstance(want, ST.MapType):
        if want.keyType != got.keyType:
            col = F.transform_keys(col, lambda k, v: _from_physical(k, t.key_type, want.keyType, got.keyType))
        if want.valueType != got.valueType:
            col = F.transform_values(col, lambda k, v: _from_physical(v, t.value_type, want.valueType,
                                                                      got.valueType))
        return col
    if t == T.UUID:
        return uuid_string(col)
    if t in NANOS:
        return nanos_timestamp(col, want)
    return F.lit(None).cast(want)


def read_schema(schema: T.Schema, extra: Sequence[T.NestedField] = ()) -> ST.StructType:
    """The Spark schema to read data files with: every column by field id, plus ``extra`` fields."""
    return ST.StructType([to_spark_read_field(f) for f in schema.fields] + [to_spark_read_field(f) for f in extra])


def empty_frame(spark, schema: ST.StructType) -> DataFrame:
    return local_dataframe(spark, [], schema)


def promoted_fields(metadata: TableMetadata, schema: T.Schema) -> dict[int, T.NestedField]:
    """Primitive fields of ``schema``, at any depth, whose type was widened (int->long, float->double, decimal
    precision, date->timestamp): older files store them in the narrower type."""
    out = {}
    olds = [s.index_by_id() for s in metadata.schemas]
    for f in schema.index_by_id().values():
        if f.field_type.is_primitive and any(
                old.get(f.field_id) is not None and old[f.field_id].field_type != f.field_type for old in olds):
            out[f.field_id] = f
    return out


def _struct_field_ids(t: T.IcebergType) -> set[int]:
    """Ids of the struct fields nested anywhere in ``t`` (not list elements, map keys or values: a file that
    holds their parent holds them)."""
    out: set[int] = set()
    for c in T.children(t):
        if isinstance(t, T.StructType):
            out.add(c.field_id)
        out |= _struct_field_ids(c.field_type)
    return out


def _file_read_type(t: T.IcebergType, spark_type: ST.DataType, field_id: int, present: dict[int, str],
                    named: dict[int, str], watched: set[int], promoted: dict[int, T.NestedField]) -> ST.DataType:
    """The read type of a column (``t``, field ``field_id``) for one file: the nested struct fields of
    ``watched`` that the file lacks (not in ``present``, field id -> stored Arrow type) left out, those it holds
    under the file's name (``named``), and promoted fields in their stored types. Spark's vectorized reader,
    matching by field id, types a nested field by the name the file gives it, and a struct inside a list or map
    whose names differ from the requested ones (a renamed field, or the placeholder of a missing one) fails its
    column vector's type check; so the file's own struct is asked for and :func:`_conform` makes it the table's.
    A struct that would lose every field keeps them all (Spark then fills them itself, which it can outside lists
    and maps)."""
    def visit(t: T.IcebergType, spark_type: ST.DataType, field_id: int) -> ST.DataType:
        if isinstance(t, T.StructType):
            fields = [ST.StructField(named.get(f.field_id, sf.name), visit(f.field_type, sf.dataType, f.field_id),
                                     sf.nullable, sf.metadata)
                      for f, sf in zip(t.fields, spark_type.fields)
                      if f.field_id not in watched or f.field_id in present]
            return ST.StructType(fields) if fields else spark_type
        if isinstance(t, T.ListType):
            return ST.ArrayType(visit(t.element_type, spark_type.elementType, t.element_id),
                                spark_type.containsNull)
        if isinstance(t, T.MapType):
            return ST.MapType(visit(t.key_type, spark_type.keyType, t.key_id),
                              visit(t.value_type, spark_type.valueType, t.value_id), spark_type.valueContainsNull)
        stored = _stored_spark_type(present.get(field_id, "")) if field_id in promoted else None
        return spark_type if stored is None else stored
    return visit(t, spark_type, field_id)


def _conform(col: Column, t: T.IcebergType, target: ST.DataType, read: ST.DataType) -> Column:
    """``col``, read as ``read`` (:func:`_file_read_type`), as the column of Iceberg type ``t`` in Spark type
    ``target``: struct fields matched by field id, renamed to the table's names; those the read left out take
    their ``initial-default`` (else null); narrower stored primitives are cast; null structs stay null; list
    elements and map entries are conformed one by one."""
    if read == target:
        return col
    if isinstance(t, T.StructType):
        read_fields = {int(f.metadata[FIELD_ID_KEY]): f for f in read.fields}
        parts = [(_conform(col.getField(read_fields[f.field_id].name), f.field_type, sf.dataType,
                           read_fields[f.field_id].dataType)
                  if f.field_id in read_fields else _literal_default(f, sf.dataType)).alias(sf.name)
                 for f, sf in zip(t.fields, target.fields)]
        return F.when(col.isNull(), F.lit(None).cast(target)).otherwise(F.struct(*parts))
    if isinstance(t, T.ListType):
        return F.transform(col, lambda e: _conform(e, t.element_type, target.elementType, read.elementType))
    if isinstance(t, T.MapType):
        if read.keyType != target.keyType:
            col = F.transform_keys(col, lambda k, v: _conform(k, t.key_type, target.keyType, read.keyType))
        return F.transform_values(col, lambda k, v: _conform(v, t.value_type, target.valueType, read.valueType))
    return col.cast(target)


class FooterSignatures:
    """Executor side: what a Parquet footer says about the columns a read must handle per file: whether the
    file has field ids, which of the ``field_ids`` it holds (with their stored types and names), and, for files
    without ids, its top-level column names."""

    def __init__(self, field_ids: Sequence[int]):
        self.field_ids = set(field_ids)

    def signature(self, arrow_schema: pa.Schema) -> str:
        import json
        ids, named = {}, {}

        def visit(field: pa.Field) -> None:  # every depth: nested fields may have defaults too
            fid = (field.metadata or {}).get(b"PARQUET:field_id")
            if fid is not None and int(fid) in self.field_ids:
                ids[int(fid)] = str(field.type)
                named[int(fid)] = field.name
            t = field.type
            if pa.types.is_struct(t):
                for i in range(t.num_fields):
                    visit(t.field(i))
            elif pa.types.is_list(t) or pa.types.is_large_list(t):
                visit(t.value_field)
            elif pa.types.is_map(t):
                visit(t.key_field)
                visit(t.item_field)

        for field in arrow_schema:
            visit(field)
        has_ids = any((f.metadata or {}).get(b"PARQUET:field_id") is not None for f in arrow_schema)
        return json.dumps({"ids": has_ids, "present": sorted(ids.items()), "named": sorted(named.items()),
                           "names": [] if has_ids else [f.name for f in arrow_schema],
                           "tree": {} if has_ids else {f.name: _name_tree(f.type) for f in arrow_schema}})

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq
        for batch in batches:
            paths, sigs = [], []
            for path in batch.column(0).to_pylist():
                local = to_local_path(path)
                if local is not None:
                    arrow_schema = pq.read_schema(local)
                else:
                    fs, p = pa.fs.FileSystem.from_uri(path)
                    with fs.open_input_file(p) as f:
                        arrow_schema = pq.read_schema(f)
                paths.append(path)
                sigs.append(self.signature(arrow_schema))
            yield pa.RecordBatch.from_arrays([strings(paths), strings(sigs)],
                                             names=["file_path", "signature"])


def _name_tree(t: pa.DataType) -> dict | None:
    """The nested field names of an Arrow type: struct fields by name, ``element`` of a list, ``key`` and
    ``value`` of a map (None for a primitive)."""
    if pa.types.is_struct(t):
        return {t.field(i).name: _name_tree(t.field(i).type) for i in range(t.num_fields)}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"element": _name_tree(t.value_type)}
    if pa.types.is_map(t):
        return {"key": _name_tree(t.key_type), "value": _name_tree(t.item_type)}
    return None


def _by_file_names(t: T.IcebergType, spark_type: ST.DataType, tree: dict | None,
                   names: dict[int, list[str]]) -> ST.DataType:
    """The read type of a column of a file without field ids: each nested struct field under the name the file
    uses for it (``names``: the name mapping, field id -> names, at every depth), else its own name (missing: null);
    cast by position to ``spark_type`` after the read."""
    tree = tree or {}
    if isinstance(t, T.StructType):
        out = []
        for f, sf in zip(t.fields, spark_type.fields):
            name = next((n for n in names.get(f.field_id, []) if n in tree), sf.name)
            out.append(ST.StructField(name, _by_file_names(f.field_type, sf.dataType, tree.get(name), names),
                                      sf.nullable))  # (no field id: Spark then matches the file's by name)
        return ST.StructType(out)
    if isinstance(t, T.ListType):
        return ST.ArrayType(_by_file_names(t.element_type, spark_type.elementType, tree.get("element"), names),
                            spark_type.containsNull)
    if isinstance(t, T.MapType):
        return ST.MapType(_by_file_names(t.key_type, spark_type.keyType, tree.get("key"), names),
                          _by_file_names(t.value_type, spark_type.valueType, tree.get("value"), names),
                          spark_type.valueContainsNull)
    return spark_type


def _stored_spark_type(arrow_type: str) -> ST.DataType | None:
    if arrow_type == "int32":
        return ST.IntegerType()
    if arrow_type == "float":
        return ST.FloatType()
    if arrow_type == "date32[day]":
        return ST.DateType()
    m = re.match(r"decimal128\((\d+), (\d+)\)", arrow_type)
    if m:
        return ST.DecimalType(int(m.group(1)), int(m.group(2)))
    return None


def name_mapping(metadata: TableMetadata, nested: bool = False) -> dict[int, list[str]]:
    """Field id -> names from ``schema.name-mapping.default`` (spec Appendix C "Name Mapping"): top-level fields,
    or with ``nested`` fields at every depth (ids are unique in a table, so one map holds them all)."""
    import json
    raw = metadata.properties.get(NAME_MAPPING)
    if not raw:
        return {}

    def entries(level: list) -> list:
        return [e for m in level for e in [m] + (entries(m.get("fields") or []) if nested else [])]
    try:
        return {int(m["field-id"]): list(m.get("names") or []) for m in entries(json.loads(raw)) if "field-id" in m}
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise ValidationError(f"table property schema.name-mapping.default is not a valid name mapping: {e}") \
            from None


def _literal(value: Any, dtype: Any) -> Column:
    """``value`` (a Python value) as a Column of Spark type ``dtype``; a datetime without a zone by its text, which
    Spark casts to a zoneless timestamp without the session's or the process's time zone."""
    if isinstance(value, _dt.datetime) and value.tzinfo is None:
        return F.lit(value.isoformat(sep=" ")).cast(dtype)
    return F.lit(value).cast(dtype)


def read_data_parquet(spark, metadata: TableMetadata, schema: T.Schema, spark_schema: ST.StructType,
                  paths: list[str], keys: bool | str = True, file_ids: FileIds | None = None,
                  row_filter: Column | None = None, identity: dict[str, dict[int, Any]] | None = None
                  ) -> DataFrame:
    """Data files read by field id. Where files differ from the read schema in ways Spark's reader cannot
    bridge, they are grouped by their footers and each group is read its own way: columns holding fields widened
    since the file was written (int->long, float->double, decimal precision, date->timestamp; at any depth) are read
    in the stored types and cast,
    v3 columns with an ``initial-default`` that the file lacks take the default, and files without field ids
    (migrated tables) are read by the table's name mapping, or by position as Iceberg Java falls back.
    A column a file lacks takes, as the spec's "Column Projection" orders: the file's identity partition value
    (``identity``: path -> {field id: value}, given for tables with a name mapping; Hive files imported by
    ``add_files`` hold no partition columns), its
    name-mapped column, its ``initial-default``, or null. ``row_filter`` (on the Parquet relation's own columns and
    ``_metadata``) is applied to each relation read."""
    import json

    top = {f.field_id: f.field_type for f in schema.fields}

    def read(schema_: ST.StructType, files: list[str]) -> DataFrame:
        # columns Spark's reader cannot take as Spark holds them (UUIDs, nanosecond timestamps, unknown) are
        # read as their physical values and made Spark's (:func:`_physical_type`)
        types = [top.get(int(f.metadata.get(FIELD_ID_KEY, -1))) for f in schema_.fields]
        physical = [f if t is None else ST.StructField(f.name, _physical_type(t, f.dataType), f.nullable, f.metadata)
                    for f, t in zip(schema_.fields, types)]
        df = _parquet(spark, ST.StructType(physical), files, keys, file_ids, row_filter)
        for f, p, t in zip(schema_.fields, physical, types):
            if p.dataType != f.dataType:
                df = df.withColumn(f.name, _from_physical(F.col(f"`{f.name}`"), t, f.dataType, p.dataType))
        return df

    promoted = promoted_fields(metadata, schema)
    # the top-level columns holding a promoted field (themselves, or nested in them)
    promoted_under = {f.field_id for f in schema.fields
                      if f.field_id in promoted or set(T.Schema([f]).index_by_id()) & set(promoted)}
    defaults = {f.field_id: f for f in schema.fields if f.initial_default is not None}
    # nested struct fields a file may lack or name otherwise, by the top-level column holding them: those
    # added or renamed since some schema of the table, and those with an initial-default (a file added from
    # elsewhere may lack them)
    names = [{i: f.name for i, f in s.index_by_id().items()} for s in metadata.schemas]
    settled = {i for i, n in names[0].items() if all(other.get(i) == n for other in names[1:])} if names else set()
    nested_watched = {f.field_id: ids for f in schema.fields if f.field_type.is_nested
                      for ids in [{i for i in _struct_field_ids(f.field_type) if i not in settled}
                                  | _default_ids(f.field_type)] if ids}
    mapping = name_mapping(metadata)
    nested_mapping = name_mapping(metadata, nested=True)
    wanted = set(paths)
    identity = {p: v for p, v in (identity or {}).items() if p in wanted}
    if not promoted and not defaults and not nested_watched and not mapping and not identity:
        return read(spark_schema, paths)
    identity_ids = {i for v in identity.values() for i in v}
    watched = list(promoted) + list(defaults) + [i for ids in nested_watched.values() for i in ids] + \
        list(nested_watched) + sorted(identity_ids)
    sigs = map_in_arrow(local_dataframe(spark, [(p,) for p in paths], "file_path string"),
                        FooterSignatures(watched), "file_path string, signature string").collect()
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in sigs:
        sig = json.loads(r["signature"])
        held = {int(k) for k, _ in sig["present"]}
        # files lacking an identity partition column are grouped by its value too (it becomes a literal)
        lacking = {str(i): identity[r["file_path"]][i] for i in sorted(identity.get(r["file_path"], {}))
                   if i not in held}
        groups[(r["signature"], json.dumps(lacking, default=str, sort_keys=True))].append(r["file_path"])
    out = None
    for (sig, _), files in sorted(groups.items()):
        info = json.loads(sig)
        present = {int(k): v for k, v in info["present"]}
        named = {int(k): v for k, v in info.get("named", [])}
        from_partition = identity.get(files[0], {})
        fields, after = [], []
        for pos, f in enumerate(spark_schema.fields):
            fid = f.metadata.get(FIELD_ID_KEY)
            if not info["ids"]:  # no field ids in this file: by name mapping, else by position
                names = info["names"]
                candidates = mapping.get(fid, []) if mapping else ([names[pos]] if pos < len(names) and
                                                                   fid == pos + 1 else [])
                found = next((n for n in candidates if n in names), None)
                if found is None:
                    after.append((f.name, _literal(from_partition[fid], f.dataType) if fid in from_partition
                                  else _default_column(schema, fid, f.dataType)))
                    fields.append(ST.StructField(f"_missing_{pos}", f.dataType, True))
                    continue
                stored = _by_file_names(schema.find_field(fid).field_type, f.dataType, info["tree"].get(found),
                                        nested_mapping)
                fields.append(ST.StructField(found, stored, True))
                if found != f.name or stored != f.dataType:
                    after.append((f.name, F.col(f"`{found}`").cast(f.dataType) if stored != f.dataType
                                  else F.col(f"`{found}`")))
                continue
            if fid in from_partition and fid not in present:
                fields.append(f)
                after.append((f.name, _literal(from_partition[fid], f.dataType)))
                continue
            if fid in defaults and fid not in present:
                fields.append(f)
                after.append((f.name, _default_column(schema, fid, f.dataType)))
                continue
            renamed = {i for i in nested_watched.get(fid, ()) if i in named and named[i] != schema.find_field(i).name}
            lacking = nested_watched.get(fid, set()) - set(present) if fid in present else set()
            if lacking or renamed or fid in promoted_under:  # read what the file holds, then make it the table's
                t = schema.find_field(fid).field_type
                stored = _file_read_type(t, f.dataType, fid, present, named, nested_watched.get(fid, set()),
                                         promoted)
                if stored != f.dataType:
                    fields.append(ST.StructField(f.name, stored, True, f.metadata))
                    after.append((f.name, _conform(F.col(f"`{f.name}`"), t, f.dataType, stored)))
                    continue
            fields.append(f)
        df = read(ST.StructType(fields), files)
        for name, column in after:
            df = df.withColumn(name, column)
        df = df.select(*[F.col(f"`{f.name}`") for f in spark_schema.fields], *_key_columns(keys, file_ids))
        out = df if out is None else out.unionByName(df)
    return out


def uuid_string(col: Column) -> Column:
    """16 UUID bytes as the canonical string (``f79c3e09-677c-4bbd-a479-3f349cb785e7``)."""
    h = F.lower(F.hex(col))
    parts = [F.substring(h, a, n) for a, n in ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))]
    return F.when(col.isNotNull(), F.concat_ws("-", *parts))


def _key_columns(keys: bool | str, file_ids: FileIds | None) -> list[str]:
    """The columns a read with these ``keys`` and ``file_ids`` adds to the read schema's (:func:`_parquet`)."""
    if not keys:
        return []
    if keys == "pos" and file_ids is None:
        return ["_pos"]
    return ["_key", "_pos"] + (["_file_id"] if file_ids is not None else [])


def _parquet(spark, schema: ST.StructType, files: Sequence[str], keys: bool | str = True,
             file_ids: FileIds | None = None, row_filter: Column | None = None) -> DataFrame:
    """Parquet files read by field id, with ``_key`` (:func:`path_key` of the row's file) and ``_pos`` (its row
    index) when ``keys``, and ``_file_id`` (the file's id in ``file_ids``) when given: all from one broadcast
    join on the path Spark reports, unless the ids come from the files' names (then ``_key`` is null).
    ``keys`` "pos" without ``file_ids``: ``_pos`` alone, from the row index; ``keys`` false: the read schema's
    columns alone (:func:`_key_columns`). ``row_filter`` filters the relation's rows first."""
    df = read_parquet(spark, schema, list(files))
    if row_filter is not None:
        df = df.where(row_filter)
    # (SQL text: each Column built step by step costs a classic session a py4j call a step, and it analyses
    # each step: no step that adds nothing)
    if not keys:  # rows need not be matched to their file (no deletes, no metadata columns): a plain read
        return df
    if keys == "pos" and file_ids is None:  # the row's position only (no deletes, no metadata columns)
        return df.selectExpr("*", "_metadata.row_index AS _pos")
    if file_ids is not None and file_ids.shift is not None:
        return df.selectExpr("*", "CAST(NULL AS STRING) AS _key", "_metadata.row_index AS _pos",
                             f"{file_ids.sql()} AS _file_id")
    keys = _raw_path_keys(spark, df, file_ids)
    if keys is None:  # no file listing to map from: normalize every row's path (slower)
        out = df.select("*", spark_path_key(F.col("_metadata.file_path")).alias("_key"),
                        F.col("_metadata.row_index").alias("_pos"))
        return out if file_ids is None else _with_file_ids(spark, out, file_ids)
    return (df.select("*", F.col("_metadata.file_path").alias("_raw_path"), F.col("_metadata.row_index").alias("_pos"))
            .join(F.broadcast(keys), "_raw_path").drop("_raw_path"))


def _with_file_ids(spark, df: DataFrame, file_ids: FileIds) -> DataFrame:
    ids = local_dataframe(spark, sorted(file_ids.by_key.items()), "_key string, _file_id int")
    return df.join(F.broadcast(ids), "_key")


def _raw_path_keys(spark, df: DataFrame, file_ids: FileIds | None = None) -> DataFrame | None:
    """(the path as ``_metadata.file_path`` reports it, :func:`path_key` of it) for every file ``df`` reads,
    from Spark's own file listing, so rows are matched to their task by a hash join on the raw path instead
    of decoding every row's path. Spark reports local files as ``file:/x`` and lists them as ``file:///x``
    (both percent-encoded); both spellings map to the key."""
    from urllib.parse import unquote
    try:
        listed = df.inputFiles()
    except Exception:  # noqa: BLE001 - a session that cannot list
        return None
    pairs = set()
    for raw in listed:
        key = path_key(unquote(raw))
        pairs.add((raw, key))
        if raw.startswith("file:///"):
            pairs.add(("file:/" + raw[len("file:///"):], key))
        elif raw.startswith("file:/") and not raw.startswith("file://"):
            pairs.add(("file:///" + raw[len("file:/"):], key))
    if file_ids is not None:
        return local_dataframe(spark, sorted((raw, key, file_ids.by_key.get(key, -1)) for raw, key in pairs),
                               "_raw_path string, _key string, _file_id int")
    return local_dataframe(spark, sorted(pairs), "_raw_path string, _key string")


READ_FORMATS = {"parquet", *ARROW_READ_FORMATS}  # (Parquet by Spark, the others by Arrow)

def check_formats(files: Sequence[tuple[str, str]], what: str) -> None:
    """A clear error naming the first file of a format no reader here reads ((format, path) pairs)."""
    unknown = sorted({fmt.lower() for fmt, _ in files} - READ_FORMATS)
    if unknown:
        example = next(path for fmt, path in files if fmt.lower() == unknown[0])
        raise NotSupportedError(f"reading {unknown} {what} files is not supported (e.g. {example}); "
                                f"Parquet, ORC and Avro are")


def read_files(spark, fields: Sequence[T.NestedField], files: Sequence[tuple[str, str]], what: str, *,
               io: FileIO, spark_schemes: frozenset[str], parquet=None, mapping: dict[int, list[str]] | None = None,
               file_ids: FileIds | None = None, keys: bool | str = True,
               identity: dict[str, dict[int, Any]] | None = None) -> DataFrame:
    """The rows of ``files`` ((format, path) pairs; Parquet, ORC or Avro) with ``fields`` matched by field id,
    plus ``_key`` (the path as a join key) and ``_pos`` (the row's position in its file), as ``keys`` asks
    (:func:`_key_columns`). ``parquet`` reads the Parquet paths when the caller needs more than a plain
    field-id read. Parquet files on an object store are read by sparkberg's Arrow reader with ``io`` (the table's
    FileIO: its credentials reach the executors), which a pip-installed PySpark's Hadoop file systems cannot
    open, unless their scheme is among ``spark_schemes`` (the session's setting, :class:`ReadTuning`;
    :func:`spark_reads`). ``mapping``: the table's name mapping at every depth, for files without field ids;
    ``identity``: path -> {field id: value} of the identity partition columns a file may lack."""
    spark_schema = ST.StructType([to_spark_read_field(f) for f in fields])
    check_formats(files, what)
    by_format: dict[str, list[str]] = defaultdict(list)
    for fmt, path in files:
        by_format[fmt.lower()].append(path)
    parts = []
    for fmt, paths in sorted(by_format.items()):
        if fmt == "parquet" and all(spark_reads(p, spark_schemes) for p in paths):
            parts.append(parquet(paths) if parquet is not None else _parquet(spark, spark_schema, paths))
        else:
            part = read_with_arrow(spark, fmt, fields, spark_schema.fields, paths, mapping, io, identity)
            if file_ids is not None:
                part = _with_file_ids(spark, part, file_ids)
            elif keys is not True:  # (the columns of a Parquet read with these keys)
                part = part.drop(*{"_key", "_pos"} - set(_key_columns(keys, None)))
            parts.append(part)
    return union_all(parts)


# the file systems of a table none of whose files Spark's Parquet reader can read (:func:`spark_parses`)
NO_SPARK_READS = frozenset({"(none)"})


def spark_reads(path: str, schemes: frozenset[str] = frozenset()) -> bool:
    """Whether Spark's own Parquet reader reads ``path``: local files and HDFS, which every Spark serves, and the
    ``schemes`` the session says its Hadoop file systems serve (``spark.sparkberg.read.spark-file-systems``,
    :class:`~sparkberg.spark.tuning.ReadTuning`); not another object store's, which a pip-installed PySpark has
    no Hadoop connector for and which it could not open with a table's own (or vended) credentials anyway; none
    for :data:`NO_SPARK_READS`."""
    if schemes is NO_SPARK_READS:
        return False
    return store_of(path) in (LOCAL, HDFS) or ("://" in path and path.split("://", 1)[0].lower() in schemes)


def spark_parses(spark, metadata: TableMetadata) -> bool:
    """Whether Spark's Parquet reader can open the table's data files: not where a schema of the table has a
    ``variant``, ``geometry`` or ``geography`` on Spark before 4.1, whose parquet-java (1.13 in 3.5, 1.15 in 4.0)
    fails on the footer's VARIANT, GEOMETRY or GEOGRAPHY annotation, which the spec asks for, whatever the columns
    read (parquet-java 1.16, Spark 4.1's, is the first that knows them); sparkberg's Arrow reader reads those."""
    return spark_version(spark) >= (4, 1) or not any(
        isinstance(f.field_type, (T.VariantType, T.GeometryType, T.GeographyType))
        for s in metadata.schemas for f in s.index_by_id().values())


def union_all(parts: Sequence[DataFrame]) -> DataFrame:
    """The rows of all ``parts`` (non-empty; their columns matched by name)."""
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def _default_ids(t: T.IcebergType) -> set[int]:
    """Ids of the fields nested in ``t`` that have an initial-default."""
    out: set[int] = set()
    if isinstance(t, T.StructType):
        for f in t.fields:
            if f.initial_default is not None:
                out.add(f.field_id)
            out |= _default_ids(f.field_type)
    elif isinstance(t, T.ListType):
        out |= _default_ids(t.element_type)
    elif isinstance(t, T.MapType):
        out |= _default_ids(t.key_type) | _default_ids(t.value_type)
    return out


def _literal_default(f: T.NestedField, spark_type: ST.DataType) -> Column:
    """A field's initial-default as a literal of its Spark type (a struct's from its fields' defaults)."""
    if f.initial_default is None:
        return F.lit(None).cast(spark_type)
    if isinstance(f.field_type, T.StructType):  # a struct's default is {}: its fields take their own defaults
        return F.struct(*[_literal_default(c, sc.dataType).alias(sc.name)
                          for c, sc in zip(f.field_type.fields, spark_type.fields)])
    value = to_python(f.field_type, f.initial_default)
    return F.lit(str(value) if f.field_type == T.UUID else value).cast(spark_type)


def _default_column(schema: T.Schema, field_id: int, spark_type: ST.DataType) -> Column:
    """The v3 ``initial-default`` of a column (null when it has none), as a literal of its Spark type."""
    f = schema.index_by_id().get(field_id)
    return F.lit(None).cast(spark_type) if f is None else _literal_default(f, spark_type)


def _field_reader(fmt: str, fields: Sequence[T.NestedField], mapping: dict[int, list[str]] | None,
                  io: FileIO):
    """An Arrow reader of ``fields`` (by field id, else by ``mapping``) from files of format ``fmt``, opened by
    ``io`` (the table's FileIO)."""
    return ArrowFileReader(fmt, fields, arrow_schema(ST.StructType([to_spark_read_field(f) for f in fields])), mapping,
                           io=io)


def delete_file_rows(path: str, fmt: str, fields: Sequence[T.NestedField], io: FileIO
                     ) -> Iterator[pa.RecordBatch]:
    """The rows of one delete file, ``fields`` read by field id (opened by ``io``, the table's FileIO)."""
    return _field_reader(fmt, fields, None, io).read(path)


def file_table(path: str, fmt: str, fields: Sequence[T.NestedField],
                mapping: dict[int, list[str]] | None, io: FileIO) -> pa.Table:
    """The rows of one file, ``fields`` read by field id (else by ``mapping``), as one Arrow table (opened by
    ``io``, the table's FileIO)."""
    reader = _field_reader(fmt, fields, mapping, io)
    return pa.Table.from_batches(list(reader.read(path)), reader.data_schema)


def delete_row_count(d) -> int | None:
    """The rows a delete file of the plan holds, None when unknown."""
    try:
        return d["record_count"]
    except (KeyError, ValueError, IndexError):
        return None


def maybe_broadcast(df: DataFrame, rows: int | None, tuning: ReadTuning) -> DataFrame:
    """``df`` (deleted rows) broadcast to an anti-join when it holds few enough rows."""
    return F.broadcast(df) if rows is not None and rows <= tuning.broadcast_delete_rows_max else df
