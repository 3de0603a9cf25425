"""Orphan file removal, as Iceberg Java's ``DeleteOrphanFilesSparkAction`` decides it.

The files under the table's location (or ``location``, which must be inside it) are listed by Spark's executors,
a directory each, and kept when older than ``older_than`` and not hidden: a path with a level whose name starts
with ``_`` or ``.`` (``_SUCCESS``, ``.part-0.crc``, ``_temporary/``) is never an orphan, unless that level is a
partition directory of a field whose name starts so (``_p=1``). They are compared on the path alone with every
file the table references: the live entries of every manifest of every snapshot (decoded on the executors), the
manifests, manifest lists, statistics files, the metadata files of the current version's metadata log and its
version hint. A listed file whose path matches a referenced one under another scheme or authority (``s3a://`` against
``s3://``, after the equal schemes and authorities are applied) is a prefix mismatch: an error naming examples
(``prefix_mismatch_mode="error"``, the default), not an orphan (``"ignore"``) or an orphan (``"delete"``).
A metadata file that fell out of the metadata log is an orphan.
"""
from __future__ import annotations

import re
from typing import Any, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparkberg.arrays import strings
from sparkberg.errors import ValidationError
from sparkberg.io.fileio import FileIO, normalize_location
from sparkberg.maintenance.expire import FILES_DDL, _deleted, _manifests, to_millis
from sparkberg.planning.entries import EntryDecoder, PartitionLayout, entries_df
from sparkberg.spark.frames import local_dataframe, map_in_arrow
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.updates import now_ms

OLDER_THAN_DEFAULT_MS = 3 * 24 * 60 * 60 * 1000
# schemes that name the same store, as Iceberg Java's defaults (``equal_schemes`` adds to them)
EQUAL_SCHEMES = {"s3n": "s3", "s3a": "s3", "": "file"}
MISMATCH_MODES = ("error", "ignore", "delete")
MAX_LISTING_TASKS = 200  # (directories under the listed location beyond this share tasks)
# the listing's directories are found on the driver level by level, up to this many levels down, until there are
# LISTING_DIRS of them to hand to tasks: on an object store one prefix is listed a page of 1,000 objects at a time,
# so a table whose files sit under one directory (data/) must be spread over its subdirectories (Iceberg Java's
# action lists three levels on the driver likewise)
LISTING_LEVELS = 3
LISTING_DIRS = 16
_URI = re.compile(r"^(?:([a-zA-Z][a-zA-Z0-9+.-]*):)?(?://([^/]*))?(.*)$")


def split_location(location: str, schemes: dict[str, str], authorities: dict[str, str]) -> tuple[str, str, str]:
    """(scheme, authority, path) of a location, scheme and authority mapped to their equals."""
    scheme, authority, path = _URI.match(location).groups()
    scheme = (scheme or "").lower()
    scheme = schemes.get(scheme, scheme)
    authority = authority or ""
    return scheme, authorities.get(authority, authority), path


def _equals(pairs: dict[str, str] | None) -> dict[str, str]:
    """``{"s3a,s3n": "s3"}`` as one entry per name."""
    return {k.strip(): v for keys, v in (pairs or {}).items() for k in keys.split(",")}


def remove_orphan_files(table, older_than: Any = None, location: str | None = None, dry_run: bool = False,
                        equal_schemes: dict[str, str] | None = None, equal_authorities: dict[str, str] | None = None,
                        prefix_mismatch_mode: str = "error") -> DataFrame:
    """See :meth:`sparkberg.table.Table.remove_orphan_files`."""
    spark = table.spark
    if prefix_mismatch_mode not in MISMATCH_MODES:
        raise ValidationError(f"prefix_mismatch_mode must be one of {', '.join(MISMATCH_MODES)}, "
                              f"got {prefix_mismatch_mode!r}")
    now = now_ms()
    older_ms = to_millis(spark, older_than)
    if older_ms is None:
        older_ms = now - OLDER_THAN_DEFAULT_MS
    if older_ms > now:
        raise ValidationError(f"older_than ({older_ms} ms) is in the future (now {now} ms): files being written "
                              "would be deleted")
    table.refresh()
    metadata = table.metadata
    schemes = {**EQUAL_SCHEMES, **_equals(equal_schemes)}
    authorities = _equals(equal_authorities)
    root = metadata.location.rstrip("/")
    where = normalize_location(location).rstrip("/") if location else root
    r_scheme, r_auth, r_path = split_location(root, schemes, authorities)
    w_scheme, w_auth, w_path = split_location(where, schemes, authorities)
    if (w_scheme, w_auth) != (r_scheme, r_auth) or not (w_path == r_path or w_path.startswith(r_path + "/")):
        raise ValidationError(f"location {location} is not inside the table's location {root}")
    hidden_ok = _partition_names(metadata)
    listed = _listing(spark, table.io, where, older_ms, hidden_ok)
    valid = _referenced(spark, table.io, metadata, table.metadata_location)
    orphans = _orphans(listed, valid, schemes, authorities, prefix_mismatch_mode)
    if not dry_run and orphans:
        _deleted(local_dataframe(spark, [(p, "orphan") for p in orphans], FILES_DDL), table.io)
    return local_dataframe(spark, [(p,) for p in orphans], "orphan_file_location string")


def _partition_names(metadata: TableMetadata) -> frozenset[str]:
    return frozenset(f.name for spec in metadata.partition_specs for f in spec.fields)


