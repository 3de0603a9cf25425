"""Where a session's Python workers imported PySpark from, and which daemon forked them: for the checks that
``spark.python.daemon.module=sparkberg.daemon`` works on classic sessions, Spark Connect and clusters."""
import sys

from pyspark import cloudpickle


def _report(batches):
    import os
    import sys

    import pyarrow as pa
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:  # (the worker's parent: the daemon that forked it)
        daemon = f.read().replace(b"\0", b" ").decode().strip()
    for b in batches:
        source = sys.modules["pyspark"].__file__
        yield pa.RecordBatch.from_arrays([pa.array([daemon] * b.num_rows), pa.array([source] * b.num_rows)],
                                         names=["daemon", "pyspark"])


def workers(spark, tasks: int = 2) -> set[tuple[str, str]]:
    """The (daemon's command line, ``pyspark.__file__``) pairs of ``tasks`` tasks' workers."""
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # (the workers cannot import this test module)
    rows = spark.range(0, tasks, 1, tasks).mapInArrow(_report, "daemon string, pyspark string").collect()
    return {(r["daemon"], r["pyspark"]) for r in rows}


def check(spark, where: str, daemon: str = "sparkberg.daemon") -> None:
    """Asserts that every worker of a few tasks was forked by ``daemon`` and imported PySpark from where it imports
    it (PySpark's own daemon from ``pyspark.zip``, sparkberg's from the installed package); prints ``the daemon
    module on {where} ok``."""
    got = workers(spark)
    zipped = daemon == "pyspark.daemon"
    assert got and all(f"-m {daemon}" in d and (".zip" in p) == zipped for d, p in got), got
    print(f"the daemon module on {where} ok")
