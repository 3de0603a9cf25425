"""Row-level operations: delete, overwrite, dynamic overwrite and update (merge builds on the same pieces).

The filter is a Spark SQL string or a Column. Each finds the files a filter may touch (the weak translation of a SQL
filter prunes, and so do the values of the subquery of a conjunct ``col IN (SELECT ...)``: a semi-join; a Column
filter is applied exactly but prunes nothing), drops files whose
partition strictly matches (the strict projection of a *strengthened* translation, so an untranslatable
filter never drops a file), and for the rest either rewrites the files without / with changed rows
(copy-on-write; v3 rows keep ``_row_id`` and ``_last_updated_sequence_number``) or adds delete files for
the affected positions (merge-on-read: position delete files on v2, one deletion vector per data file on v3,
merged with the file's existing deletes), then commits once. Under serializable isolation
(``write.*.isolation-level``, the default) a concurrent append of files the filter may match is a conflict;
under both serializable and snapshot isolation, so are concurrent delete files for the data files the
operation rewrites or adds deletes for (their deletes would be lost, or a file would get two DVs).
"""
from __future__ import annotations

import functools
import re
import uuid
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from sparkberg.arrays import int_values
from sparkberg.avro.decode import manifest_entries
from sparkberg.errors import CommitFailedException, NotSupportedError, ValidationError
from sparkberg.expressions.evaluators import metrics_may_match, metrics_must_match
from sparkberg.expressions.predicates import FALSE, TRUE, And, Predicate, and_, bind, row_evaluator
from sparkberg.expressions.projection import inclusive_projection, strict_projection
from sparkberg.expressions.sql import Filter, conjuncts, row_filter, translate_filter
from sparkberg.io.fileio import FileIO, deleted_on_failure
from sparkberg.operations.changes import AllOf, Changes
from sparkberg.operations.request import CommitRequest
from sparkberg.planning.entries import own_entries, snapshot_manifests
from sparkberg.planning.scan import plan
from sparkberg.read.arrow import TaskReader
from sparkberg.read.deletecache import delete_cache
from sparkberg.read.fileids import xxh64
from sparkberg.read.reader import identity_values, read_tasks
from sparkberg.spark import tuning
from sparkberg.spark.frames import collect_arrow, map_in_arrow
from sparkberg.spark.session import is_classic
from sparkberg.spark.settings import max_result_bytes, session_time_zone, unsplit_file_bytes
from sparkberg.format import types as T
from sparkberg.format.manifests import ADDED, DELETED, MANIFEST_DATA, MANIFEST_DELETES
from sparkberg.format.properties import SERIALIZABLE, isolation_level, merges_on_read
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.metadata_columns import LAST_UPDATED_SEQUENCE_NUMBER, LINEAGE_COLUMNS, ROW_ID
from sparkberg.format.properties import compression, data_location
from sparkberg.threads import by_threads
from sparkberg.write.dataframe import assignments as assigned_values, store_assignment_policy, write_files
from sparkberg.write.deletes import RESULT_DDL, DeleteWriter, delete_file_from_json, partition_json
from sparkberg.write.writer import key_runs


def _partition_by_id(layout, spec_id: int, partition) -> dict:
    values = partition if isinstance(partition, dict) else partition.asDict()
    return {fid: values[layout.slots[i].name] for fid, i in layout.by_spec.get(spec_id, ())}


def file_scoped_deletes(task) -> set:
    """Delete files that only concern this data file (its DV, position deletes naming it)."""
    out = set()
    for d in task["deletes"]:
        if d["content"] == 1 and d["referenced_data_file"] == task["file_path"]:
            out.add((d["file_path"], d["content_offset"]))
    return out


def deletion_vectors_of(task) -> set:
    """The deletion vectors of this data file (:func:`file_scoped_deletes` of the Puffin format): those of the
    delete files a rewrite removes with it that Iceberg Java's rewrite counts (``RewriteFileGroup.danglingDVs``)."""
    return {(d["file_path"], d["content_offset"]) for d in task["deletes"]
            if d["content"] == 1 and d["referenced_data_file"] == task["file_path"]
            and str(d["file_format"]).lower() == "puffin"}


