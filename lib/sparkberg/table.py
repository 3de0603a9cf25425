"""The public API: catalogs and tables.

    cat = sparkberg.catalog(spark, "file:///data/warehouse")
    t = cat.create_table("db.events", "id bigint NOT NULL, ts timestamp, v string",
                         partition_by=["day(ts)", "bucket(16, id)"], properties={"format-version": "2"})
    t = cat.load_table("db.events"); t.metadata.format_version
    t = sparkberg.load_table(spark, "/path/to/table")   # read-only, any Iceberg table

A :class:`Table` holds one metadata version; metadata changes are commits of pure updates
(:mod:`sparkberg.format.updates`) that retry on conflict per ``commit.retry.*``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Protocol, Sequence

from sparkberg.catalog.base import CatalogBackend, Identifier, parse_identifier, read_metadata
from sparkberg.catalog.config import DEFAULT_NAME as DEFAULT_CATALOG_NAME, open_backend
from sparkberg.catalog.filesystem import FileSystemCatalog
from sparkberg.commit.pending import Change, MetadataChange, PendingCommit
from sparkberg.errors import (
    AlreadyCommittedError, CommitStateUnknownException, InvalidMetadataError, MissingFileError, NoSuchTableError,
    NotSupportedError, SparkbergError, ValidationError, ViewAlreadyExistsError,
)
from sparkberg.io.fileio import FileIO, file_io_for, normalize_location, to_local_path
from sparkberg.evolution import EvolutionMixin, SchemaMerge
from sparkberg.refs import RefsMixin
from sparkberg.spark.session import job_description
from sparkberg.spark.settings import session_conf, session_time_zone
from sparkberg.format import updates as U
from sparkberg.format.metadata import DEFAULT_FORMAT_VERSION, TableMetadata
from sparkberg.format.partitioning import PartitionSpec, SortOrder, build_partition_spec, build_sort_order
from sparkberg.format.properties import ACCEPT_ANY_SCHEMA, boolean
from sparkberg.format.snapshots import Snapshot
from sparkberg.format import types as T
from sparkberg.format.types import Schema
from sparkberg.format import views as views_format
from sparkberg.spark.types import schema_from, to_spark_schema
from sparkberg import state

if TYPE_CHECKING:  # (names for annotations alone: importing them would import the commit machinery)
    from sparkberg.commit.transaction import Transaction  # (annotations only)
    from sparkberg.expressions.sql import Filter  # (annotations only)
    from sparkberg.operations.changes import Changes  # (annotations only)
    from sparkberg.operations.request import CommitRequest, Staging  # (annotations only)

_LOG = logging.getLogger(__name__)


class Table(RefsMixin, EvolutionMixin):
    """An Iceberg table at one metadata version. ``metadata`` is read-only; commits replace it."""

    def __init__(self, identifier: Identifier | None, metadata: TableMetadata, metadata_location: str,
                 io: FileIO, catalog: "Catalog | None" = None, spark: Any = None,
                 transaction: Transaction | None = None):
        self.identifier = identifier
        self._metadata = metadata
        self.metadata_location = metadata_location
        self.io = io
        self.catalog = catalog
        self.spark = spark
        self._transaction = transaction  # (inside a transaction's block: where its commits are staged)

    def __repr__(self) -> str:
        name = str(self.identifier) if self.identifier else self.metadata_location
        staged = "" if self._transaction is None else ", in a transaction"
        return f"Table({name}, format-version={self._metadata.format_version}{staged})"

    @property
    def metadata(self) -> TableMetadata:
        """The table metadata (format version, schemas, specs, snapshots, refs, properties, location)."""
        return self._metadata

    @property
    def name(self) -> str:
        """The table's identifier (``db.events``), or its location for a table loaded by path."""
        return str(self.identifier) if self.identifier else self.location

    @property
    def location(self) -> str:
        """The table's base location, where its data and metadata directories are."""
        return self._metadata.location

    @property
    def format_version(self) -> int:
        """The Iceberg format version: 1, 2 or 3."""
        return self._metadata.format_version

    @property
    def properties(self) -> dict[str, str]:
        """A copy of the table's properties (change them with :meth:`set_properties`)."""
        return dict(self._metadata.properties)

    def schema(self, schema_id: int | None = None) -> Schema:
        """The current schema, or the schema with that id."""
        return self._metadata.schema(schema_id)

    def spec(self, spec_id: int | None = None) -> PartitionSpec:
        """The default partition spec, or the spec with that id."""
        return self._metadata.spec(spec_id)

    def sort_order(self) -> SortOrder:
        """The default sort order that writes order each file by (unsorted when it has no fields)."""
        return self._metadata.sort_order()

    def current_snapshot(self) -> Snapshot | None:
        """The head of ``main``, or None for a table with no data yet."""
        return self._metadata.current_snapshot

    def snapshots(self) -> list[Snapshot]:
        """Every snapshot the metadata keeps, in the order they were added (with ``snapshot_id``,
        ``parent_snapshot_id``, ``timestamp_ms``, ``operation``, ``summary``)."""
        return list(self._metadata.snapshots)

    def spark_schema(self):
        """The current schema as a Spark StructType."""
        return to_spark_schema(self.schema())

    def refresh(self) -> "Table":
        """Reload the newest committed metadata version (in a transaction's block: the table as the transaction
        has changed it, which nothing else changes until it commits)."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.commit import committer
        if self._transaction is not None:
            return self
        if self.catalog is None:
            t = load_table(self.spark, self.metadata_location.rsplit("/metadata/", 1)[0])
            self._metadata, self.metadata_location = t._metadata, t.metadata_location
            return self
        _, loc, meta = self.catalog.load_table_metadata(self.identifier)
        committer.same_table(self._metadata, meta, self.name, loc)
        self._metadata, self.metadata_location = meta, loc
        # (the table's FileIO as its properties, and what the catalog vends for it now, configure it: a reload
        # renews vended credentials)
        self.io = self.catalog.table_io(self.identifier, meta)
        return self

    # --- reads --------------------------------------------------------------------------------------
    def resolve_snapshot(self, snapshot_id: int | None = None, as_of_timestamp_ms: int | None = None,
                         ref: str | None = None) -> tuple[Snapshot | None, Schema]:
        """The snapshot a read sees and the schema it reads with: the snapshot's own schema for time travel
        by id, timestamp or tag; the table schema for the current state and for branches (as Iceberg's Spark
        integration does). Without any of them, the WAP branch when WAP is on and it exists (``spark.wap.branch``),
        else main's head."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.operations.target import read_branch
        m = self._metadata
        if sum(x is not None for x in (snapshot_id, as_of_timestamp_ms, ref)) > 1:
            raise ValidationError("give at most one of snapshot_id, as_of_timestamp_ms and ref")
        if snapshot_id is None and as_of_timestamp_ms is None and ref is None:
            ref = read_branch(self.spark, m)
        if snapshot_id is not None:
            snap = m.snapshot_by_id(int(snapshot_id))
            if snap is None:
                raise ValidationError(f"snapshot {snapshot_id} does not exist in table {self.name}")
            return snap, self._snapshot_schema(snap)
        if as_of_timestamp_ms is not None:
            snap = m.snapshot_as_of(int(as_of_timestamp_ms))
            if snap is None:
                raise ValidationError(f"table {self.name} has no snapshot at or before {as_of_timestamp_ms} ms")
            return snap, self._snapshot_schema(snap)
        if ref is not None:
            r = m.refs.get(ref)
            if r is None:
                raise ValidationError(f"table {self.name} has no branch or tag {ref!r}; refs are {sorted(m.refs)}")
            snap = m.snapshot_by_id(r.snapshot_id)
            return snap, (m.current_schema if r.type == "branch" else self._snapshot_schema(snap))
        return m.current_snapshot, m.current_schema

    def _snapshot_schema(self, snap: Snapshot) -> Schema:
        if snap.schema_id is None:
            return self._metadata.current_schema
        try:
            return self._metadata.schema(snap.schema_id)
        except ValidationError:
            return self._metadata.current_schema

    @contextlib.contextmanager
    def _running(self, label: str | None, snapshot: Snapshot | None = None, suffix: str = "") -> Iterator[None]:
        """The block runs an operation of this table: its Spark jobs carry ``label`` (``DELETE db.t``; None for
        a block that starts none of its own: labelling costs three calls into the JVM), errors raised in Spark's
        Python workers are sparkberg's own (:mod:`sparkberg.spark.executors`), and a file of ``snapshot`` (the
        current one by default) that is gone is named with what references it."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.planning.entries import referenced_by
        from sparkberg.spark.executors import executor_errors  # (put off, as above)
        described = job_description(self.spark, f"{label} {self.name}{suffix}") if label else contextlib.nullcontext()
        with described, executor_errors(self.spark):
            try:
                yield
            except MissingFileError as e:
                snap = snapshot or self.current_snapshot()
                if e.path is None or snap is None or " referenced by " in str(e):
                    raise
                raise MissingFileError(f"{e}, referenced by {referenced_by(self.io, snap, e.path)} of table "
                                       f"{self.name}", e.path) from None

    def _bound_filter(self, filter: Any, schema: Schema):
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.expressions.predicates import TRUE, bind
        from sparkberg.expressions.sql import Filter, translate_filter  # (put off, as above)
        if filter is None:
            return TRUE
        if not isinstance(filter, (str, Filter)):
            return TRUE  # a Column filter is applied exactly but prunes nothing
        return bind(translate_filter(filter, schema, lambda: session_time_zone(self.spark)), schema)

    def plan_files(self, filter: Any = None, snapshot_id: int | None = None, ref: str | None = None,
                   as_of_timestamp_ms: int | None = None, planning: str | None = None):
        """The data files a scan reads, as a DataFrame, one row per file (in manifest order):

        ``file_path``, ``file_format``, ``spec_id``, ``partition`` (struct of every spec's partition fields,
        Iceberg's Spark types), ``record_count``, ``file_size_in_bytes``, ``data_sequence_number``,
        ``first_row_id`` (v3; null before row lineage), and ``deletes``: array<struct<``file_path``,
        ``content`` (1 position, 2 equality), ``file_format``, ``equality_ids``, ``referenced_data_file``,
        ``content_offset``, ``content_size_in_bytes``, ``record_count``>> of the delete files that apply (sorted).

        ``filter`` (a Spark SQL expression) prunes files by partition and metrics; files it cannot rule out
        are kept, so it may list files with no matching row. ``planning`` is "auto" (small tables are planned on
        the driver, large ones on the executors), "local" or "distributed", by default the table property
        ``read.data-planning-mode`` (else "auto"; see :mod:`sparkberg.spark.tuning`); the result is the same.
        """
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.planning.scan import plan
        snap, schema = self.resolve_snapshot(snapshot_id, as_of_timestamp_ms, ref)
        # (no label: a plan made here starts no Spark job but a delete planning one, which has its own, and a
        # distributed plan's jobs run when its DataFrame is read)
        with self._running(None, snap):
            return plan(self.spark, self._metadata, self.io, snap, self._bound_filter(filter, schema), planning,
                        self.name).files()

    def count(self, filter: str | None = None, snapshot_id: int | None = None, ref: str | None = None) -> int:
        """The number of rows (deletes applied) that match ``filter`` (a Spark SQL expression), exactly: from the
        manifests alone where they hold the answer (record counts less deletion vectors' cardinalities and
        file-scoped position deletes', the filter decided by partition values), else by reading the rows
        (:mod:`sparkberg.planning.counts`). The result is the same either way; a log line at INFO says which."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.expressions.sql import Filter
        snap, schema = self.resolve_snapshot(snapshot_id, None, ref)
        if snap is None:
            return 0
        if filter is not None and not isinstance(filter, (str, Filter)):
            raise ValidationError(f"count's filter is a Spark SQL expression (a string), got {type(filter).__name__}")
        if filter is not None:
            filter = Filter.of(filter)  # (parsed once: the plan's pruning and the exact count's test read it)
        with self._running("COUNT", snap):
            answer = self._from_manifests([("count", None)], filter, snap, schema)
            if answer.values is not None:
                _LOG.info("count of %s at snapshot %s: from its manifests", self.name, snap.snapshot_id)
                return answer.values[0]
            _LOG.info("count of %s at snapshot %s: by reading its rows (%s)", self.name, snap.snapshot_id,
                      answer.why_not)
            # (the rows of the plan just made, as to_df would read them; the reader imported only for them)
            from sparkberg.read.reader import read_tasks
            return read_tasks(self.spark, self._metadata, schema, answer.plan.rows(), answer.plan.layout, None,
                              filter, self.io).count()

    def aggregates_from_manifests(self, aggregates: Sequence[tuple[str, str | None]], filter: str | None = None,
                                  snapshot_id: int | None = None, ref: str | None = None) -> list[Any] | None:
        """The values of ``aggregates`` over the rows (deletes applied) matching ``filter`` of the current snapshot,
        or of ``snapshot_id`` or ``ref``'s, from the manifests alone, or None where they cannot give them exactly
        (then only the rows can; a log line at INFO says which and why). Each is ``("count", None)`` (the rows),
        ``("min", column)`` or ``("max", column)`` (a top-level column's least or greatest value, None when it has
        none, as Spark's ``min`` and ``max``): counts as :meth:`count` gives them; minimums and maximums from the
        files' bounds where no delete applies to the files and the bounds are the values
        (:mod:`sparkberg.planning.counts`). What ``sparkberg.sql`` answers ``SELECT count(*), min(c), max(c) FROM t
        [WHERE ...]`` with."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.expressions.sql import Filter
        snap, schema = self.resolve_snapshot(snapshot_id, None, ref)
        if snap is None:
            return [0 if kind == "count" else None for kind, _ in aggregates]
        with self._running("AGGREGATE", snap):
            answer = self._from_manifests(aggregates, Filter.of(filter) if filter is not None else None, snap,
                                          schema)
        if answer.values is None:
            _LOG.info("%s of %s at snapshot %s: by reading its rows (%s)", _aggregates_text(aggregates),
                      self.name, snap.snapshot_id, answer.why_not)
        else:
            _LOG.info("%s of %s at snapshot %s: from its manifests", _aggregates_text(aggregates), self.name,
                      snap.snapshot_id)
        return answer.values

    def explain_aggregates(self, aggregates: Sequence[tuple[str, str | None]], filter: str | None = None,
                           snapshot_id: int | None = None, ref: str | None = None) -> str:
        """How :meth:`aggregates_from_manifests` (and :meth:`count`) answer (what ``EXPLAIN`` shows through
        ``sparkberg.sql``): from the manifests, reading no data file, or by reading the rows, and why."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.expressions.sql import Filter
        what = _aggregates_text(aggregates)
        snap, schema = self.resolve_snapshot(snapshot_id, None, ref)
        if snap is None:
            return f"{what} of {self.name}: the table has no snapshot (no file is read)"
        answer = self._from_manifests(aggregates, Filter.of(filter) if filter is not None else None, snap, schema)
        files = answer.plan.arrow().num_rows
        if answer.values is not None:
            return (f"{what} of {self.name} at snapshot {snap.snapshot_id}: from its manifests ({files} data "
                    f"files' {answer.used}{', the filter decided by partition values' if filter else ''}); no data "
                    "file is read")
        return (f"{what} of {self.name} at snapshot {snap.snapshot_id}: by reading the rows of {files} data files "
                f"({answer.why_not})")

    def explain_count(self, filter: str | None = None, snapshot_id: int | None = None,
                      ref: str | None = None) -> str:
        """:meth:`explain_aggregates` of a count: how :meth:`count` answers."""
        return self.explain_aggregates([("count", None)], filter, snapshot_id, ref)

    def _from_manifests(self, aggregates: Sequence[tuple[str, str | None]], filter: Filter | None,
                        snap: Snapshot, schema: Schema) -> "_ManifestAnswer":
        """``aggregates`` (as :meth:`aggregates_from_manifests`) of the rows at ``snap`` matching ``filter`` from
        the manifests alone, with the plan made for them and, when they cannot give the values, why not."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.expressions.predicates import TRUE, bind
        from sparkberg.expressions.sql import translate_filter  # (put off, as above)
        from sparkberg.format.values import to_python  # (put off, as above)
        from sparkberg.planning.counts import (  # (put off, as above)
            any_deletes, exact_bounds, exact_count, metrics_rows,
        )
        from sparkberg.read.columns import promoted_fields  # (put off, as above)
        from sparkberg.planning.scan import plan, planned_metrics  # (put off, as above)
        from sparkberg.write.writer import metrics_mode  # (put off, as above)
        bound = self._bound_filter(filter, schema)
        p = plan(self.spark, self._metadata, self.io, snap, bound, None, self.name)
        must = TRUE if filter is None else bind(translate_filter(
            filter, schema, lambda: session_time_zone(self.spark), strengthen=True), schema)
        tasks = p.arrow()
        count = exact_count(tasks, p.layout, self._metadata, schema, must)
        if count is None:
            return _ManifestAnswer(p, why_not="equality deletes, position deletes of several files, or a filter "
                                   "the partition values cannot decide")
        used = "record counts less their deletion vectors' and file-scoped position deletes' cardinalities"
        if all(kind == "count" for kind, _ in aggregates):
            return _ManifestAnswer(p, [count] * len(aggregates), used=used)
        if any_deletes(tasks):
            return _ManifestAnswer(p, why_not="deletes apply to the files, and a deleted row may hold a bound")
        files = planned_metrics(self.spark, self._metadata, self.io, snap, bound)
        if files.num_rows != tasks.num_rows:  # (the same pruning as the plan's: never expected)
            return _ManifestAnswer(p, why_not="the files' metrics differ from the plan's files")
        rows, promoted = metrics_rows(files), promoted_fields(self._metadata, schema)
        bounds_of: dict[int, tuple[Any, Any] | None] = {}  # (a column's min and max come from one pass)
        values: list[Any] = []
        for kind, column in aggregates:
            if kind == "count":
                values.append(count)
                continue
            field = next((f for f in schema.fields if f.name.lower() == (column or "").lower()), None)
            if field is None or field.field_id in promoted:
                return _ManifestAnswer(p, why_not=f"column {column!r} is not one of the table's with one type")
            if field.field_id not in bounds_of:
                bounds_of[field.field_id] = exact_bounds(
                    rows, field.field_id, field.field_type,
                    metrics_mode(self._metadata.properties, field.name)[0] == "full")
            bounds = bounds_of[field.field_id]
            if bounds is None:
                return _ManifestAnswer(p, why_not=f"the bounds of column {field.name!r} are not its values "
                                       "(NaNs, zeros, truncation, files without bounds, or its type)")
            values.append(to_python(field.field_type, bounds[0 if kind == "min" else 1]))
        return _ManifestAnswer(p, values, used="record counts and column bounds")

    def to_df(self, filter: Any = None, snapshot_id: int | None = None, as_of_timestamp_ms: int | None = None,
              ref: str | None = None, columns: Sequence[str] | None = None, planning: str | None = None,
              start_snapshot_id: int | None = None, end_snapshot_id: int | None = None):
        """The table's rows as a Spark DataFrame, deletes applied.

        ``filter`` (Spark SQL expression or Column) is applied exactly to the rows and, as far as it translates
        to Iceberg predicates, prunes files. ``snapshot_id``, ``as_of_timestamp_ms`` and ``ref`` (branch or tag)
        time travel. ``columns`` may name metadata columns: ``_file``, ``_pos``, ``_spec_id``, ``_partition``,
        and on v3 tables ``_row_id`` and ``_last_updated_sequence_number``. ``planning``: as for
        :meth:`plan_files`.

        ``start_snapshot_id`` (exclusive) and ``end_snapshot_id`` (inclusive; default the current snapshot) make
        it an incremental read, as Iceberg Java's read options of the same names: the rows the ``append``
        snapshots of that range of the end's ancestry added, in the table's schema, as written (rows a later
        delete removed included: other operations are not appends). A start that is not an ancestor of the end,
        or a range through an expired snapshot, is a named error.
        """
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.planning.scan import plan
        from sparkberg.read.changes import read_appended  # (put off, as above)
        from sparkberg.read.reader import read_tasks  # (put off, as above)
        if start_snapshot_id is not None or end_snapshot_id is not None:
            if start_snapshot_id is None:
                raise ValidationError("an incremental read needs start_snapshot_id (end_snapshot_id alone is not a "
                                      "range)")
            if snapshot_id is not None or as_of_timestamp_ms is not None or ref is not None:
                raise ValidationError("an incremental read (start_snapshot_id) cannot also time travel (snapshot_id, "
                                      "as_of_timestamp_ms, ref)")
            with self._running("INCREMENTAL-READ"):
                return read_appended(self.spark, self._metadata, self.io, start_snapshot_id, end_snapshot_id,
                                     self._bound_filter(filter, self._metadata.current_schema), columns, filter)
        snap, schema = self.resolve_snapshot(snapshot_id, as_of_timestamp_ms, ref)
        with self._running("DATA-PLANNING", snap):
            p = plan(self.spark, self._metadata, self.io, snap, self._bound_filter(filter, schema), planning, self.name)
            tasks = p.rows()
            return read_tasks(self.spark, self._metadata, schema, tasks, p.layout, columns, filter, self.io)

    def changes(self, start_snapshot_id: int | None = None, end_snapshot_id: int | None = None, *,
                start_timestamp_ms: int | None = None, end_timestamp_ms: int | None = None,
                net_changes: bool = False, compute_updates: bool | None = None,
                identifier_columns: Sequence[str] | None = None, filter: Any = None,
                columns: Sequence[str] | None = None):
        """The changelog of the snapshots after ``start_snapshot_id`` (exclusive; default: from the first) up to
        ``end_snapshot_id`` (inclusive; default: the current snapshot), or of those committed from
        ``start_timestamp_ms`` to ``end_timestamp_ms``, as a DataFrame of the table's columns (``columns``: some of
        them, or metadata columns such as ``_row_id``) followed by ``_change_type`` (``INSERT``, ``DELETE``,
        ``UPDATE_BEFORE``, ``UPDATE_AFTER``), ``_change_ordinal`` (the snapshot's place in the range, from 0) and
        ``_commit_snapshot_id``: the semantics of Iceberg Java's ``create_changelog_view``.

        Rows a copy-on-write rewrite carries over unchanged are not changes; ``replace`` snapshots (compactions)
        are none. ``net_changes``: only what changed across the whole range. ``compute_updates`` (by default when
        ``identifier_columns`` are given): a ``DELETE`` and an ``INSERT`` of one key in one snapshot become
        ``UPDATE_BEFORE`` and ``UPDATE_AFTER``, the key being ``identifier_columns``, else the table's identifier
        fields, else on v3 tables ``_row_id``. Unlike Java's, ranges with delete files are read exactly: a row a
        merge-on-read DELETE, UPDATE or MERGE removed is a ``DELETE`` of the snapshot that removed it.
        ``filter`` (Spark SQL or a Column) is applied to the rows and prunes the files read."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.read.changes import changelog
        with self._running("CHANGELOG"):
            return changelog(self.spark, self._metadata, self.io, start_snapshot_id, end_snapshot_id,
                             start_timestamp_ms, end_timestamp_ms, net_changes, compute_updates, identifier_columns,
                             self._bound_filter(filter, self._metadata.current_schema), filter, columns)

    def create_changelog_view(self, view: str | None = None, **options: Any) -> str:
        """:meth:`changes` (with ``options``) as a temporary view named ``view`` (default, as Java's procedure:
        ``<table name>_changes``); returns the view's name."""
        name = view or f"{self.identifier.name if self.identifier is not None else self.name.split('.')[-1]}_changes"
        self.changes(**options).createOrReplaceTempView(name)
        return name

    # --- writes -------------------------------------------------------------------------------------
    # Every write takes ``snapshot_properties`` (recorded in the summary of the snapshot it commits, as Iceberg
    # Spark's ``snapshot-property.*`` options: a job's batch id), ``branch`` (commit to that existing branch
    # instead of main, planned from its head) and ``wap_id`` (stage the snapshot for write-audit-publish; needs
    # ``write.wap.enabled``). With ``write.wap.enabled``, the ``spark.wap.id`` and ``spark.wap.branch`` session
    # confs apply as in Iceberg's Spark integration (:mod:`sparkberg.operations.target`). Those that take data take
    # ``merge_schema``: the data's columns the table lacks are added (``union_by_name``: nested ones too, narrower
    # types widened) in the write's own commit; by default, when the table property
    # ``write.spark.accept-any-schema`` or the session conf ``spark.sql.iceberg.merge-schema`` is true.
    # ``append``, ``overwrite`` and ``dynamic_overwrite`` take ``distribution_mode`` (``none``, ``hash`` or ``range``:
    # how the rows reach the write tasks, Iceberg Spark's write option ``distribution-mode``, over the session conf
    # and the table's ``write.distribution-mode``; :func:`~sparkberg.write.dataframe.distribution_mode`).
    # ``append``, ``overwrite``, ``dynamic_overwrite``, ``upsert`` and ``merge`` take ``idempotency=(app_id,
    # version)``: the write commits only if no snapshot of its target's ancestry records ``app_id`` with a version
    # as large or larger (:mod:`sparkberg.operations.request`), else writes nothing; it then returns a
    # :class:`WriteOutcome` that says which.
    def _write(self, label: str, snapshot_properties: dict[str, str] | None, branch: str | None,
               wap_id: str | None, data: Any = None, merge_schema: bool | None = None,
               idempotency: tuple[str, int] | None = None) -> "_Write":
        """One write, checked now: its :class:`~sparkberg.operations.request.CommitRequest` (target, the snapshot
        properties of the call and of the user's enclosing ``snapshot_properties`` blocks, the transaction's
        staging, the idempotency key) and its merged schema."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.operations.properties import current_snapshot_properties
        from sparkberg.operations.request import CommitRequest, Idempotency  # (put off, as above)
        from sparkberg.operations.target import resolve  # (put off, as above)
        from sparkberg.write.dataframe import MERGE_SCHEMA_CONF  # (put off, as above)
        self._writable()
        target = resolve(self.spark, self._metadata, branch, wap_id)
        request = CommitRequest(target, {**current_snapshot_properties(), **(snapshot_properties or {})},
                                self._staging(), Idempotency.of(idempotency))
        if merge_schema is None:
            merge_schema = boolean(self._metadata.properties, ACCEPT_ANY_SCHEMA) or \
                (session_conf(self.spark, MERGE_SCHEMA_CONF) or "").strip().lower() == "true"
        merged = self._merged(data.schema) if merge_schema and data is not None else None
        return _Write(self, label, request, merged)

    def _staging(self) -> Staging | None:
        """Where a write's files wait for a later commit: the transaction's, in its block; else none (a write
        commits at once)."""
        if self._transaction is None:
            return None
        self._transaction.check_open()
        return self._transaction.staging

    def append(self, df, snapshot_properties: dict[str, str] | None = None, branch: str | None = None,
               wap_id: str | None = None, merge_schema: bool | None = None,
               idempotency: tuple[str, int] | None = None,
               distribution_mode: str | None = None) -> "Table | WriteOutcome":
        """Append the rows of a DataFrame as one atomic snapshot. Columns are matched by name and must fit
        the table schema (missing optional columns are null); nothing is committed on error."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.operations.changes import Changes
        from sparkberg.write.dataframe import write_files  # (put off, as above)
        write = self._write("WRITE", snapshot_properties, branch, wap_id, df, merge_schema, idempotency)
        if write.wanted:
            with write.running():
                files = write_files(self.spark, write.view.metadata, df, distribution=distribution_mode, io=self.io)
                write.commit(Changes("append", added_data=files) if files else None)
        return write.outcome()

    def delete(self, filter: Any, snapshot_properties: dict[str, str] | None = None, branch: str | None = None,
               wap_id: str | None = None) -> "Table":
        """Delete the rows matching a filter, in one commit: copy-on-write or merge-on-read per the table property
        ``write.delete.mode`` (position delete files on v2, deletion vectors on v3). ``filter`` is Spark SQL, whose
        conjuncts prune the files read, ``col IN (SELECT ...)`` ones by the subquery's values (a semi-join: the
        subquery runs once more for that), or a Column, applied exactly but pruning nothing."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.operations import rowlevel
        write = self._write("DELETE", snapshot_properties, branch, wap_id)
        if write.wanted:
            with write.running():
                write.commit(rowlevel.delete_rows(write.view, filter, write.request))
        return write.outcome()

    def overwrite(self, df, filter: str | None = None, snapshot_properties: dict[str, str] | None = None,
                  branch: str | None = None, wap_id: str | None = None, merge_schema: bool | None = None,
                  idempotency: tuple[str, int] | None = None,
                  distribution_mode: str | None = None) -> "Table | WriteOutcome":
        """Replace the rows matching ``filter`` (a Spark SQL expression; all rows when None) with ``df``, in one
        commit. Files whose rows all match are dropped; others are rewritten without the matching rows."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.operations import rowlevel
        write = self._write("OVERWRITE", snapshot_properties, branch, wap_id, df, merge_schema, idempotency)
        if write.wanted:
            with write.running():
                write.commit(rowlevel.overwrite(write.view, df, filter, write.request, distribution_mode))
        return write.outcome()

    def dynamic_overwrite(self, df, snapshot_properties: dict[str, str] | None = None, branch: str | None = None,
                          wap_id: str | None = None, merge_schema: bool | None = None,
                          idempotency: tuple[str, int] | None = None,
                          distribution_mode: str | None = None) -> "Table | WriteOutcome":
        """Replace each partition (of the default spec) that ``df`` has rows for with those rows, in one commit."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.operations import rowlevel
        write = self._write("OVERWRITE", snapshot_properties, branch, wap_id, df, merge_schema, idempotency)
        if write.wanted:
            with write.running():
                write.commit(rowlevel.dynamic_overwrite(write.view, df, write.request, distribution_mode))
        return write.outcome()

    def update(self, set: dict[str, str], filter: Any = None,
               snapshot_properties: dict[str, str] | None = None, branch: str | None = None,
               wap_id: str | None = None) -> "Table":
        """Set columns to Spark SQL expressions (``{"v": "v + 1"}``) on the rows matching ``filter`` (Spark SQL or
        a Column, as for :meth:`delete`), in one commit: copy-on-write or merge-on-read per ``write.update.mode``;
        v3 rows keep their ``_row_id``."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.operations import rowlevel
        if not set:
            raise ValidationError("update needs at least one column to set")
        write = self._write("UPDATE", snapshot_properties, branch, wap_id)
        if write.wanted:
            with write.running():
                write.commit(rowlevel.update(write.view, dict(set), filter, write.request))
        return write.outcome()

    def delete_by_keys(self, df, key_columns, snapshot_properties: dict[str, str] | None = None,
                       branch: str | None = None, wap_id: str | None = None) -> "Table":
        """Delete the rows whose ``key_columns`` equal those of a row of ``df`` (null-safe), without reading
        the table: equality delete files, one commit (streaming-style upserts pair this with ``append``)."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.operations import equality
        write = self._write("DELETE", snapshot_properties, branch, wap_id)
        if write.wanted:
            with write.running():
                write.commit(equality.delete_by_keys(write.view, df, key_columns))
        return write.outcome()

    def upsert(self, df, key_columns: str | Sequence[str], mode: str = "equality-deletes",
               snapshot_properties: dict[str, str] | None = None, branch: str | None = None,
               wap_id: str | None = None, idempotency: tuple[str, int] | None = None) -> "Table | WriteOutcome":
        """Insert the rows of ``df``, replacing the table's rows with the same ``key_columns``, in one commit.
        ``mode="equality-deletes"`` writes equality deletes of ``df``'s keys next to its rows and never reads the
        table (as streaming writers upsert; keys must be unique in ``df``: two rows of one key both stay);
        ``mode="merge"`` is a keyed MERGE (matched rows updated, others inserted; ``df``'s keys must be unique)."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.operations import equality
        keys = [key_columns] if isinstance(key_columns, str) else list(key_columns)
        if mode == "merge":
            on = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys)
            outcome = self.merge(df, on, snapshot_properties=snapshot_properties, branch=branch, wap_id=wap_id,
                                 idempotency=idempotency).when_matched_update_all().when_not_matched_insert_all() \
                .execute()
            return self if outcome is None else outcome
        if mode != "equality-deletes":
            raise ValidationError(f"upsert mode must be 'equality-deletes' or 'merge', got {mode!r}")
        write = self._write("UPSERT", snapshot_properties, branch, wap_id, idempotency=idempotency)
        if write.wanted:
            with write.running():
                write.commit(equality.upsert(write.view, df, keys))
        return write.outcome()

    def merge(self, source, condition, target_alias: str = "t", source_alias: str = "s",
              snapshot_properties: dict[str, str] | None = None, branch: str | None = None,
              wap_id: str | None = None, merge_schema: bool | None = None,
              idempotency: tuple[str, int] | None = None):
        """A MERGE builder: ``t.merge(src, "t.id = s.id").when_matched_update({"v": "s.v"})
        .when_matched_delete("s.deleted").when_not_matched_insert_all().execute()``. With ``merge_schema`` the
        source's columns the table lacks are added first (in the merge's commit), so ``*_all`` clauses fill them.
        With ``idempotency``, ``execute()`` returns the :class:`WriteOutcome`."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.operations import merge
        return merge.MergeBuilder(self, self._write("MERGE", snapshot_properties, branch, wap_id, source, merge_schema,
                                                    idempotency), source, condition, target_alias, source_alias)

    def add_files(self, files: Any = None, check_duplicate_files: bool = True,
                  snapshot_properties: dict[str, str] | None = None, branch: str | None = None, *,
                  source_table: str | None = None, partition_filter: dict[str, Any] | None = None) -> "Table":
        """Append existing Parquet files without rewriting them, in one commit: metrics from their footers
        (:mod:`sparkberg.operations.imports`); a file already in the table is an error unless
        ``check_duplicate_files`` is False. ``files``: paths of files or directories, or a DataFrame of paths,
        partition values from Hive-style directories or from the data; or ``source_table``: a plain Parquet table
        of this table's catalog (a Hive Metastore's or Glue's), its files with the partition values the metastore
        keeps, only the partitions matching ``partition_filter`` (``{"region": "eu"}``)
        (:mod:`sparkberg.maintenance.migrate`)."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.maintenance import migrate
        if (files is None) == (source_table is None):
            raise ValidationError("add_files takes files or a source_table (one of them)")
        partitions = None
        if source_table is not None:
            backend = migrate.metastore(self.catalog)
            source = backend.hive_table(source_table)
            migrate.check_partitioning(source, self.spec(), self.name)
            partitions = migrate.source_files(backend, source, partition_filter)
            files = list(partitions)
        elif partition_filter:
            raise ValidationError("add_files: partition_filter selects partitions of a source_table")
        return self._add_files(files, check_duplicate_files, partitions, snapshot_properties, branch)

    def _add_files(self, files: Any, check_duplicate_files: bool, partitions: dict[str, Any] | None,
                   snapshot_properties: dict[str, str] | None = None, branch: str | None = None) -> "Table":
        """:meth:`add_files` of ``files`` (``partitions``: each file's metastore partition values, or None)."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.operations import imports
        write = self._write("ADD FILES", snapshot_properties, branch, None)
        if write.wanted:
            with write.running():
                write.commit(imports.add_files(write.view, files, check_duplicate_files, partitions))
        return write.outcome()

    # --- streams ------------------------------------------------------------------------------------
    def write_stream(self, df, checkpoint_location: str, *, trigger: dict[str, Any] | None = None,
                     output_mode: str = "append", query_name: str | None = None, branch: str | None = None,
                     snapshot_properties: dict[str, str] | None = None):
        """Start a Structured Streaming query that writes the streaming DataFrame ``df`` into the table and return
        its ``StreamingQuery`` (:mod:`sparkberg.sql.streaming`). Each micro-batch is one commit, exactly once, also
        when the query is restarted from ``checkpoint_location`` after a crash at any moment: an append
        (``output_mode="append"``) or, with ``"complete"``, a replacement of every row. ``trigger`` takes
        ``DataStreamWriter.trigger``'s keywords (``{"availableNow": True}``, ``{"processingTime": "10 seconds"}``);
        ``branch`` and ``snapshot_properties`` as for :meth:`append`."""
        self._writable()
        return _sql_layer().write_stream(self, df, checkpoint_location, trigger, output_mode, query_name, branch,
                                         snapshot_properties)

    def read_stream(self, *, start_snapshot_id: int | None = None, stream_from_timestamp_ms: int | None = None,
                    max_files_per_trigger: int | None = None, max_rows_per_trigger: int | None = None,
                    skip_delete_snapshots: bool = False, skip_overwrite_snapshots: bool = False,
                    changes: bool = False):
        """A streaming DataFrame of the rows appended to the table (:mod:`sparkberg.sql.stream_source`; PySpark
        4.0+, a named error on 3.5, where :meth:`to_df` with ``start_snapshot_id`` reads what was appended since a
        snapshot): from after ``start_snapshot_id``, or from the snapshots committed since
        ``stream_from_timestamp_ms``, else from the first; ``max_files_per_trigger`` and ``max_rows_per_trigger``
        bound a micro-batch (PySpark 4.2+); a delete or overwrite snapshot stops the query with a named error
        unless ``skip_delete_snapshots`` or ``skip_overwrite_snapshots`` is set. Iceberg Java's options and
        semantics. ``changes=True`` streams the changelog instead (the columns of :meth:`changes`): each
        micro-batch the changes of whole snapshots, merge-on-read deletes, updates and merges included."""
        return _sql_layer().read_stream(self, {
            "start_snapshot_id": start_snapshot_id, "stream_from_timestamp_ms": stream_from_timestamp_ms,
            "max_files_per_trigger": max_files_per_trigger, "max_rows_per_trigger": max_rows_per_trigger,
            "skip_delete_snapshots": skip_delete_snapshots, "skip_overwrite_snapshots": skip_overwrite_snapshots,
            "changes": changes})

    def metadata_table(self, name: str, snapshot_id: int | None = None, columns: Sequence[str] | None = None):
        """One of Iceberg's metadata tables (``files``, ``snapshots``, ``partitions``...; see
        :data:`sparkberg.inspect.METADATA_TABLES`) as a DataFrame with Iceberg's Spark columns; ``snapshot_id``
        picks the snapshot for the tables that describe one (entries, files, manifests, partitions...).
        ``columns``: only those columns, in that order: the tables of files and entries then decode no other
        (``columns=[]`` for a count); ``sparkberg.sql`` passes the columns a query names."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.inspect import MetadataTables
        snap = self._metadata.snapshot_by_id(snapshot_id) if snapshot_id is not None else None
        with self._running("METADATA", snap, f".{name}"):
            return MetadataTables(self.spark, self._metadata, self.io, self.metadata_location).table(
                name, snapshot_id, columns)

    def register_views(self, name: str | None = None) -> list[str]:
        """Temporary Spark SQL views of this table (``events``) and its metadata tables (``events__snapshots``,
        ...); see :mod:`sparkberg.sql.views`. Returns the view names."""
        return _sql_layer().register_table_views(self, name)

    def rewrite_data_files(self, filter: str | None = None, strategy: str | None = None,
                           sort_order: str | None = None, options: dict[str, Any] | None = None,
                           dry_run: bool = False):
        """Compact data files as Iceberg's ``rewrite_data_files`` procedure (:mod:`sparkberg.maintenance.data_files`):
        small, oversized and delete-laden files of each partition matching ``filter`` rewritten at the target size
        with their deletes applied; ``strategy`` ``binpack`` (the default) or ``sort`` (the table's sort order, or
        ``sort_order="id DESC NULLS LAST, ts"``, or a z-order ``sort_order="zorder(a, b)"``); ``options`` by
        Java's names (``{"min-input-files": "2", "partial-progress.enabled": "true"}``). v3 row ids are kept.
        ``dry_run``: nothing written, the files that would be rewritten reported (added: the planned count).
        Returns a one-row DataFrame with the procedure's columns (``rewritten_data_files_count``, ...)."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.maintenance import data_files
        self._writable("rewrite_data_files")
        with self._running("REWRITE"):
            return data_files.rewrite_data_files(self, self._commit, filter, strategy, sort_order, options, dry_run)

    def expire_snapshots(self, older_than: Any = None, retain_last: int | None = None,
                         snapshot_ids: Iterable[int] | None = None, clean_expired_files: bool = True,
                         dry_run: bool = False):
        """Expire snapshots as the spec's retention policy and Iceberg Java's ``expire_snapshots`` do
        (:mod:`sparkberg.format.retention`): ``older_than`` epoch millis or a datetime (naive: the session time
        zone), default now minus ``history.expire.max-snapshot-age-ms``; ``retain_last`` default
        ``history.expire.min-snapshots-to-keep``; ``snapshot_ids`` expired even from the middle of history; refs
        past their ``max-ref-age-ms`` removed; a branch's own retention settings apply over the call's. One
        commit, then the files only expired snapshots reached are deleted by Spark's executors (none with
        ``clean_expired_files=False``). ``dry_run``: nothing committed or deleted, the same counts reported.
        Returns a one-row DataFrame with the procedure's columns (``deleted_data_files_count``, ...)."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.maintenance import expire
        self._writable("expire_snapshots")
        with self._running("EXPIRE"):
            return expire.expire_snapshots(self, self._commit, older_than, retain_last, snapshot_ids,
                                           clean_expired_files, dry_run)

    def rewrite_position_delete_files(self, filter: str | None = None, options: dict[str, Any] | None = None,
                                      dry_run: bool = False):
        """Compact position delete files per partition, dropping deletes of data files no longer in the table,
        and on v3 tables turn v2 position delete files into deletion vectors
        (:mod:`sparkberg.maintenance.deletes`); ``options`` as Iceberg Java's procedure (``rewrite-all``,
        ``min-input-files``). One ``replace`` snapshot. Returns a one-row DataFrame
        (``rewritten_delete_files_count``, ``added_delete_files_count``, ``rewritten_bytes_count``,
        ``added_bytes_count``). ``dry_run``: the positions are read but nothing is written or committed; the
        counts are the real run's (added bytes 0: not known before writing)."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.maintenance import deletes
        self._writable("rewrite_position_delete_files")
        with self._running("REWRITE-DELETES"):
            return deletes.rewrite_position_delete_files(self, self._commit, filter, options, dry_run)

    def rewrite_manifests(self, spec_id: int | None = None, dry_run: bool = False):
        """Rewrite the current snapshot's manifests (of ``spec_id``, or all) clustered by partition at
        ``commit.manifest.target-size-bytes``, on Spark's executors, in one ``replace`` snapshot; entries keep
        their sequence numbers and row ids (:mod:`sparkberg.maintenance.manifests`). Returns a one-row DataFrame
        (``rewritten_manifests_count``, ``added_manifests_count``) as Iceberg Java's procedure does. ``dry_run``:
        nothing written or committed; the manifests it would rewrite, and add as planned."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.maintenance import manifests
        self._writable("rewrite_manifests")
        with self._running("REWRITE-MANIFESTS"):
            return manifests.rewrite_manifests(self, self._commit, spec_id, dry_run)

    def check(self, level: str = "metadata"):
        """The table's integrity findings as a DataFrame (``rule``, ``severity``, ``location``, ``snapshot_id``,
        ``detail``, ``spec_section``; empty for a healthy table). ``level``: ``metadata`` (refs, the metadata log,
        manifest lists and manifests, sequence numbers, summary totals, row lineage, partition values),
        ``files`` (also every referenced file's existence and size and each deletion vector's cardinality, on the
        executors) or ``data`` (also Parquet footers' row counts). See :mod:`sparkberg.maintenance.doctor`."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.spark.frames import local_dataframe
        from sparkberg.maintenance import doctor  # (only where a table is checked)
        with self._running("CHECK"):
            found = doctor.check(self._metadata, self.metadata_location, self.io, self.spark, level)
        return local_dataframe(self.spark, [f.row() for f in found], doctor.FINDINGS_DDL)

    def repair(self, dry_run: bool = True):
        """Remove the current snapshot's references to data and delete files that no longer exist (and the delete
        files scoped to such a data file alone), as one snapshot (``delete``, or ``overwrite`` when only delete
        files go) whose summary names how many, its totals counted from the manifests; a current snapshot whose
        summary totals are wrong, with nothing to remove, gets a ``replace`` snapshot that changes no file and
        states them right. Never deletes a file. Returns what it does (or, with ``dry_run``, the default, would
        do): a row per ``remedy`` (``remove-reference``: ``file_path``, ``content``, ``content_offset``;
        ``restate-summary``: the total, in ``detail``)."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.commit.producer import SnapshotChange
        from sparkberg.operations.changes import Changes  # (put off, as above)
        from sparkberg.operations.request import MAIN_REQUEST  # (put off, as above)
        from sparkberg.spark.frames import local_dataframe  # (put off, as above)
        from sparkberg.maintenance import doctor  # (only where a table is repaired)
        with self._running("REPAIR"):
            _, plan = doctor.repair_plan(self._metadata, self.io, self.spark)
            if plan.totals is not None and not dry_run:
                keys = plan.removed
                operation = "delete" if any(content == 0 for _, _, content in keys) else \
                    "overwrite" if keys else "replace"
                summary = {"sparkberg.repair.removed-missing-files": str(len(keys))} if keys else {}
                if plan.wrong:
                    summary["sparkberg.repair.restated-totals"] = ",".join(sorted(plan.wrong))
                self._commit(SnapshotChange(self._metadata, self.io, Changes(
                    operation, removed={(path, offset) for path, offset, _ in keys}, summary=summary,
                    totals=plan.totals), MAIN_REQUEST))
        rows = [("remove-reference", p, c, o, "the file no longer exists") for p, o, c in plan.removed]
        rows += [("restate-summary", None, None, None, f"{k} is {was} in the summary, {now} in the manifests")
                 for k, (was, now) in sorted(plan.wrong.items())]
        return local_dataframe(self.spark, rows, "remedy string, file_path string, content int, "
                                                 "content_offset bigint, detail string")

    def remove_orphan_files(self, older_than: Any = None, location: str | None = None, dry_run: bool = False,
                            equal_schemes: dict[str, str] | None = None,
                            equal_authorities: dict[str, str] | None = None, prefix_mismatch_mode: str = "error"):
        """Delete the files under the table's location (or ``location``, inside it) that no metadata of the table
        references and that are older than ``older_than`` (epoch millis or a datetime; default three days
        ago), as Iceberg Java's ``remove_orphan_files`` does (:mod:`sparkberg.maintenance.orphans`: hidden files,
        scheme and authority equivalences, prefix mismatches). The listing and the comparison run on Spark's
        executors. ``dry_run``: nothing deleted. Returns the files as a DataFrame (``orphan_file_location``)."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.maintenance import orphans
        self._writable("remove_orphan_files")
        with self._running("ORPHANS"):
            return orphans.remove_orphan_files(self, older_than, location, dry_run, equal_schemes, equal_authorities,
                                       prefix_mismatch_mode)

    def _writable(self, maintenance: str | None = None) -> None:
        """A named error for a change this table cannot take: any, loaded by path; ``maintenance`` (the call's
        name), in a transaction's block (it deletes files once its commit is done)."""
        if self.catalog is None:
            raise SparkbergError(f"table {self.name} was loaded by path and is read-only; load it from a catalog "
                                 "to change it")
        if maintenance is not None and self._transaction is not None:
            raise NotSupportedError(f"{maintenance} deletes files after its commit and cannot be part of a "
                                    "transaction; run it on the table")

    # --- metadata commits ------------------------------------------------------------------------
    def _commit(self, change: Change) -> PendingCommit:
        """Hand ``change`` to the one committer (:mod:`sparkberg.commit.committer`: built on the current version,
        retried on a lost race per ``commit.retry.*``), or, in a transaction's block, stage it there; the table
        then holds the new version. Returns the try that was committed (or staged)."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.commit import committer
        self._writable()
        if self._transaction is not None:  # (staged now, committed with the transaction's other changes)
            pending = self._transaction.stage(change)
            self._metadata = pending.metadata
            return pending
        done = committer.commit(change, self.catalog, self.identifier, self.name, self.io, self._metadata,
                                self.metadata_location)
        self._committed(done.metadata, done.location)
        return done.pending

    def _committed(self, metadata: TableMetadata, metadata_location: str) -> None:
        """Take the metadata this table's commit just wrote, then tell the SQL layer (its views follow)."""
        self._metadata, self.metadata_location = metadata, metadata_location
        if _SQL_LAYER:
            _SQL_LAYER[0].table_committed(self)

    def transaction(self) -> contextlib.AbstractContextManager:
        """A transaction (:mod:`sparkberg.commit.transaction`): the changes made through the table the block is given
        (schema, spec, sort order, properties, refs, writes) are committed together, as one metadata commit, when
        the block ends; if it raises, none is, and the files they wrote are deleted.

            with t.transaction() as tx:
                tx.update_schema().add_column("region", "string").commit()
                tx.append(df, snapshot_properties={"batch": "42"})
        """
        if self._transaction is not None:
            raise NotSupportedError("transactions do not nest: make the changes on the enclosing transaction")
        self._writable()
        return self._transacting()

    @contextlib.contextmanager
    def _transacting(self) -> Iterator["Table"]:
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.commit.transaction import Transaction
        tx = Transaction(self.name, self._metadata, self.io)
        staged = Table(self.identifier, self._metadata, self.metadata_location, self.io, self.catalog, self.spark, tx)
        try:
            yield staged
            tx.open = False
            if tx.staged:
                self._commit(tx.change())
        except CommitStateUnknownException:
            raise  # (the files may be the table's now)
        except BaseException:
            tx.staging.discard()
            raise
        finally:
            tx.open = False
        staged._metadata, staged.metadata_location = self._metadata, self.metadata_location
        tx.staging.finish()

    def set_properties(self, properties: dict[str, str] | None = None, **kwargs: str) -> "Table":
        """Set table properties (one commit)."""
        props = dict(properties or {}, **kwargs)
        self._commit(MetadataChange("set-properties", (U.SetProperties(props),)))
        return self

    def remove_properties(self, *keys: str) -> "Table":
        """Remove table properties (one commit); missing keys are ignored."""
        self._commit(MetadataChange("remove-properties", (U.RemoveProperties(tuple(keys)),)))
        return self

    def upgrade_format_version(self, format_version: int) -> "Table":
        """Upgrade the table's format version (v1->v2->v3, never down), per the spec's upgrade rules."""
        self._commit(MetadataChange("upgrade-format-version", (U.UpgradeFormatVersion(int(format_version)),)))
        return self

    def set_location(self, location: str) -> "Table":
        """Set the table's base location (``ALTER TABLE ... SET LOCATION``): new files go under it; existing files
        stay where they are and are still read. One metadata commit."""
        self._commit(MetadataChange("set-location", (U.SetLocation(location),)))
        return self

    def replace(self, schema: Any, partition_by: Iterable[str] | None = None,
                properties: dict[str, str] | None = None, sort_by: Iterable[str] | None = None) -> "Table":
        """Replace the table's definition, keeping its history (Spark's ``REPLACE TABLE``; Iceberg Java's replace
        transaction): ``schema`` (as for :meth:`Catalog.create_table`), ``partition_by`` and ``sort_by`` become
        current, fields of the same name keeping their ids; the table then has no current snapshot (the other
        refs and every snapshot stay, for time travel and rollback); ``properties`` are set over the existing
        ones. In a transaction, writes after it fill the replaced table (``REPLACE TABLE ... AS SELECT``)."""
        base = self._metadata
        s = schema_from(self.spark, schema)
        updates = U.replacement(base, s, build_partition_spec(s, partition_by), build_sort_order(s, sort_by),
                                properties)
        self._commit(MetadataChange("replace", tuple(updates), (U.AssertTableUUID(base.table_uuid),)))
        return self


