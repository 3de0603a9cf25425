"""The table doctor: integrity checks of a table's metadata and files against the spec, and a safe repair.

:func:`check` returns findings, each naming the rule it breaks, its severity, the location and snapshot
concerned, what was found, and the spec section the rule comes from. Levels, each including the ones before:

- ``metadata`` (refs to missing snapshots are refused when the metadata is read): the metadata log's files
  exist; every snapshot's manifest list and every manifest it lists exist and parse; no manifest or entry
  carries a sequence number above its snapshot's; each snapshot's summary totals (data files, delete files,
  records, position and equality deletes) equal what its manifests hold; a deletion vector's data file is live
  in its snapshot; on v3, the row id ranges of the current snapshot's data files do not overlap and lie below
  the table's ``next-row-id``; identity partition values agree with their files' column bounds.
- ``files``: every data file, delete file and statistics file a snapshot references exists with the size its
  metadata records, and each deletion vector's cardinality equals its entry's record count: checked on the
  executors with the table's FileIO, each directory of the files listed once by one task (a request per
  thousand objects on an object store, not one per file).
- ``data``: each Parquet data file's footer holds the row count its entry records.

A table written by Iceberg Java, PyIceberg, DuckDB or sparkberg that keeps the spec gets no finding.

:func:`repair` removes, in one snapshot, the references to data and delete files that no longer exist (a
``delete`` of data files, or an ``overwrite`` when delete files go too), its summary naming how many; it never
deletes a file. Its summary's totals are counted from the manifests, so a current snapshot whose totals went
wrong gets them right again (with nothing to remove, in a ``replace`` snapshot that changes no file, which
incremental readers skip). A dry run (the default) shows what it would do.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow as pa

from sparkberg.avro.decode import manifest_entries
from sparkberg.errors import InvalidMetadataError, MissingFileError, SparkbergError, ValidationError
from sparkberg.io.fileio import FileIO
from sparkberg.planning.entries import snapshot_manifests
from sparkberg.spark.frames import local_dataframe, map_in_arrow
from sparkberg.format.manifests import DATA, DELETED, MANIFEST_DATA, ManifestEntry, ManifestFile
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.puffin import deserialize_dv
from sparkberg.format.snapshots import Snapshot
from sparkberg.format.values import from_bytes

LEVELS = ("metadata", "files", "data")
FINDINGS_DDL = ("rule string, severity string, location string, snapshot_id bigint, detail string, "
                "spec_section string")
# rule: (severity, the spec section it comes from)
RULES = {
    "metadata-log-missing": ("warning", "Table Metadata Fields (metadata-log)"),
    "manifest-list-missing": ("error", "Manifest Lists"),
    "manifest-list-unreadable": ("error", "Manifest Lists"),
    "manifest-missing": ("error", "Manifests"),
    "manifest-unreadable": ("error", "Manifests"),
    "sequence-number": ("error", "Sequence Numbers"),
    "summary-totals": ("warning", "Snapshots (summary)"),
    "dv-dangling": ("error", "Deletion Vectors"),
    "row-lineage-overlap": ("error", "Row Lineage"),
    "row-lineage-next-row-id": ("error", "Row Lineage"),
    "partition-value": ("error", "Partitioning"),
    "file-missing": ("error", "Manifests (file_path)"),
    "file-size": ("error", "Manifests (file_size_in_bytes)"),
    "statistics-missing": ("warning", "Table Statistics"),
    "dv-cardinality": ("error", "Deletion Vectors"),
    "row-count": ("error", "Manifests (record_count)"),
}
# the summary totals checked, and how a snapshot's live entries give each
_TOTALS = ("total-data-files", "total-delete-files", "total-records", "total-position-deletes",
           "total-equality-deletes")


@dataclass(frozen=True)
class Finding:
    """One broken rule (:data:`RULES`)."""

    rule: str
    location: str
    snapshot_id: int | None
    detail: str

    def row(self) -> tuple:
        severity, section = RULES[self.rule]
        return self.rule, severity, self.location, self.snapshot_id, self.detail, section


def check(metadata: TableMetadata, metadata_location: str, io: FileIO, spark: Any, level: str = "metadata"
          ) -> list[Finding]:
    """The findings of the checks of ``level`` (see the module docstring), in the order they were made."""
    return _examined(metadata, io, spark, level)[0]


@dataclass(frozen=True)
class RepairPlan:
    """What :func:`repair` does: ``removed``, (path, content offset, content) of the current snapshot's files
    whose references go; ``totals``, the summary totals of the snapshot it commits, counted from the manifests
    (None when it commits nothing); ``wrong``, the current summary's totals that differ from them."""

    removed: list[tuple[str, int | None, int]]
    totals: dict[str, int] | None
    wrong: dict[str, tuple[str, int]]


