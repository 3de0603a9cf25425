"""The view statements of ``sparkberg.sql``, as Iceberg's Spark SQL has them: ``CREATE [OR REPLACE] VIEW [IF NOT
EXISTS] v [(c1 [COMMENT '...'], ...)] [COMMENT '...'] [TBLPROPERTIES (...)] AS <query>``, ``ALTER VIEW v AS
<query>``, ``ALTER VIEW v SET/UNSET TBLPROPERTIES``, ``ALTER VIEW v RENAME TO w``, ``DROP VIEW [IF EXISTS] v``,
``DESCRIBE [EXTENDED] v``, ``SHOW CREATE TABLE v`` and ``SHOW TBLPROPERTIES v`` (``SHOW VIEWS`` is
:func:`sparkberg.sql.ddl.show_names`'s, with ``SHOW TABLES``), each through the catalog's view API
(:class:`~sparkberg.table.View`). The query a view keeps is the statement's own text after ``AS``, dialect
``spark``.
"""
from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.tokens import TokenType
from sqlglot.dialects.spark import Spark

from sparkberg.errors import NoSuchViewError, ValidationError
from sparkberg.spark.types import to_spark_type
from sparkberg.sql.names import Names, catalog_name, empty, parts_of
from sparkberg.sql.parsing import Extension, Statement, property_text, set_properties
from sparkberg.table import CREATE_ENGINE_VERSION, ENGINE_VERSION, QUERY_COLUMN_NAMES, View

# (the view properties Spark keeps for itself: SHOW TBLPROPERTIES leaves them out, SHOW CREATE names them apart)
_RESERVED = ("comment", "owner", CREATE_ENGINE_VERSION, ENGINE_VERSION, QUERY_COLUMN_NAMES)
_QUERY_STARTS = {TokenType.SELECT, TokenType.WITH, TokenType.VALUES, TokenType.FROM, TokenType.L_PAREN,
                 TokenType.TABLE}


def query_text(statement: Statement) -> str:
    """The text of a view statement's query: what follows its first ``AS`` outside parentheses that begins a
    query."""
    tokens = Spark().tokenize(statement.text)
    depth = 0
    for k, t in enumerate(tokens):
        if t.token_type == TokenType.L_PAREN:
            depth += 1
        elif t.token_type == TokenType.R_PAREN:
            depth -= 1
        elif t.token_type == TokenType.ALIAS and depth == 0 and k + 1 < len(tokens) and \
                tokens[k + 1].token_type in _QUERY_STARTS:
            return statement.text[tokens[k + 1].start:].strip().rstrip(";").strip()
    raise ValidationError(f"statement {statement.number}: a view needs AS <query>")


def _target(names: Names, node: exp.Expr) -> tuple[Any, list[str]] | None:
    """(catalog, identifier) of a view name in a sparkberg catalog; None when it names none (then Spark's)."""
    cat, ident = names.split(parts_of(node))
    if cat is None:
        return None
    if len(ident) < 2:
        raise ValidationError(f"view name {'.'.join(parts_of(node))} needs a namespace (ns.view)")
    return cat, ident


def create(names: Names, statement: Statement, tree: exp.Create) -> Any:
    """``CREATE [OR REPLACE] VIEW [IF NOT EXISTS] ...`` (see the module docstring)."""
    target = tree.this
    columns = None
    if isinstance(target, exp.Schema):
        columns = [_column(c) for c in target.expressions]
        target = target.this
    found = _target(names, target)
    if found is None:
        return NotImplemented
    cat, ident = found
    comment, properties = None, {}
    props = tree.args.get("properties")
    for p in (props.expressions if props is not None else []):
        if isinstance(p, exp.SchemaCommentProperty):
            comment = p.this.name
        elif type(p) is exp.Property:
            properties[property_text(p.this)] = property_text(p.args["value"])
        else:
            raise ValidationError(f"CREATE VIEW does not take {p.sql(dialect='spark')}")
    if tree.args.get("exists") and cat.view_exists(ident):
        return empty(names)
    cat.create_view(ident, query_text(statement), columns=columns, comment=comment, properties=properties,
                    replace=bool(tree.args.get("replace")))
    return empty(names)


def _column(node: exp.Expr) -> tuple[str, str | None]:
    if isinstance(node, exp.ColumnDef):
        comment = next((c.kind.this.name for c in node.args.get("constraints") or []
                        if isinstance(c.kind, exp.CommentColumnConstraint)), None)
        return node.name, comment
    return node.name, None


def _view(names: Names, node: exp.Expr) -> View | None:
    """The view a statement names (None: no sparkberg catalog's name); a name that is no view is an error."""
    found = _target(names, node)
    if found is None:
        return None
    cat, ident = found
    if not cat.view_exists(ident):
        raise _no_view(cat, ident)
    return cat.load_view(ident)


def _no_view(cat: Any, ident: list[str]) -> Exception:
    """The error for a name that is no view: a table's, or nothing's."""
    if cat.table_exists(ident):
        return ValidationError(f"{'.'.join(ident)} is a table, not a view")
    return NoSuchViewError(f"view {'.'.join(ident)} does not exist")


