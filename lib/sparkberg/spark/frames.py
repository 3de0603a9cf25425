"""DataFrames made on the driver (from Arrow tables and rows), collected to Arrow, counted without a job (and
made in the JVM only when used for more than their count), mapped by a Python function of Arrow batches, and a
one-value DataFrame as a scalar subquery Column: each the fastest way the session's PySpark offers."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from sparkberg.spark.executors import check_workers
from sparkberg.spark.jvm import arrow_dataframe_35, map_in_arrow_classic, scalar_subquery_35
from sparkberg.spark.session import is_classic, spark_version
from sparkberg.spark.types import arrow_schema, parse_ddl
from sparkberg import state

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

def collect_arrow(df, schema):
    """The rows of a small DataFrame on the driver as an Arrow table of ``schema`` (a ``pyarrow.Schema`` with
    the DataFrame's column names): through Arrow where the session offers it (PySpark 4's ``toArrow``, a classic
    3.5 session's Arrow collect), else row by row."""
    import pyarrow as pa
    from sparkberg.arrays import batch_of_rows, empty_table  # (put off, as this module puts off pyarrow)
    try:
        if hasattr(df, "toArrow"):
            return df.toArrow().cast(schema)
        if hasattr(df, "_collect_as_arrow"):
            batches = df._collect_as_arrow()
            return pa.Table.from_batches(batches).cast(schema) if batches else empty_table(schema)
    except (pa.ArrowException, TypeError, ValueError, NotImplementedError):
        pass  # a type this path does not convert: the rows
    return pa.Table.from_batches([batch_of_rows([r.asDict(recursive=True) for r in df.collect()], schema)])


def arrow_dataframe(spark, table: pa.Table, ddl: str | StructType, rows: Callable[[], list] | None = None) -> DataFrame:
    """An Arrow table built on the driver as a DataFrame of ``ddl`` (DDL or a StructType): the table itself
    where PySpark takes one (4.x; several times faster than row by row), on a classic PySpark 3.5 session its
    Arrow batches, else its rows (``rows()`` when given: dicts or tuples built for this schema, so unverified)."""
    import pyarrow as pa
    import pyspark
    # (one chunk: PySpark 4.3 returned no rows for a table concatenated from empty and non-empty tables, and
    # fails on a nested column of no chunk, which an empty table can have)
    table = table.combine_chunks() if table.num_rows else \
        pa.Table.from_arrays([pa.array([], f.type) for f in table.schema], schema=table.schema)
    if int(pyspark.__version__.split(".")[0]) >= 4:
        return spark.createDataFrame(table, ddl)
    df = arrow_dataframe_35(spark, table, ddl)
    if df is not None:
        return df
    # (PySpark's per-value verification would double the cost)
    return spark.createDataFrame(rows() if rows is not None else table.to_pylist(), ddl, verifySchema=False)


def local_dataframe(spark, rows: Sequence[Sequence[Any]], schema: str | StructType) -> DataFrame:
    """Rows made on the driver (tuples, in the columns' order; timestamps as zone-aware datetimes, which Arrow
    takes as UTC when naive, or as ints of microseconds) as a DataFrame of ``schema`` (DDL or a StructType),
    through Arrow (:func:`arrow_dataframe`): Spark holds them as a local relation, which it reads and broadcasts on
    the driver. PySpark's ``createDataFrame`` of Python rows pickles them into an RDD instead, which a Python
    worker unpickles in a Spark job each time the DataFrame is read."""
    import pyarrow as pa
    from sparkberg.arrays import from_python  # (it imports pyarrow: put off, as this module puts off its own)

    struct = parse_ddl(spark, schema) if isinstance(schema, str) else schema
    arrow = arrow_schema(struct)
    columns = list(zip(*rows)) if rows else [() for _ in arrow]
    table = pa.Table.from_arrays([from_python(c, f.type) for c, f in zip(columns, arrow)], schema=arrow)
    return arrow_dataframe(spark, table, struct)


_COUNTED: dict[type, type] = {}
_DEFERRED: dict[type, type] = {}
_MADE = threading.RLock()  # (a DataFrame made from deferred ones makes them inside)


def map_in_arrow(df: DataFrame, func: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
                 schema: str | StructType) -> DataFrame:
    """``df.mapInArrow(func, schema)``: ``func`` maps each task's Arrow batches to batches of ``schema``. Every
    Python stage of sparkberg is made here, on a classic session without importing pandas into the driver
    (:func:`~sparkberg.spark.jvm.map_in_arrow_classic`): PySpark's own ``mapInArrow`` imports it, which the
    first Python stage of a fresh process, a scheduled job's, pays for. A session whose workers cannot import
    sparkberg is told so before the stage runs (:func:`~sparkberg.spark.executors.check_workers`)."""
    check_workers(df.sparkSession)
    mapped = map_in_arrow_classic(df, func, schema)
    return df.mapInArrow(func, schema) if mapped is None else mapped


def with_known_count(df: DataFrame, rows: int, on_driver: bool = False) -> DataFrame:
    """``df``, made on the driver from ``rows`` rows it holds (a plan's tasks), with a ``count()`` that answers
    from them instead of running a Spark job to count what the driver already knows (a job costs more than the
    plan). Every other call, and every DataFrame derived from it, is Spark's own. ``on_driver``: its rows are a
    local relation (:func:`made_on_driver`)."""
    base = type(df)
    cls = _COUNTED.get(base)
    if cls is None:
        cls = _COUNTED.setdefault(base, type(base.__name__, (base,), {"count": _known_count,
                                                                     "__module__": base.__module__}))
    try:
        df.__class__ = cls
        df._sparkberg_rows, df._sparkberg_on_driver = rows, on_driver
    except TypeError:  # a DataFrame class that does not allow it: Spark counts
        pass
    return df


def counted_dataframe(spark, make: Callable[[], DataFrame], rows: int, on_driver: bool = False) -> DataFrame:
    """The DataFrame ``make()`` returns (made on the driver from ``rows`` rows it holds: a plan's tasks), counted
    as :func:`with_known_count` counts, and on a classic session made only when first used for more than its
    count: the JVM's analysis of a new DataFrame costs a classic session more than a selective plan (Spark
    Connect makes its DataFrames on the client, and analyses them when they run). Until then it is an instance
    of the session's DataFrame class with none of its state; the first attribute it lacks makes the DataFrame
    and takes on its state, so every other call, and every DataFrame derived from it, is Spark's own.
    ``on_driver``: ``make()`` is a local relation of those rows (:func:`made_on_driver`)."""
    base = _classic_dataframe_class(spark)
    if base is None:
        return with_known_count(make(), rows, on_driver)
    cls = _DEFERRED.get(base)
    if cls is None:
        cls = _DEFERRED.setdefault(base, type(base.__name__, (base,), {
            "count": _known_count, "__getattr__": _made_on_use, "__module__": base.__module__}))
    df = object.__new__(cls)
    df.__dict__.update(_sparkberg_make=make, _sparkberg_rows=rows, _sparkberg_on_driver=on_driver)
    return df


def made_on_driver(df: DataFrame) -> bool:
    """Whether ``df`` is a local relation of rows made on the driver (:func:`counted_dataframe` was told so).
    Spark plans such a relation as a scan of unknown partitioning, so a query that brings its rows together
    (an aggregate, DISTINCT, ORDER BY, a window) shuffles them across two stages, where the single task of
    ``df.coalesce(1)`` needs none; while a plain ``collect`` of the relation itself runs no job at all, which
    ``coalesce(1)`` would cost one. So it is the query that chooses (:func:`~sparkberg.sql.names.read`)."""
    return bool(df.__dict__.get("_sparkberg_on_driver"))


def known_count(df: DataFrame) -> int | None:
    """How many rows ``df`` has when that is known without a Spark job (:func:`with_known_count`,
    :func:`counted_dataframe`), else None."""
    return df.__dict__.get("_sparkberg_rows")


def _known_count(self) -> int:
    """The number of rows in this DataFrame (known when it was made: no Spark job)."""
    return self._sparkberg_rows


def _made_on_use(self, name: str) -> Any:
    """An attribute of a deferred DataFrame (:func:`counted_dataframe`) that its instance lacks: the DataFrame is
    made first (once, whichever thread asks), then the attribute is looked up again, as a column's name where it
    is not the DataFrame's own (PySpark's ``df.column``)."""
    if "_sparkberg_make" in self.__dict__ and not name.startswith("__"):
        with _MADE:
            make = self.__dict__.get("_sparkberg_make")
            if make is not None:
                try:
                    made = make()
                except AttributeError as e:  # (not to be taken for a missing attribute)
                    raise RuntimeError(f"could not make the DataFrame: {e}") from e
                for k, v in made.__dict__.items():  # (what was set on this one before stands)
                    self.__dict__.setdefault(k, v)
                del self.__dict__["_sparkberg_make"]
        return getattr(self, name)
    return super(type(self), self).__getattr__(name)


def _classic_dataframe_class(spark) -> type | None:
    """The DataFrame class of a classic session (PySpark 3.5's or 4's), None for Spark Connect's."""
    if not is_classic(spark):
        return None
    try:
        from pyspark.sql.classic.dataframe import DataFrame as Classic  # PySpark 4
    except ImportError:
        from pyspark.sql.dataframe import DataFrame as Classic  # PySpark 3.5
    return Classic


def scalar_of(one: DataFrame) -> Column | None:
    """The value of a one-row, one-column DataFrame as a scalar subquery Column: ``DataFrame.scalar()`` on Spark
    4 (classic or Spark Connect); on a classic Spark 3.5 session, whose PySpark lacks it, the same expression
    built in the JVM over the DataFrame's plan; None otherwise (Spark 3.5 over Spark Connect, or internals that
    moved). Spark runs the subquery once per query and its value reaches the executors as a reference of the
    generated code, not as code: queries that differ only in the value share their compiled classes (a literal
    of a primitive type, or anything constant folding turns into one, is written into the code)."""
    from pyspark.sql import DataFrame as AnyDataFrame
    if hasattr(AnyDataFrame, "scalar") and spark_version(one.sparkSession) >= (4, 0):
        return one.scalar()
    return scalar_subquery_35(one)


state.register("sparkberg.spark.frames._COUNTED", "one class per DataFrame class (two)", _COUNTED.clear)
state.register("sparkberg.spark.frames._DEFERRED", "one class per classic DataFrame class (one)", _DEFERRED.clear)
