"""The one module that reaches into the JVM through py4j (classic sessions only), where PySpark's public API
lacks what sparkberg needs or costs a py4j call per item, and where PySpark 3.5's fallbacks are, named ``*_35``
(what 4.x gives through its API: an Arrow relation without pandas, a scalar subquery, the session's conf
entries): an array literal made from bytes in Spark's own layout, Arrow stages (``mapInArrow``) made without
importing pandas, Parquet reads whose resolved relations are kept, paths sent in one call, and the JVM's active
session. Every function here falls back to the public API (or returns None for its
caller's other way) where Spark's internals moved, and does nothing JVM-side on Spark Connect, which has no JVM
on the client.
"""
from __future__ import annotations

import contextlib
import functools
import re
import weakref
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterator, Sequence

from sparkberg.errors import MissingFileError, StorageError
from sparkberg.lru import LRU
from sparkberg.spark.session import is_classic, per_session, session_setting, spark_version
from sparkberg.spark.types import parse_ddl
from sparkberg import state

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, DataFrameReader
    from pyspark.sql.types import ArrayType, StructType

def arrow_dataframe_35(spark, table: pa.Table, ddl: str | StructType) -> DataFrame | None:
    """A classic PySpark 3.5 DataFrame of an Arrow table's batches (None for a session without a JVM, or where
    PySpark's internals moved), sent to the JVM as PySpark 3.5 sends a pandas
    DataFrame's (its public API takes only pandas, which cannot hold nested columns), so Spark reads them
    without unpickling a row each. Spark 3.5 turns batches under
    ``spark.sql.execution.arrow.localRelationThreshold`` into a local relation, converting every row on the driver
    right away (most of the cost of the DataFrame); from :data:`LAZY_ROWS` rows on, the threshold is 0
    while the DataFrame is made, so the rows are converted when it is read (its count was faster too)."""
    if not is_classic(spark):
        return None
    try:
        return _arrow_dataframe_35(spark, table, ddl)
    except Exception:  # noqa: BLE001 - PySpark internals that moved: the caller's other way
        return None


