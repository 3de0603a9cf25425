"""Tasks to rows: data files read by Spark's native Parquet reader with columns matched by field id,
deletes applied as anti-joins, metadata columns and row lineage added, the filter applied exactly.

Rows are matched to their task by the file path Spark reports (``_metadata.file_path``: a URI,
percent-encoded) normalized the same way as the manifest's path; position deletes and deletion
vectors by (file, ``_metadata.row_index``); equality deletes by null-safe equality on their columns.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as ST

from sparkberg.errors import NotSupportedError, ValidationError
from sparkberg.expressions.sql import referenced_names
from sparkberg.io.fileio import file_io_for, to_local_path
from sparkberg.planning.entries import PartitionLayout
from sparkberg.read.deletecache import DeleteCache, delete_cache
from sparkberg.read.fileids import FileIds
from sparkberg.read.formats import ARROW_READ_FORMATS, path_key, read_with_arrow
from sparkberg.planning.scan import partition_column
from sparkberg.spark.session import arrow_dataframe, read_parquet
from sparkberg.spark.types import FIELD_ID_KEY, to_spark_read_field, to_spark_type
from sparkberg.threads import by_threads
from sparkberg.spec import types as T
from sparkberg.spec.metadata import TableMetadata
from sparkberg.spec.metadata_columns import (
    DELETE_FILE_PATH, DELETE_FILE_POS, LAST_UPDATED_SEQUENCE_NUMBER, LINEAGE_COLUMNS, READ_COLUMNS, ROW_ID,
    ROW_POSITION,
)
from sparkberg.spec.puffin import dv_positions
from sparkberg.spec.types import UNSUPPORTED_DATA_TYPE_NAMES
from sparkberg.spec.values import to_python
from sparkberg.spark.types import arrow_schema
from sparkberg.read.formats import ArrowFileReader
from sparkberg.planning.entries import physical_spark_type
from sparkberg.lru import LRU
from sparkberg.spark.session import per_session
from sparkberg.read.fileids import FileSlots
from sparkberg.spark.session import spark_version

SPARK_CONF = {"spark.sql.parquet.fieldId.read.enabled": "true",
              "spark.sql.parquet.fieldId.read.ignoreMissing": "true"}


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


def _check_readable(schema: T.Schema) -> None:
    for f in schema.index_by_id().values():
        name = f.field_type.to_json() if not f.field_type.is_nested else ""
        if isinstance(name, str) and name.split("(")[0] in UNSUPPORTED_DATA_TYPE_NAMES:
            raise NotSupportedError(f"reading column {f.name!r} of type {f.field_type} is not supported yet")


def read_schema(schema: T.Schema, extra: Sequence[T.NestedField] = ()) -> ST.StructType:
    """The Spark schema to read data files with: every column by field id, plus ``extra`` fields."""
    return ST.StructType([to_spark_read_field(f) for f in schema.fields] + [to_spark_read_field(f) for f in extra])


def _empty(spark, schema: ST.StructType) -> DataFrame:
    return spark.createDataFrame([], schema)


def promoted_fields(metadata: TableMetadata, schema: T.Schema) -> dict[int, T.NestedField]:
    """Top-level columns of ``schema`` whose type was widened (int->long, float->double, decimal precision):
    older files store them in the narrower type."""
    out = {}
    for f in schema.fields:
        if not f.field_type.is_primitive:
            continue
        for s in metadata.schemas:
            old = s.index_by_id().get(f.field_id)
            if old is not None and old.field_type != f.field_type:
                out[f.field_id] = f
    return out


class FooterSignatures:
    """Executor side: what a Parquet footer says about the columns a read must handle per file: whether the
    file has field ids, which of the ``field_ids`` it holds (with their stored types), and, for files without
    ids, its top-level column names."""

    def __init__(self, field_ids: Sequence[int]):
        self.field_ids = set(field_ids)

    def signature(self, arrow_schema: pa.Schema) -> str:
        import json
        ids = {}

        def visit(field: pa.Field) -> None:  # every depth: nested fields may have defaults too
            fid = (field.metadata or {}).get(b"PARQUET:field_id")
            if fid is not None and int(fid) in self.field_ids:
                ids[int(fid)] = str(field.type)
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
        return json.dumps({"ids": has_ids, "present": sorted(ids.items()),
                           "names": [] if has_ids else [f.name for f in arrow_schema]})

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
            yield pa.RecordBatch.from_arrays([pa.array(paths, pa.string()), pa.array(sigs, pa.string())],
                                             names=["file_path", "signature"])


def _stored_spark_type(arrow_type: str) -> ST.DataType | None:
    if arrow_type == "int32":
        return ST.IntegerType()
    if arrow_type == "float":
        return ST.FloatType()
    m = re.match(r"decimal128\((\d+), (\d+)\)", arrow_type)
    if m:
        return ST.DecimalType(int(m.group(1)), int(m.group(2)))
    return None


def name_mapping(metadata: TableMetadata) -> dict[int, list[str]]:
    """Top-level field id -> names from ``schema.name-mapping.default`` (spec Appendix C "Name Mapping")."""
    import json
    raw = metadata.properties.get("schema.name-mapping.default")
    if not raw:
        return {}
    try:
        return {int(m["field-id"]): list(m.get("names") or []) for m in json.loads(raw) if "field-id" in m}
    except (ValueError, TypeError, KeyError) as e:
        raise ValidationError(f"table property schema.name-mapping.default is not a valid name mapping: {e}") \
            from None


def _read_parquet(spark, metadata: TableMetadata, schema: T.Schema, spark_schema: ST.StructType,
                  paths: list[str], keys: bool | str = True, file_ids: FileIds | None = None,
                  row_filter: Column | None = None) -> DataFrame:
    """Data files read by field id. Where files differ from the read schema in ways Spark's reader cannot
    bridge, they are grouped by their footers and each group is read its own way: columns widened since the
    file was written (int->long, float->double, decimal precision) are read in the stored type and cast,
    v3 columns with an ``initial-default`` that the file lacks take the default, and files without field ids
    (migrated tables) are read by the table's name mapping, or by position as Iceberg Java falls back.
    ``row_filter`` (on the Parquet relation's own columns and ``_metadata``) is applied to each relation read."""
    import json

    uuids = {f.name for f in schema.fields if f.field_type == T.UUID}

    def read(schema_: ST.StructType, files: list[str]) -> DataFrame:
        if not uuids:
            return _parquet(spark, schema_, files, keys, file_ids, row_filter)
        # uuid columns are 16-byte values in the file and strings in Spark (Iceberg's Spark type mapping)
        fields = [ST.StructField(f.name, ST.BinaryType(), True, f.metadata) if f.name in uuids else f
                  for f in schema_.fields]
        df = _parquet(spark, ST.StructType(fields), files, keys, file_ids, row_filter)
        for name in uuids & set(schema_.fieldNames()):
            df = df.withColumn(name, uuid_string(F.col(f"`{name}`")))
        return df

    promoted = promoted_fields(metadata, schema)
    defaults = {f.field_id: f for f in schema.fields if f.initial_default is not None}
    # nested fields with an initial-default, by the top-level column holding them
    nested_defaults = {f.field_id: ids for f in schema.fields if f.field_type.is_nested
                       for ids in [_default_ids(f.field_type)] if ids}
    mapping = name_mapping(metadata)
    if not promoted and not defaults and not nested_defaults and not mapping:
        return read(spark_schema, paths)
    watched = list(promoted) + list(defaults) + [i for ids in nested_defaults.values() for i in ids] + \
        list(nested_defaults)
    sigs = (spark.createDataFrame([(p,) for p in paths], "file_path string")
            .mapInArrow(FooterSignatures(watched), "file_path string, signature string")
            .collect())
    groups: dict[str, list[str]] = defaultdict(list)
    for r in sigs:
        groups[r["signature"]].append(r["file_path"])
    out = None
    for sig, files in sorted(groups.items()):
        info = json.loads(sig)
        present = {int(k): v for k, v in info["present"]}
        fields, after = [], []
        for pos, f in enumerate(spark_schema.fields):
            fid = f.metadata.get(FIELD_ID_KEY)
            if not info["ids"]:  # no field ids in this file: by name mapping, else by position
                names = info["names"]
                candidates = mapping.get(fid, []) if mapping else ([names[pos]] if pos < len(names) and
                                                                   fid == pos + 1 else [])
                found = next((n for n in candidates if n in names), None)
                if found is None:
                    after.append((f.name, _default_column(schema, fid, f.dataType)))
                    fields.append(ST.StructField(f"_missing_{pos}", f.dataType, True))
                    continue
                fields.append(ST.StructField(found, f.dataType, True))
                if found != f.name:
                    after.append((f.name, F.col(f"`{found}`")))
                continue
            if fid in defaults and fid not in present:
                fields.append(f)
                after.append((f.name, _default_column(schema, fid, f.dataType)))
                continue
            missing = nested_defaults.get(fid, set()) - set(present)
            if missing and fid in present:  # the column is there, some nested fields with defaults are not
                fields.append(f)
                after.append((f.name, _fill_defaults(F.col(f"`{f.name}`"), schema.find_field(fid).field_type,
                                                     missing, f.dataType)))
                continue
            stored = _stored_spark_type(present.get(fid, "")) if fid in promoted else None
            if stored is not None and stored != f.dataType:
                fields.append(ST.StructField(f.name, stored, True, f.metadata))
                after.append((f.name, F.col(f"`{f.name}`").cast(f.dataType)))
            else:
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
    # (SQL text: each Column built step by step costs a classic session a py4j call a step, ~0.4 ms each; and
    # each step a classic session analyses, 3-10 ms for a read: no step that adds nothing)
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
    ids = spark.createDataFrame(sorted(file_ids.by_key.items()), "_key string, _file_id int")
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
        return spark.createDataFrame(sorted((raw, key, file_ids.by_key.get(key, -1)) for raw, key in pairs),
                                     "_raw_path string, _key string, _file_id int")
    return spark.createDataFrame(sorted(pairs), "_raw_path string, _key string")


READ_FORMATS = {"parquet", *ARROW_READ_FORMATS}  # (Parquet by Spark, the others by Arrow)


def _check_formats(files: Sequence[tuple[str, str]], what: str) -> None:
    """A clear error naming the first file of a format no reader here reads ((format, path) pairs)."""
    unknown = sorted({fmt.lower() for fmt, _ in files} - READ_FORMATS)
    if unknown:
        example = next(path for fmt, path in files if fmt.lower() == unknown[0])
        raise NotSupportedError(f"reading {unknown} {what} files is not supported (e.g. {example}); "
                                f"Parquet, ORC and Avro are")


def read_files(spark, fields: Sequence[T.NestedField], files: Sequence[tuple[str, str]], what: str,
               parquet=None, mapping: dict[int, list[str]] | None = None,
               file_ids: FileIds | None = None, keys: bool | str = True) -> DataFrame:
    """The rows of ``files`` ((format, path) pairs; Parquet, ORC or Avro) with ``fields`` matched by field id,
    plus ``_key`` (the path as a join key) and ``_pos`` (the row's position in its file), as ``keys`` asks
    (:func:`_key_columns`). ``parquet`` reads the Parquet paths when the caller needs more than a plain
    field-id read."""
    spark_schema = ST.StructType([to_spark_read_field(f) for f in fields])
    _check_formats(files, what)
    by_format: dict[str, list[str]] = defaultdict(list)
    for fmt, path in files:
        by_format[fmt.lower()].append(path)
    parts = []
    for fmt, paths in sorted(by_format.items()):
        if fmt == "parquet":
            parts.append(parquet(paths) if parquet is not None else _parquet(spark, spark_schema, paths))
        else:
            part = read_with_arrow(spark, fmt, fields, spark_schema.fields, paths, mapping)
            if file_ids is not None:
                part = _with_file_ids(spark, part, file_ids)
            elif keys is not True:  # (the columns of a Parquet read with these keys)
                part = part.drop(*{"_key", "_pos"} - set(_key_columns(keys, None)))
            parts.append(part)
    return _union(parts)


def _union(parts: Sequence[DataFrame]) -> DataFrame:
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


def _fill_defaults(col: Column, t: T.IcebergType, missing: set[int], spark_type: ST.DataType) -> Column:
    """``col`` with the nested fields in ``missing`` (absent from the file) set to their initial-default;
    null structs stay null, list elements and map values are filled one by one."""
    if isinstance(t, T.StructType):
        parts = []
        for f, sf in zip(t.fields, spark_type.fields):
            child = col.getField(sf.name)
            if f.field_id in missing and f.initial_default is not None:
                child = _literal_default(f, sf.dataType)
            elif _default_ids(f.field_type) & missing:
                child = _fill_defaults(child, f.field_type, missing, sf.dataType)
            parts.append(child.alias(sf.name))
        return F.when(col.isNull(), F.lit(None).cast(spark_type)).otherwise(F.struct(*parts))
    if isinstance(t, T.ListType):
        return F.transform(col, lambda e: _fill_defaults(e, t.element_type, missing, spark_type.elementType))
    if isinstance(t, T.MapType):
        return F.transform_values(col, lambda k, v: _fill_defaults(v, t.value_type, missing, spark_type.valueType))
    return col


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


class DVDecoder:
    """Executor side: (data_file, puffin_path, content_offset, content_size_in_bytes) -> one (``_del_file``,
    ``_del_pos``) row per deleted position; with ``keys``, (data_file_id, ...) -> the deleted rows' keys
    (``_del_row``: ``data file id << 40 | pos``), as merge-on-read reads match them."""

    def __init__(self, keys: bool = False):
        self.keys = keys

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        ios: dict[str, Any] = {}
        for batch in batches:
            for r in batch.to_pylist():
                positions = _dv_positions(ios, r["puffin_path"], r["content_offset"], r["content_size_in_bytes"])
                if self.keys:
                    yield pa.RecordBatch.from_arrays([pa.array(r["data_file_id"] * _ROW_KEY_SHIFT + positions)],
                                                     names=["_del_row"])
                else:
                    yield pa.RecordBatch.from_arrays([pa.array([r["data_file"]] * len(positions), pa.string()),
                                                      pa.array(positions, pa.int64())], names=["_del_file", "_del_pos"])


class EqualityDeleteRows:
    """Executor side: equality delete files (path, format) -> their rows' equality columns (``fields``, by
    field id), once for each id the file's rows are joined on (``applies``: delete file -> the ids of the data
    files the plan applies it to, or of their sets of delete files), as ``_del_fid``."""

    def __init__(self, fields: Sequence[T.NestedField], applies: dict[str, list[int]]):
        self.fields = list(fields)
        self.applies = applies

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path, fmt in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
                yield from self.rows(path, fmt)

    def rows(self, path: str, fmt: str) -> Iterator[pa.RecordBatch]:
        """The rows of one delete file, a copy for each data file it applies to."""
        import numpy as np
        for rb in _delete_file_rows(path, fmt, self.fields):
            out = rb.schema.append(pa.field("_del_fid", pa.int32()))
            for fid in self.applies[path]:
                yield pa.RecordBatch.from_arrays(list(rb.columns) + [pa.array(np.full(rb.num_rows, fid, np.int32))],
                                                 schema=out)


class PositionDeleteRows:
    """Executor side: position delete files (path, format) -> the keys (``data file id << 40 | pos``) of the
    rows they delete from the data files they apply to (``applies``: delete file -> {data file: its id});
    rows naming any other file are dropped, as the spec's scan planning rules say. With a ``cache``
    (:mod:`sparkberg.read.deletecache`), a file decoded once is not read again by this process."""

    def __init__(self, applies: dict[str, dict[str, int]], cache: DeleteCache | None = None):
        self.applies = applies
        self.cache = cache

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path, fmt in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
                for file_ids, positions in self.positions(path, fmt):
                    rows = file_ids * _ROW_KEY_SHIFT + positions
                    yield pa.RecordBatch.from_arrays([pa.array(rows, pa.int64())], names=["_del_row"])

    def positions(self, path: str, fmt: str) -> Iterator[tuple[Any, Any]]:
        """(data file ids, positions) of the rows one delete file deletes (numpy int64 arrays, non-empty), a
        pair per batch read."""
        import numpy as np
        targets = self.applies[path]
        for names, index, positions in self.decoded(path, fmt):
            ids = np.array([targets.get(f, -1) for f in names] + [-1], np.int64)
            file_ids = ids[index]  # (index -1, a row without file or position: the last id, -1)
            keep = file_ids >= 0
            if keep.any():
                yield file_ids[keep], positions[keep]

    def decoded(self, path: str, fmt: str) -> list[tuple[tuple[str, ...], Any, Any]]:
        """The rows of one delete file, whatever files they apply to: per batch read, the data file paths it
        names, each row's index into them (-1 when its path or position is null) and each row's position
        (read-only numpy arrays, kept by the cache)."""
        if self.cache is None:
            return _decode_position_file(path, fmt)
        return self.cache.get(("position deletes", path, fmt), lambda: _decode_position_file(path, fmt),
                              lambda batches: sum(i.nbytes + p.nbytes + sum(len(n) for n in names)
                                                  for names, i, p in batches))


def _decode_position_file(path: str, fmt: str) -> list[tuple[tuple[str, ...], Any, Any]]:
    import numpy as np
    import pyarrow.compute as pc
    out = []
    for rb in _delete_file_rows(path, fmt, [DELETE_FILE_PATH, DELETE_FILE_POS]):
        files = pc.dictionary_encode(rb.column(0))
        pos = rb.column(1)
        index = files.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32)
        index[~pos.is_valid().to_numpy(zero_copy_only=False)] = -1
        positions = np.asarray(pos.fill_null(0).to_numpy(zero_copy_only=False), np.int64)
        index.flags.writeable = positions.flags.writeable = False
        out.append((tuple(files.dictionary.to_pylist()), index, positions))
    return out


