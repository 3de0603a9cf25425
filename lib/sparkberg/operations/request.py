"""What a write tells the commit it makes, handed down in the open from the table call to the snapshot producer.

A write (``Table.append``, ``delete``, ``merge``...) resolves once, before it plans, where it commits (its
:class:`~sparkberg.operations.target.Target`), the snapshot properties its summary records, and, inside a
transaction, the transaction's :class:`Staging`; the :class:`CommitRequest` it builds goes to every function that
plans or validates for it, and with its changes to the committer. A transaction's commit builds its changes again
on a newer base after their calls have returned: each change holds its request, and the request's staging tells
the conflict checks which snapshots are the transaction's own.

A write with an :class:`Idempotency` key (``append(df, idempotency=("nightly-load", 42))``, Delta's ``txnAppId`` and
``txnVersion``) commits only if no snapshot in its target's ancestry records the same application id with that
version or a later one. The key is recorded in the summary of the snapshot the write commits, under
:data:`APP_ID` and :data:`VERSION` (other engines read such a table unchanged: they are summary properties), and
checked twice: before the write plans or writes anything (a retried job that already committed writes nothing),
and inside every try of the commit, on the freshest base (two processes racing with one key commit once; the
loser deletes what it wrote). A key lives as long as the snapshot that records it: expiring that snapshot
forgets it, as it forgets everything else the snapshot knew.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from sparkberg.operations.properties import checked
from sparkberg.operations.target import MAIN, STAGED_WAP_ID, Target
from sparkberg.errors import AlreadyCommittedError, ValidationError
from sparkberg.io.fileio import FileIO, delete_named
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.snapshots import Snapshot

Paths = Callable[[], Iterable[str]]


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


# the summary properties that record an idempotent write's key
APP_ID = "sparkberg.idempotency.app-id"
VERSION = "sparkberg.idempotency.version"
MAX_VERSION = 2 ** 63 - 1  # (a version is a 64-bit signed integer, as Delta's txnVersion and Spark's batch ids)


@dataclass(frozen=True)
class Idempotency:
    """An idempotent write's key: the application (a job, a stream) and its version of the data (a run's date
    as a number, a batch id), which only grows."""

    app_id: str
    version: int

    @classmethod
    def of(cls, key: "tuple[str, int] | Idempotency | None") -> "Idempotency | None":
        """The key a write's ``idempotency=`` argument gives: ``(app_id, version)``, a non-empty string and a
        non-negative 64-bit signed integer; else a named error (a larger version, once recorded, would make every
        later real version of the application look committed)."""
        if key is None or isinstance(key, Idempotency):
            return key
        if not isinstance(key, (tuple, list)) or len(key) != 2:
            raise ValidationError(f"idempotency must be a pair (app_id, version), got {key!r}")
        app_id, version = key
        if not isinstance(app_id, str) or not app_id.strip():
            raise ValidationError(f"the idempotency app_id must be a non-empty string, got {app_id!r}")
        if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= MAX_VERSION:
            raise ValidationError(f"the idempotency version must be a non-negative integer of at most 64 bits "
                                  f"(0 to {MAX_VERSION}, as Delta's txnVersion and Spark's batch ids), got {version!r}")
        return cls(app_id, version)

    def summary(self) -> dict[str, str]:
        """What the snapshot of the write records."""
        return {APP_ID: self.app_id, VERSION: str(self.version)}

    def recorded(self, metadata: TableMetadata, target: Target) -> Snapshot | None:
        """The snapshot of ``target``'s ancestry (for a staged write: also the snapshots staged with its WAP id)
        that records this application with this version or a later one; None when there is none, and the write
        may commit."""
        snapshots: list[Snapshot] = []
        head = target.head(metadata)
        while head is not None:
            snapshots.append(head)
            head = None if head.parent_snapshot_id is None else metadata.snapshot_by_id(head.parent_snapshot_id)
        if target.wap_id is not None:
            snapshots += [s for s in metadata.snapshots if (s.summary or {}).get(STAGED_WAP_ID) == target.wap_id]
        for snap in snapshots:
            summary = snap.summary or {}
            if summary.get(APP_ID) == self.app_id and _version(summary.get(VERSION)) >= self.version:
                return snap
        return None


def _version(text: str | None) -> int:
    """A recorded version (-1 when absent or not a number: it records nothing)."""
    try:
        return int(text) if text is not None else -1
    except ValueError:
        return -1


@dataclass(frozen=True)
class CommitRequest:
    """Everything a write says about its commit: the ``target`` (branch, or staged WAP id), the snapshot
    ``properties`` its summary records (checked: no summary field sparkberg computes), the transaction's
    ``staging`` when the write is part of one, and its ``idempotency`` key, if any."""

    target: Target = MAIN
    properties: Mapping[str, str] = field(default_factory=dict)
    staging: Staging | None = None
    idempotency: Idempotency | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "properties", checked(dict(self.properties)))

    def summary(self) -> dict[str, str]:
        """The properties the snapshot's summary records: the snapshot properties and the idempotency key."""
        return {**self.properties, **(self.idempotency.summary() if self.idempotency is not None else {})}

    def check_not_committed(self, base: TableMetadata) -> None:
        """:class:`~sparkberg.errors.AlreadyCommittedError` when ``base`` records the write's idempotency key (a
        try of its commit must not happen); nothing for a write without one."""
        if self.idempotency is None:
            return
        snap = self.idempotency.recorded(base, self.target)
        if snap is not None:
            raise AlreadyCommittedError(self.idempotency.app_id, self.idempotency.version, snap.snapshot_id,
                                        _version((snap.summary or {}).get(VERSION)))

    def own_snapshot_ids(self) -> frozenset[int]:
        """The snapshots of the transaction being replayed (none for a write of its own, or before the replay)."""
        return frozenset() if self.staging is None else self.staging.own_snapshot_ids

    def made_obsolete(self, io: FileIO, paths: Paths) -> None:
        """The files ``paths()`` names are referenced by nothing now the commit is done: deleted now, or in a
        transaction once its commit is (a replay of this commit may need them until then)."""
        if self.staging is not None:
            self.staging.obsolete.append((io, paths))
        else:
            delete_named([(io, paths)])


MAIN_REQUEST = CommitRequest()  # (main's head, no snapshot properties: maintenance and ref operations)

__all__ = ["CommitRequest", "Idempotency", "Staging", "MAIN_REQUEST", "APP_ID", "VERSION"]