def _arrow_dataframe_35(spark, table: pa.Table, ddl: str | StructType) -> DataFrame:
    from pyspark.sql import DataFrame as ClassicDataFrame
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer

    struct = parse_ddl(spark, ddl) if isinstance(ddl, str) else ddl
    jvm = spark._jvm
    lazy = table.num_rows >= LAZY_ROWS
    # (each batch is one partition of the lazy DataFrame: as many as a local relation is split into. A local
    # relation takes them all at once: one batch, and no call into the JVM for the parallelism)
    per_batch = max(1, -(-table.num_rows // max(1, spark.sparkContext.defaultParallelism)) if lazy else table.num_rows)
    jrdd = spark.sparkContext._serialize_to_jvm(
        table.to_batches(max_chunksize=per_batch), ArrowStreamSerializer(),
        lambda path: jvm_static(jvm, _SQL_UTILS + "readArrowStreamFromFile")(path),
        lambda: jvm_static(jvm, "org.apache.spark.sql.api.python.ArrowIteratorServer")())
    with session_setting(spark, _LOCAL_RELATION_THRESHOLD, "0", lazy):
        jdf = jvm_static(jvm, _SQL_UTILS + "toDataFrame")(jrdd, struct.json(), spark._jsparkSession)
    return ClassicDataFrame(jdf, spark)


def _header(n: int) -> int:
    """The longs that open an ``UnsafeArrayData`` of ``n`` elements: its count, then a bit per element."""
    return 1 + (n + 63) // 64


def long_array_layout(values: Any) -> bytes:
    """An ``array<bigint>`` value (``values``: a numpy int64 array, no nulls) in the layout of Spark's
    ``UnsafeArrayData``: the element count (a long), a bit per element (set where it is null) in as many longs
    as that takes, then the elements. Little-endian, as Spark reads its memory on a little-endian JVM (the only
    kind :func:`array_literal` hands it to)."""
    import numpy as np
    out = np.zeros(_header(len(values)) + len(values), np.int64)
    out[0] = len(values)
    out[_header(len(values)):] = values
    return out.astype("<i8").tobytes()


def long_arrays_layout(arrays: Sequence[Any]) -> bytes:
    """An ``array<array<bigint>>`` value, its elements ``arrays`` (numpy int64 arrays, or None for a null
    element), in the layout of Spark's ``UnsafeArrayData``: the element count and null bits, a long per element,
    the offset from the value's start and the size in bytes of its array (offset << 32 | size), then each array
    as :func:`long_array_layout` lays it out."""
    import numpy as np
    n = len(arrays)
    sizes = [0 if a is None else _header(len(a)) + len(a) for a in arrays]
    out = np.zeros(_header(n) + n + sum(sizes), np.int64)
    out[0] = n
    nulls = np.zeros((_header(n) - 1) * 8, np.uint8)
    at = _header(n) + n  # (where the next element's array goes, in longs from the value's start)
    for i, (a, size) in enumerate(zip(arrays, sizes)):
        if a is None:
            nulls[i >> 3] |= 1 << (i & 7)
            continue
        out[_header(n) + i] = (at * 8) << 32 | size * 8
        out[at] = len(a)
        out[at + _header(len(a)):at + size] = a
        at += size
    out[1:_header(n)] = nulls.view(np.int64)
    return out.astype("<i8").tobytes()


def array_literal(spark, data: bytes, kind: ArrayType) -> Column | None:
    """A literal of array type ``kind`` made in the JVM from ``data``, the value's bytes in Spark's own layout
    (:func:`long_array_layout`, :func:`long_arrays_layout`): no relation and no conversion of its elements, where
    a one-row relation from Arrow has the JVM read and convert every element, and a scalar subquery of it makes
    each query plan and run one more query (in a fresh process, a scheduled job's, its first of each). Spark's
    generated code refers to the value rather than writing it in. Classic sessions only: None over Spark
    Connect, on a JVM that is not little-endian, or where Spark's internals moved."""
    if not is_classic(spark):
        return None
    try:
        from pyspark.sql import Column as AnyColumn
        jvm = spark._jvm
        if str(jvm_static(jvm, "java.nio.ByteOrder.nativeOrder")().toString()) != "LITTLE_ENDIAN":
            return None
        value = jvm_static(jvm, "org.apache.spark.sql.catalyst.expressions.UnsafeArrayData")()
        value.pointTo(bytearray(data), jvm_static(jvm, "org.apache.spark.unsafe.Platform").BYTE_ARRAY_OFFSET,
                      len(data))
        literal = jvm_static(jvm, "org.apache.spark.sql.catalyst.expressions.Literal")(
            value, spark._jsparkSession.parseDataType(kind.json()))
        if spark_version(spark) >= (4, 0):
            return AnyColumn(jvm_static(jvm, "org.apache.spark.sql.classic.ExpressionUtils.column")(literal))
        return AnyColumn(jvm_static(jvm, "org.apache.spark.sql.Column")(literal))
    except Exception:  # noqa: BLE001 - Spark or PySpark internals that moved: the caller's other way
        return None


_LOCAL_RELATION_THRESHOLD = "spark.sql.execution.arrow.localRelationThreshold"
_SQL_UTILS = "org.apache.spark.sql.api.python.PythonSQLUtils."
LAZY_ROWS = 1000  # rows of an Arrow table from which a classic 3.5 session gets them lazily (arrow_dataframe_35)


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
                if m is not None:
                    raise MissingFileError(f"file {m.group(1)} does not exist", m.group(1)) from None
                m = re.search(r'No FileSystem for scheme "?(\w+)', str(e))
                if m is not None:  # (spark.sparkberg.read.spark-file-systems names a scheme this Spark lacks)
                    raise StorageError(f"Spark has no Hadoop file system for scheme {m.group(1)!r} (reading "
                                       f"{files[0]}): remove it from spark.sparkberg.read.spark-file-systems, and "
                                       f"sparkberg reads those files itself") from None
                raise
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
        if not is_classic(spark):
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
                         local and len(files) > 32 and is_classic(spark)):
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


def scalar_subquery_35(one: DataFrame) -> Column | None:
    """On a classic Spark 3.5 session, whose PySpark lacks ``DataFrame.scalar()``, the value of a one-row,
    one-column DataFrame as the scalar subquery Column Spark 4's would be, built in the JVM over the DataFrame's
    plan; None elsewhere (Spark Connect) or where Spark's internals moved."""
    from pyspark.sql import Column as AnyColumn
    jdf = getattr(one, "_jdf", None)
    if jdf is None or spark_version(one.sparkSession) >= (4, 0):
        return None
    try:
        jvm = one.sparkSession._jvm
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


@functools.lru_cache(maxsize=1)
def _map_function() -> type:
    """PySpark's ``UserDefinedFunction`` whose return type is taken as given: its own checks that a map stage's
    type maps to Arrow through ``to_arrow_type``, which on PySpark 3.5 imports setuptools' ``distutils`` into the
    driver (a fresh process's cost). sparkberg's stages return only types Arrow takes; one it did not would fail
    in the stage itself, whose worker maps the type again."""
    from pyspark.sql.types import DataType, _parse_datatype_string
    from pyspark.sql.udf import UserDefinedFunction

    class MapFunction(UserDefinedFunction):
        @property
        def returnType(self) -> DataType:
            if self._returnType_placeholder is None:
                given = self._returnType
                self._returnType_placeholder = given if isinstance(given, DataType) else _parse_datatype_string(given)
            return self._returnType_placeholder
    return MapFunction


def map_in_arrow_classic(df: DataFrame, func: Callable, schema: str | StructType) -> DataFrame | None:
    """On a classic session, ``df.mapInArrow(func, schema)`` built as PySpark's ``mapInArrow`` builds it, less its
    checks: that pandas is installed (PySpark makes the stage through ``pandas_udf``, whose check imports pandas
    into the driver; no Arrow function uses it), and that the schema maps to Arrow types (:func:`_map_function`);
    None over Spark Connect or where PySpark's internals moved."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return None
    try:
        from pyspark.rdd import PythonEvalType
        from pyspark.sql import DataFrame as ClassicDataFrame

        function = _map_function()(func, returnType=schema, evalType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)
        column = function._wrapped()(*[df[c] for c in df.columns])
        if spark_version(df.sparkSession) >= (4, 0):  # (Dataset.mapInArrow(column, barrier, resource profile))
            mapped = jdf.mapInArrow(column._jc, False, None)
        else:  # (Dataset.pythonMapInArrow(expression, barrier))
            mapped = jdf.pythonMapInArrow(column._jc.expr(), False)
        # (the class PySpark's mapInArrow makes, not ``df``'s: a plan's DataFrame answers count() from its plan)
        return ClassicDataFrame(mapped, df.sparkSession)
    except Exception:  # noqa: BLE001 - PySpark or Spark internals that moved: the caller's other way
        return None


state.register("sparkberg.spark.jvm._jvm_handles", "per py4j gateway, gone with it", _jvm_handles.clear)
state.register("sparkberg.spark.jvm._map_function", "one (a class)", _map_function.cache_clear)


def session_conf_entries_35(spark, prefix: str) -> list[tuple[str, str]]:
    """The entries of a PySpark 3.5 session's SQL conf (at least those under ``prefix``), keys set at runtime
    included, which its ``spark.conf`` cannot list (it has no ``getAll``): a classic session's through the JVM;
    over Spark Connect the keys ``SET`` lists, their values asked one by one (``SET`` shows secrets masked)."""
    session = getattr(spark, "_jsparkSession", None)
    if session is not None:
        entries = spark._jvm.scala.collection.JavaConverters.mapAsJavaMapConverter(session.conf().getAll()).asJava()
        return [(str(k), str(entries[k])) for k in entries.keySet()]
    keys = [row[0] for row in spark.sql("SET").collect() if str(row[0]).startswith(prefix)]
    return [(k, spark.conf.get(k)) for k in keys]


class _NotMade:
    """What a classic session's SQL conf will be made from while Spark has not made it yet (its fields read through
    Java reflection: Spark offers no way to ask without making it)."""

    def __init__(self, jvm, jsession):
        cls = jsession.getClass()
        try:  # (Spark 4's RuntimeConfig reads the session's own ``sqlConf``; Spark 3.5's, ``sessionState.conf``)
            self._conf = self._field(cls, "sqlConf")
        except Exception:  # noqa: BLE001 - no such field: Spark 3.5
            self._conf = self._field(cls, "sessionState")
        self._session = jsession
        self._static = jvm_static(jvm, "org.apache.spark.sql.internal.SQLConf.isStaticConfigKey")
        # (a cloned session's conf is a copy of its parent's: as if made)
        self.made = bool(jsession.parentSessionState().isDefined())

    @classmethod
    def of(cls, jvm, jsession) -> _NotMade | None:
        """The reader of ``jsession``'s fields, or None where they moved (each read then takes the other way)."""
        try:
            return cls(jvm, jsession)
        except Exception:  # noqa: BLE001 - Spark's internals that moved
            return None

    @staticmethod
    def _field(cls, name: str) -> Any:
        field = cls.getDeclaredField(name)
        field.setAccessible(True)
        return field

    def get(self, key: str) -> tuple[bool, str | None]:
        """(True, the value ``key`` will have in the conf, None when unset) while the conf is not made and ``key``
        is not a static SQL setting; else (False, None): read the conf."""
        session = self._session
        if not self.made and self._conf.get(session) is not None:
            self.made = True
        if self.made or key.startswith("spark.sql.") and self._static(key):
            return False, None
        option = session.initialSessionOptions().get(key)
        if option.isDefined():
            return True, str(option.get())
        value = session.sparkContext().conf().get(key, None)
        return True, None if value is None else str(value)