def removal_of(tasks) -> set:
    """The file keys a commit removes to drop the data files of ``tasks``: each file and the delete files that
    concern it alone (they would dangle otherwise)."""
    out = set()
    for t in tasks:
        out.add((t["file_path"], None))
        out |= file_scoped_deletes(t)
    return out


def committed_since(request: CommitRequest, start, current) -> list:
    """The snapshots others committed to the request's target (:mod:`sparkberg.operations.target`) after ``start`` was
    read, newest first, as ``current`` has them; when a transaction replays its commits, its own snapshots are not
    others'."""
    target = request.target
    began, head = target.head_id(start), target.head_id(current)
    own = request.own_snapshot_ids()
    if began == head and head not in own:
        return []
    seen = {s.snapshot_id for s in start.ancestors(began)}
    out = []
    for snap in current.ancestors(head):
        if snap.snapshot_id in own:
            continue
        if snap.snapshot_id in seen:
            break
        out.append(snap)
    return out


@dataclass(frozen=True)
class SerializableCheck:
    """Serializable isolation's check of a newer base: files a filter (``bound``) may match were not added by
    others' commits since the operation's start."""

    io: FileIO
    bound: Predicate | None
    request: CommitRequest

    def __call__(self, start: TableMetadata, current: TableMetadata) -> None:
        if self.bound is None:
            return
        schema = current.current_schema
        types = {f.field_id: f.field_type for s in current.schemas for f in s.index_by_id().values()}
        projections = {}
        for snap in committed_since(self.request, start, current):
            if snap.operation == "replace":
                continue
            for mf, e in own_entries(self.io, snap, MANIFEST_DATA, ADDED):
                if mf.partition_spec_id not in projections:
                    projections[mf.partition_spec_id] = row_evaluator(inclusive_projection(
                        self.bound, current.spec(mf.partition_spec_id), schema))
                d = e.data_file
                if projections[mf.partition_spec_id](d.partition) and metrics_may_match(
                        self.bound, types, d.record_count, d.value_counts, d.null_value_counts,
                        d.nan_value_counts, d.lower_bounds, d.upper_bounds):
                    raise CommitFailedException(
                        f"conflict: snapshot {snap.snapshot_id} added {d.file_path}, which may hold "
                        "rows the delete filter matches (serializable isolation)")


@dataclass(frozen=True)
class NoNewDeletes:
    """The check of a newer base that both isolation levels make, as Iceberg does: no commit since the operation's
    start added delete files that may apply to data files it rewrites or adds deletes for (``touched``: path ->
    (spec id, partition by field id)), whose deletes would be lost or doubled. Rewrites that keep the starting
    sequence number let equality deletes through (``ignore_equality``: they still apply to the new files)."""

    io: FileIO
    touched: dict
    request: CommitRequest
    ignore_equality: bool = False

    def __call__(self, start: TableMetadata, current: TableMetadata) -> None:
        if not self.touched:
            return
        unpartitioned = {s.spec_id for s in current.partition_specs if s.is_unpartitioned}
        partitions = {(spec_id, tuple(sorted(p.items()))) for spec_id, p in self.touched.values()}
        for snap in committed_since(self.request, start, current):
            for mf, e in own_entries(self.io, snap, MANIFEST_DELETES, ADDED):
                d = e.data_file
                if d.content == 2 and self.ignore_equality:
                    continue
                if d.referenced_data_file is not None:
                    hit = d.referenced_data_file in self.touched
                elif d.content == 2 and mf.partition_spec_id in unpartitioned:
                    hit = True
                else:
                    hit = (mf.partition_spec_id, tuple(sorted(d.partition.items()))) in partitions
                if hit:
                    raise CommitFailedException(
                        f"conflict: snapshot {snap.snapshot_id} added delete file {d.file_path} for data "
                        "files this operation rewrites or deletes from")



# a key with at most this many distinct values prunes by the values (an IN list the metrics evaluator tests per file);
# with more, by their range
MAX_KEY_VALUES = 1000
# an estimate of the distinct values (approx_count_distinct, 5% relative error) above this is taken as more than
# MAX_KEY_VALUES without counting them: the estimate's error is far from reaching it
SURELY_MORE_VALUES = 2 * MAX_KEY_VALUES


