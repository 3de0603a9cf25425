"""Transactions: several changes of one table committed as one (Iceberg Java's ``Table.newTransaction()``).

    with t.transaction() as tx:
        with tx.update_schema() as u:
            u.add_column("region", "string")
        tx.append(df)                                  # written with the new column
        tx.set_properties({"owner": "etl"})

Inside the block, ``tx`` is the table as the transaction has changed it so far (a :class:`~sparkberg.table.Table`
whose changes go to the :class:`Transaction`): every write, evolution, property, ref and snapshot call works on it,
and reads of ``tx`` see the staged changes. Each change is built at once on that staged state (its files written,
its rules checked) and kept. When the block ends, the table commits the transaction as one change
(:class:`TransactionChange`): the staged tries when the table has not moved since the transaction began;
otherwise every change is built again, in order, on the fresh table, with the same validation as a commit of its
own (a conflict with the other writer's changes fails the transaction; the transaction's own snapshots are not
conflicts: the writes' requests tell their checks through the transaction's
:class:`~sparkberg.operations.request.Staging`). If the block raises, or the commit cannot succeed, nothing is
committed and every file the transaction wrote is deleted.

Maintenance (expiry, orphan removal, rewrites) deletes files after its commit and is not part of a transaction.
"""
from __future__ import annotations

from sparkberg.commit.pending import Change, PendingCommit, holds
from sparkberg.errors import SparkbergError
from sparkberg.io.fileio import FileIO, deleted_on_failure
from sparkberg.operations.request import Staging
from sparkberg.format.metadata import TableMetadata


class Transaction:
    """The changes of table ``name`` staged for one commit, from ``start`` (the table as the transaction began):
    ``metadata`` is the table as changed so far; ``staging`` holds the files the changes wrote or made obsolete."""

    def __init__(self, name: str, start: TableMetadata, io: FileIO):
        self.name, self.io = name, io
        self.start = self.metadata = start
        self.changes: list[Change] = []
        self.staged: list[PendingCommit] = []  # each change's try on the staged state
        self.staging = Staging()
        self.open = True

    def __repr__(self) -> str:
        return f"Transaction({self.name}, {len(self.changes)} staged)"

    def check_open(self) -> None:
        """A named error once the transaction's block has ended."""
        if not self.open:
            raise SparkbergError(f"the transaction on table {self.name} has ended; start another one")

    def stage(self, change: Change) -> PendingCommit:
        """Stage ``change``: built now on the transaction's state, which becomes the try's metadata; its files are
        kept until the transaction's commit is done (deleted if it fails)."""
        self.check_open()
        with deleted_on_failure(self.io, change.files):  # (a change that cannot be staged keeps no file)
            pending = change.on(self.metadata, 0)
        self.staging.kept += [(self.io, change.files), (self.io, lambda: pending.written)]
        self.changes.append(change)
        self.staged.append(pending)
        self.metadata = pending.metadata
        return pending

    def change(self) -> "TransactionChange":
        """The staged changes as one change, for the table to commit."""
        self.staging.own_snapshot_ids = frozenset(s.snapshot_id for s in self.metadata.snapshots) - frozenset(
            s.snapshot_id for s in self.start.snapshots)
        return TransactionChange(self)


class TransactionChange:
    """A transaction's changes as one: on the base it began on, the staged tries; on a newer one, each change built
    again in order. Its updates are theirs in order; it requires what they require of the base (a requirement
    that only a change of the same transaction made true is not the base's to meet)."""

    operation = "transaction"

    def __init__(self, tx: Transaction):
        self.tx = tx
        self._tries: list[PendingCommit] = tx.staged

    def __repr__(self) -> str:
        return f"TransactionChange({', '.join(c.operation for c in self.tx.changes)})"

    def on(self, base: TableMetadata, attempt: int) -> PendingCommit:
        """The transaction's changes on ``base``."""
        tx = self.tx
        if base is tx.start:
            tries = tx.staged
        else:
            tries = []
            with deleted_on_failure(tx.io, lambda: [p for t in tries for p in t.written]):
                meta = base
                for change in tx.changes:
                    tries.append(change.on(meta, attempt))
                    meta = tries[-1].metadata
        self._tries = tries
        requirements = []
        for t in tries:
            requirements += [r for r in t.requirements if r not in requirements and holds(r, base)]
        return PendingCommit(self.operation, base, tuple(u for t in tries for u in t.updates), tuple(requirements),
                             tries[-1].metadata, tuple(p for t in tries for p in t.written))

    def files(self) -> list[str]:
        """None of its own: the transaction's staging keeps the files of its changes."""
        return []

    def committed(self, pending: PendingCommit) -> None:
        """Each change lets go of what its committed try made obsolete; the staged tries' files, when a replay
        was committed instead, are referenced by nothing."""
        for change, done in zip(self.tx.changes, self._tries):
            change.committed(done)
        if self._tries is not self.tx.staged:
            self.tx.staging.obsolete.append((self.tx.io, lambda: [p for t in self.tx.staged for p in t.written]))


__all__ = ["Transaction", "TransactionChange"]