@dataclass(frozen=True)
class _ManifestAnswer:
    """What the manifests give of some aggregates (:meth:`Table._from_manifests`): the plan made for them, and
    the values with what they were made of, or why the manifests cannot give them."""
    plan: Any
    values: list[Any] | None = None
    used: str = ""
    why_not: str = ""


def _aggregates_text(aggregates: Sequence[tuple[str, str | None]]) -> str:
    """``count, min(x)``: what :meth:`Table.explain_aggregates` and the log lines name."""
    return ", ".join(kind if column is None else f"{kind}({column})" for kind, column in aggregates)


@dataclass(frozen=True)
class WriteOutcome:
    """What a write with an idempotency key did: ``committed`` its snapshot ``snapshot_id``, or ``skipped``, because
    snapshot ``snapshot_id`` already records its ``app_id`` with ``version`` or a later one (then nothing was
    written). Neither when it had no row to commit."""

    table: Table
    app_id: str
    version: int
    committed: bool
    skipped: bool
    snapshot_id: int | None


class _Write:
    """A write of ``table``, checked: its ``request``; the table as the write plans on it (``view``: with a merged
    schema (``merged``), a read-only table whose current schema is the union, which the write's snapshot adds to the
    table in its own commit); and, with an idempotency key, the snapshot that already records it (checked now, on
    the table as loaded, and again by each try of the commit)."""

    def __init__(self, table: Table, label: str, request: CommitRequest, merged: "SchemaMerge | None"):
        self.table, self.label, self.request, self.merged = table, label, request, merged
        self.view = table if merged is None else Table(table.identifier, merged.metadata, table.metadata_location,
                                                       table.io, None, table.spark)
        self.head = request.target.head(table.metadata)
        key = request.idempotency
        recorded = None if key is None else key.recorded(table.metadata, request.target)
        self.recorded_id: int | None = None if recorded is None else recorded.snapshot_id

    @property
    def wanted(self) -> bool:
        """Whether the write is to be made: not when its idempotency key is already recorded."""
        return self.recorded_id is None

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """The write's block (its job label, executor errors named); a try of its commit that finds its key
        recorded (:class:`~sparkberg.errors.AlreadyCommittedError`) ends it as skipped."""
        with self.table._running(self.label, self.head, self.request.target.describe()):
            try:
                yield
            except AlreadyCommittedError as e:
                self.recorded_id = e.snapshot_id

    def commit(self, changes: Changes | None) -> None:
        """Commit the write's ``changes`` (none: it found nothing to change) as one snapshot, with the merged
        schema's updates first."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.commit.producer import SnapshotChange
        if changes is None:
            return
        if self.merged is not None:
            changes = dataclasses.replace(
                changes, updates=(*self.merged.updates, *changes.updates),
                requirements=(*self.merged.requirements, *changes.requirements),
                conflict=f"the schema of table {self.table.name} changed while a write merged its data's columns "
                         "into it")
        self.table._commit(SnapshotChange(self.view.metadata, self.table.io, changes, self.request))

    def outcome(self) -> "Table | WriteOutcome":
        """What the write returns: the table, or with an idempotency key, the :class:`WriteOutcome`."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.operations.request import APP_ID, VERSION
        key = self.request.idempotency
        if key is None:
            return self.table
        if self.recorded_id is not None:
            return WriteOutcome(self.table, key.app_id, key.version, False, True, self.recorded_id)
        mine = [s.snapshot_id for s in self.table.metadata.snapshots
                if (s.summary or {}).get(APP_ID) == key.app_id and (s.summary or {}).get(VERSION) == str(key.version)]
        return WriteOutcome(self.table, key.app_id, key.version, bool(mine), False, mine[-1] if mine else None)


