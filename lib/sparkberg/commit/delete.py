"""Row-level deletes: ``t.delete(filter)``, copy-on-write or merge-on-read per ``write.delete.mode``.

Files whose partition strictly matches the filter are dropped whole (no data read). Other files that may hold
matching rows are scanned; then either the files with matches are rewritten without those rows (copy-on-write;
v3 rows keep their ``_row_id`` and ``_last_updated_sequence_number``), or delete files are added for the
matching positions (merge-on-read: position delete files on v2, one deletion vector per data file on v3,
merged with the file's existing deletes). Under serializable isolation (``write.delete.isolation-level``, the
default), a concurrent append of files the filter may match is a conflict.
"""
from __future__ import annotations

import uuid

from pyspark.sql import functions as F

from sparkberg.avro.manifest import ADDED, DELETED, MANIFEST_DATA, inherit, read_manifest
from sparkberg.commit.producer import Changes, commit_changes
from sparkberg.errors import CommitFailedException, ValidationError
from sparkberg.expressions.predicates import TRUE, AlwaysTrue, bind, evaluate
from sparkberg.expressions.projection import inclusive_projection, strict_projection
from sparkberg.planning.entries import snapshot_manifests
from sparkberg.planning.scan import plan
from sparkberg.read.reader import LAST_UPDATED_SEQ, ROW_ID, read_tasks
from sparkberg.write.deletes import RESULT_DDL, DeleteWriter, delete_file_from_json, partition_json


def _partition_by_id(layout, spec_id: int, partition) -> dict:
    values = partition if isinstance(partition, dict) else partition.asDict()
    return {fid: values[layout.slots[i].name] for fid, i in layout.by_spec.get(spec_id, ())}


def _file_scoped_deletes(task) -> set:
    """Delete files that only concern this data file (its DV, position deletes naming it)."""
    out = set()
    for d in task["deletes"]:
        if d["content"] == 1 and d["referenced_data_file"] == task["file_path"]:
            out.add((d["file_path"], d["content_offset"]))
    return out


def serializable_check(table, filter_bound):
    """A validation that fails when files a filter may match were added after the operation started."""
    def check(start, current):
        if start.current_snapshot_id == current.current_snapshot_id or isinstance(filter_bound, type(None)):
            return
        seen = {s.snapshot_id for s in start.ancestors(start.current_snapshot_id)}
        schema = current.current_schema
        for snap in current.ancestors(current.current_snapshot_id):
            if snap.snapshot_id in seen:
                break
            if snap.operation == "replace":
                continue
            for mf in snapshot_manifests(table.io, snap):
                if mf.content != MANIFEST_DATA or mf.added_snapshot_id != snap.snapshot_id:
                    continue
                proj = inclusive_projection(filter_bound, current.spec(mf.partition_spec_id), schema)
                for e in inherit(read_manifest(table.io.read(mf.manifest_path)).entries, mf):
                    if e.status == ADDED and evaluate(proj, e.data_file.partition):
                        raise CommitFailedException(
                            f"conflict: snapshot {snap.snapshot_id} added {e.data_file.file_path}, which may hold "
                            "rows the delete filter matches (serializable isolation)")
    return check