def key_predicate(values, column: str, field, schema, null_safe: bool = False, bounds: tuple | None = None,
                  estimate: int | None = None):
    """A bound predicate that every target row whose ``field`` equals a value of ``values``'s ``column`` satisfies:
    an IN list of the distinct values (at most ``MAX_KEY_VALUES``), else their range (``bounds``, the column's
    (min, max) when the caller has them already, else found here); FALSE when there are none; None when it cannot
    say (a null-safe key with a null value, a nested field, a type the field cannot take). ``estimate``: the
    caller's ``approx_count_distinct`` of the column, with ``bounds``; far above ``MAX_KEY_VALUES``, the range is
    used without a job to collect the values (either predicate holds for every matching row: the estimate only
    chooses between them)."""
    if not field.field_type.is_primitive:
        return None
    many = bounds is not None and estimate is not None and estimate > SURELY_MORE_VALUES and not null_safe
    if not many:
        found = [r[0] for r in values.select(F.col(f"`{column}`")).distinct().limit(MAX_KEY_VALUES + 1).collect()]
        if null_safe and None in found:
            return None  # (null keys match null rows: no range holds them)
        found = [v for v in found if v is not None]
        many = len(found) > MAX_KEY_VALUES
    return values_predicate(field, schema, None if many else found, lambda: bounds or values.agg(
        F.min(F.col(f"`{column}`")), F.max(F.col(f"`{column}`"))).collect()[0])


def values_predicate(field: T.NestedField, schema: T.Schema, found: list | None, bounds: Callable[[], tuple]):
    """A bound predicate that ``field`` is one of the values ``found`` (non-null, at most ``MAX_KEY_VALUES``; FALSE
    when there are none), or with ``found`` None (more values than that), in the range (min, max) ``bounds()``
    gives; None where the values are of a type the field's literals cannot take."""
    try:
        if found is not None:
            return bind(Predicate("in", field.name, found), schema) if found else FALSE
        lo, hi = bounds()
        return bind(and_(Predicate("gt_eq", field.name, lo), Predicate("lt_eq", field.name, hi)), schema)
    except ValidationError:  # (values of a type the column's literals cannot take)
        return None


_SEMI_JOIN = re.compile(r"^\(?\s*`?(\w+)`?\s+IN\s*\(\s*(SELECT\b.*)\)\s*\)?$", re.I | re.S)


def semi_join_pruning(spark, filter: str | Filter, schema):
    """A bound predicate from the conjuncts ``col IN (SELECT ...)`` of a SQL filter: each subquery is run and its
    values (or their range) prune the files of ``col`` (:func:`key_predicate`); None when there are none. A subquery
    that does not run on its own (a correlated one) prunes nothing; the filter still applies it to the rows."""
    out = None
    for c in conjuncts(str(filter)):
        m = _SEMI_JOIN.match(c)
        if not m:
            continue
        try:
            field = schema.find_field(m.group(1))
            keys = spark.sql(m.group(2))
        except Exception:  # noqa: BLE001 - not a column of the table, or a subquery that needs the outer query
            continue
        if len(keys.columns) != 1:
            continue
        p = key_predicate(keys, keys.columns[0], field, schema)
        if p is not None:
            out = p if out is None else And(out, p)
    return out


def condition(filter: str | Filter | Column) -> Column:
    """A row-level operation's filter as a Column that is false where the filter is null."""
    return F.coalesce(filter if isinstance(filter, Column) else F.expr(f"({filter})"), F.lit(False))