class DeletedPositions:
    """Executor (or driver) side: groups of position delete sources (a JSON ``unit`` per input row:
    ``files``, position delete files as [path, format]; ``dvs``, deletion vectors as [puffin path, offset,
    size, data file id]) -> one (``_bm_file``, ``_bitmap``) row per data file they delete rows from: bit
    ``pos % 64`` of ``_bitmap[pos // 64]`` is set for each deleted position. The planner groups sources so
    that every source of a data file is in the same unit, hence one row per data file. ``targets``: position
    delete file -> {data file: its id} (what the plan applies it to: rows naming other files are dropped, as
    the spec's scan planning says); ``limits``: data file id -> its record count (positions at or past it
    name no row). With a ``cache``, the sources this process decoded once are not read again."""

    SCHEMA = pa.schema([pa.field("_bm_file", pa.int32()), pa.field("_bitmap", pa.list_(pa.int64()))])
    # (a StructType, which PySpark need not ask Spark to parse as it would a DDL string)
    SPARK_SCHEMA = ST.StructType([ST.StructField("_bm_file", ST.IntegerType()),
                                  ST.StructField("_bitmap", ST.ArrayType(ST.LongType()))])

    def __init__(self, targets: dict[str, dict[str, int]], limits: dict[int, int], cache: DeleteCache | None = None):
        self.rows = PositionDeleteRows(targets, cache)
        self.limits = limits

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        ios: dict[str, Any] = {}
        for batch in batches:
            for text in batch.column(0).to_pylist():
                bitmaps = self.unit(text, ios)
                if bitmaps is not None:
                    yield bitmaps

    def unit(self, text: str, ios: dict[str, Any]) -> pa.RecordBatch | None:
        """The bitmaps of one unit (None when its sources delete no row of the files they apply to)."""
        found = self.found(text, ios)
        return self._bitmaps(found) if found else None

    def found(self, text: str, ios: dict[str, Any]) -> dict[int, list]:
        """The positions one unit's sources delete, as arrays by data file id."""
        import json

        import numpy as np
        unit = json.loads(text)
        found: dict[int, list] = defaultdict(list)
        for path, fmt in unit["files"]:
            for ids, positions in self.rows.positions(path, fmt):
                first = ids[0]
                if ids[-1] == first and (ids == first).all():  # (the usual case: a file's rows are together)
                    found[int(first)].append(positions)
                    continue
                for fid in np.unique(ids):
                    found[int(fid)].append(positions[ids == fid])
        for path, offset, size, fid in unit["dvs"]:
            found[fid].append(self._dv(ios, path, offset, size))
        return found

    def _dv(self, ios: dict[str, Any], path: str, offset: int, size: int):
        cache = self.rows.cache
        if cache is None:
            return _dv_positions(ios, path, offset, size)

        def load():
            positions = _dv_positions(ios, path, offset, size)
            positions.flags.writeable = False
            return positions
        return cache.get(("deletion vector", path, offset, size), load, lambda positions: positions.nbytes)

    def on_driver(self, units: list[str], extra: dict[int, Any] | None = None) -> pa.Table:
        """The bitmaps of all ``units``, decoded by a thread per core (Arrow reads the files without the GIL),
        with the positions of ``extra`` (numpy arrays by data file id: the rows equality deletes delete)."""
        ios: dict[str, Any] = {}
        found: dict[int, list] = defaultdict(list)
        for part in by_threads(lambda text: self.found(text, ios), units):
            for fid, positions in part.items():  # (units share no data file)
                found[fid].extend(positions)
        for fid, positions in (extra or {}).items():
            if len(positions):
                found[fid].append(positions)
        return pa.Table.from_batches([self._bitmaps(found)] if found else [], self.SCHEMA)

    def _bitmaps(self, found: dict[int, list]) -> pa.RecordBatch:
        import numpy as np
        ids, words, offsets = [], [], [0]
        for fid, parts in found.items():
            pos = np.concatenate(parts)
            pos = pos[(pos >= 0) & (pos < self.limits[fid])]
            if not len(pos):
                continue
            if len(pos) > 1 and (pos[1:] < pos[:-1]).any():  # (delete files are sorted by position: rarely)
                pos = np.sort(pos)
            word = pos >> 6  # (a position repeated sets its bit twice: the same word)
            starts = np.flatnonzero(np.diff(word, prepend=-1))
            bits = np.zeros(int(word[-1]) + 1, np.uint64)
            bits[word[starts]] = np.bitwise_or.reduceat(np.left_shift(np.uint64(1), (pos & 63).astype(np.uint64)),
                                                        starts)
            words.append(bits.view(np.int64))
            ids.append(fid)
            offsets.append(offsets[-1] + len(words[-1]))
        values = pa.array(np.concatenate(words) if words else np.zeros(0, np.int64), pa.int64())
        return pa.RecordBatch.from_arrays([pa.array(ids, pa.int32()), pa.ListArray.from_arrays(
            pa.array(offsets, pa.int32()), values)], schema=self.SCHEMA)


