"""Spark SQL access without an Iceberg jar: temporary views over tables and their metadata tables.

``cat.register_views(spark)`` registers, for every table ``db.events`` of the catalog, a view ``events`` (the
table's rows) and ``events__<metadata table>`` for each of Iceberg's metadata tables (``events__snapshots``,
``events__files``...). Spark SQL names temporary views with one identifier, so Iceberg's ``events.snapshots``
becomes ``events__snapshots``: a double underscore, which no metadata table name contains, keeps the two
parts unambiguous and needs no quoting. With ``qualified=True`` the namespace is kept
(``db__events``, ``db__events__snapshots``) for catalogs with the same table name in several namespaces.

On Spark 4.1+ a table's view reads through the ``sparkberg`` data source (:mod:`sparkberg.sql.source`): each query
plans it again, with the query's filters, so it shows the table's current snapshot whoever committed it and a
``WHERE`` prunes files as ``Table.to_df(filter)`` does. On Spark 3.5 (and for a table loaded by path) the view
is a DataFrame over the snapshot current when it is registered (the files to read planned then, so a ``WHERE``
in SQL prunes none). Metadata table views are such DataFrames on every version.
Each session remembers the views it registered, by table location, and a commit made through sparkberg in that
session registers them again over the new snapshot (and schema), so the views show what the session wrote. A
commit made elsewhere (another session, process or engine) is seen by a 3.5 view, and by metadata table views,
after registering again.
"""
from __future__ import annotations

import warnings
from typing import Any, Sequence

from sparkberg.inspect import METADATA_TABLES
from sparkberg.spark.session import per_session, spark_version

SEPARATOR = "__"


def view_name(table_name: str, metadata_table: str | None = None, prefix: str = "") -> str:
    """The temporary view name for a table (and one of its metadata tables)."""
    base = f"{prefix}{table_name}"
    return base if metadata_table is None else f"{base}{SEPARATOR}{metadata_table}"


def register_table_views(table: Any, name: str | None = None, metadata_tables: Sequence[str] = METADATA_TABLES,
                         ) -> list[str]:
    """Register ``name`` (default: the table's name without namespace) and its metadata table views;
    returns the view names."""
    base = name or (table.identifier.name if table.identifier is not None else table.name.split(".")[-1])
    out = _register(table, base, metadata_tables)
    registered = _registered(table.spark)
    if registered is not None:
        for views in registered.values():  # (a name registered again no longer shows the table it showed)
            views.pop(base, None)
        registered.setdefault(table.location, {})[base] = tuple(metadata_tables)
    return out


def table_committed(table: Any) -> None:
    """Register again, over the table's current metadata, the views this session registered for the table (after
    each commit of a table of this process: :class:`~sparkberg.table.SqlLayer`)."""
    registered = _registered(table.spark) if table.spark is not None else None
    for base, metadata_tables in list((registered or {}).get(table.location, {}).items()):
        try:
            _register(table, base, metadata_tables)
        except Exception as e:  # noqa: BLE001 - the commit stands; the views keep the snapshot they showed
            warnings.warn(f"the SQL views {base} of table {table.name} still show its previous snapshot: {e}",
                          stacklevel=3)



def _register(table: Any, base: str, metadata_tables: Sequence[str]) -> list[str]:
    out = [base]
    _rows(table).createOrReplaceTempView(base)
    for mt in metadata_tables:
        v = view_name(base, mt)
        table.metadata_table(mt).createOrReplaceTempView(v)
        out.append(v)
    return out


def _rows(table: Any) -> Any:
    """The DataFrame a table's view shows: over the ``sparkberg`` data source where Spark hands it each query's
    filters (4.1+, a table of a catalog), else the rows of its current snapshot, planned now."""
    if table.catalog is not None and table.identifier is not None and _source_supported(table.spark):
        from sparkberg.sql.source import table_frame  # (imports pyspark.sql.datasource: PySpark 4 only)
        return table_frame(table)
    return table.to_df()


def _source_supported(spark: Any) -> bool:
    """Whether the session's Spark (the server's, over Connect) and PySpark both hand filters to Python data
    sources (4.1+)."""
    return spark_version(spark) >= (4, 1) and spark_version(None) >= (4, 1)  # (None: PySpark's own)


def _registered(spark: Any) -> dict[str, dict[str, tuple[str, ...]]] | None:
    """{table location: {view name: metadata tables}} of the views a session registered (None for a session that
    keeps nothing)."""
    return per_session(spark, "sparkberg views", dict)


def register_catalog_views(catalog: Any, namespace: str | Sequence[str] | None = None, qualified: bool = False,
                           metadata_tables: Sequence[str] = METADATA_TABLES) -> list[str]:
    """Register views for every table of ``namespace`` (every namespace when None); returns the view names."""
    namespaces = [tuple(namespace.split(".")) if isinstance(namespace, str) else tuple(namespace)] \
        if namespace is not None else all_namespaces(catalog)
    out = []
    for ns in namespaces:
        for full_name in catalog.list_tables(ns):
            t = catalog.load_table(full_name)
            base = SEPARATOR.join(ns + (t.identifier.name,)) if qualified else t.identifier.name
            out += register_table_views(t, base, metadata_tables)
    return out


def all_namespaces(catalog: Any) -> list[tuple[str, ...]]:
    """Every namespace of a catalog, nested ones included, parents first."""
    out, todo = [], list(catalog.list_namespaces())
    while todo:
        ns = todo.pop(0)
        out.append(tuple(ns))
        todo += [tuple(c) for c in catalog.list_namespaces(ns)]
    return out
