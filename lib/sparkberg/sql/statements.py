"""``sparkberg.sql``: Iceberg's Spark SQL statements, run through the table API.

Each statement is parsed (:mod:`sparkberg.sql.parsing`), its names resolved (:mod:`sparkberg.sql.names`), and run
by the one Python call that does the same thing (``INSERT INTO`` is ``Table.append``, ``MERGE INTO`` is
``Table.merge``, ``ALTER TABLE ... ADD PARTITION FIELD`` is ``Table.update_spec``, ``CALL`` a procedure of
:mod:`sparkberg.sql.procedures`...). Expressions (filters, ``SET`` values, ``MERGE`` conditions, the values of
``INSERT``) go to Spark as SQL text, so Spark's functions and semantics hold. A statement that names no sparkberg
table goes to ``spark.sql`` unchanged.

A statement either does what it says or leaves every table as it found it (each is one commit, or none). In a
script, the first statement that fails stops it: the error says which statement it was
(:class:`StatementFailedError`), and the statements before it stay done.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from sqlglot import exp

from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from sparkberg.errors import StatementFailedError, ValidationError
from sparkberg.expressions.sql import Filter
from sparkberg.spark.frames import known_count, local_dataframe
from sparkberg.catalog.config import conf_properties
from sparkberg.spark.session import session_setting
from sparkberg.spark.settings import session_conf
from sparkberg.sql import ddl, procedures, view_ddl
from sparkberg.sql.filters import filter_of
from sparkberg.sql.names import (
    DEFAULT_CATALOG_CONF, Names, empty, parts_of, read, referenced, rewrite_query, source, unqualified,
)
from sparkberg.sql.parsing import (
    Extension, SqlSyntaxError, Statement, parse, parse_extension, split, unsupported,
)
from sparkberg.table import Catalog

PARTITION_OVERWRITE_CONF = "spark.sql.sources.partitionOverwriteMode"


def run(spark: Any, text: str, catalog: Catalog | None = None) -> Any:
    """Run the statements of ``text`` (separated by ``;``) in order; the last one's result as a DataFrame.

    ``catalog`` (a :class:`~sparkberg.Catalog`) is where ``ns.t`` and ``<its name>.ns.t`` resolve; without it, the
    catalog ``spark.sql.defaultCatalog`` names, as configured by ``spark.sql.catalog.<name>.*``. Every statement is
    parsed before the first runs: a syntax error anywhere runs none."""
    statements, parsed = parse_script(text)
    names = Names(spark, catalog)
    result = None
    with _spark_s_own_current_catalog(spark):
        for statement, prepared in zip(statements, parsed):
            try:
                result = execute(names, statement, prepared)
            except Exception as e:  # noqa: BLE001 - any failure stops the script, named
                if len(statements) == 1:
                    raise
                raise StatementFailedError(statement.number, statement.summary, e) from e
            finally:
                names.forget()
    return result


@contextlib.contextmanager
def _spark_s_own_current_catalog(spark: Any) -> Iterator[None]:
    """Spark's session catalog as its current catalog while the statements run, when ``spark.sql.defaultCatalog``
    names a catalog only sparkberg serves (``spark.sql.catalog.<name>.type`` and the like, with no plugin class for
    Spark to load, as a Spark conf written for Iceberg Java has once its jar is gone): Spark resolves every query
    through its current catalog and would refuse each with CATALOG_NOT_FOUND. (A classic session analyses a query
    when it is made; Spark Connect analyses the DataFrame a query returns when it is read, under the conf then.)"""
    name = session_conf(spark, DEFAULT_CATALOG_CONF)
    ours = bool(name) and name.lower() != "spark_catalog" and session_conf(spark, f"spark.sql.catalog.{name}") is None \
        and bool(conf_properties(spark, name))
    with session_setting(spark, DEFAULT_CATALOG_CONF, "spark_catalog", when=ours):
        yield


def parse_script(text: str) -> tuple[list[Statement], list[tuple]]:
    """The statements of ``text`` and what :func:`prepare` makes of each: a syntax error anywhere is raised here,
    before anything runs (and, for a job, before Spark starts)."""
    statements = split(text)
    if not statements:
        raise ValidationError("no SQL statement to run")
    return statements, [prepare(statement) for statement in statements]


def prepare(statement: Statement) -> tuple[Statement, Extension | exp.Expr, bool]:
    """The statement parsed: (the statement, as parsed, its text now), its tree (or :class:`Extension`), and whether
    it is ``REPLACE TABLE`` (which must find the table)."""
    ext = parse_extension(statement)
    if ext is not None:
        return statement, ext, False
    if statement.text.split(None, 1)[0].upper() == "REPLACE":
        # (Spark's REPLACE TABLE, which sqlglot reads only as CREATE OR REPLACE: the table must exist)
        replaced = Statement("CREATE OR " + statement.text, statement.start - len("CREATE OR "), statement.number,
                             statement.script)
        return replaced, parse(replaced), True
    try:
        return statement, parse(statement), False
    except SqlSyntaxError:
        if statement.text.split(None, 1)[0].upper() not in _SPARK_ONLY:
            raise
        return statement, Extension("spark", [], {}), False  # (Spark's own statement, beyond sqlglot's grammar)


# Statements of Spark's own that name no table of a catalog (session settings, resources): when sqlglot cannot read
# one (RESET key, ADD JAR ...), it goes to Spark as it is; any other statement that does not parse is an error.
_SPARK_ONLY = {"SET", "RESET", "ADD", "LIST", "CLEAR", "USE", "CACHE", "UNCACHE", "MSCK", "LOAD", "DECLARE",
               "EXECUTE"}


def execute(names: Names, statement: Statement, prepared: tuple | None = None) -> Any:
    """Run one statement (``prepared``: what :func:`prepare` made of it); its result as a DataFrame (empty for a
    statement that returns no rows)."""
    statement, tree, must_exist = prepared or prepare(statement)
    if isinstance(tree, Extension):
        return _extension(names, statement, tree)
    if must_exist:
        return ddl.create(names, statement, tree, must_exist=True)
    handler = _HANDLERS.get(type(tree))
    if handler is not None:
        result = handler(names, statement, tree)
        if result is not NotImplemented:
            return result
    if isinstance(tree, exp.Command):
        return _command(names, statement, tree)
    return query(names, statement, tree)


def _command(names: Names, statement: Statement, tree: exp.Command) -> Any:
    """A statement sqlglot keeps as text: ``EXPLAIN`` (of a query over sparkberg tables too), else Spark's own."""
    if tree.name.upper() == "EXPLAIN":
        rest = tree.expression.name.strip()  # (the text after EXPLAIN)
        words = rest.split(None, 1)
        mode = words[0].upper() if words and words[0].upper() in ("EXTENDED", "CODEGEN", "COST", "FORMATTED") else ""
        inner = Statement(rest[len(mode):].strip() if mode else rest, statement.start, statement.number,
                          statement.script)
        aggregated = _aggregate_target(names, parse(inner))
        if aggregated is not None:  # (aggregates the table answers from its manifests where they can: say how)
            found, condition, items = aggregated
            if found.metadata_table is not None:
                rows = known_count(found.table.metadata_table(found.metadata_table, columns=[]))
                text = f"count of {found.label}: " + (f"its {rows} rows, known on the driver" if rows is not None
                                                        else "by Spark")
                return local_dataframe(names.spark, [(f"== sparkberg ==\n{text}",)], "plan string")
            text = found.table.explain_aggregates([(kind, column) for kind, column, _ in items], condition)
            if "from its manifests" in text or all(kind == "count" for kind, _, _ in items):
                return local_dataframe(names.spark, [(f"== sparkberg ==\n{text}",)], "plan string")
            rewritten, _ = rewrite_query(names, parse(inner))
            spark_plan = names.spark.sql(f"EXPLAIN {mode} {rewritten.sql(dialect='spark')}").collect()[0][0]
            return local_dataframe(names.spark, [(f"== sparkberg ==\n{text}\n\n{spark_plan}",)], "plan string")
        rewritten, replaced = rewrite_query(names, parse(inner))
        return names.spark.sql(f"EXPLAIN {mode} {rewritten.sql(dialect='spark')}" if replaced else statement.text)
    return names.spark.sql(statement.text)


