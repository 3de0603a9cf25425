"""Iceberg views through ``sparkberg.sql`` and the catalog's view API, on a SQL catalog and a REST catalog
(tests/restserver.py): every statement Iceberg's Spark SQL has for views, with its effect on the catalog checked
(the view's versions, schema, representations and properties); a query reads through a view (joins with tables,
views of views, time travel inside a view, column aliases, the view's default namespace); bad input is a named
error that writes nothing."""
import os
import sys

import pytest

import sparkberg
from sparkberg.errors import NoSuchTableError, NoSuchViewError, NotSupportedError, ValidationError, \
    ViewAlreadyExistsError

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from restserver import RestServer  # noqa: E402

pytestmark = pytest.mark.spark


@pytest.fixture(params=["sql", "rest"])
def cat(request, spark, tmp_path):
    if request.param == "sql":
        yield sparkberg.catalog(spark, f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh",
                                name="prod")
        return
    server = RestServer(str(tmp_path / "rest"))
    try:
        yield sparkberg.catalog(spark, server.uri, name="prod")
        assert server.violations == []
    finally:
        server.close()


def _rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def _setup(spark, cat):
    sql = lambda q: sparkberg.sql(spark, q, catalog=cat)  # noqa: E731
    cat.create_namespace("db")
    sql("CREATE TABLE db.t (id bigint, s string) USING iceberg")
    sql("INSERT INTO db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    return sql


def test_view_statements_and_their_effect_on_the_catalog(spark, cat):
    sql = _setup(spark, cat)
    sql("CREATE VIEW db.v (ident COMMENT 'the id', s) COMMENT 'ids over 1' TBLPROPERTIES ('k' = 'v') "
        "AS SELECT id, s FROM db.t WHERE id > 1")
    v = cat.load_view("db.v")
    m = v.metadata
    assert (m.current_version_id, len(m.versions), [e.version_id for e in m.version_log]) == (1, 1, [1])
    assert v.sql() == "SELECT id, s FROM db.t WHERE id > 1" and m.current_version.dialects == ["spark"]
    assert (m.current_version.default_namespace, m.current_version.default_catalog) == (("db",), "prod")
    assert [(f.field_id, f.name, f.doc, f.required) for f in v.schema().fields] == \
        [(0, "ident", "the id", False), (1, "s", None, False)]  # (numbered as Java numbers a view's)
    assert {k: v.properties[k] for k in ("k", "comment", "spark.query-column-names")} == \
        {"k": "v", "comment": "ids over 1", "spark.query-column-names": "id,s"}
    assert v.properties["create_engine_version"].startswith("Spark ")
    assert m.current_version.summary["engine-name"] == "spark"
    assert _rows(sql("SELECT * FROM db.v")) == [(2, "b"), (3, "c")]
    assert [c for c in sql("SELECT * FROM db.v").columns] == ["ident", "s"]
    # read in a join with a table, and in a view of the view (one-part names in the view's default namespace)
    assert _rows(sql("SELECT t.s, v.ident FROM db.t t JOIN db.v v ON t.id = v.ident")) == [("b", 2), ("c", 3)]
    sql("CREATE VIEW db.n AS SELECT count(*) AS n FROM v")
    assert _rows(sql("SELECT * FROM db.n")) == [(2,)]
    assert [tuple(r) for r in sql("SHOW VIEWS IN db").collect()] == [("db", "n", False), ("db", "v", False)]
    assert [tuple(r) for r in sql("SHOW VIEWS IN db LIKE 'v*'").collect()] == [("db", "v", False)]
    assert cat.list_views("db") == ["db.n", "db.v"] and cat.list_tables("db") == ["db.t"]
    # ALTER VIEW ... AS: a new version (a new schema), the properties kept
    sql("ALTER VIEW db.v AS SELECT id, upper(s) AS u FROM db.t")
    v = cat.load_view("db.v")
    assert (v.metadata.current_version_id, [f.name for f in v.schema().fields]) == (2, ["id", "u"])
    assert v.properties["k"] == "v" and v.properties["spark.query-column-names"] == "id,u"
    assert _rows(sql("SELECT * FROM db.v")) == [(1, "A"), (2, "B"), (3, "C")]
    assert _rows(sql("SELECT * FROM db.n")) == [(3,)]
    # CREATE OR REPLACE: another version; IF NOT EXISTS over an existing view changes nothing
    sql("CREATE OR REPLACE VIEW db.v AS SELECT id FROM db.t WHERE id = 3")
    sql("CREATE VIEW IF NOT EXISTS db.v AS SELECT 1 AS one")
    v = cat.load_view("db.v")
    assert v.metadata.current_version_id == 3 and _rows(v.to_df()) == [(3,)]
    # properties
    sql("ALTER VIEW db.v SET TBLPROPERTIES ('a' = 'b', 'k' = 'w')")
    sql("ALTER VIEW db.v UNSET TBLPROPERTIES ('a')")
    sql("ALTER VIEW db.v UNSET TBLPROPERTIES IF EXISTS ('missing')")
    assert cat.load_view("db.v").properties["k"] == "w" and "a" not in cat.load_view("db.v").properties
    props = dict(tuple(r) for r in sql("SHOW TBLPROPERTIES db.v").collect())
    assert props["k"] == "w" and "comment" not in props
    assert [tuple(r) for r in sql("SHOW TBLPROPERTIES db.v ('k')").collect()] == [("k", "w")]
    described = [tuple(r) for r in sql("DESCRIBE EXTENDED db.v").collect()]
    assert described[0] == ("id", "bigint", "") and ("View Text", "SELECT id FROM db.t WHERE id = 3", "") in described
    created = sql("SHOW CREATE TABLE db.v").collect()[0][0]
    assert created.startswith("CREATE VIEW prod.db.v (\n  id)\n") and "'k' = 'w'" in created and \
        created.endswith("AS\nSELECT id FROM db.t WHERE id = 3\n")
    # rename and drop
    sql("ALTER VIEW db.v RENAME TO db.w")
    assert cat.list_views("db") == ["db.n", "db.w"]
    with pytest.raises(NoSuchTableError):  # (the view n names v, which is gone)
        sql("SELECT * FROM db.n").collect()
    sql("DROP VIEW db.w")
    sql("DROP VIEW IF EXISTS db.w")
    assert cat.list_views("db") == ["db.n"]


def test_time_travel_inside_a_view_and_views_of_views(spark, cat):
    sql = _setup(spark, cat)
    first = cat.load_table("db.t").current_snapshot().snapshot_id
    sql("INSERT INTO db.t VALUES (4, 'd')")
    sql(f"CREATE VIEW db.old_rows AS SELECT id FROM db.t VERSION AS OF {first}")
    sql("CREATE VIEW db.all_rows AS SELECT id FROM db.t")
    sql("CREATE VIEW db.added AS SELECT id FROM all_rows EXCEPT SELECT id FROM old_rows")
    assert _rows(sql("SELECT * FROM db.old_rows")) == [(1,), (2,), (3,)]
    assert _rows(sql("SELECT * FROM db.added")) == [(4,)]
    assert _rows(cat.load_view("db.added").to_df()) == [(4,)]
    with pytest.raises(ValidationError, match="is a view: it has no versions"):
        sql("SELECT * FROM db.all_rows VERSION AS OF 1").collect()


def test_what_a_view_cannot_be_is_a_named_error_that_writes_nothing(spark, cat):
    sql = _setup(spark, cat)
    sql("CREATE VIEW db.v AS SELECT id FROM db.t")
    cases = [
        ("CREATE VIEW db.x AS SELECT * FROM db.missing", NoSuchTableError, "db.missing does not exist"),
        ("CREATE VIEW db.x AS SELECT nope FROM db.t", ValidationError, "view db.x: its query does not analyze"),
        ("CREATE VIEW db.t AS SELECT 1 AS one", ViewAlreadyExistsError, "a table of that name exists"),
        ("CREATE VIEW db.v AS SELECT 1 AS one", ViewAlreadyExistsError, "OR REPLACE"),
        ("DROP VIEW db.t", ValidationError, "db.t is a table"),
        ("DROP TABLE db.v", ValidationError, "db.v is a view"),
        ("DROP VIEW db.gone", NoSuchViewError, "db.gone does not exist"),
        ("ALTER VIEW db.t SET TBLPROPERTIES ('a' = 'b')", ValidationError, "db.t is a table"),
        ("CREATE VIEW db.x (a, b) AS SELECT id FROM db.t", ValidationError, "2 column names for a query of 1"),
    ]
    for statement, error, message in cases:
        with pytest.raises(error, match=message):
            sql(statement)
    # a cycle: v -> w -> v
    sql("CREATE VIEW db.w AS SELECT id FROM db.v")
    with pytest.raises(ValidationError, match="view db.v refers to itself: db.v -> db.w -> db.v"):
        sql("CREATE OR REPLACE VIEW db.v AS SELECT id FROM db.w")
    assert cat.list_views("db") == ["db.v", "db.w"] and cat.load_view("db.v").metadata.current_version_id == 1
    assert cat.list_tables("db") == ["db.t"]


def test_a_view_of_another_dialect_only_is_named_not_read(spark, cat):
    from sparkberg.format import types as T
    from sparkberg.format.views import Representation, ViewVersion, new_view
    _setup(spark, cat)
    version = ViewVersion(0, 1000, 0, {"engine-name": "trino"}, (Representation("sql", "SELECT 1", "trino"),), ("db",))
    schema = T.Schema([T.NestedField(1, "x", T.INT, False)])
    cat._backend.create_view("db.trino", new_view(cat._backend.default_table_location("db.trino"), schema, version))
    with pytest.raises(NotSupportedError, match="view db.trino has no Spark SQL.*of trino"):
        sparkberg.sql(spark, "SELECT * FROM db.trino", catalog=cat)


def test_a_catalog_without_views_says_so(spark, tmp_path):
    cat = sparkberg.catalog(spark, f"file://{tmp_path}/wh")
    cat.create_namespace("db")
    with pytest.raises(NotSupportedError, match="keeps no views"):
        cat.create_view("db.v", "SELECT 1 AS one")
    assert not cat.view_exists("db.v")


def test_the_cli_lists_and_describes_views(spark, tmp_path, capsys):
    import json
    from sparkberg.jobs import cli
    from sparkberg.jobs.common import OK
    uri, warehouse = f"sqlite:///{tmp_path}/c.db", f"file://{tmp_path}/wh"
    cat = sparkberg.catalog(spark, uri, warehouse=warehouse)
    sql = _setup(spark, cat)
    sql("CREATE VIEW db.v (ident COMMENT 'the id') COMMENT 'ids' AS SELECT id FROM db.t WHERE id > 1")
    args = ["--catalog", uri, "--warehouse", warehouse]
    assert cli.main([*args, "--output", "json", "views", "db"]) == OK
    assert json.loads(capsys.readouterr().out) == ["db.v"]
    assert cli.main([*args, "--output", "json", "describe", "db.v"]) == OK
    d = json.loads(capsys.readouterr().out)
    assert d["sql"] == {"spark": "SELECT id FROM db.t WHERE id > 1"} and d["versions"] == 1
    assert [(f["name"], f["doc"]) for f in d["schema"]] == [("ident", "the id")]
    assert d["properties"]["comment"] == "ids" and d["default_namespace"] == ["db"]
    assert cli.main([*args, "describe", "db.v"]) == OK
    text = capsys.readouterr().out
    assert text.startswith("db.v  (view, 1 versions") and "sql (spark):\n  SELECT id FROM db.t WHERE id > 1" in text


def test_a_view_commit_that_lost_a_race_is_tried_again_on_the_latest_version(spark, cat):
    sql = _setup(spark, cat)
    sql("CREATE VIEW db.v AS SELECT id FROM db.t")
    stale = cat.load_view("db.v")
    cat.load_view("db.v").set_properties(first="1")  # (another writer commits meanwhile)
    stale.set_properties(second="2")  # (its first try fails on the moved view; the retry keeps both)
    props = cat.load_view("db.v").properties
    assert (props["first"], props["second"]) == ("1", "2")
    stale.remove_properties("first")
    assert "first" not in cat.load_view("db.v").properties
    with pytest.raises(ValidationError, match="has no properties first"):
        stale.remove_properties("first")
