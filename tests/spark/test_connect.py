"""The read path over Spark Connect (PySpark 4, `SparkSession.builder.remote("local")`): no py4j, no
SparkContext, no RDDs. Runs in its own process so the Connect server gets its own JVM."""
import json
import os
import subprocess
import sys

import pytest

from test_read import pyi  # noqa: F401 - the PyIceberg tables fixture

pytestmark = pytest.mark.spark
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from objectstores import SECRETS, started  # noqa: E402
from sparkberg.spark.session import spark_version  # noqa: E402


def test_reads_over_spark_connect(pyi, tmp_path):  # noqa: F811
    pt = pyi["all_v2"]
    with started(str(tmp_path)) as s3:  # (a table on S3 too, its credentials only in the catalog's properties)
        with open(tmp_path / "s3.json", "w") as f:
            json.dump(s3.properties(), f)
        out = subprocess.run([sys.executable, os.path.join(HERE, "connect_check.py"), pt.metadata_location, "37",
                              str(tmp_path / "wh"), s3.bucket("connect"), str(tmp_path / "s3.json")],
                             capture_output=True, text=True, timeout=600,
                             env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert not [s for s in SECRETS if s in out.stdout + out.stderr]
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    for check in ("the daemon module on a Spark Connect server ok", "to_df count ok", "filtered read ok", "plan_files pruning ok", "time travel ok",
                  "catalog over connect ok", "merge-on-read over connect ok", "changelog over connect ok",
                  "views follow writes over connect ok", "format v3 types over connect ok",
                  "sql catalog over connect ok", "maintenance over connect ok", "branches and write-audit-publish over connect ok",
                  "a transaction over connect ok", "idempotent writes over connect ok", "streams over connect ok",
                  "SQL statements over connect ok", "Iceberg views over connect ok", "a table on S3 over connect ok"):
        assert check in out.stdout
    # (a view over the data source, planned by each query with its filters: Spark 4.1+)
    assert ("views prune by WHERE over connect ok" in out.stdout) == (spark_version(None) >= (4, 1))
