"""What runs on executors, on a multi-process cluster (``local-cluster[2,1,1024]``), in a process of its own (one
SparkContext a process): see cluster_check.py."""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from objectstores import SECRETS, started  # noqa: E402


def test_executor_code_on_a_multi_process_cluster(tmp_path):
    # (S3's credentials reach the executors only with the tasks: no AWS variable or file in any process)
    with started(str(tmp_path)) as s3:
        with open(tmp_path / "s3.json", "w") as f:
            json.dump(s3.properties(), f)
        out = subprocess.run([sys.executable, os.path.join(HERE, "cluster_check.py"), str(tmp_path),
                              s3.bucket("cluster"), str(tmp_path / "s3.json")],
                             capture_output=True, text=True, timeout=900,
                             env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    for check in ("the daemon module on a cluster ok", "writes on a cluster ok", "row-level changes and the changelog on a cluster ok",
                  "streams on a cluster ok", "format v3 types on a cluster ok", "a table on S3 on a cluster ok"):
        assert check in out.stdout
    assert not [s for s in SECRETS if s in out.stdout + out.stderr]
