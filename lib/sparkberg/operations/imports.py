"""``add_files``: existing Parquet files appended to a table without rewriting them (Iceberg's ``add_files``
procedure; PyIceberg's ``add_files``). Directories are listed (hidden and ``_``-prefixed names skipped, as Hive and
Spark skip them); each file's footer is read on the executors (:mod:`sparkberg.write.imports`); one append
commits them. A table without a name mapping gets one from its current schema in that commit, so that files
without field ids read by name (Java sets it the same way, in a commit of its own before); a file already in the
table is an error unless ``check_duplicate_files=False``.
"""
from __future__ import annotations

import json
from typing import Any

from pyspark.sql import functions as F

from sparkberg.errors import ValidationError
from sparkberg.io.fileio import FileIO, normalize_location
from sparkberg.spark.frames import local_dataframe, map_in_arrow
from sparkberg.operations.changes import Changes
from sparkberg.spark.settings import session_time_zone
from sparkberg.format import updates as U
from sparkberg.format.properties import NAME_MAPPING
from sparkberg.format.schema_update import mapping_of
from sparkberg.write.imports import RESULT_DDL, FileImporter
from sparkberg.write.writer import data_file_from_json


def _hidden(path: str, root: str) -> bool:
    return any(part.startswith(("_", ".")) for part in path[len(root):].split("/") if part)


def parquet_paths(given: Any, io: FileIO) -> list[str]:
    """The files ``given`` names (paths, or a DataFrame whose first column holds them), directories expanded to
    the data files beneath them, listed by ``io`` (the table's FileIO)."""
    if hasattr(given, "columns") and hasattr(given, "collect"):
        given = [r[0] for r in given.select(given.columns[0]).collect()]
    if isinstance(given, str):
        given = [given]
    out = []
    for raw in given:
        if not isinstance(raw, str) or not raw:
            raise ValidationError(f"add_files takes file or directory paths, got {raw!r}")
        location = normalize_location(raw)
        if io.is_dir(location):
            out += sorted(p for p, _ in io.list_files(location) if not _hidden(p, location)
                          and not p.endswith(".crc"))
        elif io.exists(location):
            out.append(location)
        else:
            raise ValidationError(f"cannot add {raw}: no such file or directory")
    if len(set(out)) != len(out):
        dup = sorted(p for p in out if out.count(p) > 1)[0]
        raise ValidationError(f"cannot add {dup} twice")
    return out


def _paths_of(mapping: list[dict], prefix: str = "") -> dict[str, int]:
    """Dotted column path -> field id, for every name a mapping gives (nested names under each parent name)."""
    out = {}
    for e in mapping:
        for name in e.get("names") or []:
            if "field-id" in e:
                out[prefix + name] = e["field-id"]
            out.update(_paths_of(e.get("fields") or [], f"{prefix}{name}."))
    return out


def add_files(table, given: Any, check_duplicate_files: bool = True,
              partitions: dict[str, dict[str, str] | None] | None = None) -> Changes | None:
    """What :meth:`sparkberg.table.Table.add_files` changes (None: no file to add); ``partitions``: the partition
    values a metastore keeps for each of the files ``given`` (a plain table's, listed already)."""
    paths = parquet_paths(given, table.io) if partitions is None else list(given)
    if not paths:
        return None
    spark = table.spark
    values = [json.dumps(partitions[p]) if partitions and partitions.get(p) is not None else None for p in paths]
    wanted = local_dataframe(spark, list(zip(paths, values)), "file_path string, partition string")
    if check_duplicate_files and table.metadata.current_snapshot is not None:
        live = table.metadata_table("files").select("file_path")
        dup = wanted.join(F.broadcast(live), "file_path").limit(1).collect()
        if dup:
            raise ValidationError(f"cannot add {dup[0][0]}: table {table.name} already holds it "
                                  "(check_duplicate_files=False adds it again)")
    m = table.metadata
    raw = m.properties.get(NAME_MAPPING)
    updates = ()
    if raw is None:  # (set in the append's own commit)
        raw = json.dumps(mapping_of(m.current_schema.fields))
        updates = (U.SetProperties({NAME_MAPPING: raw}),)
    try:
        mapping = _paths_of(json.loads(raw))
    except (ValueError, TypeError, AttributeError) as e:
        raise ValidationError(f"table property {NAME_MAPPING} is not a valid name mapping: {e}") from None
    importer = FileImporter(m.current_schema, m.default_spec, mapping, dict(m.properties),
                            session_time_zone(table.spark), table.io)
    rows = map_in_arrow(wanted.repartition(min(len(paths), 64)), importer, RESULT_DDL).collect()
    files = [data_file_from_json(r[0], m.default_spec, m.current_schema) for r in rows]
    # (the files are the user's until the commit: none is deleted when it fails)
    return Changes("append", added_data=files, updates=updates, written=[])


__all__ = ["add_files", "parquet_paths"]
