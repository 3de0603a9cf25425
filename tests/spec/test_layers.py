"""Imports point downward only (errors/redact/identifiers/zipimports/daemon/threads/lru/state < format <
expressions/avro/io < spark < planning/read/write < operations < commit/catalog/refs/evolution < maintenance <
table/inspect < sql < __init__ < jobs), function-local ones included; modules import each other without cycles,
within a layer too and through function-local imports; an import inside a function says why it is there; format/,
expressions/, avro/ never import pyspark; commit/ imports no pyspark."""
import ast
import os

import pytest

LIB = os.path.join(os.path.dirname(__file__), "..", "..", "lib", "sparkberg")
LAYERS = [
    {"errors", "redact", "identifiers", "zipimports", "daemon", "threads", "lru", "arrays", "state"}, {"format"},
    {"expressions", "avro", "io"}, {"spark"},
    {"planning", "read", "write"}, {"operations"},
    {"commit", "catalog", "refs", "evolution"}, {"maintenance"}, {"table", "inspect"}, {"sql"}, {"__init__"},
    {"jobs"},
]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}
PURE = {"format", "expressions", "avro"}
NO_PYSPARK = PURE | {"commit"}  # (the committer: driver-side Python over metadata and files)


def modules():
    for root, _, files in os.walk(LIB):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(root, f)
                rel = os.path.relpath(path, LIB)
                yield rel, path


