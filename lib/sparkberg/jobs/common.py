"""What the jobs share: the session, exit codes a scheduler can act on, and progress for the waiting driver."""
from __future__ import annotations

import argparse
import os
import re
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import sparkberg
from sparkberg.catalog.config import is_catalog_name
from sparkberg.errors import (
    CommitFailedException, NoSuchNamespaceError, NoSuchTableError, SparkbergError, ValidationError,
)
from sparkberg.spark.session import session_builder

OK, FAILED, USAGE, NOT_FOUND, INVALID, CONFLICT = 0, 1, 2, 3, 4, 5
CLOSED_PIPE = 128 + 13  # the status of a Unix tool that SIGPIPE ended, as shells report it
EXIT_CODES = {OK: "success", FAILED: "unexpected failure", USAGE: "bad arguments", NOT_FOUND: "no such table or "
              "namespace", INVALID: "invalid input (data, filter or options)", CONFLICT: "commit conflict: retry"}


def argument_parser(prog: str | None, doc: str) -> argparse.ArgumentParser:
    """A job's parser, described by the first sentence of its module docstring in plain text: reST's markup
    (````x````, ``:func:`~a.b.x```) is for the documentation site, not for ``--help``."""
    first = " ".join(doc.strip().split("\n\n", 1)[0].split())
    first = re.sub(r":\w+:`~?(?:[\w.]*\.)?([^`]+)`", r"\1", first)
    return argparse.ArgumentParser(prog=prog, description=first.replace("``", ""))


def add_session_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--catalog", default=os.environ.get("SPARKBERG_CATALOG"),
                   help="the catalog: a warehouse location (path, file://, s3://...), a SQL catalog's database "
                        "(sqlite:////path/catalog.db, postgresql://host/db, jdbc:...), a REST catalog's endpoint "
                        "(http://host:8181/catalog), or the name of a catalog configured by "
                        "spark.sql.catalog.<name>.* (credentials: there) (env SPARKBERG_CATALOG)")
    p.add_argument("--warehouse", default=os.environ.get("SPARKBERG_WAREHOUSE"),
                   help="the warehouse location: the file-system catalog's when --catalog is not given (default "
                        "./warehouse), else where a SQL catalog puts new tables (env SPARKBERG_WAREHOUSE)")
    p.add_argument("--catalog-name", default=None,
                   help="a SQL catalog's name, as Iceberg Java and PyIceberg store it (catalog_name)")
    p.add_argument("--master", default=None, help="Spark master when not launched by spark-submit (default local[*])")


def open_catalog(spark: Any, args: argparse.Namespace):
    """The catalog the arguments of :func:`add_session_arguments` name (``spark`` None: only one named by its
    location or database, not one configured in the Spark conf)."""
    if args.catalog is None:
        return sparkberg.catalog(spark, args.warehouse or "./warehouse")
    return sparkberg.catalog(spark, args.catalog, warehouse=args.warehouse, name=args.catalog_name)


def names_a_configured_catalog(args: argparse.Namespace) -> bool:
    """Whether ``--catalog`` is a name whose settings are in the Spark conf (resolving it needs a session)."""
    return args.catalog is not None and is_catalog_name(args.catalog)


# Spark's log at ERROR on the console, without its banner: for a session a command-line tool starts itself (the
# logger of the class that starts a PySpark driver's logging at the root's level: else Spark, which takes such a
# driver for a shell, announces "Setting default log level to WARN")
QUIET_LOG4J2 = """rootLogger.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


def session(app: str, master: str | None = None, quiet: bool = False):
    """The active SparkSession (spark-submit, notebooks), or one built from spark-defaults.conf; ``quiet``: one
    this starts logs errors only (its driver JVM starts with :data:`QUIET_LOG4J2`)."""
    from pyspark.sql import SparkSession
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # launched by spark-submit: its master and properties file apply
        return SparkSession.builder.appName(app).getOrCreate()
    defaults = os.path.join(os.getcwd(), "spark-defaults.conf")
    b = session_builder(app, master=master or os.environ.get("SPARKBERG_MASTER") or "local[*]",
                        defaults=defaults if os.path.exists(defaults) else None)
    if quiet:
        import tempfile
        with tempfile.NamedTemporaryFile("w", prefix="sparkberg-log4j2-", suffix=".properties",
                                         delete=False) as f:
            f.write(QUIET_LOG4J2)
        b = b.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{f.name}")
        b = b.config("spark.ui.showConsoleProgress", "false")
    return b.getOrCreate()


def run(main: Callable[[], int]) -> int:
    """Run a job body and map errors to exit codes, with one line on stderr that names the problem."""
    try:
        return main()
    except (NoSuchTableError, NoSuchNamespaceError) as e:
        print(f"error: {e}", file=sys.stderr)
        return NOT_FOUND
    except CommitFailedException as e:
        print(f"error: {e}", file=sys.stderr)
        return CONFLICT
    except (ValidationError, SparkbergError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return INVALID
    except KeyboardInterrupt:
        return FAILED
    except BrokenPipeError:  # the reader went away (`sparkberg files db.t | head`): quiet, as a Unix tool
        # (stdout to /dev/null, so the interpreter's last flush of what is left raises nothing either)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return CLOSED_PIPE
    except Exception as e:  # noqa: BLE001 - a scheduler needs an exit code, the log has the trace
        if type(e).__name__ in ("AnalysisException", "ParseException"):  # missing input path, bad SQL
            # (Spark's reason, without the plan it appends after its first line)
            print(f"error: {str(e).split(chr(10), 1)[0]}", file=sys.stderr)
            return INVALID
        import traceback
        traceback.print_exc()
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return FAILED


@contextmanager
def progress(spark: Any, label: str, enabled: bool | None = None) -> Iterator[None]:
    """While the driver waits on Spark, a one-line progress bar on stderr (tasks done / total of the running
    stages), when stderr is a terminal and the session is classic; silent otherwise."""
    enabled = sys.stderr.isatty() if enabled is None else enabled
    tracker = None
    if enabled:
        try:
            tracker = spark.sparkContext.statusTracker()
        except Exception:  # noqa: BLE001 - Spark Connect has no status tracker
            tracker = None
    if tracker is None:
        yield
        return
    stop = threading.Event()

    def draw():
        while not stop.wait(0.25):
            done = total = 0
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info:
                    done += info.numCompletedTasks
                    total += info.numTasks
            if total:
                width = 30
                filled = int(width * done / total)
                sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} tasks ")
                sys.stderr.flush()
    t = threading.Thread(target=draw, daemon=True)
    t.start()
    start = time.monotonic()
    try:
        yield
    finally:
        stop.set()
        t.join()
        sys.stderr.write(f"\r{label} done in {time.monotonic() - start:.1f} s{' ' * 30}\n")
        sys.stderr.flush()