class SqlLayer(Protocol):
    """What the SQL layer above this module (:mod:`sparkberg.sql`: views, the data source, statements) does for
    the table API. It gives itself with :func:`use_sql_layer` when imported, so this module imports nothing above
    it and a commit calls nothing it does not know."""

    def register_table_views(self, table: "Table", name: str | None) -> list[str]:
        """:meth:`Table.register_views`."""

    def register_catalog_views(self, catalog: "Catalog", namespace: str | Sequence[str] | None,
                               qualified: bool) -> list[str]:
        """:meth:`Catalog.register_views`."""

    def table_committed(self, table: "Table") -> None:
        """After each commit a table of this process makes (must not raise: the commit is done)."""

    def write_stream(self, table: "Table", df: Any, checkpoint_location: str, trigger: dict[str, Any] | None,
                     output_mode: str, query_name: str | None, branch: str | None,
                     snapshot_properties: dict[str, str] | None) -> Any:
        """:meth:`Table.write_stream`."""

    def read_stream(self, table: "Table", options: dict[str, Any]) -> Any:
        """:meth:`Table.read_stream`."""

    def view_frame(self, view: "View") -> Any:
        """:meth:`View.to_df`."""

    def query_schema(self, catalog: "Catalog", query: str, view: Identifier) -> Any:
        """The Spark schema of ``query`` as view ``view`` of ``catalog`` would read it."""


