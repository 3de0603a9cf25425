"""A change of a table as a value: built on a base into a :class:`PendingCommit`, which the committer hands to the
catalog (:mod:`sparkberg.commit.committer`).

A :class:`Change` is what an operation, an evolution, a ref change or a maintenance action makes of the table; its
:meth:`~Change.on` builds one try of it on a base (the table as loaded, or the freshest version after a lost race:
there it checks for conflicts again) and returns the :class:`PendingCommit`: the metadata updates that make the new
version from that base, and the requirements (Iceberg's ``UpdateRequirement``: the table's uuid, a ref's snapshot,
the current schema, spec or sort order id, the last assigned ids) that the catalog's current version must still
meet for the updates to apply. A catalog that stores metadata files swaps in :attr:`PendingCommit.metadata`; the
REST catalog sends the updates and the requirements as stated.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from sparkberg.errors import CommitFailedException
from sparkberg.format import updates as U
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.snapshots import Snapshot


@dataclass(frozen=True)
class PendingCommit:
    """One try of a change, built on ``base``: the ``updates`` that make ``metadata`` from it, the ``requirements``
    the catalog's current version must meet for them to apply, the files written for this try (``written``:
    deleted when it is not committed), and the snapshot it adds, if any."""

    operation: str
    base: TableMetadata
    updates: tuple[U.TableUpdate, ...]
    requirements: tuple[U.TableRequirement, ...]
    metadata: TableMetadata
    written: tuple[str, ...] = ()
    snapshot: Snapshot | None = None

    @classmethod
    def of(cls, operation: str, base: TableMetadata, updates: Sequence[U.TableUpdate],
           requirements: Sequence[U.TableRequirement] = (), written: Sequence[str] = (),
           snapshot: Snapshot | None = None) -> "PendingCommit":
        """The try that applies ``updates`` to ``base``, requiring what :func:`stated` gives."""
        return cls(operation, base, tuple(updates), stated(base, updates, requirements),
                   U.apply_all(updates, base), tuple(written), snapshot)

    def __repr__(self) -> str:
        return (f"PendingCommit({self.operation}, {len(self.updates)} updates: "
                f"{', '.join(type(u).__name__ for u in self.updates)}; requires "
                f"{', '.join(type(r).__name__ for r in self.requirements)})")


def stated(base: TableMetadata, updates: Sequence[U.TableUpdate],
           requirements: Sequence[U.TableRequirement] = ()) -> tuple[U.TableRequirement, ...]:
    """What a try of ``updates`` on ``base`` requires: the same table, ``requirements`` (the change's own), and
    what the updates themselves ask (:func:`~sparkberg.format.updates.requirements_for`: every ref they move where
    ``base`` had it, the ids their schema, spec and sort order changes were assigned from), each once."""
    out: list[U.TableRequirement] = []
    seen: set = set()
    for r in (*U.requirements_for(base, updates), *requirements):
        key = (type(r), getattr(r, "ref", None))
        if key not in seen:
            seen.add(key)
            out.append(r)
    return tuple(out)


class Change(Protocol):
    """A change of a table, built into a try on each base the committer gives it."""

    @property
    def operation(self) -> str:
        """What the change is (a snapshot's operation, ``set-properties``, ``expire-snapshots``...)."""

    def on(self, base: TableMetadata, attempt: int) -> PendingCommit:
        """Try ``attempt`` (0, 1, ...) of the change on ``base``: its conflicts with ``base`` checked
        (CommitFailedException, or a ValidationError when the change can never apply)."""

    def files(self) -> list[str]:
        """The files the change wrote for every try (data, deletes, its new manifests): deleted when it is never
        committed."""

    def committed(self, pending: PendingCommit) -> None:
        """After ``pending`` (one of its tries) was committed: what it made obsolete is let go."""


@dataclass(frozen=True)
class MetadataChange:
    """A change of metadata alone: ``updates`` applied to each base on which ``requirements`` hold (a schema,
    spec or sort order change requires the state it was planned on; properties require nothing)."""

    operation: str
    updates: tuple[U.TableUpdate, ...]
    requirements: tuple[U.TableRequirement, ...] = ()

    def on(self, base: TableMetadata, attempt: int) -> PendingCommit:
        """The updates on ``base``, once its requirements are checked."""
        for r in self.requirements:
            r.check(base)
        return PendingCommit.of(self.operation, base, self.updates, self.requirements)

    def files(self) -> list[str]:
        """None: a metadata change writes no file of its own."""
        return []

    def committed(self, pending: PendingCommit) -> None:
        """Nothing to let go."""


@dataclass(frozen=True)
class PlannedChange:
    """A change planned again on each base: ``plan(base)`` gives its updates, or raises when it no longer
    applies (a ref change, an expiry, a fast-forward: what they do depends on what the base holds)."""

    operation: str
    plan: Callable[[TableMetadata], Sequence[U.TableUpdate]]

    def on(self, base: TableMetadata, attempt: int) -> PendingCommit:
        """The updates planned on ``base``."""
        return PendingCommit.of(self.operation, base, self.plan(base))

    def files(self) -> list[str]:
        """None: it writes no file of its own."""
        return []

    def committed(self, pending: PendingCommit) -> None:
        """Nothing to let go."""


# the committer of a table as maintenance gets it from the table: a rewrite with partial progress commits as its
# groups finish, and an expiry deletes what the committed version no longer reaches
Commit = Callable[[Change], PendingCommit]


def holds(requirement: U.TableRequirement, metadata: TableMetadata) -> bool:
    """Whether ``metadata`` meets ``requirement``."""
    try:
        requirement.check(metadata)
        return True
    except CommitFailedException:
        return False


__all__ = ["PendingCommit", "Change", "Commit", "MetadataChange", "PlannedChange", "stated", "holds"]