def _equality_rows_on_driver(fields: list[T.NestedField], applies: dict[str, set[int]], formats: dict[str, str],
                             cache: DeleteCache | None) -> pa.Table:
    """What :func:`_equality_delete_rows` gives, as an Arrow table made here: each file decoded by a thread per
    core (Arrow reads without the GIL), once per process with a ``cache``, its rows once for each id it is joined
    on."""
    import numpy as np

    columns = arrow_schema(ST.StructType([to_spark_read_field(f) for f in fields]))  # (as _delete_file_rows reads)
    schema = columns.append(pa.field("_del_fid", pa.int32()))
    paths = sorted(applies)
    tables = by_threads(lambda path: _equality_file_rows(path, formats[path], fields, cache), paths)
    parts = [table.append_column(schema.field("_del_fid"), pa.array(np.full(table.num_rows, fid, np.int32)))
             for path, table in zip(paths, tables) for fid in sorted(applies[path])]
    return pa.concat_tables(parts).combine_chunks() if parts else schema.empty_table()


def _equality_file_rows(path: str, fmt: str, fields: Sequence[T.NestedField], cache: DeleteCache | None) -> pa.Table:
    """The rows of one equality delete file (its ``fields``, by field id), decoded once per process with a
    ``cache``."""
    def load() -> pa.Table:
        return _file_table(path, fmt, fields)
    if cache is None:
        return load()
    return cache.get(("equality deletes", path, fmt, tuple(f.field_id for f in fields)), load, lambda t: t.nbytes)


