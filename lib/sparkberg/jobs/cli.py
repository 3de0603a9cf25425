"""The ``sparkberg`` command line, in the spirit of PyIceberg's: look at a catalog and its tables.

    sparkberg --warehouse ./warehouse list                 # namespaces
    sparkberg --warehouse ./warehouse list db              # tables of a namespace
    sparkberg views db                                     # views of a namespace
    sparkberg describe db.events                           # schema, partition spec, properties, snapshot
    sparkberg describe db.daily_counts                     # a view: its query, schema, versions, properties
    sparkberg snapshots db.events
    sparkberg files db.events --limit 20
    sparkberg partitions db.events
    sparkberg count db.events --snapshot-id 123 --filter "category = 'books'"
    sparkberg --output json describe db.events

Commands that need only metadata (all but ``count``, and ``files``/``partitions`` of tables of more than
:data:`~sparkberg.jobs.metadata_view.LOCAL_MAX_FILES` files) read it without starting Spark. Where Spark must
start, its log is silenced unless ``--verbose``. Exit codes as :mod:`sparkberg.jobs.common` (3: no such table
or namespace).
"""
from __future__ import annotations

import datetime as _dt
import json
import sys
from typing import Any

from sparkberg.jobs import metadata_view
from sparkberg.jobs.common import (
    OK, add_session_arguments, argument_parser, names_a_configured_catalog, open_catalog, progress, run, session,
)
from sparkberg.jobs.health import _jsonable


def _describe(t) -> dict[str, Any]:
    snap = t.current_snapshot()
    return {
        "table": t.name, "location": t.location, "format_version": t.format_version,
        "table_uuid": t.metadata.table_uuid,
        "schema": [{"id": f.field_id, "name": f.name, "type": str(f.field_type), "required": f.required}
                   for f in t.schema().fields],
        "partition_spec": t.spec().to_json(), "sort_order": t.sort_order().to_json(),
        "properties": dict(t.properties),
        "current_snapshot": None if snap is None else {
            "snapshot_id": snap.snapshot_id, "timestamp": _ts(snap.timestamp_ms), "operation": snap.operation,
            "summary": snap.summary},
        "snapshots": len(t.snapshots()), "refs": sorted(t.metadata.refs),
    }


def _describe_text(d: dict[str, Any], t) -> str:
    """:func:`_describe` for a terminal: a line per item, each cut to the terminal's width."""
    import shutil
    width = shutil.get_terminal_size((120, 24)).columns

    def cut(line: str) -> str:
        return line if len(line) <= width else line[:width - 1] + "\u2026"
    lines = [f"{d['table']}  (format v{d['format_version']}, {d['snapshots']} snapshots)", f"location: {d['location']}",
             "schema:"]
    lines += [f"  {f['id']:>4}  {f['name']}: {f['type']}{' NOT NULL' if f['required'] else ''}" for f in d["schema"]]
    spec = t.spec()
    lines.append("partition spec: " + (", ".join(f"{pf.name}={pf.transform}({t.schema().name_of(pf.source_id)})"
                                                 for pf in spec.fields) or "unpartitioned"))
    lines.append("properties:" if d["properties"] else "properties: none")
    lines += [f"  {k} = {v}" for k, v in sorted(d["properties"].items())]
    snap = d["current_snapshot"]
    if snap is None:
        lines.append("current snapshot: none")
    else:
        summary = snap["summary"] or {}
        lines.append(f"current snapshot: {snap['snapshot_id']} ({snap['operation']}, {snap['timestamp'][:19]})")
        size = summary.get("total-files-size")
        lines.append(f"  records: {metadata_view.human_count(summary.get('total-records'))}, data files: "
                     f"{metadata_view.human_count(summary.get('total-data-files'))}, delete files: "
                     f"{metadata_view.human_count(summary.get('total-delete-files'))}, size: "
                     f"{metadata_view.human_size(int(size)) if size is not None else '?'}")
    return "\n".join(cut(line) for line in lines)


def _describe_view(v) -> dict[str, Any]:
    m = v.metadata
    version = m.current_version
    return {
        "view": v.name, "location": m.location, "view_uuid": m.view_uuid,
        "schema": [{"id": f.field_id, "name": f.name, "type": str(f.field_type), "doc": f.doc}
                   for f in v.schema().fields],
        "sql": {r.dialect: r.sql for r in version.representations if r.type == "sql"},
        "default_catalog": version.default_catalog, "default_namespace": list(version.default_namespace),
        "current_version": {"version_id": version.version_id, "timestamp": _ts(version.timestamp_ms),
                            "summary": version.summary},
        "versions": len(m.versions), "properties": dict(m.properties),
    }


