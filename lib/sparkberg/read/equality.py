"""Equality deletes applied to rows (spec "Equality Delete Files": a row is deleted when its values equal a
delete row's in every equality column, null equal to null, and the delete's data sequence number is higher).

Where the data files they apply to are few enough, they are resolved once on the driver to the positions they
delete and applied as position deletes (:func:`equality_positions`); otherwise Spark anti-joins the rows with
the deleted values (:func:`apply_equality_deletes`).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as ST

from sparkberg.arrays import empty_table, from_python, indices, int_values, scalar, true_mask
from sparkberg.errors import ValidationError
from sparkberg.io.fileio import FileIO
from sparkberg.read.columns import (
    READ_FORMATS, check_formats, delete_file_rows, delete_row_count, file_table, maybe_broadcast, name_mapping,
    read_data_parquet, spark_reads, union_all,
)
from sparkberg.read.deletecache import DeleteCache, delete_cache
from sparkberg.read.fileids import FileIds
from sparkberg.spark.frames import arrow_dataframe, local_dataframe, map_in_arrow
from sparkberg.spark.tuning import ReadTuning
from sparkberg.spark.types import arrow_schema, to_spark_read_field
from sparkberg.format import types as T
from sparkberg.format.metadata import TableMetadata
from sparkberg.threads import by_threads


class EqualityDeleteRows:
    """Executor side: equality delete files (path, format) -> their rows' equality columns (``fields``, by
    field id), once for each id the file's rows are joined on (``applies``: delete file -> the ids of the data
    files the plan applies it to, or of their sets of delete files), as ``_del_fid``."""

    def __init__(self, fields: Sequence[T.NestedField], applies: dict[str, list[int]], io: FileIO | None = None):
        self.fields = list(fields)
        self.applies = applies
        self.io = io  # (the table's FileIO: the delete files open with the table's credentials)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path, fmt in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
                yield from self.rows(path, fmt)

    def rows(self, path: str, fmt: str) -> Iterator[pa.RecordBatch]:
        """The rows of one delete file, a copy for each data file it applies to."""
        for rb in delete_file_rows(path, fmt, self.fields, self.io):
            out = rb.schema.append(pa.field("_del_fid", pa.int32()))
            for fid in self.applies[path]:
                yield pa.RecordBatch.from_arrays(list(rb.columns) + [pa.repeat(scalar(fid, pa.int32()), rb.num_rows)],
                                                 schema=out)


def _equality_rows_on_driver(fields: list[T.NestedField], applies: dict[str, set[int]], formats: dict[str, str],
                             cache: DeleteCache | None, io: FileIO | None = None) -> pa.Table:
    """What :func:`_equality_delete_rows` gives, as an Arrow table made here: each file decoded by a thread per
    core (Arrow reads without the GIL), once per process with a ``cache``, its rows once for each id it is joined
    on."""
    columns = arrow_schema(ST.StructType([to_spark_read_field(f) for f in fields]))  # (as delete_file_rows reads)
    schema = columns.append(pa.field("_del_fid", pa.int32()))
    paths = sorted(applies)
    tables = by_threads(lambda path: _equality_file_rows(path, formats[path], fields, cache, io), paths)
    parts = [table.append_column(schema.field("_del_fid"), pa.repeat(scalar(fid, pa.int32()), table.num_rows))
             for path, table in zip(paths, tables) for fid in sorted(applies[path])]
    return pa.concat_tables(parts).combine_chunks() if parts else empty_table(schema)


def _equality_file_rows(path: str, fmt: str, fields: Sequence[T.NestedField], cache: DeleteCache | None,
                        io: FileIO | None = None) -> pa.Table:
    """The rows of one equality delete file (its ``fields``, by field id), decoded once per process with a
    ``cache``, opened by ``io`` (the table's FileIO)."""
    def load() -> pa.Table:
        return file_table(path, fmt, fields, None, io)
    if cache is None:
        return load()
    return cache.get(("equality deletes", path, fmt, tuple(f.field_id for f in fields)), load, lambda t: t.nbytes)


def apply_equality_deletes(spark, metadata: TableMetadata, rows: DataFrame, tasks: list, file_ids: list[int],
                           schema: T.Schema, all_fields: dict, hidden: list, tuning: ReadTuning,
                           io: FileIO | None = None) -> DataFrame:
    """Rows minus those that equality delete files delete: an anti-join per set of equality columns on the
    row's data file (the files each delete file applies to, by the plan) and its values of those columns
    (null-safe, as the spec's null equality; :func:`_equality_condition`), the deleted rows broadcast when few.
    Data files that the same delete files apply to (a partition's files older than its deletes) are joined
    through one id of that set of delete files, so each delete row is there once per set, not once per file."""
    groups: dict[tuple, list] = defaultdict(list)
    for i, t in zip(file_ids, tasks):
        for d in t["deletes"]:
            if d["content"] == 2:
                groups[tuple(d["equality_ids"] or ())].append((d["file_path"], d["file_format"], i, delete_row_count(d)))
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
        check_formats([(f, p) for p, f in formats.items()], "equality delete")
        set_ids: dict[frozenset, int] = {}
        set_of = {fid: set_ids.setdefault(frozenset(paths), len(set_ids)) for fid, paths in per_file.items()}
        shared = len(set_ids) < len(set_of)  # (else each data file is its own set: joined on its id)
        applies: dict[str, set[int]] = defaultdict(set)  # delete file -> the ids its rows are joined on
        for fid, paths in per_file.items():
            for path in paths:
                applies[path].add(set_of[fid] if shared else fid)
        total = sum(len(keys) * sizes[p] for p, keys in applies.items()) if None not in sizes.values() else None
        eq = _equality_delete_rows(spark, metadata, fields, applies, formats, total, tuning, io)
        if shared:  # each row with the id of its file's set of delete files (null for files without any)
            pairs = pa.table({"_file_id": from_python(list(set_of), pa.int32()),
                              "_eq_set": from_python(list(set_of.values()), pa.int32())})
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
                                   hashed=not any(f.field_type in (T.FLOAT, T.DOUBLE) for f in fields))
        rows = rows.join(maybe_broadcast(eq, total, tuning), cond, "left_anti")
        if shared:
            rows = rows.drop("_eq_set")
    return rows


