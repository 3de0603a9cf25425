"""The notebooks run top to bottom on a local warehouse (their own kernel and Spark session), as a user would
run them; their cells assert what they show."""
import os
import sys

import pytest

pytestmark = pytest.mark.spark
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOKS = sorted(f for f in os.listdir(os.path.join(ROOT, "notebooks")) if f.endswith(".ipynb"))


def test_there_are_three_notebooks():
    assert NOTEBOOKS == ["01_quickstart.ipynb", "02_row_level_and_lineage.ipynb", "03_table_health.ipynb"]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient
    monkeypatch.setenv("SPARKBERG_WAREHOUSE", str(tmp_path / "warehouse"))
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("SPARKBERG_MASTER", "local[2]")
    nb = nbformat.read(os.path.join(ROOT, "notebooks", name), as_version=4)
    for cell in nb.cells:  # no local paths baked in: the warehouse comes from the parameters cell
        assert "/tmp" not in cell.source and "/work" not in cell.source
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": ROOT}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
