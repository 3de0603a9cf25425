"""Process-wide state is listed in one place (sparkberg.state): every lru_cache and LRU a module keeps is
registered with its bound, and clearing empties it."""
import ast
import importlib
import os

from sparkberg import state

LIB = os.path.join(os.path.dirname(__file__), "..", "..", "lib", "sparkberg")


def _module(path):
    rel = os.path.relpath(path, LIB)[:-3].split(os.sep)
    return ".".join(["sparkberg", *(rel[:-1] if rel[-1] == "__init__" else rel)])


def kept_in_lib():
    """(module, the name a registration must give) of every lru_cache'd function and class-level LRU()."""
    out = []
    for root, _, files in os.walk(LIB):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(root, f)
            tree = ast.parse(open(path, encoding="utf-8").read())
            for node in tree.body:
                if isinstance(node, ast.FunctionDef) and any("lru_cache" in ast.unparse(d) for d in node.decorator_list):
                    out.append((_module(path), f"{_module(path)}.{node.name}"))
                if isinstance(node, ast.ClassDef) and any(
                        isinstance(s, ast.Assign) and ast.unparse(s.value) == "LRU()" for s in node.body):
                    out.append((_module(path), f"{_module(path)}.{node.name}"))
    return out


def test_every_cache_of_the_library_is_registered_with_its_bound():
    kept = kept_in_lib()
    assert len(kept) >= 6  # (the scan finds them: manifests, deletes, file ids, compiled programs)
    for module, _ in kept:
        importlib.import_module(module)
    registered = {k.name: k for k in state.entries()}
    assert [name for _, name in kept if name not in registered] == []
    assert all(k.bound for k in registered.values())


def test_clear_empties_a_cache():
    from sparkberg.read import fileids
    fileids._name_hash("data-00001.parquet")
    assert fileids._name_hash.cache_info().currsize > 0
    state.clear(["sparkberg.read.fileids._name_hash"])
    assert fileids._name_hash.cache_info().currsize == 0
