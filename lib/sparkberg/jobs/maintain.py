"""The scheduled maintenance job: a policy run over one table, a namespace or the whole catalog.

    sparkberg-maintain --catalog prod --namespace db --dry-run --output-json report.json
    spark-submit --properties-file spark-defaults.conf jobs/maintain.py --catalog prod --remove-orphans

For each table, in this order:
1. expiry by the table's own ``history.expire.*`` properties (and its refs' retention), its files deleted;
2. compaction (``rewrite_data_files``, bin-pack, every file with a delete file a candidate) when a partition's
   small-file ratio or delete-file ratio reaches ``--small-file-ratio`` / ``--delete-file-ratio`` (the figures of
   the ``small_files`` and ``deletes`` health views, ``sparkberg-health``);
3. a manifest rewrite when the current snapshot has more than ``--max-manifests`` manifests;
4. with ``--remove-orphans``, orphan removal of files older than ``--orphan-older-than-days``.

``--dry-run`` commits and deletes nothing: expiry, compaction and orphan removal report what a real run would
delete or rewrite; the manifest rewrite reports whether it would run and why. The report (JSON) has one entry per table with each step's
decision and counts; a failing table is reported with its error and the job goes on, exiting with the code of
the first failure (the CLI's codes) once every table was tried.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from sparkberg.errors import CommitFailedException, NoSuchNamespaceError, NoSuchTableError, SparkbergError
from sparkberg.jobs.common import (
    CONFLICT, FAILED, INVALID, NOT_FOUND, OK, add_session_arguments, argument_parser, open_catalog, progress, run,
    session,
)
from sparkberg.jobs.health import health_views
from sparkberg.planning.entries import snapshot_manifests
from sparkberg.sql.views import all_namespaces

DEFAULT_SMALL_FILE_RATIO = 0.5
DEFAULT_DELETE_FILE_RATIO = 0.1
DEFAULT_MAX_MANIFESTS = 100
DEFAULT_ORPHAN_DAYS = 3.0


def _row(df) -> dict[str, Any]:
    return df.collect()[0].asDict()


def _ratios(table) -> tuple[float, float]:
    """The largest small-file ratio (of partitions with more than one data file) and delete-file ratio."""
    views = health_views(table, ["small_files", "deletes"])
    small = [r["small_file_ratio"] for r in views["small_files"].collect() if r["data_files"] > 1]
    deletes = [r["delete_file_ratio"] for r in views["deletes"].collect()]
    return float(max(small, default=0)), float(max(deletes, default=0))


def maintain_table(table, args: argparse.Namespace) -> dict[str, Any]:
    """One table's steps (see the module docstring): {step: its decision and counts}."""
    out: dict[str, Any] = {}
    out["expire_snapshots"] = _row(table.expire_snapshots(dry_run=args.dry_run))
    if table.current_snapshot() is not None:
        small, deletes = _ratios(table)
        needed = small >= args.small_file_ratio or deletes >= args.delete_file_ratio
        step: dict[str, Any] = {"small_file_ratio": small, "delete_file_ratio": deletes, "run": needed}
        if needed:  # files with any delete are rewritten too: folding deletes in is half the point
            step.update(_row(table.rewrite_data_files(options={"delete-file-threshold": "1"},
                                                      dry_run=args.dry_run)))
        out["rewrite_data_files"] = step
        count = len(snapshot_manifests(table.io, table.current_snapshot()))
        step = {"manifests": count, "run": count > args.max_manifests}
        if step["run"] and not args.dry_run:
            step.update(_row(table.rewrite_manifests()))
        out["rewrite_manifests"] = step
    if args.remove_orphans:
        older = int((time.time() - args.orphan_older_than_days * 86400) * 1000)
        orphans = [r[0] for r in table.remove_orphan_files(older_than=older, dry_run=args.dry_run).collect()]
        out["remove_orphan_files"] = {"orphan_files_count": len(orphans), "orphan_file_locations": orphans}
    return out


def _tables(cat, args: argparse.Namespace) -> list[str]:
    if args.table:
        return list(args.table)
    namespaces = [args.namespace] if args.namespace else all_namespaces(cat)
    return [t for ns in namespaces for t in cat.list_tables(ns)]


def _code(e: Exception) -> int:
    if isinstance(e, (NoSuchTableError, NoSuchNamespaceError)):
        return NOT_FOUND
    if isinstance(e, CommitFailedException):
        return CONFLICT
    return INVALID if isinstance(e, SparkbergError) else FAILED


def main(argv: list[str] | None = None) -> int:
    p = argument_parser("sparkberg-maintain", __doc__)
    add_session_arguments(p)
    p.add_argument("--table", action="append", default=[], help="a table to maintain (repeatable)")
    p.add_argument("--namespace", help="every table of this namespace (default: every table of the catalog)")
    p.add_argument("--dry-run", action="store_true", help="commit and delete nothing; report what would be done")
    p.add_argument("--small-file-ratio", type=float, default=DEFAULT_SMALL_FILE_RATIO,
                   help=f"compact when a partition's small-file ratio reaches this (default {DEFAULT_SMALL_FILE_RATIO})")
    p.add_argument("--delete-file-ratio", type=float, default=DEFAULT_DELETE_FILE_RATIO,
                   help=f"compact when a partition's delete files per data file reach this (default "
                        f"{DEFAULT_DELETE_FILE_RATIO})")
    p.add_argument("--max-manifests", type=int, default=DEFAULT_MAX_MANIFESTS,
                   help=f"rewrite manifests past this many (default {DEFAULT_MAX_MANIFESTS})")
    p.add_argument("--remove-orphans", action="store_true", help="also remove orphan files")
    p.add_argument("--orphan-older-than-days", type=float, default=DEFAULT_ORPHAN_DAYS,
                   help=f"only orphans older than this (default {DEFAULT_ORPHAN_DAYS})")
    p.add_argument("--output-json", help="write the report here ('-' or none: stdout)")
    args = p.parse_args(argv)
    if args.small_file_ratio < 0 or args.delete_file_ratio < 0 or args.max_manifests < 0 or \
            args.orphan_older_than_days < 0:
        p.error("ratios, --max-manifests and --orphan-older-than-days must not be negative")

    def body() -> int:
        spark = session("sparkberg-maintain", args.master, quiet=True)
        cat = open_catalog(spark, args)
        report: dict[str, Any] = {"dry_run": args.dry_run, "tables": {}}
        code = OK
        for name in _tables(cat, args):
            try:
                with progress(spark, f"maintain {name}"):
                    report["tables"][name] = maintain_table(cat.load_table(name), args)
            except Exception as e:  # noqa: BLE001 - one table's failure is reported; the others still run
                report["tables"][name] = {"error": f"{type(e).__name__}: {e}"}
                print(f"error: {name}: {e}", file=sys.stderr)
                code = code or _code(e)
        text = json.dumps(report, indent=2, default=str)
        if args.output_json and args.output_json != "-":
            with open(args.output_json, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote the maintenance report of {len(report['tables'])} table(s) to {args.output_json}")
        else:
            print(text)
        return code
    return run(body)


if __name__ == "__main__":
    sys.exit(main())