def _equality_key(file: Column, values: list[Column]) -> Column:
    """The key rows and equality deletes are joined on: equal for the same file and values."""
    return F.xxhash64(file, *values)


def _equality_condition(row_file: Column, row_cols: list[Column], del_file: Column, del_cols: list[Column],
                        hashed: bool) -> Column:
    """The join condition of rows and the equality deletes that delete them: the same data file and null-safe
    equal values (spec "Equality Delete Files": null equals null). ``hashed``: through one key, a hash of the
    file and the values, then the pairs that share it checked exactly: Spark joins on a single long key with
    its fastest hashed relation, where the plain condition's keys (file id, each value and its nullness) need a
    generic one. Not for floating-point columns, whose hash tells 0.0 from -0.0."""
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


def _equality_delete_rows(spark, metadata: TableMetadata, fields: list[T.NestedField], applies: dict[str, set[int]],
                          formats: dict[str, str], rows: int | None, tuning: ReadTuning, io: FileIO | None = None) -> DataFrame:
    """The rows of equality delete files (``fields``: their equality columns, as ``_eqd_<id>``), a copy for each
    id a file's rows are joined on (``_del_fid``: of the data files it applies to, or of their sets of delete
    files). Up to ``driver_delete_rows_max`` of them (``rows``, the copies counted), the files are decoded on
    the driver, each once per process (the delete cache), and the rows reach Spark as Arrow batches. Beyond,
    the files Spark reads (:func:`read_by_spark`) are read by Spark itself, each row's delete file known by its
    name (:class:`FileIds`) and joined to the data files it applies to: no Python worker, whose start costs more
    than reading a few small files. Others are decoded by :class:`EqualityDeleteRows` on the executors."""
    spark_fields = [to_spark_read_field(f) for f in fields]
    if rows is not None and rows <= tuning.driver_delete_rows_max:
        schema = ST.StructType(spark_fields + [ST.StructField("_del_fid", ST.IntegerType())])
        return arrow_dataframe(spark, _equality_rows_on_driver(fields, applies, formats, delete_cache(spark), io),
                               schema)
    by_spark = [p for p in read_by_spark(metadata, fields, formats) if spark_reads(p, tuning.spark_file_systems)]
    by_python = sorted(set(formats) - set(by_spark))
    parts = []
    if by_spark:
        ids = FileIds(by_spark, tuning.name_ids_max_files)
        found = read_data_parquet(spark, metadata, T.Schema(fields), ST.StructType(spark_fields), by_spark,
                                  keys=True, file_ids=ids)
        pairs = pa.table({"_del_file": from_python([i for p, i in zip(by_spark, ids.ids) for _ in applies[p]],
                                                   pa.int32()),
                          "_del_fid": from_python([f for p in by_spark for f in sorted(applies[p])], pa.int32())})
        targets = arrow_dataframe(spark, pairs, "_del_file int, _del_fid int")
        parts.append(found.join(F.broadcast(targets), found["_file_id"] == targets["_del_file"])
                     .select(*[F.col(f"`{f.name}`") for f in fields], "_del_fid"))
    if by_python:
        out = ST.StructType(spark_fields + [ST.StructField("_del_fid", ST.IntegerType())])
        files = local_dataframe(spark, [(p, formats[p]) for p in by_python], "delete_file string, file_format string")
        parts.append(map_in_arrow(files, EqualityDeleteRows(fields, {p: sorted(applies[p]) for p in by_python}, io),
                                  out))
    return union_all(parts)