def repair_plan(metadata: TableMetadata, io: FileIO, spark: Any) -> tuple[list[Finding], RepairPlan]:
    """The ``files`` level's findings, and the :class:`RepairPlan`: the data and delete files those findings say
    no longer exist, with the delete files scoped to a removed data file alone (they would dangle), and the
    totals of what is left."""
    found, live = _examined(metadata, io, spark, "files")
    current = metadata.current_snapshot
    if current is None or current.snapshot_id not in live.manifests:
        return found, RepairPlan([], None, {})
    gone = {f.location for f in found if f.rule == "file-missing"}
    files = [e.data_file for _, e in live.entries(current.snapshot_id)]
    data_gone = {d.file_path for d in files if d.content == DATA and d.file_path in gone}
    removed = sorted({(d.file_path, d.content_offset, d.content) for d in files
                      if d.file_path in gone or (d.content != DATA and d.referenced_data_file in data_gone)},
                     key=lambda k: (k[0], k[1] or -1))
    now = _totals(files)
    summary = current.summary or {}
    wrong = {k: (str(summary[k]), now[k]) for k in _TOTALS if k in summary and str(summary[k]) != str(now[k])}
    if not removed and not wrong:
        return found, RepairPlan([], None, {})
    keys = {(p, o) for p, o, _ in removed}
    return found, RepairPlan(removed, _totals([d for d in files if (d.file_path, d.content_offset) not in keys]),
                             wrong)


def _totals(files: list) -> dict[str, int]:
    """A snapshot's summary totals, counted from its live data and delete files' entries (each deletion vector
    one delete file, as the summaries count them)."""
    data = [d for d in files if d.content == DATA]
    deletes = [d for d in files if d.content != DATA]
    return {"total-data-files": len(data), "total-delete-files": len(deletes),
            "total-records": sum(d.record_count for d in data),
            "total-files-size": sum(d.file_size_in_bytes for d in files),
            "total-position-deletes": sum(d.record_count for d in deletes if d.content == 1),
            "total-equality-deletes": sum(d.record_count for d in deletes if d.content == 2)}


class _Live:
    """The live entries of every snapshot whose manifests all read: each manifest decoded once, with what the
    checks need of it computed once (its totals, its highest data sequence number, its deletion vectors), since
    the snapshots of a table share most of their manifests."""

    def __init__(self) -> None:
        self.manifests: dict[int, list[ManifestFile]] = {}  # snapshot id -> its manifests
        self.decoded: dict[str, list[ManifestEntry]] = {}  # manifest path -> its live entries
        self.totals: dict[str, dict[str, int]] = {}
        self.top_sequence: dict[str, int] = {}

    def add(self, mf: ManifestFile, entries: list[ManifestEntry]) -> None:
        live = [e for e in entries if e.status != DELETED]
        self.decoded[mf.manifest_path] = live
        self.totals[mf.manifest_path] = _totals([e.data_file for e in live])
        self.top_sequence[mf.manifest_path] = max((e.sequence_number for e in live
                                                   if e.sequence_number is not None), default=-1)

    def entries(self, snapshot_id: int) -> list[tuple[ManifestFile, ManifestEntry]]:
        """The snapshot's live entries with their manifests."""
        return [(mf, e) for mf in self.manifests[snapshot_id] for e in self.decoded[mf.manifest_path]]


