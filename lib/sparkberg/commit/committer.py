"""The one committer: a :class:`~sparkberg.commit.pending.Change` built on the table's current version, handed to
the catalog, and on a lost race built again on the freshest version, per ``commit.retry.*``
(:mod:`sparkberg.commit.retry`).

Each try's files (its manifest list, rewritten manifests) are deleted when that try is not committed; the files the
change wrote for every try (data and delete files, its new manifests) when the change is not committed at all.
A commit whose outcome is unknown (:class:`~sparkberg.errors.CommitStateUnknownException`) deletes nothing: the
files may be the table's now. Once a try is committed, the change lets go of what it made obsolete
(:meth:`~sparkberg.commit.pending.Change.committed`). The table (or a transaction, which stages its changes and
commits them as one: :mod:`sparkberg.commit.transaction`) is the one caller; it tells its listeners after.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from sparkberg.commit.pending import Change, PendingCommit
from sparkberg.commit.retry import RetryPolicy, retrying
from sparkberg.errors import TableUUIDMismatchError
from sparkberg.io.fileio import FileIO, deleted_on_failure
from sparkberg.format.metadata import TableMetadata


class Catalog(Protocol):
    """What the committer needs of a catalog."""

    def load_table_metadata(self, identifier: Any) -> tuple[Any, str, TableMetadata]:
        """(identifier, metadata location, metadata) of the table's current version."""

    def commit_table(self, identifier: Any, base_location: str, pending: PendingCommit) -> tuple[str, TableMetadata]:
        """Swap in ``pending`` atomically if the table is still at ``base_location``: (the new location, the
        metadata as stored), or CommitFailedException when another commit came first."""


@dataclass(frozen=True)
class Committed:
    """A committed change: the ``pending`` try that was, and the table's new ``metadata`` at ``location``."""

    pending: PendingCommit
    metadata: TableMetadata
    location: str


def same_table(loaded: TableMetadata, fresh: TableMetadata, name: str, location: str) -> None:
    """A named error when ``fresh`` (read at ``location``) is not the table ``loaded`` was: its uuid changed, so it
    was dropped and made again (the spec: a refreshed table whose table-uuid changed is an error)."""
    if fresh.table_uuid != loaded.table_uuid:
        raise TableUUIDMismatchError(f"table {name} is no longer the table loaded: its table-uuid changed from "
                                     f"{loaded.table_uuid} to {fresh.table_uuid} ({location})")


def commit(change: Change, catalog: Catalog, identifier: Any, name: str, io: FileIO, base: TableMetadata,
           base_location: str) -> Committed:
    """Commit ``change`` to the table ``identifier`` of ``catalog`` (``name`` in messages, ``io`` its FileIO),
    loaded at ``base_location`` as ``base``: each try built on the version it meets, retried as the table's
    ``commit.retry.*`` allow."""
    current = [base, base_location]

    def attempt(n: int) -> Committed:
        pending = change.on(current[0], n)
        with deleted_on_failure(io, lambda: pending.written):
            location, metadata = catalog.commit_table(identifier, current[1], pending)
        return Committed(pending, metadata, location)

    def reload() -> None:
        _, location, fresh = catalog.load_table_metadata(identifier)
        same_table(base, fresh, name, location)
        current[:] = [fresh, location]

    with deleted_on_failure(io, change.files):
        done = retrying(RetryPolicy.of(base.properties), attempt, reload)
    change.committed(done.pending)
    return done


__all__ = ["Catalog", "Committed", "commit", "same_table"]