def _field_reader(fmt: str, fields: Sequence[T.NestedField], mapping: dict[int, list[str]] | None = None):
    """An Arrow reader of ``fields`` (by field id, else by ``mapping``) from files of format ``fmt``."""
    return ArrowFileReader(fmt, fields, arrow_schema(ST.StructType([to_spark_read_field(f) for f in fields])), mapping)


def _delete_file_rows(path: str, fmt: str, fields: Sequence[T.NestedField]) -> Iterator[pa.RecordBatch]:
    """The rows of one delete file, ``fields`` read by field id."""
    return _field_reader(fmt, fields).read(path)


def _file_table(path: str, fmt: str, fields: Sequence[T.NestedField],
                mapping: dict[int, list[str]] | None = None) -> pa.Table:
    """The rows of one file, ``fields`` read by field id (else by ``mapping``), as one Arrow table."""
    reader = _field_reader(fmt, fields, mapping)
    return pa.Table.from_batches(list(reader.read(path)), reader.data_schema)


def _dv_positions(ios: dict[str, Any], path: str, offset: int, size: int):
    """The positions (numpy int64) of the DV at ``offset`` of a Puffin file; ``ios``: FileIOs by scheme."""
    import numpy as np
    scheme = path.split("://", 1)[0] if "://" in path else "file"
    io = ios.get(scheme) or ios.setdefault(scheme, file_io_for(path))
    return np.asarray(dv_positions(io.read_range(path, offset, size), path), np.int64)


def _expression_text(filter: str | Column) -> str:
    """A filter's SQL text: a Column's as PySpark renders it (``Column<'(id = 1)'>``)."""
    if isinstance(filter, str):
        return filter
    text = str(filter)
    m = re.match(r"^Column<'(.*)'>$", text, re.S)
    return m.group(1) if m else text


def read_tasks(spark, metadata: TableMetadata, schema: T.Schema, tasks: list, layout: PartitionLayout,
               columns: Sequence[str] | None, filter: str | Column | None) -> DataFrame:
    """Rows of the given scan tasks (collected rows of the plan), projected to ``columns``."""
    ensure_session_conf(spark)
    _check_readable(schema)
    v3 = metadata.format_version >= 3
    wanted = list(columns) if columns is not None else [f.name for f in schema.fields]
    for c in wanted:
        if c in READ_COLUMNS:
            if c in LINEAGE_COLUMNS and not v3:
                raise ValidationError(f"metadata column {c!r} exists only on v3 tables (this table is "
                                      f"v{metadata.format_version})")
        elif schema.as_struct.field_by_name(c) is None:
            raise ValidationError(f"unknown column {c!r}; columns are {[f.name for f in schema.fields]} and the "
                                  f"metadata columns {list(READ_COLUMNS)}")
    # equality delete columns missing from this schema (dropped later) are read under hidden names
    all_fields = {}
    for s in metadata.schemas:
        all_fields.update(s.index_by_id())
    current_ids = set(schema.index_by_id())
    eq_ids = sorted({i for t in tasks for d in t["deletes"] if d["content"] == 2 for i in d["equality_ids"] or ()})
    hidden = [T.NestedField(i, f"_eq_{i}", all_fields[i].field_type) for i in eq_ids if i not in current_ids
              and i in all_fields]
    lineage = [ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER] if v3 else []
    spark_schema = read_schema(schema, hidden + lineage)
    output_schema = ST.StructType([to_spark_read_field(f) for f in schema.fields])
    if not tasks:
        return _select(_empty(spark, _with_metadata(output_schema, layout, v3)), wanted)
    fields = list(schema.fields) + hidden + lineage
    has_deletes = any(t["deletes"] for t in tasks)
    # rows are matched to their task (a join on their file) only for deletes and metadata columns
    # metadata columns come from the task of each row's file (a join on its file id)
    needs_info = any(c in READ_COLUMNS and c != ROW_POSITION.name for c in wanted) or (
        filter is not None and bool(referenced_names(_expression_text(filter)) & set(READ_COLUMNS)))
    per_file = has_deletes or needs_info  # rows matched to their file, by its name or its path
    ids = FileIds([t["file_path"] for t in tasks]) if per_file else None

    def read(some: list, matched: bool = True, row_filter: Column | None = None) -> DataFrame:
        """The rows of ``some`` tasks; ``matched``: each with its file's id (``_file_id``, in a per-file read),
        else with ``_pos`` only when the read wants it; ``row_filter``: applied to the Parquet relations."""
        matched = matched and per_file
        keys = True if matched else "pos" if "_pos" in wanted else False
        file_ids = ids if matched else None
        return read_files(spark, fields, [(t["file_format"], t["file_path"]) for t in some], "data",
                          parquet=lambda paths: _read_parquet(spark, metadata, schema, spark_schema, paths,
                                                              keys=keys, file_ids=file_ids, row_filter=row_filter),
                          mapping=name_mapping(metadata), file_ids=file_ids, keys=keys)

    # the columns of an unmatched read, in order: the read schema's, and _pos when wanted
    plain_columns = spark_schema.fieldNames() + (["_pos"] if "_pos" in wanted else [])
    if not per_file:
        rows = read(tasks)
        if filter is not None:
            rows = rows.filter(filter)
        return rows if wanted == plain_columns else _select(rows, wanted)
    # equality deletes found here as the positions they delete, where they can be (None: joined by Spark)
    derived = _equality_positions(metadata, tasks, ids.ids, all_fields, delete_cache(spark)) \
        if has_deletes else {}
    if derived:  # data files whose equality deletes delete none of their rows, and no other delete applies
        untouched = {i for i, p in derived.items() if not len(p)}
        tasks = [dict(t.asDict() if hasattr(t, "asDict") else t, deletes=[])
                 if i in untouched and all(d["content"] == 2 for d in t["deletes"]) else t
                 for i, t in zip(ids.ids, tasks)]

    # only the rows of files that deletes apply to are matched against them, and only those of files that
    # equality deletes apply to against those: each kind of file is read apart and the parts unioned
    def has_eq(t) -> bool:
        return derived is None and any(d["content"] == 2 for d in t["deletes"])

    def pick(keep) -> tuple[list, list[int]]:
        ks = [k for k, t in enumerate(tasks) if keep(t)]
        return [tasks[k] for k in ks], [ids.ids[k] for k in ks]

    rows, columns_now = None, None  # (columns_now: the rows' columns in order, where known here)
    # deletes that are all by position (equality deletes found as positions included), in Parquet files, for a
    # read without metadata columns: a filter on the Parquet relations themselves (Spark 4), where it can be
    scan_filter, sources = None, None
    if not needs_info and derived is not None:  # (then every file with deletes is matched by position alone)
        some, some_ids = pick(lambda t: t["deletes"])
        if some and all(t["file_format"].lower() == "parquet" for t in some):
            sources = PositionSources.of(some, some_ids, derived)
            scan_filter = _scan_filter(spark, some, some_ids, sources)
        if scan_filter is not None:
            rows, columns_now = read(some, matched=False, row_filter=scan_filter), plain_columns
    deleted_tasks, deleted_ids = [], []
    for equality, (some, some_ids) in ((True, pick(has_eq)), (False, pick(lambda t: t["deletes"] and not has_eq(t)))):
        if some and scan_filter is None:
            part = read(some)
            if equality:
                part = _apply_equality_deletes(spark, metadata, part, some, some_ids, schema, all_fields, hidden)
            rows = part if rows is None else rows.unionByName(part)
            deleted_tasks, deleted_ids = deleted_tasks + some, deleted_ids + some_ids
    if deleted_tasks:  # position deletes once over both kinds (a delete file may apply to files of each)
        # (the sources the scan filter declined are those of the same files, in the same order)
        rows = _apply_position_deletes(spark, rows, sources or PositionSources.of(deleted_tasks, deleted_ids, derived))
    plain = pick(lambda t: not t["deletes"])[0]
    if plain:  # rows no delete applies to are matched to their file only for metadata columns
        part = read(plain, matched=needs_info)
        if rows is None:
            rows, columns_now = part, None if needs_info else plain_columns
        elif needs_info:
            rows = rows.unionByName(part, allowMissingColumns=True)
        elif columns_now == plain_columns:
            rows = rows.union(part)
        else:  # (deletes applied, the rows need no match to their file: both sides take the plain columns)
            rows, columns_now = _select(rows, plain_columns).union(part), plain_columns
    if needs_info:
        info_schema = ST.StructType([
            ST.StructField("_file_id", ST.IntegerType()), ST.StructField("_file", ST.StringType()),
            ST.StructField("_spec_id", ST.IntegerType()),
            ST.StructField("_phys_partition", physical_partition_struct(layout)),
            ST.StructField("_data_seq", ST.LongType()), ST.StructField("_first_row_id", ST.LongType())])
        info = spark.createDataFrame(
            [(i, t["file_path"], t["spec_id"], t["partition"], t["data_sequence_number"], t["first_row_id"])
             for i, t in zip(ids.ids, tasks)], info_schema)
        rows = rows.join(F.broadcast(info), "_file_id")
    if "_partition" in wanted:  # (an unpartitioned table's is an empty struct, which Spark 3.5 cannot encode)
        rows = rows.withColumn("_partition", partition_column(layout, "_phys_partition"))
    if v3 and needs_info:
        has_id = F.col("_first_row_id").isNotNull()
        rows = (rows.withColumn("_row_id", F.when(has_id, F.coalesce(F.col("_row_id"), F.col("_first_row_id") +
                                                                   F.col("_pos"))))
                .withColumn("_last_updated_sequence_number", F.when(has_id, F.coalesce(
                    F.col("_last_updated_sequence_number"), F.col("_data_seq")))))
    if filter is not None:
        rows = rows.filter(filter)
    return rows if wanted == columns_now else _select(rows, wanted)