def _examined(metadata: TableMetadata, io: FileIO, spark: Any, level: str) -> tuple[list[Finding], _Live]:
    """The findings of ``level``, and each snapshot's live entries as read for them."""
    if level not in LEVELS:
        raise ValidationError(f"check level must be one of {', '.join(LEVELS)}, got {level!r}")
    found: list[Finding] = []
    # (a ref to a snapshot the table lacks is refused when the metadata is read: InvalidMetadataError names it)
    for entry in metadata.metadata_log:
        if not io.exists(entry.metadata_file):
            found.append(Finding("metadata-log-missing", entry.metadata_file, None,
                                 "the metadata log names a file that does not exist"))
    live = _live_entries(metadata, io, found)
    for snap in metadata.snapshots:
        if snap.snapshot_id in live.manifests:
            found += _snapshot_findings(snap, live)
    current = metadata.current_snapshot
    if current is not None and current.snapshot_id in live.manifests:
        entries = live.entries(current.snapshot_id)
        found += _lineage_findings(metadata, current, entries)
        found += _partition_findings(metadata, current, entries)
    if level in ("files", "data"):
        found += _file_findings(spark, io, metadata, live, level == "data")
    return found, live


def _live_entries(metadata: TableMetadata, io: FileIO, found: list[Finding]) -> _Live:
    """Each snapshot's manifests and their live entries (each manifest decoded once); snapshots whose manifest
    list or a manifest cannot be read are left out, with a finding."""
    live = _Live()
    unreadable: set[str] = set()
    for snap in metadata.snapshots:
        if not snap.manifest_list:
            continue
        try:
            manifests = snapshot_manifests(io, snap)
        except MissingFileError:
            found.append(Finding("manifest-list-missing", snap.manifest_list, snap.snapshot_id,
                                 "the snapshot's manifest list does not exist"))
            continue
        except (InvalidMetadataError, SparkbergError) as e:
            found.append(Finding("manifest-list-unreadable", snap.manifest_list, snap.snapshot_id, str(e)))
            continue
        whole = True
        for mf in manifests:
            if snap.sequence_number is not None and mf.sequence_number is not None and \
                    mf.sequence_number > snap.sequence_number:
                found.append(Finding("sequence-number", mf.manifest_path, snap.snapshot_id,
                                     f"manifest sequence number {mf.sequence_number} is above its snapshot's "
                                     f"{snap.sequence_number}"))
            if mf.manifest_path not in live.decoded and mf.manifest_path not in unreadable:
                try:
                    live.add(mf, manifest_entries(io.read(mf.manifest_path), mf))
                except MissingFileError:
                    unreadable.add(mf.manifest_path)
                    found.append(Finding("manifest-missing", mf.manifest_path, snap.snapshot_id,
                                         "a manifest the snapshot lists does not exist"))
                except (InvalidMetadataError, SparkbergError) as e:
                    unreadable.add(mf.manifest_path)
                    found.append(Finding("manifest-unreadable", mf.manifest_path, snap.snapshot_id, str(e)))
            whole = whole and mf.manifest_path not in unreadable
        if whole:
            live.manifests[snap.snapshot_id] = manifests
    return live


def _snapshot_findings(snap: Snapshot, live: _Live) -> list[Finding]:
    found = []
    manifests = live.manifests[snap.snapshot_id]
    if snap.sequence_number is not None:
        for mf in manifests:
            if live.top_sequence[mf.manifest_path] > snap.sequence_number:
                found += [Finding("sequence-number", e.data_file.file_path, snap.snapshot_id,
                                  f"data sequence number {e.sequence_number} is above its snapshot's "
                                  f"{snap.sequence_number}")
                          for e in live.decoded[mf.manifest_path]
                          if e.sequence_number is not None and e.sequence_number > snap.sequence_number]
    actual = {key: sum(live.totals[mf.manifest_path][key] for mf in manifests) for key in _TOTALS}
    summary = snap.summary or {}
    for key in _TOTALS:
        if key in summary and str(summary[key]).lstrip("-").isdigit() and int(summary[key]) != actual[key]:
            found.append(Finding("summary-totals", snap.manifest_list or "", snap.snapshot_id,
                                 f"summary {key} is {summary[key]}, its manifests hold {actual[key]}"))
    vectors = [e.data_file for mf in manifests if mf.content != MANIFEST_DATA for e in live.decoded[mf.manifest_path]
               if e.data_file.content == 1 and e.data_file.content_offset is not None]
    if vectors:  # (the snapshot's live data files, gathered only where a deletion vector names one)
        live_data = {e.data_file.file_path for mf in manifests if mf.content == MANIFEST_DATA
                     for e in live.decoded[mf.manifest_path]}
        found += [Finding("dv-dangling", d.file_path, snap.snapshot_id,
                          f"the deletion vector at offset {d.content_offset} names data file "
                          f"{d.referenced_data_file}, which is not live in the snapshot")
                  for d in vectors if d.referenced_data_file not in live_data]
    return found