class RowLevel:
    """The files of the request's target head a filter may touch, split into whole-file matches and the rest; the
    operation commits through :meth:`commit` as ``request`` says."""

    def __init__(self, table, request: CommitRequest, filter: str | Filter | Column | None, prune=None):
        self.table = table
        self.request = request
        self.m = m = table.metadata
        self.spark = table.spark
        self.schema = schema = m.current_schema
        tz = functools.partial(session_time_zone, self.spark)  # (read only for a literal without a zone)
        text = Filter.of(filter) if isinstance(filter, (str, Filter)) else None  # (parsed once, for all below)
        self.filter = filter if text is None else text
        self.weak = TRUE if text is None else bind(translate_filter(text, schema, tz), schema)
        if text is not None:
            semi = semi_join_pruning(self.spark, text, schema)
            prune = semi if prune is None else prune if semi is None else And(prune, semi)
        if prune is not None:  # (a bound predicate the operation knows its rows satisfy: it prunes, never drops)
            self.weak = prune if self.weak is TRUE else And(self.weak, prune)
        strong = TRUE if filter is None else FALSE if text is None else \
            bind(translate_filter(text, schema, tz, strengthen=True), schema)
        self.head = request.target.head(m)  # (main's head, or the branch's the write goes to)
        self.plan = plan(self.spark, m, table.io, self.head, self.weak, label=table.name) if self.head else None
        self.tasks = self.plan.rows() if self.plan else []
        strict = {s.spec_id: row_evaluator(strict_projection(strong, s, schema)) for s in m.partition_specs}
        self.whole = [t for t in self.tasks if strict[t["spec_id"]](self.partition(t))]
        whole = {t["file_path"] for t in self.whole}
        self.partial = [t for t in self.tasks if t["file_path"] not in whole]
        self._strict = strict
        self._strong = strong

    def whole_by_metrics(self) -> bool:
        """Whether the column metrics of every file the filter partly matches by partition prove that it matches
        all their rows (Iceberg Java's metadata-only delete, ``SparkTable.canDeleteUsingMetadata``); if so, those
        files become whole matches too. Read only by a DELETE, before :attr:`removed`."""
        paths = {t["file_path"] for t in self.partial}
        if not paths or self._strong is FALSE:
            return False
        types = {f.field_id: f.field_type for s in self.m.schemas for f in s.index_by_id().values()}
        proven = set()
        for mf in snapshot_manifests(self.table.io, self.head):
            if mf.content != MANIFEST_DATA:
                continue
            for e in manifest_entries(self.table.io.read(mf.manifest_path), mf):
                d = e.data_file
                if e.status == DELETED or d.file_path not in paths:
                    continue
                if not metrics_must_match(self._strong, types, d.record_count, d.value_counts, d.null_value_counts,
                                          d.nan_value_counts, d.lower_bounds, d.upper_bounds):
                    return False
                proven.add(d.file_path)
        if proven != paths:
            return False
        self.whole, self.partial = self.whole + self.partial, []
        return True

    @functools.cached_property
    def removed(self) -> set:
        """What dropping the whole-file matches removes (read only by the operations that drop them: merges and
        updates would pay for a read of every delete manifest for nothing)."""
        removed = removal_of(self.whole)
        if self.whole:  # as Java's row-filter delete: delete files of partitions the filter wholly matches go too
            removed |= self.delete_files_in(lambda spec_id, p: self._strict[spec_id](p))
        return removed

    def delete_files_in(self, wholly_removed) -> set:
        """The live delete files of the current snapshot whose (spec id, partition) ``wholly_removed`` says lose
        every data file they could apply to: a delete file applies only within its spec and partition (global
        equality deletes: within the unpartitioned spec, whose one partition only an always-true filter
        removes), so nothing they delete outlives this commit and they would only weigh on later plans."""
        out = set()
        for mf in snapshot_manifests(self.table.io, self.head):
            if mf.content != MANIFEST_DELETES:
                continue
            for e in manifest_entries(self.table.io.read(mf.manifest_path), mf):
                if e.status != DELETED and wholly_removed(mf.partition_spec_id, e.data_file.partition):
                    out.add((e.data_file.file_path, e.data_file.content_offset))
        return out

    def partition(self, task) -> dict:
        return _partition_by_id(self.plan.layout, task["spec_id"], task["partition"])

    def read(self, tasks, columns, filter):
        return read_tasks(self.spark, self.m, self.schema, tasks, self.plan.layout, columns, filter, self.table.io)

    def rewritten_in_place(self, files: list, assigned: Iterable[str] = ()) -> bool:
        """Whether the rows of ``files`` rewritten by copy-on-write (``assigned``: the columns an update sets)
        stay in their file's partition of the current spec, each file the only one rewritten in its partition
        and small enough that one task reads all its rows (:func:`unsplit_file_bytes`): clustering them by
        partition would then move no row to another file (``in_place`` of :func:`distribution_mode`)."""
        spec, schema = self.m.default_spec, self.m.current_schema
        sources = {i for f in spec.fields for i in f.all_source_ids}
        for name in assigned:
            field = schema.as_struct.field_by_name(name)
            if field is None or ({field.field_id} | set(T.Schema([field]).index_by_id())) & sources:
                return False
        limit = unsplit_file_bytes(self.spark)
        seen = set()
        for t in files:
            key = tuple(sorted(self.partition(t).items()))
            if t["spec_id"] != spec.spec_id or t["file_size_in_bytes"] > limit or key in seen:
                return False
            seen.add(key)
        return True

    @property
    def lineage(self) -> list[str]:
        """The row-lineage columns rewritten rows carry (v3), by name."""
        return list(LINEAGE_COLUMNS) if self.m.format_version >= 3 else []

    @property
    def lineage_fields(self) -> list:
        """:attr:`lineage` as the fields the writer writes them as."""
        return [ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER] if self.m.format_version >= 3 else []

    def delete_targets(self, tasks, merge_position_files: bool) -> dict[str, dict]:
        """What :class:`~sparkberg.write.deletes.DeleteWriter` needs of each data file of ``tasks``: spec,
        partition, delete directory, its DV (merged into a new one on v3) and, when ``merge_position_files``,
        its position delete files (merged too)."""
        m, schema = self.m, self.schema
        base_dir = data_location(m)
        targets = {}
        for t in tasks:
            spec = m.spec(t["spec_id"])
            part = self.partition(t)
            rel = spec.partition_to_path(part, schema) if spec.fields else ""
            targets[t["file_path"]] = {
                "spec_id": t["spec_id"], "partition": partition_json(spec, schema, part),
                "dir": "/".join(x for x in (base_dir, rel) if x),
                "dvs": [(d["file_path"], d["content_offset"], d["content_size_in_bytes"]) for d in t["deletes"]
                        if d["file_format"] == "puffin"],
                "position_files": [d["file_path"] for d in t["deletes"] if merge_position_files and
                                   d["content"] == 1 and d["file_format"] != "puffin"]}
        return targets

    def delete_positions(self, matched: DataFrame | dict[str, np.ndarray], tasks) -> tuple[list, set]:
        """Delete files for the (``_file``, ``_pos``) rows of ``matched`` (rows of the data files of ``tasks``,
        or the positions :func:`matched_on_driver` found in each): position deletes (v2) or DVs (v3), written on
        the driver where few rows could match (:func:`positions_on_driver`), else on the executors."""
        m = self.m
        by_path = {t["file_path"]: t for t in tasks}
        targets = self.delete_targets(tasks, merge_position_files=True)
        writer = DeleteWriter(targets, dv=m.format_version >= 3, write_id=uuid.uuid4().hex[:16],
                              compression=compression(m.properties), io=self.table.io)
        if isinstance(matched, dict):  # (a partition's files one after another, as the writer groups them)
            written = writer.write((p, matched[p]) for p in sorted(matched, key=lambda p: (targets[p]["dir"], p)))
        else:
            written = positions_on_driver(self.spark, matched, tasks, writer.write)
        if written is None:
            clustered = matched.select("_file", "_pos").repartition("_file").sortWithinPartitions("_file", "_pos")
            written = [r["delete_file"] for r in map_in_arrow(clustered, writer, RESULT_DDL).collect()]
        added, removed = [], set()
        for r in written:
            spec_id, d = delete_file_from_json(r, m)
            added.append((spec_id, d))
            if m.format_version >= 3:
                removed |= file_scoped_deletes(by_path[d.referenced_data_file])
        return added, removed

    def changes(self, op: str, added_data, added_deletes, removed, required=frozenset(), command: str = "delete",
                summary: dict[str, str] | None = None) -> Changes:
        """What the operation changes (a row-level ``command``, whose ``write.<command>.isolation-level`` sets how
        a newer base is checked)."""
        isolation = isolation_level(self.m.properties, command)
        by_path = {t["file_path"]: t for t in self.tasks}
        touched = {p: (by_path[p]["spec_id"], self.partition(by_path[p]))
                   for p in {k[0] for k in removed} | set(required) if p in by_path}
        validate = AllOf((SerializableCheck(self.table.io, self.weak, self.request) if isolation == SERIALIZABLE
                          else None, NoNewDeletes(self.table.io, touched, self.request)))
        return Changes(op, list(added_data), list(added_deletes), set(removed), set(required), validate,
                       summary=dict(summary or {}))


