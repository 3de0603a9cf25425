"""The table health report: the SQL health views of ``sql/`` run over a table's metadata tables.

    sparkberg-health --warehouse ./warehouse --table db.events --output-json health.json
    spark-submit --properties-file spark-defaults.conf jobs/health.py --table db.events --output-table db.health

Views (one ``.sql`` file each, with ``{table}`` standing for the registered view name):
``small_files`` (small-file ratio per partition), ``deletes`` (delete files and deleted rows per partition),
``manifests`` (manifests per snapshot and their sizes), ``snapshot_growth`` (totals per snapshot and their
change), ``row_lineage`` (row-id coverage, v3).
"""
from __future__ import annotations

import datetime as _dt
import decimal
import json
import os
import sys
from typing import Any, Sequence

from pyspark.sql import DataFrame

from sparkberg.errors import ValidationError
from sparkberg.jobs.common import OK, add_session_arguments, argument_parser, open_catalog, progress, run, session
from sparkberg.format.properties import target_file_size

HEALTH_VIEWS = ("small_files", "deletes", "manifests", "snapshot_growth", "row_lineage")
DEFAULT_SMALL_FILE_BYTES = 32 * 1024 * 1024


def sql_dir() -> str:
    """Where the health views' ``.sql`` files are: $SPARKBERG_SQL_DIR, the repository's ``sql/``, or the
    copy installed under ``<prefix>/share/sparkberg/sql``."""
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.environ.get("SPARKBERG_SQL_DIR"), os.path.join(here, "..", "..", "..", "sql"),
              os.path.join(sys.prefix, "share", "sparkberg", "sql")):
        if d and os.path.exists(os.path.join(d, "small_files.sql")):
            return os.path.normpath(d)
    raise FileNotFoundError("the health views' .sql files were not found; set SPARKBERG_SQL_DIR")


def health_sql(name: str, view: str, small_file_bytes: int = DEFAULT_SMALL_FILE_BYTES) -> str:
    """The text of health view ``name`` for the table registered as ``view``."""
    if name not in HEALTH_VIEWS:
        raise ValidationError(f"unknown health view {name!r}; there are {', '.join(HEALTH_VIEWS)}")
    with open(os.path.join(sql_dir(), f"{name}.sql"), encoding="utf-8") as f:
        text = f.read()
    return text.replace("{table}", view).replace("{small_file_bytes}", str(int(small_file_bytes)))


def health_views(table: Any, views: Sequence[str] = HEALTH_VIEWS, small_file_bytes: int | None = None,
                 view_name: str | None = None) -> dict[str, DataFrame]:
    """Each health view of ``table`` as a DataFrame (its metadata tables are registered as temporary views)."""
    name = view_name or f"health_{table.identifier.name}"
    table.register_views(name)
    if small_file_bytes is None:
        target = target_file_size(table.properties)
        small_file_bytes = min(DEFAULT_SMALL_FILE_BYTES, target // 4)
    return {v: table.spark.sql(health_sql(v, name, small_file_bytes)) for v in views}


def _jsonable(v: Any) -> Any:
    if hasattr(v, "asDict"):
        return {k: _jsonable(x) for k, x in v.asDict().items()}
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (_dt.date, _dt.datetime)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return float(v)
    return v


def report(catalog, tables: Sequence[str], views: Sequence[str] = HEALTH_VIEWS,
           small_file_bytes: int | None = None) -> dict[str, dict[str, list[dict]]]:
    """{table: {view: rows}} for the given tables."""
    out: dict[str, dict[str, list[dict]]] = {}
    for name in tables:
        t = catalog.load_table(name)
        with progress(t.spark, f"health {name}"):
            out[name] = {v: [_jsonable(r) for r in df.collect()]
                         for v, df in health_views(t, views, small_file_bytes).items()}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argument_parser("sparkberg-health", __doc__)
    add_session_arguments(p)
    p.add_argument("--table", action="append", default=[], help="table to report on (repeatable)")
    p.add_argument("--namespace", help="report on every table of this namespace")
    p.add_argument("--view", action="append", choices=HEALTH_VIEWS, help="only these views (repeatable)")
    p.add_argument("--small-file-bytes", type=int, default=None)
    p.add_argument("--output-json", help="write the report to this JSON file ('-' for stdout)")
    p.add_argument("--output-table", help="overwrite one table per view, <name>_<view>, with the rows")
    args = p.parse_args(argv)

    def body() -> int:
        spark = session("sparkberg-health", args.master)
        cat = open_catalog(spark, args)
        tables = list(args.table) + (cat.list_tables(args.namespace) if args.namespace else [])
        if not tables:
            p.error("give --table or --namespace")
        views = args.view or list(HEALTH_VIEWS)
        if args.output_table:
            from pyspark.sql import functions as F
            for v in views:
                frames = [health_views(cat.load_table(n), [v], args.small_file_bytes)[v]
                          .select(F.lit(n).alias("table_name"), "*") for n in tables]
                df = frames[0]
                for f in frames[1:]:
                    df = df.unionByName(f, allowMissingColumns=True)
                target = f"{args.output_table}_{v}"
                out = cat.load_table(target) if cat.table_exists(target) else cat.create_table(target, df.schema)
                out.overwrite(df)
                print(f"wrote {df.count()} rows to {target}")
        rep = report(cat, tables, views, args.small_file_bytes)
        text = json.dumps(rep, indent=2, default=str)
        if args.output_json == "-" or not (args.output_json or args.output_table):
            print(text)
        elif args.output_json:
            with open(args.output_json, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote the health report of {len(tables)} table(s) to {args.output_json}")
        return OK
    return run(body)


if __name__ == "__main__":
    sys.exit(main())