def read_by_spark(metadata: TableMetadata, fields: list[T.NestedField], formats: dict[str, str]) -> list[str]:
    """The equality delete files (of ``formats``: path -> format) Spark's Parquet reader reads: Parquet files
    whose equality columns are all top-level."""
    top_level = {f.field_id for s in metadata.schemas for f in s.fields}
    if not all(f.field_id in top_level for f in fields):
        return []
    return sorted(p for p, fmt in formats.items() if fmt == "parquet")


def equality_positions(metadata: TableMetadata, tasks: list, file_ids: list[int], all_fields: dict,
                       cache: DeleteCache | None, tuning: ReadTuning, io: FileIO | None = None
                       ) -> dict[int, Any] | None:
    """The positions (numpy int64) that equality deletes delete in each data file they apply to, by file id;
    None where Spark joins them instead (:func:`apply_equality_deletes`): too many rows (more data rows than
    ``equality_positions_rows_max``, more delete rows than ``driver_delete_rows_max``), or an equality column
    that is nested or floating-point (whose equality the join defines), or a format not read here.

    A data file and the delete files the plan applies to it never change, so which of its rows they delete
    does not either: each data file's equality columns are read here once per process (with the delete cache)
    and matched against the delete rows (decoded once per file too): null equals null, as the spec's equality
    says. A repeated read then applies them as the position deletes they amount to, instead of hashing and
    broadcasting every deleted value to join it with the rows again. Iceberg Java's readers filter each data
    file by the deleted values in its task; this is that filter, done once per data file."""
    eq_tasks = [(i, t) for i, t in zip(file_ids, tasks) if any(d["content"] == 2 for d in t["deletes"])]
    if not eq_tasks:
        return {}
    if sum(t["record_count"] for _, t in eq_tasks) > tuning.equality_positions_rows_max:
        return None
    deletes = {d["file_path"]: d for _, t in eq_tasks for d in t["deletes"] if d["content"] == 2}
    counts = [delete_row_count(d) for d in deletes.values()]
    if None in counts or sum(counts) > tuning.driver_delete_rows_max:
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
    mapping = name_mapping(metadata)
    try:
        found = by_threads(lambda it: task_equality_positions(it[1], all_fields, mapping, cache, io), eq_tasks)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid, OSError):
        # a column type Arrow cannot match on, a file this process cannot open: Spark joins (and names a file
        # that it cannot read either)
        return None
    return {i: p for (i, _), p in zip(eq_tasks, found)}