def query(names: Names, statement: Statement, tree: exp.Expr) -> Any:
    """A statement Spark runs: a query (or a temporary view of one) over views of the sparkberg tables it reads;
    any other statement of Spark's unchanged, unless it names a sparkberg table (then it is not supported)."""
    temporary_view = isinstance(tree, exp.Create) and str(tree.args.get("kind") or "").upper() == "VIEW" and \
        tree.find(exp.TemporaryProperty) is not None
    aggregated = _aggregate(names, tree)
    if aggregated is not None:
        return aggregated
    selected = _one_table(names, tree)
    if selected is not None:
        return selected
    if isinstance(tree, exp.Query) or temporary_view:
        rewritten, replaced = rewrite_query(names, tree)
        return names.spark.sql(rewritten.sql(dialect="spark") if replaced else statement.text)
    for node in tree.find_all(exp.Table):
        found = names.resolve(parts_of(node))
        if found is not None:
            raise unsupported(statement, f"{statement.text.split(None, 1)[0].upper()} on table {found.label}")
    return names.spark.sql(statement.text)


# what a query's SELECT and its one table may hold for the query to be that table's rows, filtered and projected
_ONE_TABLE_SELECT = frozenset({"expressions", "from_", "where"})
_ONE_TABLE = frozenset({"this", "db", "catalog", "alias", "version"})


