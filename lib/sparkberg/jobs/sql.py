"""Run a script of Iceberg Spark SQL statements (``sparkberg.sql``): DDL, writes, queries and ``CALL`` procedures,
in order, for scheduled SQL pipelines.

    sparkberg-sql --catalog sqlite:////data/catalog.db --warehouse file:///data/wh -f nightly.sql --var day=2024-01-01
    sparkberg-sql -e "CALL system.expire_snapshots(table => 'db.events', retain_last => 10)"
    spark-submit --properties-file spark-defaults.conf jobs/sql.py -f migrate.sql

``${name}`` in the script is replaced by the value of ``--var name=value`` (a name without a value is an
error). The statements run one after another; the first that fails stops the script, and the error names it (the
statements before it stay done, it changed nothing). The last statement's rows are printed as Spark shows them.
Exit codes as :mod:`sparkberg.jobs.common`.
"""
from __future__ import annotations

import re
import sys

import sparkberg
from sparkberg.errors import ValidationError
from sparkberg.jobs.common import OK, USAGE, add_session_arguments, argument_parser, open_catalog, run, session
from sparkberg.sql.statements import StatementFailedError, parse_script

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.]*)\}")


def substitute(text: str, variables: dict[str, str]) -> str:
    """``text`` with each ``${name}`` replaced by its value; a name with no value is a ValidationError naming it."""
    missing = sorted({m.group(1) for m in _VARIABLE.finditer(text) if m.group(1) not in variables})
    if missing:
        raise ValidationError(f"no value for {', '.join('${' + n + '}' for n in missing)}: give --var NAME=VALUE")
    return _VARIABLE.sub(lambda m: variables[m.group(1)], text)


def main(argv: list[str] | None = None) -> int:
    p = argument_parser("sparkberg-sql", __doc__)
    add_session_arguments(p)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("-f", "--file", help="the SQL script to run ('-': standard input)")
    source.add_argument("-e", "--execute", metavar="SQL", help="the statements to run")
    p.add_argument("--var", action="append", default=[], metavar="NAME=VALUE", help="a value for ${NAME}")
    p.add_argument("--show", type=int, default=20, metavar="N", help="rows of the last result to print (0: none)")
    args = p.parse_args(argv)
    variables = {}
    for item in args.var:
        name, eq, value = item.partition("=")
        if not eq or not name:
            p.error(f"--var {item!r} is not NAME=VALUE")
        variables[name] = value
    if args.file == "-":
        text = sys.stdin.read()
    elif args.file is not None:
        try:
            with open(args.file, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            p.error(f"cannot read {args.file}: {e.strerror}")
    else:
        text = args.execute
    try:
        text = substitute(text, variables)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return USAGE

    def body() -> int:
        parse_script(text)  # (a syntax error is said before Spark takes seconds to start)
        spark = session("sparkberg-sql", args.master, quiet=True)
        cat = open_catalog(spark, args) if args.catalog is not None or args.warehouse is not None else None
        try:
            result = sparkberg.sql(spark, text, catalog=cat)
        except StatementFailedError as e:  # (said here, then exit as its cause says)
            print(f"error: statement {e.number} failed: {e.statement}", file=sys.stderr)
            raise e.cause from None
        if args.show > 0 and result is not None and result.columns:
            result.show(args.show, truncate=False)
        return OK
    return run(body)


if __name__ == "__main__":
    sys.exit(main())
