"""A SparkSession builder with the settings of the project's ``spark-defaults.conf``."""
from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterator, Sequence

from sparkberg.errors import MissingFileError
from sparkberg.lru import LRU
from sparkberg import state

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, DataFrameReader
    from pyspark.sql.types import StructType

DEFAULTS_FILE = "spark-defaults.conf"


def read_defaults(path: str) -> Iterator[tuple[str, str]]:
    """(key, value) pairs of a spark-defaults.conf file (whitespace separated, # comments)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 1)
            if len(parts) == 2:
                yield parts[0], parts[1].strip()


def session_builder(app_name: str = "sparkberg", master: str | None = None, defaults: str | None = None):
    """A SparkSession.Builder with the project's defaults applied (found next to the working directory
    or given by ``defaults`` / $SPARKBERG_SPARK_DEFAULTS)."""
    from pyspark.sql import SparkSession

    b = SparkSession.builder.appName(app_name)
    if master:
        b = b.master(master)
    path = defaults or os.environ.get("SPARKBERG_SPARK_DEFAULTS") or DEFAULTS_FILE
    if os.path.exists(path):
        for k, v in read_defaults(path):
            b = b.config(k, v)
    return b


def session_conf(spark, key: str, default: str | None = None) -> str | None:
    """A session setting, or ``default`` when it is unset or there is no session (metadata-only use)."""
    if spark is None:
        return default
    try:
        value = spark.conf.get(key, default)
    except Exception:  # noqa: BLE001 - a session that refuses the read: as if unset
        return default
    return default if value is None else value


_BYTE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
               "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50}


def _conf_bytes(spark, key: str, default: int) -> int:
    """A size setting of the session (Spark's ``134217728b``, ``4m``, ``1g``...) in bytes; ``default`` when unset
    or unreadable."""
    try:
        text = str(spark.conf.get(key)).strip().lower()
    except Exception:  # noqa: BLE001 - no session, or one that refuses the read: Spark's default
        return default
    m = re.fullmatch(r"(\d+)\s*([a-z]*)", text)
    return int(m.group(1)) * _BYTE_UNITS[m.group(2)] if m and m.group(2) in _BYTE_UNITS else default


def unsplit_file_bytes(spark) -> int:
    """The size up to which a file's rows are all read by one task of Spark's file scans: Spark cuts a file into
    splits of ``min(maxPartitionBytes, max(openCostInBytes, bytes per core))``, never less than the smaller of
    the two settings."""
    return min(_conf_bytes(spark, "spark.sql.files.maxPartitionBytes", 128 << 20),
               _conf_bytes(spark, "spark.sql.files.openCostInBytes", 4 << 20))


def session_time_zone(spark) -> str:
    """The session time zone Spark interprets zone-less timestamp literals in (UTC without a session)."""
    return session_conf(spark, "spark.sql.session.timeZone") or "UTC"


class job_description:
    """Label the Spark jobs run inside the block: the job description on a classic session (shown in the Spark
    UI), a job tag over Spark Connect (``spark.addTag``; shown with the jobs, usable to interrupt them)."""

    def __init__(self, spark: Any, label: str):
        self.spark = spark
        self.label = label
        self.sc = None
        self.tag = None

    def __enter__(self):
        try:
            from pyspark.sql import SparkSession as Classic
            if isinstance(self.spark, Classic):
                self.sc = self.spark.sparkContext
                self.previous = self.sc.getLocalProperty("spark.job.description")
                self.sc.setJobDescription(self.label)
            elif hasattr(self.spark, "addTag"):
                self.tag = re.sub(r"[^A-Za-z0-9_.:=-]+", "_", self.label)  # tags take no commas
                self.spark.addTag(self.tag)
        except Exception:  # noqa: BLE001 - a session that refuses labels still runs the jobs
            self.sc = self.tag = None
        return self

    def __exit__(self, *exc):
        if self.sc is not None:
            self.sc.setJobDescription(self.previous)
        elif self.tag is not None:
            try:
                self.spark.removeTag(self.tag)
            except Exception:  # noqa: BLE001
                pass
        return False


def collect_arrow(df, schema):
    """The rows of a small DataFrame on the driver as an Arrow table of ``schema`` (a ``pyarrow.Schema`` with
    the DataFrame's column names): through Arrow where the session offers it (PySpark 4's ``toArrow``, a classic
    3.5 session's Arrow collect), else row by row."""
    import pyarrow as pa
    try:
        if hasattr(df, "toArrow"):
            return df.toArrow().cast(schema)
        if hasattr(df, "_collect_as_arrow"):
            batches = df._collect_as_arrow()
            return pa.Table.from_batches(batches).cast(schema) if batches else schema.empty_table()
    except (pa.ArrowException, TypeError, ValueError, NotImplementedError):
        pass  # a type this path does not convert: the rows
    return pa.Table.from_pylist([r.asDict(recursive=True) for r in df.collect()], schema=schema)


def arrow_dataframe(spark, table: pa.Table, ddl: str | StructType, rows: Callable[[], list] | None = None) -> DataFrame:
    """An Arrow table built on the driver as a DataFrame of ``ddl`` (DDL or a StructType): the table itself
    where PySpark takes one (4.x; several times faster than row by row), on a classic PySpark 3.5 session its
    Arrow batches, else its rows (``rows()`` when given: dicts or tuples built for this schema, so unverified)."""
    import pyspark
    if int(pyspark.__version__.split(".")[0]) >= 4:
        # (one chunk: PySpark 4.3 returned no rows for a table concatenated from empty and non-empty tables)
        return spark.createDataFrame(table.combine_chunks(), ddl)
    if hasattr(spark, "_jsparkSession"):
        try:
            return arrow_dataframe_35(spark, table.combine_chunks(), ddl)
        except Exception:  # noqa: BLE001 - PySpark internals that moved: the rows
            pass
    # (PySpark's per-value verification would double the cost)
    return spark.createDataFrame(rows() if rows is not None else table.to_pylist(), ddl, verifySchema=False)


def local_dataframe(spark, rows: Sequence[Sequence[Any]], schema: str | StructType) -> DataFrame:
    """Rows made on the driver (tuples, in the columns' order; timestamps as zone-aware datetimes, which Arrow
    takes as UTC when naive) as a DataFrame of ``schema`` (DDL or a StructType), through Arrow
    (:func:`arrow_dataframe`): Spark holds them as a local relation, which it reads and broadcasts on the driver.
    PySpark's ``createDataFrame`` of Python rows pickles them into an RDD instead, which a Python worker unpickles
    in a Spark job each time the DataFrame is read."""
    import pyarrow as pa

    # (spark.types imports pyspark, which this module puts off until a session is used)
    from sparkberg.spark.types import arrow_schema, parse_ddl
    struct = parse_ddl(spark, schema) if isinstance(schema, str) else schema
    arrow = arrow_schema(struct)
    columns = list(zip(*rows)) if rows else [() for _ in arrow]
    table = pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(columns, arrow)], schema=arrow)
    return arrow_dataframe(spark, table, struct, rows=lambda: [tuple(r) for r in rows])


