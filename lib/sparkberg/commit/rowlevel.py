"""Overwrite, dynamic overwrite and update, built from the same pieces as delete
(:mod:`sparkberg.commit.delete`): find the files a filter may touch, drop whole files, rewrite or add delete
files for the rest, add new data, commit once."""
from __future__ import annotations

import uuid

from pyspark.sql import functions as F

from sparkberg.commit.delete import (
    _file_scoped_deletes, _partition_by_id, serializable_check,
)
from sparkberg.commit.producer import Changes, commit_changes
from sparkberg.errors import ValidationError
from sparkberg.expressions.predicates import TRUE, bind, evaluate
from sparkberg.expressions.projection import strict_projection
from sparkberg.planning.scan import plan
from sparkberg.read.reader import LAST_UPDATED_SEQ, ROW_ID, read_tasks
from sparkberg.write.dataframe import align, write_files
from sparkberg.write.deletes import RESULT_DDL, DeleteWriter, delete_file_from_json, partition_json


class RowLevel:
    """The files of the current snapshot a filter may touch, split into whole-file matches and the rest."""

    def __init__(self, table, filter: str | None):
        from sparkberg.expressions.sql import translate_filter
        from sparkberg.spark.session import session_time_zone
        self.table = table
        self.m = m = table.metadata
        self.spark = table.spark
        self.schema = schema = m.current_schema
        self.filter = filter
        tz = session_time_zone(self.spark)
        self.weak = TRUE if filter is None else bind(translate_filter(filter, schema, tz), schema)
        strong = TRUE if filter is None else bind(translate_filter(filter, schema, tz, strengthen=True), schema)
        self.plan = plan(self.spark, m, table.io, m.current_snapshot, self.weak) if m.current_snapshot else None
        self.tasks = self.plan.rows() if self.plan else []
        strict = {s.spec_id: strict_projection(strong, s, schema) for s in m.partition_specs}
        self.whole = [t for t in self.tasks if evaluate(strict[t["spec_id"]], self.partition(t))]
        whole = {t["file_path"] for t in self.whole}
        self.partial = [t for t in self.tasks if t["file_path"] not in whole]
        self.removed: set = set()
        for t in self.whole:
            self.removed.add((t["file_path"], None))
            self.removed |= _file_scoped_deletes(t)

    def partition(self, task) -> dict:
        return _partition_by_id(self.plan.layout, task["spec_id"], task["partition"])

    def read(self, tasks, columns, filter):
        return read_tasks(self.spark, self.m, self.schema, tasks, self.plan.layout, columns, filter)

    @property
    def lineage(self) -> list[str]:
        return ["_row_id", "_last_updated_sequence_number"] if self.m.format_version >= 3 else []

    def delete_positions(self, matched, tasks) -> tuple[list, set]:
        """Delete files for the (``_file``, ``_pos``) rows of ``matched``: position deletes (v2) or DVs (v3)."""
        m, schema = self.m, self.schema
        by_path = {t["file_path"]: t for t in tasks}
        targets = {}
        base_dir = m.properties.get("write.data.path", f"{m.location}/data")
        for t in tasks:
            spec = m.spec(t["spec_id"])
            part = self.partition(t)
            rel = spec.partition_to_path(part, schema) if spec.fields else ""
            targets[t["file_path"]] = {
                "spec_id": t["spec_id"], "partition": partition_json(spec, schema, part),
                "dir": "/".join(x for x in (base_dir, rel) if x),
                "dvs": [(d["file_path"], d["content_offset"], d["content_size_in_bytes"]) for d in t["deletes"]
                        if d["file_format"] == "puffin"],
                "position_files": [d["file_path"] for d in t["deletes"]
                                   if d["content"] == 1 and d["file_format"] != "puffin"]}
        writer = DeleteWriter(targets, dv=m.format_version >= 3, write_id=uuid.uuid4().hex[:16],
                              compression=m.properties.get("write.parquet.compression-codec", "zstd"))
        rows = (matched.select("_file", "_pos").repartition("_file").sortWithinPartitions("_file", "_pos")
                .mapInArrow(writer, RESULT_DDL).collect())
        added, removed = [], set()
        for r in rows:
            spec_id, d = delete_file_from_json(r["delete_file"], m)
            added.append((spec_id, d))
            if m.format_version >= 3:
                removed |= _file_scoped_deletes(by_path[d.referenced_data_file])
        return added, removed

    def commit(self, op: str, added_data, added_deletes, removed, required=frozenset(), level_key=None):
        isolation = self.m.properties.get(level_key or "write.delete.isolation-level", "serializable").lower()
        validate = serializable_check(self.table, self.weak) if isolation == "serializable" else None
        try:
            commit_changes(self.table, Changes(op, list(added_data), list(added_deletes), set(removed),
                                               set(required), validate))
        except BaseException:
            for f in added_data:
                self.table.io.delete(f.file_path)
            for path in {d.file_path for _, d in added_deletes}:
                self.table.io.delete(path)
            raise


