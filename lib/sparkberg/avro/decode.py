"""Where a manifest list or a manifest becomes columns: the one choice between the two decoders.

Compiled code (:mod:`sparkberg.avro.columnar` over :mod:`sparkberg.avro.compiled`) decodes straight into Arrow
columns and only the fields asked for; fastavro (:mod:`sparkberg.avro.manifest`, the reference decoder, which
also writes manifests) reads anything else: a codec or a type compiled code declines, the first entries a
process decodes (:data:`LOAD_BUDGET_ENTRIES`), and every malformed file, whose error it names. Both give the same
columns (:class:`~sparkberg.avro.columnar.ManifestColumns`, :class:`~sparkberg.avro.columnar.ManifestListColumns`), so
what planning does with them afterwards (inheritance, pruning, delete matching) is written once, on columns
(:class:`~sparkberg.planning.entries.EntryDecoder`).

Writers and commit validations need every field of an entry, to carry it into a new manifest as it was: they
read :func:`manifest_entries`, the model's objects with the values they inherit filled in by the same rules
(:func:`~sparkberg.format.manifests.inherit`, over :func:`~sparkberg.format.manifests.inherit_columns`).
"""
from __future__ import annotations

import json
from typing import Sequence

import pyarrow as pa

from sparkberg.avro import compiled
from sparkberg.avro.columnar import (
    METRIC_COLUMNS, ManifestColumns, ManifestListColumns, _avro_schema, columns_from_manifest,
    read_manifest_columns, read_manifest_list_compiled, read_manifests_columns,
)
from sparkberg.avro.manifest import read_manifest, read_manifest_list
from sparkberg.avro.schemas import manifest_list_names
from sparkberg.format.manifests import ManifestEntry, ManifestFile, inherit

# Compiled code is the faster decoder at every size once loaded, but loading it (importing numba, its kernels
# from numba's disk cache, their first call) costs a fresh process about half a second: as long as the reference
# decoder takes for about LOAD_BUDGET_ENTRIES manifest entries. So a process decodes manifests by the reference
# decoder until the entries it has decoded so, with those it is about to decode, reach that many, then loads
# compiled code and keeps it (the rent-or-buy rule: a process never pays much more than twice what the better
# choice, known in hindsight, would have cost). A short job over a small table (the CLI, a scheduled DELETE) never
# loads it; a large table, or a long session that plans again and again, loads it once. Each manifest counts
# MANIFEST_ENTRIES entries more: opening it (its header, its schema) costs the reference decoder about as much as
# that many entries, so a table of many small manifests (ten-entry delete manifests) does not decode hundreds of
# them by it before the budget is spent. A manifest list is decoded by compiled code from FAST_LIST_MIN_BYTES (a
# table of a few hundred manifests) or once it is loaded.
FAST_LIST_MIN_BYTES = 16 * 1024
LOAD_BUDGET_ENTRIES = 10_000
MANIFEST_ENTRIES = 20
_reference_entries = 0  # entries this process has decoded by the reference decoder (:func:`_reference`)
_reference_manifests = 0  # and the manifests they were in


def compiled_for(entries: int | None, manifests: int = 1) -> bool:
    """Whether compiled code decodes (or copies from) ``manifests`` manifests of ``entries`` entries in all (None:
    unknown) in this process: always once it is loaded, else when what the reference decoder has decoded in this
    process and these reach :data:`LOAD_BUDGET_ENTRIES`, which pay for loading it (each manifest counted as
    :data:`MANIFEST_ENTRIES` entries more)."""
    return compiled.loaded() or entries is None or \
        _reference_entries + entries + MANIFEST_ENTRIES * (_reference_manifests + manifests) >= LOAD_BUDGET_ENTRIES


def expect(entries: int | None, manifests: int = 1) -> None:
    """Say that this process is about to decode ``manifests`` manifests of ``entries`` entries in all (None:
    unknown), over several calls: when these reach :data:`LOAD_BUDGET_ENTRIES` with those decoded already
    (:func:`compiled_for`), compiled code is loaded now. A plan decodes its delete manifests before its data
    manifests: without this, the reference decoder would take the delete manifests on the way to the budget that
    the data manifests then reach anyway."""
    if entries is not None and compiled_for(entries, manifests):
        compiled.load()


def manifest_list(data: bytes, path: str | None = None) -> ManifestListColumns:
    """A manifest list of any format version as columns; a malformed one raises
    :class:`~sparkberg.errors.InvalidMetadataError` naming ``path``."""
    if len(data) >= FAST_LIST_MIN_BYTES or compiled.loaded():
        try:
            names = manifest_list_names(json.loads(_avro_schema(data)))
        except Exception:  # noqa: BLE001 - not a readable header: the reference decoder names the problem
            names = None
        if names is not None:
            fast = read_manifest_list_compiled(data, *names)
            if fast is not None:
                return fast
    return ManifestListColumns.from_manifests(read_manifest_list(data, path))


def manifest_entries(data: bytes, manifest: ManifestFile, inherited: bool = True) -> list[ManifestEntry]:
    """The entries of ``manifest`` (``data``: its bytes), every field decoded, with the snapshot ids, sequence
    numbers and ``first_row_id`` they inherit from it filled in (``inherited=False``: as written); a malformed
    manifest raises :class:`~sparkberg.errors.InvalidMetadataError` naming it."""
    entries = read_manifest(data, manifest.manifest_path).entries
    return inherit(entries, manifest) if inherited else list(entries)


def manifest_columns(manifests: Sequence[tuple[bytes, str | None, int | None]],
                     physical: dict[int, pa.DataType] | None = None, names: frozenset[str] | None = None,
                     metric_keys: frozenset[int] | None = None) -> list[ManifestColumns]:
    """Manifests of one partition spec, ``(bytes, path, entry count if known)``, as columns, in order: one
    :class:`ManifestColumns` for all of them where compiled code decodes them in one pass, else one each.
    ``physical``: the Arrow type of each partition field's values; ``names``: the ``data_file`` columns read
    (others may be left undecoded); ``metric_keys``: the field ids whose metrics are read (see
    :func:`~sparkberg.avro.columnar.read_manifest_columns`)."""
    counts = [count for _, _, count in manifests]
    small = None not in counts and not compiled_for(sum(counts), len(counts))
    if not small:
        if len(manifests) > 1:
            together = read_manifests_columns([data for data, _, _ in manifests], physical, names, metric_keys)
            if together is not None:
                return [together]
        out = []
        for data, path, count in manifests:
            cols = read_manifest_columns(data, physical, names, metric_keys) if compiled_for(count) else None
            out.append(cols if cols is not None else _reference(data, path, physical, names))
        return out
    return [_reference(data, path, physical, names) for data, path, _ in manifests]


def _reference(data: bytes, path: str | None, physical, names: frozenset[str] | None) -> ManifestColumns:
    global _reference_entries, _reference_manifests
    metrics = names is None or not names.isdisjoint(METRIC_COLUMNS)
    out = columns_from_manifest(read_manifest(data, path, with_metrics=metrics), physical, names)
    # (threads may race on them: a count off by a manifest changes nothing)
    _reference_entries += out.num_rows
    _reference_manifests += 1
    return out
