"""The demo job: create a partitioned table in a local warehouse and show its metadata.

    python jobs/demo.py --warehouse ./warehouse
    spark-submit --properties-file spark-defaults.conf jobs/demo.py --warehouse ./warehouse
"""
from __future__ import annotations

import argparse
import json
import sys

import sparkberg
from sparkberg.spark.session import session_builder


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--warehouse", default="./warehouse", help="warehouse location (path or URI)")
    p.add_argument("--table", default="demo.events")
    p.add_argument("--format-version", default="3", choices=["1", "2", "3"])
    args = p.parse_args(argv)

    spark = session_builder("sparkberg-demo", master="local[2]").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    cat = sparkberg.catalog(spark, args.warehouse)
    if cat.table_exists(args.table):
        print(f"dropping the previous demo table {args.table}")
        cat.drop_table(args.table, purge=True)
    t = cat.create_table(
        args.table,
        "id bigint NOT NULL, ts timestamp, category string, amount decimal(10,2), tags array<string>",
        partition_by=["day(ts)", "bucket(16, id)", "truncate(category, 4)"],
        properties={"format-version": args.format_version, "write.parquet.compression-codec": "zstd"},
    )
    print(f"created {t.name} at {t.location}")
    print(f"metadata file: {t.metadata_location}")
    t.set_properties({"owner": "demo"})
    t = cat.load_table(args.table)
    m = t.metadata
    print(f"format version: {m.format_version}   table uuid: {m.table_uuid}")
    print(f"schema:\n{t.schema()}")
    print("partition spec:", json.dumps(t.spec().to_json()))
    print("properties:", json.dumps(dict(m.properties), sort_keys=True))
    print("metadata log:", [e.metadata_file.rsplit("/", 1)[-1] for e in m.metadata_log])
    print("tables in namespace 'demo':", cat.list_tables("demo"))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