def _describe_view_text(d: dict[str, Any]) -> str:
    v = d["current_version"]
    lines = [f"{d['view']}  (view, {d['versions']} versions, current {v['version_id']} of {v['timestamp'][:19]})",
             f"location: {d['location']}",
             f"resolves in: {'.'.join([d['default_catalog'] or '(its catalog)'] + d['default_namespace'])}",
             "schema:"]
    lines += [f"  {f['id']:>4}  {f['name']}: {f['type']}" + (f"  -- {f['doc']}" if f["doc"] else "")
              for f in d["schema"]]
    for dialect, text in d["sql"].items():
        lines.append(f"sql ({dialect}):")
        lines += [f"  {line}" for line in text.splitlines()]
    lines.append("properties:" if d["properties"] else "properties: none")
    lines += [f"  {k} = {val}" for k, val in sorted(d["properties"].items())]
    return "\n".join(lines)


def _ts(ms: int) -> str:
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).isoformat(timespec="milliseconds")


def _print_view(view: str, rows: list[dict], output: str, limit: int | None) -> None:
    if limit is not None:
        rows = rows[:limit]
    if output == "json":
        print(json.dumps(rows, indent=2, default=str))
    else:
        print(metadata_view.render(view, rows))


def _spark_rows(t, view: str) -> list[dict]:
    """The rows of metadata table ``view`` as Spark computes it (tables too large to read here)."""
    df = t.metadata_table(view)
    if view == "files":
        df = df.select("content", "file_path", "file_format", "spec_id",
                       *(["partition"] if "partition" in df.columns else []), "record_count", "file_size_in_bytes")
    return [_jsonable(r) for r in df.collect()]


def main(argv: list[str] | None = None) -> int:
    p = argument_parser("sparkberg", __doc__)
    add_session_arguments(p)
    p.add_argument("--output", choices=["text", "json"], default="text")
    p.add_argument("--verbose", action="store_true", help="show Spark's own log when Spark starts")
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="namespaces, or the tables of a namespace")
    ls.add_argument("namespace", nargs="?")
    vs = sub.add_parser("views", help="the views of a namespace")
    vs.add_argument("namespace")
    for name, text in (("describe", "schema, spec, properties and current snapshot"),
                       ("snapshots", "the snapshots"), ("history", "the snapshot log"), ("refs", "branches and tags"),
                       ("files", "the live data and delete files"), ("partitions", "per-partition counts"),
                       ("manifests", "the manifests of the current snapshot")):
        s = sub.add_parser(name, help=text)
        s.add_argument("table")
        if name not in ("describe",):
            s.add_argument("--limit", type=int, default=None)
    c = sub.add_parser("count", help="the row count, now or as of a snapshot, time or ref")
    c.add_argument("table")
    c.add_argument("--snapshot-id", type=int)
    c.add_argument("--as-of-timestamp-ms", type=int)
    c.add_argument("--ref")
    c.add_argument("--filter")
    args = p.parse_args(argv)

    def spark_session():
        spark = session("sparkberg-cli", args.master, quiet=not args.verbose)
        if not args.verbose:
            try:
                spark.sparkContext.setLogLevel("ERROR")
            except Exception:  # noqa: BLE001 - Spark Connect
                pass
        return spark

    def body() -> int:
        # what needs only metadata is read here, without Spark (and its JVM)
        cat = open_catalog(spark_session() if names_a_configured_catalog(args) else None, args)
        if args.command == "list":
            items = cat.list_tables(args.namespace) if args.namespace else [".".join(n) for n in
                                                                              cat.list_namespaces()]
            print(json.dumps(items) if args.output == "json" else "\n".join(items))
            return OK
        if args.command == "views":
            items = cat.list_views(args.namespace)
            print(json.dumps(items) if args.output == "json" else "\n".join(items))
            return OK
        if args.command == "describe" and not cat.table_exists(args.table) and cat.view_exists(args.table):
            d = _describe_view(cat.load_view(args.table))
            print(json.dumps(d, indent=2, default=str) if args.output == "json" else _describe_view_text(d))
            return OK
        t = cat.load_table(args.table)
        if args.command == "describe":
            d = _describe(t)
            if args.output == "json":
                print(json.dumps(d, indent=2, default=str))
            else:
                print(_describe_text(d, t))
            return OK
        if args.command == "count":
            spark = spark_session()
            t = open_catalog(spark, args).load_table(args.table)
            with progress(spark, f"count {args.table}"):
                n = t.to_df(filter=args.filter, snapshot_id=args.snapshot_id, ref=args.ref,
                            as_of_timestamp_ms=args.as_of_timestamp_ms).count()
            print(json.dumps({"table": args.table, "count": n}) if args.output == "json" else n)
            return OK
        # (files and partitions read every manifest: here while the manifest list says they are few)
        listed = metadata_view.listed_files(t) if args.command in ("files", "partitions") else 0
        if listed is not None and listed <= metadata_view.LOCAL_MAX_FILES:
            rows = metadata_view.VIEWS[args.command](t)
        else:
            spark = spark_session()
            with progress(spark, f"{args.command} {args.table}"):
                rows = _spark_rows(open_catalog(spark, args).load_table(args.table), args.command)
        _print_view(args.command, rows, args.output, args.limit)
        return OK
    return run(body)


if __name__ == "__main__":
    sys.exit(main())