def overwrite(table, df, filter: str | None) -> None:
    """Replace the rows matching ``filter`` (all rows when None) with the rows of ``df``, in one commit."""
    rl = RowLevel(table, filter)
    added = write_files(rl.spark, rl.m, df)
    removed = set(rl.removed)
    try:
        if rl.partial and filter is not None:
            hit = {r[0] for r in rl.read(rl.partial, ["_file"], filter).distinct().collect()}
            rewrite = [t for t in rl.partial if t["file_path"] in hit]
            if rewrite:
                keep = rl.read(rewrite, [f.name for f in rl.schema.fields] + rl.lineage,
                               F.expr(f"NOT coalesce(({filter}), false)"))
                added += write_files(rl.spark, rl.m, keep, extra_fields=[ROW_ID, LAST_UPDATED_SEQ] if rl.lineage
                                     else [])
                for t in rewrite:
                    removed.add((t["file_path"], None))
                    removed |= _file_scoped_deletes(t)
    except BaseException:
        for f in added:
            table.io.delete(f.file_path)
        raise
    rl.commit("overwrite", added, [], removed)


def dynamic_overwrite(table, df) -> None:
    """Replace every partition (of the default spec) that ``df`` has rows for with those rows."""
    rl = RowLevel(table, None)
    added = write_files(rl.spark, rl.m, df)
    spec_id = rl.m.default_spec_id
    if not rl.m.default_spec.fields:
        parts = None  # unpartitioned: the whole table is one partition
    else:
        parts = {tuple(sorted(f.partition.items())) for f in added}
    removed = set()
    for t in rl.tasks:
        if t["spec_id"] != spec_id:
            continue
        if parts is None or tuple(sorted(rl.partition(t).items())) in parts:
            removed.add((t["file_path"], None))
            removed |= _file_scoped_deletes(t)
    rl.commit("overwrite", added, [], removed, level_key="write.update.isolation-level")


def update(table, assignments: dict[str, str], filter: str | None) -> None:
    """Set columns to Spark SQL expressions on the rows matching ``filter``: copy-on-write or merge-on-read per
    ``write.update.mode``. Updated rows keep their v3 ``_row_id`` and get the new sequence number."""
    rl = RowLevel(table, filter)
    names = {f.name.lower(): f.name for f in rl.schema.fields}
    for col in assignments:
        if col.lower() not in names:
            raise ValidationError(f"cannot update unknown column {col!r}")
    cond = F.lit(True) if filter is None else F.coalesce(F.expr(f"({filter})"), F.lit(False))
    tasks = rl.tasks
    if not tasks:
        return
    cols = [f.name for f in rl.schema.fields]
    set_by_name = {names[c.lower()]: v for c, v in assignments.items()}
    mode = rl.m.properties.get("write.update.mode", "copy-on-write").lower()
    extra = [ROW_ID, LAST_UPDATED_SEQ] if rl.lineage else []

    spark_types = {f.name: f.dataType for f in rl.table.spark_schema().fields}

    def assigned(c):  # SQL store assignment: the expression is cast to the column's type
        return F.expr(set_by_name[c]).cast(spark_types[c])

    def updated(df):
        out = [assigned(c).alias(c) if c in set_by_name else F.col(f"`{c}`") for c in cols]
        if rl.lineage:
            out += [F.col("_row_id"), F.lit(None).cast("bigint").alias("_last_updated_sequence_number")]
        return df.select(*out)

    if mode == "merge-on-read" and rl.m.format_version >= 2:
        matched = rl.read(tasks, cols + rl.lineage + ["_file", "_pos"], cond).cache()
        try:
            if matched.limit(1).count() == 0:
                return
            added_data = write_files(rl.spark, rl.m, updated(matched), extra_fields=extra)
            try:
                added_deletes, removed = rl.delete_positions(matched, tasks)
            except BaseException:
                for f in added_data:
                    table.io.delete(f.file_path)
                raise
        finally:
            matched.unpersist()
        rl.commit("overwrite", added_data, added_deletes, removed,
                  required={d.referenced_data_file for _, d in added_deletes},
                  level_key="write.update.isolation-level")
        return
    hit = {r[0] for r in rl.read(tasks, ["_file"], cond).distinct().collect()}
    rewrite = [t for t in tasks if t["file_path"] in hit]
    if not rewrite:
        return
    rows = rl.read(rewrite, cols + rl.lineage, None)
    is_hit = F.coalesce(F.expr(f"({filter})"), F.lit(False)) if filter is not None else F.lit(True)
    out = [F.when(is_hit, assigned(c)).otherwise(F.col(f"`{c}`")).alias(c) if c in set_by_name
           else F.col(f"`{c}`") for c in cols]
    if rl.lineage:
        out += [F.col("_row_id"), F.when(is_hit, F.lit(None).cast("bigint"))
                .otherwise(F.col("_last_updated_sequence_number")).alias("_last_updated_sequence_number")]
    added = write_files(rl.spark, rl.m, rows.select(*out), extra_fields=extra)
    removed = set()
    for t in rewrite:
        removed.add((t["file_path"], None))
        removed |= _file_scoped_deletes(t)
    rl.commit("overwrite", added, [], removed, level_key="write.update.isolation-level")


__all__ = ["overwrite", "dynamic_overwrite", "update", "align"]