def task_equality_positions(task: dict, all_fields: dict[int, T.NestedField], mapping: dict[int, list[str]],
                            cache: DeleteCache | None, io: FileIO | None = None):
    """The positions (read-only numpy int64) of the rows of a scan task's data file that the equality delete
    files the plan applies to it delete; with a ``cache``, found once per process for a data file and its
    delete files (which never change)."""
    groups: dict[tuple[int, ...], list[str]] = defaultdict(list)
    formats: dict[str, str] = {}
    for d in task["deletes"]:
        if d["content"] == 2:
            groups[tuple(d["equality_ids"])].append(d["file_path"])
            formats[d["file_path"]] = d["file_format"].lower()
    sources = tuple(sorted((key, tuple(sorted(paths))) for key, paths in groups.items()))
    fields = {i: T.NestedField(i, f"_eqd_{i}", all_fields[i].field_type) for key in groups for i in key}

    def load():
        found = _equality_deleted_positions(task["file_path"], task["file_format"].lower(), sources, fields,
                                            formats, mapping, cache, io)
        found.flags.writeable = False
        return found
    if cache is None:
        return load()
    return cache.get(("equality positions", task["file_path"], sources), load, lambda a: a.nbytes)


def _equality_deleted_positions(path: str, fmt: str, sources: tuple, fields: dict[int, T.NestedField],
                                formats: dict[str, str], mapping: dict[int, list[str]], cache: DeleteCache | None,
                                io: FileIO | None = None):
    """The positions of the rows of one data file that its equality delete files delete (``sources``: per set
    of equality field ids, the delete files with those ids): rows equal to a delete row in every column of
    its set."""
    import numpy as np
    data = file_table(path, fmt, [fields[i] for i in sorted({i for key, _ in sources for i in key})], mapping, io)
    deleted = np.zeros(data.num_rows, bool)
    for key, paths in sources:
        key_fields = [fields[i] for i in key]
        rows = pa.concat_tables([_equality_file_rows(p, formats[p], key_fields, cache, io) for p in paths])
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
        return true_mask(pc.is_in(rows.column(0), value_set=values, skip_nulls=False))
    # several columns: each column's values looked up among the deleted rows' (a hash probe, as the one-column
    # case's), the lookups combined into a code of the columns so far, renumbered by the deleted rows' codes after
    # each column; a row leaves the candidates as soon as its code is none of theirs
    candidates = None
    ours, theirs = np.zeros(0, np.int64), np.zeros(deleted.num_rows, np.int64)
    for k, t in enumerate(rows.schema.types):
        column = deleted.column(k).cast(t).combine_chunks()
        values = pc.unique(column)
        if candidates is None:  # (the first column's matches picked out first: most rows are none)
            candidates = np.flatnonzero(true_mask(pc.is_in(rows.column(k), value_set=values, skip_nulls=False)))
            ours = np.zeros(len(candidates), np.int64)
        found, ok = int_values(pc.index_in(rows.column(k).take(indices(candidates)), value_set=values,
                                           skip_nulls=False))
        theirs = theirs * len(values) + int_values(pc.index_in(column, value_set=values, skip_nulls=False))[0]
        ours, candidates = ours[ok] * len(values) + found[ok], candidates[ok]
        distinct = np.unique(theirs)
        theirs = np.searchsorted(distinct, theirs)
        at = np.minimum(np.searchsorted(distinct, ours), len(distinct) - 1)
        hit = distinct[at] == ours
        ours, candidates = at[hit], candidates[hit]
        if not len(candidates):
            break
    out = np.zeros(rows.num_rows, bool)
    out[candidates] = True
    return out
