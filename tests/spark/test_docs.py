"""The documentation's examples run: every code block marked ``<!-- run -->`` in the README and in docs/ is
executed, a page's blocks in order in one namespace, with ``spark`` (the tests' session) and ``warehouse`` (a new
directory) given, so the docs cannot drift from the code. The site itself builds in ``make docs``."""
from __future__ import annotations

import os
import re

import pytest

pytestmark = pytest.mark.spark
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARK = "<!-- run -->"
_BLOCK = re.compile(r"^<!-- run -->\n```python\n(.*?)^```\n", re.S | re.M)


def pages() -> list[str]:
    """The README and every Markdown page under docs/, relative to the checkout."""
    found = ["README.md"]
    for folder, _, files in os.walk(os.path.join(ROOT, "docs")):
        found += [os.path.relpath(os.path.join(folder, f), ROOT) for f in files if f.endswith(".md")]
    return sorted(found)


def runnable(page: str) -> list[str]:
    """The page's runnable blocks, in order. A mark not followed by a Python block is an error, so a block cannot
    silently stop running."""
    with open(os.path.join(ROOT, page)) as f:
        text = f.read()
    blocks = _BLOCK.findall(text)
    assert len(blocks) == text.count(MARK), f"{page}: a {MARK} mark is not followed by a ```python block"
    return blocks


PAGES = [p for p in pages() if runnable(p)]


def test_the_pages_a_new_user_reads_first_have_runnable_examples():
    for page in ("README.md", "docs/getting-started.md", "docs/guides/catalogs.md", "docs/guides/row-level.md",
                 "docs/guides/maintenance.md"):
        assert page in PAGES, page


@pytest.mark.parametrize("page", PAGES)
def test_examples_run(page, spark, tmp_path, monkeypatch):
    run_page(page, spark, tmp_path, monkeypatch)


def test_the_readme_expires_the_snapshots_it_says(spark, tmp_path, monkeypatch):
    # (issue 90, item 21: its expire_snapshots call leaves the last snapshot only, as it shows)
    namespace = run_page("README.md", spark, tmp_path, monkeypatch)
    assert len(namespace["cat"].load_table("db.events").snapshots()) == 1


def run_page(page, spark, tmp_path, monkeypatch) -> dict:
    """Run the page's blocks in order in one namespace (returned), then drop the views and settings they made."""
    monkeypatch.chdir(tmp_path)
    views = {t.name for t in spark.catalog.listTables() if t.isTemporary}
    conf = set(spark.conf.getAll)  # (PySpark 4: the session's SQL conf as a dict)
    namespace = {"spark": spark, "warehouse": str(tmp_path / "warehouse")}
    try:
        for number, block in enumerate(runnable(page), 1):
            code = compile(block, f"{page} (runnable block {number})", "exec")
            exec(code, namespace)  # noqa: S102 - the documentation's own examples
        return namespace
    finally:
        for t in spark.catalog.listTables():
            if t.isTemporary and t.name not in views:
                spark.catalog.dropTempView(t.name)
        for key in set(spark.conf.getAll) - conf:
            spark.conf.unset(key)


def test_a_new_user_is_told_to_run_their_script_with_the_workers_interpreter():
    # (issue 90, item 20: the first write of a script run by another interpreter than the workers' fails; the
    # README and getting started say how to run one, before any other step of a user's own)
    for page in ("README.md", "docs/getting-started.md"):
        text = open(os.path.join(ROOT, page), encoding="utf-8").read()
        assert "source .venv/bin/activate" in text and 'PYSPARK_PYTHON="$(command -v python)"' in text, page
