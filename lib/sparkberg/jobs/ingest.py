"""Ingest files into a table: append, overwrite (all rows or those matching a filter) or replace the partitions
present, from Parquet, CSV or JSON paths; optionally create the table from the data's schema.

    sparkberg-ingest --warehouse ./warehouse --table db.events --format csv --header data/*.csv
    sparkberg-ingest --table db.events --mode dynamic-overwrite --format parquet s3://bucket/day=2024-01-01/
    spark-submit --properties-file spark-defaults.conf jobs/ingest.py --table db.events --create \\
        --partition-by 'day(ts)' --format json events.json

Prints the committed snapshot as JSON on stdout (with ``--idempotency`` and a key already recorded: ``"skipped":
true`` and the snapshot that records it); exit codes as :mod:`sparkberg.jobs.common`.
"""
from __future__ import annotations

import json
import sys

from sparkberg.jobs.common import OK, add_session_arguments, argument_parser, open_catalog, progress, run, session

MODES = ("append", "overwrite", "dynamic-overwrite")
FORMATS = ("parquet", "csv", "json")


def read_source(spark, fmt: str, paths: list[str], header: bool = False, schema: str | None = None,
                options: dict[str, str] | None = None):
    """The DataFrame of the input files."""
    reader = spark.read.options(**(options or {}))
    if schema:
        reader = reader.schema(schema)
    if fmt == "csv":
        reader = reader.option("header", str(header).lower())
        if not schema:
            reader = reader.option("inferSchema", "true")
    return reader.format(fmt).load(paths)


def main(argv: list[str] | None = None) -> int:
    p = argument_parser("sparkberg-ingest", __doc__)
    add_session_arguments(p)
    p.add_argument("--table", required=True, help="target table, e.g. db.events")
    p.add_argument("--mode", choices=MODES, default="append")
    p.add_argument("--filter", help="overwrite mode: replace only the rows matching this Spark SQL filter")
    p.add_argument("--format", choices=FORMATS, default="parquet")
    p.add_argument("--header", action="store_true", help="CSV files have a header line")
    p.add_argument("--schema", help="DDL schema of the input (default: inferred)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="Spark reader option")
    p.add_argument("--create", action="store_true", help="create the table from the input's schema if missing")
    p.add_argument("--partition-by", action="append", default=[], help="with --create: partition transform")
    p.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                   help="with --create: table property (format-version=3, ...)")
    p.add_argument("--idempotency", metavar="APP_ID:VERSION",
                   help="commit only if the table records no version >= VERSION of APP_ID (a job run again after "
                        "it committed writes nothing), e.g. nightly-load:20240101")
    p.add_argument("paths", nargs="+", help="input files or directories")
    args = p.parse_args(argv)
    if args.filter and args.mode != "overwrite":
        p.error("--filter goes with --mode overwrite")

    def pairs(items: list[str], what: str) -> dict[str, str]:
        out = {}
        for item in items:
            if "=" not in item:
                p.error(f"{what} {item!r} is not KEY=VALUE")
            k, v = item.split("=", 1)
            out[k] = v
        return out

    options, properties = pairs(args.option, "--option"), pairs(args.property, "--property")
    key = None
    if args.idempotency is not None:
        app_id, _, version = args.idempotency.rpartition(":")
        if not app_id or not version.isdigit():
            p.error(f"--idempotency {args.idempotency!r} is not APP_ID:VERSION (VERSION a non-negative integer)")
        key = (app_id, int(version))

    def body() -> int:
        spark = session("sparkberg-ingest", args.master)
        cat = open_catalog(spark, args)
        t = None if args.create and not cat.table_exists(args.table) else cat.load_table(args.table)
        df = read_source(spark, args.format, args.paths, args.header, args.schema, options)
        if t is None:
            ns = args.table.rsplit(".", 1)[0] if "." in args.table else None
            if ns and not cat.namespace_exists(ns):
                cat.create_namespace(ns)
            t = cat.create_table(args.table, df.schema, partition_by=args.partition_by or None,
                                 properties=properties)
        with progress(spark, f"{args.mode} {args.table}"):
            if args.mode == "append":
                outcome = t.append(df, idempotency=key)
            elif args.mode == "overwrite":
                outcome = t.overwrite(df, args.filter, idempotency=key)
            else:
                outcome = t.dynamic_overwrite(df, idempotency=key)
        skipped = key is not None and outcome.skipped
        snap = t.metadata.snapshot_by_id(outcome.snapshot_id) if skipped else t.current_snapshot()
        print(json.dumps({"table": args.table, "snapshot_id": snap.snapshot_id, "operation": snap.operation,
                          "skipped": skipped, "summary": snap.summary}, indent=2))
        return OK
    return run(body)


if __name__ == "__main__":
    sys.exit(main())