def positions_on_driver(spark, matched: DataFrame, tasks: list, write: Callable[[Iterable], list[str]]
                        ) -> list[str] | None:
    """``write`` (:meth:`DeleteWriter.write`) over the positions of ``matched`` (``_file``, ``_pos``) by data file,
    collected to the driver, where every row of ``tasks`` (all the rows the operation could match) would take at
    most a quarter of ``spark.driver.maxResultSize`` as (hash of its file's path, position) pairs: no shuffle and
    no Python stage, whose first run costs a fresh process (a scheduled job) about a second more than the scan.
    None where they could take more, where two of the files' paths hash alike, or where the session collects no
    Arrow (Spark Connect 3.5: row by row): the executors write them."""
    if not (hasattr(matched, "toArrow") or hasattr(matched, "_collect_as_arrow")):
        return None
    if sum(t["record_count"] for t in tasks) * tuning.POSITION_BYTES > \
            max_result_bytes(spark) // tuning.DRIVER_POSITIONS_SHARE:
        return None
    path_of = {}
    for t in tasks:  # (Spark's xxhash64 of a string: XXH64 of its UTF-8 bytes, seed 42, as a signed long)
        h = xxh64(t["file_path"].encode())
        if path_of.setdefault(h - (1 << 64) if h >= 1 << 63 else h, t["file_path"]) != t["file_path"]:
            return None
    got = collect_arrow(matched.select(F.xxhash64("_file").alias("_file"), "_pos"),
                        pa.schema([("_file", pa.int64()), ("_pos", pa.int64())]))
    if not got.num_rows:
        return write([])
    got = got.sort_by([("_file", "ascending"), ("_pos", "ascending")])
    positions = int_values(got.column("_pos"))[0]
    return write((path_of[h], positions[start:end])
                 for start, end, (h,) in key_runs([got.column("_file").combine_chunks()], got.num_rows))