# The SQL layer, once sparkberg.sql is imported (sparkberg/__init__ imports it with this module): process-wide,
# set once, never cleared.
_SQL_LAYER: list[SqlLayer] = []


def use_sql_layer(layer: SqlLayer) -> None:
    """Give the table API its SQL layer (:mod:`sparkberg.sql` does, once)."""
    _SQL_LAYER[:] = [layer]


def _sql_layer() -> SqlLayer:
    if not _SQL_LAYER:
        raise SparkbergError("the SQL layer is not loaded: import sparkberg (not only sparkberg.table)")
    return _SQL_LAYER[0]


class Catalog:
    """A catalog of Iceberg tables: namespaces, and tables created, loaded, listed and dropped."""

    def __init__(self, spark: Any, backend: CatalogBackend, uri: str, config: dict[str, Any] | None = None):
        self.spark = spark
        self._backend = backend
        self.uri = uri
        # (the arguments of sparkberg.catalog that open it again in another process: the SQL views' data source)
        self.config = config or {"type": "hadoop", "uri": backend.warehouse}

    def __repr__(self) -> str:
        return f"Catalog({self.uri})"

    @property
    def warehouse(self) -> str:
        """Where new tables go: ``<warehouse>/<namespace>/<table>``."""
        return self._backend.warehouse

    def create_namespace(self, namespace: str | Sequence[str], properties: dict[str, str] | None = None) -> None:
        """Create a namespace (with ``properties``, where the catalog keeps them: SQL and REST catalogs)."""
        self._backend.create_namespace(namespace, properties)

    def load_namespace_properties(self, namespace: str | Sequence[str]) -> dict[str, str]:
        """A namespace's properties ({} for the file-system catalog, which keeps none)."""
        return self._backend.load_namespace_properties(namespace)

    def update_namespace_properties(self, namespace: str | Sequence[str], updates: dict[str, str] | None = None,
                                    removals: Sequence[str] = ()) -> None:
        """Set and remove namespace properties (SQL and REST catalogs)."""
        self._backend.update_namespace_properties(namespace, updates, removals)

    def namespace_exists(self, namespace: str | Sequence[str]) -> bool:
        """Whether the namespace (``"db"``, ``"a.b"`` or ``("a", "b")``) exists."""
        return self._backend.namespace_exists(namespace)

    def list_namespaces(self, parent: str | Sequence[str] = ()) -> list[tuple[str, ...]]:
        """The namespaces directly under ``parent`` (default: the top level), each as a tuple of its levels."""
        return self._backend.list_namespaces(parent)

    def drop_namespace(self, namespace: str | Sequence[str]) -> None:
        """Drop an empty namespace; one that still holds tables raises ``NamespaceNotEmptyError``, an unknown one
        ``NoSuchNamespaceError``."""
        self._backend.drop_namespace(namespace)

    def list_tables(self, namespace: str | Sequence[str]) -> list[str]:
        """The identifiers (``db.events``) of the namespace's tables; an unknown namespace raises
        ``NoSuchNamespaceError``."""
        return [str(i) for i in self._backend.list_tables(namespace)]

    def table_exists(self, identifier: str | Sequence[str]) -> bool:
        """Whether the catalog has a table of that identifier."""
        return self._backend.table_exists(identifier)

    def create_table(self, identifier: str | Sequence[str], schema: Any, partition_by: Iterable[str] | None = None,
                     properties: dict[str, str] | None = None, sort_by: Iterable[str] | None = None,
                     location: str | None = None) -> Table:
        """Create an empty table. ``schema`` is a Spark StructType, a DDL string or a Schema;
        ``partition_by`` holds transform expressions (``day(ts)``, ``bucket(16, id)``, ``col``);
        ``properties`` may set ``format-version`` (1, 2 or 3; default 2)."""
        ident = parse_identifier(identifier)
        props = dict(properties or {})
        try:
            version = int(props.pop("format-version", DEFAULT_FORMAT_VERSION))
        except ValueError:
            raise ValidationError(f"format-version must be 1, 2 or 3, got {properties['format-version']!r}") from None
        s = schema_from(self.spark, schema)
        s = U.assign_fresh_ids(s)
        spec = build_partition_spec(s, partition_by)
        order = build_sort_order(s, sort_by)
        loc = self._backend.default_table_location(ident) if location is None else \
            normalize_location(location).rstrip("/")
        metadata = U.new_table_metadata(s, loc, spec, order, props, version)
        ident, mloc, meta = self._backend.create(ident, metadata)
        return Table(ident, meta, mloc, self.table_io(ident, meta), self, self.spark)

    def create_or_replace_table(self, identifier: str | Sequence[str], schema: Any,
                                partition_by: Iterable[str] | None = None, properties: dict[str, str] | None = None,
                                sort_by: Iterable[str] | None = None) -> Table:
        """Create the table, or replace the definition of the existing one (:meth:`Table.replace`: its history
        stays, it has no current snapshot), as ``CREATE OR REPLACE TABLE`` does."""
        if not self.table_exists(identifier):
            return self.create_table(identifier, schema, partition_by, properties, sort_by)
        return self.load_table(identifier).replace(schema, partition_by, properties, sort_by)

    def load_table(self, identifier: str | Sequence[str]) -> Table:
        """The table at its current metadata version; an unknown one raises ``NoSuchTableError``."""
        ident, loc, meta = self._backend.load(identifier)
        return Table(ident, meta, loc, self.table_io(ident, meta), self, self.spark)

    def table_io(self, identifier: Identifier, metadata: TableMetadata) -> FileIO:
        """A table's FileIO: the catalog's, with the table's FileIO properties (``s3.*``, ``gcs.*``, ``adls.*``)
        over the catalog's, and what the catalog vends for the table (a REST catalog's ``config`` and
        ``storage-credentials``) over those."""
        vended = getattr(self._backend, "table_io", None)
        if vended is not None:
            return vended(identifier, metadata)
        io = self._backend.io
        return io.with_properties(metadata.properties) if hasattr(io, "with_properties") else io

    def load_table_metadata(self, identifier: str | Sequence[str] | Identifier
                            ) -> tuple[Identifier, str, TableMetadata]:
        """(identifier, metadata location, metadata) of a table's current version."""
        return self._backend.load(identifier)

    def commit_table(self, identifier: Identifier, base_location: str, pending: PendingCommit
                     ) -> tuple[str, TableMetadata]:
        """Commit ``pending`` (built on the table's version at ``base_location``) atomically: the new location and
        metadata, or CommitFailedException when another commit came first (:mod:`sparkberg.commit.committer` is
        the one caller, with its retry)."""
        return self._backend.commit(identifier, base_location, pending)

    def register_views(self, spark: Any = None, namespace: str | Sequence[str] | None = None,
                       qualified: bool = False) -> list[str]:
        """Temporary Spark SQL views for the tables of ``namespace`` (all when None) and their metadata tables:
        ``SELECT * FROM events`` and ``SELECT * FROM events__snapshots`` then work without an Iceberg jar
        (``qualified=True``: ``db__events``...). ``spark`` defaults to the catalog's session."""
        if spark is not None and spark is not self.spark:
            return Catalog(spark, self._backend, self.uri, self.config).register_views(None, namespace, qualified)
        return _sql_layer().register_catalog_views(self, namespace, qualified)

    def drop_table(self, identifier: str | Sequence[str], purge: bool = False) -> None:
        """Drop a table; ``purge`` also deletes every file its metadata references."""
        self._backend.drop(identifier, purge)

    def rename_table(self, source: str | Sequence[str], target: str | Sequence[str]) -> None:
        """Rename a table; its files stay where they are (the SQL catalog: the file-system catalog's tables are
        their directories)."""
        self._backend.rename(source, target)

    def snapshot_table(self, source: str | Sequence[str], target: str | Sequence[str], location: str | None = None,
                       properties: dict[str, str] | None = None) -> Table:
        """A new Iceberg table ``target`` holding the files of the plain Parquet table ``source`` of this catalog
        (a Hive Metastore's or Glue's) where they are, the source left as it was: to try Iceberg on a table's data
        (Iceberg's ``snapshot``; :mod:`sparkberg.maintenance.migrate`). Its location is ``location`` or the
        catalog's default; it has ``gc.enabled=false``, so that its maintenance never deletes the source's
        files."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.maintenance import migrate
        return migrate.snapshot_table(self, source, target, location, properties)

    def migrate_table(self, identifier: str | Sequence[str], properties: dict[str, str] | None = None,
                      drop_backup: bool = False, backup_table_name: str | None = None) -> Table:
        """Make the plain Parquet table ``identifier`` of this catalog (a Hive Metastore's or Glue's) an Iceberg
        table of the same name and location, its files imported where they are (Iceberg's ``migrate``;
        :mod:`sparkberg.maintenance.migrate`). The old definition is kept as ``<name>_BACKUP_`` (or
        ``backup_table_name``) unless ``drop_backup``, and put back if the migration fails."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.maintenance import migrate
        return migrate.migrate_table(self, identifier, properties, drop_backup, backup_table_name)

    # --- views ------------------------------------------------------------------------------------------------
    def _views(self) -> Any:
        if not hasattr(self._backend, "load_view"):
            raise NotSupportedError(f"catalog {self.uri} keeps no views (views live in SQL, REST and Hive Metastore "
                                    "catalogs)")
        return self._backend

    def list_views(self, namespace: str | Sequence[str]) -> list[str]:
        """The identifiers of the namespace's views."""
        return [str(i) for i in self._views().list_views(namespace)]

    def view_exists(self, identifier: str | Sequence[str]) -> bool:
        """Whether the catalog has a view of that identifier."""
        return hasattr(self._backend, "view_exists") and self._backend.view_exists(identifier)

    def load_view(self, identifier: str | Sequence[str]) -> View:
        """The view at its current version; an unknown one raises ``NoSuchViewError``."""
        ident, location, metadata = self._views().load_view(identifier)
        return View(ident, metadata, location, self)

    def create_view(self, identifier: str | Sequence[str], query: str, *, columns: Sequence[Any] | None = None,
                    comment: str | None = None, properties: dict[str, str] | None = None,
                    replace: bool = False) -> View:
        """Create a view of Spark SQL ``query`` (what ``CREATE VIEW`` makes): its schema the query's columns,
        renamed by ``columns`` (names, or (name, comment) pairs, one per column), its default catalog this one and
        its default namespace the view's own, in which the query's one-part table names resolve. With ``replace``,
        an existing view gets a new version (``CREATE OR REPLACE VIEW``); a name a table holds is an error."""
        backend = self._views()
        ident = parse_identifier(identifier)
        if self.table_exists(ident):
            raise ViewAlreadyExistsError(f"view {ident} cannot be created: a table of that name exists")
        exists = backend.view_exists(ident)
        if exists and not replace:
            raise ViewAlreadyExistsError(f"view {ident} already exists (CREATE OR REPLACE VIEW replaces it)")
        version, schema, props = self._view_version(ident, query, columns, comment)
        props = {**(properties or {}), **props, CREATE_ENGINE_VERSION: props[ENGINE_VERSION]}
        if exists:
            return self.load_view(ident)._commit(lambda m: views_format.replaced(
                views_format.with_properties(m, props), version, schema))
        metadata = views_format.new_view(backend.default_table_location(ident), schema, version, props)
        ident, location, written = backend.create_view(ident, metadata)
        return View(ident, written, location, self)

    def replace_view(self, identifier: str | Sequence[str], query: str, *,
                     columns: Sequence[Any] | None = None, comment: str | None = None) -> View:
        """A new version of an existing view (``ALTER VIEW ... AS``): the query, its schema and column names;
        the view's properties kept."""
        view = self.load_view(identifier)
        version, schema, props = self._view_version(view.identifier, query, columns, comment)
        return view._commit(lambda m: views_format.replaced(views_format.with_properties(m, props), version, schema))

    def _view_version(self, ident: Identifier, query: str, columns: Sequence[Any] | None, comment: str | None
                      ) -> tuple[Any, Schema, dict[str, str]]:
        """(the version, its schema, the properties it sets) of view ``ident`` of ``query``, as Iceberg's Spark
        SQL makes them."""
        spark_schema = _sql_layer().query_schema(self, query, ident)
        schema = _view_schema(self.spark, spark_schema, columns, ident)
        version = views_format.ViewVersion(
            0, _now_ms(), 0, _view_summary(self.spark), (views_format.Representation("sql", query.strip(), "spark"),),
            ident.namespace, self._view_catalog_name())
        props = {ENGINE_VERSION: f"Spark {self.spark.version}",
                 QUERY_COLUMN_NAMES: ",".join(f.name for f in spark_schema.fields),
                 **({"comment": comment} if comment is not None else {})}
        return version, schema, props

    def _view_catalog_name(self) -> str | None:
        """The default catalog a view of this catalog records: the name Spark sessions know it by, none for a
        catalog opened without one (then engines resolve the view's names in the catalog that loads it)."""
        name = self.config.get("name")
        return None if name in (None, DEFAULT_CATALOG_NAME) else name

    def drop_view(self, identifier: str | Sequence[str]) -> None:
        """Drop a view (``NoSuchViewError`` when there is none)."""
        self._views().drop_view(identifier)

    def rename_view(self, source: str | Sequence[str], target: str | Sequence[str]) -> None:
        """Rename a view."""
        self._views().rename_view(source, target)

    def register_table(self, identifier: str | Sequence[str], metadata_location: str) -> Table:
        """Add an existing table to the catalog by its metadata file (SQL and REST catalogs)."""
        ident, loc, meta = self._backend.register(identifier, normalize_location(metadata_location))
        return Table(ident, meta, loc, self.table_io(ident, meta), self, self.spark)


