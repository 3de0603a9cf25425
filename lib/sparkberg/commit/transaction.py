"""Transactions: several changes of one table committed as one (Iceberg Java's ``Table.newTransaction()``).

    with t.transaction() as tx:
        with tx.update_schema() as u:
            u.add_column("region", "string")
        tx.append(df)                                  # written with the new column
        tx.set_properties({"owner": "etl"})

Inside the block, ``tx`` is the table as the transaction has changed it so far (a :class:`~sparkberg.table.Table`
whose commits go to the :class:`Transaction`): every write, evolution, property, ref and snapshot call works on it,
and reads of ``tx`` see the staged changes. Each call is built at once on that staged state (its files written,
its rules checked) and its build remembered; nothing reaches the catalog until the block ends, when the staged
metadata is committed in one swap. When another writer committed in between, every build is replayed, in order,
on the fresh table, with the same validation as a commit of its own (a conflict with the other writer's changes
fails the transaction; the transaction's own snapshots are not conflicts: the writes' requests tell their checks
through the transaction's :class:`~sparkberg.commit.request.Staging`), and the swap is retried as one commit per
``commit.retry.*``. If the block raises, or the commit cannot succeed, nothing is committed and every file the
transaction wrote is deleted.

Maintenance (expiry, orphan removal, rewrites) deletes files after its commit and is not part of a transaction.
"""
from __future__ import annotations

from sparkberg.commit.request import Build, Committable, Staging
from sparkberg.errors import SparkbergError
from sparkberg.io.fileio import deleted_on_failure
from sparkberg.spec.metadata import TableMetadata


class Transaction:
    """The changes of one table (``table``: what the staged metadata is finally committed through) staged for
    one commit: ``metadata`` is the table as changed so far; ``staging`` holds the files the changes wrote or made
    obsolete."""

    def __init__(self, table: Committable):
        self._table = table
        self._start = table.metadata
        self.metadata: TableMetadata = table.metadata
        self._builds: list[Build] = []
        self._written: list[str] = []  # the staged builds' files (manifest lists, rewritten manifests)
        self.staging = Staging()
        self.open = True

    def __repr__(self) -> str:
        return f"Transaction({self._table.name}, {len(self._builds)} staged)"

    def check_open(self) -> None:
        """A named error once the transaction's block has ended."""
        if not self.open:
            raise SparkbergError(f"the transaction on table {self._table.name} has ended; start another one")

    def stage(self, build: Build) -> TableMetadata:
        """Stage a change: built now on the transaction's state (returned), replayed on the fresh table if the
        commit at the end of the block finds another writer's commit first."""
        self.check_open()
        new, written = build(self.metadata, 0)
        self.staging.kept.append((self._table.io, lambda: written))
        self._written += written
        self._builds.append(build)
        self.metadata = new
        return new

    def commit(self) -> None:
        """Commit the staged changes in one swap: as staged when the table has not moved since the transaction
        began, else replayed on the fresh table (:mod:`sparkberg.commit.retry` retries the whole)."""
        self.open = False
        if not self._builds:
            return
        self.staging.own_snapshot_ids = frozenset(s.snapshot_id for s in self.metadata.snapshots) - frozenset(
            s.snapshot_id for s in self._start.snapshots)

        def replay(base: TableMetadata, n: int) -> tuple[TableMetadata, list[str]]:
            if base is self._start:
                return self.metadata, self._written
            written: list[str] = []
            with deleted_on_failure(self._table.io, lambda: written):
                meta = base
                for build in self._builds:
                    meta, files = build(meta, n)
                    written += files
            return meta, written

        self._table.commit_metadata(replay)


__all__ = ["Transaction"]
