"""The manifest model of format versions 1-3: manifest lists' entries (:class:`ManifestFile`), manifests'
entries (:class:`ManifestEntry`) and the files they track (:class:`DataFile`), keyed as the spec names them.

Values are raw, as written: inheritance (spec "Snapshot ID Inheritance", "Sequence Number Inheritance", "First
Row ID Inheritance") is written once, on columns (:func:`inherit_columns`), and applied to entry objects by
:func:`inherit`, so the model round-trips exactly. Reading and writing them is :mod:`sparkberg.avro`'s.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Sequence

import numpy as np

from sparkberg.errors import InvalidMetadataError
from sparkberg.format.partitioning import PartitionSpec
from sparkberg.format.types import Schema

# manifest entry status
EXISTING, ADDED, DELETED = 0, 1, 2
# data file content
DATA, POSITION_DELETES, EQUALITY_DELETES = 0, 1, 2
# manifest content
MANIFEST_DATA, MANIFEST_DELETES = 0, 1


@dataclass(frozen=True)
class FieldSummary:
    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None


@dataclass(frozen=True)
class ManifestFile:
    """One entry of a manifest list (``manifest_file``)."""

    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    added_snapshot_id: int
    content: int = MANIFEST_DATA
    sequence_number: int = 0
    min_sequence_number: int = 0
    added_files_count: int | None = None
    existing_files_count: int | None = None
    deleted_files_count: int | None = None
    added_rows_count: int | None = None
    existing_rows_count: int | None = None
    deleted_rows_count: int | None = None
    partitions: tuple[FieldSummary, ...] | None = None
    key_metadata: bytes | None = None
    first_row_id: int | None = None

    def has_existing_files(self) -> bool:
        return self.existing_files_count is None or self.existing_files_count > 0


@dataclass(frozen=True)
class DataFile:
    """A data or delete file as tracked by a manifest (``data_file``); partition keyed by field id."""

    file_path: str
    file_format: str
    partition: dict[int, Any]
    record_count: int
    file_size_in_bytes: int
    content: int = DATA
    column_sizes: dict[int, int] | None = None
    value_counts: dict[int, int] | None = None
    null_value_counts: dict[int, int] | None = None
    nan_value_counts: dict[int, int] | None = None
    lower_bounds: dict[int, bytes] | None = None
    upper_bounds: dict[int, bytes] | None = None
    key_metadata: bytes | None = None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    first_row_id: int | None = None
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None
    block_size_in_bytes: int | None = None  # v1 only, deprecated
    distinct_counts: dict[int, int] | None = None  # deprecated, read only

    def __hash__(self):
        return hash((self.file_path, self.content_offset))


@dataclass(frozen=True)
class ManifestEntry:
    status: int
    data_file: DataFile
    snapshot_id: int | None = None
    sequence_number: int | None = None
    file_sequence_number: int | None = None

    @property
    def is_live(self) -> bool:
        return self.status != DELETED


@dataclass(frozen=True)
class Manifest:
    """A whole manifest: its key-value metadata and entries (raw, before inheritance)."""

    entries: tuple[ManifestEntry, ...]
    format_version: int
    content: int
    partition_spec_id: int
    schema_json: str | None = None
    partition_spec_json: str | None = None
    schema_id: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def schema(self) -> Schema | None:
        return None if self.schema_json is None else Schema.from_json(json.loads(self.schema_json))

    @property
    def partition_spec(self) -> PartitionSpec | None:
        if self.partition_spec_json is None:
            return None
        return PartitionSpec(self.partition_spec_id, PartitionSpec.fields_from_json(json.loads(self.partition_spec_json)))


Column = tuple  # (values: numpy int64 array, valid: numpy bool array)


def sequence_applies(content: Any, data_sequence_number: Any, delete_sequence_number: Any) -> Any:
    """The spec's sequence-number rule of scan planning: a position delete (or deletion vector) applies to data
    files whose data sequence number is at most its own, an equality delete only to those strictly below. Written
    with operators alone, so that it takes ints, numpy arrays (planning) and Spark Columns (maintenance) alike;
    the other conditions (partition, referenced file, bounds) are the caller's. A ``content`` known in advance
    (an int) costs one comparison."""
    if isinstance(content, int):
        if content == POSITION_DELETES:
            return data_sequence_number <= delete_sequence_number
        if content == EQUALITY_DELETES:
            return data_sequence_number < delete_sequence_number
        raise InvalidMetadataError(f"not a delete file's content: {content}")
    return (((content == POSITION_DELETES) & (data_sequence_number <= delete_sequence_number))
            | ((content == EQUALITY_DELETES) & (data_sequence_number < delete_sequence_number)))


def inherit(entries: Iterable[ManifestEntry], manifest: ManifestFile) -> list[ManifestEntry]:
    """Entries with the snapshot ids, sequence numbers and (v3) ``first_row_id`` they inherit from ``manifest``
    filled in (:func:`inherit_columns`); entries that inherit nothing are returned as they are."""
    entries = list(entries)
    n = len(entries)
    if not n:
        return []
    files = [e.data_file for e in entries]

    def column(values: list) -> Column:
        return (np.array([0 if v is None else v for v in values], np.int64),
                np.array([v is not None for v in values], bool))
    snapshot_id, seq, file_seq, row_id = inherit_columns(
        [manifest], np.zeros(n, np.int64), np.array([e.status for e in entries]),
        np.array([f.content for f in files]), np.array([f.record_count for f in files], np.int64),
        column([e.snapshot_id for e in entries]), column([e.sequence_number for e in entries]),
        column([e.file_sequence_number for e in entries]), column([f.first_row_id for f in files]))
    out = []
    for i, e in enumerate(entries):
        changes: dict[str, Any] = {}
        for name, (values, valid) in (("snapshot_id", snapshot_id), ("sequence_number", seq),
                                      ("file_sequence_number", file_seq)):
            if getattr(e, name) is None and valid[i]:
                changes[name] = int(values[i])
        if e.data_file.first_row_id is None and row_id[1][i]:
            changes["data_file"] = replace(e.data_file, first_row_id=int(row_id[0][i]))
        out.append(replace(e, **changes) if changes else e)
    return out


def inherit_columns(manifests: Sequence[ManifestFile], which, status, content, record_count, snapshot_id: Column,
                    sequence_number: Column, file_sequence_number: Column, first_row_id: Column
                    ) -> tuple[Column, Column, Column, Column]:
    """Inheritance on columns (numpy), for entries of ``manifests`` one manifest after the other (``which``: each
    entry's manifest index; ``status``, ``content``, ``record_count``: int arrays): snapshot ids, sequence
    numbers and ``first_row_id`` as ``(values, valid)`` pairs, with the values they inherit filled in:

    - spec "Snapshot ID Inheritance": a null snapshot id takes the manifest's ``added_snapshot_id``;
    - spec "Sequence Number Inheritance": null data and file sequence numbers of ADDED entries (of every entry
      of a v1 manifest, whose sequence number is 0) take the manifest's sequence number;
    - spec "First Row ID Inheritance": data files without a ``first_row_id``, in manifest order, take the
      manifest's ``first_row_id`` plus the record counts of the preceding such files of the manifest.

    The one place these rules are written: :func:`inherit` applies them to entry objects and
    :class:`~sparkberg.planning.entries.EntryDecoder` to decoded columns."""
    m, n = len(manifests), len(which)

    def per_manifest(values: list) -> Column:
        valid = np.array([v is not None for v in values], bool)
        return np.array([0 if v is None else v for v in values], np.int64), valid

    def fill(column: Column, where, source: Column) -> Column:
        values, valid = column
        take = where & ~valid & source[1][which]
        if not take.any():
            return column
        values, valid = values.copy(), valid.copy()
        values[take], valid[take] = source[0][which][take], True
        return values, valid

    everywhere = np.ones(n, bool)
    snapshot_id = fill(snapshot_id, everywhere, per_manifest([mf.added_snapshot_id for mf in manifests]))
    seqs = per_manifest([mf.sequence_number for mf in manifests])
    inherits = (status == ADDED) | (seqs[0] == 0)[which]
    sequence_number = fill(sequence_number, inherits, seqs)
    file_sequence_number = fill(file_sequence_number, inherits, seqs)
    starts = per_manifest([mf.first_row_id if mf.content == MANIFEST_DATA else None for mf in manifests])
    assign = starts[1][which] & (content == DATA) & ~first_row_id[1] if n else np.zeros(0, bool)
    if assign.any():
        counts = np.where(assign, record_count, 0).astype(np.int64)
        before = np.cumsum(counts) - counts  # (rows of earlier manifests included: taken off below)
        first = np.zeros(m, np.int64)
        np.cumsum(np.bincount(which, minlength=m)[:-1], out=first[1:])
        base = starts[0] - before[np.minimum(first, n - 1)]
        values, valid = first_row_id[0].copy(), first_row_id[1].copy()
        values[assign], valid[assign] = (base[which] + before)[assign], True
        first_row_id = values, valid
    return snapshot_id, sequence_number, file_sequence_number, first_row_id
