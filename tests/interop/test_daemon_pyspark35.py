"""sparkberg's daemon module on PySpark 3.5 (the interop suite's Spark; the main suite runs it on PySpark 4): a session
with ``spark.python.daemon.module=sparkberg.daemon`` forks workers that import PySpark from the installed package,
and sparkberg's Python stages run in them."""
import os
import subprocess
import sys

import pyspark
import pytest

pytestmark = pytest.mark.interop
CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spark", "daemon_session_check.py")


def test_sparkberg_s_stages_run_with_sparkberg_s_daemon_on_pyspark_35(tmp_path):
    assert pyspark.__version__.startswith("3.5"), pyspark.__version__
    out = subprocess.run([sys.executable, CHECK, "sparkberg.daemon", str(tmp_path / "wh")], capture_output=True,
                         text=True, timeout=600, env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "sparkberg's stages with sparkberg.daemon ok" in out.stdout