def _one_table(names: Names, tree: exp.Expr) -> Any:
    """``SELECT <items> FROM ns.t [WHERE c]`` of one sparkberg table (with time travel or not, or a metadata
    table), with nothing else in the query (no join, grouping, ordering, limit, subquery or qualified column):
    the DataFrame the table reads, filtered by ``c`` and projected by the items through Spark's DataFrame API,
    which analyzes to the plan of Spark's query of a view of the table, without the view and the second parse and
    analysis a rewritten query costs; ``SELECT * FROM ns.t`` is that DataFrame itself. None for any other query."""
    if not isinstance(tree, exp.Select) or any(v for k, v in tree.args.items() if k not in _ONE_TABLE_SELECT):
        return None
    source_ = tree.args.get("from_")
    node = source_.this if source_ is not None else None
    if not isinstance(node, exp.Table) or any(v for k, v in node.args.items() if k not in _ONE_TABLE):
        return None
    alias = node.args.get("alias")
    if (alias is not None and alias.columns) or any(c.table for c in tree.find_all(exp.Column)) or \
            any(q is not tree for q in tree.find_all(exp.Query)):
        return None  # (a column list renames the columns; a qualifier names the view's alias; a subquery its tables)
    got = read(names, node, referenced(tree))
    if got is None:
        return None
    df = got[1]
    where = tree.args.get("where")
    if where is not None:
        df = df.where(where.this.sql(dialect="spark"))
    items = tree.expressions
    if len(items) == 1 and isinstance(items[0], exp.Star) and not any(items[0].args.values()):
        return df
    return df.selectExpr(*(item.sql(dialect="spark") for item in items))


# the clauses that make a query more than aggregates of one table's rows
_NOT_AN_AGGREGATE = ("joins", "group", "having", "order", "limit", "offset", "distinct", "with", "laterals",
                     "windows", "qualify", "pivots", "sort", "cluster", "distribute")


def _aggregate(names: Names, tree: exp.Expr) -> Any:
    """``SELECT count(*), min(c), max(c) FROM ns.t [WHERE ...]`` (any of them, over one sparkberg table's current
    snapshot, no join, grouping or subquery) answered from the manifests where they hold the answer
    (:meth:`~sparkberg.Table.aggregates_from_manifests`), a count alone by :meth:`~sparkberg.Table.count`, and
    ``SELECT count(*) FROM ns.t.files`` (any metadata table, no filter) by the rows the driver knows the table has
    (it made them, or the manifest lists count them) or Spark's count of it; None for any other statement, and for
    minimums and maximums only the rows can give (Spark runs the query)."""
    aggregated = _aggregate_target(names, tree)
    if aggregated is None:
        return None
    found, condition, items = aggregated
    if all(kind == "count" for kind, _, _ in items):
        if found.metadata_table is None:
            n = found.table.count(condition)
        else:  # (a metadata table made on the driver knows its rows; else Spark counts them)
            df = found.table.metadata_table(found.metadata_table, columns=[])
            n = known_count(df)
            n = df.count() if n is None else n
        return local_dataframe(names.spark, [(n,) * len(items)], ", ".join(f"`{name}` bigint" for _, _, name in items))
    values = found.table.aggregates_from_manifests([(kind, column) for kind, column, _ in items], condition)
    if values is None:
        return None
    spark_types = {f.name.lower(): f.dataType for f in found.table.spark_schema().fields}
    # (as Spark types them: a count is never null, a minimum or maximum of no value is)
    schema = StructType([StructField(name, LongType(), False) if kind == "count" else
                         StructField(name, spark_types[column.lower()]) for kind, column, name in items])
    return local_dataframe(names.spark, [tuple(values)], schema)


