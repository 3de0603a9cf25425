"""Every error a user can meet is importable from ``sparkberg`` and ``sparkberg.errors`` and has a row in the
troubleshooting page (issue 90, item 7)."""
import ast
import os

import sparkberg
import sparkberg.errors

LIB = os.path.join(os.path.dirname(__file__), "..", "..", "lib", "sparkberg")
TROUBLESHOOTING = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "troubleshooting.md")


def _error_classes_defined_in_lib():
    """(module path, class name) of each class of the package that derives from an exception class named
    ``...Error`` or ``...Exception`` (not Python's bare ``Exception``, which internal signals derive from)."""
    for root, _, files in os.walk(LIB):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(root, f)
            for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
                if isinstance(node, ast.ClassDef) and any(
                        getattr(b, "id", "").endswith(("Error", "Exception")) and getattr(b, "id", "") != "Exception"
                        for b in node.bases):
                    yield os.path.relpath(path, LIB), node.name


def test_every_public_error_is_defined_in_errors_and_exported():
    found = sorted(_error_classes_defined_in_lib())
    elsewhere = [(p, n) for p, n in found if p != "errors.py"]
    assert elsewhere == [], f"errors defined outside sparkberg/errors.py: {elsewhere}"
    names = [n for _, n in found]
    assert {"SqlSyntaxError", "StatementFailedError", "RestCatalogError", "NotAuthorizedError",
            "CatalogDatabaseError"} <= set(names)
    for name in names:
        cls = getattr(sparkberg.errors, name)
        assert issubclass(cls, sparkberg.errors.SparkbergError), name
        assert getattr(sparkberg, name) is cls, f"sparkberg.{name} is not exported"


def test_every_error_has_a_troubleshooting_row():
    text = open(TROUBLESHOOTING, encoding="utf-8").read()
    missing = [n for _, n in _error_classes_defined_in_lib() if f"`{n}`" not in text and n != "SparkbergError"]
    assert missing == [], f"no troubleshooting row for {missing}"


def test_the_old_homes_still_import():
    from sparkberg.catalog.rest import NotAuthorizedError, RestCatalogError
    from sparkberg.catalog.sql import CatalogDatabaseError
    from sparkberg.sql.parsing import SqlSyntaxError
    from sparkberg.sql.statements import StatementFailedError
    assert RestCatalogError is sparkberg.RestCatalogError and NotAuthorizedError is sparkberg.NotAuthorizedError
    assert CatalogDatabaseError is sparkberg.CatalogDatabaseError and SqlSyntaxError is sparkberg.SqlSyntaxError
    assert StatementFailedError is sparkberg.StatementFailedError
