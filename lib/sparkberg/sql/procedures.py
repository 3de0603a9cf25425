"""``CALL <catalog>.system.<procedure>(...)``: Iceberg's Spark procedures, with Java's argument names (named or
positional, in Java's order) and Java's output columns, each run by the table API's call for it.

Argument values are Spark SQL expressions evaluated by Spark (``TIMESTAMP '2024-01-01 00:00:00'``,
``current_timestamp() - INTERVAL 7 DAYS``, ``array(1, 2)``, ``map('min-input-files', '2')``); a timestamp is
taken in the session's time zone.
"""
from __future__ import annotations

import decimal
import re
from dataclasses import dataclass
from typing import Any, Callable

from sparkberg.errors import NotSupportedError, ValidationError
from sparkberg.identifiers import split_dotted
from sparkberg.sql.names import Names, Resolved
from sparkberg.sql.parsing import Extension, Statement


@dataclass(frozen=True)
class Param:
    """A parameter: its name, whether it is required, and its type as Java's procedure declares it (``string``,
    ``int``, ``long``, ``boolean``, ``timestamp``, ``map``, ``array``)."""

    name: str
    required: bool = False
    kind: str = "string"


@dataclass(frozen=True)
class Procedure:
    """A procedure: its parameters in Java's order, and the function that runs it on the bound arguments."""

    params: tuple[Param, ...]
    run: Callable[[Names, dict[str, Any]], Any]


def call(names: Names, statement: Statement, ext: Extension) -> Any:
    """Run the ``CALL`` statement ``ext``; its output as a DataFrame."""
    name = ext.args["procedure"]
    if len(name) < 2 or name[-2].lower() != "system" or (len(name) == 3 and names.named(name[0]) is None):
        raise NotSupportedError(f"unknown procedure {'.'.join(name)} in statement {statement.number}: sparkberg runs "
                                f"system.<procedure> ({', '.join(sorted(PROCEDURES))})")
    procedure = PROCEDURES.get(name[-1].lower())
    if procedure is None:
        raise NotSupportedError(f"procedure {'.'.join(name)} is not supported by sparkberg (statement "
                                f"{statement.number}); it runs {', '.join(sorted(PROCEDURES))}")
    args = bind(name[-1].lower(), procedure.params, ext.args["positional"], ext.args["named"])
    kinds = {p.name: p.kind for p in procedure.params}
    values = {k: typed(name[-1].lower(), k, kinds[k], v) for k, v in evaluate(names, args, kinds).items()}
    if len(name) == 3:  # (CALL cat.system.p('db.t'): the table is cat's, as in Iceberg Java)
        names = names.scoped(names.named(name[0]))
    return procedure.run(names, values)


