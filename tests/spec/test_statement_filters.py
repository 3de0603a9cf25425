"""A SQL statement's WHERE reaches Iceberg predicates through the tree of the statement's own parse
(:mod:`sparkberg.sql.filters`), with no text parsed again; it prunes exactly as the same condition given as a
filter string does (:mod:`sparkberg.expressions.sql`), for pruning and for deciding whole files alike."""
import pytest
import sqlglot

from sparkberg.expressions.predicates import TRUE
from sparkberg.expressions.sql import Filter, row_filter, translate_filter
from sparkberg.format import types as T
from sparkberg.sql.filters import filter_of

SCHEMA = T.Schema([
    T.NestedField(1, "id", T.LONG), T.NestedField(2, "n", T.INT), T.NestedField(3, "s", T.STRING),
    T.NestedField(4, "d", T.DATE), T.NestedField(5, "tz", T.TIMESTAMPTZ), T.NestedField(6, "ntz", T.TIMESTAMP),
    T.NestedField(7, "x", T.DOUBLE), T.NestedField(8, "f", T.FLOAT), T.NestedField(9, "dec", T.DecimalType(9, 2)),
    T.NestedField(10, "b", T.BOOLEAN), T.NestedField(11, "bin", T.BINARY),
    T.NestedField(12, "st", T.StructType([T.NestedField(13, "a", T.INT)])),
    T.NestedField(14, "odd name", T.STRING)])

CONDITIONS = [
    "id = 5", "id == 5", "id <> 5", "id != 5", "id < 5", "id <= 5", "id > 5", "id >= 5", "5 < id", "id <=> 5",
    "id = -5", "id = 5L", "n = 7", "n = 7S", "n = 7Y", "id IN (1, 2, 3)", "id NOT IN (1, 2)", "NOT id IN (1, 2)",
    "id BETWEEN 1 AND 10", "id NOT BETWEEN 1 AND 10", "s = 'a'", "s LIKE 'ab%'", "s NOT LIKE 'ab%'", "s LIKE '%b'",
    "s IS NULL", "s IS NOT NULL", "b IS TRUE", "b IS NOT FALSE", "b = true", "d = DATE '2024-01-01'",
    "d >= DATE'2024-01-01' AND d < DATE'2024-02-01'", "tz >= TIMESTAMP '2024-01-01 00:00:00Z'",
    "tz < TIMESTAMP '2024-01-01 00:00:00+01:00'", "ntz >= TIMESTAMP_NTZ '2024-01-01 00:00:00'",
    "ntz >= TIMESTAMP '2024-01-01 00:00:00Z'", "x > 1.5", "x > 1.5D", "x > 1e3", "f < 2.5F", "isnan(x)",
    "NOT isnan(x)", "x = NaN", "dec = 1.25", "dec = 1.25BD", "dec > 12.50BD", "bin = X'abcd'", "st.a = 3",
    "`odd name` = 'q'", "id = 1 OR s = 'a'", "NOT (id = 1 OR s = 'a')", "!(id = 1)", "(id > 1) AND (id < 5)",
    "id + 1 = 5", "upper(s) = 'A'", "id = n", "CAST(s AS INT) = 1", "id = CAST(1.7 AS INT)", "s = CAST(1 AS STRING)",
    "id IN (1, NULL)", "s = NULL", "id > 5 AND (s LIKE 'a%' OR d IS NULL)", "true", "false",
]


def _where(text: str):
    return sqlglot.parse_one(f"SELECT * FROM t WHERE {text}", dialect="spark").args["where"].this


@pytest.mark.parametrize("text", CONDITIONS)
def test_a_statement_s_where_prunes_as_its_text_does(text):
    parsed = filter_of(_where(text))
    for strengthen in (False, True):
        assert translate_filter(parsed, SCHEMA, "UTC", strengthen) == \
            translate_filter(text, SCHEMA, "UTC", strengthen), (text, strengthen)
    ours, theirs = row_filter(parsed, SCHEMA), row_filter(text, SCHEMA)
    assert (ours is None) == (theirs is None) and (ours is None or ours.columns == theirs.columns)


def test_a_condition_with_a_subquery_still_prunes_by_the_rest():
    # (the filter parser reads no subquery, so the text alone prunes nothing; the statement's tree keeps the rest)
    text = "id IN (SELECT id FROM staging) AND d >= DATE '2024-01-01'"
    assert translate_filter(text, SCHEMA) == TRUE
    assert translate_filter(filter_of(_where(text)), SCHEMA) != TRUE


def test_a_filter_is_parsed_once():
    parsed = Filter.of("id > 5")
    assert Filter.of(parsed) is parsed and str(parsed) == "id > 5" and parsed.tree is not None
    assert Filter.of("id >").tree is None and translate_filter("id >", SCHEMA) == TRUE
