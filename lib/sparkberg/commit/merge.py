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

import contextlib
import re
from typing import Any, Callable, ContextManager

from pyspark.sql import Column
from pyspark.sql import functions as F

from sparkberg.commit.rowlevel import RowLevel, removal_of
from sparkberg.errors import ValidationError
from sparkberg.expressions.predicates import FALSE, And, Predicate, and_, bind
from sparkberg.expressions.sql import translate_filter
from sparkberg.spark.session import session_time_zone
from sparkberg.io.fileio import deleted_on_failure
from sparkberg.write.dataframe import write_files


def _expr(e: str | Column) -> Column:
    return e if isinstance(e, Column) else F.expr(e)


# a source key with at most this many distinct values prunes by the values (an IN list the metrics evaluator tests
# per file); with more, by their range
MAX_KEY_VALUES = 1000


def _conjuncts(text: str) -> list[str]:
    """The top-level AND operands of a SQL condition (none split inside parentheses or quotes)."""
    out, depth, quoted, start, i = [], 0, False, 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "'":
            quoted = not quoted
        elif not quoted:
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and re.match(r"\sand\s", text[i:i + 5], re.I):
                out.append(text[start:i].strip())
                start = i = i + 5
                continue
        i += 1
    out.append(text[start:].strip())
    return [c for c in out if c]


def _outside_quotes(text: str, fn) -> str:
    parts = text.split("'")
    return "'".join(fn(p) if i % 2 == 0 else p for i, p in enumerate(parts))


