"""The manifest model of format versions 1-3: manifest lists' entries (:class:`ManifestFile`), manifests'
entries (:class:`ManifestEntry`) and the files they track (:class:`DataFile`), keyed as the spec names them.

Values are raw, as written: inheritance (spec "Sequence Number Inheritance", "First Row ID Inheritance") is
applied by :func:`inherit`, so the model round-trips exactly. Reading and writing them is :mod:`sparkberg.avro`'s.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from sparkberg.spec.partitioning import PartitionSpec
from sparkberg.spec.types import Schema

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


def inherit(entries: Iterable[ManifestEntry], manifest: ManifestFile) -> list[ManifestEntry]:
    """Entries with inherited snapshot ids, sequence numbers and (v3) first_row_id filled in.

    Null snapshot ids take the manifest's ``added_snapshot_id``; null sequence numbers of ADDED
    entries take the manifest's sequence number (v1 manifests: 0); null ``first_row_id`` of data
    files take the manifest's ``first_row_id`` plus the record counts of the preceding data files
    that also had none (spec: "First Row ID Inheritance").
    """
    out = []
    next_row_id = manifest.first_row_id
    assign_rows = manifest.content == MANIFEST_DATA and next_row_id is not None
    for e in entries:
        changes: dict[str, Any] = {}
        if e.snapshot_id is None:
            changes["snapshot_id"] = manifest.added_snapshot_id
        if e.sequence_number is None and (e.status == ADDED or manifest.sequence_number == 0):
            changes["sequence_number"] = manifest.sequence_number
        if e.file_sequence_number is None and (e.status == ADDED or manifest.sequence_number == 0):
            changes["file_sequence_number"] = manifest.sequence_number
        if assign_rows and e.data_file.content == DATA and e.data_file.first_row_id is None:
            changes["data_file"] = replace(e.data_file, first_row_id=next_row_id)
            next_row_id += e.data_file.record_count
        out.append(replace(e, **changes) if changes else e)
    return out