def matched_on_driver(rl: RowLevel, filter: str | Filter | Column) -> dict[str, np.ndarray] | None:
    """The positions of the rows of ``rl``'s partly matched files that ``filter`` matches (data file -> sorted
    positions, files without a match left out), found on the driver: each file's columns the filter reads, read
    by the driver's threads into Arrow and tested as Spark tests them (:func:`row_filter`), its deleted rows left
    out. A fresh process (a scheduled job) pays for its first Spark job's scan several seconds that this read does
    not. None, for Spark to find them, where the filter is not one :func:`row_filter` evaluates, where the files
    hold more than ``tuning.DRIVER_FILTER_VALUES`` of the values it reads, or on Spark Connect (the client is no
    cluster's driver)."""
    if not isinstance(filter, (str, Filter)) or not is_classic(rl.spark):
        return None
    test = row_filter(filter, rl.schema, functools.partial(session_time_zone, rl.spark))
    if test is None or not test.columns:
        return None
    if sum(t["record_count"] for t in rl.partial) * len(test.columns) > tuning.DRIVER_FILTER_VALUES:
        return None
    reader = TaskReader(rl.m, T.Schema([rl.schema.as_struct.field_by_name(c) for c in test.columns]), rl.table.io)
    try:
        reader.check(rl.partial)
    except NotSupportedError:  # (an equality delete on a nested column: the DataFrame read applies it)
        return None
    identity = identity_values(rl.m, rl.schema, rl.partial, rl.plan.layout)
    cache = delete_cache(rl.spark)
    found = by_threads(lambda t: reader.matching(t, cache, identity, test.matches), rl.partial)
    return {t["file_path"]: p for t, p in zip(rl.partial, found) if len(p)}


