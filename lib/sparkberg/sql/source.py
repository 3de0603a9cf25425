"""The ``sparkberg`` Python data source (Spark 4.1+): a table's rows planned when a query runs, with the
query's filters.

A temporary view over a DataFrame is a fixed plan: Spark never asks it again which files to read. A view over
this data source is planned by Spark for each query, and Spark hands it the query's filters
(``DataSourceReader.pushFilters``), so ``SELECT * FROM events WHERE day = '2026-11-26'`` reads only the files
whose partitions and metrics can match, and every query sees the table's current snapshot, whoever committed it.

Planning runs in a Python worker on the driver: it opens the catalog again from its arguments
(:attr:`Catalog.config`, sent as the option ``catalog-config-secret``, a name that Spark redacts in plans
because it may hold a database password), loads the table, and plans on the driver. Every pushed filter is
also returned to Spark, which applies it exactly to the rows: the data source only prunes. Each Spark partition
reads its tasks with :class:`~sparkberg.read.arrow.TaskReader` (the deletes applied file by file).

Spark plans a Python data source's partitions once per DataFrame and keeps them for every later query, except
for a query that pushes filters, which plans again (``PythonDataSourceV2`` caches its read info and only a
filter pushdown replaces it). So the view's DataFrame carries a filter of its own, ``_sparkberg_planned IS NOT
NULL`` on a column the reader fills with true and the view drops: every query pushes it, and is planned.

Spark calls ``pushFilters`` only when ``spark.sql.python.filterPushdown.enabled`` is true (it raises otherwise,
for a reader that defines it), so :func:`register` sets it: it lets Python data sources prune and changes no
query's result.
"""
from __future__ import annotations

import json
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource, DataSourceReader, EqualNullSafe, EqualTo, Filter, GreaterThan, GreaterThanOrEqual, In, InputPartition,
    IsNotNull, IsNull, LessThan, LessThanOrEqual, Not, StringStartsWith,
)

from sparkberg.arrays import from_bools
from sparkberg.errors import SparkbergError
from sparkberg.expressions.predicates import TRUE, Expression, Predicate, and_, bind, not_
from sparkberg.planning.scan import plan
from sparkberg.read.arrow import TaskReader, read_struct
from sparkberg.read.reader import identity_values
from sparkberg.read.deletecache import DeleteCache, delete_cache
from sparkberg.spark.jvm import as_active
from sparkberg.spark.session import per_session
from sparkberg.spark.settings import default_parallelism
from sparkberg.sql.splits import CONFIG_OPTION, split_tasks
from sparkberg.table import catalog

NAME = "sparkberg"
PUSHDOWN = "spark.sql.python.filterPushdown.enabled"
PLANNED = "_sparkberg_planned"
_COMPARISONS = {EqualTo: "eq", GreaterThan: "gt", GreaterThanOrEqual: "gt_eq", LessThan: "lt",
                LessThanOrEqual: "lt_eq"}


def register(spark: Any) -> None:
    """Register the data source with the session (once) and let it receive filters."""
    def add() -> bool:
        spark.dataSource.register(SparkbergSource)
        return True
    with as_active(spark):  # (Spark looks the name up in the active session: it must be this one)
        if per_session(spark, "sparkberg data source", add) is None:  # (a session that keeps nothing: each time)
            add()
    if str(spark.conf.get(PUSHDOWN, "false")).lower() != "true":
        spark.conf.set(PUSHDOWN, "true")


def table_frame(table: Any) -> Any:
    """A DataFrame of ``table``'s rows over the data source: planned by each query that reads it."""
    if table.catalog is None or table.identifier is None:
        raise SparkbergError(f"table {table.name} was loaded by path: its SQL view is planned when registered")
    register(table.spark)
    cache = delete_cache(table.spark)
    options = {CONFIG_OPTION: json.dumps(table.catalog.config), "table": str(table.identifier),
               "schema-id": str(table.schema().schema_id),
               "delete-cache-max-bytes": str(cache.max_bytes if cache is not None else 0),
               "parallelism": str(default_parallelism(table.spark))}
    schema = read_struct(table.schema()).add(PLANNED, "boolean")
    with as_active(table.spark):  # (the data source's name is resolved in the active session)
        rows = table.spark.read.format(NAME).schema(schema).options(**options).load()
    return rows.where(f"{PLANNED} IS NOT NULL").drop(PLANNED)


