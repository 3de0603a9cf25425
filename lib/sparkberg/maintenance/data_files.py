"""Data file compaction, as Iceberg Java's ``rewrite_data_files`` procedure (``RewriteDataFilesSparkAction``), with
its options, by their Java names and defaults.

**Planning** (Java's ``BinPackRewriteFilePlanner``). The data files the filter may touch are grouped by partition
(files of an older spec all together, as Java does: their rows may fall in several partitions of the current
one). Unless ``rewrite-all``, a file is a candidate when its size is outside [``min-file-size-bytes`` (75% of the
target), ``max-file-size-bytes`` (180%)], when it has ``delete-file-threshold`` delete files, or when its
file-scoped deletes remove ``delete-ratio-threshold`` (0.3) of its rows. A partition's candidates are packed, in
order, into file groups of at most ``max-file-group-size-bytes`` (100 GB) and ``max-file-group-input-files``; a
group is rewritten when it has ``min-input-files`` (5) files, or more than one file and more bytes than the
target, or more bytes than ``max-file-size-bytes``, or a file with too many deletes. ``max-files-to-rewrite``
caps the files taken; ``rewrite-job-order`` (``none``, ``bytes-asc``, ``bytes-desc``, ``files-asc``,
``files-desc``) orders the groups.

**Rewriting.** Each group is one Spark job, up to ``max-concurrent-file-group-rewrites`` (5) at a time: its rows
read with their deletes applied and written for the current spec at ``target-file-size-bytes``; the groups of a
binpack rewrite without partial progress that make one file each (the only group of their partition) share one
job, which writes each partition's rows in one task (:meth:`_Run.together`). ``binpack`` keeps
the rows as they come, in as many tasks as the group should make files; ``sort`` orders them by the table's
sort order or ``sort_order``, z-order (``sort_order="zorder(a, b)"``) by the z-value of the columns (identity
partition columns are left out, constant within a partition): the rows are range-partitioned into the group's
expected file count (times ``shuffle-partitions-per-file``; ``compression-factor`` scales the estimate) and
sorted, and files of a table sort order record its id. On v3 tables rows keep ``_row_id`` and
``_last_updated_sequence_number``, whatever the strategy.

**Committing.** The new files keep the starting snapshot's data sequence number
(``use-starting-sequence-number``), so equality deletes committed meanwhile still apply to them; a concurrent
position delete or DV for a rewritten file is a conflict. The rewritten files' own deletes (their DVs, position
delete files naming only them) go with them. All groups are committed in one ``replace`` snapshot, and a group
that fails fails the call (what was written is removed). With ``partial-progress.enabled`` the groups are
committed as they finish, in at most ``partial-progress.max-commits`` (10) commits: a group that fails is
counted (``failed_data_files_count``) and the rest go on; a commit that conflicts is dropped, and more than
``partial-progress.max-failed-commits`` such commits is an error. ``remove-dangling-deletes`` then removes the
delete files no live data file can use (:func:`dangling_delete_files`).
"""
from __future__ import annotations

import logging
import math
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparkberg.commit.manifests import pack
from sparkberg.commit.pending import Commit
from sparkberg.commit.producer import SnapshotChange
from sparkberg.operations.rowlevel import RowLevel, deletion_vectors_of, file_scoped_deletes, NoNewDeletes, \
    removal_of
from sparkberg.errors import (
    CommitFailedException, CommitStateUnknownException, NotSupportedError, SparkbergError, ValidationError,
)
from sparkberg.maintenance.options import Options
from sparkberg.operations.changes import Changes
from sparkberg.operations.request import MAIN_REQUEST
from sparkberg.read.arrow import TaskReader
from sparkberg.read.deletecache import delete_cache
from sparkberg.read.reader import identity_values
from sparkberg.spark import tuning
from sparkberg.spark.frames import local_dataframe
from sparkberg.spark.session import is_classic, job_description
from sparkberg.spark.settings import unsplit_file_bytes
from sparkberg.format import types as T
from sparkberg.format.manifests import sequence_applies
from sparkberg.format.properties import TARGET_FILE_SIZE, target_file_size
from sparkberg.format.transforms import IdentityTransform
from sparkberg.write.dataframe import UNSORTED, table_ordering, write_files, write_on_driver
from sparkberg.write.ordering import Ordering, ZOrder, parse_ordering