def picked_rows(df: DataFrame, rows: int, tasks: list) -> DataFrame:
    """``df``, ``rows`` rows that a scan of the data files of ``tasks`` picked, rebalanced into tasks of the size
    Spark's adaptive execution advises (as it sizes the write's own shuffle), unless they are all the files' rows.
    The picked rows sit in the scan's tasks, and each task of a write runs Python, at a fixed cost to start: a few
    rows picked from a large scan are written by a few tasks, not one per task of the scan (a shuffle of those rows
    costs less), and many rows picked from a few neighbouring tasks are spread evenly."""
    return df if rows >= sum(t["record_count"] for t in tasks) else df.hint("rebalance")


def delete_rows(table, filter: str | Filter | Column, request: CommitRequest) -> Changes | None:
    """What deleting the rows matching a filter (Spark SQL or a Column) changes (``write.delete.mode``); None when
    nothing matched."""
    if not isinstance(filter, Column) and (not isinstance(filter, (str, Filter)) or not str(filter).strip()):
        raise ValidationError("delete needs a filter (a Spark SQL boolean expression or a Column); use 'true' to "
                              "delete all")
    rl = RowLevel(table, request, filter)
    filter = rl.filter  # (parsed)
    if not rl.tasks:
        return None
    rl.whole_by_metrics()  # (every file proven whole: a metadata-only delete, as Java makes it)
    removed = set(rl.removed)
    added_data, added_deletes, required = [], [], set()
    if rl.partial:
        found = matched_on_driver(rl, filter)
        matched = found if found is not None else rl.read(rl.partial, ["_file", "_pos"], filter)
        if merges_on_read(rl.m, "delete"):
            added_deletes, more = rl.delete_positions(matched, rl.partial)
            removed |= more
            required = {d.referenced_data_file for _, d in added_deletes}
        else:
            hit = set(found) if found is not None else \
                {r[0] for r in matched.select("_file").distinct().collect()}
            rewrite = [t for t in rl.partial if t["file_path"] in hit]
            if rewrite:
                keep = rl.read(rewrite, [f.name for f in rl.schema.fields] + rl.lineage, ~condition(filter))
                added_data = write_files(rl.spark, rl.m, keep, extra_fields=rl.lineage_fields, command="delete",
                                         in_place=rl.rewritten_in_place(rewrite), io=rl.table.io)
                removed |= removal_of(rewrite)
    if not removed and not added_deletes:
        return None
    return rl.changes("overwrite" if added_data else "delete", added_data, added_deletes, removed, required)


def overwrite(table, df, filter: str | Filter | None, request: CommitRequest, distribution_mode: str | None = None
              ) -> Changes:
    """What replacing the rows matching ``filter`` (all rows when None) with the rows of ``df`` changes."""
    rl = RowLevel(table, request, filter)
    added = write_files(rl.spark, rl.m, df, distribution=distribution_mode, io=rl.table.io)
    removed = set(rl.removed)
    with deleted_on_failure(table.io, lambda: [f.file_path for f in added]):
        if rl.partial and filter is not None:
            hit = {r[0] for r in rl.read(rl.partial, ["_file"], filter).distinct().collect()}
            rewrite = [t for t in rl.partial if t["file_path"] in hit]
            if rewrite:
                keep = rl.read(rewrite, [f.name for f in rl.schema.fields] + rl.lineage,
                               F.expr(f"NOT coalesce(({filter}), false)"))
                added += write_files(rl.spark, rl.m, keep, extra_fields=rl.lineage_fields, command="delete",
                                     in_place=rl.rewritten_in_place(rewrite), io=rl.table.io)
                removed |= removal_of(rewrite)
    return rl.changes("overwrite", added, [], removed)


