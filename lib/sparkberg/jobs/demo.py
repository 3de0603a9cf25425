"""The demo job: the whole story on a local warehouse.

Creates a partitioned v3 table, appends, updates and deletes (merge-on-read: deletion vectors), time travels
to the first snapshot, and prints the rows and the snapshots.

    python jobs/demo.py --warehouse ./warehouse
    spark-submit --properties-file spark-defaults.conf jobs/demo.py --warehouse ./warehouse
"""
from __future__ import annotations

import json
import os
import sys

import sparkberg
from sparkberg.jobs.common import argument_parser
from sparkberg.spark.session import session_builder


def show(title: str, df) -> None:
    print(f"\n== {title}")
    df.show(truncate=False)


def main(argv: list[str] | None = None) -> int:
    p = argument_parser(None, __doc__)
    p.add_argument("--warehouse", default="./warehouse", help="warehouse location (path or URI)")
    p.add_argument("--table", default="demo.events")
    p.add_argument("--format-version", default="3", choices=["1", "2", "3"])
    args = p.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = session_builder("sparkberg-demo", master="local[2]").config("spark.sql.shuffle.partitions", "4") \
        .getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    cat = sparkberg.catalog(spark, args.warehouse)
    if cat.table_exists(args.table):
        print(f"dropping the previous demo table {args.table}")
        cat.drop_table(args.table, purge=True)
    mor = "merge-on-read" if args.format_version != "1" else "copy-on-write"
    t = cat.create_table(
        args.table, "id bigint NOT NULL, ts timestamp, category string, amount decimal(10,2)",
        partition_by=["day(ts)", "bucket(4, id)"],
        properties={"format-version": args.format_version, "write.delete.mode": mor, "write.update.mode": mor})
    print(f"created {t.name} (format v{t.format_version}) at {t.location}")
    print(f"schema:\n{t.schema()}")
    print("partition spec:", json.dumps(t.spec().to_json()))

    t.append(spark.sql("""
        SELECT id, TIMESTAMP'2024-01-01 09:00:00' + make_interval(0, 0, 0, CAST(id % 3 AS int)) AS ts,
               element_at(array('books', 'games', 'music'), CAST(id % 3 + 1 AS int)) AS category,
               CAST(id * 2.5 AS decimal(10,2)) AS amount
        FROM range(0, 12)"""))
    first = t.metadata.current_snapshot.snapshot_id
    lineage = ["_row_id", "_last_updated_sequence_number"] if t.format_version >= 3 else []
    show("after the append", t.to_df(columns=["id", "ts", "category", "amount"] + lineage).orderBy("id"))

    t.update({"amount": "amount * 2"}, filter="category = 'games'")
    t.delete("id IN (0, 5)")
    show("after update (games doubled) and delete (ids 0 and 5)",
         t.to_df(columns=["id", "category", "amount"] + lineage).orderBy("id"))
    show("the data files to read, with the formats of the delete files that apply to each", t.plan_files().selectExpr(
        "file_path", "record_count", "data_sequence_number", "first_row_id",
        "transform(deletes, d -> d.file_format) AS delete_file_formats"))
    show(f"time travel to the first snapshot {first}", t.to_df(snapshot_id=first).orderBy("id"))
    print("\n== snapshots")
    for s in t.metadata.snapshots:
        summary = s.summary or {}
        print(f"{s.snapshot_id}  seq={s.sequence_number}  {summary.get('operation'):9}  "
              f"records={summary.get('total-records')}  data-files={summary.get('total-data-files')}  "
              f"delete-files={summary.get('total-delete-files')}")
    music = "category = 'music'"
    print(f"\nthe filter {music!r} reads {t.plan_files(filter=music).count()} of {t.plan_files().count()} files")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
