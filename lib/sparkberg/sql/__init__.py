"""The SQL layer, above the table API: temporary views over tables and their metadata tables
(:mod:`sparkberg.sql.views`) and the Python data source those views read through on Spark 4.1+
(:mod:`sparkberg.sql.source`).

The table API reaches this layer only through what it registers here (:func:`sparkberg.table.use_sql_layer`):
``Table.register_views``, ``Catalog.register_views``, and a session's views following the commits its tables
make.
"""
from sparkberg.sql import views as _views
from sparkberg.table import use_sql_layer as _use_sql_layer

_use_sql_layer(_views)
