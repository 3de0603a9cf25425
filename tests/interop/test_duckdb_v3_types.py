"""Format v3's types against DuckDB 1.5.5 as the reference writer, through a REST catalog the test serves (DuckDB
writes Iceberg only through one): DuckDB creates a v3 table with a ``variant`` (which it shreds into
``typed_value``) and a ``timestamp_ns`` partitioned by ``day``; sparkberg on PySpark 4 reads its rows as DuckDB
does (the nanoseconds floored to microseconds), and DuckDB reads back what sparkberg appends (values, the day
partitions, the nanosecond bounds its filters prune by). On PySpark 3.5, which has no variant type, the table's
other columns read and selecting the variant is a named error. Iceberg Java adds an ``unknown`` column (DuckDB
cannot: "Column type NULL is not a valid Iceberg Type"), which sparkberg reads as null on both PySpark versions."""
import datetime as dt
import json
import os
import struct
import subprocess

import pytest

import sparkberg
from sparkberg.errors import NotSupportedError

pytestmark = pytest.mark.interop
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SPARK4_PYTHON = os.environ.get("SPARKBERG_SPARK4_PYTHON", os.path.join(ROOT, ".venv", "bin", "python"))
SPARK4_JVM_OPTS = os.environ.get("SPARKBERG_SPARK4_JVM_OPTS")
VARIANTS = ['{"a": 1, "b": "x"}', '{"a": 2, "b": "y"}', "[1, 2.5, null]", "7", '"text"', "true", "{}"]
# nanoseconds DuckDB writes: sub-microsecond digits either side of the epoch and of a microsecond
NANOS = ["1969-12-31 23:59:59.999999999", "1970-01-01 00:00:00.000000001", "2024-01-01 00:00:00.000000999",
         "2024-01-01 10:30:00.123456789", "2024-02-29 23:59:59.999999999", "2023-12-31 23:59:59.999999001",
         "2024-06-01 00:00:00"]


@pytest.fixture(scope="module")
def duck_v3(tmp_path_factory):
    from duckdbs import duckdb_on_rest
    con, rest, warehouse = duckdb_on_rest(tmp_path_factory, "duck-v3")
    con.execute("CREATE TABLE w.db.v3 (id BIGINT, v VARIANT, ts TIMESTAMP_NS) PARTITIONED BY (day(ts)) "
                "WITH ('format-version' = '3')")
    values = ", ".join(f"({i}, '{VARIANTS[i % len(VARIANTS)]}'::JSON::VARIANT, '{NANOS[i]}'::TIMESTAMP_NS)"
                       for i in range(len(NANOS)))
    con.execute(f"INSERT INTO w.db.v3 VALUES {values}")
    con.execute("INSERT INTO w.db.v3 SELECT 100 + i, ('{\"a\": ' || i || ', \"b\": \"s\"}')::JSON::VARIANT, "
                "TIMESTAMP_NS '2024-03-01 00:00:00' + INTERVAL (i) MINUTE FROM range(20) r(i)")
    yield con, rest, warehouse
    rest.close()


def _duck_rows(con) -> dict[int, tuple]:
    """id -> (the variant as JSON, the timestamp's epoch nanoseconds), as DuckDB reads them."""
    return {i: (None if v is None else json.loads(v), ns)
            for i, v, ns in con.sql("SELECT id, v::JSON, epoch_ns(ts) FROM w.db.v3").fetchall()}


def _spark4(*args: str) -> str:
    assert os.path.exists(SPARK4_PYTHON), f"no PySpark 4 interpreter at {SPARK4_PYTHON} (make .venv/.installed)"
    out = subprocess.run([SPARK4_PYTHON, os.path.join(HERE, "spark4_v3.py"), *args], capture_output=True,
                         text=True, timeout=600,
                         env={**os.environ, "PYSPARK_PYTHON": SPARK4_PYTHON, "PYTHONPATH": os.path.join(ROOT, "lib"),
                              **({"SPARK_SUBMIT_OPTS": SPARK4_JVM_OPTS} if SPARK4_JVM_OPTS is not None else {})})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout


def _ours(rest, table: str = "db.v3", mode: str = "read") -> tuple[str, dict[int, tuple]]:
    out = _spark4(rest.uri, table, mode).splitlines()
    schema = next(x for x in out if x.startswith("SCHEMA "))[len("SCHEMA "):]
    rows = json.loads(next(x for x in out if x.startswith("ROWS "))[len("ROWS "):])
    return schema, {r[0]: (None if r[1] is None else json.loads(r[1]), r[2], *r[3:]) for r in rows}