def _aggregate_target(names: Names, tree: exp.Expr) -> tuple[Any, Any, list[tuple[str, str | None, str]]] | None:
    """(the table, the WHERE condition, the aggregates: (``count``, None, name), (``min`` or ``max``, column,
    name), each with its column's name as Spark gives it) of a query :func:`_aggregate` answers; None for any
    other statement."""
    if not isinstance(tree, exp.Select) or not tree.expressions or \
            any(tree.args.get(k) for k in _NOT_AN_AGGREGATE):
        return None
    source_ = tree.args.get("from_")
    node = source_.this if source_ is not None else None
    if not isinstance(node, exp.Table) or node.args.get("version") or node.args.get("joins"):
        return None
    qualifiers = {q.lower() for q in (node.name, node.alias) if q}
    items = []
    for item in tree.expressions:
        aggregate = item.this if isinstance(item, exp.Alias) else item
        if isinstance(aggregate, exp.Count) and aggregate.args.get("big_int") is not False and (
                isinstance(aggregate.this, exp.Star) or (isinstance(aggregate.this, exp.Literal)
                                                         and aggregate.this.is_number)):
            items.append(("count", None, item.alias if isinstance(item, exp.Alias) else "count(1)"))
            continue
        column = aggregate.this if isinstance(aggregate, (exp.Min, exp.Max)) else None
        if not isinstance(column, exp.Column) or aggregate.expressions or column.args.get("db") or \
                (column.table and column.table.lower() not in qualifiers):
            return None
        kind = "min" if isinstance(aggregate, exp.Min) else "max"
        items.append((kind, column.name, item.alias if isinstance(item, exp.Alias) else f"{kind}({column.name})"))
    found = names.resolve(parts_of(node))
    where = tree.args.get("where")
    if found is None or found.ref is not None or found.metadata_table is not None and (
            where is not None or any(kind != "count" for kind, _, _ in items)):
        return None
    if where is not None and where.find(exp.Subquery, exp.Select):
        return None
    condition = None if where is None else filter_of(unqualified(where.this, qualifiers))
    return found, condition, items


# --- writes ------------------------------------------------------------------------------------------------------
def _target(names: Names, node: exp.Expr):
    """(table, branch, alias) of a write's target: ``ns.t``, ``ns.t.branch_b``; ``ns.t.tag_x`` is an error."""
    found = names.table(parts_of(node))
    if found.metadata_table is not None:
        raise ValidationError(f"{found.label} is a metadata table: it cannot be written")
    branch = None
    if found.ref is not None:
        ref = found.table.metadata.refs.get(found.ref)
        if ref is not None and ref.type == "tag":
            raise ValidationError(f"{found.label}: tag {found.ref!r} cannot be written (tags are read-only)")
        branch = found.ref
    alias = node.alias or None
    return found.table, branch, alias


def _ours(names: Names, node: exp.Table) -> bool:
    """Whether a write's target is sparkberg's: a table of a sparkberg catalog, or a name in one (then a missing
    table is a named error, not Spark's)."""
    parts = parts_of(node)
    return names.resolve(parts) is not None or names.split(parts)[0] is not None


def _condition(names: Names, node: exp.Expr, qualifiers: set[str]) -> Filter:
    """The condition of a DELETE, UPDATE or REPLACE WHERE (or an UPDATE's value: its ``text``) as a filter (its
    Spark SQL text, and its tree from this parse: :mod:`sparkberg.sql.filters`): the target's qualifiers dropped,
    and the sparkberg tables its subqueries read (``id IN (SELECT id FROM ns.staging)``) replaced by views of
    them."""
    rewritten, _ = rewrite_query(names, unqualified(node, qualifiers))
    return filter_of(rewritten)


