"""Where a write commits: the head of a branch (``main`` unless told), or staged for write-audit-publish.

A write plans from its target's head and commits a snapshot whose parent is that head; the branch then points at
it (Iceberg Java's ``SnapshotProducer.toBranch``). A staged snapshot (``stageOnly``) has main's head as parent and
moves no ref: it carries its WAP id in ``wap.id`` until :meth:`~sparkberg.table.Table.publish_wap` cherry-picks it.
Which target a write has follows Iceberg's Spark integration (``SparkWriteConf.branch``): ``branch=`` on the
write; with ``write.wap.enabled``, the ``spark.wap.branch`` session conf (a branch created from main's head by the
first write to it) or a WAP id (``wap_id=`` or ``spark.wap.id``), never both. A write resolves its target once and
hands it down in its :class:`~sparkberg.operations.request.CommitRequest`, so planning, validation and the producer
agree on it.
"""
from __future__ import annotations

from dataclasses import dataclass

from sparkberg.errors import ValidationError
from sparkberg.spark.settings import session_conf
from sparkberg.format import updates as U
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.properties import WAP_ENABLED, boolean
from sparkberg.format.snapshots import BRANCH, MAIN_BRANCH, Snapshot

STAGED_WAP_ID = "wap.id"
PUBLISHED_WAP_ID = "published-wap-id"
SOURCE_SNAPSHOT_ID = "source-snapshot-id"


@dataclass(frozen=True)
class Target:
    """A write's target: ``branch``, made from main's head when missing if ``create``; or, with ``wap_id``,
    a staged snapshot on main's head."""

    branch: str = MAIN_BRANCH
    wap_id: str | None = None
    create: bool = False

    def head_id(self, meta: TableMetadata) -> int | None:
        """The snapshot id the write builds on; a branch that does not exist (and may not be made) or a tag is a
        named error."""
        if self.wap_id is not None or self.branch == MAIN_BRANCH:
            return meta.current_snapshot_id
        ref = meta.refs.get(self.branch)
        if ref is None:
            if self.create:
                return meta.current_snapshot_id
            raise ValidationError(f"cannot write to branch {self.branch!r}: it does not exist (create_branch makes "
                                  "it)")
        if ref.type != BRANCH:
            raise ValidationError(f"cannot write to {self.branch!r}: it is a tag, and tags cannot be written")
        return ref.snapshot_id

    def head(self, meta: TableMetadata) -> Snapshot | None:
        """The snapshot the write builds on (None on an empty branch or table)."""
        sid = self.head_id(meta)
        return None if sid is None else meta.snapshot_by_id(sid)

    def summary(self) -> dict[str, str]:
        """What the target adds to the summary of the snapshot it gets."""
        return {} if self.wap_id is None else {STAGED_WAP_ID: self.wap_id}

    def updates(self, base: TableMetadata, snap: Snapshot) -> list:
        """The metadata updates that commit ``snap`` to the target: added, and (unless staged) the branch moved
        to it, keeping the branch's retention settings."""
        if self.wap_id is not None:
            return [U.AddSnapshot(snap)]
        return [U.AddSnapshot(snap), self.move(base, snap.snapshot_id)]

    def move(self, base: TableMetadata, snapshot_id: int) -> U.SetSnapshotRef:
        """The update that points the branch at ``snapshot_id``, keeping its retention settings (as Java's
        ``setBranchSnapshot``)."""
        ref = base.refs.get(self.branch)
        keep = (ref.min_snapshots_to_keep, ref.max_snapshot_age_ms, ref.max_ref_age_ms) if ref else (None, None, None)
        return U.SetSnapshotRef(self.branch, snapshot_id, BRANCH, *keep)

    def describe(self) -> str:
        """How errors and job descriptions name the target (empty for main)."""
        if self.wap_id is not None:
            return f" (staged, WAP id {self.wap_id})"
        return "" if self.branch == MAIN_BRANCH else f" (branch {self.branch})"


MAIN = Target()


def _conf(spark, key: str) -> str | None:
    return session_conf(spark, key) or None


def resolve(spark, meta: TableMetadata, branch: str | None = None, wap_id: str | None = None) -> Target:
    """The target of a write given its ``branch=`` and ``wap_id=`` arguments, the table's ``write.wap.enabled`` and
    the session's ``spark.wap.id`` and ``spark.wap.branch`` (Iceberg Spark's rules; conflicts are named errors)."""
    for label, v in (("branch", branch), ("wap_id", wap_id)):
        if v is not None and (not isinstance(v, str) or not v.strip()):
            raise ValidationError(f"{label} must be a non-empty string, got {v!r}")
    enabled = boolean(meta.properties, WAP_ENABLED)
    if wap_id is not None and not enabled:
        raise ValidationError(f"cannot stage a write with WAP id {wap_id!r}: table property {WAP_ENABLED} is not "
                              "true")
    if not enabled:
        return Target(branch) if branch is not None else MAIN
    wap_id = wap_id if wap_id is not None else _conf(spark, "spark.wap.id")
    wap_branch = _conf(spark, "spark.wap.branch")
    if wap_id is not None and wap_branch is not None:
        raise ValidationError(f"cannot set both a WAP id and a WAP branch, got id {wap_id!r} and branch "
                              f"{wap_branch!r}")
    if wap_branch is not None:
        if branch is not None:
            raise ValidationError(f"cannot write to both branch {branch!r} and WAP branch {wap_branch!r}")
        return Target(wap_branch, create=True)
    if wap_id is not None:
        if branch is not None:
            raise ValidationError(f"cannot stage WAP id {wap_id!r} and write to branch {branch!r}")
        return Target(wap_id=wap_id)
    return Target(branch) if branch is not None else MAIN


def read_branch(spark, meta: TableMetadata) -> str | None:
    """The branch a read without a ref reads: the WAP branch when WAP is enabled and it exists (Iceberg Spark's
    ``SparkReadConf.branch``), else main (None)."""
    if not boolean(meta.properties, WAP_ENABLED):
        return None
    wap_branch = _conf(spark, "spark.wap.branch")
    return wap_branch if wap_branch is not None and wap_branch in meta.refs else None


__all__ = ["Target", "MAIN", "resolve", "read_branch", "STAGED_WAP_ID", "PUBLISHED_WAP_ID",
           "SOURCE_SNAPSHOT_ID"]
