"""Copy a stream into a table, exactly once, with a checkpoint: new files of a directory (Parquet, CSV, JSON), or
the rows appended to another table (PySpark 4), each micro-batch one commit (:mod:`sparkberg.sql.streaming`). Run
it on a schedule with the default trigger (everything available, then exit) or as a service
(``--trigger processing-time=30s``); killed at any moment, it takes up where its checkpoint says.

    sparkberg-stream --warehouse ./warehouse --table db.events --checkpoint ./ckpt/events --format json landing/
    sparkberg-stream --table db.daily --checkpoint s3://b/ckpt/daily --source-table db.events \\
        --max-files-per-trigger 100 --skip-delete-snapshots

Prints what the run did as JSON on stdout (micro-batches, rows, the table's snapshot); exit codes as
:mod:`sparkberg.jobs.common`.
"""
from __future__ import annotations

import argparse
import json
import sys

from sparkberg.jobs.common import OK, add_session_arguments, argument_parser, open_catalog, run, session
from sparkberg.jobs.ingest import FORMATS, read_source
TRIGGERS = {"available-now": ("availableNow", True), "once": ("once", True)}


def trigger_of(text: str) -> dict:
    """``--trigger``'s value as ``write_stream``'s ``trigger``: ``available-now``, ``once`` or
    ``processing-time=<interval>``."""
    if text in TRIGGERS:
        key, value = TRIGGERS[text]
        return {key: value}
    if text.startswith("processing-time="):
        return {"processingTime": text.split("=", 1)[1]}
    raise argparse.ArgumentTypeError(f"--trigger is available-now, once or processing-time=<interval>, got {text!r}")


def file_stream(spark, fmt: str, path: str, schema: str | None, header: bool, max_files: int | None):
    """The stream of new files under ``path``; without ``schema``, the schema of the files there now (as
    ``sparkberg-ingest`` infers it)."""
    reader = spark.readStream.schema(schema if schema else read_source(spark, fmt, [path], header).schema)
    if fmt == "csv":
        reader = reader.option("header", str(header).lower())
    if max_files:
        reader = reader.option("maxFilesPerTrigger", max_files)
    return reader.format(fmt).load(path)


def main(argv: list[str] | None = None) -> int:
    p = argument_parser("sparkberg-stream", __doc__)
    add_session_arguments(p)
    p.add_argument("--table", required=True, help="the table the stream writes, e.g. db.events")
    p.add_argument("--checkpoint", required=True, help="the query's checkpoint location (one per stream)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--source-table", help="stream the rows appended to this table of the catalog")
    source.add_argument("path", nargs="?", help="stream the new files under this directory")
    p.add_argument("--format", choices=FORMATS, default="parquet", help="the files' format")
    p.add_argument("--schema", help="DDL schema of the files (default: that of the files there now)")
    p.add_argument("--header", action="store_true", help="CSV files have a header line")
    p.add_argument("--trigger", type=trigger_of, default={"availableNow": True},
                   help="available-now (default: everything there, then exit), once, or processing-time=<interval>")
    p.add_argument("--output-mode", choices=("append", "complete"), default="append")
    p.add_argument("--max-files-per-trigger", type=int, help="at most this many files a micro-batch")
    p.add_argument("--max-rows-per-trigger", type=int, help="--source-table: about this many rows a micro-batch")
    p.add_argument("--skip-delete-snapshots", action="store_true", help="--source-table: pass its deletes")
    p.add_argument("--skip-overwrite-snapshots", action="store_true", help="--source-table: pass its overwrites")
    p.add_argument("--branch", help="write to this branch of the table")
    p.add_argument("--query-name", help="the streaming query's name")
    args = p.parse_args(argv)
    if args.path is None and (args.schema or args.header):
        p.error("--schema and --header describe files; --source-table streams a table")
    if args.path is not None and (args.max_rows_per_trigger or args.skip_delete_snapshots
                                  or args.skip_overwrite_snapshots):
        p.error("--max-rows-per-trigger and --skip-* go with --source-table")

    def body() -> int:
        spark = session("sparkberg-stream", args.master)
        cat = open_catalog(spark, args)
        table = cat.load_table(args.table)
        if args.source_table:
            rows = cat.load_table(args.source_table).read_stream(
                max_files_per_trigger=args.max_files_per_trigger, max_rows_per_trigger=args.max_rows_per_trigger,
                skip_delete_snapshots=args.skip_delete_snapshots,
                skip_overwrite_snapshots=args.skip_overwrite_snapshots)
        else:
            rows = file_stream(spark, args.format, args.path, args.schema, args.header, args.max_files_per_trigger)
        query = table.write_stream(rows, args.checkpoint, trigger=args.trigger, output_mode=args.output_mode,
                                   query_name=args.query_name, branch=args.branch)
        query.awaitTermination()
        if query.exception() is not None:
            raise query.exception()
        progress = [p for p in query.recentProgress if p.get("numInputRows")] if query.recentProgress else []
        table.refresh()
        snap = table.current_snapshot()
        print(json.dumps({"table": args.table, "query_id": str(query.id), "micro_batches": len(progress),
                          "rows": sum(p["numInputRows"] for p in progress),
                          "snapshot_id": None if snap is None else snap.snapshot_id}, indent=2))
        return OK
    return run(body)


if __name__ == "__main__":
    sys.exit(main())
