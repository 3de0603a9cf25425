"""Interop fixtures: the reference engines from ../shared/interop/reference.py (Iceberg Java 1.10 on
PySpark 3.5, PyIceberg, DuckDB) and the Java-written corpus, built once per run."""
import os
import sys

import pytest

SHARED = os.environ.get("SPARKBERG_SHARED") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared")
sys.path.insert(0, os.path.join(SHARED, "interop"))

pytestmark = pytest.mark.interop
JDBC_DRIVERS = ["/usr/share/java/sqlite-jdbc.jar", "/usr/share/java/postgresql.jar"]


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server of the tests' own (tests/pgserver.py), stopped after the run."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import pgserver
    server = pgserver.started()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def java_warehouse(tmp_path_factory):
    return str(tmp_path_factory.mktemp("java-wh"))


@pytest.fixture(scope="session")
def java(java_warehouse):
    """A SparkSession with Iceberg Java (catalog `ref` over ``java_warehouse``); sparkberg runs on it too."""
    from reference import iceberg_java_session, jars
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors import sparkberg from this venv
    # (with the JDBC drivers Debian ships, for Iceberg Java's JdbcCatalog on the SQL catalog's databases, and
    # the HTTP client Iceberg Java's RESTCatalog needs: make interop builds it, tests/interop/iceberg_http_jars.py)
    drivers = [j for j in JDBC_DRIVERS if os.path.exists(j)]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from iceberg_http_jars import build
    drivers += build(os.path.join(sys.prefix, "iceberg-http"))
    spark = iceberg_java_session(java_warehouse, extra={"spark.sql.adaptive.coalescePartitions.enabled": "false",
                                                        "spark.sql.parquet.fieldId.read.enabled": "true",
                                                        "spark.jars": ",".join(jars() + drivers)})
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    spark.stop()


@pytest.fixture(scope="session")
def corpus(java, java_warehouse):
    """Names of the Java-written tables (namespace `db` of the `ref` catalog)."""
    from corpus import build
    return build(java, "db")


@pytest.fixture(scope="session")
def duck():
    from reference import duckdb_with_iceberg
    return duckdb_with_iceberg()

