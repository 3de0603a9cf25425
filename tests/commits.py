"""Commits the tests make below the table's API, through the one committer as the table's own calls do: files
already written appended (:func:`fast_append`), an operation's changes (:func:`commit_changes`), metadata updates
(:func:`commit_updates`). The files they name are the test's: none is deleted when the commit fails."""
import dataclasses

from sparkberg.commit.pending import MetadataChange, PendingCommit
from sparkberg.commit.producer import SnapshotChange
from sparkberg.operations.changes import Changes
from sparkberg.operations.request import MAIN_REQUEST, CommitRequest


def commit_changes(table, changes: Changes, request: CommitRequest = MAIN_REQUEST) -> PendingCommit:
    """Commit ``changes`` to ``table`` as one snapshot; the try that was committed."""
    change = SnapshotChange(table.metadata, table.io, dataclasses.replace(changes, written=[]), request)
    return table._commit(change)


def fast_append(table, files, request: CommitRequest = MAIN_REQUEST) -> PendingCommit:
    """Append the data files ``files`` (written for the table's default spec) as one snapshot."""
    return commit_changes(table, Changes("append", added_data=list(files)), request)


def commit_updates(table, updates) -> "object":
    """Commit metadata ``updates`` to ``table`` as one version; the table."""
    table._commit(MetadataChange("update", tuple(updates)))
    return table


def pending(base, new) -> PendingCommit:
    """A try whose metadata is ``new``, built on ``base``: what a catalog backend's ``commit`` is handed."""
    return PendingCommit("test", base, (), (), new)