def filter_expression(f: Filter) -> Expression | None:
    """A pushed filter as a sparkberg predicate (None when it does not translate: it then prunes nothing)."""
    term = ".".join(f.attribute) if hasattr(f, "attribute") else ""
    if type(f) in _COMPARISONS:
        return Predicate(_COMPARISONS[type(f)], term, f.value) if f.value is not None else None
    if isinstance(f, EqualNullSafe):
        return Predicate("is_null", term) if f.value is None else Predicate("eq", term, f.value)
    if isinstance(f, In):
        values = [v for v in f.value if v is not None]
        return Predicate("in", term, values) if values else None
    if isinstance(f, IsNull):
        return Predicate("is_null", term)
    if isinstance(f, IsNotNull):
        return Predicate("not_null", term)
    if isinstance(f, StringStartsWith):
        return Predicate("starts_with", term, f.value)
    if isinstance(f, Not):
        child = filter_expression(f.child)
        return None if child is None else not_(child)
    return None


class SparkbergSource(DataSource):
    """Options: ``catalog-config-secret`` (JSON: the catalog's arguments), ``table`` (its identifier),
    ``schema-id`` (the schema the view shows), ``delete-cache-max-bytes`` (the session's delete cache bound when
    the view was made, 0 for none: :mod:`sparkberg.read.deletecache`), ``parallelism`` (the session's default
    parallelism, which sizes the splits)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        raise SparkbergError("the sparkberg data source is given its schema: use Catalog.register_views")

    def reader(self, schema: Any) -> DataSourceReader:
        return SparkbergReader(dict(self.options))


class SparkbergReader(DataSourceReader):
    """Plans when Spark asks for partitions (the table as it is then, pruned by the pushed filters); each
    partition is a list of scan tasks (:func:`split_tasks`)."""

    def __init__(self, options: dict[str, str]):
        self.options = options
        self.predicates: list[Expression] = []

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        for f in filters:
            e = filter_expression(f) if getattr(f, "attribute", None) != (PLANNED,) else None
            if e is not None:
                self.predicates.append(e)
            yield f  # (every filter is given back: Spark applies it to the rows, it only prunes files here)

    def partitions(self) -> Sequence[InputPartition]:
        config = json.loads(self.options[CONFIG_OPTION])
        table = catalog(None, config.pop("uri"), **config).load_table(self.options["table"])
        schema = table.metadata.schema(int(self.options["schema-id"]))
        bound = TRUE
        for e in self.predicates:
            try:
                bound = and_(bound, bind(e, schema))
            except SparkbergError:  # (a value that does not convert to the column's type: it prunes nothing)
                continue
        with table._running("DATA-PLANNING"):
            scan = plan(None, table.metadata, table.io, table.current_snapshot(), bound, "local", table.name)
            tasks = scan.rows()
        reader = TaskReader(table.metadata, schema, table.io)
        reader.check(tasks)
        identity = identity_values(table.metadata, schema, tasks, scan.layout)
        # (what partitions() sets on self does not reach read(): each partition carries its reader)
        groups = split_tasks(tasks, int(self.options.get("parallelism", "1")))
        return [InputPartition((reader, group, {t["file_path"]: identity[t["file_path"]] for t in group
                                                 if t["file_path"] in identity})) for group in groups]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        reader, tasks, identity = partition.value
        bound = int(self.options.get("delete-cache-max-bytes", "0"))
        for batch in reader.read(tasks, DeleteCache(bound) if bound > 0 else None, identity):
            planned = from_bools(np.ones(batch.num_rows, bool))
            yield pa.RecordBatch.from_arrays([*batch.columns, planned], names=[*batch.schema.names, PLANNED])
