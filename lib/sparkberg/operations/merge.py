"""MERGE in the style of Delta's builder:

    t.merge(src, "t.id = s.id", target_alias="t", source_alias="s") \\
        .when_matched_update({"v": "s.v"}, condition="s.op = 'u'").when_matched_delete("s.op = 'd'") \\
        .when_not_matched_insert_all().when_not_matched_by_source_delete("t.ts < '2024-01-01'").execute()

Clauses are tried in the order given, as Spark's MERGE tries them; a target row matched by more than one source
row is an error (as in Iceberg's Spark integration), and nothing is committed. ``write.merge.mode`` picks
copy-on-write or merge-on-read; updated v3 rows keep their ``_row_id``. The target scan is pruned by the ON clause
and the source's keys (:meth:`MergeBuilder._pruning`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as ST

from sparkberg.arrays import indices, int_values, row_codes, scalar, true_mask
from sparkberg.operations.request import CommitRequest
from sparkberg.operations.rowlevel import (
    MAX_KEY_VALUES, RowLevel, key_predicate, removal_of, values_predicate)
from sparkberg.errors import NotSupportedError, ValidationError
from sparkberg.expressions.predicates import And
from sparkberg.expressions.sql import conjuncts, translate_filter
from sparkberg.io.fileio import deleted_on_failure
from sparkberg.operations.changes import Changes
from sparkberg.read.arrow import TaskReader, read_struct
from sparkberg.read.deletecache import delete_cache
from sparkberg.read.reader import identity_values
from sparkberg.spark import tuning
from sparkberg.spark.frames import collect_arrow, local_dataframe
from sparkberg.spark.session import is_classic
from sparkberg.spark.settings import session_time_zone
from sparkberg.spark.types import arrow_schema
from sparkberg.format import types as T
from sparkberg.format.properties import merges_on_read
from sparkberg.threads import by_threads
from sparkberg.write.dataframe import (
    UNSORTED, assignments as assigned_values, store_assignment_policy, table_ordering, write_files, write_on_driver,
)


# the primitive types whose values the driver does not take from a collected source (Spark's Arrow has no type for
# them, or gives another than a read does)
_NOT_COLLECTED = (T.UNKNOWN, T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS)

_INTEGERS = (ST.ByteType, ST.ShortType, ST.IntegerType, ST.LongType)  # (narrowest first)


def _widens(source: ST.DataType, target: ST.DataType) -> bool:
    """Whether a source column of type ``source`` written to a column of type ``target`` keeps its values as they
    are (the same type, or an integer into a wider one), so the driver writes it without Spark's cast."""
    if source == target:
        return True
    return isinstance(source, _INTEGERS) and isinstance(target, _INTEGERS) and \
        _INTEGERS.index(type(source)) <= _INTEGERS.index(type(target))


def _comparable(field, source: ST.DataType) -> bool:
    """Whether Spark's ``=`` of ``field`` (a target column) and a source column of type ``source`` is the equality
    of their values as Arrow compares them: integers of any width, or two strings compared by their bytes."""
    if field.field_type in (T.INT, T.LONG):
        return isinstance(source, _INTEGERS)
    return field.field_type == T.STRING and source == ST.StringType()


def _member(values: pa.Array) -> Callable[[pa.Array], np.ndarray]:
    """A test of which values of an array (of ``values``'s type) are among ``values`` (distinct, not null): for
    integers a binary search of them sorted, for strings ``is_in``, which hashes its value set again at each call
    (the caller bounds the calls times the values)."""
    if not pa.types.is_integer(values.type):
        return lambda a: true_mask(pc.is_in(a, value_set=values))
    known = np.sort(int_values(values)[0])

    def test(a: pa.Array) -> np.ndarray:
        x, valid = int_values(a)
        if not len(known):
            return np.zeros(len(x), bool)
        return (known[np.minimum(np.searchsorted(known, x), len(known) - 1)] == x) & valid
    return test


