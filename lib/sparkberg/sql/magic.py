"""``%%sparkberg``: an IPython cell magic that runs the cell's statements with :func:`sparkberg.sql` and shows the
last one's rows as Spark shows them.

    %load_ext sparkberg
    %%sparkberg --catalog cat
    MERGE INTO db.events t USING updates s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *;
    SELECT * FROM db.events VERSION AS OF 4348509931264519463 LIMIT 10

Options: ``--catalog`` a variable of the notebook holding a :class:`~sparkberg.Catalog`, or what
:func:`sparkberg.catalog` opens (a catalog name configured by ``spark.sql.catalog.<name>.*``, a warehouse, a
database URI); default ``spark.sql.defaultCatalog``. ``--spark`` the variable holding the session (default: the
active one, else ``spark``). ``--limit N`` rows shown (default 20). ``--out NAME`` also binds the result's
DataFrame to that variable.
"""
from __future__ import annotations

import argparse
import shlex
from typing import Any

from pyspark.sql import SparkSession

from sparkberg.errors import ValidationError
from sparkberg.sql import sql
from sparkberg.table import Catalog, catalog as open_catalog

_PARSER = argparse.ArgumentParser(prog="%%sparkberg", add_help=False)
_PARSER.add_argument("--catalog")
_PARSER.add_argument("--spark")
_PARSER.add_argument("--limit", type=int, default=20)
_PARSER.add_argument("--out")
_PARSER.add_argument("--truncate", action="store_true", help="shorten long values as df.show() does")


def run_cell(line: str, cell: str, namespace: dict[str, Any]) -> Any:
    """Run the cell's statements with the options of ``line``, variables looked up in ``namespace``; show the
    result and return its DataFrame (None when the last statement returns no rows)."""
    try:
        opts = _PARSER.parse_args(shlex.split(line))
    except SystemExit:
        raise ValidationError(f"%%sparkberg {line!r}: options are --catalog, --spark, --limit N, --out "
                                        "NAME, --truncate") from None
    spark = namespace[opts.spark] if opts.spark else (SparkSession.getActiveSession() or namespace.get("spark"))
    if spark is None:
        raise ValidationError("%%sparkberg needs a SparkSession: start one, or name it with --spark")
    catalog = None
    if opts.catalog:
        given = namespace.get(opts.catalog)
        catalog = given if isinstance(given, Catalog) else open_catalog(spark, opts.catalog)
    result = sql(spark, cell, catalog=catalog)
    if opts.out:
        namespace[opts.out] = result
    if result is not None and result.columns and opts.limit > 0:
        result.show(opts.limit, truncate=opts.truncate)
    return None


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%%sparkberg`` (``%load_ext sparkberg`` or ``%load_ext sparkberg.sql.magic``)."""
    def sparkberg_magic(line: str, cell: str) -> None:
        run_cell(line, cell, ipython.user_ns)
    ipython.register_magic_function(sparkberg_magic, magic_kind="cell", magic_name="sparkberg")
