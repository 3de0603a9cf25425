"""What a snapshot-producing operation changes, as a value it returns and never commits itself.

An append, a DELETE, an UPDATE, a MERGE, an overwrite, an equality delete, an import, a rewrite or a repair plans
and writes its files, then returns :class:`Changes`: the data and delete files it adds and the files it removes,
the metadata updates its snapshot carries with it (a merged schema, a name mapping) with what they require of the
base, and how a newer base is checked for conflicts (``validate``). The table hands it to the committer
(:mod:`sparkberg.commit.producer` makes each try's snapshot on the freshest base; :mod:`sparkberg.commit.committer`
retries and calls the catalog), so everything it states can be read before it is committed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from sparkberg.format import updates as U
from sparkberg.format.manifests import DataFile
from sparkberg.format.metadata import TableMetadata

# a conflict check of a newer base: (the metadata the operation planned on, the base a try builds on) -> raises
# CommitFailedException (or a ValidationError) on a conflict
Validation = Callable[[TableMetadata, TableMetadata], None]


def file_key(d: DataFile) -> tuple[str, int | None]:
    """Identity of a tracked file: its path, and for deletion vectors the blob offset in the Puffin file."""
    return d.file_path, d.content_offset


@dataclass
class Changes:
    """What one snapshot changes: ``operation`` (its summary's), the data files it adds (written for the default
    spec), the delete files it adds (each with its spec id), the files it ``removed`` (by :func:`file_key`), the
    data files that must still be live (``required``: its deletes target them), its conflict check of a newer
    base (``validate``), the data sequence number its added files keep (rewrites: the starting snapshot's, Java's
    default), summary fields of the operation (``replace-partitions``...).

    ``updates``: metadata updates committed with the snapshot, applied to each base first (a merged schema, a name
    mapping); ``requirements``: what each base must hold for them (a schema merge's: the schema it merged into is
    still current), and ``conflict``: how a base that does not is named (``the schema of table t changed ...``).
    ``written``: the files the operation wrote for it, deleted if it is never committed (by default, the files it
    adds; none when it adds files the table holds already). ``totals``: the summary's ``total-*`` fields stated
    outright (a repair's, counted from the manifests) instead of the base's totals moved by this change."""

    operation: str
    added_data: list[DataFile] = field(default_factory=list)
    added_deletes: list[tuple[int, DataFile]] = field(default_factory=list)
    removed: set[tuple[str, int | None]] = field(default_factory=set)
    required: set[str] = field(default_factory=set)
    validate: Validation | None = None
    data_sequence_number: int | None = None
    summary: dict[str, str] = field(default_factory=dict)
    updates: Sequence[U.TableUpdate] = ()
    requirements: Sequence[U.TableRequirement] = ()
    conflict: str = "the table changed"
    written: list[str] | None = None
    totals: dict[str, int] | None = None

    def __post_init__(self) -> None:
        if self.written is None:
            self.written = [f.file_path for f in self.added_data] + sorted({d.file_path for _, d in self.added_deletes})


@dataclass(frozen=True)
class AllOf:
    """Every one of ``checks`` (Nones left out), in order."""

    checks: tuple

    def __call__(self, start: TableMetadata, current: TableMetadata) -> None:
        for check in self.checks:
            if check is not None:
                check(start, current)


__all__ = ["Changes", "AllOf", "Validation", "file_key"]
