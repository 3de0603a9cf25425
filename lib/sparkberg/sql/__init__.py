"""The SQL layer, above the table API: Iceberg's Spark SQL statements (``sparkberg.sql(spark, text)``,
:mod:`sparkberg.sql.statements`), temporary views over tables and their metadata tables
(:mod:`sparkberg.sql.views`), the Python data source those views read through on Spark 4.1+
(:mod:`sparkberg.sql.source`), and Structured Streaming into and out of tables (:mod:`sparkberg.sql.streaming`).

``sparkberg.sql`` is both this package and the function that runs statements: the module is callable
(:class:`_CallableModule`), so ``sparkberg.sql(spark, "MERGE INTO ...")`` and ``import sparkberg.sql.views`` both
hold.

The table API reaches this layer only through what it registers here (:func:`sparkberg.table.use_sql_layer`):
``Table.register_views``, ``Catalog.register_views``, a session's views following the commits its tables
make, ``Table.write_stream`` and ``Table.read_stream``.
"""
import sys as _sys
import types as _types
from typing import Any as _Any

from sparkberg.table import Catalog as _Catalog, use_sql_layer as _use_sql_layer


class _Layer:
    """What this layer does for the table API (:class:`sparkberg.table.SqlLayer`). Its modules are imported on
    first use: a job that loads a table and never names it in SQL or streams it imports none of them."""

    @staticmethod
    def register_table_views(*args: _Any, **kwargs: _Any) -> _Any:
        from sparkberg.sql import views  # (on first use: a job that names no table in SQL does without it)
        return views.register_table_views(*args, **kwargs)

    @staticmethod
    def register_catalog_views(*args: _Any, **kwargs: _Any) -> _Any:
        from sparkberg.sql import views  # (on first use: a job that names no table in SQL does without it)
        return views.register_catalog_views(*args, **kwargs)

    @staticmethod
    def table_committed(*args: _Any, **kwargs: _Any) -> _Any:
        from sparkberg.sql import views  # (on first use: a job that names no table in SQL does without it)
        return views.table_committed(*args, **kwargs)

    @staticmethod
    def write_stream(*args: _Any, **kwargs: _Any) -> _Any:
        from sparkberg.sql import streaming  # (on first use: most jobs stream nothing)
        return streaming.write_stream(*args, **kwargs)

    @staticmethod
    def read_stream(*args: _Any, **kwargs: _Any) -> _Any:
        from sparkberg.sql import streaming  # (on first use: most jobs stream nothing)
        return streaming.read_stream(*args, **kwargs)

    @staticmethod
    def view_frame(view: _Any) -> _Any:
        from sparkberg.sql import names  # (with the parser: imported by the first view read, not by every job)
        return names.view_frame(names.Names(view.catalog.spark, view.catalog), view)

    @staticmethod
    def query_schema(catalog: _Catalog, query: str, view: _Any) -> _Any:
        from sparkberg.sql import names  # (with the parser: imported by the first view made, not by every job)
        return names.query_schema(names.Names(catalog.spark, catalog), query, view.namespace, str(view))


_use_sql_layer(_Layer())


def sql(spark: _Any, text: str, catalog: _Catalog | None = None) -> _Any:
    """Run Iceberg's Spark SQL statements without an Iceberg jar: ``text`` holds one statement or several
    separated by ``;``; the last one's result is returned as a DataFrame (empty for statements without rows).

    DDL (``CREATE TABLE ... USING iceberg PARTITIONED BY``, CTAS, ``REPLACE TABLE``, ``DROP TABLE``, every
    ``ALTER TABLE``, Iceberg's partition-field, write-order, identifier-field, branch and tag statements), writes
    (``INSERT INTO``/``OVERWRITE``, ``DELETE FROM``, ``UPDATE``, ``MERGE INTO``), queries over tables (time
    travel with ``VERSION AS OF`` / ``TIMESTAMP AS OF``, ``t.branch_b``, metadata tables such as ``t.snapshots``),
    ``CALL system.<procedure>(...)``, ``DESCRIBE`` and ``SHOW``. ``catalog`` is where ``ns.t`` and
    ``<its name>.ns.t`` resolve; without it, the catalog ``spark.sql.defaultCatalog`` names, as configured by
    ``spark.sql.catalog.<name>.*``. Statements that name no sparkberg table go to ``spark.sql`` unchanged. See
    :mod:`sparkberg.sql.statements`."""
    from sparkberg.sql import statements  # (with the parser, ~0.1 s: imported by the first statement, not by every job)
    return statements.run(spark, text, catalog)


class _CallableModule(_types.ModuleType):
    """This package, callable as :func:`sql`."""

    def __call__(self, spark: _Any, text: str, catalog: _Catalog | None = None) -> _Any:
        return sql(spark, text, catalog)


_sys.modules[__name__].__class__ = _CallableModule