def _lineage_findings(metadata: TableMetadata, snap: Snapshot, entries) -> list[Finding]:
    if metadata.format_version < 3:
        return []
    ranges = sorted((e.data_file.first_row_id, e.data_file.first_row_id + e.data_file.record_count,
                     e.data_file.file_path) for mf, e in entries
                    if mf.content == MANIFEST_DATA and e.data_file.first_row_id is not None)
    found = []
    for (lo, hi, path), (lo2, _, path2) in zip(ranges, ranges[1:]):
        if lo2 < hi:
            found.append(Finding("row-lineage-overlap", path2, snap.snapshot_id,
                                 f"row ids from {lo2} overlap those of {path} ({lo} to {hi - 1})"))
    if ranges and metadata.next_row_id is not None and max(hi for _, hi, _ in ranges) > metadata.next_row_id:
        top = max(ranges, key=lambda r: r[1])
        found.append(Finding("row-lineage-next-row-id", top[2], snap.snapshot_id,
                             f"row ids up to {top[1] - 1} are assigned, the table's next-row-id is "
                             f"{metadata.next_row_id}"))
    return found


def _partition_findings(metadata: TableMetadata, snap: Snapshot, entries) -> list[Finding]:
    """Identity partition values outside their files' column bounds (where the bounds are recorded)."""
    found = []
    schema = metadata.current_schema
    types = {f.field_id: f.field_type for f in schema.index_by_id().values()}
    for mf, e in entries:
        d = e.data_file
        if d.content != DATA or not d.lower_bounds or not d.upper_bounds:
            continue
        spec = metadata.spec(mf.partition_spec_id)
        for pf in spec.fields:
            if str(pf.transform) != "identity" or pf.source_id not in types:
                continue
            value, t = d.partition.get(pf.field_id), types[pf.source_id]
            lo, hi = d.lower_bounds.get(pf.source_id), d.upper_bounds.get(pf.source_id)
            if value is None or lo is None or hi is None or str(t) not in _ORDERED:
                continue
            low, high = from_bytes(t, lo), from_bytes(t, hi)
            if not low <= value <= high:
                found.append(Finding("partition-value", d.file_path, snap.snapshot_id,
                                     f"partition {pf.name}={value!r} is outside the file's bounds of "
                                     f"column {pf.source_id} ({low!r} to {high!r})"))
    return found


# the types whose bounds are exact (strings and binaries may be truncated)
_ORDERED = {"int", "long", "date", "timestamp", "timestamptz", "boolean"}


