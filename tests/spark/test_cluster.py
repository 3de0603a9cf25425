"""What runs on executors, on a multi-process cluster (``local-cluster[2,1,1024]``), in a process of its own (one
SparkContext a process): see cluster_check.py."""
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark
HERE = os.path.dirname(os.path.abspath(__file__))


def test_executor_code_on_a_multi_process_cluster(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(HERE, "cluster_check.py"), str(tmp_path)],
                         capture_output=True, text=True, timeout=900,
                         env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    for check in ("writes on a cluster ok", "row-level changes and the changelog on a cluster ok",
                  "streams on a cluster ok"):
        assert check in out.stdout
