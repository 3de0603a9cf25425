"""The table doctor: a table's integrity findings, and the safe repair of references to files that are gone.

    sparkberg-doctor --catalog ./warehouse db.events [--level metadata|files|data] [--json] [--repair [--commit]]

Prints each finding (rule, severity, location, snapshot, detail, the spec section it breaks), one a line or as
JSON lines, and exits 0 when the table is healthy, 1 when there are findings (other failures keep the jobs'
exit codes: 3 no such table, 4 invalid input). ``--repair`` shows the references repair would remove;
``--commit`` commits that removal (never deleting a file). See :mod:`sparkberg.maintenance.doctor`.
"""
from __future__ import annotations

import json
import sys

from sparkberg.jobs.common import OK, add_session_arguments, argument_parser, open_catalog, run, session
from sparkberg.maintenance.doctor import LEVELS

FINDINGS = 1


def main(argv: list[str] | None = None) -> int:
    p = argument_parser("sparkberg-doctor", __doc__)
    add_session_arguments(p)
    p.add_argument("table", help="the table to check (namespace.name)")
    p.add_argument("--level", choices=LEVELS, default="metadata",
                   help="metadata (the default), files (every referenced file exists with its size), data (also "
                        "Parquet footers)")
    p.add_argument("--json", action="store_true", help="one JSON object a finding")
    p.add_argument("--repair", action="store_true", help="show the references to missing files repair removes")
    p.add_argument("--commit", action="store_true", help="with --repair: commit the removal")
    args = p.parse_args(argv)
    if args.commit and not args.repair:
        p.error("--commit goes with --repair")

    def body() -> int:
        spark = session("sparkberg-doctor", args.master, quiet=True)
        t = open_catalog(spark, args).load_table(args.table)
        found = [r.asDict() for r in t.check(args.level).collect()]
        for r in found:
            print(json.dumps(r) if args.json else
                  f"{r['severity']}: {r['rule']}: {r['location']} (snapshot {r['snapshot_id']}): {r['detail']} "
                  f"[spec: {r['spec_section']}]")
        if args.repair:
            for r in t.repair(dry_run=not args.commit).collect():
                if r["remedy"] == "remove-reference":
                    verb = "removed" if args.commit else "would remove"
                    print(f"repair: {verb} the reference to {r['file_path']} (content {r['content']})")
                else:
                    verb = "restated" if args.commit else "would restate"
                    print(f"repair: {verb} the summary: {r['detail']}")
        if not found:
            print(f"{args.table}: healthy at level {args.level}")
        return FINDINGS if found else OK
    return run(body)


if __name__ == "__main__":
    sys.exit(main())