# the properties Iceberg's Spark SQL gives a view, which a view of its makes besides the user's
QUERY_COLUMN_NAMES = "spark.query-column-names"
ENGINE_VERSION = "engine_version"
CREATE_ENGINE_VERSION = "create_engine_version"


class View:
    """An Iceberg view of a catalog at one metadata version (:mod:`sparkberg.format.views`): its SQL, schema and
    properties; :meth:`to_df` reads it."""

    def __init__(self, identifier: Identifier, metadata: Any, metadata_location: str, catalog: "Catalog"):
        self.identifier, self.metadata, self.metadata_location = identifier, metadata, metadata_location
        self.catalog = catalog

    def __repr__(self) -> str:
        return f"View({self.name})"

    @property
    def name(self) -> str:
        """The view's identifier as text (``db.daily_counts``)."""
        return str(self.identifier)

    @property
    def properties(self) -> dict[str, str]:
        """The view's properties (a copy)."""
        return dict(self.metadata.properties)

    def schema(self) -> Schema:
        """The schema of the view's current version."""
        return self.metadata.schema()

    def sql(self, dialect: str = "spark") -> str | None:
        """The query of the current version in ``dialect`` (None when it has none)."""
        return self.metadata.current_version.sql(dialect)

    def to_df(self) -> Any:
        """The view's rows: its Spark SQL query, the tables and views it names resolved in its default catalog and
        namespace, its columns named and typed as its schema says."""
        return _sql_layer().view_frame(self)

    def set_properties(self, properties: dict[str, str] | None = None, **kwargs: str) -> "View":
        """Set view properties (one commit)."""
        updates = {**(properties or {}), **kwargs}
        return self._commit(lambda m: views_format.with_properties(m, updates))

    def remove_properties(self, *keys: str) -> "View":
        """Remove view properties (one commit); a key the view lacks is an error."""
        def change(m: Any) -> Any:
            missing = [k for k in keys if k not in m.properties]
            if missing:
                raise ValidationError(f"view {self.name} has no properties {', '.join(missing)}")
            return views_format.with_properties(m, {}, set(keys))
        return self._commit(change)

    def _commit(self, change: Callable[[Any], Any]) -> "View":
        """Commit ``change`` (the view's next metadata from its current one) atomically; a lost race is tried
        again on the view's latest version, per ``commit.retry.*`` (its properties), as a table's commit."""
        # (put off: import sparkberg and a table's load import none of it)
        from sparkberg.commit.retry import RetryPolicy, retrying
        def attempt(_: int) -> "View":
            location, written = self.catalog._backend.commit_view(self.identifier, self.metadata_location,
                                                                  change(self.metadata), self.metadata)
            self.metadata, self.metadata_location = written, location
            return self

        def refresh() -> None:
            _, self.metadata_location, self.metadata = self.catalog._backend.load_view(self.identifier)
        return retrying(RetryPolicy.of(self.metadata.properties), attempt, refresh)