def insert(names: Names, statement: Statement, tree: exp.Insert) -> Any:
    """``INSERT INTO`` (``append``; ``REPLACE WHERE``: ``overwrite``), ``INSERT OVERWRITE`` (static: ``overwrite``
    of every row or of the ``PARTITION`` values; dynamic: ``dynamic_overwrite``), by position or by the names
    listed; ``t.branch_b`` writes that branch."""
    target = tree.this
    columns = None
    if isinstance(target, exp.Schema):
        columns = [c.name for c in target.expressions]
        target = target.this
    if not isinstance(target, exp.Table):
        return NotImplemented  # (INSERT OVERWRITE DIRECTORY and the like: Spark's)
    if not _ours(names, target):
        return NotImplemented
    table, branch, alias = _target(names, target)
    df = source(names, tree.expression if tree.expression is not None else tree.args["source"])  # (or TABLE src)
    schema_names = [f.name for f in table.metadata.current_schema.fields]
    static: dict[str, str] = {}
    partition = target.args.get("partition")
    if partition is not None:
        for e in partition.expressions:
            if isinstance(e, exp.EQ):
                static[e.this.name] = e.expression.sql(dialect="spark")
            elif not isinstance(e, exp.Column):
                raise ValidationError(f"PARTITION takes column = value or a column name, got {e.sql(dialect='spark')}")
    if tree.args.get("by_name"):
        df = df.select(*df.columns)
    else:
        wanted = columns if columns is not None else [n for n in schema_names if n not in static]
        missing = [n for n in schema_names if n not in wanted and n not in static]
        if missing:  # (as Spark writes an Iceberg table: every column is given)
            raise ValidationError(f"INSERT into {table.name} gives no data for column{'s' if len(missing) > 1 else ''} "
                                  f"{', '.join(missing)}: list every column")
        if len(df.columns) != len(wanted):
            raise ValidationError(f"INSERT into {table.name}: the query gives {len(df.columns)} columns, the table "
                                  f"takes {len(wanted)} ({', '.join(wanted)})")
        df = df.toDF(*wanted)
    if static:
        df = df.select(*df.columns, *[F.expr(v).alias(k) for k, v in static.items()])
    replace_where = tree.args.get("where")
    if replace_where is not None:  # (INSERT INTO t REPLACE WHERE cond: the rows matching cond replaced by the query's)
        table.overwrite(df, _condition(names, replace_where, _qualifiers(target, alias)), branch=branch)
    elif not tree.args.get("overwrite"):
        table.append(df, branch=branch)
    elif (session_conf(names.spark, PARTITION_OVERWRITE_CONF) or "static").strip().lower() == "dynamic":
        table.dynamic_overwrite(df, branch=branch)
    else:
        where = " AND ".join(f"`{k}` = {v}" for k, v in static.items()) or None
        table.overwrite(df, where, branch=branch)
    return empty(names)


def delete(names: Names, statement: Statement, tree: exp.Delete) -> Any:
    """``DELETE FROM t [WHERE ...]``: ``Table.delete``."""
    if not _ours(names, tree.this):
        return NotImplemented
    table, branch, alias = _target(names, tree.this)
    where = tree.args.get("where")
    condition = "true" if where is None else _condition(names, where.this, _qualifiers(tree.this, alias))
    table.delete(condition, branch=branch)
    return empty(names)


def _qualifiers(node: exp.Table, alias: str | None) -> set[str]:
    return {q.lower() for q in (alias, node.name) if q}


def update(names: Names, statement: Statement, tree: exp.Update) -> Any:
    """``UPDATE t SET ... [WHERE ...]``: ``Table.update``."""
    if not _ours(names, tree.this):
        return NotImplemented
    table, branch, alias = _target(names, tree.this)
    qualifiers = _qualifiers(tree.this, alias)
    where = tree.args.get("where")
    assignments = {unqualified(e.this, qualifiers).sql(dialect="spark").replace("`", ""):
                   _condition(names, e.expression, qualifiers).text for e in tree.expressions}
    condition = None if where is None else _condition(names, where.this, qualifiers)
    table.update(assignments, condition, branch=branch)
    return empty(names)


