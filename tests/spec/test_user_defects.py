"""What a new user met (issue 90), where no Spark session is needed: catalog names and types, identifiers with
backquotes, idempotency versions, syntax errors in SQL's words, snapshot ids given to the changelog."""
import os

import pytest

from sparkberg.catalog.base import parse_identifier, parse_namespace
from sparkberg.catalog.config import open_backend
from sparkberg.operations.request import Idempotency
from sparkberg.errors import InvalidIdentifierError, SqlSyntaxError, ValidationError
from sparkberg.planning.changes import snapshot_id_argument
from sparkberg.sql.parsing import in_sql_words, parse, split


def test_an_unknown_catalog_name_or_type_is_named_and_makes_no_directory(tmp_path, monkeypatch):
    # (item 11: a type in the properties counts; a bare name that no conf configures is not a new ./name warehouse)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValidationError, match="unknown catalog type 'nessie'"):
        open_backend(None, "nessie", properties={"type": "nessie", "warehouse": "s3://b/wh"})
    with pytest.raises(ValidationError, match="no catalog named 'lake'.*give its location \\(./lake"):
        open_backend(None, "lake")
    with pytest.raises(ValidationError, match="unknown catalog type 'nessie'"):
        open_backend(None, f"file://{tmp_path}/wh", type="nessie")
    assert os.listdir(tmp_path) == []
    # (a name the properties describe opens; a bare name that is an existing directory is that directory)
    backend, _, config = open_backend(None, "local", properties={"type": "hadoop", "warehouse": f"{tmp_path}/wh"})
    assert config["type"] == "hadoop" and config["name"] == "local"
    os.mkdir(tmp_path / "existing")
    _, _, config = open_backend(None, "existing")
    assert config["uri"].endswith("/existing")


@pytest.mark.parametrize("text,parts", [
    ("db.t", ("db", "t")), ("`ns`.t", ("ns", "t")), ("`my.db`.`t`", ("my.db", "t")), ("a.`b``c`.t", ("a", "b`c", "t")),
])
def test_backquotes_in_identifiers_are_read_as_sql_reads_them(text, parts):
    # (item 25: cat.create_table("`ns`.t") names the namespace ns, as sparkberg.sql does)
    ident = parse_identifier(text)
    assert (*ident.namespace, ident.name) == parts
    assert parse_namespace(text) == parts


def test_an_unclosed_backquote_is_named():
    with pytest.raises(InvalidIdentifierError, match="unclosed backquote"):
        parse_identifier("`db.t")


def test_idempotency_versions_are_64_bit():
    # (item 8: a version past 2^63 - 1, once recorded, would skip every later real version)
    assert Idempotency.of(("app", 2 ** 63 - 1)).version == 2 ** 63 - 1
    for bad in (2 ** 63, 2 ** 70, -1):
        with pytest.raises(ValidationError, match="at most 64 bits"):
            Idempotency.of(("app", bad))


@pytest.mark.parametrize("text,message", [
    ("SELECT a * FROM t", "line 1, column 12: the right operand of '*' is missing at 'FROM'"),
    ("SELECT * FROM t WHERE a =", "the right operand of '=' is missing"),
    ("SELECT (1 + 2 FROM t", "expected ')' at 'FROM'"),
    ("SELECT a FROM", "expected a table name, found the end of the statement"),
    ("SELEC 1", "line 1, column 1: 'SELEC' begins no SQL statement"),
])
def test_syntax_errors_in_sql_words(text, message):
    # (item 6: no parser class or token object in the message)
    with pytest.raises(SqlSyntaxError) as e:
        parse(split(text)[0])
    assert message in str(e.value) and "<class" not in str(e.value) and "sqlglot" not in str(e.value)


def test_in_sql_words_removes_parser_internals():
    out = in_sql_words("Required keyword: 'this' missing for <class 'sqlglot.expressions.core.ColumnDef'>")
    assert out == "incomplete column def: its this is missing"


def test_snapshot_ids_given_to_the_changelog():
    # (item 2: a string of digits is the id it spells; anything else is named by its type)
    assert snapshot_id_argument("6397334395241434991", "start snapshot") == 6397334395241434991
    assert snapshot_id_argument(None, "start snapshot") is None
    for bad in (1.5, True, "latest", [1]):
        with pytest.raises(ValidationError, match="start snapshot id must be an integer snapshot id"):
            snapshot_id_argument(bad, "start snapshot")