class MergeBuilder:
    """Collects MERGE clauses; :meth:`execute` runs them as one commit."""

    def __init__(self, table, source, condition: str | Column, target_alias: str = "t", source_alias: str = "s",
                 writing: Callable[[], ContextManager] = contextlib.nullcontext):
        self.table = table
        self.writing = writing  # the block the merge runs in (its target, snapshot properties, job label)
        self.source = source
        self.condition = condition
        self.ta = target_alias
        self.sa = source_alias
        self.matched: list[tuple[str, Any, Any]] = []  # ("update", cond, set) | ("delete", cond, None)
        self.not_matched: list[tuple[Any, Any]] = []  # (cond, values or None for all)
        self.by_source: list[tuple[str, Any, Any]] = []  # target rows no source row matches: as ``matched``

    def when_matched_update(self, set: dict[str, str | Column], condition: str | Column | None = None
                            ) -> "MergeBuilder":
        self.matched.append(("update", condition, dict(set)))
        return self

    def when_matched_update_all(self, condition: str | Column | None = None) -> "MergeBuilder":
        self.matched.append(("update", condition, None))
        return self

    def when_matched_delete(self, condition: str | Column | None = None) -> "MergeBuilder":
        self.matched.append(("delete", condition, None))
        return self

    def when_not_matched_insert(self, values: dict[str, str | Column], condition: str | Column | None = None
                                ) -> "MergeBuilder":
        self.not_matched.append((condition, dict(values)))
        return self

    def when_not_matched_insert_all(self, condition: str | Column | None = None) -> "MergeBuilder":
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

    def execute(self) -> None:
        """Run the merge: one atomic commit, or an error and nothing committed."""
        if not self.matched and not self.not_matched and not self.by_source:
            raise ValidationError("merge needs at least one when_matched, when_not_matched or "
                                  "when_not_matched_by_source clause")
        with self.writing() as table:
            self.table = table if table is not None else self.table  # (with a merged schema: its view)
            self._execute()

    def _execute(self) -> None:
        target_filter, prune = self._pruning()
        rl = RowLevel(self.table, target_filter, prune)
        cols = [f.name for f in rl.schema.fields]
        lineage = rl.lineage
        ta, sa = self.ta, self.sa
        src_cols = {c.lower(): c for c in self.source.columns}
        if rl.tasks:
            tgt = rl.read(rl.tasks, cols + lineage + ["_file", "_pos"], None)
        else:
            tgt = rl.spark.createDataFrame([], rl.table.spark_schema()).select(
                "*", *[F.lit(None).cast("bigint").alias(c) for c in lineage],
                F.lit(None).cast("string").alias("_file"), F.lit(None).cast("bigint").alias("_pos"))
        tgt = tgt.withColumn("_tgt", F.lit(True)).alias(ta)
        src = self.source.withColumn("_src", F.lit(True)).alias(sa)
        j = tgt.join(src, _expr(self.condition), "full_outer")
        both = F.col(f"{ta}._tgt").isNotNull() & F.col(f"{sa}._src").isNotNull()
        src_only = F.col(f"{ta}._tgt").isNull()
        tgt_only = F.col(f"{sa}._src").isNull()
        action = F.lit("K")
        for i, (kind, cond, _) in reversed(list(enumerate(self.matched))):
            hit = both if cond is None else both & F.coalesce(_expr(cond), F.lit(False))
            action = F.when(hit, F.lit(f"U{i}" if kind == "update" else "D")).otherwise(action)
        ins = F.lit("X")
        for i, (cond, _) in reversed(list(enumerate(self.not_matched))):
            hit = src_only if cond is None else src_only & F.coalesce(_expr(cond), F.lit(False))
            ins = F.when(hit, F.lit(f"I{i}")).otherwise(ins)
        orphan = F.lit("K")
        for i, (kind, cond, _) in reversed(list(enumerate(self.by_source))):
            hit = tgt_only if cond is None else tgt_only & F.coalesce(_expr(cond), F.lit(False))
            orphan = F.when(hit, F.lit(f"B{i}" if kind == "update" else "D")).otherwise(orphan)
        j = j.withColumn("_action", F.when(src_only, ins).when(tgt_only, orphan).otherwise(action)).cache()
        try:
            dup = (j.filter(both).groupBy(F.col(f"{ta}._file"), F.col(f"{ta}._pos")).count()
                   .filter("count > 1").limit(1).collect())
            if dup:
                raise ValidationError("MERGE matched a single row of the target table with more than one source row "
                                      f"(file {dup[0][0]}, position {dup[0][1]}); make the source keys unique")
            self._commit(rl, j, cols, lineage, src_cols)
        finally:
            j.unpersist()

    def _pruning(self) -> tuple[str | None, Any]:
        """What narrows the target scan: the ON clause's conjuncts on target columns alone (a SQL filter), and a
        predicate from the source's values of each key the ON clause equates with a target column (its values,
        or their range), so only files that may hold a matching row are read and joined. A Column condition
        prunes nothing."""
        if not isinstance(self.condition, str) or self.by_source:
            return None, None  # (rows no source row matches are the merge's too: every file may hold one)
        ta, sa = re.escape(self.ta), re.escape(self.sa)
        col = r"`?(\w+)`?"
        pair = re.compile(rf"^\(?\s*(\w+)\.{col}\s*(=|<=>)\s*(\w+)\.{col}\s*\)?$")
        target_only, keys = [], []
        for c in _conjuncts(self.condition):
            m = pair.match(c)
            if m and {m.group(1), m.group(4)} == {self.ta, self.sa}:
                t_col, s_col = (m.group(2), m.group(5)) if m.group(1) == self.ta else (m.group(5), m.group(2))
                keys.append((t_col, s_col, m.group(3) == "<=>"))
            elif not re.search(rf"\b{sa}\.", " ".join(c.split("'")[::2])):  # (no source column outside quotes)
                target_only.append(_outside_quotes(c, lambda p: re.sub(rf"\b{ta}\.", "", p)))
        schema = self.table.metadata.current_schema
        predicates = []
        for t_col, s_col, null_safe in keys:
            try:
                field = schema.find_field(t_col)
            except ValidationError:
                continue
            if not field.field_type.is_primitive:
                continue
            values = [r[0] for r in self.source.select(F.col(f"`{s_col}`")).distinct().limit(MAX_KEY_VALUES + 1)
                      .collect()]
            if null_safe and None in values:
                continue  # (null keys match null rows: no range holds them)
            values = [v for v in values if v is not None]
            try:
                if not values:
                    predicates.append(FALSE)
                elif len(values) <= MAX_KEY_VALUES:
                    predicates.append(bind(Predicate("in", field.name, values), schema))
                else:
                    lo, hi = self.source.agg(F.min(F.col(f"`{s_col}`")), F.max(F.col(f"`{s_col}`"))).collect()[0]
                    predicates.append(bind(and_(Predicate("gt_eq", field.name, lo), Predicate("lt_eq", field.name,
                                                                                              hi)), schema))
            except ValidationError:  # (a source type the column's literals cannot take: no pruning by this key)
                continue
        prune = None
        for p in predicates:
            prune = p if prune is None else And(prune, p)
        try:
            target_filter = " AND ".join(f"({c})" for c in target_only) or None
            if target_filter is not None:
                translate_filter(target_filter, schema, session_time_zone(self.table.spark))
        except ValidationError:
            target_filter = None
        return target_filter, prune

    def _values(self, cols, src_cols, lineage, kind: str, spec) -> list[Column]:
        ta, sa = self.ta, self.sa
        types = {f.name: f.dataType for f in self.table.spark_schema().fields}
        out = []
        for c in cols:
            if kind == "update":
                if spec is None:
                    if c.lower() not in src_cols:
                        raise ValidationError(f"update_all: source has no column {c!r}")
                    out.append(F.col(f"{sa}.`{src_cols[c.lower()]}`").cast(types[c]).alias(c))
                else:
                    match = {k.lower(): v for k, v in spec.items()}
                    out.append((_expr(match[c.lower()]).cast(types[c]) if c.lower() in match
                                else F.col(f"{ta}.`{c}`")).alias(c))
            else:
                if spec is None:
                    if c.lower() not in src_cols:
                        raise ValidationError(f"insert_all: source has no column {c!r}")
                    out.append(F.col(f"{sa}.`{src_cols[c.lower()]}`").cast(types[c]).alias(c))
                else:
                    match = {k.lower(): v for k, v in spec.items()}
                    out.append((_expr(match[c.lower()]) if c.lower() in match else F.lit(None))
                               .cast(types[c]).alias(c))
        if lineage:
            if kind == "update":
                out += [F.col(f"{ta}._row_id").alias("_row_id"),
                        F.lit(None).cast("bigint").alias("_last_updated_sequence_number")]
            else:
                out += [F.lit(None).cast("bigint").alias(c) for c in lineage]
        return out

    def _rows(self, j, cols, lineage, src_cols, keep_unchanged):
        """The rows to write: updated and inserted rows (and, for copy-on-write, the untouched target rows of
        ``keep_unchanged``); None when there are none to write."""
        ta = self.ta
        parts = []
        known = {c.lower() for c in cols}

        def check(spec, what: str) -> None:
            unknown = [name for name in (spec or {}) if name.lower() not in known]
            if unknown:
                raise ValidationError(f"cannot {what} unknown column {unknown[0]!r}")
        for i, (kind, _, spec) in enumerate(self.matched):
            if kind == "update":
                check(spec, "update")
                parts.append(j.filter(F.col("_action") == f"U{i}").select(*self._values(cols, src_cols, lineage,
                                                                                         "update", spec)))
        for i, (kind, _, spec) in enumerate(self.by_source):
            if kind == "update":
                check(spec, "update")
                parts.append(j.filter(F.col("_action") == f"B{i}").select(*self._values(cols, src_cols, lineage,
                                                                                         "update", spec)))
        for i, (_, spec) in enumerate(self.not_matched):
            check(spec, "insert")
            parts.append(j.filter(F.col("_action") == f"I{i}").select(*self._values(cols, src_cols, lineage,
                                                                                     "insert", spec)))
        if keep_unchanged is not None:
            parts.append(keep_unchanged.select(*[F.col(f"{ta}.`{c}`").alias(c) for c in cols],
                                               *[F.col(f"{ta}.`{c}`").alias(c) for c in lineage]))
        if not parts:
            return None  # (a merge that only deletes writes no rows)
        out = parts[0]
        for p in parts[1:]:
            out = out.unionByName(p)
        return out

    def _commit(self, rl: RowLevel, j, cols, lineage, src_cols) -> None:
        ta = self.ta
        changed = j.filter(F.col("_action").startswith("U") | F.col("_action").startswith("B")
                           | (F.col("_action") == "D"))
        mode = rl.m.properties.get("write.merge.mode", "copy-on-write").lower()
        extra = rl.lineage_fields
        if mode == "merge-on-read" and rl.m.format_version >= 2:
            new_rows = self._rows(j, cols, lineage, src_cols, None)
            added = write_files(rl.spark, rl.m, new_rows, extra_fields=extra, command="merge",
                                position_delta=True) if new_rows is not None else []
            with deleted_on_failure(rl.table.io, lambda: [f.file_path for f in added]):
                positions = changed.select(F.col(f"{ta}._file").alias("_file"), F.col(f"{ta}._pos").alias("_pos"))
                has_changes = positions.limit(1).count() > 0
                added_deletes, removed = rl.delete_positions(positions, rl.tasks) if has_changes else ([], set())
            if not added and not added_deletes:
                return
            rl.commit("overwrite", added, added_deletes, removed,
                      required={d.referenced_data_file for _, d in added_deletes},
                      level_key="write.merge.isolation-level")
            return
        hit = {r[0] for r in changed.select(F.col(f"{ta}._file")).distinct().collect()}
        untouched = j.filter((F.col("_action") == "K") & F.col(f"{ta}._file").isin(list(hit))) if hit else None
        new_rows = self._rows(j, cols, lineage, src_cols, untouched)
        added = write_files(rl.spark, rl.m, new_rows, extra_fields=extra, command="merge") \
            if new_rows is not None else []
        removed = removal_of([t for t in rl.tasks if t["file_path"] in hit])
        if not added and not removed:
            return
        rl.commit("overwrite", added, [], removed, level_key="write.merge.isolation-level")