def _file_findings(spark, io: FileIO, metadata: TableMetadata, live: _Live, footers: bool) -> list[Finding]:
    """The ``files`` level (and ``data``'s footers): every referenced file's existence and size, and each
    deletion vector's cardinality, checked on the executors: each task lists the directories of its files, one
    listing a directory (:meth:`~sparkberg.io.fileio.FileIO.file_sizes`), and reads only deletion vectors (and
    with ``footers`` Parquet footers)."""
    seen: dict[tuple, tuple] = {}
    checked: set[str] = set()
    # (a file many snapshots reference is checked once, and named with the newest of them; so is a manifest)
    for snapshot_id in reversed(list(live.manifests)):
        for mf in live.manifests[snapshot_id]:
            if mf.manifest_path in checked:
                continue
            checked.add(mf.manifest_path)
            for e in live.decoded[mf.manifest_path]:
                d = e.data_file
                key = (d.file_path, d.content_offset)
                if key not in seen:
                    seen[key] = (d.file_path, d.file_size_in_bytes, d.content, d.content_offset,
                                 d.content_size_in_bytes, d.record_count, d.file_format.lower(), snapshot_id)
    for st in (*metadata.statistics, *metadata.partition_statistics):
        if (st.statistics_path, None) not in seen:
            seen[(st.statistics_path, None)] = (st.statistics_path, st.file_size_in_bytes, -1, None, None, None,
                                                "puffin", st.snapshot_id)
    if not seen:
        return []
    # a directory's files go to one task, which lists it once: directories spread over the tasks
    directories: dict[str, int] = {}
    rows = [(directories.setdefault(row[0].rsplit("/", 1)[0], len(directories)),) + row for row in seen.values()]
    tasks = max(1, min(200, len(seen) // 500, len(directories)))
    files = local_dataframe(spark, rows, "directory int, path string, size bigint, content int, offset bigint, "
                                         "length bigint, records bigint, format string, snapshot_id bigint")
    found = map_in_arrow(files.repartition(tasks, "directory"), _FileChecker(io, footers), FINDINGS_DDL).collect()
    return [Finding(r["rule"], r["location"], r["snapshot_id"], r["detail"]) for r in found]


class _FileChecker:
    """Checks files on an executor (picklable: the table's FileIO travels with it): the files of a task's rows,
    each directory of them listed once."""

    def __init__(self, io: FileIO, footers: bool):
        self.io, self.footers = io, footers

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        by_directory: dict[int, list[dict]] = {}
        for batch in batches:  # (a directory's rows may come in several batches: all are gathered first)
            for row in batch.to_pylist():
                by_directory.setdefault(row["directory"], []).append(row)
        out = []
        for rows in by_directory.values():
            sizes = self.io.file_sizes(rows[0]["path"].rsplit("/", 1)[0])
            out += [f.row() for row in rows for f in self._check(row, sizes.get(row["path"].rsplit("/", 1)[1]))]
        yield pa.RecordBatch.from_pylist([dict(zip(("rule", "severity", "location", "snapshot_id", "detail",
                                                    "spec_section"), r)) for r in out], schema=_FINDINGS_ARROW)

    def _check(self, r: dict, size: int | None) -> list[Finding]:
        """The findings of the file of row ``r``, whose directory's listing gave it ``size`` bytes (None: absent)."""
        path, snap = r["path"], r["snapshot_id"]
        if size is None:
            rule = "statistics-missing" if r["content"] == -1 else "file-missing"
            return [Finding(rule, path, snap, "the file does not exist")]
        found = []
        if r["size"] is not None and size != r["size"]:
            found.append(Finding("file-size", path, snap, f"the file has {size} bytes, its metadata records "
                                                          f"{r['size']}"))
        if r["offset"] is not None and r["length"] is not None:
            try:
                cardinality = sum(len(bm) for _, bm in
                                  deserialize_dv(self.io.read_range(path, r["offset"], r["length"]), path))
            except SparkbergError as e:
                cardinality = None
                found.append(Finding("dv-cardinality", path, snap, f"the deletion vector does not read: {e}"))
            if cardinality is not None and cardinality != r["records"]:
                found.append(Finding("dv-cardinality", path, snap,
                                     f"the deletion vector at offset {r['offset']} holds {cardinality} positions, "
                                     f"its entry records {r['records']}"))
        if self.footers and r["content"] == DATA and r["format"] == "parquet":
            import pyarrow.parquet as pq
            with self.io.open_input(path) as f:
                rows = pq.ParquetFile(f).metadata.num_rows
            if rows != r["records"]:
                found.append(Finding("row-count", path, snap, f"the file's footer holds {rows} rows, its entry "
                                                              f"records {r['records']}"))
        return found


_FINDINGS_ARROW = pa.schema([("rule", pa.string()), ("severity", pa.string()), ("location", pa.string()),
                             ("snapshot_id", pa.int64()), ("detail", pa.string()), ("spec_section", pa.string())])
