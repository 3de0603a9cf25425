"""Snapshots, refs, logs and statistics entries of table metadata (spec: "Snapshots", "Snapshot
References", "Table Statistics", "Partition Statistics"; JSON: Appendix C).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from sparkberg.errors import ValidationError

MAIN_BRANCH = "main"
BRANCH = "branch"
TAG = "tag"
OPERATIONS = ("append", "replace", "overwrite", "delete")


def _req(obj: dict, key: str, path: str) -> Any:
    if not isinstance(obj, dict):
        raise ValidationError(f"{path} must be a JSON object, got {type(obj).__name__}")
    if key not in obj or obj[key] is None:
        raise ValidationError(f"{path} is missing required field {key!r}")
    return obj[key]


def _int(obj: dict, key: str, path: str, required: bool = True) -> int | None:
    v = _req(obj, key, path) if required else obj.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValidationError(f"{path} field {key!r} must be an integer, got {v!r}")
    return v


@dataclass(frozen=True)
class Snapshot:
    """A table snapshot. ``sequence_number`` is None when the JSON omits it: every v1 snapshot, and the snapshots
    a table upgraded to v2 or later committed while it was v1. Readers take it as 0 (spec: in v1, data and file
    sequence numbers are 0), as Iceberg Java and PyIceberg do; it is written back omitted, as it was read."""

    snapshot_id: int
    timestamp_ms: int
    parent_snapshot_id: int | None = None
    sequence_number: int | None = None
    manifest_list: str | None = None
    manifests: tuple[str, ...] | None = None  # v1 snapshots without a manifest list
    summary: dict[str, str] | None = None
    schema_id: int | None = None
    first_row_id: int | None = None
    added_rows: int | None = None
    key_id: str | None = None

    @property
    def data_sequence_number(self) -> int:
        return self.sequence_number or 0

    @property
    def operation(self) -> str | None:
        return (self.summary or {}).get("operation")

    def to_json(self) -> dict:
        out: dict[str, Any] = {"snapshot-id": self.snapshot_id}
        if self.parent_snapshot_id is not None:
            out["parent-snapshot-id"] = self.parent_snapshot_id
        if self.sequence_number is not None:
            out["sequence-number"] = self.sequence_number
        out["timestamp-ms"] = self.timestamp_ms
        if self.summary is not None:
            out["summary"] = dict(self.summary)
        if self.manifest_list is not None:
            out["manifest-list"] = self.manifest_list
        if self.manifests is not None:
            out["manifests"] = list(self.manifests)
        if self.schema_id is not None:
            out["schema-id"] = self.schema_id
        if self.first_row_id is not None:
            out["first-row-id"] = self.first_row_id
        if self.added_rows is not None:
            out["added-rows"] = self.added_rows
        if self.key_id is not None:
            out["key-id"] = self.key_id
        return out

    @staticmethod
    def from_json(obj: dict, format_version: int, path: str) -> "Snapshot":
        sid = _int(obj, "snapshot-id", path)
        ts = _int(obj, "timestamp-ms", path)
        summary = obj.get("summary")
        if summary is not None:
            if not isinstance(summary, dict):
                raise ValidationError(f"{path} field 'summary' must be an object")
            summary = {str(k): str(v) for k, v in summary.items()}
            if "operation" not in summary and format_version >= 2:
                raise ValidationError(f"{path} summary is missing required field 'operation'")
        elif format_version >= 2:
            raise ValidationError(f"{path} is missing required field 'summary'")
        manifest_list = obj.get("manifest-list")
        manifests = obj.get("manifests")
        if manifest_list is None and format_version >= 2:
            raise ValidationError(f"{path} is missing required field 'manifest-list'")
        if manifest_list is None and manifests is None:
            raise ValidationError(f"{path} has neither 'manifest-list' nor 'manifests'")
        seq = _int(obj, "sequence-number", path, required=False)  # (absent from snapshots made while v1)
        first_row_id = _int(obj, "first-row-id", path, required=False)
        added_rows = _int(obj, "added-rows", path, required=False)
        return Snapshot(
            snapshot_id=sid, timestamp_ms=ts, parent_snapshot_id=_int(obj, "parent-snapshot-id", path, False),
            sequence_number=seq, manifest_list=manifest_list,
            manifests=tuple(manifests) if manifests is not None else None, summary=summary,
            schema_id=_int(obj, "schema-id", path, False), first_row_id=first_row_id, added_rows=added_rows,
            key_id=obj.get("key-id"),
        )


@dataclass(frozen=True)
class SnapshotRef:
    """A branch or tag with its retention settings."""

    snapshot_id: int
    type: str = BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    def to_json(self) -> dict:
        out: dict[str, Any] = {"snapshot-id": self.snapshot_id, "type": self.type}
        for k, v in (("min-snapshots-to-keep", self.min_snapshots_to_keep),
                     ("max-snapshot-age-ms", self.max_snapshot_age_ms), ("max-ref-age-ms", self.max_ref_age_ms)):
            if v is not None:
                out[k] = v
        return out

    @staticmethod
    def from_json(obj: dict, path: str) -> "SnapshotRef":
        rtype = str(_req(obj, "type", path)).lower()
        if rtype not in (BRANCH, TAG):
            raise ValidationError(f"{path} field 'type' must be 'branch' or 'tag', got {rtype!r}")
        ref = SnapshotRef(_int(obj, "snapshot-id", path), rtype, _int(obj, "min-snapshots-to-keep", path, False),
                          _int(obj, "max-snapshot-age-ms", path, False), _int(obj, "max-ref-age-ms", path, False))
        if rtype == TAG and (ref.min_snapshots_to_keep is not None or ref.max_snapshot_age_ms is not None):
            raise ValidationError(f"{path}: tags cannot have min-snapshots-to-keep or max-snapshot-age-ms")
        for name, v in (("min-snapshots-to-keep", ref.min_snapshots_to_keep),
                        ("max-snapshot-age-ms", ref.max_snapshot_age_ms), ("max-ref-age-ms", ref.max_ref_age_ms)):
            if v is not None and v <= 0:
                raise ValidationError(f"{path} field {name!r} must be positive, got {v}")
        return ref


@dataclass(frozen=True)
class SnapshotLogEntry:
    timestamp_ms: int
    snapshot_id: int

    def to_json(self) -> dict:
        return {"timestamp-ms": self.timestamp_ms, "snapshot-id": self.snapshot_id}

    @staticmethod
    def from_json(obj: dict, path: str) -> "SnapshotLogEntry":
        return SnapshotLogEntry(_int(obj, "timestamp-ms", path), _int(obj, "snapshot-id", path))


@dataclass(frozen=True)
class MetadataLogEntry:
    timestamp_ms: int
    metadata_file: str

    def to_json(self) -> dict:
        return {"timestamp-ms": self.timestamp_ms, "metadata-file": self.metadata_file}

    @staticmethod
    def from_json(obj: dict, path: str) -> "MetadataLogEntry":
        return MetadataLogEntry(_int(obj, "timestamp-ms", path), str(_req(obj, "metadata-file", path)))


@dataclass(frozen=True)
class BlobMetadata:
    type: str
    snapshot_id: int
    sequence_number: int
    fields: tuple[int, ...]
    properties: dict[str, str] | None = None

    def to_json(self) -> dict:
        out = {"type": self.type, "snapshot-id": self.snapshot_id, "sequence-number": self.sequence_number,
               "fields": list(self.fields)}
        if self.properties is not None:
            out["properties"] = dict(self.properties)
        return out

    @staticmethod
    def from_json(obj: dict, path: str) -> "BlobMetadata":
        return BlobMetadata(str(_req(obj, "type", path)), _int(obj, "snapshot-id", path),
                            _int(obj, "sequence-number", path), tuple(_req(obj, "fields", path)),
                            obj.get("properties"))


@dataclass(frozen=True)
class StatisticsFile:
    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int
    file_footer_size_in_bytes: int
    blob_metadata: tuple[BlobMetadata, ...] = ()
    key_metadata: str | None = None

    def to_json(self) -> dict:
        out: dict[str, Any] = {"snapshot-id": self.snapshot_id, "statistics-path": self.statistics_path,
                               "file-size-in-bytes": self.file_size_in_bytes,
                               "file-footer-size-in-bytes": self.file_footer_size_in_bytes}
        if self.key_metadata is not None:
            out["key-metadata"] = self.key_metadata
        out["blob-metadata"] = [b.to_json() for b in self.blob_metadata]
        return out

    @staticmethod
    def from_json(obj: dict, path: str) -> "StatisticsFile":
        blobs = _req(obj, "blob-metadata", path)
        return StatisticsFile(_int(obj, "snapshot-id", path), str(_req(obj, "statistics-path", path)),
                              _int(obj, "file-size-in-bytes", path), _int(obj, "file-footer-size-in-bytes", path),
                              tuple(BlobMetadata.from_json(b, f"{path}.blob-metadata[{i}]")
                                    for i, b in enumerate(blobs)), obj.get("key-metadata"))


@dataclass(frozen=True)
class PartitionStatisticsFile:
    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int

    def to_json(self) -> dict:
        return {"snapshot-id": self.snapshot_id, "statistics-path": self.statistics_path,
                "file-size-in-bytes": self.file_size_in_bytes}

    @staticmethod
    def from_json(obj: dict, path: str) -> "PartitionStatisticsFile":
        return PartitionStatisticsFile(_int(obj, "snapshot-id", path), str(_req(obj, "statistics-path", path)),
                                       _int(obj, "file-size-in-bytes", path))


@dataclass(frozen=True)
class EncryptionKey:
    key_id: str
    encrypted_key_metadata: str
    encrypted_by_id: str | None = None
    properties: dict[str, str] | None = field(default=None, hash=False)

    def to_json(self) -> dict:
        out: dict[str, Any] = {"key-id": self.key_id, "encrypted-key-metadata": self.encrypted_key_metadata}
        if self.encrypted_by_id is not None:
            out["encrypted-by-id"] = self.encrypted_by_id
        if self.properties is not None:
            out["properties"] = dict(self.properties)
        return out

    @staticmethod
    def from_json(obj: dict, path: str) -> "EncryptionKey":
        meta = obj.get("encrypted-key-metadata", obj.get("key-metadata"))
        if meta is None:
            raise ValidationError(f"{path} is missing required field 'encrypted-key-metadata'")
        return EncryptionKey(str(_req(obj, "key-id", path)), meta, obj.get("encrypted-by-id"), obj.get("properties"))


def new_snapshot_id(existing: set[int] | frozenset[int] = frozenset()) -> int:
    """A positive, random snapshot id as Iceberg Java makes them (UUID halves XOR'd), unique in ``existing``."""
    while True:
        u = uuid.uuid4().int
        sid = ((u >> 64) ^ (u & 0xFFFFFFFFFFFFFFFF)) & 0x7FFFFFFFFFFFFFFF
        if sid and sid not in existing:
            return sid