def dynamic_overwrite(table, df, request: CommitRequest, distribution_mode: str | None = None) -> Changes:
    """What replacing every partition (of the default spec) that ``df`` has rows for with those rows changes."""
    rl = RowLevel(table, request, None)
    added = write_files(rl.spark, rl.m, df, distribution=distribution_mode, io=rl.table.io)
    spec_id = rl.m.default_spec_id
    if not rl.m.default_spec.fields:
        parts = None  # unpartitioned: the whole table is one partition
    else:
        parts = {tuple(sorted(f.partition.items())) for f in added}

    def replaced(s: int, p: dict) -> bool:
        return s == spec_id and (parts is None or tuple(sorted(p.items())) in parts)

    removed = removal_of([t for t in rl.tasks if replaced(t["spec_id"], rl.partition(t))])
    if rl.tasks:
        removed |= rl.delete_files_in(replaced)
    # (Java's ReplacePartitions marks its snapshots so: cherry-picking one replays it on the partitions it names)
    return rl.changes("overwrite", added, [], removed, command="update", summary={"replace-partitions": "true"})


def update(table, assignments: dict[str, str], filter: str | Filter | Column | None, request: CommitRequest
           ) -> Changes | None:
    """What setting columns to Spark SQL expressions on the rows matching ``filter`` changes (None: no row
    matched): copy-on-write or merge-on-read per ``write.update.mode``. Updated rows keep their v3 ``_row_id`` and
    get the new sequence number."""
    rl = RowLevel(table, request, filter)
    spark_schema = rl.table.spark_schema()
    # (checked against the table's columns before anything is read: a field the table lacks, or a value the
    # session's store assignment policy does not write into the field's type, changes nothing)
    set_by_name = assigned_values(rl.spark.createDataFrame([], spark_schema), spark_schema, assignments,
                                  store_assignment_policy(rl.spark), lambda c: F.col(f"`{c}`"))
    cond = F.lit(True) if filter is None else condition(filter)
    tasks = rl.tasks
    if not tasks:
        return None
    cols = [f.name for f in rl.schema.fields]
    extra = rl.lineage_fields

    def assigned(c):
        return set_by_name[c]

    def updated(df):
        out = [assigned(c).alias(c) if c in set_by_name else F.col(f"`{c}`") for c in cols]
        if rl.lineage:
            out += [F.col("_row_id"), F.lit(None).cast("bigint").alias("_last_updated_sequence_number")]
        return df.select(*out)

    if merges_on_read(rl.m, "update"):
        matched = rl.read(tasks, cols + rl.lineage + ["_file", "_pos"], cond).cache()
        try:
            rows = matched.count()  # (fills the cache)
            if rows == 0:
                return None
            added_data = write_files(rl.spark, rl.m, picked_rows(updated(matched), rows, tasks), extra_fields=extra,
                                     command="update", position_delta=True, io=rl.table.io)
            with deleted_on_failure(table.io, lambda: [f.file_path for f in added_data]):
                added_deletes, removed = rl.delete_positions(matched, tasks)
        finally:
            matched.unpersist()
        return rl.changes("overwrite", added_data, added_deletes, removed,
                          required={d.referenced_data_file for _, d in added_deletes}, command="update")
    hit = {r[0] for r in rl.read(tasks, ["_file"], cond).distinct().collect()}
    rewrite = [t for t in tasks if t["file_path"] in hit]
    if not rewrite:
        return None
    rows = rl.read(rewrite, cols + rl.lineage, None)
    out = [F.when(cond, assigned(c)).otherwise(F.col(f"`{c}`")).alias(c) if c in set_by_name
           else F.col(f"`{c}`") for c in cols]
    if rl.lineage:
        out += [F.col("_row_id"), F.when(cond, F.lit(None).cast("bigint"))
                .otherwise(F.col("_last_updated_sequence_number")).alias("_last_updated_sequence_number")]
    added = write_files(rl.spark, rl.m, rows.select(*out), extra_fields=extra, command="update",
                        in_place=rl.rewritten_in_place(rewrite, set_by_name), io=rl.table.io)
    return rl.changes("overwrite", added, [], removal_of(rewrite), command="update")


__all__ = ["delete_rows", "overwrite", "dynamic_overwrite", "update", "key_predicate", "values_predicate",
           "semi_join_pruning", "condition"]