def catalog(spark: Any, uri: str, warehouse: str | None = None, name: str | None = None, type: str | None = None,
            properties: dict[str, str] | None = None) -> Catalog:
    """Open a catalog (:mod:`sparkberg.catalog.config`): ``uri`` is a warehouse location (``file:///data/wh``, a
    local path, ``s3://bucket/wh``, ``hdfs://...``) for the file-system catalog (Iceberg's HadoopCatalog
    layout); a database (``sqlite:////data/catalog.db``, ``jdbc:sqlite:/data/catalog.db``,
    ``postgresql://host/db``, ``jdbc:postgresql://host/db``) for the SQL catalog, with ``warehouse`` for new
    tables, ``name`` (the ``catalog_name`` it shares with Iceberg Java and PyIceberg) and ``properties``
    (``jdbc.user``, ``jdbc.password``); an Iceberg REST catalog's endpoint (``http://host:8181/catalog``, or
    ``type="rest"``) with ``properties`` ``token`` or ``credential`` (``client_id:secret``; ``oauth2-server-uri``,
    ``scope``) and ``header.*``, and ``warehouse`` when the server serves several; or the name of a catalog
    configured by ``spark.sql.catalog.<name>.*``."""
    backend, description, config = open_backend(spark, uri, warehouse, name, type, properties)
    return Catalog(spark, backend, description, config)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _view_summary(spark: Any) -> dict[str, str]:
    """A view version's summary: the engine that made it, as Iceberg's Spark SQL names it."""
    out = {"engine-name": "spark", "engine-version": str(spark.version)}
    try:
        out["app-id"] = spark.sparkContext.applicationId
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext here
        pass
    return out


