"""The DDL of ``sparkberg.sql``: ``CREATE TABLE`` (and ``AS SELECT``, ``OR REPLACE``), ``DROP TABLE``, every
``ALTER TABLE`` of Spark and of Iceberg's SQL extensions, ``DESCRIBE``, ``SHOW TBLPROPERTIES``, ``SHOW TABLES``
and ``SHOW CREATE TABLE``, each through the table API's call for it; the output of the ``DESCRIBE`` and ``SHOW``
statements is what Spark shows for an Iceberg table (Iceberg's ``SparkTable`` properties and transforms).
"""
from __future__ import annotations

import fnmatch
import getpass
import os
from typing import Any

from pyspark.sql import types as T
from sqlglot import exp

from sparkberg.errors import NoSuchTableError, TableAlreadyExistsError, ValidationError
from sparkberg.spark.types import to_spark_type
from sparkberg.format import transforms as X
from sparkberg.format.partitioning import PartitionSpec, SortOrder
from sparkberg.format.types import Schema
from sparkberg.sql.names import Names, Resolved, catalog_name, empty, parts_of, source
from sparkberg.sql import view_ddl
from sparkberg.sql.parsing import Extension, Statement, property_text, set_properties, unsupported
from sparkberg.table import Table

DISTRIBUTION_MODE = "write.distribution-mode"
# (what Iceberg's SparkTable puts before the table's own properties)
# (the properties Spark keeps for itself, CatalogV2Util.TABLE_RESERVED_PROPERTIES: SHOW TBLPROPERTIES leaves them out)
_SPARK_RESERVED = ("provider", "location", "owner", "comment", "external", "is_managed_location")
_SPARK_TABLE_RESERVED = ("provider", "format", "current-snapshot-id", "location", "format-version", "sort-order",
                         "identifier-fields")


# --- CREATE, DROP ---------------------------------------------------------------------------------------------
def create(names: Names, statement: Statement, tree: exp.Create, must_exist: bool = False) -> Any:
    """``CREATE [OR REPLACE] TABLE [IF NOT EXISTS] ... [USING iceberg] [PARTITIONED BY] [LOCATION] [COMMENT]
    [TBLPROPERTIES] [AS SELECT]`` and ``REPLACE TABLE``; ``CREATE VIEW`` of a sparkberg catalog
    (:mod:`sparkberg.sql.view_ddl`)."""
    kind = str(tree.args.get("kind") or "").upper()
    if kind == "VIEW" and tree.find(exp.TemporaryProperty) is None:
        return view_ddl.create(names, statement, tree)
    if kind != "TABLE":
        return NotImplemented
    target = tree.this
    columns = None
    if isinstance(target, exp.Schema):
        columns = [e for e in target.expressions if isinstance(e, exp.ColumnDef)]
        target = target.this
    parts = parts_of(target)
    cat, ident = names.split(parts)
    if cat is None:
        return NotImplemented
    if len(ident) < 2:
        raise ValidationError(f"table name {'.'.join(parts)} needs a namespace (ns.table)")
    options = _create_options(tree)
    if options["provider"] not in (None, "iceberg"):
        raise ValidationError(f"{'.'.join(parts)}: a sparkberg catalog holds Iceberg tables, not "
                              f"USING {options['provider']}")
    query = tree.expression
    df = source(names, query) if query is not None else None
    if df is not None:
        schema: Any = _nullable(df.schema)
        if columns:
            raise ValidationError("CREATE TABLE ... AS SELECT takes its columns from the query, not a column list")
    elif columns:
        schema = ", ".join(c.sql(dialect="spark") for c in columns)
    else:
        raise ValidationError(f"CREATE TABLE {'.'.join(parts)} needs columns or AS SELECT")
    exists = cat.table_exists(ident)
    replace = bool(tree.args.get("replace"))
    if must_exist and not exists:
        raise NoSuchTableError(f"table {'.'.join(parts)} does not exist (REPLACE TABLE; CREATE OR REPLACE creates it)")
    if exists and not replace:
        if tree.args.get("exists"):
            return empty(names)
        raise TableAlreadyExistsError(f"table {'.'.join(parts)} already exists")
    # (Spark records the creating user as "owner" of every table CREATE or REPLACE makes)
    kwargs = dict(partition_by=options["partition_by"], properties={**options["properties"], "owner": user(names)})
    if exists:
        table = cat.load_table(ident)
        if options["location"] is not None and options["location"].rstrip("/") != table.location.rstrip("/"):
            raise ValidationError(f"REPLACE TABLE {table.name} cannot move the table to {options['location']}")
        with table.transaction() as tx:  # (REPLACE TABLE ... AS SELECT: the new definition and its rows, one commit)
            tx.replace(schema, **kwargs)
            if df is not None:
                tx.overwrite(df)  # (an "overwrite" snapshot, as Iceberg Java's replace writes it)
        return empty(names)
    table = cat.create_table(ident, schema, location=options["location"], **kwargs)
    if df is not None:
        try:
            table.append(df)
        except BaseException:
            cat.drop_table(ident, purge=True)  # (CREATE TABLE AS SELECT is atomic: no table when the write fails)
            raise
    return empty(names)