def sql_conf_before_made(spark, key: str) -> tuple[bool, str | None]:
    """A classic session's setting ``key`` read without making the session's SQL conf: (True, its value or None)
    while Spark has not made that conf; (False, None) once it has, for a static SQL setting, on Spark Connect and
    where Spark's internals moved, for the caller to read ``spark.conf``.

    PySpark 3.5's first ``spark.conf`` read makes the session's whole SQL state (analyzer, catalogs, parser: about
    a second in a fresh process), Spark 4's its SQL conf; a plan or a count answered from metadata needs neither.
    Until the conf is made nobody can have set a key in it at runtime, so a key's value is what Spark will copy
    into it: for any key but a static SQL one, the session's builder options over the SparkContext's settings
    (Spark 3.5 and 4 make the conf of the shared state's settings, then the context's non-static ones, then the
    options' non-static ones). A cloned session's conf is a copy of its parent's: the other way too."""
    if not is_classic(spark):
        return False, None
    try:
        reader = per_session(spark, "sql conf before made", lambda: _NotMade.of(spark._jvm, spark._jsparkSession))
        return (False, None) if reader is None else reader.get(key)
    except Exception:  # noqa: BLE001 - Spark's internals that moved: the caller's other way
        return False, None


def jvm_time_zone(spark) -> str | None:
    """A classic session's driver JVM's own time zone (``TimeZone.getDefault``: Spark's default session time zone),
    or None (Spark Connect: the server's)."""
    if not is_classic(spark):
        return None
    try:
        return str(jvm_static(spark._jvm, "java.util.TimeZone.getDefault")().getID())
    except Exception:  # noqa: BLE001 - a JVM that cannot tell: the caller's other way
        return None
