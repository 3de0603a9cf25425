"""Shared fixtures. One SparkSession for the whole run (local[2], 4 shuffle partitions, AQE coalescing
off so partition-order bugs show, UTC, UI off), created only when a test asks for it."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def spark():
    from sparkberg.spark.session import session_builder

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = (session_builder("sparkberg-tests", master="local[2]", defaults=os.path.join(ROOT, "spark-defaults.conf"))
         .config("spark.sql.shuffle.partitions", "4")
         .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC"))
    session = b.getOrCreate()
    yield session
    session.stop()


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "warehouse")


@pytest.fixture
def tune(spark):
    """Sets read thresholds of the session for one test (``tune(driver_delete_rows_max=0)``: the Spark conf keys
    ``spark.sparkberg.read.*`` of :class:`~sparkberg.spark.tuning.ReadTuning`), unset after it."""
    from sparkberg.spark.tuning import ReadTuning
    keys = []

    def set_settings(**settings):
        for name, value in settings.items():
            key = ReadTuning.key(name)
            spark.conf.set(key, str(value))
            keys.append(key)
    yield set_settings
    for key in keys:
        spark.conf.unset(key)


@pytest.fixture
def python_without_sparkberg(tmp_path):
    """An interpreter to start Spark's Python workers with: this one, with sparkberg hidden from its imports."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'sparkberg' or name.startswith('sparkberg.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, _Hide())\n")
    python = tmp_path / "python-without-sparkberg"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{blocker}:$PYTHONPATH" exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return python


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server of the tests' own (tests/pgserver.py), stopped after the run."""
    import pgserver
    server = pgserver.started()
    yield server
    server.stop()


FIGURES: list[str] = []


@pytest.fixture
def report(request):
    """Adds a line to the figures printed at the end of the run (reliability counts, timings of record). The line
    travels with the test's report, so figures of tests run by pytest-xdist's workers reach the summary too."""
    return lambda line: request.node.user_properties.append(("sparkberg-figure", line))


def pytest_runtest_logreport(report):
    if report.when == "call":
        FIGURES.extend(value for key, value in report.user_properties if key == "sparkberg-figure")


def pytest_terminal_summary(terminalreporter):
    openapi_check = sys.modules.get("openapi_check")
    if openapi_check is not None and openapi_check.UNCHECKED:
        terminalreporter.write_line(
            f"note: {len(openapi_check.UNCHECKED)} REST catalog exchanges were not checked against the OpenAPI "
            f"document, which is not here ({os.path.normpath(openapi_check.SPEC)}); make interop and CI check them")
    if FIGURES:
        terminalreporter.section("sparkberg figures")
        for line in FIGURES:
            terminalreporter.write_line(line)


# Object store servers (tests/objectstores.py), one of each kind a test module uses, with no cloud variable or file
# around them while they run
@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    from objectstores import started
    with started(str(tmp_path_factory.mktemp("no-cloud"))) as server:
        yield server


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    from objectstores import GcsServer, started
    with started(str(tmp_path_factory.mktemp("no-cloud")), GcsServer) as server:
        yield server


@pytest.fixture(scope="session")
def hive_metastore():
    """A Hive Metastore (tests/hiveserver.py), one per test process (its start takes some 20 s): the modules that
    use it keep to namespaces of their own."""
    from hiveserver import HiveMetastore
    server = HiveMetastore()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def azure(tmp_path_factory):
    from objectstores import AzureServer, started
    with started(str(tmp_path_factory.mktemp("no-cloud")), AzureServer) as server:
        yield server