_COUNTED: dict[type, type] = {}


def with_known_count(df: DataFrame, rows: int) -> DataFrame:
    """``df``, made on the driver from ``rows`` rows it holds (a plan's tasks), with a ``count()`` that answers
    from them instead of running a Spark job to count what the driver already knows (a job costs more than the
    plan). Every other call, and every DataFrame derived from it, is Spark's own."""
    base = type(df)
    cls = _COUNTED.get(base)
    if cls is None:
        def count(self) -> int:
            return self._sparkberg_rows
        count.__doc__ = base.count.__doc__
        cls = _COUNTED.setdefault(base, type(base.__name__, (base,), {"count": count, "__module__": base.__module__}))
    try:
        df.__class__ = cls
        df._sparkberg_rows = rows
    except TypeError:  # a DataFrame class that does not allow it: Spark counts
        pass
    return df


def arrow_dataframe_35(spark, table: pa.Table, ddl: str | StructType) -> DataFrame:
    """A classic PySpark 3.5 DataFrame of an Arrow table's batches, sent to the JVM as PySpark 3.5 sends a pandas
    DataFrame's (its public API takes only pandas, which cannot hold nested columns), so Spark reads them
    without unpickling a row each. Spark 3.5 turns batches under
    ``spark.sql.execution.arrow.localRelationThreshold`` into a local relation, converting every row on the driver
    right away (most of the cost of the DataFrame); from :data:`LAZY_ROWS` rows on, the threshold is 0
    while the DataFrame is made, so the rows are converted when it is read (its count was faster too)."""
    from pyspark.sql import DataFrame as ClassicDataFrame
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer

    # (spark.types imports pyspark, which this module puts off until a session is used)
    from sparkberg.spark.types import parse_ddl
    struct = parse_ddl(spark, ddl) if isinstance(ddl, str) else ddl
    jvm = spark._jvm
    # (each batch is one partition of the lazy DataFrame: as many as a local relation is split into)
    per_batch = max(1, -(-table.num_rows // max(1, spark.sparkContext.defaultParallelism)))
    jrdd = spark.sparkContext._serialize_to_jvm(
        table.to_batches(max_chunksize=per_batch), ArrowStreamSerializer(),
        lambda path: jvm_static(jvm, _SQL_UTILS + "readArrowStreamFromFile")(path),
        lambda: jvm_static(jvm, "org.apache.spark.sql.api.python.ArrowIteratorServer")())
    with session_setting(spark, _LOCAL_RELATION_THRESHOLD, "0", table.num_rows >= LAZY_ROWS):
        jdf = jvm_static(jvm, _SQL_UTILS + "toDataFrame")(jrdd, struct.json(), spark._jsparkSession)
    return ClassicDataFrame(jdf, spark)


def scalar_of(one: DataFrame) -> Column | None:
    """The value of a one-row, one-column DataFrame as a scalar subquery Column: ``DataFrame.scalar()`` on Spark
    4 (classic or Spark Connect); on a classic Spark 3.5 session, whose PySpark lacks it, the same expression
    built in the JVM over the DataFrame's plan; None otherwise (Spark 3.5 over Spark Connect, or internals that
    moved). Spark runs the subquery once per query and its value reaches the executors as a reference of the
    generated code, not as code: queries that differ only in the value share their compiled classes (a literal
    of a primitive type, or anything constant folding turns into one, is written into the code)."""
    from pyspark.sql import Column as AnyColumn
    from pyspark.sql import DataFrame as AnyDataFrame
    spark = one.sparkSession
    if hasattr(AnyDataFrame, "scalar") and spark_version(spark) >= (4, 0):
        return one.scalar()
    jdf = getattr(one, "_jdf", None)
    if jdf is None:
        return None
    try:
        jvm = spark._jvm
        expressions = "org.apache.spark.sql.catalyst.expressions."
        empty = jvm_static(jvm, "scala.collection.Seq.empty")
        none = jvm_static(jvm, "scala.Option.empty")()
        # (Spark 3.5's ScalarSubquery(plan, outerAttrs, exprId, joinCond, hint, mayHaveCountBug))
        subquery = jvm_static(jvm, expressions + "ScalarSubquery")(
            jdf.queryExecution().analyzed(), empty(), jvm_static(jvm, expressions + "NamedExpression.newExprId")(),
            empty(), none, none)
        return AnyColumn(jvm_static(jvm, "org.apache.spark.sql.Column")(subquery))
    except Exception:  # noqa: BLE001 - PySpark or Spark internals that moved: the caller's other way
        return None


_LOCAL_RELATION_THRESHOLD = "spark.sql.execution.arrow.localRelationThreshold"
_SQL_UTILS = "org.apache.spark.sql.api.python.PythonSQLUtils."
LAZY_ROWS = 1000  # rows of an Arrow table from which a classic 3.5 session gets them lazily (arrow_dataframe_35)


@contextlib.contextmanager
def session_setting(spark, key: str, value: str, when: bool = True):
    """The session setting ``key`` is ``value`` inside the block (when ``when``), as it was after."""
    if not when:
        yield
        return
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


# Iceberg stores dates and timestamps in the proleptic Gregorian calendar, and files of other engines carry no
# Spark calendar metadata, on which Spark's default rebase mode (EXCEPTION) refuses dates before 1582-10-15 and
# timestamps before 1900-01-01: every Parquet read says CORRECTED (read as stored), leaving the session as it is
PARQUET_READ_OPTIONS = {"datetimeRebaseMode": "CORRECTED", "int96RebaseMode": "CORRECTED"}

# from this many paths on, a classic session gets them in one call (each path is one py4j call otherwise)
_PATHS_IN_ONE_CALL = 16


def read_parquet(spark, schema: StructType, files: list[str]) -> DataFrame:
    """``spark.read.schema(schema).parquet(*files)``, for a session that reads the same files again and again.

    A classic session resolves a Parquet read's paths each time it builds one: it checks that each path
    exists (on a pool of 40 threads it starts for the purpose) and lists them: up to half of a table's
    ``to_df``. Data files never change once written, so the relation Spark resolved is kept
    (:class:`ParquetRelations`) and a read of the same files and schema wraps it in a new logical relation of
    its own, with new column ids, as Spark's session catalog does for the relations of its tables; a read of
    other files lists only those it has not listed before (:func:`_over_known_statuses`). Spark Connect resolves
    the paths on the server: left as it is."""
    relations = ParquetRelations.of(spark)
    key = (schema.json(), tuple(files))
    relation = relations.get(key) if relations is not None else None
    if relation is not None:
        try:
            return spark.read._df(spark._jsparkSession.baseRelationToDataFrame(relation))
        except Exception:  # noqa: BLE001 - PySpark internals that moved: resolved again
            pass
    with _listing_on_driver(spark, files):
        df = _over_known_statuses(spark, relations, schema, files) if relations is not None else None
        if df is None:
            try:
                df = _read_parquet_paths(spark.read.schema(schema).options(**PARQUET_READ_OPTIONS), files)
            except Exception as e:  # noqa: BLE001 - Spark's analysis error for a path that is gone, named as such
                m = re.search(r"PATH_NOT_FOUND\].*?: (\S+?)\.?(?:\s|$)", str(e))
                if m is None:
                    raise
                raise MissingFileError(f"file {m.group(1)} does not exist", m.group(1)) from None
    if relations is not None:
        try:
            relations.put(key, df._jdf.queryExecution().analyzed().relation(), len(files))
        except Exception:  # noqa: BLE001 - a plan of another shape: not kept
            pass
    return df


def _over_known_statuses(spark, relations: ParquetRelations, schema: StructType, files: list[str]
                         ) -> DataFrame | None:
    """The relation Spark's reader would resolve for ``files`` (a classic session), built over an index of
    them that takes each file's status from the session's :attr:`ParquetRelations.statuses` and lists only the
    files it lacks: a table read after a commit lists only the files the commit added. Spark's reader would check
    that each path exists and list each one again. None where the index lacks a file (Spark skips a listed root
    path that is gone: the reader then names it) or where Spark's classes differ from those this builds on."""
    try:
        jvm, js = spark._jvm, spark._jsparkSession
        sources = "org.apache.spark.sql.execution.datasources."
        statuses = relations.statuses(jvm, js)
        jschema = js.parseDataType(schema.json()).asNullable()  # (as the reader's relation: every column nullable)
        options = jvm_static(jvm, "org.apache.spark.api.python.PythonUtils.toScalaMap")(dict(PARQUET_READ_OPTIONS))
        none = jvm_static(jvm, "scala.Option.empty")()
        paths = jvm_static(jvm, "org.apache.hadoop.util.StringUtils.stringToPath")(_string_array(jvm, files))
        index = jvm_static(jvm, sources + "InMemoryFileIndex")(js, _array_seq(jvm, paths), options,
                                                              jvm_static(jvm, "scala.Option.apply")(jschema),
                                                              statuses, none, none)
        if index.leafFiles().size() != len(set(files)):  # (a protected member: its Scala name is public)
            return None
        relation = jvm_static(jvm, sources + "HadoopFsRelation")(
            index, index.partitionSchema(), jschema, none, jvm_static(jvm, sources + "parquet.ParquetFileFormat")(),
            options, js)
        return spark.read._df(js.baseRelationToDataFrame(relation))
    except Exception:  # noqa: BLE001 - Spark internals that moved (or a file that is not there): the reader
        return None


def _string_array(jvm, files: Sequence[str]):
    """``files`` as a Java ``String[]``, in two py4j calls whatever their number (they travel as one string)."""
    if not files or any("\n" in f or not f for f in files):
        raise ValueError("no paths, an empty one or one with a line break")
    return jvm_static(jvm, "java.util.regex.Pattern.compile")("\n").split("\n".join(files), -1)


def _array_seq(jvm, array):
    """A Scala ``Seq`` over a Java array, in one py4j call."""
    from py4j.java_gateway import JavaClass
    if isinstance(jvm_static(jvm, "scala.collection.immutable.ArraySeq"), JavaClass):  # (Scala 2.13: Spark 4)
        return jvm_static(jvm, "scala.collection.immutable.ArraySeq.unsafeWrapArray")(array)
    return jvm_static(jvm, "scala.collection.mutable.WrappedArray.make")(array)  # (Scala 2.12: Spark 3.5)


_jvm_handles: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # py4j gateway client -> {name: handle}


def jvm_static(jvm, name: str) -> Any:
    """py4j's handle on a JVM class (to call as its constructor; a ``JavaPackage`` where there is no such class) or
    on a static method, by its full name (``"scala.Option.empty"``), looked up once per gateway: each dotted step
    of ``jvm.scala.Option.empty`` is a py4j call of its own."""
    handles = _jvm_handles.setdefault(jvm._gateway_client, {})
    handle = handles.get(name)
    if handle is None:
        handle = handles[name] = functools.reduce(getattr, name.split("."), jvm)
    return handle


_per_session: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # (what a session keeps goes with it)
_per_session_lock = threading.Lock()


def per_session(spark, name: str, make: Callable[[], Any]) -> Any:
    """The object ``name`` that ``spark`` keeps for as long as it lives (``make()`` the first time); None for a
    session object that takes no weak reference."""
    try:
        with _per_session_lock:
            kept = _per_session.setdefault(spark, {})
            if name not in kept:
                kept[name] = make()
            return kept[name]
    except TypeError:
        return None


def spark_version(spark) -> tuple[int, int]:
    """(major, minor) of the Spark that runs the session's queries: the server's over Spark Connect (asked once
    per session), else PySpark's own."""
    import pyspark

    def ask() -> tuple[int, int]:
        try:
            return _major_minor(spark.version)
        except Exception:  # noqa: BLE001 - a session that cannot tell: the client's
            return _major_minor(pyspark.__version__)
    if spark is None:
        return _major_minor(pyspark.__version__)
    kept = per_session(spark, "spark version", ask)
    return kept if kept is not None else ask()


def _major_minor(text: str) -> tuple[int, int]:
    m = re.match(r"(\d+)(?:\.(\d+))?", text)
    if m is None:
        raise ValueError(f"not a Spark version: {text!r}")
    return int(m.group(1)), int(m.group(2) or 0)


class ParquetRelations:
    """The Parquet relations (JVM ``HadoopFsRelation`` objects, with the status of each file they list) that a
    classic session resolved, by schema and files: the most recently used, while they list at most
    :attr:`MAX_FILES` files in all and number at most :attr:`MAX_ENTRIES`."""

    MAX_FILES = 100_000
    MAX_ENTRIES = 64

    def __init__(self):
        self._kept = LRU()
        self._statuses = None

    def statuses(self, jvm, jsession) -> Any:
        """The session's client of Spark's file status cache (``FileStatusCache``, bounded by
        ``spark.sql.hive.filesourcePartitionFileCacheSize``, 250 MB by default, shared with Spark's own
        tables), that every relation this keeps lists its files into: data files never change once written."""
        if self._statuses is None:
            self._statuses = jvm_static(jvm, "org.apache.spark.sql.execution.datasources.FileStatusCache.getOrCreate")(
                jsession)
        return self._statuses

    @classmethod
    def of(cls, spark) -> ParquetRelations | None:
        """The relations of a classic session (None for other sessions: Spark Connect)."""
        if getattr(spark, "_jsparkSession", None) is None:
            return None
        return per_session(spark, "parquet relations", cls)

    def get(self, key: Hashable) -> Any:
        """The relation kept for ``key``, or None."""
        return self._kept.get(key)

    def put(self, key: Hashable, relation: Any, files: int) -> None:
        """Keep ``relation`` (listing ``files`` files), dropping the least recently used beyond the bounds."""
        if files <= self.MAX_FILES:
            self._kept.put(key, relation, files, self.MAX_FILES, self.MAX_ENTRIES)

    def __len__(self) -> int:
        return len(self._kept)


_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


@contextlib.contextmanager
def _listing_on_driver(spark, files: Sequence[str]):
    """Spark checks every path it is given, with a job of one task per path beyond 32 paths. For local files the
    driver does it in milliseconds, so, on a classic session, the threshold is raised while the DataFrame is
    created (Spark Connect analyses later, on the server: left as it is)."""
    local = all(f.startswith("/") or f.startswith("file:") for f in files)
    with session_setting(spark, _LISTING_THRESHOLD, str(len(files) + 1),
                         local and len(files) > 32 and hasattr(spark, "_jsparkSession")):
        yield


def _read_parquet_paths(reader: DataFrameReader, files: list[str]) -> DataFrame:
    """``reader.parquet(*files)``. A classic session's PySpark hands the JVM a list of paths one py4j call
    per path; here they travel as one string, split on the JVM side. Spark Connect sends the paths in
    the plan: left as it is."""
    jreader = getattr(reader, "_jreader", None)
    if jreader is not None and len(files) >= _PATHS_IN_ONE_CALL:
        try:
            jvm = reader._spark._jvm
            return reader._df(jreader.parquet(_array_seq(jvm, _string_array(jvm, files))))
        except Exception:  # noqa: BLE001 - internals that moved, or paths one string cannot carry: the public call
            pass
    return reader.parquet(*files)


@contextlib.contextmanager
def as_active(spark) -> Iterator[None]:
    """Within the block, ``spark`` is the JVM's active session (classic sessions; Spark Connect sets it for each
    request): what Spark resolves through the active session rather than the calling one, such as a Python data
    source's name, is then the session's own."""
    jvm = getattr(spark, "_jvm", None)
    own = getattr(spark, "_jsparkSession", None)
    if jvm is None or own is None:
        yield
        return
    from pyspark.sql import SparkSession  # (a classic session: PySpark's class knows the JVM's session class)
    sessions = SparkSession._get_j_spark_session_class(jvm)
    previous = sessions.getActiveSession()
    sessions.setActiveSession(own)
    try:
        yield
    finally:
        if previous.isDefined():
            sessions.setActiveSession(previous.get())
        else:
            sessions.clearActiveSession()


state.register("sparkberg.spark.session._COUNTED", "one class per DataFrame class (two)", _COUNTED.clear)
state.register("sparkberg.spark.session._jvm_handles", "per py4j gateway, gone with it", _jvm_handles.clear)
state.register("sparkberg.spark.session._per_session", "per Spark session, gone with it", _per_session.clear)