def merge(names: Names, statement: Statement, tree: exp.Merge) -> Any:
    """``MERGE INTO t USING src ON ... WHEN ...``: the ``Table.merge`` builder, a call per clause."""
    if not _ours(names, tree.this):
        return NotImplemented
    table, branch, alias = _target(names, tree.this)
    target_alias = alias or tree.this.name
    using = tree.args["using"]
    source_alias = using.alias or (using.name if isinstance(using, exp.Table) else None)
    if not source_alias:
        raise ValidationError("MERGE INTO ... USING (subquery) needs an alias for the subquery")
    src = source(names, using.copy() if not isinstance(using, exp.Table) else _bare(using))
    on = tree.args["on"].sql(dialect="spark")
    builder = table.merge(src, on, target_alias=target_alias, source_alias=source_alias, branch=branch)
    target_names = {target_alias.lower()}
    whens = tree.args.get("whens")
    for when in (whens.expressions if whens is not None else []):
        cond = when.args.get("condition")
        cond_sql = cond.sql(dialect="spark") if cond is not None else None
        then = when.args["then"]
        matched, by_source = bool(when.args.get("matched")), bool(when.args.get("source"))
        if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
            if not matched and not by_source:
                raise unsupported(statement, "DELETE in a WHEN NOT MATCHED clause")
            (builder.when_matched_delete if matched else builder.when_not_matched_by_source_delete)(cond_sql)
        elif isinstance(then, exp.Update):
            if len(then.expressions) == 1 and isinstance(then.expressions[0], exp.Star):
                if not matched:
                    raise unsupported(statement, "UPDATE SET * in WHEN NOT MATCHED BY SOURCE (no source row)")
                builder.when_matched_update_all(cond_sql)
            else:
                assignments = {unqualified(e.this, target_names).sql(dialect="spark").replace("`", ""):
                               e.expression.sql(dialect="spark") for e in then.expressions}
                (builder.when_matched_update if matched else builder.when_not_matched_by_source_update)(
                    assignments, cond_sql)
        elif isinstance(then, exp.Insert):
            if matched or by_source:
                raise unsupported(statement, "INSERT in a WHEN MATCHED clause")
            if isinstance(then.this, exp.Star):
                builder.when_not_matched_insert_all(cond_sql)
            else:
                cols = [unqualified(c, target_names).sql(dialect="spark").replace("`", "")
                        for c in then.this.expressions]
                values = [v.sql(dialect="spark") for v in then.expression.expressions]
                if len(cols) != len(values):
                    raise ValidationError(f"MERGE INSERT names {len(cols)} columns and gives {len(values)} values")
                builder.when_not_matched_insert(dict(zip(cols, values)), cond_sql)
        else:
            raise unsupported(statement, f"the MERGE action {then.sql(dialect='spark')}")
    builder.execute()
    return empty(names)


def _bare(node: exp.Table) -> exp.Table:
    bare = node.copy()
    bare.set("alias", None)
    return bare


# --- the rest ----------------------------------------------------------------------------------------------------
def _extension(names: Names, statement: Statement, ext: Extension) -> Any:
    if ext.kind == "spark":
        return names.spark.sql(statement.text)
    if ext.kind == "call":
        return procedures.call(names, statement, ext)
    return ddl.extension(names, statement, ext)


def truncate(names: Names, statement: Statement, tree: exp.TruncateTable) -> Any:
    """``TRUNCATE TABLE t``: every row deleted, one ``delete`` snapshot (as Iceberg's Spark tables do)."""
    nodes = tree.expressions or []
    if not all(_ours(names, n) for n in nodes):
        return NotImplemented
    for node in nodes:
        table, branch, _ = _target(names, node)
        table.delete("true", branch=branch)
    return empty(names)


def _describe(names: Names, statement: Statement, tree: exp.Describe) -> Any:
    node = tree.this
    if isinstance(node, exp.Table) and names.resolve(parts_of(node)) is None and names.view(parts_of(node)):
        return view_ddl.describe(names, node, str(tree.args.get("style") or "").upper() == "EXTENDED")
    if not isinstance(node, exp.Table) or names.resolve(parts_of(node)) is None:
        return NotImplemented
    return ddl.describe(names, names.table(parts_of(node)), str(tree.args.get("style") or "").upper() == "EXTENDED")


_HANDLERS: dict[type, Callable[[Names, Statement, Any], Any]] = {
    exp.Insert: insert,
    exp.Delete: delete,
    exp.Update: update,
    exp.Merge: merge,
    exp.Create: lambda names, statement, tree: ddl.create(names, statement, tree),
    exp.Drop: lambda names, statement, tree: ddl.drop(names, statement, tree),
    exp.Alter: lambda names, statement, tree: ddl.alter(names, statement, tree),
    exp.Describe: _describe,
    exp.TruncateTable: truncate,
    exp.Refresh: lambda names, statement, tree: empty(names) if _ours(names, tree.this) else NotImplemented,
}

