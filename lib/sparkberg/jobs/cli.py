"""The ``sparkberg`` command line, in the spirit of PyIceberg's: look at a catalog and its tables.

    sparkberg --warehouse ./warehouse list                 # namespaces
    sparkberg --warehouse ./warehouse list db              # tables of a namespace
    sparkberg describe db.events                           # schema, partition spec, properties, snapshot
    sparkberg snapshots db.events
    sparkberg files db.events --limit 20
    sparkberg partitions db.events
    sparkberg count db.events --snapshot-id 123 --filter "category = 'books'"
    sparkberg --output json describe db.events

Exit codes as :mod:`sparkberg.jobs.common` (3: no such table or namespace).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from typing import Any

from sparkberg.jobs.common import OK, add_session_arguments, progress, run, session


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


def _ts(ms: int) -> str:
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).isoformat(timespec="milliseconds")


def _print_rows(df, output: str, limit: int | None) -> None:
    if limit is not None:
        df = df.limit(limit)
    if output == "json":
        from sparkberg.jobs.health import _jsonable
        print(json.dumps([_jsonable(r) for r in df.collect()], indent=2, default=str))
    else:
        df.show(limit or 1000, truncate=False)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="sparkberg", description=__doc__.splitlines()[0])
    add_session_arguments(p)
    p.add_argument("--output", choices=["text", "json"], default="text")
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="namespaces, or the tables of a namespace")
    ls.add_argument("namespace", nargs="?")
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

    def body() -> int:
        import sparkberg
        spark = session("sparkberg-cli", args.master)
        try:
            spark.sparkContext.setLogLevel("ERROR")
        except Exception:  # noqa: BLE001 - Spark Connect
            pass
        cat = sparkberg.catalog(spark, args.warehouse)
        if args.command == "list":
            items = cat.list_tables(args.namespace) if args.namespace else [".".join(n) for n in
                                                                              cat.list_namespaces()]
            print(json.dumps(items) if args.output == "json" else "\n".join(items))
            return OK
        t = cat.load_table(args.table)
        if args.command == "describe":
            d = _describe(t)
            if args.output == "json":
                print(json.dumps(d, indent=2, default=str))
            else:
                print(f"{d['table']}  (format v{d['format_version']}, {d['snapshots']} snapshots)\n"
                      f"location: {d['location']}\nschema:")
                for f in d["schema"]:
                    print(f"  {f['id']:>4}  {f['name']}: {f['type']}{' NOT NULL' if f['required'] else ''}")
                print(f"partition spec: {json.dumps(d['partition_spec']['fields'])}")
                print(f"properties: {json.dumps(d['properties'])}")
                print(f"current snapshot: {json.dumps(d['current_snapshot'], default=str)}")
            return OK
        if args.command == "count":
            with progress(spark, f"count {args.table}"):
                n = t.to_df(filter=args.filter, snapshot_id=args.snapshot_id, ref=args.ref,
                            as_of_timestamp_ms=args.as_of_timestamp_ms).count()
            print(json.dumps({"table": args.table, "count": n}) if args.output == "json" else n)
            return OK
        with progress(spark, f"{args.command} {args.table}"):
            df = t.metadata_table(args.command)
            if args.command == "files":
                df = df.select("content", "file_path", "file_format", "partition", "record_count",
                               "file_size_in_bytes")
            elif args.command == "snapshots":
                df = df.orderBy("committed_at")
            _print_rows(df, args.output, args.limit)
        return OK
    return run(body)


if __name__ == "__main__":
    sys.exit(main())
