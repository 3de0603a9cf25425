"""Transactions: several changes of one table committed as one (Iceberg Java's ``Table.newTransaction()``).

    with t.transaction() as tx:
        with tx.update_schema() as u:
            u.add_column("region", "string")
        tx.append(df)                                  # written with the new column
        tx.set_properties({"owner": "etl"})

Inside the block, ``tx`` is the table as the transaction has changed it so far: every write, evolution, property,
ref and snapshot call of :class:`~sparkberg.table.Table` works on it, and reads of ``tx`` see the staged changes.
Each call is built at once on that staged state (its files written, its rules checked) and remembered; nothing
reaches the catalog until the block ends, when the staged metadata is committed in one swap. When another writer
committed in between, every call is replayed, in order, on the fresh table, with the same validation as a commit of
its own (a conflict with the other writer's changes fails the transaction; the transaction's own snapshots are not
conflicts), and the swap is retried as one commit per ``commit.retry.*``. If the block raises, or the commit cannot
succeed, nothing is committed and every file the transaction wrote is deleted.

Maintenance (expiry, orphan removal, rewrites) deletes files after its commit and is not part of a transaction.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from sparkberg.commit.request import Build, Staging
from sparkberg.errors import CommitStateUnknownException, NotSupportedError, SparkbergError
from sparkberg.io.fileio import deleted_on_failure
from sparkberg.spec.metadata import TableMetadata
from sparkberg.table import Table

class Transaction(Table):
    """A table's changes staged for one commit; made by :meth:`Table.transaction`, open for its block."""

    def __init__(self, table: Table):
        super().__init__(table.identifier, table.metadata, table.metadata_location, table.io, table.catalog,
                         table.spark)
        self._table = table
        self._start = table.metadata
        self._builds: list[Build] = []
        self._written: list[str] = []  # the staged builds' files (manifest lists, rewritten manifests)
        self._files = Staging()  # every file the staged changes wrote or made obsolete; the replay's own snapshots
        self._open = True

    def __repr__(self) -> str:
        return f"Transaction({self.name}, {len(self._builds)} staged)"

    def commit_metadata(self, build: Build) -> None:
        """Stage a change: built now on the transaction's state, replayed on the fresh table if the commit at the
        end of the block finds another writer's commit first."""
        self._check_open()
        new, written = build(self._metadata, 0)
        self._files.kept.append((self.io, lambda: written))
        self._written += written
        self._builds.append(build)
        self._metadata = new

    def _staging(self) -> Staging:
        """A write's files are the transaction's until it ends (its requests carry this staging)."""
        self._check_open()
        return self._files

    def _check_open(self) -> None:
        if not self._open:
            raise SparkbergError(f"the transaction on table {self.name} has ended; start another one")

    def refresh(self) -> "Transaction":
        """The transaction's state is the table as it has changed it: nothing to reload until it commits."""
        return self

    def transaction(self) -> Any:
        """Refused: transactions do not nest."""
        raise NotSupportedError("transactions do not nest: make the changes on the enclosing transaction")

    def _maintenance(self, call: str) -> Any:
        raise NotSupportedError(f"{call} deletes files after its commit and cannot be part of a transaction; run "
                                "it on the table")

    def expire_snapshots(self, *args: Any, **kwargs: Any) -> Any:
        """Not part of a transaction (it deletes files once its commit is done)."""
        return self._maintenance("expire_snapshots")

    def remove_orphan_files(self, *args: Any, **kwargs: Any) -> Any:
        """Not part of a transaction (it deletes files)."""
        return self._maintenance("remove_orphan_files")

    def rewrite_data_files(self, *args: Any, **kwargs: Any) -> Any:
        """Not part of a transaction (it commits in groups, and deletes files it made obsolete)."""
        return self._maintenance("rewrite_data_files")

    def rewrite_position_delete_files(self, *args: Any, **kwargs: Any) -> Any:
        """Not part of a transaction."""
        return self._maintenance("rewrite_position_delete_files")

    def rewrite_manifests(self, *args: Any, **kwargs: Any) -> Any:
        """Not part of a transaction."""
        return self._maintenance("rewrite_manifests")

    def _commit(self) -> None:
        """Commit the staged changes in one swap: as staged when the table has not moved since the transaction
        began, else replayed on the fresh table (:mod:`sparkberg.commit.retry` retries the whole)."""
        self._open = False
        if not self._builds:
            return
        staged_ids = frozenset(s.snapshot_id for s in self._metadata.snapshots) - frozenset(
            s.snapshot_id for s in self._start.snapshots)

        def replay(base: TableMetadata, n: int) -> tuple[TableMetadata, list[str]]:
            if base is self._start:
                return self._metadata, self._written
            written: list[str] = []
            with deleted_on_failure(self.io, lambda: written):
                meta = base
                for build in self._builds:
                    meta, files = build(meta, n)
                    written += files
            return meta, written

        self._files.own_snapshot_ids = staged_ids  # (the replayed writes' conflict checks look past them)
        self._table.commit_metadata(replay)
        self._metadata, self.metadata_location = self._table.metadata, self._table.metadata_location


@contextlib.contextmanager
def transaction(table: Table) -> Iterator[Transaction]:
    """The block of a transaction on ``table`` (see the module docstring)."""
    table._writable()
    tx = Transaction(table)
    try:
        yield tx
        tx._commit()
    except CommitStateUnknownException:
        raise  # (the files may be the table's now)
    except BaseException:
        tx._files.discard()
        raise
    finally:
        tx._open = False
    tx._files.finish()


__all__ = ["Transaction", "transaction"]