def user(names: Names) -> str:
    """The user Spark runs as (its ``Utils.getCurrentUserName``): ``SPARK_USER``, else the driver's user."""
    try:
        return names.spark.sparkContext.sparkUser()
    except Exception:  # noqa: BLE001 - Spark Connect: no context; the client's user
        return os.environ.get("SPARK_USER") or getpass.getuser()


def _create_options(tree: exp.Create) -> dict[str, Any]:
    out: dict[str, Any] = {"provider": None, "partition_by": [], "properties": {}, "location": None}
    props = tree.args.get("properties")
    for p in (props.expressions if props is not None else []):
        if isinstance(p, exp.FileFormatProperty):
            out["provider"] = p.this.name.lower()
        elif isinstance(p, exp.PartitionedByProperty):
            schema = p.this
            out["partition_by"] = [_term(e) for e in (schema.expressions if isinstance(schema, exp.Schema)
                                                        else [schema])]
        elif isinstance(p, exp.LocationProperty):
            out["location"] = p.this.name
        elif isinstance(p, exp.SchemaCommentProperty):
            out["properties"]["comment"] = p.this.name
        elif type(p) is exp.Property:
            out["properties"][property_text(p.this)] = property_text(p.args["value"])
        else:
            raise ValidationError(f"CREATE TABLE does not take {p.sql(dialect='spark')} for an Iceberg table")
    return out


def _term(node: exp.Expr) -> str:
    """A partition term of ``PARTITIONED BY`` as text the table API reads (``days(ts)``, ``bucket(16, id)``)."""
    if isinstance(node, exp.PartitionedByBucket):
        return f"bucket({node.expression.sql(dialect='spark')}, {node.this.sql(dialect='spark')})"
    if isinstance(node, exp.PartitionByTruncate):
        return f"truncate({node.expression.sql(dialect='spark')}, {node.this.sql(dialect='spark')})"
    return node.sql(dialect="spark").replace("`", "")


def _nullable(schema: Any) -> Any:
    """A query's schema with every field nullable, as Spark's CREATE TABLE AS SELECT makes it."""
    def relax(dt: Any) -> Any:
        if isinstance(dt, T.StructType):
            return T.StructType([T.StructField(f.name, relax(f.dataType), True, f.metadata) for f in dt.fields])
        if isinstance(dt, T.ArrayType):
            return T.ArrayType(relax(dt.elementType), True)
        if isinstance(dt, T.MapType):
            return T.MapType(relax(dt.keyType), relax(dt.valueType), True)
        return dt
    return relax(schema)


def drop(names: Names, statement: Statement, tree: exp.Drop) -> Any:
    """``DROP TABLE [IF EXISTS] t [PURGE]``; ``DROP VIEW`` (:mod:`sparkberg.sql.view_ddl`)."""
    kind = str(tree.args.get("kind") or "").upper()
    if kind == "VIEW" and not tree.args.get("temporary"):
        return view_ddl.drop(names, tree)
    if kind != "TABLE":
        return NotImplemented
    for node in tree.args.get("tables") or []:
        parts = parts_of(node)
        cat, ident = names.split(parts)
        if cat is None:
            return NotImplemented
        if not cat.table_exists(ident):
            if cat.view_exists(ident):
                raise ValidationError(f"{'.'.join(parts)} is a view: DROP VIEW drops it")
            if tree.args.get("exists"):
                continue
            raise NoSuchTableError(f"table {'.'.join(parts)} does not exist")
        cat.drop_table(ident, purge=bool(tree.args.get("purge")))
    return empty(names)


