"""A query through ``sparkberg.sql`` reads only the files its WHERE can match: the conjuncts of a SELECT's WHERE
that name only one table's columns and translate to Iceberg predicates prune that table's files by partition values
and metrics, as ``to_df(filter=...)`` does; Spark still applies the whole WHERE. Where pruning could change a
result (the null-supplying side of an outer join, a plain name in a join, a name of an outer query) nothing is
pushed, and every result equals Spark's own over an unpruned read of the same rows."""
import re

import pytest

import sparkberg

pytestmark = pytest.mark.spark


@pytest.fixture
def tables(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.p", "id bigint, p int, s string", partition_by=["p"])
    t.append(spark.sql("SELECT id, CAST(id % 10 AS INT) AS p, CAST(id AS STRING) AS s FROM range(100)"))
    o = cat.create_table("db.o", "id bigint, k int")
    o.append(spark.sql("SELECT id, CAST(id AS INT) AS k FROM range(0, 200, 7)"))
    t.to_df().createOrReplaceTempView("p_all")
    o.to_df().createOrReplaceTempView("o_all")
    return cat


def _paths(spark, cat, query: str) -> list[int]:
    plan = sparkberg.sql(spark, "EXPLAIN " + query, catalog=cat).collect()[0][0]
    return [int(n) for n in re.findall(r"InMemoryFileIndex\((\d+) paths\)", plan)]


def _same(spark, cat, query: str) -> list[tuple]:
    got = sorted(map(tuple, sparkberg.sql(spark, query, catalog=cat).collect()), key=repr)
    want = sorted(map(tuple, spark.sql(query.replace("db.p", "p_all").replace("db.o", "o_all")).collect()), key=repr)
    assert got == want, query
    return got


@pytest.mark.parametrize("query, files", [
    ("SELECT id FROM db.p WHERE p = 3", [1]),
    ("SELECT id FROM db.p AS x WHERE x.p IN (1, 2) AND x.s LIKE '1%'", [2]),
    ("SELECT p, count(*) FROM db.p WHERE p >= 8 GROUP BY p", [2]),
    ("SELECT * FROM db.p WHERE id = 7 OR rand() < 2", [10]),  # (a conjunct that does not translate: nothing)
    ("SELECT * FROM db.p WHERE p = 3 AND rand() < 2", [1]),  # (only the conjunct that translates is pushed)
    ("SELECT id FROM db.p WHERE p = 3 AND id IN (SELECT id FROM db.o WHERE k < 50)", [1, 1]),
    ("SELECT * FROM (SELECT * FROM db.p WHERE p = 4) WHERE id > 50", [1]),
    # in a join, a table whose rows reach the WHERE as they are, by its qualified columns
    ("SELECT o.id FROM db.o AS o JOIN db.p AS x ON o.id = x.id WHERE x.p = 3", [2, 1]),
    ("SELECT x.id, o.k FROM db.p AS x LEFT JOIN db.o AS o ON o.id = x.id WHERE x.p = 3 AND o.k IS NULL", [1, 2]),
])
def test_a_query_reads_only_the_files_its_where_can_match(spark, tables, query, files):
    assert _paths(spark, tables, query) == files
    _same(spark, tables, query)


@pytest.mark.parametrize("query", [
    # (pushed into p, `x.s IS NULL` would drop the rows a LEFT JOIN keeps unmatched)
    "SELECT o.id, x.id FROM db.o AS o LEFT JOIN db.p AS x ON o.id = x.id WHERE x.s IS NULL",
    "SELECT o.id FROM db.o AS o JOIN db.p AS x ON o.id = x.id WHERE p = 3",  # (a plain name: either table's)
    "SELECT o.id FROM db.p AS x RIGHT JOIN db.o AS o ON o.id = x.id WHERE x.p IS NULL",
    "SELECT o.id FROM db.o AS o FULL JOIN db.p AS x ON o.id = x.id WHERE x.p = 3 OR x.p IS NULL",
    "SELECT o.id FROM db.o AS o LEFT ANTI JOIN db.p AS x ON o.id = x.id AND x.p = 3 WHERE o.k > 0",
    # (a name of the outer query's: not the inner table's column)
    "SELECT id FROM db.o AS o WHERE EXISTS (SELECT 1 FROM db.p AS x WHERE x.id = o.id AND k = 14)",
])
def test_nothing_is_pushed_where_it_could_change_the_result(spark, tables, query):
    assert sorted(_paths(spark, tables, query)) == [len(tables.load_table("db.o").plan_files().collect()), 10]
    _same(spark, tables, query)
