"""sparkberg's worker daemon (``spark.python.daemon.module=sparkberg.daemon``): the Python workers it forks start
with the stages' modules imported, and run sparkberg's stages as PySpark's own daemon's workers do; a process of
its own each (the daemon module is read when the session starts)."""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark

LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib")

CHILD = """
import json, sys
from pyspark.sql import SparkSession
b = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
if sys.argv[2] == "sparkberg":
    b = b.config("spark.python.daemon.module", "sparkberg.daemon")
spark = b.getOrCreate()
import sparkberg


def probe(batches):
    import sys
    import pyarrow as pa
    preloaded = all(m in sys.modules for m in ("sparkberg.planning.scan", "sparkberg.read.reader", "numpy"))
    table_api = "sparkberg.table" in sys.modules
    for _ in batches:
        pass
    yield pa.RecordBatch.from_pylist([{"preloaded": preloaded, "table_api": table_api}])


# (the workers' first task: what they had imported before it)
first = spark.range(2, numPartitions=2).mapInArrow(probe, "preloaded boolean, table_api boolean").collect()
cat = sparkberg.catalog(spark, sys.argv[1])
t = cat.create_table("db.t", "id bigint, p int", partition_by=["p"], properties={
    "format-version": "3", "write.delete.mode": "merge-on-read"})
t = t.append(spark.range(1000).selectExpr("id", "CAST(id % 4 AS INT) AS p")).delete("id % 10 = 0")
print(json.dumps({"preloaded": [r["preloaded"] for r in first], "table_api": [r["table_api"] for r in first],
                  "files": t.plan_files(planning="distributed").count(), "rows": t.to_df().count(),
                  "sum": t.to_df().selectExpr("sum(id)").collect()[0][0]}))
"""


@pytest.mark.parametrize("daemon", ["pyspark", "sparkberg"])
def test_workers_of_sparkberg_s_daemon_start_with_the_stages_imported(tmp_path, daemon):
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([os.path.abspath(LIB), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "wh"), daemon], capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    # with PySpark's daemon a worker imports them in its first task; with sparkberg's they are there before it
    assert got["preloaded"] == [daemon == "sparkberg"] * 2
    # either way a worker has not imported the table API (sparkberg's daemon imports the package as a worker's)
    assert got["table_api"] == [False, False]
    assert (got["files"], got["rows"], got["sum"]) == (4, 900, sum(i for i in range(1000) if i % 10))


def test_preload_names_what_did_not_import(monkeypatch):
    from sparkberg import daemon
    monkeypatch.setattr(daemon, "PRELOADED", ("json", "sparkberg.no_such_module"))
    assert daemon.preload() == ["sparkberg.no_such_module"]