def physical_partition_struct(layout: PartitionLayout) -> ST.StructType:
    """The Spark struct of the layout's physical partition values (as in the entries DataFrame)."""
    if not layout.slots:
        return ST.StructType([ST.StructField("_none", ST.IntegerType())])
    return ST.StructType([ST.StructField(s.name, physical_spark_type(s.field_type)) for s in layout.slots])


def _with_metadata(schema: ST.StructType, layout: PartitionLayout, v3: bool) -> ST.StructType:
    fields = list(schema.fields) + [ST.StructField("_file", ST.StringType()), ST.StructField("_pos", ST.LongType()),
                                    ST.StructField("_spec_id", ST.IntegerType()),
                                    ST.StructField("_partition", _typed_partition(layout))]
    if v3:
        fields += [ST.StructField("_row_id", ST.LongType()),
                   ST.StructField("_last_updated_sequence_number", ST.LongType())]
    return ST.StructType(fields)


def _typed_partition(layout: PartitionLayout) -> ST.StructType:
    if not layout.slots:
        return ST.StructType([])
    return ST.StructType([ST.StructField(s.name, to_spark_type(s.field_type)) for s in layout.slots])


def _select(df: DataFrame, wanted: Sequence[str]) -> DataFrame:
    return df.selectExpr(*["`" + c.replace("`", "``") + "`" for c in wanted])


# deletes with up to this many rows (per data file they apply to) are broadcast to the data rows: an anti-join
# with no shuffle of the table's rows; beyond, Spark shuffles both sides
BROADCAST_DELETE_ROWS_MAX = 2_000_000
_ROW_KEY_SHIFT = 1 << 40  # (file id, position) as one long: positions stay below 2^40 rows per file


def _delete_rows(d) -> int | None:
    try:
        return d["record_count"]
    except (KeyError, ValueError, IndexError):
        return None


def _maybe_broadcast(df: DataFrame, rows: int | None) -> DataFrame:
    return F.broadcast(df) if rows is not None and rows <= BROADCAST_DELETE_ROWS_MAX else df


# position deletes reach the rows as one bitmap per data file while those bitmaps (sized by the files' record
# counts) stay below this; beyond, as (file, position) keys of an anti-join
BITMAP_BYTES_MAX = 64 << 20
# up to this many deleted rows, position deletes become bitmaps on the driver (500k positions in 48 files: ~0.22 s,
# where a Spark job costs ~0.3 s more) and equality delete files are decoded there; beyond, on the executors
DRIVER_DELETE_ROWS_MAX = 1_000_000


