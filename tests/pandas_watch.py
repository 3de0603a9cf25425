"""The start of a child process's script that records where pandas is first imported (``first``: the stack, for
a failure's message), for the checks that a code path imports no pandas (``tests/spec/test_worker_imports.py``,
``tests/spark/test_planning_imports.py``): pyarrow imports it at the first ``pa.array``, ``pa.scalar`` or
``to_numpy``, a cost each fresh process and Python worker pays."""

WATCH = r"""
import json, sys, traceback
first = []


class Finder:
    def find_spec(self, name, path=None, target=None):
        if name == "pandas" and not first:
            first.append("".join(traceback.format_stack()[-16:-3]))


sys.meta_path.insert(0, Finder())
"""