def delete_rows(table, filter: str) -> bool:
    """Delete the rows matching a Spark SQL filter in one commit; False when nothing matched."""
    from sparkberg.expressions.sql import translate_filter
    from sparkberg.spark.session import session_time_zone
    if not isinstance(filter, str) or not filter.strip():
        raise ValidationError("delete needs a filter (a Spark SQL boolean expression); use 'true' to delete all")
    m = table.metadata
    if m.current_snapshot is None:
        return False
    spark = table.spark
    schema = m.current_schema
    tz = session_time_zone(spark)
    weak = bind(translate_filter(filter, schema, tz), schema)
    strong = bind(translate_filter(filter, schema, tz, strengthen=True), schema)
    p = plan(spark, m, table.io, m.current_snapshot, weak)
    tasks = p.rows()
    if not tasks:
        return False
    strict = {s.spec_id: strict_projection(strong, s, schema) for s in m.partition_specs}
    whole = [t for t in tasks if evaluate(strict[t["spec_id"]], _partition_by_id(p.layout, t["spec_id"], t["partition"]))]
    whole_paths = {t["file_path"] for t in whole}
    partial = [t for t in tasks if t["file_path"] not in whole_paths]
    removed: set = set()
    for t in whole:
        removed.add((t["file_path"], None))
        removed |= _file_scoped_deletes(t)
    added_data, added_deletes, required = [], [], set()
    mode = m.properties.get("write.delete.mode", "copy-on-write").lower()
    v = m.format_version
    if partial:
        matched = read_tasks(spark, m, schema, partial, p.layout, ["_file", "_pos"], filter)
        by_path = {t["file_path"]: t for t in partial}
        if mode == "merge-on-read" and v >= 2:
            targets = {}
            for t in partial:
                spec = m.spec(t["spec_id"])
                part = _partition_by_id(p.layout, t["spec_id"], t["partition"])
                rel = spec.partition_to_path(part, schema) if spec.fields else ""
                base_dir = m.properties.get("write.data.path", f"{m.location}/data")
                targets[t["file_path"]] = {
                    "spec_id": t["spec_id"], "partition": partition_json(spec, schema, part),
                    "dir": "/".join(x for x in (base_dir, rel) if x),
                    "dvs": [(d["file_path"], d["content_offset"], d["content_size_in_bytes"]) for d in t["deletes"]
                            if d["file_format"] == "puffin"],
                    "position_files": [d["file_path"] for d in t["deletes"]
                                       if d["content"] == 1 and d["file_format"] != "puffin"]}
            writer = DeleteWriter(targets, dv=v >= 3, write_id=uuid.uuid4().hex[:16],
                                  compression=m.properties.get("write.parquet.compression-codec", "zstd"))
            rows = (matched.repartition("_file").sortWithinPartitions("_file", "_pos")
                    .mapInArrow(writer, RESULT_DDL).collect())
            for r in rows:
                spec_id, d = delete_file_from_json(r["delete_file"], m)
                added_deletes.append((spec_id, d))
                required.add(d.referenced_data_file)
                if v >= 3:  # the new DV replaces the file's old DV and file-scoped position deletes
                    removed |= _file_scoped_deletes(by_path[d.referenced_data_file])
        else:
            hit = {r[0] for r in matched.select("_file").distinct().collect()}
            rewrite = [t for t in partial if t["file_path"] in hit]
            if rewrite:
                from sparkberg.write.dataframe import write_files
                lineage = ["_row_id", "_last_updated_sequence_number"] if v >= 3 else []
                keep = read_tasks(spark, m, schema, rewrite, p.layout, [f.name for f in schema.fields] + lineage,
                                  F.expr(f"NOT coalesce(({filter}), false)"))
                added_data = write_files(spark, m, keep, extra_fields=[ROW_ID, LAST_UPDATED_SEQ] if v >= 3 else [])
                for t in rewrite:
                    removed.add((t["file_path"], None))
                    removed |= _file_scoped_deletes(t)
    if not removed and not added_deletes:
        return False
    isolation = m.properties.get("write.delete.isolation-level", "serializable").lower()
    validate = serializable_check(table, weak) if isolation == "serializable" else None
    op = "overwrite" if added_data else "delete"
    try:
        commit_changes(table, Changes(op, added_data, added_deletes, removed, required, validate))
    except BaseException:
        for f in added_data:
            table.io.delete(f.file_path)
        for path in {d.file_path for _, d in added_deletes}:
            table.io.delete(path)
        raise
    return True


__all__ = ["delete_rows", "TRUE", "AlwaysTrue", "DELETED"]