log = logging.getLogger(__name__)

RESULT = ("rewritten_data_files_count int, added_data_files_count int, rewritten_bytes_count bigint, "
          "failed_data_files_count int, removed_delete_files_count int")
JOB_ORDERS = ("none", "bytes-asc", "bytes-desc", "files-asc", "files-desc")
BINPACK_OPTIONS = (
    "target-file-size-bytes", "min-file-size-bytes", "max-file-size-bytes", "min-input-files", "rewrite-all",
    "max-file-group-size-bytes", "max-file-group-input-files", "delete-file-threshold", "delete-ratio-threshold",
    "max-files-to-rewrite", "rewrite-job-order", "partial-progress.enabled", "partial-progress.max-commits",
    "partial-progress.max-failed-commits", "max-concurrent-file-group-rewrites", "use-starting-sequence-number",
    "remove-dangling-deletes")
SORT_OPTIONS = BINPACK_OPTIONS + ("compression-factor", "shuffle-partitions-per-file")
ZORDER_OPTIONS = SORT_OPTIONS + ("var-length-contribution", "max-output-size")
ACTION = "rewrite_data_files"


@dataclass
class Settings:
    """The options of one call, read and checked."""

    target: int
    min_size: int
    max_size: int
    min_input_files: int
    rewrite_all: bool
    max_group_bytes: int
    max_group_files: int | None
    delete_file_threshold: int | None
    delete_ratio: float
    max_files: int | None
    job_order: str
    partial: bool
    max_commits: int
    max_failed_commits: int
    concurrency: int
    starting_sequence: bool
    remove_dangling: bool
    compression_factor: float = 1.0
    per_file: int = 1

    @staticmethod
    def read(table, options: Options, shuffling: bool) -> "Settings":
        """The settings from ``options`` and the table's properties; a named error for a value out of range."""
        props = table.metadata.properties
        target = options.integer("target-file-size-bytes", target_file_size(props), 1)
        min_size = options.integer("min-file-size-bytes", int(target * 0.75), 0)
        max_size = options.integer("max-file-size-bytes", int(target * 1.8), 0)
        if not min_size < target < max_size:
            raise ValidationError(f"rewrite_data_files: target-file-size-bytes ({target}) must be above "
                                  f"min-file-size-bytes ({min_size}) and below max-file-size-bytes ({max_size})")
        max_commits = options.integer("partial-progress.max-commits", 10, 1)
        return Settings(
            target, min_size, max_size, options.integer("min-input-files", 5, 1), options.boolean("rewrite-all", False),
            options.integer("max-file-group-size-bytes", 100 * 1024 ** 3, 1),
            options.integer("max-file-group-input-files", None, 1),
            options.integer("delete-file-threshold", None, 0),
            options.number("delete-ratio-threshold", 0.3, 0.0, 1.0, low_open=True),
            options.integer("max-files-to-rewrite", None, 1),
            options.choice("rewrite-job-order", "none", JOB_ORDERS),
            options.boolean("partial-progress.enabled", False), max_commits,
            options.integer("partial-progress.max-failed-commits", max_commits, 0),
            options.integer("max-concurrent-file-group-rewrites", 5, 1),
            options.boolean("use-starting-sequence-number", True), options.boolean("remove-dangling-deletes", False),
            options.number("compression-factor", 1.0, 0.0, math.inf, low_open=True) if shuffling else 1.0,
            options.integer("shuffle-partitions-per-file", 1, 1) if shuffling else 1)

    def expected_files(self, size: int) -> int:
        """How many files ``size`` input bytes should make (Java's ``expectedOutputFiles``): whole target-size
        files, the remainder a file of its own when it is not too small, else spread over the others unless that
        makes them more than 10% too large."""
        size = int(size * self.compression_factor)
        if size < self.target:
            return 1
        with_rest, without_rest = -(-size // self.target), size // self.target
        if size % self.target > self.min_size:
            return with_rest
        write_max = self.target + (self.max_size - self.target) * 0.5
        return without_rest if size / without_rest < min(1.1 * self.target, write_max) else with_rest


@dataclass
class Group:
    """Files of one partition rewritten together (Java's file group)."""

    tasks: list[dict]
    key: tuple
    one_partition: bool  # every file in the current spec's partition ``key``
    files_apart: bool = False  # (groups put together) each file alone in its partition of the current spec
    size: int = field(init=False)

    def __post_init__(self) -> None:
        self.size = sum(t["file_size_in_bytes"] for t in self.tasks)


def _file_scoped_count(task: dict) -> int:
    return sum(d["record_count"] for d in task["deletes"]
               if d["referenced_data_file"] == task["file_path"])


def plan_groups(rl: RowLevel, s: Settings) -> list[Group]:
    """The file groups to rewrite, in job order (see the module docstring)."""
    default = rl.m.default_spec_id
    by_partition: dict[tuple, list[dict]] = defaultdict(list)
    for t in rl.tasks:
        key = ("spec", tuple(sorted(rl.partition(t).items()))) if t["spec_id"] == default else ("older",)
        by_partition[key].append(t)

    def too_many_deletes(t):
        return s.delete_file_threshold is not None and len(t["deletes"]) >= s.delete_file_threshold

    def too_high_ratio(t):
        return bool(t["deletes"]) and min(_file_scoped_count(t), t["record_count"]) >= \
            s.delete_ratio * max(1, t["record_count"])

    groups: list[Group] = []
    taken = 0
    for key, tasks in by_partition.items():
        candidates = tasks if s.rewrite_all else [
            t for t in tasks if not s.min_size <= t["file_size_in_bytes"] <= s.max_size
            or too_many_deletes(t) or too_high_ratio(t)]
        bins = pack(candidates, s.max_group_bytes, lambda t: t["file_size_in_bytes"], s.max_group_files)
        for b in bins:
            size = sum(t["file_size_in_bytes"] for t in b)
            if not (s.rewrite_all or len(b) > 1 and len(b) >= s.min_input_files or len(b) > 1 and size > s.target
                    or size > s.max_size or any(too_many_deletes(t) or too_high_ratio(t) for t in b)):
                continue
            if s.max_files is not None:
                b = b[:max(0, s.max_files - taken)]
                if not b:
                    continue
            taken += len(b)
            groups.append(Group(b, key, key[0] == "spec"))
    order = {"bytes-asc": lambda g: g.size, "bytes-desc": lambda g: -g.size,
             "files-asc": lambda g: len(g.tasks), "files-desc": lambda g: -len(g.tasks)}.get(s.job_order)
    return sorted(groups, key=order) if order else groups


def _ordering(table, strategy: str | None, sort_order: str | None, options: dict | None) -> tuple[str, Ordering | None]:
    """The strategy (``binpack``, ``sort`` or ``zorder``) and what it orders rows by."""
    m = table.metadata
    strategy = (strategy or ("sort" if sort_order else "binpack")).strip().lower()
    if strategy not in ("binpack", "sort"):
        raise ValidationError(f"unknown rewrite strategy {strategy!r} (binpack or sort; z-order is the sort "
                              "strategy with sort_order='zorder(a, b)')")
    if strategy == "binpack":
        if sort_order:
            raise ValidationError("a sort_order needs the sort strategy, not binpack")
        return strategy, None
    if not sort_order:
        order = m.sort_order(m.default_sort_order_id)
        if order.is_unsorted:
            raise ValidationError(f"cannot sort {table.name}: the table is unsorted and no sort_order was given")
        return strategy, Ordering(sort=order, order_id=order.order_id)
    opts = Options(ACTION, options, ZORDER_OPTIONS)
    ordering = parse_ordering(m.current_schema, sort_order, m.sort_orders,
                              var_length_bytes=opts.integer("var-length-contribution", 8, 1),
                              max_output_bytes=opts.integer("max-output-size", 2 ** 31 - 1, 1))
    if ordering.zorder is None:
        return strategy, ordering
    identity = {f.source_id for f in m.default_spec.fields if isinstance(f.transform, IdentityTransform)}
    columns = tuple(c for c in ordering.zorder.columns if m.current_schema.find_field(c).field_id not in identity)
    if not columns:
        raise ValidationError(f"cannot z-order by {', '.join(ordering.zorder.columns)}: identity partition "
                              "columns are constant within a partition")
    z = ordering.zorder
    return "zorder", Ordering(zorder=ZOrder(columns, z.var_length_bytes, z.max_output_bytes))


def rewrite_data_files(table, commit: Commit, filter: str | None = None, strategy: str | None = None,
                       sort_order: str | None = None, options: dict[str, Any] | None = None,
                       dry_run: bool = False) -> DataFrame:
    """See :meth:`sparkberg.table.Table.rewrite_data_files` and the module docstring (``commit``: the table's
    committer, which a rewrite with partial progress calls as its groups finish)."""
    strategy, ordering = _ordering(table, strategy, sort_order, options)
    known = {"binpack": BINPACK_OPTIONS, "sort": SORT_OPTIONS, "zorder": ZORDER_OPTIONS}[strategy]
    opts = Options(f"{ACTION} ({strategy})", options, known)
    s = Settings.read(table, opts, shuffling=strategy != "binpack")
    spark = table.spark
    if table.metadata.current_snapshot is None:
        return local_dataframe(spark, [(0, 0, 0, 0, 0)], RESULT)
    rl = RowLevel(table, MAIN_REQUEST, filter)
    groups = plan_groups(rl, s)
    if dry_run:
        removed = {k for g in groups for t in g.tasks for k in deletion_vectors_of(t)}
        if s.remove_dangling:  # (less the file-scoped deletes the rewrite's commit removes, uncounted)
            seq = rl.m.current_snapshot.sequence_number if s.starting_sequence else rl.m.last_sequence_number + 1
            gone = {k for g in groups for t in g.tasks for k in file_scoped_deletes(t)}
            removed |= set(dangling_delete_files(table, groups, seq)) - gone
        return local_dataframe(spark, [(sum(len(g.tasks) for g in groups),
                                        sum(s.expected_files(g.size) for g in groups), sum(g.size for g in groups),
                                        0, len(removed))], RESULT)
    run = _Run(table, commit, rl, s, ordering)
    run.execute(groups)
    if s.remove_dangling:
        run.removed_deletes += remove_dangling_delete_files(table, commit)
    return local_dataframe(spark, [(run.rewritten, run.added, run.rewritten_bytes, run.failed,
                                    run.removed_deletes)], RESULT)


class _Run:
    """One rewrite: groups written concurrently, committed all at once or (partial progress) as they finish."""

    def __init__(self, table, commit: Commit, rl: RowLevel, s: Settings, ordering: Ordering | None):
        self.table, self.commit_change, self.rl, self.s, self.ordering = table, commit, rl, s, ordering
        self.start = rl.m  # what was planned: validations look for conflicts since this snapshot
        self.rewritten = self.added = self.rewritten_bytes = self.failed = self.removed_deletes = 0

    def write(self, group: Group, label: str = "") -> list:
        """The new data files of one group (a Spark job of its own, or written on the driver where it is small:
        :meth:`on_driver`; ``label``: which group, for its jobs' label)."""
        rl, s, m = self.rl, self.s, self.rl.m
        props = {**m.properties, TARGET_FILE_SIZE: str(s.target)}
        written = self.on_driver(group, props)
        if written is not None:
            return written
        rows = rl.read(group.tasks, [f.name for f in rl.schema.fields] + rl.lineage, None)
        files = s.expected_files(group.size)
        described = f"REWRITE {self.table.name} ({label}{len(group.tasks)} files, {group.size} bytes)"
        with job_description(rl.spark, described):
            if self.ordering is not None:
                return write_files(rl.spark, m, rows, extra_fields=rl.lineage_fields, properties=props,
                                   ordering=self.ordering, distribution="range", num_partitions=files * s.per_file,
                                   io=rl.table.io)
            if group.one_partition:  # one partition already: as many tasks as files, no shuffle
                return write_files(rl.spark, m, rows.coalesce(files), extra_fields=rl.lineage_fields,
                                   properties=props, distribution="none", io=rl.table.io)
            whole = unsplit_file_bytes(rl.spark) if group.files_apart else 0
            if group.files_apart and all(t["file_size_in_bytes"] <= whole for t in group.tasks):
                # each partition's rows are one file, which one task reads whole: written by the task that reads
                # them, its writer computing their partition (no key stage, no shuffle), a file a partition
                return write_files(rl.spark, m, rows, extra_fields=rl.lineage_fields, properties=props,
                                   distribution="none", io=rl.table.io)
            return write_files(rl.spark, m, rows, extra_fields=rl.lineage_fields, properties=props,
                               distribution="hash", io=rl.table.io)

    def on_driver(self, group: Group, props: dict[str, str]) -> list | None:
        """The new data files of a binpack group of at most ``tuning.DRIVER_REWRITE_BYTES`` on a table without a sort
        order, rewritten by the driver: its files read into Arrow with their deletes applied and their row lineage
        kept (:class:`~sparkberg.read.arrow.TaskReader`), written by the writer the executors run
        (:func:`~sparkberg.write.dataframe.write_on_driver`), with no Spark job: a scheduled job's fresh process
        pays several seconds for its first, and a Python stage's workers. None, for Spark to rewrite it, for
        larger or sorted groups, on Spark Connect (the client is no cluster's driver), and where the Arrow read
        cannot apply a delete (an equality delete on a nested column)."""
        rl, m = self.rl, self.rl.m
        if group.size > tuning.DRIVER_REWRITE_BYTES or self.ordering is not None or table_ordering(m) != UNSORTED or \
                not is_classic(rl.spark):
            return None
        reader = TaskReader(m, T.Schema(list(rl.schema.fields) + rl.lineage_fields), rl.table.io)
        try:
            reader.check(group.tasks)
        except NotSupportedError:
            return None
        identity = identity_values(m, rl.schema, group.tasks, rl.plan.layout)
        return write_on_driver(m, reader.read(group.tasks, delete_cache(rl.spark), identity), rl.lineage_fields,
                               props, io=rl.table.io)

    def commit(self, done: list[tuple[Group, list]]) -> None:
        """One ``replace`` snapshot of finished groups."""
        rl, m = self.rl, self.rl.m
        chosen = [t for g, _ in done for t in g.tasks]
        added = [f for _, files in done for f in files]
        # (the rewritten files with the delete files that concern them alone, as Java's rewrite removes them: it
        # counts their deletion vectors, not a v2 position delete file naming one file; a delete file naming files of
        # several stays until remove-dangling-deletes)
        removed = removal_of(chosen)
        counted = {k for t in chosen for k in deletion_vectors_of(t)}
        touched = {t["file_path"]: (t["spec_id"], rl.partition(t)) for t in chosen}
        check = NoNewDeletes(self.table.io, touched, MAIN_REQUEST, ignore_equality=self.s.starting_sequence)
        seq = self.start.current_snapshot.sequence_number if self.s.starting_sequence and m.format_version >= 2 \
            else None
        self.commit_change(SnapshotChange(self.start, self.table.io, Changes(
            "replace", added, [], removed, set(), check, data_sequence_number=seq), MAIN_REQUEST))
        self.rewritten += len(chosen)
        self.added += len(added)
        self.rewritten_bytes += sum(t["file_size_in_bytes"] for t in chosen)
        self.removed_deletes += len(counted)

    def execute(self, groups: list[Group]) -> None:
        """Write the groups, ``max-concurrent-file-group-rewrites`` at a time, and commit them."""
        if not groups:
            return
        s = self.s
        groups = self.together(groups)
        per_commit = -(-len(groups) // s.max_commits) if s.partial else len(groups)
        finished: list[tuple[Group, list]] = []  # written, not yet committed
        failed_commits = 0
        pool = ThreadPoolExecutor(s.concurrency, thread_name_prefix="sparkberg-rewrite")
        futures = {pool.submit(self.write, g, f"file group {i + 1} of {len(groups)}: "): g
                   for i, g in enumerate(groups)}
        consumed = set()
        try:
            for future in as_completed(futures):
                consumed.add(future)
                group = futures[future]
                try:
                    finished.append((group, future.result()))
                except Exception as e:
                    if not s.partial:
                        raise
                    log.warning("rewrite_data_files %s: a group of %d files failed: %s", self.table.name,
                                len(group.tasks), e)
                    self.failed += len(group.tasks)
                if s.partial and len(finished) >= per_commit:
                    batch, finished = finished, []
                    failed_commits += self._commit_partial(batch)
            batch, finished = finished, []
            if batch and s.partial:
                failed_commits += self._commit_partial(batch)
            elif batch:
                self.commit(batch)  # (it removes its files when it fails)
        except BaseException:
            for future in futures:
                future.cancel()
            pool.shutdown(wait=True)
            written = [f for _, files in finished for f in files]
            for future in futures:  # groups that finished after the failure
                if future not in consumed and not future.cancelled() and future.exception() is None:
                    written += future.result()
            for f in written:
                self.table.io.delete(f.file_path)
            raise
        finally:
            pool.shutdown(wait=True)
        if failed_commits > s.max_failed_commits:
            raise CommitFailedException(
                f"rewrite_data_files {self.table.name}: {failed_commits} of the partial-progress commits failed, more "
                f"than partial-progress.max-failed-commits ({s.max_failed_commits}); the others were committed")

    def together(self, groups: list[Group]) -> list[Group]:
        """``groups`` with those that a binpack rewrite without partial progress writes to one file each, each
        the only group of its partition, made one group: one Spark job reads their files and writes each
        partition's rows in one task (:meth:`write`, a group of several partitions: hashed to their partitions,
        or, when each partition is one file that no task splits, written by the task that reads that file), which
        is the file its own job would have written, without a job's fixed costs for each (a Python stage, the
        read's planning, a collect). Committed at once anyway, they need no job of their own to fail or succeed
        alone."""
        if self.s.partial or self.ordering is not None:
            return groups
        per_partition = defaultdict(int)
        for g in groups:
            per_partition[g.key] += 1
        small = [g for g in groups if g.one_partition and per_partition[g.key] == 1
                 and self.s.expected_files(g.size) == 1]
        if len(small) < 2:
            return groups
        chosen = {id(g) for g in small}
        return [Group([t for g in small for t in g.tasks], ("together",), False,
                      files_apart=all(len(g.tasks) == 1 for g in small))] + \
            [g for g in groups if id(g) not in chosen]

    def _commit_partial(self, batch: list[tuple[Group, list]]) -> int:
        """Commit a batch of groups; 1 when it conflicted (its files removed, the rewrite goes on), else 0."""
        try:
            self.commit(batch)
            return 0
        except CommitStateUnknownException:
            raise
        except (CommitFailedException, SparkbergError) as e:
            log.warning("rewrite_data_files %s: a partial-progress commit of %d groups failed: %s", self.table.name,
                        len(batch), e)
            return 1


def dangling_delete_files(table, rewritten: list[Group] = (), seq: int | None = None) -> list[tuple[str, int | None]]:
    """The live delete files no live data file can use, as Spark computes them over the ``entries`` metadata
    table: a DV or file-scoped position delete whose data file is gone; a position delete older than every data
    file of its partition (spec and partition, null-safe: Java's plain equality misses null partition values); an
    equality delete not newer than all of them (a global one, of an unpartitioned spec: than every data file of
    the table). Returns (path, DV offset) keys.

    ``rewritten``: groups a dry run would rewrite, as if they were: their files gone, and in each partition of
    one group, files of data sequence number ``seq`` (what the rewrite writes there; the partitions the rows of an
    older spec's group reach are not known before they are written, so only their files' going counts)."""
    if table.metadata.format_version < 2:
        return []  # (no delete files)
    spark = table.spark
    entries = table.metadata_table("entries").where("status < 2")
    files = entries.select(F.col("sequence_number").alias("seq"), "data_file.*")
    if "partition" not in files.columns:  # (a table that was never partitioned: its entries have no partition)
        files = files.withColumn("partition", F.lit(None).cast("int"))
    data = files.where("content = 0")
    if rewritten:
        gone = local_dataframe(spark, [(t["file_path"], g.one_partition) for g in rewritten for t in g.tasks],
                               "gone_path string, stays boolean")
        data = (data.join(F.broadcast(gone), F.col("file_path") == F.col("gone_path"), "left")
                .where(F.col("stays").isNull() | F.col("stays"))
                .withColumn("seq", F.when(F.col("stays"), F.lit(seq)).otherwise(F.col("seq")))
                .withColumn("file_path", F.when(F.col("gone_path").isNull(), F.col("file_path"))))
    by_partition = data.groupBy("spec_id", "partition").agg(F.min("seq").alias("min_seq"))
    overall = data.agg(F.min("seq").alias("all_min_seq"))
    live_paths = data.where(F.col("file_path").isNotNull()).select(F.col("file_path").alias("live_path"))
    unpartitioned = [s.spec_id for s in table.metadata.partition_specs if s.is_unpartitioned]
    d = files.where("content != 0").alias("d")
    joined = (d.join(by_partition.alias("p"), (F.col("d.spec_id") == F.col("p.spec_id"))
                     & F.col("d.partition").eqNullSafe(F.col("p.partition")), "left")
              .crossJoin(overall)
              .join(live_paths, F.col("d.referenced_data_file") == F.col("live_path"), "left"))
    is_global = (F.col("d.content") == 2) & F.col("d.spec_id").isin(unpartitioned)
    min_seq = F.when(is_global, F.col("all_min_seq")).otherwise(F.col("min_seq"))
    # (a delete that applies to no data file of its reach applies not even to the oldest one)
    dangling = (F.col("d.referenced_data_file").isNotNull() & F.col("live_path").isNull()) | min_seq.isNull() | \
        ~sequence_applies(F.col("d.content"), min_seq, F.col("d.seq"))
    found = joined.where(dangling).select("d.file_path", "d.content_offset").distinct().collect()
    return sorted((r[0], r[1]) for r in found)


def remove_dangling_delete_files(table, commit: Commit) -> int:
    """Remove :func:`dangling_delete_files` in one ``replace`` snapshot; skipped (0) when the table changed
    meanwhile, as Java skips it: a concurrent rewrite may have added files the deletes still apply to."""
    start = table.refresh().metadata
    if start.current_snapshot is None:
        return 0
    dangling = dangling_delete_files(table)
    if not dangling:
        return 0

    def unchanged(_start, current) -> None:
        if current.current_snapshot_id != start.current_snapshot_id:
            raise CommitFailedException("the table changed while dangling deletes were found")
    try:
        commit(SnapshotChange(start, table.io, Changes("replace", [], [], set(dangling), set(), unchanged),
                              MAIN_REQUEST))
    except CommitFailedException as e:
        log.warning("rewrite_data_files %s: dangling delete files left: %s", table.name, e)
        return 0
    return len(dangling)


__all__ = ["rewrite_data_files", "plan_groups", "dangling_delete_files", "remove_dangling_delete_files", "Settings",
           "RESULT"]
