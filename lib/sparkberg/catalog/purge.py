"""The files a table's metadata references, for dropping a table with purge."""
from __future__ import annotations

from typing import Iterator

from sparkberg.avro.manifest import read_manifest, read_manifest_list
from sparkberg.io.fileio import FileIO
from sparkberg.format.metadata import TableMetadata


def referenced_files(io: FileIO, metadata: TableMetadata) -> list[str]:
    """Every data, delete, manifest, manifest list, statistics and logged metadata file (deduplicated), all
    found before the caller deletes any: the manifest lists and manifests are read to find the rest."""
    return list(_referenced(io, metadata))


def _referenced(io: FileIO, metadata: TableMetadata) -> Iterator[str]:
    seen: set[str] = set()

    def once(path: str) -> Iterator[str]:
        if path not in seen:
            seen.add(path)
            yield path

    manifests: set[str] = set()
    for snap in metadata.snapshots:
        if snap.manifest_list:
            yield from once(snap.manifest_list)
            try:
                manifests.update(m.manifest_path for m in read_manifest_list(io.read(snap.manifest_list),
                                                                             snap.manifest_list))
            except FileNotFoundError:
                continue
        manifests.update(snap.manifests or ())
    for path in sorted(manifests):
        try:
            for e in read_manifest(io.read(path), path).entries:
                yield from once(e.data_file.file_path)
        except FileNotFoundError:
            pass
        yield from once(path)
    for s in metadata.statistics:
        yield from once(s.statistics_path)
    for s in metadata.partition_statistics:
        yield from once(s.statistics_path)
    for e in metadata.metadata_log:
        yield from once(e.metadata_file)