@dataclass
class PositionSources:
    """What deletes rows by position from a set of data files (by data file id): position delete files
    (``applies``: delete file -> {data file: id}; ``formats``), DVs (``dvs``: (id, puffin path, offset, size)),
    and the positions equality deletes were found to delete (``derived``: numpy arrays by id); ``limits``: each
    such file's record count; ``total``: the rows of the delete files (None if one does not say); ``key``: what
    the bitmaps they make are made of."""

    applies: dict[str, dict[str, int]]
    formats: dict[str, str]
    dvs: list
    limits: dict[int, int]
    total: int | None
    derived: dict[int, Any]
    key: tuple

    @classmethod
    def of(cls, tasks: list, ids: list[int], derived: dict[int, Any] | None) -> PositionSources:
        """The sources of ``tasks`` (``ids``: their data files' ids) and of ``derived``."""
        applies: dict[str, dict[str, int]] = defaultdict(dict)
        formats: dict[str, str] = {}
        dvs = []
        limits: dict[int, int] = {}
        total: int | None = 0
        for i, t in zip(ids, tasks):
            for d in t["deletes"]:
                if d["content"] != 1:
                    continue
                n = _delete_rows(d)
                total = None if total is None or n is None else total + n
                limits[i] = t["record_count"]
                if d["file_format"] == "puffin":
                    dvs.append((i, d["file_path"], d["content_offset"], d["content_size_in_bytes"]))
                else:
                    applies[d["file_path"]][t["file_path"]] = i
                    formats[d["file_path"]] = d["file_format"].lower()
        derived = {i: p for i, p in (derived or {}).items() if len(p)}
        if derived:
            limits.update((i, t["record_count"]) for i, t in zip(ids, tasks) if i in derived)
        # the delete sources are in the units (made from these), with the data files they apply to
        equality = {i: tuple(sorted(d["file_path"] for d in t["deletes"] if d["content"] == 2))
                    for i, t in zip(ids, tasks) if i in derived}
        key = (tuple(sorted((p, tuple(sorted(targets.items()))) for p, targets in applies.items())),
               tuple(sorted(limits.items())),
               tuple(sorted((i, t["file_path"], equality[i]) for i, t in zip(ids, tasks) if i in derived)))
        if applies:
            _check_formats([(f, p) for p, f in formats.items()], "position delete")
        return cls(dict(applies), formats, dvs, limits, total, derived, key)

    @property
    def empty(self) -> bool:
        """Whether no row is deleted by position."""
        return not self.applies and not self.dvs and not self.derived

    @property
    def as_bitmaps(self) -> bool:
        """Whether they become bitmaps (at most :data:`BITMAP_BYTES_MAX` of them)."""
        return sum(n // 8 + 8 for n in self.limits.values()) <= BITMAP_BYTES_MAX

    @property
    def on_driver(self) -> bool:
        """Whether the driver decodes them (few rows: cheaper than a Spark job)."""
        return self.total is not None and self.total <= DRIVER_DELETE_ROWS_MAX

    def units(self) -> list[str]:
        """The delete files and DVs in groups for :class:`DeletedPositions` (:func:`_position_delete_units`)."""
        return _position_delete_units(self.applies, self.formats, self.dvs)


def _apply_position_deletes(spark, rows: DataFrame, src: PositionSources) -> DataFrame:
    """Rows minus those that the position delete files and DVs of ``src`` delete, and those at its derived
    positions (what equality deletes delete, found by :func:`_equality_positions`).
    The delete files are decoded on the driver when they hold few rows, else on the executors: each position
    delete file's rows are kept only for the data files it applies to (by the plan), each DV's positions
    belong to its one data file. They become a bitmap of deleted positions per data file, broadcast and looked
    up by each row's file id and position (a join with one small row per data file, then a bit test), as
    Iceberg Java's readers test each row against its file's deleted positions; very large ones become (file
    id, position) keys of an anti-join."""
    if src.empty:
        return rows
    applies, formats, dvs, derived = src.applies, src.formats, src.dvs, src.derived
    if src.as_bitmaps:
        units = src.units()
        cache = delete_cache(spark)
        decoder = DeletedPositions(applies, src.limits, cache)
        if src.on_driver:  # cheaper here than as a Spark job
            return _bitmap_filter(rows, _kept_frame(spark, cache, ("bitmaps", tuple(units)) + src.key,
                                                    lambda: decoder.on_driver(units, derived),
                                                    DeletedPositions.SPARK_SCHEMA))
        if derived:  # (found here: their own bitmaps)
            rows = _bitmap_filter(rows, _kept_frame(spark, cache, ("bitmaps", ()) + src.key,
                                                    lambda: decoder.on_driver([], derived),
                                                    DeletedPositions.SPARK_SCHEMA))
        if not units:
            return rows
        return _bitmap_filter(rows, spark.createDataFrame([(u,) for u in units], "unit string").mapInArrow(
            decoder, DeletedPositions.SPARK_SCHEMA))
    deleted = []
    if derived:
        import numpy as np
        keys = [np.asarray(p, np.int64) + i * _ROW_KEY_SHIFT for i, p in derived.items()]
        deleted.append(arrow_dataframe(spark, pa.table({"_del_row": pa.array(np.concatenate(keys), pa.int64())}),
                                       "_del_row bigint"))
    if applies:
        files = spark.createDataFrame(sorted(formats.items()), "delete_file string, file_format string")
        deleted.append(files.mapInArrow(PositionDeleteRows(dict(applies)), "_del_row bigint"))
    if dvs:
        refs = spark.createDataFrame(dvs, "data_file_id int, puffin_path string, content_offset bigint, "
                                          "content_size_in_bytes bigint")
        deleted.append(refs.mapInArrow(DVDecoder(keys=True), "_del_row bigint"))
    d = _union(deleted)
    rows = rows.withColumn("_row", F.col("_file_id").cast("bigint") * _ROW_KEY_SHIFT + F.col("_pos"))
    return rows.join(_maybe_broadcast(d, src.total), rows["_row"] == d["_del_row"], "left_anti").drop("_row")


def _kept_frame(spark, cache: DeleteCache | None, key: tuple, make, schema: ST.StructType) -> DataFrame:
    """The Arrow table ``make()`` returns (bitmaps of deleted positions) as a DataFrame of ``schema``, which the
    session keeps by ``key`` (what the table is made of) while the delete cache is on: a repeated read of a
    merge-on-read table neither remakes its bitmaps nor sends them to Spark again (~20 ms of each read of 48
    data files with deletes on Spark 4). At most a quarter of the delete cache's bound is kept, in at most
    :data:`KEPT_FRAMES` DataFrames. (A kept DataFrame joined into several reads keeps its columns' ids: Spark
    gives a relation that appears twice in one query new ids, as it does for a table read twice.)"""
    kept = per_session(spark, "bitmaps", LRU) if cache is not None else None
    hit = kept.get(key) if kept is not None else None
    if hit is not None:
        return hit
    table = make()
    out = arrow_dataframe(spark, table, schema)
    if kept is not None and table.nbytes <= cache.max_bytes // 4:
        kept.put(key, out, table.nbytes, cache.max_bytes // 4, KEPT_FRAMES)
    return out


KEPT_FRAMES = 32  # bitmap DataFrames a session keeps (_kept_frame)
SLOT_BITS_MAX = 16  # a scan filter's table of bitmaps has at most 2 ** this many entries (_scan_filter)
_SLOTS_SCHEMA = ST.StructType([ST.StructField("_bitmaps", ST.ArrayType(ST.ArrayType(ST.LongType())))])


def _scan_filter(spark, tasks: list, ids: list[int], src: PositionSources) -> Column | None:
    """A filter for the rows of the data files of ``tasks`` (``ids``: their ids; all Parquet) that drops the
    rows their position deletes, DVs and derived positions (``src``) delete, to apply straight to Spark's Parquet
    relation: bit ``_metadata.row_index`` of the bitmap of the row's file, found by the file's slot
    (:class:`FileSlots`) in one array of every file's bitmap, which a scalar subquery reads from a one-row local
    relation. No join, so no broadcast stage for Spark's adaptive execution to run and plan around, and no
    column added to the rows: the rows of files with deletes keep the plain read's columns, so they union with
    the rest of the table's as they are. (``count(*), sum(x)`` of 10M rows, 1M of them in 48 files with
    position deletes, on Spark 4.3: x1.37 -> x1.22-1.27 the read without deletes.) Needs Spark 4
    (``DataFrame.scalar``; Spark 3.5's analyzer also fails a join on ``_metadata``); None where the rows take
    :func:`_apply_position_deletes` instead: Spark 3.5, deletes too many to decode on the driver, or slots
    that need more than :data:`SLOT_BITS_MAX` bits."""
    from pyspark.sql import DataFrame as AnyDataFrame

    if not hasattr(AnyDataFrame, "scalar") or spark_version(spark) < (4, 0):
        return None
    if src.empty or not (src.as_bitmaps and src.on_driver):
        return None
    slots = FileSlots.of([t["file_path"] for t in tasks], SLOT_BITS_MAX)
    if slots is None:
        return None
    units = src.units()
    cache = delete_cache(spark)
    decoder = DeletedPositions(src.applies, src.limits, cache)
    slot_of = dict(zip(ids, slots.slots))
    one = _kept_frame(spark, cache, ("slots", tuple(units), slots.shift, slots.bits) + src.key,
                      lambda: _by_slot(decoder.on_driver(units, src.derived), slot_of, slots.bits), _SLOTS_SCHEMA)
    word = F.get(F.get(one.scalar(), F.expr(slots.sql())), F.expr("int(shiftright(_metadata.row_index, 6))"))
    return F.coalesce(word.bitwiseAND(F.expr("shiftleft(1L, int(_metadata.row_index & 63))")), F.lit(0)) == 0


def _by_slot(bitmaps: pa.Table, slot_of: dict[int, int], bits: int) -> pa.Table:
    """:class:`DeletedPositions` rows as one row: the array of ``2 ** bits`` bitmaps, each file's at its slot
    (null where no file's is)."""
    rows: list[int | None] = [None] * (1 << bits)
    for row, fid in enumerate(bitmaps.column("_bm_file").to_pylist()):
        rows[slot_of[fid]] = row
    by_slot = bitmaps.column("_bitmap").combine_chunks().take(pa.array(rows, pa.int32()))
    return pa.table({"_bitmaps": pa.ListArray.from_arrays(pa.array([0, len(rows)], pa.int32()), by_slot)})


def _bitmap_filter(rows: DataFrame, bitmaps: DataFrame) -> DataFrame:
    """Rows minus those whose position is set in their file's bitmap (:class:`DeletedPositions` rows): a
    broadcast join with one small row per data file and a bit test."""
    # (one left anti-join on the file id, the bit test its condition: a single step for the session to analyse)
    return rows.join(F.broadcast(bitmaps), F.expr(
        "_file_id = _bm_file AND get(_bitmap, int(shiftright(_pos, 6))) & shiftleft(1L, int(_pos & 63)) != 0"),
        "left_anti")


def _position_delete_units(applies: dict[str, dict[str, int]], formats: dict[str, str], dvs: list) -> list[str]:
    """The position delete sources grouped so that all the sources of a data file are in one group (connected
    by the data files they share), each group a JSON unit for :class:`DeletedPositions`."""
    import json
    parent: dict = {}

    def root(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for path, targets in applies.items():
        for fid in targets.values():
            parent[root(("file", path))] = root(("data", fid))
    for i, (fid, *_rest) in enumerate(dvs):
        parent[root(("dv", i))] = root(("data", fid))
    units: dict = defaultdict(lambda: {"files": [], "dvs": []})
    for path in sorted(applies):
        units[root(("file", path))]["files"].append([path, formats[path]])
    for i, (fid, path, offset, size) in enumerate(dvs):
        units[root(("dv", i))]["dvs"].append([path, offset, size, fid])
    return [json.dumps(u) for u in units.values()]


def _apply_equality_deletes(spark, metadata: TableMetadata, rows: DataFrame, tasks: list, file_ids: list[int],
                            schema: T.Schema, all_fields: dict, hidden: list) -> DataFrame:
    """Rows minus those that equality delete files delete: an anti-join per set of equality columns on the
    row's data file (the files each delete file applies to, by the plan) and its values of those columns
    (null-safe, as the spec's null equality; :func:`_equality_condition`), the deleted rows broadcast when few.
    Data files that the same delete files apply to (a partition's files older than its deletes) are joined
    through one id of that set of delete files, so each delete row is there once per set, not once per file."""
    groups: dict[tuple, list] = defaultdict(list)
    for i, t in zip(file_ids, tasks):
        for d in t["deletes"]:
            if d["content"] == 2:
                groups[tuple(d["equality_ids"] or ())].append((d["file_path"], d["file_format"], i, _delete_rows(d)))
    hidden_ids = {f.field_id for f in hidden}
    for ids, entries in groups.items():
        if not ids:
            raise ValidationError(f"equality delete file {entries[0][0]} has no equality_ids")
        fields = []
        for i in ids:
            f = all_fields.get(i)
            if f is None:
                raise ValidationError(f"equality delete file {entries[0][0]} uses field id {i}, unknown to the table")
            fields.append(T.NestedField(i, f"_eqd_{i}", f.field_type))
        formats: dict[str, str] = {}
        sizes: dict[str, int | None] = {}
        per_file: dict[int, set[str]] = defaultdict(set)  # data file id -> the delete files that apply to it
        for path, fmt, fid, n in entries:
            formats[path], sizes[path] = fmt.lower(), n
            per_file[fid].add(path)
        _check_formats([(f, p) for p, f in formats.items()], "equality delete")
        set_ids: dict[frozenset, int] = {}
        set_of = {fid: set_ids.setdefault(frozenset(paths), len(set_ids)) for fid, paths in per_file.items()}
        shared = len(set_ids) < len(set_of)  # (else each data file is its own set: joined on its id)
        applies: dict[str, set[int]] = defaultdict(set)  # delete file -> the ids its rows are joined on
        for fid, paths in per_file.items():
            for path in paths:
                applies[path].add(set_of[fid] if shared else fid)
        total = sum(len(keys) * sizes[p] for p, keys in applies.items()) if None not in sizes.values() else None
        eq = _equality_delete_rows(spark, metadata, fields, applies, formats, total)
        if shared:  # each row with the id of its file's set of delete files (null for files without any)
            pairs = pa.table({"_file_id": pa.array(list(set_of), pa.int32()),
                              "_eq_set": pa.array(list(set_of.values()), pa.int32())})
            rows = rows.join(F.broadcast(arrow_dataframe(spark, pairs, "_file_id int, _eq_set int")), "_file_id",
                             "left")
        by_id = schema.index_by_id()
        row_cols = []
        for i in ids:
            if i in hidden_ids:
                row_cols.append(rows[f"_eq_{i}"])
            else:
                name = schema.name_of(i)
                if name is None or i not in by_id:
                    raise ValidationError(f"equality delete column id {i} is not readable")
                row_cols.append(rows[name] if "." not in name else F.col(name))
        cond = _equality_condition(rows["_eq_set" if shared else "_file_id"], row_cols, eq["_del_fid"],
                                   [eq[f.name] for f in fields],
                                   hashed=EQUALITY_JOIN_HASHED and not any(f.field_type in (T.FLOAT, T.DOUBLE)
                                                                           for f in fields))
        rows = rows.join(_maybe_broadcast(eq, total), cond, "left_anti")
        if shared:
            rows = rows.drop("_eq_set")
    return rows


# equality deletes joined through one hashed key (else through the file id and each null-safe value)
EQUALITY_JOIN_HASHED = True


def _equality_key(file: Column, values: list[Column]) -> Column:
    """The key rows and equality deletes are joined on: equal for the same file and values."""
    return F.xxhash64(file, *values)


def _equality_condition(row_file: Column, row_cols: list[Column], del_file: Column, del_cols: list[Column],
                        hashed: bool) -> Column:
    """The join condition of rows and the equality deletes that delete them: the same data file and null-safe
    equal values (spec "Equality Delete Files": null equals null). ``hashed``: through one key, a hash of the
    file and the values, then the pairs that share it checked exactly. Spark joins on a single long key with
    its fastest hashed relation (the plain condition's keys, file id and each value and its nullness, need a
    generic one: ~15% slower on 1M rows against 500k deletes). Not for floating-point columns, whose hash
    tells 0.0 from -0.0."""
    if not hashed:
        cond = row_file == del_file
        for r, d in zip(row_cols, del_cols):
            cond = cond & r.eqNullSafe(d)
        return cond
    # (the exact checks are written so that Spark does not take them for join keys: they run on the pairs the
    # key matches)
    cond = _equality_key(row_file, row_cols) == _equality_key(del_file, del_cols)
    cond = cond & F.coalesce(row_file == del_file, F.lit(False))
    for r, d in zip(row_cols, del_cols):
        cond = cond & F.coalesce(r == d, r.isNull() & d.isNull())
    return cond


# Parquet equality delete files are read by Spark's reader (else, as other formats, decoded in Python)
EQUALITY_DELETES_BY_SPARK = True


def _equality_delete_rows(spark, metadata: TableMetadata, fields: list[T.NestedField], applies: dict[str, set[int]],
                          formats: dict[str, str], rows: int | None = None) -> DataFrame:
    """The rows of equality delete files (``fields``: their equality columns, as ``_eqd_<id>``), a copy for each
    id a file's rows are joined on (``_del_fid``: of the data files it applies to, or of their sets of delete
    files). Up to :data:`DRIVER_DELETE_ROWS_MAX` of them (``rows``, the copies counted), the files are decoded
    on the driver, each once per process (the delete cache), and the rows reach Spark as Arrow batches: 10M
    rows against 500k deleted keys in 480 files, warm, ~0.80 -> ~0.75 s. Beyond, Parquet files whose columns are
    all top-level are read by Spark itself, each row's delete file known by its name (:class:`FileIds`) and
    joined to the data files it applies to: no Python worker, whose start costs more than reading a few small
    files (48 files, 500k rows: ~0.6 s as a mapInArrow job). Others are decoded by :class:`EqualityDeleteRows`
    on the executors."""
    spark_fields = [to_spark_read_field(f) for f in fields]
    if rows is not None and rows <= DRIVER_DELETE_ROWS_MAX:
        schema = ST.StructType(spark_fields + [ST.StructField("_del_fid", ST.IntegerType())])
        return arrow_dataframe(spark, _equality_rows_on_driver(fields, applies, formats, delete_cache(spark)),
                               schema)
    top_level = {f.field_id for s in metadata.schemas for f in s.fields}
    by_spark = sorted(p for p, fmt in formats.items() if fmt == "parquet") \
        if EQUALITY_DELETES_BY_SPARK and all(f.field_id in top_level for f in fields) else []
    by_python = sorted(set(formats) - set(by_spark))
    parts = []
    if by_spark:
        ids = FileIds(by_spark)
        found = _read_parquet(spark, metadata, T.Schema(fields), ST.StructType(spark_fields), by_spark,
                              keys=True, file_ids=ids)
        pairs = pa.table({"_del_file": pa.array([i for p, i in zip(by_spark, ids.ids) for _ in applies[p]], pa.int32()),
                          "_del_fid": pa.array([f for p in by_spark for f in sorted(applies[p])], pa.int32())})
        targets = arrow_dataframe(spark, pairs, "_del_file int, _del_fid int")
        parts.append(found.join(F.broadcast(targets), found["_file_id"] == targets["_del_file"])
                     .select(*[F.col(f"`{f.name}`") for f in fields], "_del_fid"))
    if by_python:
        out = ST.StructType(spark_fields + [ST.StructField("_del_fid", ST.IntegerType())])
        files = spark.createDataFrame([(p, formats[p]) for p in by_python], "delete_file string, file_format string")
        parts.append(files.mapInArrow(EqualityDeleteRows(fields, {p: sorted(applies[p]) for p in by_python}), out))
    return _union(parts)


# equality deletes that apply to data files of up to this many rows in all (and hold up to
# DRIVER_DELETE_ROWS_MAX rows) are resolved on the driver to the positions they delete in each data file, and
# applied as position deletes; beyond, the rows are joined against the deleted values by Spark
EQUALITY_POSITIONS_ROWS_MAX = 4_000_000


def _equality_positions(metadata: TableMetadata, tasks: list, file_ids: list[int], all_fields: dict,
                        cache: DeleteCache | None) -> dict[int, Any] | None:
    """The positions (numpy int64) that equality deletes delete in each data file they apply to, by file id;
    None where Spark joins them instead (:func:`_apply_equality_deletes`): too many rows, or an equality column
    that is nested or floating-point (whose equality the join defines), or a format not read here.

    A data file and the delete files the plan applies to it never change, so which of its rows they delete
    does not either: each data file's equality columns are read here once per process (with the delete cache)
    and matched against the delete rows (decoded once per file too): null equals null, as the spec's equality
    says. A repeated read then applies them as the position deletes they amount to, instead of hashing and
    broadcasting every deleted value to join it with the rows again (10M rows against 500k deleted keys: the
    broadcast alone ~0.3 s of every read). Iceberg Java's readers filter each data file by the deleted values
    in its task; this is that filter, done once per data file."""
    eq_tasks = [(i, t) for i, t in zip(file_ids, tasks) if any(d["content"] == 2 for d in t["deletes"])]
    if not eq_tasks:
        return {}
    if sum(t["record_count"] for _, t in eq_tasks) > EQUALITY_POSITIONS_ROWS_MAX:
        return None
    deletes = {d["file_path"]: d for _, t in eq_tasks for d in t["deletes"] if d["content"] == 2}
    counts = [_delete_rows(d) for d in deletes.values()]
    if None in counts or sum(counts) > DRIVER_DELETE_ROWS_MAX:
        return None
    top_level = {f.field_id for s in metadata.schemas for f in s.fields}
    ids = {i for d in deletes.values() for i in d["equality_ids"] or ()}
    if any(not d["equality_ids"] for d in deletes.values()) or any(
            i not in all_fields or i not in top_level or not all_fields[i].field_type.is_primitive or
            all_fields[i].field_type in (T.FLOAT, T.DOUBLE) for i in ids):
        return None  # (the join explains what is wrong with a delete file)
    formats = {p: d["file_format"].lower() for p, d in deletes.items()}
    if not set(formats.values()) <= READ_FORMATS or any(t["file_format"].lower() not in READ_FORMATS
                                                         for _, t in eq_tasks):
        return None
    fields = {i: T.NestedField(i, f"_eqd_{i}", all_fields[i].field_type) for i in ids}
    mapping = name_mapping(metadata)

    def positions(task: dict):
        groups: dict[tuple[int, ...], list[str]] = defaultdict(list)
        for d in task["deletes"]:
            if d["content"] == 2:
                groups[tuple(d["equality_ids"])].append(d["file_path"])
        sources = tuple(sorted((key, tuple(sorted(paths))) for key, paths in groups.items()))

        def load():
            found = _equality_deleted_positions(task["file_path"], task["file_format"].lower(), sources, fields,
                                                formats, mapping, cache)
            found.flags.writeable = False
            return found
        if cache is None:
            return load()
        return cache.get(("equality positions", task["file_path"], sources), load, lambda a: a.nbytes)

    try:
        found = by_threads(lambda it: positions(it[1]), eq_tasks)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid, OSError):
        # a column type Arrow cannot match on, a file this process cannot open: Spark joins (and names a file
        # that it cannot read either)
        return None
    return {i: p for (i, _), p in zip(eq_tasks, found)}


def _equality_deleted_positions(path: str, fmt: str, sources: tuple, fields: dict[int, T.NestedField],
                                formats: dict[str, str], mapping: dict[int, list[str]], cache: DeleteCache | None):
    """The positions of the rows of one data file that its equality delete files delete (``sources``: per set
    of equality field ids, the delete files with those ids): rows equal to a delete row in every column of
    its set."""
    import numpy as np
    data = _file_table(path, fmt, [fields[i] for i in sorted({i for key, _ in sources for i in key})], mapping)
    deleted = np.zeros(data.num_rows, bool)
    for key, paths in sources:
        key_fields = [fields[i] for i in key]
        rows = pa.concat_tables([_equality_file_rows(p, formats[p], key_fields, cache) for p in paths])
        deleted |= equal_rows(data.select([f.name for f in key_fields]), rows)
    return np.flatnonzero(deleted).astype(np.int64)


def equal_rows(rows: pa.Table, deleted: pa.Table):
    """Which of ``rows`` equal one of ``deleted`` (the same columns) in every column, null equal to null, as
    the spec's equality deletes match (a numpy bool array)."""
    import numpy as np
    import pyarrow.compute as pc
    if not rows.num_rows or not deleted.num_rows:
        return np.zeros(rows.num_rows, bool)
    if rows.num_columns == 1:
        values = pc.unique(deleted.column(0).combine_chunks())
        return pc.is_in(rows.column(0), value_set=values, skip_nulls=False).to_numpy(zero_copy_only=False)
    # several columns: a semi-join on each value (nulls given one value on both sides) and whether it is null
    left, right = {}, {}
    for k, name in enumerate(rows.column_names):
        for side, table in ((left, rows), (right, deleted)):
            column = table.column(k)
            side[f"v{k}"] = pc.fill_null(column, _filler(column.type))
            side[f"n{k}"] = pc.is_null(column)
    left["_row"] = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    keys = list(right)
    matched = pa.table(left).join(pa.table(right).group_by(keys).aggregate([]), keys=keys, join_type="left semi")
    out = np.zeros(rows.num_rows, bool)
    out[matched.column("_row").to_numpy()] = True
    return out


def _filler(t: pa.DataType) -> pa.Scalar:
    """A value of type ``t`` that stands for null where whether it is null is matched too."""
    from decimal import Decimal
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_fixed_size_binary(t):
        return pa.scalar(bytes(t.byte_width), t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_decimal(t):
        return pa.scalar(Decimal(0), t)
    return pa.scalar(0, pa.int32() if pa.types.is_date32(t) or pa.types.is_time32(t) else pa.int64()).cast(t)
