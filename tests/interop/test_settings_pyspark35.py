"""Settings read before a session's SQL conf is made, on PySpark 3.5 (whose first ``spark.conf`` read makes the
session's whole SQL state): ``tests/spark/settings_check.py``, as the main suite runs it on PySpark 4."""
import os
import sys

import pyspark
import pytest

pytestmark = pytest.mark.interop
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spark"))
from test_settings import run_settings_check  # noqa: E402


def test_settings_before_the_sql_conf_is_made_on_pyspark_35(java, tmp_path):
    assert pyspark.__version__.startswith("3.5"), pyspark.__version__
    run_settings_check(java, str(tmp_path / "wh"))