def _hidden(relative: str, partition_names: frozenset[str]) -> bool:
    for level in relative.split("/"):
        if level.startswith(("_", ".")) and level.split("=", 1)[0] not in partition_names:
            return True
    return False


def _listing(spark: Any, io: FileIO, where: str, older_ms: int, partition_names: frozenset[str]) -> DataFrame:
    """(location) of the files under ``where`` older than ``older_ms`` and not hidden: the directories down to
    :data:`LISTING_LEVELS` levels listed on the driver until there are :data:`LISTING_DIRS` of them, each of those
    then listed by a task of its own on the executors (with the table's FileIO ``io``)."""
    base = _bare(where)

    def kept(files: Iterator[tuple[str, int]]) -> list[str]:
        out = []
        for path, mtime in files:
            if mtime < older_ms:
                bare = _bare(path)  # (the file's levels below ``where``: listings give paths under it, though
                at = bare.find(base)  # perhaps with another number of leading slashes)
                if not _hidden(bare[max(at, 0) + len(base):].lstrip("/"), partition_names):
                    out.append(path)
        return out

    on_driver: list[tuple[str, int]] = []
    dirs = [where]
    for _ in range(LISTING_LEVELS):
        deeper = []
        for d in dirs:
            files, below = io.list_level(d)
            on_driver += files
            deeper += below
        dirs = deeper
        if len(dirs) >= LISTING_DIRS:
            break

    def list_dirs(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            found = [p for i in batch.column(0).to_pylist() for p in kept(io.list_files(dirs[i]))]
            yield pa.RecordBatch.from_arrays([strings(found)], names=["location"])
    listed = local_dataframe(spark, [(p,) for p in kept(on_driver)], "location string")
    if dirs:  # (a range of as many partitions as directories: a task each, without a shuffle to spread them)
        tasks = spark.range(0, len(dirs), 1, min(len(dirs), MAX_LISTING_TASKS))
        listed = listed.unionByName(map_in_arrow(tasks, list_dirs, "location string"))
    return listed


def _bare(location: str) -> str:
    """A location's path, without scheme and authority."""
    return _URI.match(location).group(3)


def _referenced(spark: Any, io: FileIO, metadata: TableMetadata, metadata_location: str) -> DataFrame:
    """Every file the table references (see the module docstring) as (location)."""
    manifests = _manifests(io, metadata)
    decoder = EntryDecoder(PartitionLayout(metadata), columns=["file_path"], io=io)
    content = entries_df(spark, list(manifests.values()), decoder).select(F.col("file_path").alias("location")) \
        if manifests else local_dataframe(spark, [], "location string")
    root = metadata.location.rstrip("/")
    other = set(manifests) | {s.manifest_list for s in metadata.snapshots if s.manifest_list} | \
        {f.statistics_path for f in (*metadata.statistics, *metadata.partition_statistics)} | \
        {e.metadata_file for e in metadata.metadata_log} | {metadata_location, f"{root}/metadata/version-hint.text"}
    return content.unionByName(local_dataframe(spark, [(p,) for p in sorted(other)], "location string"))


def _orphans(listed: DataFrame, valid: DataFrame, schemes: dict[str, str], authorities: dict[str, str],
             mode: str) -> list[str]:
    """The listed locations no referenced one matches on the path; prefix mismatches as ``mode`` says. The
    comparison runs in Spark; only the orphans and the mismatches come back."""
    def paths(df: DataFrame, prefix: str) -> DataFrame:
        loc = F.col("location")
        return df.select(loc.alias(f"{prefix}location"),
                         F.regexp_extract(loc, _URI.pattern, 3).alias(f"{prefix}path"))

    def origin(location):  # (scheme://authority, each mapped to its equal)
        return F.concat_ws("://", _mapped(F.lower(F.regexp_extract(location, _URI.pattern, 1)), schemes),
                           _mapped(F.regexp_extract(location, _URI.pattern, 2), authorities))
    actual, known = F.col("a_location"), F.col("v_location")
    # (the same location is the same file; only different ones are split: most files are listed as written)
    same = F.when(actual == known, True).otherwise(origin(actual) == origin(known))
    # grouped by path and location, the join's output is already clustered for the aggregate (no shuffle); a
    # file referenced by several manifests joins each of them
    verdicts = paths(listed, "a_").join(paths(valid, "v_"), F.col("a_path") == F.col("v_path"), "left") \
        .groupBy("a_path", "a_location").agg(
            F.max(known.isNotNull()).alias("matched"), F.max(F.coalesce(same, F.lit(False))).alias("same"),
            F.first("v_location", ignorenulls=True).alias("v_location"))
    found = verdicts.filter(~F.col("matched") | ~F.col("same")).collect()
    orphans = [r["a_location"] for r in found if not r["matched"]]
    mismatched = sorted((r["a_location"], r["v_location"]) for r in found if r["matched"])
    if mismatched and mode == "error":
        shown = "; ".join(f"{a} against {v}" for a, v in mismatched[:5])
        raise ValidationError(f"{len(mismatched)} files match referenced ones under another scheme or authority "
                              f"({shown}): give equal_schemes / equal_authorities, or prefix_mismatch_mode "
                              "'ignore' (keep them) or 'delete'")
    if mode == "delete":
        orphans += [a for a, _ in mismatched]
    return sorted(orphans)


def _mapped(column, names: dict[str, str]):
    """``column`` with each of ``names``' keys replaced by its value."""
    if not names:
        return column
    pairs = [F.lit(x) for k, v in names.items() for x in (k, v)]
    return F.coalesce(F.element_at(F.create_map(*pairs), column), column)