def bind(procedure: str, params: tuple[Param, ...], positional: list[str], named: dict[str, str]) -> dict[str, str]:
    """Argument texts by parameter name, as Spark binds a procedure's arguments."""
    if len(positional) > len(params):
        raise ValidationError(f"{procedure} takes at most {len(params)} arguments, got {len(positional)}")
    out = {p.name: text for p, text in zip(params, positional)}
    known = {p.name for p in params}
    for key, text in named.items():
        if key not in known:
            raise ValidationError(f"{procedure} has no argument {key!r}; its arguments are "
                                  f"{', '.join(p.name for p in params)}")
        if key in out:
            raise ValidationError(f"{procedure}: argument {key!r} is given twice")
        out[key] = text
    missing = [p.name for p in params if p.required and p.name not in out]
    if missing:
        raise ValidationError(f"{procedure} needs argument{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    return out


class _Unparsed:
    """A timestamp argument's text that Spark could not read as a timestamp (:func:`typed` names it)."""

    def __init__(self, text: str):
        self.text = text


def evaluate(names: Names, args: dict[str, str], kinds: dict[str, str] | None = None) -> dict[str, Any]:
    """The values of the argument expressions, evaluated by Spark in one query (timestamps as epoch millis; a
    ``timestamp`` parameter given a string is read as Spark casts a string to a timestamp)."""
    if not args:
        return {}
    keys = list(args)
    df = names.spark.sql("SELECT " + ", ".join(f"({args[k]}) AS `a{i}`" for i, k in enumerate(keys)))
    cols, texts = [], set()
    for i, f in enumerate(df.schema.fields):
        kind = type(f.dataType).__name__
        if kind.startswith("Timestamp"):
            cols.append(f"unix_millis(CAST(`a{i}` AS TIMESTAMP)) AS `a{i}`")
        elif kind == "StringType" and (kinds or {}).get(keys[i]) == "timestamp":
            texts.add(i)
            cols += [f"`a{i}`", f"unix_millis(try_cast(`a{i}` AS TIMESTAMP)) AS `t{i}`"]
        else:
            cols.append(f"`a{i}`")
    row = df.selectExpr(*cols).collect()[0].asDict()
    out = {}
    for i, k in enumerate(keys):
        value = row[f"a{i}"]
        if i in texts and value is not None:
            value = row[f"t{i}"] if row[f"t{i}"] is not None else _Unparsed(value)
        out[k] = value
    return out


_INTEGER_TEXT = re.compile(r"^\s*[-+]?\d+\s*$")


def typed(procedure: str, name: str, kind: str, value: Any) -> Any:
    """An argument's value as its parameter's type, or a named error naming the procedure, the argument and the
    value (as Java refuses an argument it cannot cast: ``retain_last => 'abc'``)."""
    if value is None:
        return None

    def refuse(what: str) -> ValidationError:
        shown = value.text if isinstance(value, _Unparsed) else value
        return ValidationError(f"{procedure}: argument {name} must be {what}, got {type(shown).__name__} "
                               f"{shown!r}")
    if kind in ("int", "long"):
        if isinstance(value, bool) or isinstance(value, float) and not value.is_integer():
            raise refuse("an integer")
        if isinstance(value, str):
            if not _INTEGER_TEXT.match(value):
                raise refuse("an integer")
            value = int(value)
        if not isinstance(value, (int, float, decimal.Decimal)) or int(value) != value:
            raise refuse("an integer")
        value = int(value)
        if not -2 ** 63 <= value < 2 ** 63 or kind == "int" and not -2 ** 31 <= value < 2 ** 31:
            raise refuse(f"a {'32' if kind == 'int' else '64'}-bit integer")
        return value
    if kind == "boolean":
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if not isinstance(value, bool):
            raise refuse("a boolean")
        return value
    if kind == "timestamp":
        if isinstance(value, bool) or not isinstance(value, int):
            raise refuse("a timestamp (TIMESTAMP '2024-01-01 00:00:00', or a string Spark reads as one)")
        return value
    if kind == "map":
        if not isinstance(value, dict):
            raise refuse("a map (map('key', 'value', ...))")
        return value
    if kind == "array":
        if not isinstance(value, (list, tuple)):
            raise refuse("an array (array(...))")
        return list(value)
    if isinstance(value, (dict, list, tuple)):
        raise refuse("a string")
    return value if isinstance(value, str) else str(value)


def _table(names: Names, values: dict[str, Any], key: str = "table") -> Resolved:
    found = names.table(split_name(str(values[key])))
    if found.metadata_table is not None or found.ref is not None:
        raise ValidationError(f"{values[key]} is not a table a procedure can take")
    return found


def split_name(text: str) -> list[str]:
    """A dotted name's parts, backquoted ones kept whole (```my.db`.t``), as every name is read
    (:func:`~sparkberg.identifiers.split_dotted`)."""
    parts = split_dotted(text.strip())
    if any(not p for p in parts):
        raise ValidationError(f"{text!r} is not a table name")
    return parts


def _rows(names: Names, schema: str, rows: list[tuple]) -> Any:
    return names.spark.createDataFrame(rows, schema)


def _current(t: Any) -> int | None:
    s = t.current_snapshot()
    return s.snapshot_id if s is not None else None


_ROLLBACK = "previous_snapshot_id bigint, current_snapshot_id bigint"
_PICKED = "source_snapshot_id bigint, current_snapshot_id bigint"


def _rollback_to_snapshot(names: Names, v: dict[str, Any]) -> Any:
    t = _table(names, v).table
    before = _current(t)
    t.rollback_to_snapshot(int(v["snapshot_id"]))
    return _rows(names, _ROLLBACK, [(before, _current(t))])


def _rollback_to_timestamp(names: Names, v: dict[str, Any]) -> Any:
    t = _table(names, v).table
    before = _current(t)
    t.rollback_to_timestamp(int(v["timestamp"]))
    return _rows(names, _ROLLBACK, [(before, _current(t))])


def _set_current_snapshot(names: Names, v: dict[str, Any]) -> Any:
    t = _table(names, v).table
    if (v.get("snapshot_id") is None) == (v.get("ref") is None):
        raise ValidationError("set_current_snapshot needs either snapshot_id or ref")
    snapshot_id = v.get("snapshot_id")
    if snapshot_id is None:
        ref = t.metadata.refs.get(str(v["ref"]))
        if ref is None:
            raise ValidationError(f"table {t.name} has no branch or tag {v['ref']!r}")
        snapshot_id = ref.snapshot_id
    before = _current(t)
    t.set_current_snapshot(int(snapshot_id))
    return _rows(names, _ROLLBACK, [(before, _current(t))])


def _cherrypick_snapshot(names: Names, v: dict[str, Any]) -> Any:
    t = _table(names, v).table
    t.cherry_pick(int(v["snapshot_id"]))
    return _rows(names, _PICKED, [(int(v["snapshot_id"]), _current(t))])


def _publish_changes(names: Names, v: dict[str, Any]) -> Any:
    t = _table(names, v).table
    wap_id = str(v["wap_id"])
    staged = [s for s in t.snapshots() if s.summary.get("wap.id") == wap_id]
    if not staged:
        raise ValidationError(f"table {t.name} has no snapshot staged with wap.id {wap_id!r}")
    t.publish_wap(wap_id)
    return _rows(names, _PICKED, [(staged[-1].snapshot_id, _current(t))])


def _fast_forward(names: Names, v: dict[str, Any]) -> Any:
    t = _table(names, v).table
    branch, to = str(v["branch"]), str(v["to"])
    ref = t.metadata.refs.get(branch)
    before = ref.snapshot_id if ref is not None else None
    t.fast_forward(branch, to)
    return _rows(names, "branch_updated string, previous_ref bigint, updated_ref bigint",
                 [(branch, before, t.metadata.refs[branch].snapshot_id)])


def _positive(v: dict[str, Any], key: str) -> None:
    if v.get(key) is not None and int(v[key]) <= 0:
        raise ValidationError(f"{key} must be positive, got {v[key]}")


def _expire_snapshots(names: Names, v: dict[str, Any]) -> Any:
    t = _table(names, v).table
    _positive(v, "max_concurrent_deletes")  # (deletes run on Spark's executors; the pool size has no use here)
    if v.get("clean_expired_metadata"):
        raise NotSupportedError("expire_snapshots: clean_expired_metadata (removing unused schemas and specs) is not "
                                "supported by sparkberg")
    retain = v.get("retain_last")
    if retain is not None and int(retain) < 1:
        raise ValidationError(f"retain_last must be at least 1, got {retain}")
    return t.expire_snapshots(v.get("older_than"), int(retain) if retain is not None else None,
                              v.get("snapshot_ids"))


def _remove_orphan_files(names: Names, v: dict[str, Any]) -> Any:
    t = _table(names, v).table
    _positive(v, "max_concurrent_deletes")
    if v.get("file_list_view") is not None:
        raise NotSupportedError("remove_orphan_files: file_list_view is not supported by sparkberg (it lists the "
                                "location itself, on Spark's executors)")
    mode = str(v.get("prefix_mismatch_mode") or "error").lower()
    return t.remove_orphan_files(v.get("older_than"), v.get("location"), bool(v.get("dry_run") or False),
                                 v.get("equal_schemes"), v.get("equal_authorities"), mode)


def _rewrite_data_files(names: Names, v: dict[str, Any]) -> Any:
    t = _table(names, v).table
    return t.rewrite_data_files(v.get("where"), v.get("strategy"), v.get("sort_order"), v.get("options"))


def _rewrite_manifests(names: Names, v: dict[str, Any]) -> Any:
    t = _table(names, v).table
    spec_id = v.get("spec_id")
    return t.rewrite_manifests(int(spec_id) if spec_id is not None else None)


def _rewrite_position_delete_files(names: Names, v: dict[str, Any]) -> Any:
    t = _table(names, v).table
    return t.rewrite_position_delete_files(v.get("where"), v.get("options"))


def _add_files(names: Names, v: dict[str, Any]) -> Any:
    t = _table(names, v).table
    source = split_name(str(v["source_table"]))
    _positive(v, "parallelism")
    check = v.get("check_duplicate_files")
    check = True if check is None else bool(check)
    partition_filter = v.get("partition_filter") or {}
    if len(source) == 2 and source[0].lower() in ("orc", "avro"):
        raise NotSupportedError(f"add_files: source_table {v['source_table']!r}: sparkberg adds Parquet files only")
    if len(source) != 2 or source[0].lower() != "parquet":  # (a plain table of the target's catalog)
        t.add_files(source_table=".".join(_same_catalog(names, t.catalog, source)), check_duplicate_files=check,
                    partition_filter=partition_filter)
        return _added(names, t)
    path = source[1].rstrip("/")
    if partition_filter:
        identity = [f.name for f in t.spec().fields if str(f.transform) == "identity"]
        keys = list(partition_filter)
        if identity[:len(keys)] != sorted(keys, key=identity.index) or set(keys) - set(identity):
            raise NotSupportedError(f"add_files: partition_filter {partition_filter} must name the leading identity "
                                    f"partition columns ({', '.join(identity)})")
        path += "".join(f"/{k}={partition_filter[k]}" for k in identity[:len(keys)])
    t.add_files([path], check_duplicate_files=check)
    return _added(names, t)


def _same_catalog(names: Names, catalog: Any, parts: list[str]) -> list[str]:
    """The identifier in ``catalog`` (the Iceberg table's) of the plain table ``parts`` names (a name of another
    catalog: an error)."""
    cat, rest = names.split(parts)
    if cat is not None and catalog is not None and cat.uri != catalog.uri:
        raise NotSupportedError(f"{'.'.join(parts)} is in another catalog than the Iceberg table's: sparkberg "
                                "imports the plain tables of the table's own catalog (a Hive Metastore or Glue)")
    return rest


def _added(names: Names, t: Any) -> Any:
    summary = t.current_snapshot().summary
    # (as Java's procedure: an unpartitioned table has no partitions to count, so the count is null)
    changed = int(summary.get("changed-partition-count", 0)) if t.spec().fields else None
    return _rows(names, "added_files_count bigint, changed_partition_count bigint",
                 [(int(summary.get("added-data-files", 0)), changed)])


def _migrate(names: Names, v: dict[str, Any]) -> Any:
    _positive(v, "parallelism")
    cat, ident = names.catalog_for(split_name(str(v["table"])))
    t = cat.migrate_table(".".join(ident), v.get("properties"), bool(v.get("drop_backup") or False),
                          v.get("backup_table_name"))
    return _rows(names, "migrated_files_count bigint", [(_total_files(t),)])


def _snapshot(names: Names, v: dict[str, Any]) -> Any:
    _positive(v, "parallelism")
    cat, ident = names.catalog_for(split_name(str(v["table"])))
    source = _same_catalog(names, cat, split_name(str(v["source_table"])))
    t = cat.snapshot_table(".".join(source), ".".join(ident), v.get("location"), v.get("properties"))
    return _rows(names, "imported_files_count bigint", [(_total_files(t),)])


def _total_files(t: Any) -> int:
    snap = t.current_snapshot()
    return int(snap.summary.get("total-data-files", 0)) if snap is not None else 0


def _register_table(names: Names, v: dict[str, Any]) -> Any:
    parts = split_name(str(v["table"]))
    cat, ident = names.catalog_for(parts)
    t = cat.register_table(ident, str(v["metadata_file"]))
    snap = t.current_snapshot()
    summary = snap.summary if snap is not None else {}
    return _rows(names, "current_snapshot_id bigint, total_records_count bigint, total_data_files_count bigint",
                 [(_current(t), int(summary.get("total-records", 0)), int(summary.get("total-data-files", 0)))])


def _ancestors_of(names: Names, v: dict[str, Any]) -> Any:
    t = _table(names, v).table
    start = v.get("snapshot_id")
    start = int(start) if start is not None else _current(t)
    rows = [(s.snapshot_id, s.timestamp_ms) for s in t.metadata.ancestors(start)] if start is not None else []
    return _rows(names, "snapshot_id bigint, timestamp bigint", rows)


_CHANGELOG_OPTIONS = {"start-snapshot-id": "start_snapshot_id", "end-snapshot-id": "end_snapshot_id",
                      "start-timestamp": "start_timestamp_ms", "end-timestamp": "end_timestamp_ms"}


def _create_changelog_view(names: Names, v: dict[str, Any]) -> Any:
    t = _table(names, v).table
    options: dict[str, Any] = {}
    for key, value in (v.get("options") or {}).items():
        if key not in _CHANGELOG_OPTIONS:
            raise ValidationError(f"create_changelog_view: unknown option {key!r} ({', '.join(_CHANGELOG_OPTIONS)})")
        options[_CHANGELOG_OPTIONS[key]] = int(value)
    ids = v.get("identifier_columns")
    compute = v.get("compute_updates")
    net = bool(v.get("net_changes") or False)
    if net and compute:
        raise ValidationError("create_changelog_view: net_changes and compute_updates cannot both be true")
    name = t.create_changelog_view(v.get("changelog_view"), net_changes=net,
                                   compute_updates=None if compute is None else bool(compute),
                                   identifier_columns=list(ids) if ids else None, **options)
    return _rows(names, "changelog_view string", [(name,)])


def _params(*specs: str) -> tuple[Param, ...]:
    """Parameters from ``name[:kind][!]`` (``!``: required; the kind is ``string`` unless given)."""
    out = []
    for spec in specs:
        name, _, kind = spec.rstrip("!").partition(":")
        out.append(Param(name, spec.endswith("!"), kind or "string"))
    return tuple(out)


PROCEDURES: dict[str, Procedure] = {
    "rollback_to_snapshot": Procedure(_params("table!", "snapshot_id:long!"), _rollback_to_snapshot),
    "rollback_to_timestamp": Procedure(_params("table!", "timestamp:timestamp!"), _rollback_to_timestamp),
    "set_current_snapshot": Procedure(_params("table!", "snapshot_id:long", "ref"), _set_current_snapshot),
    "cherrypick_snapshot": Procedure(_params("table!", "snapshot_id:long!"), _cherrypick_snapshot),
    "publish_changes": Procedure(_params("table!", "wap_id!"), _publish_changes),
    "fast_forward": Procedure(_params("table!", "branch!", "to!"), _fast_forward),
    "expire_snapshots": Procedure(_params("table!", "older_than:timestamp", "retain_last:int",
                                          "max_concurrent_deletes:int", "stream_results:boolean",
                                          "snapshot_ids:array", "clean_expired_metadata:boolean"),
                                  _expire_snapshots),
    "remove_orphan_files": Procedure(_params("table!", "older_than:timestamp", "location", "dry_run:boolean",
                                             "max_concurrent_deletes:int", "file_list_view", "equal_schemes:map",
                                             "equal_authorities:map", "prefix_mismatch_mode",
                                             "prefix_listing:boolean"), _remove_orphan_files),
    "rewrite_data_files": Procedure(_params("table!", "strategy", "sort_order", "options:map", "where"),
                                    _rewrite_data_files),
    "rewrite_manifests": Procedure(_params("table!", "use_caching:boolean", "spec_id:int"), _rewrite_manifests),
    "rewrite_position_delete_files": Procedure(_params("table!", "options:map", "where"),
                                               _rewrite_position_delete_files),
    "add_files": Procedure(_params("table!", "source_table!", "partition_filter:map", "check_duplicate_files:boolean",
                                   "parallelism:int"), _add_files),
    "register_table": Procedure(_params("table!", "metadata_file!"), _register_table),
    "migrate": Procedure(_params("table!", "properties:map", "drop_backup:boolean", "backup_table_name",
                                 "parallelism:int"), _migrate),
    "snapshot": Procedure(_params("source_table!", "table!", "location", "properties:map", "parallelism:int"),
                          _snapshot),
    "ancestors_of": Procedure(_params("table!", "snapshot_id:long"), _ancestors_of),
    "create_changelog_view": Procedure(_params("table!", "changelog_view", "options:map", "net_changes:boolean",
                                               "compute_updates:boolean", "identifier_columns:array"),
                                       _create_changelog_view),
}