# --- ALTER TABLE ---------------------------------------------------------------------------------------------
def alter(names: Names, statement: Statement, tree: exp.Alter) -> Any:
    """The ``ALTER TABLE`` actions of Spark's grammar: rename, set properties, add, rename, alter and drop
    columns; ``ALTER VIEW`` (:mod:`sparkberg.sql.view_ddl`)."""
    if str(tree.args.get("kind") or "").upper() == "VIEW":
        return view_ddl.alter(names, statement, tree)
    if str(tree.args.get("kind") or "").upper() != "TABLE":
        return NotImplemented
    if names.resolve(parts_of(tree.this)) is None:
        if names.split(parts_of(tree.this))[0] is None:
            return NotImplemented
    found = names.table(parts_of(tree.this))
    table = found.table
    actions = tree.args.get("actions") or []
    schema_actions = []
    for action in actions:
        if isinstance(action, exp.AlterRename):
            new = parts_of(action.this)
            cat, ident = names.split(new)
            if len(new) == 1:
                ident = [*table.identifier.namespace, new[0]]
            elif cat is not found.catalog:
                raise ValidationError(f"cannot rename {table.name} into another catalog ({'.'.join(new)})")
            found.catalog.rename_table([*table.identifier.namespace, table.identifier.name], ident)
        elif isinstance(action, exp.AlterSet) and action.args.get("location") is not None:
            table.set_location(action.args["location"].name)
        elif isinstance(action, exp.AlterSet):
            props = set_properties(statement, action, "ALTER TABLE")
            if props:
                table.set_properties(props)
        else:
            schema_actions.append(action)
    if schema_actions:
        with table.update_schema() as u:
            for action in schema_actions:
                _schema_action(statement, u, action)
    return empty(names)


def _schema_action(statement: Statement, u: Any, action: exp.Expr) -> None:
    if isinstance(action, exp.Schema):
        for c in action.expressions:
            _schema_action(statement, u, c)
    elif isinstance(action, exp.ColumnDef):
        path = _path(action.this)
        doc, required = None, False
        for c in action.args.get("constraints") or []:
            kind = c.args.get("kind")
            if isinstance(kind, exp.CommentColumnConstraint):
                doc = kind.this.name
            elif isinstance(kind, exp.NotNullColumnConstraint):
                required = not kind.args.get("allow_null")
            else:
                raise unsupported(statement, f"the column constraint {c.sql(dialect='spark')}")
        position = action.args.get("position")
        after = _path(position.this) if position is not None and position.this is not None else None
        u.add_column(path, action.args["kind"].sql(dialect="spark"), doc=doc, after=after, required=required)
        if position is not None and str(position.args.get("position")).upper() == "FIRST":
            u.move_first(path)
    elif isinstance(action, exp.RenameColumn):
        u.rename_column(_path(action.this), _path(action.args["to"]).rpartition(".")[2])
    elif isinstance(action, exp.AlterColumn):
        path = _path(action.this)
        if action.args.get("dtype") is not None:
            u.update_column(path, action.args["dtype"].sql(dialect="spark"))
        elif action.args.get("comment") is not None:
            u.update_column(path, doc=action.args["comment"].name)
        elif action.args.get("allow_null"):
            u.make_optional(path)
        elif action.args.get("allow_null") is False:
            raise ValidationError(f"cannot make column {path} required (SET NOT NULL): rows may hold nulls")
        else:
            raise unsupported(statement, f"ALTER COLUMN {action.sql(dialect='spark')}")
    elif isinstance(action, exp.Drop) and str(action.args.get("kind")).upper() in ("COLUMN", "COLUMNS"):
        for node in action.args.get("tables") or []:
            for c in (node.expressions if isinstance(node, exp.Schema) else [node]):
                u.delete_column(_path(c))
    else:
        raise unsupported(statement, f"ALTER TABLE ... {action.sql(dialect='spark')}")


