"""Manifest merging, as Iceberg Java's ``MergingSnapshotProducer`` does on every commit.

Without it each append adds a manifest and planning slows with every commit. With
``commit.manifest-merge.enabled`` (default true), the manifests of a new snapshot are grouped by content
(data, then deletes) and partition spec (highest spec id first), packed from the end into bins of
``commit.manifest.target-size-bytes`` (default 8 MiB), and each bin of two or more is rewritten as one
manifest, except the bin holding the snapshot's newest manifest while it has fewer than
``commit.manifest.min-count-to-merge`` (default 100) manifests. In a merged manifest, files added by
this snapshot stay ADDED, files it deleted stay DELETED, deletes of older snapshots are dropped, and
every other file becomes EXISTING with its sequence numbers and row ids written out.
"""
from __future__ import annotations

from typing import Callable, Sequence, TypeVar

from sparkberg.avro.decode import manifest_entries
from sparkberg.errors import ValidationError
from sparkberg.io.fileio import FileIO
from sparkberg.format.manifests import ADDED, DELETED, EXISTING, MANIFEST_DATA, ManifestEntry, ManifestFile, inherit

MERGE_ENABLED = "commit.manifest-merge.enabled"
MIN_COUNT_TO_MERGE = "commit.manifest.min-count-to-merge"
TARGET_SIZE = "commit.manifest.target-size-bytes"

X = TypeVar("X")


def merge_settings(properties) -> tuple[bool, int, int]:
    """(enabled, min count to merge, target size in bytes) from table properties, with Iceberg's defaults."""
    def number(key: str, default: int) -> int:
        raw = properties.get(key)
        try:
            value = default if raw is None else int(raw)
        except ValueError:
            raise ValidationError(f"table property {key} must be an integer, got {raw!r}") from None
        if value < 1 and key == TARGET_SIZE:
            raise ValidationError(f"table property {key} must be positive, got {raw!r}")
        return value

    enabled = str(properties.get(MERGE_ENABLED, "true")).strip().lower() != "false"
    return enabled, number(MIN_COUNT_TO_MERGE, 100), number(TARGET_SIZE, 8 * 1024 * 1024)


def pack(items: Sequence[X], target: int, weight: Callable[[X], int], max_count: int | None = None
         ) -> list[list[X]]:
    """Bins of consecutive items of at most ``target`` total weight (and ``max_count`` items), in order; an item
    heavier than ``target`` gets a bin of its own. Iceberg Java's ``ListPacker.pack`` with a lookback of 1."""
    bins: list[list[X]] = []
    current: list[X] = []
    size = 0
    for item in items:
        w = weight(item)
        if current and (size + w > target or max_count is not None and len(current) >= max_count):
            bins.append(current)
            current, size = [], 0
        current.append(item)
        size += w
    if current:
        bins.append(current)
    return bins


def pack_end(items: Sequence[X], target: int, weight: Callable[[X], int]) -> list[list[X]]:
    """:func:`pack` filled from the end (so the first bin, which holds the newest manifests, is the partial
    one), each bin in the items' order (Java's ``ListPacker.packEnd``)."""
    return [list(reversed(b)) for b in reversed(pack(list(reversed(items)), target, weight))]


def merge_manifests(manifests: Sequence[ManifestFile], snapshot_id: int, properties, io: FileIO,
                    write: Callable[[list[ManifestEntry], int, int], ManifestFile]) -> list[ManifestFile]:
    """The manifest list of a new snapshot after merging (see the module docstring). ``manifests`` start with
    the snapshot's own new manifests; ``write(entries, spec_id, content)`` writes a merged manifest."""
    enabled, min_count, target = merge_settings(properties)
    if not enabled or len(manifests) < 2:
        return list(manifests)
    out: list[ManifestFile] = []
    for content in sorted({m.content for m in manifests}):
        by_spec: dict[int, list[ManifestFile]] = {}
        for m in manifests:
            if m.content == content:
                by_spec.setdefault(m.partition_spec_id, []).append(m)
        for spec_id in sorted(by_spec, reverse=True):
            group = by_spec[spec_id]
            first = group[0]
            for bin_ in pack_end(group, target, lambda m: m.manifest_length):
                if len(bin_) == 1 or (first in bin_ and len(bin_) < min_count):
                    out.extend(bin_)
                else:
                    out.append(write(_merged_entries(bin_, snapshot_id, io), spec_id, content))
    return out


def _merged_entries(manifests: Sequence[ManifestFile], snapshot_id: int, io: FileIO) -> list[ManifestEntry]:
    entries: list[ManifestEntry] = []
    for mf in manifests:
        raw = manifest_entries(io.read(mf.manifest_path), mf, inherited=False)
        for e, full in zip(raw, inherit(raw, mf)):
            if full.status == DELETED:
                if full.snapshot_id == snapshot_id:  # deleted by this snapshot: still reported
                    entries.append(ManifestEntry(DELETED, full.data_file, snapshot_id, full.sequence_number,
                                                 full.file_sequence_number))
            elif full.status == ADDED and full.snapshot_id == snapshot_id:
                # added by this snapshot: sequence numbers and row ids still to be inherited from the new manifest
                entries.append(ManifestEntry(ADDED, e.data_file, snapshot_id, e.sequence_number,
                                             e.file_sequence_number))
            else:
                entries.append(ManifestEntry(EXISTING, full.data_file, full.snapshot_id, full.sequence_number,
                                             full.file_sequence_number))
    return entries


__all__ = ["merge_manifests", "merge_settings", "pack", "pack_end", "MERGE_ENABLED", "MIN_COUNT_TO_MERGE", "TARGET_SIZE",
           "MANIFEST_DATA"]