def _spark_view_ids(schema: Schema) -> Schema:
    """``schema`` numbered as Iceberg's Spark SQL numbers a view's (``SparkSchemaUtil.convert`` of the query's
    Spark schema made nullable): top-level columns 0, 1, ...; then nested fields, list elements and map keys and
    values in the order its type visitor finishes them (children before their parent's own ids); every field,
    element and value optional."""
    counter = [len(schema.fields)]

    def nxt() -> int:
        counter[0] += 1
        return counter[0] - 1

    def visit(t: Any) -> Any:
        if isinstance(t, T.StructType):
            children = [visit(f.field_type) for f in t.fields]
            return T.StructType([dataclasses.replace(f, field_id=nxt(), field_type=c, required=False)
                                 for f, c in zip(t.fields, children)])
        if isinstance(t, T.ListType):
            element = visit(t.element_type)
            return dataclasses.replace(t, element_id=nxt(), element_type=element, element_required=False)
        if isinstance(t, T.MapType):
            key, value = visit(t.key_type), visit(t.value_type)
            return dataclasses.replace(t, key_id=nxt(), key_type=key, value_id=nxt(), value_type=value,
                                       value_required=False)
        return t
    children = [visit(f.field_type) for f in schema.fields]
    return Schema([dataclasses.replace(f, field_id=i, field_type=c, required=False)
                   for i, (f, c) in enumerate(zip(schema.fields, children))], schema.schema_id)


