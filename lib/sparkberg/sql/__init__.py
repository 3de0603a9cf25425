"""The SQL layer, above the table API: temporary views over tables and their metadata tables
(:mod:`sparkberg.sql.views`), the Python data source those views read through on Spark 4.1+
(:mod:`sparkberg.sql.source`), and Structured Streaming into and out of tables (:mod:`sparkberg.sql.streaming`).

The table API reaches this layer only through what it registers here (:func:`sparkberg.table.use_sql_layer`):
``Table.register_views``, ``Catalog.register_views``, a session's views following the commits its tables
make, ``Table.write_stream`` and ``Table.read_stream``.
"""
from sparkberg.sql import streaming as _streaming, views as _views
from sparkberg.table import use_sql_layer as _use_sql_layer


class _Layer:
    """What this layer does for the table API (:class:`sparkberg.table.SqlLayer`)."""

    register_table_views = staticmethod(_views.register_table_views)
    register_catalog_views = staticmethod(_views.register_catalog_views)
    table_committed = staticmethod(_views.table_committed)
    write_stream = staticmethod(_streaming.write_stream)
    read_stream = staticmethod(_streaming.read_stream)


_use_sql_layer(_Layer())