def _path(node: exp.Expr) -> str:
    """A (nested) column's dotted path, unquoted."""
    if isinstance(node, exp.Column):
        return ".".join(p.name for p in node.parts)
    if isinstance(node, exp.Dot):
        return ".".join(p.name for p in node.flatten())
    return node.name


def extension(names: Names, statement: Statement, ext: Extension) -> Any:
    """Iceberg's extension statements (and the ``SHOW`` statements)."""
    if ext.kind in ("show_tables", "show_views"):
        return show_names(names, ext.args["namespace"], ext.args["pattern"], ext.kind[len("show_"):])
    if ext.kind == "unset_view_properties" or (
            ext.kind in ("show_properties", "show_create") and names.resolve(ext.table) is None):
        out = view_ddl.extension(names, ext)
        if out is not NotImplemented:
            return out
    if names.resolve(ext.table) is None and names.split(ext.table)[0] is None:
        return names.spark.sql(statement.text)  # (not a sparkberg table: Spark's, or Iceberg Java's, to run)
    found = names.table(ext.table)
    if found.metadata_table is not None or found.ref is not None:
        raise ValidationError(f"{found.label} is not a table to {ext.kind.replace('_', ' ')}")
    t, a = found.table, ext.args
    if ext.kind == "show_properties":
        return show_properties(names, t, a["key"])
    if ext.kind == "show_create":
        return names.spark.createDataFrame([(show_create(found),)], "createtab_stmt string")
    if ext.kind == "add_partition_field":
        with t.update_spec() as u:
            u.add_field(a["term"], a["name"])
    elif ext.kind == "drop_partition_field":
        with t.update_spec() as u:
            u.remove_field(a["term"])
    elif ext.kind == "replace_partition_field":
        with t.update_spec() as u:
            u.remove_field(a["old"])
            u.add_field(a["term"], a["name"])
    elif ext.kind == "write_order":
        with t.transaction() as tx:
            tx.replace_sort_order(*a["order"])
            if a["distribution"] is not None:
                tx.set_properties({DISTRIBUTION_MODE: a["distribution"]})
    elif ext.kind == "set_identifier_fields":
        with t.update_schema() as u:
            u.set_identifier_fields(*a["fields"])
    elif ext.kind == "drop_identifier_fields":
        current = identifier_names(t.schema())
        for f in a["fields"]:
            if f not in current:
                raise ValidationError(f"cannot drop identifier field {f!r} of {t.name}: its identifier fields are "
                                      f"{current}")
        with t.update_schema() as u:
            u.set_identifier_fields(*[f for f in current if f not in a["fields"]])
    elif ext.kind == "unset_properties":
        t.remove_properties(*a["keys"])
    elif ext.kind == "move_column":
        with t.update_schema() as u:
            if a["first"]:
                u.move_first(a["column"])
            else:
                u.move_after(a["column"], a["after"])
    elif ext.kind == "set_not_null":
        raise ValidationError(f"cannot make column {a['column']} of {t.name} required (SET NOT NULL): rows may hold "
                              "nulls")
    elif ext.kind in ("create_branch", "replace_branch", "create_tag", "replace_tag"):
        _ref(t, ext.kind, a)
    elif ext.kind in ("drop_branch", "drop_tag"):
        kind = ext.kind.split("_")[1]
        ref = t.metadata.refs.get(a["name"])
        if ref is None or ref.type != kind:
            if not a["if_exists"]:
                raise ValidationError(f"table {t.name} has no {kind} {a['name']!r}")
        else:
            (t.drop_branch if kind == "branch" else t.drop_tag)(a["name"])
    else:
        raise unsupported(statement, ext.kind.replace("_", " "))
    return empty(names)