def test_sparkberg_reads_duckdb_s_variant_and_nanoseconds_as_duckdb_does(duck_v3):
    con, rest, warehouse = duck_v3
    files = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(warehouse, "db", "v3", "data")) for f in fs
             if f.endswith(".parquet")]
    import pyarrow.parquet as pq
    assert any("typed_value" in str(pq.ParquetFile(f).schema) for f in files)  # (DuckDB shreds)
    schema, ours = _ours(rest)
    assert schema == "struct<id:bigint,v:variant,ts:timestamp_ntz>"
    theirs = _duck_rows(con)
    assert set(ours) == set(theirs)
    for i, (v, ns) in theirs.items():
        assert ours[i][0] == v, i
        assert ours[i][1] == (None if ns is None else ns // 1000), i  # (floored: -1 ns is the microsecond before)
    assert ours[0][1] == -1 and ours[1][1] == 0 and ours[2][1] == theirs[2][1] // 1000


def test_sparkberg_s_arrow_reader_unshreds_duckdb_s_variants_as_duckdb_reads_them(duck_v3):
    """sparkberg's Arrow reader (tables on object stores) rebuilds each row's variant from DuckDB's shredded
    columns, and floors the nanoseconds, as Spark's Parquet reader does."""
    con, rest, _ = duck_v3
    schema, ours = _ours(rest, mode="read-arrow")
    assert schema == "struct<id:bigint,v:variant,ts:timestamp_ntz>"
    theirs = _duck_rows(con)
    assert set(ours) == set(theirs)
    for i, (v, ns) in theirs.items():
        assert ours[i][0] == v, (i, ours[i][0], v)
        assert ours[i][1] == (None if ns is None else ns // 1000), i


def test_duckdb_reads_what_sparkberg_appends_with_day_partitions_and_nanosecond_bounds(duck_v3, java):
    con, rest, warehouse = duck_v3
    appended = [[200, '{"a": 200, "nested": {"k": [1, {"z": null}]}}', "2024-05-05 05:05:05.123456"],
                [201, "[]", "1960-01-01 00:00:00.000001"], [202, "-1.5e10", "2024-05-05 23:59:59.999999"],
                [203, "null", "2262-04-11 00:00:00"]]
    assert "APPENDED" in _spark4(rest.uri, "db.v3", "append", json.dumps(appended))
    theirs = _duck_rows(con)
    for i, j, ts in appended:
        micros = (dt.datetime.fromisoformat(ts) - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
        assert theirs[i] == (json.loads(j), micros * 1000), i
    t = sparkberg.load_table(java, os.path.join(warehouse, "db", "v3"))
    ours = t.metadata.current_snapshot_id
    mine = [r["data_file"] for r in t.metadata_table("entries", columns=["status", "snapshot_id", "data_file"])
            .where(f"status = 1 AND snapshot_id = {ours}").collect()]
    assert mine
    for f in mine:
        ids = [x[0] for x in con.sql(f"SELECT id FROM read_parquet('{f['file_path']}')").fetchall()]
        nanos = sorted(theirs[i][1] for i in ids)
        lo, hi = (struct.unpack("<q", bytes(f[k][3]))[0] for k in ("lower_bounds", "upper_bounds"))
        assert (lo, hi) == (nanos[0], nanos[-1])
        days = {n // 86_400_000_000_000 for n in nanos}
        assert len(days) == 1 and f["partition"][0] == dt.date(1970, 1, 1) + dt.timedelta(days=days.pop())
    # DuckDB's filters on the nanosecond column, over files of both writers
    may5 = (dt.datetime(2024, 5, 5) - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1) * 1000
    for where, keep in (("ts < TIMESTAMP_NS '1970-01-01 00:00:00'", lambda n: n < 0),
                        ("ts >= TIMESTAMP_NS '2024-05-05 00:00:00'", lambda n: n >= may5)):
        got = sorted(x[0] for x in con.sql(f"SELECT id FROM w.db.v3 WHERE {where}").fetchall())
        assert got == sorted(i for i, (_, n) in theirs.items() if n is not None and keep(n)) and got, where


def test_on_pyspark_3_5_the_other_columns_read_and_the_variant_is_a_named_error(duck_v3, java):
    con, _, warehouse = duck_v3
    t = sparkberg.load_table(java, os.path.join(warehouse, "db", "v3"))
    theirs = _duck_rows(con)
    got = {r["id"]: r["ts"] for r in t.to_df(columns=["id", "ts"]).collect()}
    assert {i: ts for i, ts in got.items() if i in theirs} == {
        i: None if ns is None else dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=ns // 1000)
        for i, (_, ns) in theirs.items()}
    assert t.to_df().columns == ["id", "ts"]
    with pytest.raises(NotSupportedError, match="column 'v' of type variant cannot be read: PySpark 3.5.* has no "
                                                "variant type"):
        t.to_df(columns=["id", "v"])


def test_an_unknown_column_java_adds_reads_as_null_on_both_pysparks(duck_v3, java):
    con, rest, warehouse = duck_v3
    for k, v in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "rest", ".uri": rest.uri,
                 ".cache-enabled": "false"}.items():
        java.conf.set(f"spark.sql.catalog.duckv3{k}", v)
    jvm = java._jvm
    catalog = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergCatalog(java._jsparkSession, "duckv3")
    jt = catalog.loadTable(jvm.org.apache.iceberg.catalog.TableIdentifier.parse("db.v3"))
    jt.updateSchema().addColumn("u", jvm.org.apache.iceberg.types.Types.UnknownType.get()).commit()
    t = sparkberg.load_table(java, os.path.join(warehouse, "db", "v3"))
    assert str(t.schema().find_field("u").field_type) == "unknown"
    rows = t.to_df(columns=["id", "u"]).collect()
    assert rows and all(r["u"] is None for r in rows)
    assert t.to_df(columns=["id", "u"]).schema["u"].dataType.typeName() in ("void", "null")
    schema, ours = _ours(rest)
    assert schema.endswith(",u:void>") and all(r[2] is None for r in ours.values())
