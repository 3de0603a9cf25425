"""Runs the notebooks as a user would, each in its own kernel and Spark session on a scratch warehouse:
``execute`` for the tests, and ``python tests/notebooks.py --store notebooks/*.ipynb`` (``make notebooks``) to
store them with their outputs and plots."""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 600


def execute(path: str, warehouse: str):
    """The notebook at ``path`` executed top to bottom with ``SPARKBERG_WAREHOUSE=warehouse`` (the parameters
    cell reads it), its Python workers on this interpreter, from the checkout (for spark-defaults.conf)."""
    import nbformat
    from nbclient import NotebookClient

    env = {"SPARKBERG_WAREHOUSE": warehouse, "PYSPARK_PYTHON": sys.executable, "SPARKBERG_MASTER": "local[2]"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": ROOT}}).execute()
        return nb
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def errors(nb) -> list:
    """The error outputs of the notebook's code cells."""
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]


def main(argv: list[str] | None = None) -> int:
    """``--store PATHS``: executes each notebook and writes it back with its outputs, less the log lines on stderr
    (nothing is written for a notebook whose run fails)."""
    import nbformat

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--store", nargs="+", required=True, metavar="NOTEBOOK")
    args = p.parse_args(argv)
    # a fixed, neutral scratch location: the stored outputs show paths under it
    scratch = os.path.join(tempfile.gettempdir(), "sparkberg-notebooks")
    for path in args.store:
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            nb = execute(path, os.path.join(scratch, "warehouse"))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if errors(nb):
            print(f"{path}: a cell failed; not stored", file=sys.stderr)
            return 1
        for cell in nb.cells:  # the JVM's and Spark's log lines (stderr) say things about this machine, not results
            if cell.cell_type == "code":
                cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr")]
        nbformat.write(nb, path)
        print(f"{path}: stored with its outputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