def _ref(t: Table, kind: str, a: dict[str, Any]) -> None:
    ref_kind = kind.split("_")[1]
    existing = t.metadata.refs.get(a["name"])
    if existing is not None and existing.type != ref_kind:
        raise ValidationError(f"table {t.name} has a {existing.type} named {a['name']!r}, not a {ref_kind}")
    retention = {"max_ref_age_ms": a["max_ref_age_ms"]}
    if ref_kind == "branch":
        retention.update(min_snapshots_to_keep=a["min_snapshots_to_keep"],
                         max_snapshot_age_ms=a["max_snapshot_age_ms"])
    if existing is not None and a["if_not_exists"]:
        return
    if existing is None and a["replace"] and not a["create"]:
        raise ValidationError(f"table {t.name} has no {ref_kind} {a['name']!r} to replace")
    if existing is not None and a["replace"]:
        (t.replace_branch if ref_kind == "branch" else t.replace_tag)(a["name"], a["snapshot_id"], **retention)
    else:
        (t.create_branch if ref_kind == "branch" else t.create_tag)(a["name"], a["snapshot_id"], **retention)


# --- DESCRIBE and SHOW ---------------------------------------------------------------------------------------
def identifier_names(schema: Schema) -> list[str]:
    """The names of the schema's identifier fields."""
    return [schema.name_of(i) for i in schema.identifier_field_ids]


def spark_transform(transform: X.Transform, column: str, sort: bool = False) -> str:
    """A partition term as Iceberg gives it to Spark (``days(ts)``, ``bucket(16, id)``, ``truncate(4, data)``), or
    with ``sort`` a sort term as Iceberg's ``Spark3Util.describe`` writes it (``truncate(data, 4)``)."""
    if isinstance(transform, X.IdentityTransform):
        return column
    if isinstance(transform, X.BucketTransform):
        return f"bucket({transform.num_buckets}, {column})"
    if isinstance(transform, X.TruncateTransform):
        return f"truncate({column}, {transform.width})" if sort else f"truncate({transform.width}, {column})"
    plural = {"year": "years", "month": "months", "day": "days", "hour": "hours"}.get(str(transform))
    return f"{plural}({column})" if plural else f"{transform}({column})"


def partitioning(spec: PartitionSpec, schema: Schema) -> list[str]:
    """A spec's fields as Spark shows an Iceberg table's partitioning (void fields left out)."""
    return [spark_transform(f.transform, schema.name_of(f.source_id)) for f in spec.fields
            if not isinstance(f.transform, X.VoidTransform)]


def describe_order(order: SortOrder, schema: Schema) -> str:
    """A sort order as Iceberg's ``Spark3Util.describe`` writes it (``id ASC NULLS FIRST, days(ts) DESC ...``)."""
    return ", ".join(f"{spark_transform(f.transform, schema.name_of(f.source_id), sort=True)} {f.direction.upper()} "
                     f"{f.null_order.upper().replace('-', ' ')}" for f in order.fields)


def spark_properties(t: Table) -> dict[str, str]:
    """The table's properties as Iceberg's ``SparkTable`` gives them to Spark."""
    m = t.metadata
    out = {"format": "iceberg/" + m.properties.get("write.format.default", "parquet"), "provider": "iceberg",
           "current-snapshot-id": str(m.current_snapshot.snapshot_id) if m.current_snapshot else "none",
           "location": m.location, "format-version": str(m.format_version)}
    order = m.sort_order()
    if order.fields:
        out["sort-order"] = describe_order(order, m.current_schema)
    ids = identifier_names(m.current_schema)
    if ids:
        out["identifier-fields"] = "[" + ",".join(ids) + "]"
    out.update((k, v) for k, v in m.properties.items() if k not in _SPARK_TABLE_RESERVED)
    return out


def show_properties(names: Names, t: Table, key: str | None) -> Any:
    """``SHOW TBLPROPERTIES t [(key)]``: what Spark shows of ``spark_properties``, without its reserved keys."""
    props = {k: v for k, v in spark_properties(t).items() if k not in _SPARK_RESERVED}
    if key is not None:
        value = props.get(key, f"Table {t.name} does not have property: {key}")
        return names.spark.createDataFrame([(key, value)], "key string, value string")
    return names.spark.createDataFrame(sorted(props.items()), "key string, value string")