def _view_schema(spark: Any, spark_schema: Any, columns: Sequence[Any] | None, ident: Identifier) -> Schema:
    """A view's schema: the query's columns (numbered and made optional as Iceberg's Spark SQL makes them),
    renamed and commented by ``columns``."""
    schema = _spark_view_ids(schema_from(spark, spark_schema))
    if not columns:
        return schema
    if len(columns) != len(schema.fields):
        raise ValidationError(f"view {ident}: {len(columns)} column names for a query of {len(schema.fields)} "
                              f"columns ({', '.join(f.name for f in schema.fields)})")
    fields = []
    for f, c in zip(schema.fields, columns):
        name, doc = (c, None) if isinstance(c, str) else (c[0], c[1])
        fields.append(dataclasses.replace(f, name=name, doc=doc if doc is not None else f.doc))
    return Schema(fields, schema.schema_id)


_METASTORE_NAME = re.compile(r"^(\d+)-[0-9a-fA-F-]+\.(?:gz\.)?metadata\.json(?:\.gz)?$")


def load_table(spark: Any, path: str, properties: dict[str, str] | None = None) -> Table:
    """Load any Iceberg table read-only, by its directory or a metadata JSON file, written by anyone;
    ``properties`` configure its FileIO (``s3.*``, ``gcs.*``, ``adls.*``: :mod:`sparkberg.io.stores`), with the
    table's own FileIO properties over them."""
    loc = normalize_location(path)
    io = file_io_for(loc, properties)
    if loc.endswith(".json") or loc.endswith(".json.gz"):
        meta = read_metadata(io, loc)
        return Table(None, meta, loc, io.with_properties(meta.properties), None, spark)
    current = FileSystemCatalog(loc.rsplit("/", 1)[0] or "/", io).current_version(loc)
    if current is not None:
        meta = read_metadata(io, current[1])
        return Table(None, meta, current[1], io.with_properties(meta.properties), None, spark)
    # metastore-style names (<V>-<uuid>.metadata.json, as REST/SQL catalogs write): take the highest V
    mdir = loc + "/metadata"
    candidates = []
    for name in io.list(mdir):
        m = _METASTORE_NAME.match(name)
        if m:
            candidates.append((int(m.group(1)), name))
    if not candidates:
        if to_local_path(loc) is not None and not io.exists(loc):
            raise NoSuchTableError(f"no table at {path}: the directory does not exist")
        raise NoSuchTableError(f"no Iceberg metadata found under {mdir}")
    version = max(c[0] for c in candidates)
    newest = [f"{mdir}/{n}" for v, n in candidates if v == version]
    metas = [(read_metadata(io, p), p) for p in newest]
    meta, mloc = max(metas, key=lambda x: x[0].last_updated_ms)
    return Table(None, meta, mloc, io.with_properties(meta.properties), None, spark)


# (listed, never emptied: the SQL layer stays for the process's life)
state.register("sparkberg.table._SQL_LAYER", "one (sparkberg.sql); clear() leaves it", lambda: None)


__all__ = ["Catalog", "Table", "WriteOutcome", "catalog", "load_table", "InvalidMetadataError"]
