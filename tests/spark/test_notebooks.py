"""The notebooks run top to bottom on a local warehouse (their own kernel and Spark session), as a user would
run them; their cells assert what they show. They are stored executed (``make notebooks``), so a reader sees
their results and plots without running them."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import notebooks  # noqa: E402 - tests/notebooks.py

pytestmark = pytest.mark.spark
ROOT = notebooks.ROOT
NOTEBOOKS = sorted(f for f in os.listdir(os.path.join(ROOT, "notebooks")) if f.endswith(".ipynb"))


def test_there_are_three_notebooks():
    assert NOTEBOOKS == ["01_quickstart.ipynb", "02_row_level_and_lineage.ipynb", "03_table_health.ipynb"]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_stored_with_its_results(name):
    import nbformat
    nb = nbformat.read(os.path.join(ROOT, "notebooks", name), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), f"{name}: stored without running every cell (make notebooks)"
    assert not notebooks.errors(nb)
    assert sum(len(c.outputs) for c in code) >= len(code) // 2, f"{name}: stored without its outputs"
    if name == "03_table_health.ipynb":
        plots = [o for c in code for o in c.outputs if "image/png" in o.get("data", {})]
        assert len(plots) == 3, "the health notebook's three plots"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name, tmp_path):
    path = os.path.join(ROOT, "notebooks", name)
    with open(path) as f:  # no local paths baked into the code: the warehouse comes from the parameters cell
        import nbformat
        for cell in nbformat.read(f, as_version=4).cells:
            assert "/tmp" not in cell.source and "/work" not in cell.source
    nb = notebooks.execute(path, str(tmp_path / "warehouse"))
    assert not notebooks.errors(nb)