def alter(names: Names, statement: Statement, tree: exp.Alter) -> Any:
    """``ALTER VIEW v AS <query>``, ``SET TBLPROPERTIES``, ``RENAME TO``."""
    view = _view(names, tree.this)
    if view is None:
        return NotImplemented
    for action in tree.args.get("actions") or []:
        if isinstance(action, exp.Query):
            view.catalog.replace_view(view.identifier, query_text(statement))
        elif isinstance(action, exp.AlterSet):
            view.set_properties(set_properties(statement, action, "ALTER VIEW"))
        elif isinstance(action, exp.AlterRename):
            new = parts_of(action.this)
            ident = [*view.identifier.namespace, new[0]] if len(new) == 1 else names.split(new)[1]
            view.catalog.rename_view(view.identifier, ident)
        else:
            raise ValidationError(f"ALTER VIEW does not take {action.sql(dialect='spark')}")
    return empty(names)


def drop(names: Names, tree: exp.Drop) -> Any:
    """``DROP VIEW [IF EXISTS] v``; a table is an error."""
    for node in tree.args.get("tables") or []:
        found = _target(names, node)
        if found is None:
            return NotImplemented
        cat, ident = found
        if not cat.view_exists(ident):
            error = _no_view(cat, ident)
            if tree.args.get("exists") and isinstance(error, NoSuchViewError):
                continue
            raise error
        cat.drop_view(ident)
    return empty(names)


def extension(names: Names, ext: Extension) -> Any:
    """``ALTER VIEW ... UNSET TBLPROPERTIES``, and ``SHOW TBLPROPERTIES`` / ``SHOW CREATE TABLE`` of a view;
    NotImplemented for what names no view."""
    found = _target(names, exp.to_table(".".join(f"`{p}`" for p in ext.table), dialect="spark"))
    if found is None or not found[0].view_exists(found[1]):
        if ext.kind == "unset_view_properties":
            _view(names, exp.to_table(".".join(f"`{p}`" for p in ext.table), dialect="spark"))
        return NotImplemented
    view = found[0].load_view(found[1])
    if ext.kind == "unset_view_properties":
        keys = [k for k in ext.args["keys"] if not ext.args["if_exists"] or k in view.properties]
        if keys:
            view.remove_properties(*keys)
        return empty(names)
    if ext.kind == "show_properties":
        props = {k: v for k, v in view.properties.items() if k not in ("comment", "owner")}
        key = ext.args["key"]
        if key is not None:
            value = props.get(key, f"View {view.name} does not have property: {key}")
            return names.spark.createDataFrame([(key, value)], "key string, value string")
        return names.spark.createDataFrame(sorted(props.items()), "key string, value string")
    if ext.kind == "show_create":
        return names.spark.createDataFrame([(show_create(names, view),)], "createtab_stmt string")
    raise ValidationError(f"{view.name} is a view: {ext.kind.replace('_', ' ')} takes a table")


def describe(names: Names, node: exp.Expr, extended: bool) -> Any:
    """``DESCRIBE [EXTENDED] v``: its columns, and with EXTENDED ``# Detailed View Information`` as Iceberg's
    Spark SQL shows it."""
    view = _view(names, node)
    if view is None:
        return NotImplemented
    out: list[tuple[str, str, str]] = [(f.name, to_spark_type(f.field_type).simpleString(), f.doc or "")
                                       for f in view.schema().fields]
    if extended:
        version = view.metadata.current_version
        props = view.properties
        listed = ", ".join(f"{k}={v}" for k, v in sorted(props.items()) if k not in _RESERVED)
        out += [("", "", ""), ("# Detailed View Information", "", ""),
                ("Comment", props.get("comment", ""), ""),
                ("View Catalog and Namespace", f"{catalog_name(view.catalog) or 'default'}."
                                               f"{'.'.join(view.identifier.namespace)}", ""),
                ("View Query Output Columns", f"[{', '.join(props.get(QUERY_COLUMN_NAMES, '').split(','))}]", ""),
                ("View Properties", f"[{listed}]", ""),
                ("Created By", props.get(CREATE_ENGINE_VERSION, ""), ""),
                ("View Text", version.sql("spark") or "", "")]
    return names.spark.createDataFrame(out, "col_name string, data_type string, comment string")


def show_create(names: Names, view: View) -> str:
    """``SHOW CREATE TABLE v`` as Iceberg's Spark SQL writes it for a view."""
    cols = []
    for f in view.schema().fields:
        text = f"  {_quote(f.name)}"
        if f.doc:
            text += " COMMENT '" + f.doc.replace("'", "\\'") + "'"
        cols.append(text)
    props = view.properties
    out = f"CREATE VIEW {catalog_name(view.catalog) or 'default'}.{view.name} (\n" + ",\n".join(cols) + ")\n"
    if "comment" in props:
        out += "COMMENT '" + props["comment"].replace("'", "\\'") + "'\n"
    shown = {k: v for k, v in props.items() if k not in _RESERVED}
    if shown:
        out += "TBLPROPERTIES (\n" + ",\n".join(f"  '{k}' = '{v}'" for k, v in sorted(shown.items())) + ")\n"
    return out + f"AS\n{view.sql('spark')}\n"


def _quote(name: str) -> str:
    return name if name.replace("_", "").isalnum() and not name[0].isdigit() else f"`{name}`"


__all__ = ["alter", "create", "describe", "drop", "extension", "query_text", "show_create"]
