"""What a write tells the commit it makes, handed down in the open from the table call to the snapshot producer.

A write (``Table.append``, ``delete``, ``merge``...) resolves once, before it plans, where it commits (its
:class:`~sparkberg.commit.target.Target`), the snapshot properties its summary records, and, inside a transaction,
the transaction's :class:`Staging`; the :class:`CommitRequest` it builds goes to every function that plans,
validates or commits for it. A transaction's commit replays the builds of its writes after their calls have
returned: each build holds its request, and the request's staging tells the replayed conflict checks which
snapshots are the transaction's own.

What the commit layer needs of a table is :class:`Committable`: its metadata, FileIO and name, and the one way to
commit (``commit_metadata``), which a table, a transaction and a schema-merging write each give.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Mapping, Protocol, Sequence

from sparkberg.commit.properties import checked
from sparkberg.commit.target import MAIN, Target
from sparkberg.io.fileio import FileIO, delete_named, deleted_on_failure
from sparkberg.spec.metadata import TableMetadata

Build = Callable[[TableMetadata, int], "tuple[TableMetadata, Sequence[str]]"]
Paths = Callable[[], Iterable[str]]


class Committable(Protocol):
    """A table as the commit layer uses it."""

    @property
    def metadata(self) -> TableMetadata:
        """The metadata the next commit builds on."""

    @property
    def io(self) -> FileIO:
        """Where the table's files are read and written."""

    @property
    def name(self) -> str:
        """How messages name the table."""

    def commit_metadata(self, build: Build) -> None:
        """Swap in ``build(base, attempt)``'s metadata atomically, building again on a lost race."""


class Staging:
    """A transaction's staged changes: the files they wrote (deleted by :meth:`discard` if the transaction's commit
    does not happen), the files they made obsolete (deleted by :meth:`finish` once it has), and, while the
    commit replays them on a newer base, the snapshots they staged (``own_snapshot_ids``: conflict checks look
    past them to the commits of others)."""

    def __init__(self) -> None:
        self.kept: list[tuple[FileIO, Paths]] = []
        self.obsolete: list[tuple[FileIO, Paths]] = []
        self.own_snapshot_ids: frozenset[int] = frozenset()

    def discard(self) -> None:
        """Delete the files the staged changes wrote (their commit failed or never came)."""
        delete_named(self.kept)

    def finish(self) -> None:
        """Delete the files the committed changes made obsolete."""
        delete_named(self.obsolete)


@dataclass(frozen=True)
class CommitRequest:
    """Everything a write says about its commit: the ``target`` (branch, or staged WAP id), the snapshot
    ``properties`` its summary records (checked: no summary field sparkberg computes), and the transaction's
    ``staging`` when the write is part of one."""

    target: Target = MAIN
    properties: Mapping[str, str] = field(default_factory=dict)
    staging: Staging | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "properties", checked(dict(self.properties)))

    def own_snapshot_ids(self) -> frozenset[int]:
        """The snapshots of the transaction being replayed (none for a write of its own, or before the replay)."""
        return frozenset() if self.staging is None else self.staging.own_snapshot_ids

    @contextlib.contextmanager
    def written(self, io: FileIO, paths: Paths) -> Iterator[None]:
        """The block writes the files ``paths()`` names: deleted if it raises
        (:func:`~sparkberg.io.fileio.deleted_on_failure`); in a transaction, kept after it until the
        transaction's commit is done, and deleted if that fails."""
        with deleted_on_failure(io, paths):
            yield
        if self.staging is not None:
            self.staging.kept.append((io, paths))

    def made_obsolete(self, io: FileIO, paths: Paths) -> None:
        """The files ``paths()`` names are referenced by nothing now the commit is done: deleted now, or in a
        transaction once its commit is (a replay of this commit may need them until then)."""
        if self.staging is not None:
            self.staging.obsolete.append((io, paths))
        else:
            delete_named([(io, paths)])


MAIN_REQUEST = CommitRequest()  # (main's head, no snapshot properties: maintenance and ref operations)

__all__ = ["Committable", "CommitRequest", "Staging", "MAIN_REQUEST", "Build"]