def _inner_pairs(left: list[pa.ChunkedArray], right: list[pa.ChunkedArray]) -> tuple[np.ndarray, np.ndarray]:
    """The (left row, right row) pairs an inner join of two sides' key columns (``int64`` or ``large_string``,
    the same types on both sides) on all of them pairs: rows whose keys are equal in every column, a null equal to
    nothing; for each left row in order, its right rows in order. Built from the rows' codes
    (:func:`~sparkberg.arrays.row_codes`), not by Arrow's ``Table.join``."""
    n = len(left[0])
    key, valid = row_codes([pa.chunked_array(list(a.chunks) + list(b.chunks), a.type) for a, b in zip(left, right)],
                           nulls_equal=False)
    ours, theirs = key[:n], key[n:]
    candidates = np.flatnonzero(valid[n:])
    order = candidates[np.argsort(theirs[candidates], kind="stable")]
    ordered = theirs[order]
    lo, hi = np.searchsorted(ordered, ours, "left"), np.searchsorted(ordered, ours, "right")
    counts = np.where(valid[:n], hi - lo, 0)
    left_rows = np.repeat(np.arange(n), counts)
    within = np.arange(len(left_rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    return left_rows, order[np.repeat(lo, counts) + within]


def _expr(e: str | Column) -> Column:
    return e if isinstance(e, Column) else F.expr(e)


def _outside_quotes(text: str, fn) -> str:
    parts = text.split("'")
    return "'".join(fn(p) if i % 2 == 0 else p for i, p in enumerate(parts))


def _matched_twice(file: str, position: int, key: list[tuple[str, Any]]) -> ValidationError:
    """Spark's MERGE cardinality error, naming the target row by its key's values (as the ON clause equates them
    with the source's), its file and its position."""
    row = " AND ".join(f"{name} = {value!r}" for name, value in key)
    return ValidationError("MERGE matched a single row of the target table with more than one source row ("
                           f"{f'the row where {row}, ' if row else ''}file {file}, position {position}); make the "
                           "source keys unique")


@dataclass(frozen=True)
class _Done:
    """A merge run on the driver: what it changes (None: nothing)."""

    changes: Changes | None


class MergeBuilder:
    """Collects MERGE clauses; :meth:`execute` runs them as one commit."""

    def __init__(self, table, writing: Any, source, condition: str | Column,
                 target_alias: str = "t", source_alias: str = "s"):
        self.table = table
        # the write the merge is (``Table._write``): the table as the merge plans on it (``view``), its request, and
        # the commit of what the merge changes, in the write's block, unless its idempotency key is already recorded
        self.writing = writing
        self.request: CommitRequest | None = None
        self.source = source
        self.condition = condition
        self.ta = target_alias
        self.sa = source_alias
        self.matched: list[tuple[str, Any, Any]] = []  # ("update", cond, set) | ("delete", cond, None)
        self.not_matched: list[tuple[Any, Any]] = []  # (cond, values or None for all)
        self.by_source: list[tuple[str, Any, Any]] = []  # target rows no source row matches: as ``matched``

    def when_matched_update(self, set: dict[str, str | Column], condition: str | Column | None = None
                            ) -> "MergeBuilder":
        """Update the matched target rows (for which ``condition`` holds): ``set`` maps target columns to Spark SQL
        expressions over both sides (``{"v": "s.v", "n": "t.n + 1"}``), as ``WHEN MATCHED THEN UPDATE SET``."""
        self.matched.append(("update", condition, dict(set)))
        return self

    def when_matched_update_all(self, condition: str | Column | None = None) -> "MergeBuilder":
        """Set every target column to the source column of the same name (``UPDATE SET *``)."""
        self.matched.append(("update", condition, None))
        return self

    def when_matched_delete(self, condition: str | Column | None = None) -> "MergeBuilder":
        """Delete the matched target rows (for which ``condition`` holds)."""
        self.matched.append(("delete", condition, None))
        return self

    def when_not_matched_insert(self, values: dict[str, str | Column], condition: str | Column | None = None
                                ) -> "MergeBuilder":
        """Insert a row for each source row no target row matches (and ``condition`` holds for): ``values`` maps
        target columns to expressions over the source; columns left out are null (``INSERT (...) VALUES (...)``)."""
        self.not_matched.append((condition, dict(values)))
        return self

    def when_not_matched_insert_all(self, condition: str | Column | None = None) -> "MergeBuilder":
        """Insert each unmatched source row, columns by name (``INSERT *``)."""
        self.not_matched.append((condition, None))
        return self

    def when_not_matched_by_source_update(self, set: dict[str, str | Column], condition: str | Column | None = None
                                          ) -> "MergeBuilder":
        """Update the target rows no source row matches (and ``condition`` holds for), as Spark's ``WHEN NOT
        MATCHED BY SOURCE THEN UPDATE``: ``set`` may use target columns only."""
        self.by_source.append(("update", condition, dict(set)))
        return self

    def when_not_matched_by_source_delete(self, condition: str | Column | None = None) -> "MergeBuilder":
        """Delete the target rows no source row matches (and ``condition`` holds for)."""
        self.by_source.append(("delete", condition, None))
        return self

    def execute(self) -> Any:
        """Run the merge: one atomic commit, or an error and nothing committed. Returns None, or for a merge with
        an idempotency key, the :class:`~sparkberg.table.WriteOutcome`."""
        if not self.matched and not self.not_matched and not self.by_source:
            raise ValidationError("merge needs at least one when_matched, when_not_matched or "
                                  "when_not_matched_by_source clause")
        table, write = self.table, self.writing
        if write.wanted:
            with write.running():
                self.table, self.request = write.view, write.request  # (with a merged schema, the table's view)
                write.commit(self._execute())
        outcome = write.outcome()
        return None if outcome is table else outcome

    def _execute(self) -> Changes | None:
        """What the merge changes (None: nothing)."""
        # The source is read by several jobs (the pruning's, the join, the not-matched rows): cached, each row with
        # an id so its not-matched rows are those of no matched pair
        src = self.source.withColumn("_src_id", F.monotonically_increasing_id()).cache()
        try:
            target_only, keys = self._on_clause()
            done = not target_only and self._on_driver(src, keys)
            if isinstance(done, _Done):
                return done.changes
            if done:  # (planned for the driver, whose bound the files exceed)
                return self._merge(src, done)
            # (filled now, by the job that also finds each key's range and estimates its distinct values: the join
            # sees the source's true size, and broadcasts it when small)
            found = src.agg(F.count(F.lit(1)), *[f(F.col(f"`{s_col}`")) for _, s_col, _ in keys
                                                 for f in (F.min, F.max, F.approx_count_distinct)]).collect()[0][1:]
            ranges = {s_col: (found[3 * i], found[3 * i + 1], found[3 * i + 2]) for i, (_, s_col, _) in enumerate(keys)}
            target_filter, prune = self._pruning(src, target_only, keys, ranges)
            return self._merge(src, RowLevel(self.table, self.request, target_filter, prune))
        finally:
            src.unpersist()

    def _merge(self, src, rl: RowLevel) -> Changes | None:
        """The merge as three sets of rows, each computed once: the matched (target, source) pairs, from an inner
        join (broadcast by Spark when the source is small, so the target is streamed past it, not shuffled);
        the source rows of no pair; and, only with ``when_not_matched_by_source`` clauses, the target rows of no
        pair. Each gets its clause's action (``U<i>``/``D``/``K`` for matched rows, ``I<i>``/``X`` for source
        rows, ``B<i>``/``D``/``K`` for target rows)."""
        cols = [f.name for f in rl.schema.fields]
        lineage = rl.lineage
        ta, sa = self.ta, self.sa
        src_cols = {c.lower(): c for c in self.source.columns}
        tgt = self._target(rl, cols, lineage)
        action = F.lit("K")
        for i, (kind, cond, _) in reversed(list(enumerate(self.matched))):
            hit = F.lit(True) if cond is None else F.coalesce(_expr(cond), F.lit(False))
            action = F.when(hit, F.lit(f"U{i}" if kind == "update" else "D")).otherwise(action)
        pairs = tgt.alias(ta).join(src.alias(sa), _expr(self.condition), "inner").withColumn("_action", action)
        if all(spec is None for kind, _, spec in self.matched if kind == "update"):
            # (no matched row's new values come from the target: only the source's columns, the matched row's
            # file, position and row id (:meth:`_values`), and its action are kept, so the target's scan reads of
            # its data columns only those the ON clause and the clauses' conditions read)
            pairs = pairs.select(*[F.col(f"{ta}.`{c}`") for c in ["_file", "_pos"] + lineage[:1]],
                                 *[F.col(f"{sa}.`{c.replace('`', '``')}`") for c in src.columns], "_action")
        pairs = pairs.cache()
        try:
            # (as Spark's MERGE: a target row matched twice is an error where it is ambiguous which source row acts
            # on it: not for a merge without matched clauses, whose matched rows only keep source rows out, nor for
            # one unconditional delete)
            checked = self.matched and [(k, c) for k, c, _ in self.matched] != [("delete", None)]
            keys = self._on_clause()[1] if checked else []
            dup = checked and (pairs.groupBy(F.col(f"{ta}._file"), F.col(f"{ta}._pos"))
                               .agg(F.count(F.lit(1)).alias("_n"),
                                    *[F.first(F.col(f"{sa}.`{s_col}`")).alias(f"_key{i}")
                                      for i, (_, s_col, _) in enumerate(keys)])
                               .filter("_n > 1").limit(1).collect())
            if dup:
                raise _matched_twice(dup[0][0], dup[0][1], [(f.name, dup[0][3 + i]) for i, (f, _, _) in
                                                            enumerate(keys)])
            ins = F.lit("X")
            for i, (cond, _) in reversed(list(enumerate(self.not_matched))):
                hit = F.lit(True) if cond is None else F.coalesce(_expr(cond), F.lit(False))
                ins = F.when(hit, F.lit(f"I{i}")).otherwise(ins)
            unmatched = src.join(pairs.select(F.col(f"{sa}._src_id").alias("_src_id")), "_src_id", "left_anti") \
                .alias(sa).withColumn("_action", ins) if self.not_matched else None
            orphans = None
            if self.by_source:
                orphan = F.lit("K")
                for i, (kind, cond, _) in reversed(list(enumerate(self.by_source))):
                    hit = F.lit(True) if cond is None else F.coalesce(_expr(cond), F.lit(False))
                    orphan = F.when(hit, F.lit(f"B{i}" if kind == "update" else "D")).otherwise(orphan)
                at = pairs.select(F.col(f"{ta}._file").alias("_file"), F.col(f"{ta}._pos").alias("_pos"))
                orphans = tgt.join(at, ["_file", "_pos"], "left_anti").alias(ta).withColumn("_action", orphan)
            return self._changes(rl, pairs, unmatched, orphans, cols, lineage, src_cols)
        finally:
            pairs.unpersist()

    def _on_driver(self, src, keys: list[tuple[Any, str, bool]]) -> "bool | RowLevel | _Done":
        """The merge done on the driver, :class:`_Done` with what it changes, for a merge whose ON clause only
        equates target and source columns (integers, or strings) and whose clauses are each unconditional and at
        most one of a kind, ``update_all`` or delete, ``insert_all``, on a merge-on-read table without a sort order:
        the source's rows (at most ``tuning.DRIVER_MERGE_ROWS``, of the target's column types or integers they widen
        to) collected, the pruned target files' keys read by the driver's threads (at most
        ``tuning.DRIVER_FILTER_VALUES`` values) and joined with them, the new rows and the deletion vectors or position deletes written by this process: a fresh process
        (a scheduled job) pays several seconds for each of the Spark path's jobs that this spares it. False, for
        Spark to merge, otherwise; the target's plan where only its size kept the merge from the driver."""
        spark = self.table.spark
        if not is_classic(spark) or not keys or self.by_source or \
                len(keys) != len(conjuncts(self.condition)) or any(null_safe for *_, null_safe in keys) or \
                [(k, c, v) for k, c, v in self.matched] not in ([], [("update", None, None)], [("delete", None, None)]) \
                or self.not_matched not in ([], [(None, None)]):
            return False
        m = self.table.metadata
        if not merges_on_read(m, "merge") or table_ordering(m) != UNSORTED:
            return False
        schema = m.current_schema
        source = {f.name.lower(): f for f in self.source.schema.fields}
        targets = {f.name: f.dataType for f in self.table.spark_schema().fields}
        cols = [f.name for f in schema.fields]
        written = (self.matched and self.matched[0][0] == "update") or self.not_matched
        if len(source) < len(self.source.columns) or written and not all(
                f.field_type.is_primitive and f.field_type not in _NOT_COLLECTED and
                not isinstance(f.field_type, (T.GeometryType, T.GeographyType)) and
                f.name.lower() in source and _widens(source[f.name.lower()].dataType, targets[f.name])
                for f in schema.fields):
            return False  # (Spark casts them, names the missing or ambiguous column, or converts the type)
        if not all(s_col.lower() in source and _comparable(field, source[s_col.lower()].dataType)
                   for field, s_col, _ in keys):
            return False
        key_types = [pa.int64() if field.field_type in (T.INT, T.LONG) else pa.large_string() for field, _, _ in keys]
        picked = [source[c.lower()] for c in cols] if written else []
        fields = [ST.StructField(c, f.dataType) for c, f in zip(cols, picked)] + \
            [ST.StructField(f"_key{i}", source[s_col.lower()].dataType) for i, (_, s_col, _) in enumerate(keys)]
        columns = [F.col("`{}`".format(f.name.replace("`", "``")))
                   for f in picked + [source[s_col.lower()] for _, s_col, _ in keys]]
        try:
            rows = collect_arrow(src.select(*[c.alias(f.name) for c, f in zip(columns, fields)])
                                 .limit(tuning.DRIVER_MERGE_ROWS + 1), arrow_schema(ST.StructType(fields)))
        except Exception as e:  # noqa: BLE001 - rows too wide for the driver: the Spark path takes them
            if "maxResultSize" not in str(e):
                raise
            return False
        if rows.num_rows > tuning.DRIVER_MERGE_ROWS:
            return False
        found = [pc.unique(pc.drop_null(rows.column(f"_key{i}").cast(t))) for i, t in enumerate(key_types)]
        prune = None
        for (field, _, _), values in zip(keys, found):
            p = values_predicate(field, schema, values.to_pylist() if len(values) <= MAX_KEY_VALUES else None,
                                 lambda: (pc.min(values).as_py(), pc.max(values).as_py()))
            if p is not None:
                prune = p if prune is None else And(prune, p)
        rl = RowLevel(self.table, self.request, None, prune)
        read = {f.field_id: f for f, _, _ in keys}
        reader = TaskReader(m, T.Schema(list(read.values()) + rl.lineage_fields[:1]), rl.table.io)
        try:
            reader.check(rl.tasks)
        except NotSupportedError:  # (an equality delete on a nested column: the DataFrame read applies it)
            return rl
        if sum(t["record_count"] for t in rl.tasks) * len(read) > tuning.DRIVER_FILTER_VALUES or any(
                t == pa.large_string() and len(v) * len(rl.tasks) > tuning.DRIVER_FILTER_VALUES
                for t, v in zip(key_types, found)):
            return rl
        at = {fid: i for i, fid in enumerate(read)}
        tests = [(at[field.field_id], t, _member(values)) for (field, _, _), values, t in zip(keys, found, key_types)]

        def matches(batch):  # (every key's value among the source's: the rows the join below may pair)
            hit = np.ones(batch.num_rows, bool)
            for i, t, test in tests:
                hit &= test(batch.column(i).cast(t))
            return hit
        identity = identity_values(m, schema, rl.tasks, rl.plan.layout) if rl.tasks else {}
        cache = delete_cache(spark)
        hits = by_threads(lambda t: reader.matched_rows(t, cache, identity, matches), rl.tasks)
        pairs = self._driver_pairs(rl, keys, key_types, rows, hits, at)
        return _Done(self._driver_changes(rl, rows, pairs, cols))

    @staticmethod
    def _driver_pairs(rl: RowLevel, keys, key_types, rows: pa.Table, hits: list, at: dict[int, int]) -> pa.Table:
        """The matched (target row, source row) pairs of :meth:`_on_driver`: ``_file`` (the index of the target's
        task), ``_pos``, ``_row_id`` (v3) and ``_src`` (the source row)."""
        target = []
        for i, (positions, found) in enumerate(hits):
            if len(positions):
                columns = {f"_key{k}": found.column(at[field.field_id]).cast(t)
                           for k, ((field, _, _), t) in enumerate(zip(keys, key_types))}
                columns.update(_file=pa.repeat(scalar(i, pa.int32()), len(positions)), _pos=indices(positions))
                if rl.lineage:
                    columns["_row_id"] = found.column(len(at))
                target.append(pa.table(columns))
        if not target:
            return pa.table({"_file": pa.nulls(0, pa.int32()), "_pos": pa.nulls(0, pa.int64()),
                             "_row_id": pa.nulls(0, pa.int64()), "_src": pa.nulls(0, pa.int64())})
        target_rows = pa.concat_tables(target)
        names = [f"_key{k}" for k in range(len(keys))]
        left, right = _inner_pairs([target_rows.column(n) for n in names],
                                   [rows.column(n).cast(t) for n, t in zip(names, key_types)])
        return target_rows.drop_columns(names).take(indices(left)).append_column("_src", indices(right))

    def _driver_changes(self, rl: RowLevel, rows: pa.Table, pairs: pa.Table, cols: list[str]) -> Changes | None:
        """The rows and deletes of :meth:`_on_driver`'s ``pairs`` written: what they change."""
        files, positions = (int_values(pairs.column(c))[0] for c in ("_file", "_pos"))
        order = np.lexsort((positions, files))  # (the pairs by file and position)
        files, positions = files[order], positions[order]
        if self.matched and self.matched[0][0] == "update":
            twice = np.flatnonzero((np.diff(files) == 0) & (np.diff(positions) == 0))
            if len(twice):
                source_row = int_values(pairs.column("_src"))[0][order[twice[0]]]
                keys = self._on_clause()[1]
                raise _matched_twice(rl.tasks[files[twice[0]]]["file_path"], positions[twice[0]],
                                     [(f.name, rows.column(f"_key{i}")[source_row].as_py())
                                      for i, (f, _, _) in enumerate(keys)])
        written = arrow_schema(read_struct(T.Schema(list(rl.schema.fields) + rl.lineage_fields)))
        parts = []

        def part(at: np.ndarray, row_ids: pa.Array | None) -> None:
            if not len(at):
                return
            lineage = [pa.nulls(len(at), pa.int64()) for _ in rl.lineage]
            if lineage and row_ids is not None:
                lineage[0] = row_ids
            parts.append(pa.Table.from_arrays(rows.select(cols).take(indices(at)).columns + lineage,
                                              names=written.names).cast(written))
        source_rows = int_values(pairs.column("_src"))[0]
        if self.matched and self.matched[0][0] == "update":
            part(source_rows, pairs.column("_row_id") if rl.lineage else None)
        if self.not_matched:
            unmatched = np.ones(rows.num_rows, bool)
            unmatched[source_rows] = False
            part(np.flatnonzero(unmatched), None)
        added = write_on_driver(rl.m, [b for p in parts for b in p.to_batches()], rl.lineage_fields,
                                io=rl.table.io) \
            if parts else []
        changed: dict[str, np.ndarray] = {}
        if self.matched and pairs.num_rows:  # (each file's positions: its run of the sorted pairs)
            starts = np.flatnonzero(np.diff(files)) + 1
            for i, at in zip(files[np.r_[0, starts]], np.split(positions, starts)):
                changed[rl.tasks[i]["file_path"]] = np.unique(at)
        with deleted_on_failure(rl.table.io, lambda: [f.file_path for f in added]):
            added_deletes, removed = rl.delete_positions(changed, rl.tasks) if changed else ([], set())
        if not added and not added_deletes:
            return None
        return rl.changes("overwrite", added, added_deletes, removed,
                          required={d.referenced_data_file for _, d in added_deletes}, command="merge")

    @staticmethod
    def _target(rl: RowLevel, cols: list[str], lineage: list[str]):
        """The rows of the files the merge may touch, with their file and position."""
        if rl.tasks:
            return rl.read(rl.tasks, cols + lineage + ["_file", "_pos"], None)
        return local_dataframe(rl.spark, [], rl.table.spark_schema()).select(
            "*", *[F.lit(None).cast("bigint").alias(c) for c in lineage],
            F.lit(None).cast("string").alias("_file"), F.lit(None).cast("bigint").alias("_pos"))

    def _on_clause(self) -> tuple[list[str], list[tuple[Any, str, bool]]]:
        """The ON clause's conjuncts on target columns alone (as SQL on the target's columns), and its keys: each
        (target field, source column, null-safe) it equates, for a target field of a primitive type. A Column
        condition has neither, and neither does a merge with ``when_not_matched_by_source`` clauses (the rows no
        source row matches are the merge's too: every file may hold one)."""
        if not isinstance(self.condition, str) or self.by_source:
            return [], []
        ta, sa = re.escape(self.ta), re.escape(self.sa)
        col = r"`?(\w+)`?"
        pair = re.compile(rf"^\(?\s*(\w+)\.{col}\s*(=|<=>)\s*(\w+)\.{col}\s*\)?$")
        schema = self.table.metadata.current_schema
        target_only, keys = [], []
        for c in conjuncts(self.condition):
            m = pair.match(c)
            if m and {m.group(1), m.group(4)} == {self.ta, self.sa}:
                t_col, s_col = (m.group(2), m.group(5)) if m.group(1) == self.ta else (m.group(5), m.group(2))
                try:
                    field = schema.find_field(t_col)
                except ValidationError:
                    continue
                if field.field_type.is_primitive:
                    keys.append((field, s_col, m.group(3) == "<=>"))
            elif not re.search(rf"\b{sa}\.", " ".join(c.split("'")[::2])):  # (no source column outside quotes)
                target_only.append(_outside_quotes(c, lambda p: re.sub(rf"\b{ta}\.", "", p)))
        return target_only, keys

    def _pruning(self, src, target_only: list[str], keys: list[tuple[Any, str, bool]],
                 ranges: dict[str, tuple]) -> tuple[str | None, Any]:
        """What narrows the target scan: the ON clause's conjuncts on target columns alone (a SQL filter), and a
        predicate from the source's values of each key (:func:`key_predicate`; ``ranges``: each key's source
        column's (min, max, estimated distinct values)), so only files that may hold a matching row are read and
        joined."""
        schema = self.table.metadata.current_schema
        prune = None
        for field, s_col, null_safe in keys:
            lo, hi, estimate = ranges[s_col]
            p = key_predicate(src, s_col, field, schema, null_safe, (lo, hi), estimate)
            if p is not None:
                prune = p if prune is None else And(prune, p)
        try:
            target_filter = " AND ".join(f"({c})" for c in target_only) or None
            if target_filter is not None:
                translate_filter(target_filter, schema, session_time_zone(self.table.spark))
        except ValidationError:
            target_filter = None
        return target_filter, prune

    def _values(self, frame, cols, src_cols, lineage, kind: str, spec) -> list[Column]:
        """The written row's columns for a clause over ``frame`` (the joined rows): ``spec``'s assignments (None:
        the source's columns of the same names, ``update_all`` / ``insert_all``) under the session's store
        assignment policy, as UPDATE's (:func:`~sparkberg.write.dataframe.assignments`: nested fields too); the
        target's current values (update) or nulls (insert) elsewhere."""
        ta, sa = self.ta, self.sa
        target = self.table.spark_schema()
        types = {f.name: f.dataType for f in target.fields}
        if spec is None:
            missing = [c for c in cols if c.lower() not in src_cols]
            if missing:
                raise ValidationError(f"{kind}_all: source has no column {missing[0]!r}")
            spec = {c: F.col(f"{sa}.`{src_cols[c.lower()]}`") for c in cols}
        if kind == "update":
            def current(c: str) -> Column:
                return F.col(f"{ta}.`{c}`")
        else:
            def current(c: str) -> Column:
                return F.lit(None).cast(types[c])
        new = assigned_values(frame, target, {k: _expr(v) if isinstance(v, str) else v for k, v in spec.items()},
                              store_assignment_policy(self.table.spark), current)
        out = [new.get(c, current(c)).alias(c) for c in cols]
        if lineage:
            if kind == "update":
                out += [F.col(f"{ta}._row_id").alias("_row_id"),
                        F.lit(None).cast("bigint").alias("_last_updated_sequence_number")]
            else:
                out += [F.lit(None).cast("bigint").alias(c) for c in lineage]
        return out

    def _rows(self, pairs, unmatched, orphans, cols, lineage, src_cols, kept):
        """The rows to write: updated and inserted rows (and, for copy-on-write, the ``kept`` target rows of the
        files it rewrites); None when there are none to write."""
        parts = []
        known = {c.lower() for c in cols}

        for rows, clauses, tag in ((pairs, self.matched, "U"), (orphans, self.by_source, "B")):
            for i, (kind, _, spec) in enumerate(clauses):
                if kind == "update":
                    parts.append(rows.filter(F.col("_action") == f"{tag}{i}")
                                 .select(*self._values(rows, cols, src_cols, lineage, "update", spec)))
        for i, (_, spec) in enumerate(self.not_matched):
            unknown = [name for name in (spec or {}) if name.lower() not in known]
            if unknown:
                raise ValidationError(f"cannot insert unknown column {unknown[0]!r}")
            parts.append(unmatched.filter(F.col("_action") == f"I{i}")
                         .select(*self._values(unmatched, cols, src_cols, lineage, "insert", spec)))
        if kept is not None:
            parts.append(kept)
        if not parts:
            return None  # (a merge that only deletes writes no rows)
        out = parts[0]
        for p in parts[1:]:
            out = out.unionByName(p)
        return out

    def _changes(self, rl: RowLevel, pairs, unmatched, orphans, cols, lineage, src_cols) -> Changes | None:
        ta = self.ta
        changed = pairs.filter(F.col("_action").startswith("U") | (F.col("_action") == "D")) \
            .select(F.col(f"{ta}._file").alias("_file"), F.col(f"{ta}._pos").alias("_pos"))
        if orphans is not None:
            changed = changed.unionByName(
                orphans.filter(F.col("_action").startswith("B") | (F.col("_action") == "D"))
                .select(F.col(f"{ta}._file").alias("_file"), F.col(f"{ta}._pos").alias("_pos")))
        extra = rl.lineage_fields
        if merges_on_read(rl.m, "merge"):
            new_rows = self._rows(pairs, unmatched, orphans, cols, lineage, src_cols, None)
            added = write_files(rl.spark, rl.m, new_rows, extra_fields=extra, command="merge",
                                position_delta=True, io=rl.table.io) if new_rows is not None else []
            with deleted_on_failure(rl.table.io, lambda: [f.file_path for f in added]):
                # (no job asks first whether any row changed: with none, the delete writer writes nothing)
                may_change = rl.tasks and (self.matched or self.by_source)
                added_deletes, removed = rl.delete_positions(changed, rl.tasks) if may_change else ([], set())
            if not added and not added_deletes:
                return None
            return rl.changes("overwrite", added, added_deletes, removed,
                              required={d.referenced_data_file for _, d in added_deletes}, command="merge")
        # copy-on-write: the files with a changed row are rewritten, their other rows read again and kept
        hit = {r[0] for r in changed.select("_file").distinct().collect()}
        rewritten = [t for t in rl.tasks if t["file_path"] in hit]
        kept = rl.read(rewritten, cols + lineage + ["_file", "_pos"], None) \
            .join(changed, ["_file", "_pos"], "left_anti").select(*cols, *lineage) if rewritten else None
        new_rows = self._rows(pairs, unmatched, orphans, cols, lineage, src_cols, kept)
        added = write_files(rl.spark, rl.m, new_rows, extra_fields=extra, command="merge", io=rl.table.io) \
            if new_rows is not None else []
        removed = removal_of(rewritten)
        if not added and not removed:
            return None
        return rl.changes("overwrite", added, [], removed, command="merge")