def imports(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def unit(rel):
    first = rel.split(os.sep)[0]
    return first[:-3] if first.endswith(".py") else first


@pytest.mark.parametrize("rel,path", sorted(modules()))
def test_imports_point_downward(rel, path):
    me = unit(rel)
    assert me in RANK, f"{rel} is not in a known layer"
    for name in imports(path):
        if name.startswith("pyspark"):
            assert me not in NO_PYSPARK, f"{rel} imports {name}; {me}/ must stay free of pyspark"
        if name.startswith("sparkberg."):
            target = name.split(".")[1]
            assert RANK[target] <= RANK[me], f"{rel} imports {name}, a higher layer"


def _module_name(rel: str) -> str:
    parts = rel[:-3].split(os.sep)
    return ".".join(["sparkberg", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def _sparkberg_imports(path: str, names: set[str]):
    """(import node, the sparkberg module it imports, whether it is at the module's top level)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sparkberg"):
            candidates = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        elif isinstance(node, ast.Import):
            candidates = [a.name for a in node.names if a.name.startswith("sparkberg")]
        else:
            continue
        for name in candidates:
            while name not in names and "." in name:
                name = name.rsplit(".", 1)[0]
            if name in names:
                yield node, name, id(node) in top
                break


def test_modules_import_each_other_without_cycles():
    """No cycle, however deep, whether its imports are at the top of a module or inside a function (a put-off
    import is still a dependency)."""
    files = {_module_name(rel): path for rel, path in modules()}
    graph = {m: {t for _, t, _ in _sparkberg_imports(p, set(files)) if t != m} for m, p in files.items()}
    done, on_path = set(), []

    def visit(m):
        if m in on_path:
            raise AssertionError("import cycle: " + " -> ".join(on_path[on_path.index(m):] + [m]))
        if m in done:
            return
        on_path.append(m)
        for t in sorted(graph[m]):
            visit(t)
        on_path.pop()
        done.add(m)
    for m in sorted(graph):
        visit(m)


def test_imports_inside_functions_say_why():
    """A sparkberg import inside a function (a genuine cycle, a heavy import put off) has a comment on the line
    before it or on its own line."""
    files = {_module_name(rel): path for rel, path in modules()}
    unexplained = []
    for m, path in files.items():
        lines = open(path, encoding="utf-8").read().splitlines()
        for node, target, at_top in _sparkberg_imports(path, set(files)):
            if at_top or target == m:
                continue
            if "#" not in lines[node.lineno - 1] and not lines[node.lineno - 2].strip().startswith("#"):
                unexplained.append(f"{m}:{node.lineno} imports {target}")
    assert unexplained == []


def test_pure_layers_import_without_pyspark():
    """format/, expressions/ and avro/ run without pyspark: imported as the package's modules (the package's own
    ``__init__``, which brings the table API and so pyspark, left out), none of them imports it."""
    import subprocess
    import sys
    code = ("import sys, builtins, types\n"
            "real = builtins.__import__\n"
            "def guard(name, *a, **k):\n"
            "    if name.startswith('pyspark'): raise ImportError('pyspark imported by ' + name)\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = guard\n"
            f"package = types.ModuleType('sparkberg'); package.__path__ = [{LIB!r}]\n"
            "sys.modules['sparkberg'] = package\n"
            "import pkgutil, importlib\n"
            "for sub in ('format', 'expressions', 'avro'):\n"
            "    for m in pkgutil.walk_packages([f'{package.__path__[0]}/{sub}'], f'sparkberg.{sub}.'):\n"
            "        importlib.import_module(m.name)\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_reserved_field_ids_are_written_once():
    # the spec's reserved columns live in format/metadata_columns.py; no other module spells their ids
    import re
    found = []
    for base, _, files in os.walk(LIB):
        for name in files:
            path = os.path.join(base, name)
            if name.endswith(".py") and not path.endswith(os.path.join("format", "metadata_columns.py")):
                with open(path, encoding="utf-8") as f:
                    found += [(path, m) for m in re.findall(r"\b21474835\d\d\b|\b21474836[0-4]\d\b", f.read())]
    assert found == []


# the modules whose functions and classes sparkberg's Python stages run on the executors (mapInArrow)
WORKER_MODULES = ["sparkberg.write.deletes", "sparkberg.write.writer", "sparkberg.write.dataframe",
                  "sparkberg.read.positions", "sparkberg.read.equality", "sparkberg.read.formats",
                  "sparkberg.read.columns", "sparkberg.read.changes", "sparkberg.planning.entries",
                  "sparkberg.planning.scan",
                  "sparkberg.operations.rowlevel", "sparkberg.operations.imports", "sparkberg.maintenance.expire",
                  "sparkberg.maintenance.manifests", "sparkberg.maintenance.orphans", "sparkberg.maintenance.deletes"]


def _child_output(code: str) -> str:
    """What a new interpreter running ``code`` prints."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _imported_in_child(prelude: str) -> dict:
    import json
    code = (prelude + "\nimport json, sys\nimport " + ", ".join(WORKER_MODULES) + "\n"
            "before = sorted(m for m in sys.modules if m.split('.')[:2] in (['sparkberg', 'table'], "
            "['sparkberg', 'catalog']))\n"
            "import sparkberg\n"
            "print(json.dumps({'before': before, 'catalog': callable(sparkberg.catalog), "
            "'table': sparkberg.Table.__module__}))\n")
    return json.loads(_child_output(code))


def test_a_worker_imports_no_table_api_until_used():
    """A PySpark worker unpickling a Python stage's function imports the modules it is defined in, and so the
    package: not the table and catalog modules, which it does not need. They come on first use."""
    got = _imported_in_child("import sys, types\nsys.modules['pyspark.daemon'] = types.ModuleType('pyspark.daemon')")
    assert got == {"before": [], "catalog": True, "table": "sparkberg.table"}


def test_on_the_driver_sparkberg_catalog_is_the_function():
    """Elsewhere the table API comes with the package, so that ``sparkberg.catalog`` stays the function even when
    a module of the ``sparkberg.catalog`` subpackage is imported first."""
    got = _imported_in_child("import sparkberg.catalog.rest")
    assert got["catalog"] is True and got["table"] == "sparkberg.table"


def test_the_rest_catalog_client_is_imported_when_a_rest_catalog_is_opened():
    """``import sparkberg`` (every scheduled job, every command of the CLI) does not import the REST catalog's HTTP
    client, which was two fifths of its imports' time: opening a REST catalog does."""
    code = ("import sys, sparkberg\n"
            "before = sorted(m for m in ('requests', 'urllib3', 'sparkberg.catalog.rest') if m in sys.modules)\n"
            "try:\n"
            "    sparkberg.catalog(None, 'http://127.0.0.1:9')\n"
            "except Exception:\n"
            "    pass\n"
            "print(before, 'requests' in sys.modules and 'sparkberg.catalog.rest' in sys.modules)\n")
    assert _child_output(code).split() == ["[]", "True"]


def test_the_jvm_is_reached_from_one_module():
    """Everything that reaches past PySpark's public API into the JVM (py4j, a session's ``_jvm``,
    ``_jsparkSession``, a DataFrame's ``_jdf``...) is in ``spark/jvm.py``, where each use has its fallback."""
    import re
    private = re.compile(r"\._(jvm|jsparkSession|jdf|jreader|jsc|jconf|jcol|jrdd|jseq|gateway)\b|"
                         r"\b(?:import|from)\s+py4j\b|_serialize_to_jvm|sparkContext\._")
    found = []
    for rel, path in modules():
        if rel == os.path.join("spark", "jvm.py"):
            continue
        for n, line in enumerate(open(path, encoding="utf-8").read().splitlines(), 1):
            code = line.split("#", 1)[0]
            if private.search(code) and not code.strip().startswith(('"', "'")):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert found == []


def test_import_and_a_table_s_load_import_neither_numpy_nor_pyarrow(tmp_path):
    """``import sparkberg`` and a first ``catalog(...).load_table(...)`` (every scheduled job's first step)
    import only what they use: not numpy, pyarrow, the SQL parser, the commit machinery or the planner, which the
    first read, write or statement imports."""
    import subprocess
    import sys
    setup = (f"import sys; sys.path.insert(0, {os.path.dirname(LIB)!r})\n"
             "import sparkberg\n"
             "from pyspark.sql.types import LongType, StructField, StructType\n"
             f"sparkberg.catalog(None, {str(tmp_path)!r}).create_table("
             "'db.t', StructType([StructField('id', LongType())]))\n")
    subprocess.run([sys.executable, "-c", setup], check=True, capture_output=True)
    heavy = ("numpy", "pyarrow", "sqlglot", "pandas", "sparkberg.commit.producer", "sparkberg.planning.scan",
             "sparkberg.avro.decode", "sparkberg.operations.merge", "sparkberg.sql.statements")
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(LIB)!r})\n"
            "import pyspark.sql, sparkberg\n"
            f"t = sparkberg.catalog(None, {str(tmp_path)!r}).load_table('db.t')\n"
            f"print(sorted(m for m in {heavy!r} if m in sys.modules), t.schema().fields[0].name)\n"
            "t.plan_files\n"
            "from sparkberg.planning.scan import plan\n"
            "print('numpy' in sys.modules)\n")
    assert _child_output(code).split("\n")[:2] == ["[] id", "True"]