def show_names(names: Names, namespace: list[str] | None, pattern: str | None, kind: str = "tables") -> Any:
    """``SHOW TABLES`` or ``SHOW VIEWS`` ``[IN ns] [LIKE 'pattern']``: Spark's columns (namespace, tableName or
    viewName, isTemporary)."""
    cat = names.default
    ns = namespace
    if namespace is not None and len(namespace) >= 2 and names.named(namespace[0]) is not None:
        cat, ns = names.named(namespace[0]), namespace[1:]
    if cat is None or ns is None:
        raise ValidationError(f"SHOW {kind.upper()} needs IN <namespace> of a sparkberg catalog")
    found = [n.split(".")[-1] for n in (cat.list_views(ns) if kind == "views" else cat.list_tables(ns))]
    if pattern:
        options = [p.strip() for p in pattern.split("|")]
        found = [n for n in found if any(fnmatch.fnmatchcase(n.lower(), p.lower().replace(".*", "*"))
                                         for p in options)]
    column = "viewName" if kind == "views" else "tableName"
    return names.spark.createDataFrame([(".".join(ns), n, False) for n in sorted(found)],
                                       f"namespace string, {column} string, isTemporary boolean")


def describe(names: Names, found: Resolved, extended: bool) -> Any:
    """``DESCRIBE TABLE [EXTENDED]`` as Spark shows an Iceberg table: the columns, ``# Partitioning``, and with
    EXTENDED the metadata columns and ``# Detailed Table Information``."""
    t = found.table
    schema = t.schema()
    out: list[tuple[str, str, str | None]] = [
        (f.name, to_spark_type(f.field_type).simpleString(), f.doc) for f in schema.fields]
    parts = partitioning(t.spec(), schema)
    if parts:
        out += [("", "", ""), ("# Partitioning", "", "")] + [(f"Part {i}", p, "") for i, p in enumerate(parts)]
    if extended:
        out += [("", "", ""), ("# Metadata Columns", "", ""), ("_spec_id", "int", ""),
                ("_partition", "struct<...>", ""), ("_file", "string", ""), ("_pos", "bigint", ""),
                ("_deleted", "boolean", "")]
        props = spark_properties(t)
        listed = ",".join(f"{k}={v}" for k, v in sorted(props.items())
                          if k not in ("provider", "location", "comment", "owner"))
        out += [("", "", ""), ("# Detailed Table Information", "", ""),
                ("Name", f"{catalog_name(found.catalog) or 'default'}.{t.name}", "")]
        if "comment" in props:
            out.append(("Comment", props["comment"], ""))
        out += [("Location", t.location, ""), ("Provider", "iceberg", ""), ("Table Properties", f"[{listed}]", "")]
    return names.spark.createDataFrame(out, "col_name string, data_type string, comment string")


def show_create(found: Resolved) -> str:
    """``SHOW CREATE TABLE`` as Spark writes it for a v2 table."""
    t = found.table
    schema = t.schema()
    cols = []
    for f in schema.fields:
        text = f"  {_quote(f.name)} {to_spark_type(f.field_type).simpleString().upper()}"
        if f.required:
            text += " NOT NULL"
        if f.doc:
            text += " COMMENT '" + f.doc.replace("'", "\\'") + "'"
        cols.append(text)
    name = f"{catalog_name(found.catalog) or 'default'}.{t.name}"
    out = f"CREATE TABLE {name} (\n" + ",\n".join(cols) + ")\nUSING iceberg\n"
    parts = partitioning(t.spec(), schema)
    if parts:
        out += f"PARTITIONED BY ({', '.join(parts)})\n"
    props = spark_properties(t)
    if "comment" in props:
        out += "COMMENT '" + props["comment"].replace("'", "\\'") + "'\n"
    out += f"LOCATION '{t.location}'\n"
    shown = {k: v for k, v in props.items() if k not in ("provider", "location", "comment", "owner")}
    if shown:
        out += "TBLPROPERTIES (\n" + ",\n".join(f"  '{k}' = '{v}'" for k, v in sorted(shown.items())) + ")\n"
    return out


def _quote(name: str) -> str:
    return name if name.replace("_", "").isalnum() and not name[0].isdigit() else f"`{name}`"
