"""``make bench``: sparkberg against Iceberg Java 1.10.2 on the same tables, in the same Spark 3.5 session.

    .venv-interop/bin/python tests/benchmarks/bench.py [--sizes 10,10000,100000,1000000] [--rows 10000000] [--repeats 3]
        [--deletes 100000,1000000] [--wide 100000x50] [--rowlevel-scale 40000000]
        [--scale 100000,1000000,10000000]
        [--object-store 100000,10000000,20000]
        [--only planning,deletes,wide,reads,append,changes,streams,commit,catalogs,maintenance,rowlevel,s3,memory,
                cold,scale]
        [--json bench.json]

- planning: synthetic tables of N data files (day x bucket[16], 1000 entries per manifest, one position
  delete file per 100 data files), written directly as metadata; full scan, a selective filter (~1% of files)
  that prunes by manifest, partition and metrics, and one that keeps the same files by metrics only.
  sparkberg distributed (manifests decoded on the executors) and auto (what ``plan_files`` does by default: on
  the driver when the manifests left after pruning are small) vs Java ``planFiles()``, each timed after one
  untimed run; manifests are re-read and decoded each time by both. "auto, cached": the same with sparkberg's
  manifest cache enabled (``spark.sparkberg.manifest-cache.enabled``; decoded manifests kept as Arrow files,
  filled by the untimed plan), against the same Java figure (Java's own manifest cache keeps the Avro bytes,
  still decoded each time, and is off by default). "auto, unconsumed": ``plan_files()`` alone, the DataFrame not yet
  consumed (no count), where auto planning runs on the driver (a distributed plan is a lazy DataFrame, so its
  time alone says nothing), with the Spark jobs it starts; "auto, cached, unconsumed" the same with the cache.
  "auto, tasks" (and "auto, cached, tasks"): the planner's tasks held on the driver as an Arrow table
  (``ScanPlan.arrow``: what ``to_df`` reads its tasks from), as Java's ``planFiles()`` gives its tasks on the
  driver, collected from the executors where the plan is distributed.
- deletes: the same planning benchmarks on tables of 100k and 1M data files (``--deletes``) grown by ten appends,
  each data file of 5% of the partitions (days) with a position delete file of its own: a table that
  takes deletes in a few partitions. Its rows, like every "auto" row above, time ``plan_files().count()``.
- doctor: ``Table.check`` at levels ``metadata`` and ``files`` of a 100k-file table in ten snapshots
  (``--doctor``) against Java's read of its ``all_files`` table (Java has no integrity check).
- metatables: every metadata table of a 100k-file table in ten snapshots (``--metatables``) against Java's, warm:
  ``count(*)``, a query of a few columns and every column (:func:`bench_metadata_tables`).
- wide: the same planning benchmarks on a table of 100k data files (``--wide``) with 50 more bigint columns,
  each data file carrying metrics of all 53 columns (sizes, counts, bounds), as writers keep them: most of
  what its manifests hold and what a decoder steps over.
- streams: the streaming sink against Iceberg Java's (``writeStream.format("iceberg")``): Parquet files streamed
  into a partitioned table a file a micro-batch, 40 of 1000 rows and 4 of 1M rows (rows/s, commits/s), and the
  end-to-end latency of a 1-second trigger (a file dropped until the table's snapshot holds it).
- reads: an exact ``count(*)`` of the tables without deletes and with deletion vectors: ``Table.count()`` (from the
  manifests) against Java's ``SELECT count(*)`` (which reads the rows of a table with delete files). And ROWS rows
  without deletes, with position deletes (v2), deletion vectors (v3) and equality deletes,
  about 5% of rows deleted, each read by both engines as ``count(*), sum(x)`` and as every column of every
  row written to Spark's ``noop`` sink, in rounds over all tables and both engines (two untimed,
  ``READ_WARMUP``, then ``READ_ROUNDS``), medians; the merge-on-read overhead is each read over the
  delete-free read of the same kind. Both engines keep decoded delete files between reads, each by its
  default (Java's executor cache, sparkberg's delete cache); sparkberg's also keeps the positions equality
  deletes delete in each data file, so "equality deletes, delete cache emptied" times sparkberg's read with
  that cache emptied before each read (against Java's usual, warm read). "Engine floor": Spark's own Parquet
  scan of the position-delete table's files as a read with deletes must read them, deleting nothing
  (:func:`scan_floors`): what any design made of Spark's operators pays. The reads as ``count(*), sum(x)`` and
  the floor also run on PySpark 4 (``BENCH_SPARK4_PYTHON``, which ``make bench`` sets to the main venv's
  Python), in a child process reading the same tables: sparkberg against itself, Iceberg Java's runtime being
  for Spark 3.5 only.
- append: ROWS rows partitioned by day and bucket[16].
- changes: a ROWS-row table written by Java (day x bucket[16]) with 19 more Java commits (appends of 0.1% of the
  rows; every third a DELETE or UPDATE of 0.1%), copy-on-write and merge-on-read: the changelog of the last 5
  snapshots (``Table.changes(...).count()``) against Java's ``create_changelog_view`` and a ``count()`` of it,
  and the rows the last 10 snapshots appended (``to_df(start_snapshot_id)``, read as ``count(*), sum(x),
  sum(hash(v))``: a bare count Java answers from its manifests) against Java's ``start-snapshot-id`` read; on
  merge-on-read Java's changelog refuses delete files, so the row compares with a full read.
- catalogs: the same latency through a SQL catalog, SQLite and PostgreSQL, sparkberg's and Iceberg Java's
  JdbcCatalog on one database, and through a REST catalog (Iceberg Java's server logic), sparkberg's client and
  Java's RESTCatalog.
- commit: latency of a one-file, one-row append (the writer's Python stage keeps its workers' zip indexes
  between tasks, ``sparkberg.zipimports``; without that, PySpark 3.5 re-read them before every task).
- rowlevel: DELETE (1% of rows by a data column; one day, partition-aligned), UPDATE (1%) and MERGE (a 100k-row
  source, half existing keys and half new, ``ON t.id = s.id AND t.ts = s.ts``, on 3 of the 30 days, 10% of the
  partitions, or on all of them) of a ROWS-row table written by Java (day x bucket[16], one file per partition: ~480 files), v2 and v3,
  copy-on-write and merge-on-read, against Java's ``DELETE FROM``, ``UPDATE`` and ``MERGE INTO`` on the same table
  from the same snapshot (made current again after each run); the read of each merge-on-read result, and after
  sparkberg's read the engine floors of the same data files (deletes unapplied, :func:`scan_floors`); the files
  each engine's snapshot removed, added or deleted by, and the driver's peak RSS (Python and JVM, reset before
  each run); then the MERGE on 3 days of a ``--rowlevel-scale``-row table (more days, partitions of the same
  size), whose time should follow the source, not the table.
- s3: tables on S3 (moto's server on this machine, credentials in FileIO properties; ``--object-store``
  FILES,ROWS,OBJECTS), the reference in the "java" column: planning a FILES-file table (metadata only, as above)
  against PyIceberg's ``plan_files`` on the same table and against sparkberg's plan of the same table on local
  disk; an append and a ``count(*), sum(x)`` read of ROWS rows against the same on local disk; the listing of
  OBJECTS stray objects by ``remove_orphan_files(dry_run=True)`` against the same on local disk.
- memory: peak RSS of the driver (the Python process and its JVM) planning the largest table, each engine in
  a fresh process.
- cold: what a scheduled job pays: each operation in a new process (a new JVM, new Python workers), for each
  engine, alternating which goes first, ``--repeats`` times, timed from the process's start to its end, on a
  ROWS-row v3 merge-on-read table written by Java (day x bucket[16]): an append of a tenth of it (at most 1M
  rows), a DELETE of 1%, a MERGE of a 1% source (at most 100k rows), the compaction of one partition and a
  ``count(*), sum(x)`` read (the last two with 1% of the rows deleted), and sparkberg's command line (``sparkberg
  snapshots``, ``files``: no Spark) against Java's metadata tables of the same name through Spark SQL. sparkberg's
  processes start a plain session (no Iceberg jar); each run starts from the same snapshot. A third process per
  run, Spark's floor (:func:`cold_floor`), does the operation's reads and writes of data files with no table
  format at all: the ratio of its time to Java's is the best a design made of Spark's operators could reach.
- scale: tables of ``--scale`` data files (metadata only, as the planning tables; ten appends; position
  deletes in 1% of the days), a copy per engine: a full and a selective plan, a count of the ``files``
  metadata table and the expiry of the oldest of the ten snapshots, each in a fresh process per engine, timed
  from the table's load to the operation's end, then (but the expiry) five times more in the process (warm: the
  median of the last three), with the driver's peak RSS (Python and JVM). sparkberg's processes start a user's
  session (no Iceberg jar, Spark's default 1 GB of driver memory); Java's the bench's (8 GB). A run an engine
  cannot finish is reported as failed.

Prints a table of medians and ratios (sparkberg / Java) and writes them to a JSON file. A benchmark, not a test.
"""
from __future__ import annotations

import argparse
import compileall
import contextlib
import datetime
import functools
import json
import os
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("SPARKBERG_SHARED") or os.path.join(HERE, "..", "..", "..", "shared")
sys.path.insert(0, os.path.join(SHARED, "interop"))


JDBC_DRIVERS = ["/usr/share/java/sqlite-jdbc.jar", "/usr/share/java/postgresql.jar"]


def session(wh: str, extra: dict[str, str] | None = None):
    from reference import iceberg_java_session
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from reference import jars
    drivers = [j for j in JDBC_DRIVERS if os.path.exists(j)]  # (Iceberg Java's JdbcCatalog: the catalogs bench)
    sys.path.insert(0, os.path.join(HERE, "..", "interop"))
    from iceberg_http_jars import build  # (Iceberg Java's RESTCatalog: the catalogs bench)
    drivers += build(os.path.join(sys.prefix, "iceberg-http"))
    spark = iceberg_java_session(wh, extra={"spark.driver.memory": "8g", "spark.sql.shuffle.partitions": "4",
                                            "spark.jars": ",".join(jars() + drivers),
                                            "spark.sql.parquet.fieldId.read.enabled": "true",
                                            "spark.ui.showConsoleProgress": "false", **(extra or {})})
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def timed(fn, repeats: int, warmup: int = 0) -> tuple[float, object]:
    """The median time of ``repeats`` runs of ``fn`` (after ``warmup`` untimed ones) and its last result."""
    for _ in range(warmup):
        fn()
    runs, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), out


def compiled_modules() -> None:
    """Python's modules as an install has them, compiled to bytecode, for this process and every process it
    starts (the children, their JVMs' Python workers): pip compiles a package's modules when it installs it, but
    this bench runs sparkberg, the interop helpers and the bench from their sources, and where the environment
    sets ``PYTHONDONTWRITEBYTECODE`` no process would keep what it compiled: every fresh process of either
    engine, and every Python worker of sparkberg's, would compile them again. Each engine's children import
    their own: sparkberg's the whole package, Java's the interop helpers."""
    import importlib.util
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    package = importlib.util.find_spec("sparkberg").submodule_search_locations[0]
    for directory in (package, os.path.join(SHARED, "interop"), os.path.join(HERE, "..", "interop")):
        compileall.compile_dir(directory, quiet=2)


# --- synthetic tables -------------------------------------------------------------------------------------
def build_planning_table(spark, wh: str, name: str, files: int, per_manifest: int = 1000, columns: int = 0,
                         snapshots: int = 1, deleted: Callable[[int], bool] = lambda i: i % 100 == 0,
                         properties: dict[str, str] | None = None, partition_scoped: bool = False):
    """A v2 table of ``files`` data files, each ``deleted(i)`` one with a position delete file of its own, written
    as metadata only, in ``snapshots`` appends of as many manifests each (of ``per_manifest`` files).
    ``partition_scoped``: instead, each partition with deleted files gets one position delete file for the whole
    partition (no ``referenced_data_file``, ``file_path`` bounds spanning its files, as Iceberg's Spark writes
    without file granularity) and one in eight of those files one of its own.
    ``columns``: that many more bigint columns, and metrics of every column in each data file (sizes, counts,
    bounds, as Iceberg's writers keep them for up to 100 columns): a wide table's manifests."""
    import sparkberg
    from sparkberg.avro.manifest import manifest_file_for, write_manifest, write_manifest_list
    from sparkberg.format.manifests import ADDED, MANIFEST_DELETES, DataFile, ManifestEntry
    from sparkberg.format import updates as U
    from sparkberg.format.snapshots import Snapshot
    from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType
    sys.path.insert(0, os.path.dirname(HERE))
    from commits import commit_updates
    # (``spark`` may be None: a schema as a StructType needs no session; ``properties``: the FileIO's)
    cat = sparkberg.catalog(spark, wh, properties=properties)
    fields = [StructField("id", LongType()), StructField("ts", TimestampType()), StructField("v", StringType())]
    fields += [StructField(f"c{j}", LongType()) for j in range(columns)]
    t = cat.create_table(f"b.{name}", StructType(fields), partition_by=["day(ts)", "bucket(16, id)"])
    m = t.metadata
    spec, schema = m.default_spec, m.current_schema
    extra_ids = [f.field_id for f in schema.fields][3:]

    def part(i):
        return {1000: 19700 + i // 1600, 1001: i % 16}

    def metrics(i):
        if not columns:
            return dict(value_counts={1: 1000, 2: 1000}, null_value_counts={1: 0, 2: 0},
                        lower_bounds={1: struct.pack("<q", i * 1000)},
                        upper_bounds={1: struct.pack("<q", i * 1000 + 999)})
        day = 19700 + i // 1600
        lower = {1: struct.pack("<q", i * 1000), 2: struct.pack("<q", day * 86_400_000_000), 3: b"v0",
                 **{fid: struct.pack("<q", i) for fid in extra_ids}}
        upper = {1: struct.pack("<q", i * 1000 + 999), 2: struct.pack("<q", (day + 1) * 86_400_000_000 - 1),
                 3: b"v9", **{fid: struct.pack("<q", i + 1000) for fid in extra_ids}}
        return dict(column_sizes={fid: 4000 for fid in lower}, value_counts={fid: 1000 for fid in lower},
                    null_value_counts={fid: 0 for fid in lower}, lower_bounds=lower, upper_bounds=upper)

    starts = list(range(0, files, per_manifest))
    manifests: list = []
    parent, total_deletes, now = None, 0, int(time.time() * 1000)
    scoped: set[tuple] = set()  # (the partitions given a partition-scoped delete file)
    delete_rows = delete_bytes = 0  # (the table's, as the totals count them)
    for k in range(snapshots):
        sid, seq = k + 1, k + 1
        mine = starts[k * len(starts) // snapshots:(k + 1) * len(starts) // snapshots]
        added = added_deletes = 0
        for start in mine:
            entries, deletes = [], []
            for i in range(start, min(files, start + per_manifest)):
                path = f"{t.location}/data/f{i}.parquet"
                entries.append(ManifestEntry(ADDED, DataFile(
                    file_path=path, file_format="parquet", partition=part(i), record_count=1000,
                    file_size_in_bytes=100_000, **metrics(i)), sid))
                if deleted(i) and partition_scoped and tuple(part(i).values()) not in scoped:
                    scoped.add(tuple(part(i).values()))
                    deletes.append(ManifestEntry(ADDED, DataFile(
                        content=1, file_path=f"{t.location}/data/p{i}.parquet", file_format="parquet",
                        partition=part(i), record_count=100, file_size_in_bytes=20_000,
                        lower_bounds={2147483546: f"{t.location}/data/f".encode()},
                        upper_bounds={2147483546: f"{t.location}/data/g".encode()}), sid))
                if deleted(i) and (not partition_scoped or i % 8 == 0):
                    deletes.append(ManifestEntry(ADDED, DataFile(
                        content=1, file_path=f"{t.location}/data/d{i}.parquet", file_format="parquet",
                        partition=part(i), record_count=10, file_size_in_bytes=2_000, referenced_data_file=path,
                        lower_bounds={2147483546: path.encode()}, upper_bounds={2147483546: path.encode()}), sid))
            added += len(entries)
            added_deletes += len(deletes)
            delete_rows += sum(e.data_file.record_count for e in deletes)
            delete_bytes += sum(e.data_file.file_size_in_bytes for e in deletes)
            for content, es in ((0, entries), (MANIFEST_DELETES, deletes)):
                if not es:
                    continue
                data = write_manifest(es, format_version=2, spec=spec, schema=schema, content=content)
                path = f"{t.location}/metadata/m{start}-{content}.avro"
                t.io.create(path, data)
                manifests.append(manifest_file_for(es, path=path, length=len(data), spec=spec, schema=schema,
                                                   added_snapshot_id=sid, content=content, sequence_number=seq))
        lst = f"{t.location}/metadata/snap-{sid}.avro"
        t.io.create(lst, write_manifest_list(manifests, format_version=2, snapshot_id=sid, parent_snapshot_id=parent,
                                             sequence_number=seq))
        # the totals every writer puts in a snapshot's summary (planning reads total-equality-deletes)
        total_deletes += added_deletes
        total = min(files, (mine[-1] + per_manifest)) if mine else 0
        summary = {"operation": "append", "added-data-files": str(added), "added-records": str(added * 1000),
                   "added-position-delete-files": str(added_deletes), "added-delete-files": str(added_deletes),
                   "total-data-files": str(total),
                   "total-delete-files": str(total_deletes), "total-records": str(total * 1000),
                   "total-files-size": str(total * 100_000 + delete_bytes),
                   "total-position-deletes": str(delete_rows), "total-equality-deletes": "0"}
        snap = Snapshot(sid, now - (snapshots - k) * 1000, parent, seq, lst, None, summary, 0)
        commit_updates(t, [U.AddSnapshot(snap), U.SetSnapshotRef("main", sid)])
        parent = sid
    return t


def selective_filter(files: int) -> tuple[int, int, int, int]:
    """~1% of the files, in the middle of the table: a ts range of whole days holding about 2% of them (prunes
    manifests by their partition summaries and entries by day) and an id range over half of those (prunes by
    metrics). Returns (first day, day after the last, low id, high id)."""
    target = max(16, files // 100)
    days = -(-2 * target // 1600)
    day = 19700 + (files // 2) // 1600
    first = (day - 19700) * 1600
    return day, day + days, first * 1000, (first + target) * 1000


def selective_text(files: int) -> str:
    import datetime
    d0, d1, lo, hi = selective_filter(files)
    day = lambda d: (datetime.date(1970, 1, 1) + datetime.timedelta(days=d)).isoformat()  # noqa: E731
    return f"ts >= TIMESTAMP'{day(d0)} 00:00:00Z' AND ts < TIMESTAMP'{day(d1)} 00:00:00Z' AND id >= {lo} AND id < {hi}"


# --- the benchmarks ---------------------------------------------------------------------------------------
CACHE_ENABLED, CACHE_DIR = "spark.sparkberg.manifest-cache.enabled", "spark.sparkberg.manifest-cache.dir"


@contextlib.contextmanager
def manifest_cache(spark, wh: str, on: bool):
    """sparkberg's manifest cache enabled in the block when ``on`` (off after it)."""
    if on:
        spark.conf.set(CACHE_ENABLED, "true")
        spark.conf.set(CACHE_DIR, os.path.join(wh, "manifest-cache"))
    try:
        yield
    finally:
        spark.conf.unset(CACHE_ENABLED)


def bench_planning(spark, wh, sizes, repeats, results):
    for n in sizes:
        t0 = time.perf_counter()
        t = build_planning_table(spark, wh, f"plan{n}", n)
        print(f"built a {n}-file table in {time.perf_counter() - t0:.1f} s", flush=True)
        plan_rows(spark, wh, t, n, f"plan{n}", f"planning {n} files", repeats, results)


def bench_partition_deletes(spark, wh, sizes: list[int], repeats, results):
    """The planning benchmarks on tables of each of ``sizes`` files whose position deletes sit in 5% of their
    partitions (days), grown by ten appends: what the plan's DataFrame costs next to the plan. Each size twice:
    every delete file scoped to one data file, then a partition-scoped delete file in each such partition with
    file-scoped ones for one in eight of its files (:func:`build_planning_table`)."""
    for files in sizes:
        for scoped, name, label in ((False, f"pdeletes{files}", "deletes in 5% of partitions"),
                                    (True, f"pscoped{files}", "partition-scoped deletes in 5% of partitions")):
            t0 = time.perf_counter()
            t = build_planning_table(spark, wh, name, files, snapshots=10, deleted=lambda i: (i // 1600) % 20 == 0,
                                     partition_scoped=scoped)
            print(f"built a {files}-file table with {label} in {time.perf_counter() - t0:.1f} s", flush=True)
            plan_rows(spark, wh, t, files, name, f"planning {files} files, {label}", repeats, results)


def bench_doctor(spark, wh, files: int, repeats, results):
    """``Table.check`` of a table of ``files`` data files (1% with a position delete file of its own), in ten
    snapshots, its files made on local disk with the sizes its manifests record: level ``metadata`` (every
    snapshot's manifests read, summaries and sequence numbers checked), and ``files`` (also every file's existence
    and size, on the executors). Iceberg Java has no integrity check: its row is a full read of the ``all_files``
    metadata table through Spark SQL, the closest metadata walk it has (every snapshot's manifests)."""
    t0 = time.perf_counter()
    t = build_planning_table(spark, wh, f"doctor{files}", files, snapshots=10)
    for path, size in spark.sql(f"SELECT file_path, file_size_in_bytes FROM ref.b.doctor{files}.all_files").collect():
        local = path.removeprefix("file:")
        os.makedirs(os.path.dirname(local), exist_ok=True)
        with open(local, "wb") as f:
            f.truncate(size)  # (a sparse file of the recorded size)
    print(f"built a {files}-file table and its files in {time.perf_counter() - t0:.1f} s", flush=True)
    java = _runs(lambda: spark.sql(f"SELECT * FROM ref.b.doctor{files}.all_files").count(), repeats)
    for level in ("metadata", "files"):
        findings = t.check(level=level).collect()
        assert not findings, findings[:3]
        ours = _runs(lambda: t.check(level=level).count(), repeats)
        _spread_row(results, f"check a {files}-file table (10 snapshots)",
                    f"level {level}; java: all_files read", ours, java)


# each metadata table's query of a few of its columns ({t}: the table); position_deletes is not run, as the
# bench's metadata-only tables have no delete files on disk to read
METADATA_QUERIES = {
    **{name: "SELECT status, count(*) FROM {t} GROUP BY status ORDER BY status"
       for name in ("entries", "all_entries")},
    **{name: "SELECT sum(record_count), sum(file_size_in_bytes) FROM {t}"
       for name in ("files", "data_files", "delete_files", "all_files", "all_data_files", "all_delete_files")},
    **{name: "SELECT sum(added_data_files_count + existing_data_files_count), sum(length) FROM {t}"
       for name in ("manifests", "all_manifests")},
    "snapshots": "SELECT max(committed_at), count(DISTINCT operation) FROM {t}",
    "history": "SELECT count(*) FILTER (WHERE is_current_ancestor) FROM {t}",
    "refs": "SELECT max(snapshot_id) FROM {t}",
    "metadata_log_entries": "SELECT max(latest_snapshot_id) FROM {t}",
    "partitions": "SELECT sum(record_count), sum(file_count), sum(position_delete_file_count) FROM {t}",
}


def bench_metadata_tables(spark, wh, files: int, repeats, results):
    """Every metadata table of a table of ``files`` data files (1% with a position delete file of its own; metadata
    only) in ten snapshots, against Iceberg Java's of the same table through Spark SQL, warm (the median of
    ``repeats`` runs after one): ``count(*)`` (no column read), a query of a few columns
    (:data:`METADATA_QUERIES`), and every column (``SELECT *`` to Spark's ``noop`` sink). sparkberg's through
    ``sparkberg.sql``, which decodes only the columns a query names; the engines' answers compared."""
    import sparkberg
    t0 = time.perf_counter()
    build_planning_table(spark, wh, f"meta{files}", files, snapshots=10)
    print(f"built a {files}-file table in {time.perf_counter() - t0:.1f} s", flush=True)
    cat = sparkberg.catalog(spark, wh)

    def everything(df):
        return lambda: df().write.format("noop").mode("overwrite").save()
    for name, few in METADATA_QUERIES.items():
        ours_t, java_t = f"b.meta{files}.{name}", f"ref.b.meta{files}.{name}"
        for variant, query in (("count(*)", "SELECT count(*) FROM {t}"), ("a few columns", few),
                               ("every column", None)):
            if query is None:
                ours_fn = everything(lambda: sparkberg.sql(spark, f"SELECT * FROM {ours_t}", catalog=cat))
                java_fn = everything(lambda: spark.sql(f"SELECT * FROM {java_t}"))
            else:
                def ours_fn(q=query.format(t=ours_t)):
                    return [tuple(r) for r in sparkberg.sql(spark, q, catalog=cat).collect()]

                def java_fn(q=query.format(t=java_t)):
                    return [tuple(r) for r in spark.sql(q).collect()]
                got, want = ours_fn(), java_fn()
                assert got == want, (name, variant, got, want)
            _spread_row(results, f"metadata table {name} of a {files}-file table (10 snapshots)", variant,
                        _runs(ours_fn, repeats), _runs(java_fn, repeats))


def bench_wide_planning(spark, wh, files: int, columns: int, repeats, results):
    """The planning benchmarks on a table whose data files carry metrics of ``columns`` + 3 columns."""
    t0 = time.perf_counter()
    t = build_planning_table(spark, wh, "wide", files, columns=columns)
    print(f"built a {files}-file table of {columns + 3} columns in {time.perf_counter() - t0:.1f} s", flush=True)
    plan_rows(spark, wh, t, files, "wide", f"planning {files} files x {columns + 3} cols", repeats, results)


def plan_rows(spark, wh, t, n: int, name: str, label: str, repeats, results):
    """sparkberg's plans of the table ``name`` (``t``, ``n`` data files) against Java's, as rows ``label``."""
    jvm = spark._jvm
    size = jvm.org.apache.iceberg.relocated.com.google.common.collect.Iterables.size
    expr = jvm.org.apache.iceberg.expressions.Expressions
    jt = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, f"ref.b.{name}")
    d0, d1, lo, hi = selective_filter(n)
    both = getattr(expr, "and")
    ids = both(expr.greaterThanOrEqual("id", lo), expr.lessThan("id", hi))
    days = both(expr.greaterThanOrEqual("ts", d0 * 86_400_000_000), expr.lessThan("ts", d1 * 86_400_000_000))
    # (kind, sparkberg filter, Java filter): "selective" prunes by manifest, partition and metrics; "metrics
    # only" keeps the same files by their id bounds alone, so every manifest is read
    kinds = (("full", None, None), ("selective", selective_text(n), both(days, ids)),
             ("selective, metrics only", f"id >= {lo} AND id < {hi}", ids))

    def java(java_filter):
        jt.refresh()
        scan = jt.newScan()
        if java_filter is not None:
            scan = scan.filter(java_filter)
        return size(scan.planFiles())

    for kind, text, java_filter in kinds:
        java_s, java_n = timed(lambda: java(java_filter), repeats, warmup=1)
        for mode in ("distributed", "auto", "auto, cached"):
            planning = mode.split(",")[0]
            with manifest_cache(spark, wh, mode.endswith("cached")):
                # (one untimed plan first, which also fills the cache)
                ours_s, ours_n = timed(lambda: t.plan_files(filter=text, planning=planning).count(), repeats,
                                       warmup=1)
            results.append({"benchmark": f"{label}, {kind}", "variant": mode,
                            "sparkberg_s": ours_s, "java_s": java_s, "ratio": ours_s / java_s,
                            "files": ours_n, "java_files": java_n})
            print(results[-1], flush=True)
        # the tasks on the driver, as Java's planFiles() gives them
        for variant in ("auto, tasks", "auto, cached, tasks"):
            with manifest_cache(spark, wh, "cached" in variant):
                ours_s, ours_n = timed(lambda: driver_tasks(t, text), repeats, warmup=1)
            results.append({"benchmark": f"{label}, {kind}", "variant": variant,
                            "sparkberg_s": ours_s, "java_s": java_s, "ratio": ours_s / java_s,
                            "files": ours_n, "java_files": java_n})
            print(results[-1], flush=True)
        # what planning on the driver costs before anything consumes the plan (a distributed plan is a lazy
        # DataFrame: its time alone says nothing), and the Spark jobs it starts
        if not planned_locally(t, text):
            continue
        sc = spark.sparkContext
        for variant in ("auto, unconsumed", "auto, cached, unconsumed"):
            group = f"bench-plan-{name}-{kind}-{variant}"
            sc.setJobGroup(group, group)
            try:
                with manifest_cache(spark, wh, "cached" in variant):
                    ours_s, _ = timed(lambda: t.plan_files(filter=text), repeats, warmup=1)
            finally:
                sc.setLocalProperty("spark.jobGroup.id", None)
            jobs = len(sc.statusTracker().getJobIdsForGroup(group)) / (repeats + 1)  # (with the warm-up)
            results.append({"benchmark": f"{label}, {kind}", "variant": variant,
                            "sparkberg_s": ours_s, "java_s": java_s, "ratio": ours_s / java_s, "jobs": jobs})
            print(results[-1], flush=True)


def driver_tasks(t, text: str | None) -> int:
    """Plan as ``to_df`` does and hold the tasks on the driver as an Arrow table (collected from the executors
    when the plan is distributed); returns how many."""
    from sparkberg.planning.scan import plan
    return plan(t.spark, t.metadata, t.io, t.metadata.current_snapshot, t._bound_filter(text, t.schema()),
                "auto").arrow().num_rows


def planned_locally(t, text: str | None) -> bool:
    """Whether ``plan_files`` plans this scan on the driver (auto planning)."""
    from sparkberg.planning.scan import plan
    snap = t.metadata.current_snapshot
    return plan(t.spark, t.metadata, t.io, snap, t._bound_filter(text, t.schema()), "auto").is_local


# untimed reads of each table before the timed ones, by both engines: a query's first runs in a session
# compile its generated code (3-10x slower), which the time of a scan's repeated reads does not include
READ_WARMUP = 2
READ_ROUNDS = 5  # timed rounds of the reads (at least; more with --repeats)
SPARK4_ROUNDS = 15  # the same on PySpark 4 (spark4_child), whose rounds take a few seconds


ROWLEVEL_DAYS = 30  # days of the row-level table per 10M rows: 30 x bucket[16] = 480 partitions, one file each
MODES = ("copy-on-write", "merge-on-read")


def build_rowlevel_table(spark, rows: int, version: int, prefix: str = "rl") -> tuple[str, int]:
    """A table written by Iceberg Java (``id, ts, v, x``, day x bucket[16], one file per partition), ``rows`` rows
    over 30 days per 10M rows (a larger table has more days: more history, the same partition size); returns its
    name and day count."""
    days = max(ROWLEVEL_DAYS, ROWLEVEL_DAYS * rows // 10_000_000)
    name = f"{prefix}_v{version}_{rows}"
    spark.sql(f"CREATE TABLE ref.b.{name} (id bigint, ts timestamp, v string, x double) USING iceberg "
              f"PARTITIONED BY (days(ts), bucket(16, id)) TBLPROPERTIES ('format-version'='{version}')")
    spark.sql(f"""SELECT id, TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % {days} AS int)) AS ts,
                  concat('v', id) AS v, CAST(id % 1000 AS double) AS x FROM range(0, {rows})""") \
        .writeTo(f"ref.b.{name}").append()
    return name, days


def merge_source(spark, rows: int, days: int, spread: bool):
    """100k rows (at most 1% of the table), half of them existing keys, half new; in the first 3 days (``spread``
    False: 10% of the partitions of a 10M-row table, the same partitions of a larger one) or on all of them.
    Cached."""
    n = min(100_000, rows // 100)
    span = days if spread else ROWLEVEL_DAYS // 10
    past = (rows // days + 1) * days  # (new ids start past the table's, on the same days)
    # key k becomes id (k DIV span) * days + k % span: on day k % span, existing for the first half of the keys
    return spark.sql(f"""
        SELECT id, TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % {days} AS int)) AS ts,
               concat('m', id) AS v, CAST(id % 1000 AS double) + 0.5 AS x
        FROM (SELECT (k DIV {span}) * {days} + k % {span} + CASE WHEN k < {n // 2} THEN 0 ELSE {past} END AS id
              FROM (SELECT id AS k FROM range(0, {n})))""").cache()


# what the reads of the row-level rows compute: every row counted, a number and a string read
CHECKSUM = ("count(*)", "sum(x)", "sum(hash(v))")

ROWLEVEL_OPS = ("delete 1% by a data column", "delete a day (partition-aligned)", "update 1%",
                "merge, source on 3 days", "merge, source on all days")


def bench_rowlevel(spark, wh, rows: int, scale_rows: int, repeats: int, results: list,
                   ops: tuple[str, ...] = ROWLEVEL_OPS, versions: tuple[int, ...] = (2, 3),
                   modes: tuple[str, ...] = MODES) -> None:
    """DELETE, UPDATE and MERGE against Iceberg Java's ``DELETE FROM``, ``UPDATE`` and ``MERGE INTO`` on the same
    table (written by Java), v2 and v3, copy-on-write and merge-on-read: each operation runs on the table's first
    snapshot, which is made current again after it (so every run, of either engine, starts from the same state).
    The two results must read the same (count, sum of x, sum of hash(v)); that read is timed after merge-on-read
    operations, and after sparkberg's read come the engine floors of its data files (:func:`scan_floors`). Then
    the MERGE of the source on 3 days on a table of ``scale_rows`` rows (more days, the same partition size, the
    same partitions touched): it should take about as long, growing with the source, not the table."""
    import sparkberg
    cat = sparkberg.catalog(spark, wh)

    def checksum_sql(name):
        return f"SELECT {', '.join(CHECKSUM)} FROM {name}"

    def run(name: str, days: int, ops: list[str], modes, versions_label: str) -> None:
        t = cat.load_table(f"b.{name}")
        base = t.metadata.current_snapshot_id
        last_day = (datetime.datetime(2024, 1, 1) + datetime.timedelta(days=days - 1)).isoformat(" ")
        sources = {}
        for op in ops:
            if op.startswith("merge"):
                sources[op] = merge_source(spark, rows_of[name], days, spread=op == "merge, source on all days")
                sources[op].createOrReplaceTempView(f"src_{len(sources)}")
                sources[op].count()
        ours_ops = {
            "delete 1% by a data column": lambda: t.delete("x < 10"),
            "delete a day (partition-aligned)": lambda: t.delete(f"ts >= TIMESTAMP '{last_day}'"),
            "update 1%": lambda: t.update({"v": "concat(v, '-u')"}, "x < 10"),
        }
        java_ops = {
            "delete 1% by a data column": f"DELETE FROM ref.b.{name} WHERE x < 10",
            "delete a day (partition-aligned)": f"DELETE FROM ref.b.{name} WHERE ts >= TIMESTAMP '{last_day}'",
            "update 1%": f"UPDATE ref.b.{name} SET v = concat(v, '-u') WHERE x < 10",
        }
        for i, op in enumerate(sources, 1):
            ours_ops[op] = (lambda src: lambda: t.merge(src, "t.id = s.id AND t.ts = s.ts")
                            .when_matched_update_all().when_not_matched_insert_all().execute())(sources[op])
            java_ops[op] = (f"MERGE INTO ref.b.{name} t USING src_{i} s ON t.id = s.id AND t.ts = s.ts "
                            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
        for mode in modes:
            t.set_properties({f"write.{k}.mode": mode for k in ("delete", "update", "merge")})
            for n, op in enumerate(ops):
                times = {"ours": [], "java": [], "ours_read": [], "java_read": [], "ours_rss": [], "java_rss": [],
                         "floor_read": [], "tested_floor_read": []}
                done = {}
                # (the first operation of a table and mode twice more, untimed: the first runs in a session compile
                # the JVM's and Spark's code paths for either engine, which takes each three to four runs; the
                # README's benchmark section has the figures)
                warm = 2 if n == 0 else 0
                for r in range(repeats + warm):
                    for engine in ("ours", "java"):
                        t.refresh()
                        if t.metadata.current_snapshot_id != base:
                            t.set_current_snapshot(base)
                        spark.sql(f"REFRESH TABLE ref.b.{name}")
                        _reset_peak_rss()
                        t0 = time.perf_counter()
                        if engine == "ours":
                            ours_ops[op]()
                        else:
                            spark.sql(java_ops[op]).collect()
                        if r < warm:
                            continue
                        times[engine].append(time.perf_counter() - t0)
                        times[f"{engine}_rss"].append(_peak_rss_mb())
                        t.refresh()
                        snap = t.metadata.current_snapshot
                        t0 = time.perf_counter()
                        if engine == "ours":
                            got = t.to_df().selectExpr(*CHECKSUM).collect()[0]
                        else:
                            got = spark.sql(checksum_sql(f"ref.b.{name}")).collect()[0]
                        times[f"{engine}_read"].append(time.perf_counter() - t0)
                        done[engine] = (tuple(got), _touched(snap))
                        if engine == "ours" and mode == "merge-on-read":  # (the files as they are, deletes unapplied)
                            floors = scan_floors(spark, t, CHECKSUM)
                            for key, label in (("floor_read", "floor: plain scans unioned"),
                                               ("tested_floor_read", "floor: the same, row positions tested")):
                                t0 = time.perf_counter()
                                floors[label]()
                                times[key].append(time.perf_counter() - t0)
                assert done["ours"][0] == done["java"][0], (op, mode, done)
                o, j = statistics.median(times["ours"]), statistics.median(times["java"])
                label = f"{op}, {rows_of[name]} rows"
                results.append({"benchmark": label, "variant": f"{versions_label} {mode}", "sparkberg_s": o,
                                "java_s": j, "ratio": o / j, "spread": _spread(times["ours"], times["java"]),
                                "touched": done["ours"][1], "java_touched": done["java"][1],
                                "rss_mb": max(times["ours_rss"]), "java_rss_mb": max(times["java_rss"]),
                                "runs": times["ours"], "java_runs": times["java"]})
                print(results[-1], flush=True)
                if mode == "merge-on-read":
                    o, j = statistics.median(times["ours_read"]), statistics.median(times["java_read"])
                    results.append({"benchmark": f"read after {op}", "variant": f"{versions_label} {mode}",
                                    "sparkberg_s": o, "java_s": j, "ratio": o / j,
                                    "spread": _spread(times["ours_read"], times["java_read"]),
                                    "floor_s": statistics.median(times["floor_read"]),
                                    "tested_floor_s": statistics.median(times["tested_floor_read"])})
                    print(results[-1], flush=True)
            t.refresh()
            t.set_current_snapshot(base)
        for src in sources.values():
            src.unpersist()

    rows_of = {}
    for version in versions:
        name, days = build_rowlevel_table(spark, rows, version)
        rows_of[name] = rows
        run(name, days, list(ops), modes, f"v{version}")
    if scale_rows and "merge, source on 3 days" in ops:
        name, days = build_rowlevel_table(spark, scale_rows, 2)
        rows_of[name] = scale_rows
        run(name, days, ["merge, source on 3 days"], modes, "v2")


def _touched(snap) -> str:
    """What an operation's snapshot did to files, from its summary: data files removed and added, deletes added."""
    s = snap.summary or {}
    return (f"-{s.get('deleted-data-files', 0)}+{s.get('added-data-files', 0)} data, "
            f"+{s.get('added-delete-files', 0)} deletes")


def _spread(ours: list[float], java: list[float]) -> str:
    """The run-to-run range of the ratio: worst and best pairing of the runs."""
    return f"{min(ours) / max(java):.2f}-{max(ours) / min(java):.2f}"


def _reset_peak_rss() -> None:
    """Reset the peak RSS (VmHWM) of this process and its children (the JVM) to their current RSS."""
    pids = [os.getpid()]
    try:
        pids += [int(p) for p in open(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read().split()]
    except OSError:
        pass
    for pid in pids:
        try:
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass


def bench_reads(spark, wh, rows, repeats, results):
    import sparkberg
    cat = sparkberg.catalog(spark, wh)
    src = spark.sql(f"""SELECT id, TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % 30 AS int)) AS ts,
                        concat('v', id) AS v, CAST(id % 1000 AS double) AS x FROM range(0, {rows})""")
    tables = {}
    for name, version, how in (("none", 2, None), ("pos", 2, "pos"), ("dv", 3, "pos"), ("eq", 2, "eq")):
        t = cat.create_table(f"b.read_{name}", "id bigint, ts timestamp, v string, x double",
                             partition_by=["day(ts)", "bucket(16, id)"],
                             properties={"format-version": str(version), "write.delete.mode": "merge-on-read"})
        t.append(src)
        if how == "pos":
            t.delete("id % 20 = 7")
        elif how == "eq":
            keys = spark.sql(f"SELECT id, TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % 30 AS int)) "
                             f"AS ts FROM range(0, {rows}) WHERE id % 20 = 7")
            t.delete_by_keys(keys, ["id"])
        tables[name] = t

    def ours_read(t):
        return t.to_df().agg({"x": "sum", "*": "count"}).collect()[0]

    def java_read(name):
        return spark.sql(f"SELECT count(*), sum(x) FROM ref.b.read_{name}").collect()[0]

    def noop(df):
        df.write.format("noop").mode("overwrite").save()

    # two reads of each table: an aggregate of one column (the scan itself is nearly all of its time, so the
    # cost of deletes shows most), and every column of every row to Spark's noop sink (a job that reads the rows)
    kinds = {"": (ours_read, java_read),
             ", all columns to a noop sink": (lambda t: noop(t.to_df()),
                                              lambda name: noop(spark.table(f"ref.b.read_{name}")))}
    floors = scan_floors(spark, tables["pos"])
    # Rounds over every table and both engines (the warm-up rounds untimed), so that a JVM and caches still
    # warming up weigh on each read alike instead of on whichever came first
    times: dict[tuple[str, str, str], list[float]] = {(k, n, e): [] for k in kinds for n in tables
                                                      for e in ("ours", "java")}
    floor_times: dict[str, list[float]] = {label: [] for label in floors}
    for r in range(READ_WARMUP + max(repeats, READ_ROUNDS)):
        read_round(floors, r, floor_times)
        for kind, (ours_fn, java_fn) in kinds.items():
            for name, t in tables.items():
                t0 = time.perf_counter()
                ours = ours_fn(t)
                t1 = time.perf_counter()
                theirs = java_fn(name)
                t2 = time.perf_counter()
                if not kind:
                    assert sorted(ours.asDict().values()) == sorted(theirs.asDict().values()), (name, ours, theirs)
                if r >= READ_WARMUP:
                    times[(kind, name, "ours")].append(t1 - t0)
                    times[(kind, name, "java")].append(t2 - t1)
    from sparkberg.read.deletecache import DeleteCache
    cold = []
    for _ in range(max(repeats, READ_ROUNDS)):
        DeleteCache.clear()
        t0 = time.perf_counter()
        ours_read(tables["eq"])
        cold.append(time.perf_counter() - t0)
    labels = READ_TABLES
    for kind in kinds:
        base = {e: statistics.median(times[(kind, "none", e)]) for e in ("ours", "java")}
        for name in tables:
            ours_s = statistics.median(times[(kind, name, "ours")])
            java_s = statistics.median(times[(kind, name, "java")])
            results.append({"benchmark": f"read {rows} rows{kind}", "variant": labels[name],
                            "sparkberg_s": ours_s, "java_s": java_s, "ratio": ours_s / java_s,
                            "mor_overhead": ours_s / base["ours"], "java_mor_overhead": java_s / base["java"]})
            print(results[-1], flush=True)
        if not kind:
            for label, runs in floor_times.items():
                floor_s = statistics.median(runs)
                results.append({"benchmark": f"read {rows} rows, Spark's own scan", "variant": label,
                                "sparkberg_s": floor_s, "java_s": None, "ratio": None,
                                "mor_overhead": floor_s / base["ours"], "java_mor_overhead": None})
                print(results[-1], flush=True)
            ours_s, java_s = statistics.median(cold), statistics.median(times[(kind, "eq", "java")])
            results.append({"benchmark": f"read {rows} rows", "variant": "equality deletes, delete cache emptied",
                            "sparkberg_s": ours_s, "java_s": java_s, "ratio": ours_s / java_s,
                            "mor_overhead": ours_s / base["ours"], "java_mor_overhead": java_s / base["java"]})
            print(results[-1], flush=True)
    # an exact count: sparkberg's from the manifests (record counts less the deletion vectors' cardinalities)
    # against Java's count(*), which reads the rows of a table with delete files
    for name in ("none", "dv"):
        ours_runs = _runs(lambda: tables[name].count(), max(repeats, READ_ROUNDS))
        java_runs = _runs(lambda: spark.sql(f"SELECT count(*) FROM ref.b.read_{name}").collect(),
                          max(repeats, READ_ROUNDS))
        assert tables[name].count() == spark.sql(f"SELECT count(*) FROM ref.b.read_{name}").collect()[0][0]
        _spread_row(results, f"count(*) of {rows} rows", labels[name], ours_runs, java_runs)


def read_round(reads: dict, r: int, times: dict[str, list[float]]) -> None:
    """Round ``r`` of the reads: each of ``reads`` once, its time kept in ``times`` past the warm-up rounds."""
    for label, read in reads.items():
        t0 = time.perf_counter()
        read()
        if r >= READ_WARMUP:
            times[label].append(time.perf_counter() - t0)


READ_TABLES = {"none": "no deletes", "pos": "position deletes", "dv": "deletion vectors", "eq": "equality deletes"}


def spark4_reads(wh: str, rows: int, repeats: int, results: list) -> None:
    """The merge-on-read rows again on PySpark 4 (``BENCH_SPARK4_PYTHON``: the main venv's Python), in a child
    process reading the tables this run built: sparkberg's reads of each table as ``count(*), sum(x)`` and the
    engine floor, in :data:`SPARK4_ROUNDS` rounds, medians; each against sparkberg's delete-free read on the
    same Spark. No Java rows: the reference stack runs Iceberg Java on Spark 3.5 only."""
    python = os.environ.get("BENCH_SPARK4_PYTHON")
    if not python:
        print("BENCH_SPARK4_PYTHON unset: no Spark 4 reads", flush=True)
        return
    p = subprocess.run([python, __file__, "--spark4-child", wh, "--rows", str(rows), "--repeats", str(repeats)],
                       capture_output=True, text=True, timeout=3600)
    found = [x for x in p.stdout.splitlines() if x.startswith("[")]
    if p.returncode or not found:
        raise RuntimeError(p.stderr[-3000:])
    for r in json.loads(found[-1]):
        results.append(r)
        print(r, flush=True)


def spark4_child(wh: str, rows: int, repeats: int) -> None:
    """In the child (PySpark 4, no Iceberg Java): time the reads :func:`spark4_reads` reports, print them as JSON."""
    import pyspark

    import sparkberg
    from sparkberg.spark.session import session_builder
    spark = (session_builder("sparkberg-bench", "local[2]", os.path.join(HERE, "..", "..", "spark-defaults.conf"))
             .config("spark.driver.memory", "8g").config("spark.sql.shuffle.partitions", "4")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    cat = sparkberg.catalog(spark, wh)
    tables = {name: cat.load_table(f"b.read_{name}") for name in READ_TABLES}
    reads = {name: (lambda t=t: t.to_df().agg({"x": "sum", "*": "count"}).collect()[0]) for name, t in tables.items()}
    reads.update(scan_floors(spark, tables["pos"]))
    times: dict[str, list[float]] = {label: [] for label in reads}
    for r in range(READ_WARMUP + max(repeats, SPARK4_ROUNDS)):  # (no Java reads: more rounds, steadier medians)
        read_round(reads, r, times)
    base = statistics.median(times["none"])
    out = []
    for label, runs in times.items():
        ours_s = statistics.median(runs)
        floor = label not in READ_TABLES
        benchmark = f"read {rows} rows on Spark {pyspark.__version__}" + (", its own scan" if floor else "")
        out.append({"benchmark": benchmark,
                    "variant": label if floor else READ_TABLES[label], "sparkberg_s": ours_s, "java_s": None,
                    "ratio": None, "mor_overhead": ours_s / base, "java_mor_overhead": None})
    spark.stop()
    print(json.dumps(out))


def scan_floors(spark, t, columns: tuple[str, ...] = ("count(*)", "sum(x)")) -> dict:
    """What any merge-on-read design built from Spark's own operators pays before it deletes a row, on the
    files of ``t`` (a table some of whose data files have position deletes), read as ``columns`` like the other
    reads: Spark's Parquet scan of the files without deletes unioned with a scan of the files
    with deletes, both plain; and the same with each row of the second scan's position
    (``_metadata.row_index``) and file id (the hash of its name sparkberg uses) computed and tested, by a test
    that deletes nothing. The second is the floor of the union design: Spark unions plain scans as column
    batches, in the stage of the operator above them, while a filter on one scan (any filter: the test, a
    trivial one on a data column) makes the union one of rows, each row of either scan passed up one by one. A
    single scan of every file would compute the row index and file of every row instead. Each read is built
    anew, as ``to_df`` builds one."""
    from pyspark.sql import DataFrame

    from sparkberg.read.columns import read_schema
    from sparkberg.read.fileids import FileIds
    from sparkberg.spark.jvm import read_parquet
    from sparkberg.spark.tuning import ReadTuning
    tasks = t.plan_files().collect()
    deleted = [r["file_path"] for r in tasks if r["deletes"]]
    plain = [r["file_path"] for r in tasks if not r["deletes"]]
    schema = read_schema(t.schema())

    def read(tested: bool):
        scans = []
        if deleted:  # (none after an operation that only removed files)
            scans.append(read_parquet(spark, schema, deleted))
            if tested:  # (true for every row)
                ids = FileIds(deleted, ReadTuning().name_ids_max_files).sql()
                scans[0] = scans[0].where(f"_metadata.row_index != -1 OR {ids} != -1")
        if plain:  # (none when every file has deletes)
            scans.append(read_parquet(spark, schema, plain))
        return functools.reduce(DataFrame.union, scans).selectExpr(*columns).collect()[0]

    return {"floor: plain scans unioned": lambda: read(False),
            "floor: the same, row positions tested": lambda: read(True)}


CHANGES_SNAPSHOTS = 20  # the history of the changelog's table: an append of the rows, then 19 commits


def build_changes_table(spark, rows: int, mode: str) -> tuple[str, list[int]]:
    """A Java-written v2 table (day x bucket[16], ``mode`` for row-level commands) of ``rows`` rows, then 19
    more commits by Java: appends of 0.1% of the rows, and every third commit a DELETE or an UPDATE of 0.1% by a
    data column; returns its name and its snapshot ids, oldest first."""
    name = f"chg_{mode.split('-')[0]}_{rows}"
    days = ROWLEVEL_DAYS
    spark.sql(f"CREATE TABLE ref.b.{name} (id bigint, ts timestamp, v string, x double) USING iceberg "
              f"PARTITIONED BY (days(ts), bucket(16, id)) TBLPROPERTIES ('format-version'='2', "
              f"'write.delete.mode'='{mode}', 'write.update.mode'='{mode}', 'write.merge.mode'='{mode}')")
    source = """SELECT id, TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % {days} AS int)) AS ts,
                       concat('v', id) AS v, CAST(id % 1000 AS double) AS x FROM range({lo}, {hi})"""
    spark.sql(source.format(days=days, lo=0, hi=rows)).writeTo(f"ref.b.{name}").append()
    step = max(1, rows // 1000)
    for i in range(1, CHANGES_SNAPSHOTS):
        if i % 3 == 0:
            op = "DELETE FROM" if i % 2 else "UPDATE"
            cond = f"x = {i}" if op == "DELETE FROM" else f"x = {500 + i}"
            spark.sql(f"DELETE FROM ref.b.{name} WHERE {cond}" if op == "DELETE FROM" else
                      f"UPDATE ref.b.{name} SET v = concat(v, '!') WHERE {cond}")
        else:
            spark.sql(source.format(days=days, lo=rows + i * step, hi=rows + (i + 1) * step)) \
                .writeTo(f"ref.b.{name}").append()
    snaps = [r[0] for r in spark.sql(f"SELECT snapshot_id FROM ref.b.{name}.snapshots ORDER BY committed_at")
             .collect()]
    return name, snaps


def bench_changes(spark, wh, rows: int, repeats: int, results: list) -> None:
    """The changelog of the last 5 of 20 snapshots and an incremental read of the last 10 appends' rows, against
    Java's ``create_changelog_view`` + ``count()`` and its ``start-snapshot-id`` read; on merge-on-read, where
    Java's changelog refuses delete files, against the rows changed and a full read of the table."""
    import sparkberg
    cat = sparkberg.catalog(spark, wh)
    for mode in MODES:
        name, snaps = build_changes_table(spark, rows, mode)
        t = cat.load_table(f"b.{name}")
        start = snaps[-6]
        changed = t.changes(start).count()
        o_runs, j_runs = [], []
        for _ in range(repeats + 1):  # (the first of each untimed)
            t0 = time.perf_counter()
            t.changes(start).count()
            t1 = time.perf_counter()
            if mode == "copy-on-write":
                view = spark.sql(f"CALL ref.system.create_changelog_view(table => 'b.{name}', "
                                 f"options => map('start-snapshot-id', '{start}'))").first()[0]
                spark.sql(f"SELECT count(*) FROM {view}").first()
            t2 = time.perf_counter()
            o_runs.append(t1 - t0)
            j_runs.append(t2 - t1)
        o_runs, j_runs = o_runs[1:], j_runs[1:]
        o = statistics.median(o_runs)
        if mode == "copy-on-write":
            j = statistics.median(j_runs)
            results.append({"benchmark": f"changelog, last 5 of {CHANGES_SNAPSHOTS} snapshots, {rows} rows",
                            "variant": f"{mode}, {changed} changes, spread {_spread(o_runs, j_runs)}",
                            "sparkberg_s": o, "java_s": j, "ratio": o / j})
        else:
            full, _ = timed(lambda: t.to_df().count(), repeats, 1)
            results.append({"benchmark": f"changelog, last 5 of {CHANGES_SNAPSHOTS} snapshots, {rows} rows",
                            "variant": f"{mode} (Java refuses), {changed} changes; a full read {full:.2f} s",
                            "sparkberg_s": o, "java_s": None, "ratio": o / full})
        print(results[-1], flush=True)
        if mode != "copy-on-write":
            continue
        first = snaps[-11]
        o_runs, j_runs = [], []
        for _ in range(repeats + 1):
            t0 = time.perf_counter()
            n = t.to_df(start_snapshot_id=first).selectExpr(*CHECKSUM).first()[0]
            t1 = time.perf_counter()
            spark.read.format("iceberg").option("start-snapshot-id", str(first)).load(f"ref.b.{name}") \
                .selectExpr(*CHECKSUM).first()
            t2 = time.perf_counter()
            o_runs.append(t1 - t0)
            j_runs.append(t2 - t1)
        o_runs, j_runs = o_runs[1:], j_runs[1:]
        o, j = statistics.median(o_runs), statistics.median(j_runs)
        results.append({"benchmark": f"incremental append read, last 10 of {CHANGES_SNAPSHOTS} snapshots",
                        "variant": f"{n} rows, spread {_spread(o_runs, j_runs)}",
                        "sparkberg_s": o, "java_s": j, "ratio": o / j})
        print(results[-1], flush=True)


STREAM_SHAPES = (("small batches", 40, 1_000), ("large batches", 4, 1_000_000))  # (name, files, rows a file)


def _stream_files(directory: str, files: int, rows: int, first: int = 0) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    os.makedirs(directory, exist_ok=True)
    for i in range(first, first + files):
        ids = pa.array(range(i * rows, (i + 1) * rows), pa.int64())
        pq.write_table(pa.table({"id": ids, "p": pc.cast(pc.bit_wise_and(ids, 7), pa.int32()),
                                 "v": pc.cast(ids, pa.string())}), os.path.join(directory, f"f{i:05d}.parquet"))


def _records(t) -> int:
    """The rows of a table's current snapshot, from its summary (refreshed)."""
    snap = t.refresh().current_snapshot()
    return int(snap.summary.get("total-records", 0)) if snap is not None else 0


def bench_streams(spark, wh, repeats, results):
    """The streaming sink against Iceberg Java's, in this Spark 3.5 session: a directory of Parquet files streamed
    into a table partitioned by ``p`` (8 values) with Trigger.AvailableNow, a file a micro-batch (rows/s and
    commits/s, small and large batches); and the end-to-end latency of a 1-second processingTime trigger: a file
    dropped into the directory until the table's current snapshot holds its rows (polled every 20 ms through the
    metadata, the same way for both tables)."""
    import sparkberg
    cat = sparkberg.catalog(spark, wh)
    for shape, files, rows in STREAM_SHAPES:
        src = os.path.join(wh, f"stream-src-{files}")
        _stream_files(src, files, rows)
        o_runs, j_runs = [], []
        for r in range(repeats + 1):  # (the first of each untimed)
            stream = spark.readStream.schema("id bigint, p int, v string").option("maxFilesPerTrigger", 1) \
                .parquet(src)
            for engine in ("sparkberg", "java"):
                name = f"s_{engine}_{files}_{r}"
                spark.sql(f"CREATE TABLE ref.b.{name} (id bigint, p int, v string) USING iceberg PARTITIONED BY (p)")
                ckpt = os.path.join(wh, f"ckpt-{name}")
                t0 = time.perf_counter()
                if engine == "sparkberg":
                    q = cat.load_table(f"b.{name}").write_stream(stream, ckpt, trigger={"availableNow": True})
                else:
                    q = stream.writeStream.format("iceberg").outputMode("append").trigger(availableNow=True) \
                        .option("checkpointLocation", ckpt).toTable(f"ref.b.{name}")
                q.awaitTermination()
                (o_runs if engine == "sparkberg" else j_runs).append(time.perf_counter() - t0)
                assert len(cat.load_table(f"b.{name}").snapshots()) == files
        o_runs, j_runs = o_runs[1:], j_runs[1:]
        o, j = statistics.median(o_runs), statistics.median(j_runs)
        results.append({"benchmark": f"streaming sink, {shape}: {files} micro-batches of {rows} rows",
                        "variant": f"{files * rows / o:,.0f} vs {files * rows / j:,.0f} rows/s, {files / o:.1f} vs "
                                   f"{files / j:.1f} commits/s, spread {_spread(o_runs, j_runs)}",
                        "sparkberg_s": o, "java_s": j, "ratio": o / j})
        print(results[-1], flush=True)
    latencies: dict[str, list[float]] = {"sparkberg": [], "java": []}
    for engine in ("sparkberg", "java"):
        src = os.path.join(wh, f"latency-{engine}")
        _stream_files(src, 1, 1000)
        name = f"latency_{engine}"
        spark.sql(f"CREATE TABLE ref.b.{name} (id bigint, p int, v string) USING iceberg PARTITIONED BY (p)")
        stream = spark.readStream.schema("id bigint, p int, v string").parquet(src)
        ckpt = os.path.join(wh, f"ckpt-{name}")
        if engine == "sparkberg":
            q = cat.load_table(f"b.{name}").write_stream(stream, ckpt, trigger={"processingTime": "1 second"})
        else:
            q = stream.writeStream.format("iceberg").outputMode("append").trigger(processingTime="1 second") \
                .option("checkpointLocation", ckpt).toTable(f"ref.b.{name}")
        try:
            t = cat.load_table(f"b.{name}")
            for i in range(1, repeats * 4 + 2):
                while _records(t) < i * 1000:
                    time.sleep(0.02)
                time.sleep(random.uniform(0, 1))  # (dropped at any moment of the trigger's second)
                t0 = time.perf_counter()
                _stream_files(src, 1, 1000, first=i)
                while _records(t) < (i + 1) * 1000:
                    time.sleep(0.02)
                latencies[engine].append(time.perf_counter() - t0)
        finally:
            q.stop()
    o, j = statistics.median(latencies["sparkberg"][1:]), statistics.median(latencies["java"][1:])
    results.append({"benchmark": "streaming sink, end-to-end latency of a 1-second trigger",
                    "variant": f"a file of 1000 rows to its commit, {len(latencies['java']) - 1} files, spread "
                               f"{_spread(latencies['sparkberg'][1:], latencies['java'][1:])}",
                    "sparkberg_s": o, "java_s": j, "ratio": o / j})
    print(results[-1], flush=True)


def _runs(fn, repeats: int, warmup: int = 1) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _spread_row(results: list, benchmark: str, variant: str, ours: list[float], ref: list[float]) -> None:
    """A result row of the medians of two sets of runs, the reference's in the "java" column, with the spread."""
    o, r = statistics.median(ours), statistics.median(ref)
    results.append({"benchmark": benchmark, "variant": variant, "sparkberg_s": o, "java_s": r, "ratio": o / r,
                    "spread": f"{min(ours) / max(ref):.2f}-{max(ours) / min(ref):.2f} (runs: ours "
                              f"{min(ours):.2f}-{max(ours):.2f} s, reference {min(ref):.2f}-{max(ref):.2f} s)"})
    print(results[-1], flush=True)


def bench_object_store(spark, wh: str, files: int, rows: int, orphans: int, repeats: int, results: list) -> None:
    """Tables on S3 (moto's server on this machine, tests/objectstores.py), the reference in the "java" column:
    planning a ``files``-file table (metadata only, as the planning rows) against PyIceberg's ``plan_files`` on
    the same table and against sparkberg on local disk; an append and a ``count(*), sum(x)`` read of ``rows`` rows
    on S3 against the same on local disk; listing ``orphans`` objects for orphan removal (dry run) on S3 against
    the same on local disk."""
    import concurrent.futures
    import urllib.parse
    import urllib.request

    import sparkberg
    from pyiceberg.table import StaticTable
    sys.path.insert(0, os.path.dirname(HERE))
    from objectstores import started
    with started(tempfile.mkdtemp(prefix="sparkberg-bench-no-cloud-")) as s3:
        props = s3.properties()
        bucket = s3.bucket("bench")
        t0 = time.perf_counter()
        on_s3 = build_planning_table(spark, f"{bucket}/wh", "s3plan", files, properties=props)
        local = build_planning_table(spark, wh, "s3plan_local", files)
        print(f"built {files}-file tables on S3 and on local disk in {time.perf_counter() - t0:.1f} s", flush=True)
        ours = _runs(lambda: on_s3.plan_files().count(), repeats)
        pyi = StaticTable.from_metadata(on_s3.metadata_location, properties=props)
        theirs = _runs(lambda: len(list(pyi.scan().plan_files())), repeats)
        _spread_row(results, f"planning {files} files on S3", "full plan vs PyIceberg plan_files", ours,
                          theirs)
        _spread_row(results, f"planning {files} files on S3", "vs sparkberg on local disk", ours,
                          _runs(lambda: local.plan_files().count(), repeats))

        src = spark.sql(f"SELECT id, CAST(id % 1000 AS double) AS x, concat('v', id) AS v FROM range({rows})").cache()
        src.count()
        cat_s3 = sparkberg.catalog(spark, f"{bucket}/rows", properties=props)
        cat_local = sparkberg.catalog(spark, os.path.join(wh, "rows"))
        times: dict[str, list[float]] = {"s3": [], "local": []}
        tables = {}
        for i in range(repeats):
            for where, cat in (("s3", cat_s3), ("local", cat_local)):
                t = cat.create_table(f"b.r{i}", "id bigint, x double, v string")
                t1 = time.perf_counter()
                tables[where] = t.append(src)
                times[where].append(time.perf_counter() - t1)
        src.unpersist()
        _spread_row(results, f"append {rows} rows on S3", "vs local disk", times["s3"], times["local"])
        reads = {where: _runs(lambda t=t: t.to_df().selectExpr("count(*)", "sum(x)").collect(), repeats)
                 for where, t in tables.items()}
        _spread_row(results, f"read {rows} rows on S3, count(*), sum(x)", "vs local disk", reads["s3"],
                          reads["local"])

        listing = {}
        for where, t in (("s3", tables["s3"]), ("local", tables["local"])):
            if where == "s3":  # (stored inside moto's server: through its API, 100k objects take twenty minutes)
                key = t.location.split("://", 1)[1].split("/", 1)[1]
                query = urllib.parse.urlencode({"bucket": bucket.split("://", 1)[1], "prefix": f"{key}/data/stray/",
                                                "count": orphans})
                urllib.request.urlopen(urllib.request.Request(f"{s3.endpoint}/_sparkberg/fill?{query}",
                                                              method="POST"), timeout=600).read()
            else:
                with concurrent.futures.ThreadPoolExecutor(32) as pool:
                    list(pool.map(lambda k, t=t: t.io.write(f"{t.location}/data/stray/{k % 100}/o{k}.bin", b"x"),
                                  range(orphans)))
            time.sleep(1.1)  # (older than the cut, which may not be in the future)
            cut = int(time.time() * 1000)
            listing[where] = _runs(lambda t=t: t.remove_orphan_files(older_than=cut, dry_run=True).count(),
                                   repeats, warmup=0)
        _spread_row(results, f"orphan listing, {orphans} objects on S3", "dry run vs local disk",
                          listing["s3"], listing["local"])


def bench_append(spark, wh, rows, repeats, results):
    import sparkberg
    cat = sparkberg.catalog(spark, wh)
    src = spark.sql(f"""SELECT id, TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % 30 AS int)) AS ts,
                        concat('v', id) AS v, CAST(id % 1000 AS double) AS x FROM range(0, {rows})""").cache()
    src.count()
    ours, java = [], []
    for i in range(repeats):
        t = cat.create_table(f"b.app{i}", "id bigint, ts timestamp, v string, x double",
                             partition_by=["day(ts)", "bucket(16, id)"])
        t0 = time.perf_counter()
        t.append(src)
        ours.append(time.perf_counter() - t0)
        spark.sql(f"CREATE TABLE ref.b.japp{i} (id bigint, ts timestamp, v string, x double) USING iceberg "
                  "PARTITIONED BY (days(ts), bucket(16, id))")
        t0 = time.perf_counter()
        src.writeTo(f"ref.b.japp{i}").append()
        java.append(time.perf_counter() - t0)
    src.unpersist()
    o, j = statistics.median(ours), statistics.median(java)
    results.append({"benchmark": f"append {rows} rows (day x bucket[16])", "variant": "",
                    "sparkberg_s": o, "java_s": j, "ratio": o / j})
    print(results[-1], flush=True)


def bench_commit(spark, wh, repeats, results):
    import sparkberg
    cat = sparkberg.catalog(spark, wh)
    t = cat.create_table("b.commit", "id bigint, v string")
    spark.sql("CREATE TABLE ref.b.jcommit (id bigint, v string) USING iceberg")
    one = spark.createDataFrame([(1, "x")], "id bigint, v string")
    t.append(one)
    one.writeTo("ref.b.jcommit").append()
    n = max(repeats, 10)
    ours, java = [], []
    for _ in range(n):  # alternately, so that both see the same state of the JVM
        t0 = time.perf_counter()
        t.append(one)
        t1 = time.perf_counter()
        one.writeTo("ref.b.jcommit").append()
        ours.append(t1 - t0)
        java.append(time.perf_counter() - t1)
    o, j = statistics.median(ours), statistics.median(java)
    results.append({"benchmark": "commit latency, one-file append", "variant": f"median of {n}",
                    "sparkberg_s": o, "java_s": j, "ratio": o / j})
    print(results[-1], flush=True)


def bench_catalog_commits(spark, wh, repeats, results):
    """Commit latency of a one-file append through a SQL catalog, SQLite and PostgreSQL (a server of the tests'
    own, tests/pgserver.py), sparkberg's catalog and Iceberg Java's JdbcCatalog on the same database, and through a
    REST catalog (Iceberg Java's server logic over a JdbcCatalog on that PostgreSQL, tests/interop/
    java_rest_server.py), sparkberg's client and Java's RESTCatalog; each pair alternately."""
    import sparkberg
    sys.path.insert(0, os.path.join(HERE, ".."))
    sys.path.insert(0, os.path.join(HERE, "..", "interop"))
    import pgserver
    from test_sql_catalog_java import release_sqlite_reads
    from java_rest_server import JavaRestServer
    server = pgserver.started()
    rest = None
    try:
        for kind in ("sqlite", "postgresql", "rest"):
            name = f"bench_{kind}"
            if kind == "rest":
                server.uri("bench_rest")  # (created)
                rest = JavaRestServer(spark, "rest", f"jdbc:postgresql://127.0.0.1:{server.port}/bench_rest",
                                      f"file://{wh}/rest", {"jdbc.user": "postgres", "jdbc.password": pgserver.PASSWORD})
                cat = sparkberg.catalog(spark, rest.uri)
                for k, v in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "rest", ".uri": rest.uri,
                             ".cache-enabled": "false"}.items():
                    spark.conf.set(f"spark.sql.catalog.{name}{k}", v)
            else:
                if kind == "sqlite":
                    path = f"{wh}/catalog.db"
                    java_uri, ours_uri, props = f"jdbc:sqlite:{path}", f"sqlite:///{path}", {}
                else:
                    ours_uri = server.uri("bench")
                    java_uri = f"jdbc:postgresql://127.0.0.1:{server.port}/bench"
                    props = {"jdbc.user": "postgres", "jdbc.password": pgserver.PASSWORD}
                cat = sparkberg.catalog(spark, ours_uri, warehouse=f"file://{wh}/{kind}", name=name,
                                        properties=props)
                for k, v in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "jdbc", ".uri": java_uri,
                             ".warehouse": f"file://{wh}/{kind}", ".cache-enabled": "false",
                             **{f".{k}": v for k, v in props.items()}}.items():
                    spark.conf.set(f"spark.sql.catalog.{name}{k}", v)
            spark.sql(f"SHOW NAMESPACES IN {name}").collect()
            if kind == "sqlite":
                release_sqlite_reads(spark, name)
            cat.create_namespace("b")
            t = cat.create_table("b.scommit", "id bigint, v string")
            spark.sql(f"CREATE TABLE {name}.b.jcommit (id bigint, v string) USING iceberg")
            one = spark.createDataFrame([(1, "x")], "id bigint, v string")
            t.append(one)
            one.writeTo(f"{name}.b.jcommit").append()
            n = max(repeats, 10)
            ours, java = [], []
            for _ in range(n):
                t0 = time.perf_counter()
                t.append(one)
                t1 = time.perf_counter()
                one.writeTo(f"{name}.b.jcommit").append()
                ours.append(t1 - t0)
                java.append(time.perf_counter() - t1)
            o, j = statistics.median(ours), statistics.median(java)
            results.append({"benchmark": f"commit latency, one-file append, {kind} catalog",
                            "variant": f"median of {n}", "sparkberg_s": o, "java_s": j, "ratio": o / j})
            print(results[-1], flush=True)
    finally:
        if rest is not None:
            rest.close()
        server.stop()


def _utc(ms: int) -> str:
    """A Spark SQL timestamp literal of epoch millis."""
    import datetime
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%fZ")


def bench_maintenance(spark, wh, files: int, snapshots: int, results):
    """Expiry, orphan listing and manifest rewrite against Iceberg Java's procedures (its Spark actions): each
    destructive action once, on a table of its own built the same way for each engine; expiry, and the others
    once more, in a fresh process per engine (a scheduled job's situation), whose peak RSS is reported."""
    def row(name: str, ours: float, java: float, **extra) -> None:
        results.append({"benchmark": name, "variant": f"{files} files", "sparkberg_s": ours, "java_s": java,
                        "ratio": ours / java, **extra})
        print(results[-1], flush=True)

    def run(fn) -> tuple[float, object]:
        """(seconds, result) of ``fn()``. (In one process the JVM's heap, once grown by whichever engine ran
        first, hides the other's peak RSS: the fresh-process rows report it.)"""
        t0 = time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, out

    # expiry: half of ``snapshots`` appends expire; their files are metadata only (deleting them finds none). Each
    # engine expires its copy in a fresh process of its own, as a scheduled job would: its time and its driver's
    # peak RSS (Python and the JVM) are that process's alone
    built = {e: build_planning_table(spark, wh, f"exp_{e}", files, snapshots=snapshots) for e in ("ours", "java")}
    cutoff = {e: t.metadata.snapshots[snapshots // 2].timestamp_ms for e, t in built.items()}
    got = {e: _child(wh, "--maintenance-child", f"{e}:expire:exp_{e}:{cutoff[e]}") for e in ("ours", "java")}
    row(f"expire {snapshots // 2} of {snapshots} snapshots (fresh process each)", got["ours"]["seconds"],
        got["java"]["seconds"], rss_mb=got["ours"]["peak_rss_mb"], java_rss_mb=got["java"]["peak_rss_mb"],
        manifest_lists=got["ours"]["deleted_manifest_lists_count"],
        java_manifest_lists=got["java"]["deleted_manifest_lists_count"])

    # manifest rewrite: a table of ``snapshots`` appends, one manifest per 1000 files; in the same process, then
    # (on copies of their own) in a fresh process each
    built = {e: build_planning_table(spark, wh, f"rwm_{e}", files, snapshots=snapshots) for e in ("ours", "java")}
    ours_s, ours = run(lambda: built["ours"].rewrite_manifests().collect()[0])
    java_s, theirs = run(lambda: spark.sql("CALL ref.system.rewrite_manifests('b.rwm_java')").collect()[0])
    row("rewrite manifests", ours_s, java_s, added=ours["added_manifests_count"],
        java_added=theirs["added_manifests_count"])
    for e in ("ours", "java"):
        build_planning_table(spark, wh, f"rwm2_{e}", files, snapshots=snapshots)
    got = {e: _child(wh, "--maintenance-child", f"{e}:rewrite:rwm2_{e}") for e in ("ours", "java")}
    row("rewrite manifests (fresh process each)", got["ours"]["seconds"], got["java"]["seconds"],
        rss_mb=got["ours"]["peak_rss_mb"], java_rss_mb=got["java"]["peak_rss_mb"],
        added=got["ours"]["added_manifests_count"], java_added=got["java"]["added_manifests_count"])

    # orphans: a table of at most 100k data files, each on disk (empty), and a tenth as many orphans, all a week
    # old; dry runs
    files = min(files, 100_000)
    t = build_planning_table(spark, wh, "orph", files)
    root = t.location[len("file://"):]
    old = time.time() - 7 * 86400
    paths = [f"{root}/data/f{i}.parquet" for i in range(files)] + [f"{root}/data/d{i}.parquet" for i in range(0, files, 100)] + \
        [f"{root}/data/orphan-{i}.parquet" for i in range(files // 10)]
    os.makedirs(f"{root}/data", exist_ok=True)
    for p in paths:
        open(p, "wb").close()
        os.utime(p, (old, old))
    cutoff = int((time.time() - 86400) * 1000)
    # a dry run changes nothing: three runs each, alternating, the median and the ratio's range reported
    runs: dict[str, list] = {"ours": [], "java": []}
    for _ in range(3):
        runs["ours"].append(run(lambda: t.remove_orphan_files(older_than=cutoff, dry_run=True).count()))
        runs["java"].append(run(lambda: len(spark.sql(
            f"CALL ref.system.remove_orphan_files(table => 'b.orph', older_than => TIMESTAMP '{_utc(cutoff)}', "
            "dry_run => true)").collect())))
    secs = {e: [r[0] for r in rs] for e, rs in runs.items()}
    row("remove orphan files (dry run), 10% orphans", statistics.median(secs["ours"]),
        statistics.median(secs["java"]), spread=_spread(secs["ours"], secs["java"]),
        orphans=runs["ours"][-1][1], java_orphans=runs["java"][-1][1])
    got = {e: _child(wh, "--maintenance-child", f"{e}:orphans:orph:{cutoff}") for e in ("ours", "java")}
    row("remove orphan files (dry run, fresh process each)", got["ours"]["seconds"], got["java"]["seconds"],
        rss_mb=got["ours"]["peak_rss_mb"], java_rss_mb=got["java"]["peak_rss_mb"], orphans=got["ours"]["orphans"],
        java_orphans=got["java"]["orphans"])


def _peak_rss_mb() -> float:
    """Peak RSS (VmHWM) of this process and its children (the JVM), in MiB."""
    def hwm(pid):
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            return 0.0
        return 0.0
    pids = [os.getpid()]
    try:
        pids += [int(p) for p in open(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read().split()]
    except OSError:
        pass
    return sum(hwm(p) for p in pids)


def memory_child(engine: str, files: int) -> None:
    """In a fresh process: build (sparkberg) or load the table, plan it once, print the peak RSS."""
    wh = os.environ["BENCH_MEMORY_WH"]
    spark = session(wh)
    if engine == "sparkberg":
        import sparkberg
        t = sparkberg.catalog(spark, wh).load_table(f"b.plan{files}")
        n = t.plan_files(planning="distributed").count()
    else:
        jt = spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, f"ref.b.plan{files}")
        n = spark._jvm.org.apache.iceberg.relocated.com.google.common.collect.Iterables.size(jt.newScan().planFiles())
    print(json.dumps({"engine": engine, "files": n, "peak_rss_mb": _peak_rss_mb()}))


def maintenance_child(spec: str) -> None:
    """In a fresh process: ``engine:action:table[:cutoff]``, run that engine's action on the table (``expire``
    snapshots older than the cutoff in epoch millis, ``rewrite`` its manifests, or an ``orphans`` dry run of files
    older than the cutoff); print the time (the table's load included), the peak RSS and the action's result."""
    engine, action, name, *rest = spec.split(":")
    cutoff = int(rest[0]) if rest else None
    wh = os.environ["BENCH_MEMORY_WH"]
    spark = session(wh)
    t0 = time.perf_counter()
    if engine == "ours":
        import sparkberg
        t = sparkberg.catalog(spark, wh).load_table(f"b.{name}")
        out = {"expire": lambda: t.expire_snapshots(older_than=cutoff).collect()[0].asDict(),
               "rewrite": lambda: t.rewrite_manifests().collect()[0].asDict(),
               "orphans": lambda: {"orphans": t.remove_orphan_files(older_than=cutoff, dry_run=True).count()},
               }[action]()
    else:
        sql = {"expire": f"expire_snapshots(table => 'b.{name}', older_than => TIMESTAMP '{_utc(cutoff or 0)}')",
               "rewrite": f"rewrite_manifests('b.{name}')",
               "orphans": f"remove_orphan_files(table => 'b.{name}', older_than => TIMESTAMP '{_utc(cutoff or 0)}', "
                          "dry_run => true)"}[action]
        rows = spark.sql(f"CALL ref.system.{sql}").collect()
        out = {"orphans": len(rows)} if action == "orphans" else rows[0].asDict()
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "peak_rss_mb": _peak_rss_mb(), **out}))


def _child(wh: str, *args: str) -> dict:
    """The JSON line a child process of this script (``args``) printed last."""
    p = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                       env={**os.environ, "BENCH_MEMORY_WH": wh}, timeout=3600)
    line = [x for x in p.stdout.splitlines() if x.startswith("{")]
    if not line:
        raise RuntimeError(p.stderr[-2000:])
    return json.loads(line[-1])


DAEMONS = ("pyspark.daemon", "sparkberg.daemon")  # (PySpark's own; sparkberg's: PySpark from its bytecode)


def stages_child(spec: str) -> None:
    """In a fresh process: ``table:daemon``, the table's distributed plan counted twice in a user's session (no
    Iceberg jar) whose Python workers the daemon module ``daemon`` (of :data:`DAEMONS`) forks; prints the seconds
    of the session's start, of the first plan (the process's first Python stage: the daemon's start, the workers'
    imports, the JVM's first Arrow stage) and of the second."""
    from pyspark.sql import SparkSession
    name, daemon = spec.split(":")
    t0 = time.perf_counter()
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.python.daemon.module", daemon)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    import sparkberg
    t = sparkberg.catalog(spark, os.environ["BENCH_MEMORY_WH"]).load_table(f"b.{name}")
    spark.range(1).count()  # (a JVM job first, as a job's first steps are)
    t1 = time.perf_counter()
    n = t.plan_files(planning="distributed").count()
    t2 = time.perf_counter()
    t.plan_files(planning="distributed").count()
    t3 = time.perf_counter()
    print(json.dumps({"started_s": t1 - t0, "first_s": t2 - t1, "second_s": t3 - t2, "count": n}))


def bench_stages(spark, wh: str, files: int, repeats: int, results: list) -> None:
    """A fresh process's first and second Python stage (the distributed plan of a ``files``-file table, counted),
    ``repeats`` times with each of :data:`DAEMONS`, alternating: what a scheduled job's first Python stage costs
    beyond the next one, with PySpark's daemon and with sparkberg's."""
    name = f"stages{files}"
    build_planning_table(spark, wh, name, files)
    got = {d: [] for d in DAEMONS}
    for _ in range(repeats):
        for d in DAEMONS:
            got[d].append(_child(wh, "--stages-child", f"{name}:{d}"))
    for d in DAEMONS:
        first, second = [g["first_s"] for g in got[d]], [g["second_s"] for g in got[d]]
        results.append({"benchmark": f"fresh process, distributed plan of {files} files",
                        "variant": f"first Python stage, {d} (the 'java' column: the second)",
                        "sparkberg_s": statistics.median(first), "java_s": statistics.median(second),
                        "ratio": statistics.median(first) / statistics.median(second),
                        "spread": f"first {min(first):.2f}-{max(first):.2f} s, second {min(second):.2f}-{max(second):.2f} s"})
        print(results[-1], flush=True)


def bench_memory(wh, files, results):
    out = {engine: _child(wh, "--memory-child", engine, "--sizes", str(files))["peak_rss_mb"]
           for engine in ("sparkberg", "java")}
    results.append({"benchmark": f"peak driver RSS planning {files} files (MiB)", "variant": "python + JVM",
                    "sparkberg_s": out["sparkberg"], "java_s": out["java"], "ratio": out["sparkberg"] / out["java"]})
    print(results[-1], flush=True)


# --- tables of millions of files: time and the driver's memory as a table grows ------------------------------
SCALE_OPS = ("plan full", "plan selective", "files", "expire")
SCALE_SNAPSHOTS = 10


def scale_deleted(i: int) -> bool:
    """The scale tables' data files with a position delete file: those of 1% of the days (a few partitions)."""
    return (i // 1600) % 100 == 0


def build_child(spec: str) -> None:
    """In a process of its own with no Spark (``name:files``): build a scale table (:func:`bench_scale`)."""
    name, files = spec.split(":")
    t0 = time.perf_counter()
    build_planning_table(None, os.environ["BENCH_MEMORY_WH"], name, int(files), snapshots=SCALE_SNAPSHOTS,
                         deleted=scale_deleted)
    print(json.dumps({"seconds": time.perf_counter() - t0}))


def scale_child(spec: str) -> None:
    """In a fresh process: ``engine:op:table:files``, one operation of :data:`SCALE_OPS` on the table; prints the
    seconds from the session's start to the operation's end (the table's load included), the median seconds of
    three more runs of it in the process after two untimed ones (warm; not for the expiry, which changes the
    table), the driver's peak RSS (Python and JVM) and the operation's count. sparkberg's session is a user's: no
    Iceberg jar, Spark's default driver memory; Java's is the bench's (8 GB of driver memory)."""
    engine, op, name, files = spec.split(":")
    files = int(files)
    wh = os.environ["BENCH_MEMORY_WH"]
    d0, d1, lo, hi = selective_filter(files)
    if engine == "ours":
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[2]").config("spark.sql.session.timeZone", "UTC")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.python.daemon.module", os.environ.get("BENCH_PYTHON_DAEMON", DAEMONS[0]))
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        t0 = time.perf_counter()
        import sparkberg
        cat = sparkberg.catalog(spark, wh)
        t = cat.load_table(f"b.{name}")
        if op == "expire":
            cutoff = t.metadata.snapshots[SCALE_SNAPSHOTS // 10].timestamp_ms
            run = lambda: t.expire_snapshots(older_than=cutoff).collect()[0]["deleted_manifest_lists_count"]  # noqa
        elif op == "files":  # (as a user counts it: through sparkberg.sql, which reads no column for a count)
            run = lambda: sparkberg.sql(spark, f"SELECT count(*) FROM b.{name}.files", catalog=cat).first()[0]  # noqa
        else:
            run = lambda: t.plan_files(filter=selective_text(files) if op == "plan selective" else None).count()  # noqa
    else:
        spark = session(wh)
        t0 = time.perf_counter()
        jvm = spark._jvm
        jt = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, f"ref.b.{name}")
        if op == "expire":
            snaps = sorted(s.timestampMillis() for s in jt.snapshots())
            run = lambda: spark.sql(  # noqa: E731
                f"CALL ref.system.expire_snapshots(table => 'b.{name}', older_than => TIMESTAMP "
                f"'{_utc(snaps[SCALE_SNAPSHOTS // 10])}')").collect()[0]["deleted_manifest_lists_count"]
        elif op == "files":
            run = lambda: spark.sql(f"SELECT * FROM ref.b.{name}.files").count()  # noqa: E731
        else:
            def run():
                scan = jt.newScan()
                if op == "plan selective":
                    expr = jvm.org.apache.iceberg.expressions.Expressions
                    both = getattr(expr, "and")
                    scan = scan.filter(both(both(expr.greaterThanOrEqual("ts", d0 * 86_400_000_000),
                                                 expr.lessThan("ts", d1 * 86_400_000_000)),
                                            both(expr.greaterThanOrEqual("id", lo), expr.lessThan("id", hi))))
                return jvm.org.apache.iceberg.relocated.com.google.common.collect.Iterables.size(scan.planFiles())
    n = run()
    seconds = time.perf_counter() - t0
    warm = None
    if op != "expire":  # (after two more runs: the second and third may still load compiled code on first use)
        warm = timed(run, 3, warmup=2)[0]
    print(json.dumps({"seconds": seconds, "warm_s": warm, "peak_rss_mb": _peak_rss_mb(), "count": n}))


def bench_scale(wh: str, sizes: list[int], results: list) -> None:
    """Tables of each of ``sizes`` data files (metadata only, :func:`build_planning_table`: day x bucket[16],
    1000 entries a manifest, grown by ten appends; position deletes in 1% of the days, :func:`scale_deleted`),
    one copy per engine, built side by side in processes with no Spark. On each, in a fresh process per
    operation and engine: a full plan and a selective one (~1% of the files) counted, the ``files`` metadata
    table counted, and the expiry of the oldest of its ten snapshots; the time (the table's load included) and
    the driver's peak RSS, as the table grows."""
    for files in sizes:
        names = {e: f"scale{files}_{e}" for e in ("ours", "java")}
        builds = [subprocess.Popen([sys.executable, __file__, "--build-child", f"{n}:{files}"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env={**os.environ, "BENCH_MEMORY_WH": wh}) for n in names.values()]
        for b in builds:
            out, err = b.communicate(timeout=7200)
            if b.returncode:
                raise RuntimeError(err[-2000:])
        print(f"built two {files}-file tables: {json.loads(out.splitlines()[-1])['seconds']:.0f} s", flush=True)
        for op in SCALE_OPS:
            got = {}
            for e in ("ours", "java"):
                try:
                    got[e] = _child(wh, "--scale-child", f"{e}:{op}:{names[e]}:{files}")
                except (RuntimeError, subprocess.TimeoutExpired) as failure:
                    got[e] = {"seconds": None, "warm_s": None, "peak_rss_mb": None, "count": None,
                              "failed": str(failure).strip().splitlines()[-1][:200]}
            ours, java = got["ours"], got["java"]
            for variant, key in (("a fresh process each", "seconds"),
                                 ("run again in the process (median of 3 after 2)", "warm_s")):
                if key == "warm_s" and op == "expire":
                    continue
                results.append({"benchmark": f"{files} files: {op}", "variant": variant,
                                "sparkberg_s": ours[key], "java_s": java[key],
                                "ratio": ours[key] / java[key] if ours[key] and java[key] else None,
                                "rss_mb": ours["peak_rss_mb"], "java_rss_mb": java["peak_rss_mb"],
                                "count": ours["count"], "java_count": java["count"],
                                **{f"{e}_failed": got[e]["failed"] for e in got if "failed" in got[e]}})
                print(results[-1], flush=True)
        for n in names.values():  # (the next size's tables take their place on disk)
            shutil.rmtree(os.path.join(wh, "b", n), ignore_errors=True)


# --- cold processes: what a scheduled job pays ---------------------------------------------------------------
COLD_OPS = ("append", "delete", "merge", "compact", "read", "count", "cli snapshots", "cli files")
# the cold operations that read metadata alone (sparkberg's; Java's count reads the rows of a table with deletes):
# no Spark floor
METADATA_OPS = ("count", "cli snapshots", "cli files")
COLD_LABELS = {"append": "append rows (a tenth of the table, at most 1M)", "delete": "DELETE 1% (merge-on-read)",
               "merge": "MERGE a source of 1% of the table (at most 100k rows)",
               "compact": "compact one partition (its deletes folded in)",
               "read": "read count(*), sum(x) with deletes",
               "count": "count(*) with deletion vectors (ours: Table.count)", "cli snapshots": "CLI: snapshots",
               "cli files": "CLI: files"}


def cold_child(spec: str) -> None:
    """In a fresh process: ``engine:op:table:rows:days``, one operation of a scheduled job on the table as it is
    (``op`` from :data:`COLD_OPS`); prints the seconds from the session's start to the operation's end. The
    ``cli`` ops of sparkberg are its command line, not run here (:func:`bench_cold`); Java's are the metadata
    table of the same name through Spark SQL."""
    engine, op, name, rows, days = spec.split(":")
    rows, days = int(rows), int(days)
    wh = os.environ["BENCH_MEMORY_WH"]
    t0 = time.perf_counter()
    if engine in ("ours", "floor"):  # a user's session: no Iceberg jar, no SQL extensions
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[2]").config("spark.driver.memory", "8g")
                 .config("spark.sql.shuffle.partitions", "4").config("spark.sql.session.timeZone", "UTC")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.python.daemon.module", os.environ.get("BENCH_PYTHON_DAEMON", DAEMONS[0]))
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        if engine == "ours":
            import sparkberg
            t = sparkberg.catalog(spark, wh).load_table(f"b.{name}")
    else:
        spark = session(wh)
    started = time.perf_counter() - t0
    first_day = datetime.datetime(2024, 1, 1) + datetime.timedelta(days=days // 2)
    day = f"ts >= TIMESTAMP '{first_day.isoformat(' ')}' AND " \
          f"ts < TIMESTAMP '{(first_day + datetime.timedelta(days=1)).isoformat(' ')}'"
    if engine == "floor":
        cold_floor(spark, op, wh, name, rows, days)
        print(json.dumps({"started_s": started, "op_s": time.perf_counter() - t0 - started}))
        return
    if op == "append":
        df = cold_append_rows(spark, rows, days)
        t.append(df) if engine == "ours" else df.writeTo(f"ref.b.{name}").append()
    elif op == "delete":
        t.delete("x < 10") if engine == "ours" else spark.sql(f"DELETE FROM ref.b.{name} WHERE x < 10")
    elif op == "merge":
        src = merge_source(spark, rows, days, spread=False)
        if engine == "ours":
            t.merge(src, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
        else:
            src.createOrReplaceTempView("src")
            spark.sql(f"MERGE INTO ref.b.{name} t USING src s ON t.id = s.id "
                      "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    elif op == "compact":
        if engine == "ours":
            t.rewrite_data_files(filter=day, options={"rewrite-all": "true"}).collect()
        else:
            spark.sql(f"CALL ref.system.rewrite_data_files(table => 'b.{name}', where => \"{day}\", "
                      "options => map('rewrite-all', 'true'))").collect()
    elif op == "read":
        (t.to_df() if engine == "ours" else spark.table(f"ref.b.{name}")).selectExpr("count(*)", "sum(x)").collect()
    elif op == "count":
        counted = t.count() if engine == "ours" else spark.sql(f"SELECT count(*) FROM ref.b.{name}").collect()[0][0]
    elif op.startswith("cli "):
        spark.sql(f"SELECT * FROM ref.b.{name}.{op.split()[1]}").collect()
    print(json.dumps({"started_s": started, "op_s": time.perf_counter() - t0 - started,
                      **({"count": counted} if op == "count" else {})}))


def cold_append_rows(spark, rows: int, days: int):
    """The rows the cold append writes: a tenth of the table's (at most 1M), on its days."""
    return spark.sql(f"""SELECT id, TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % {days} AS int))
                         AS ts, concat('a', id) AS v, CAST(id % 1000 AS double) AS x
                         FROM range({rows * 2}, {rows * 2 + min(1_000_000, rows // 10)})""")


def cold_floor(spark, op: str, wh: str, name: str, rows: int, days: int) -> None:
    """Spark's own floor of a cold operation: the reads and writes any design made of Spark's operators pays for
    it, on the data files the operation starts from (``cold-files-<name>.json``, written by :func:`bench_cold`),
    in a plain session with no table format at all: no metadata read or written, no deletes applied, no delete
    file written. The files are listed on the driver (as a table format's known paths need no listing job).
    ``append``: the rows hashed to their partitions (a day and 16 buckets of the id), sorted by them in each task
    and written a file a task (a lower bound: a table's writer opens a file a partition);
    ``delete``: every row's position and file computed, the matching rows' counted; ``merge``: the position and
    file of the rows whose key the source holds found by streaming every row past the source's keys, the source
    joined with them and written as an append is; ``compact``: the partition's files read
    and written again; ``read``: ``count(*), sum(x)`` of every file, each row's position (``_metadata.row_index``)
    and file (the hash of its name sparkberg uses) computed and tested, by a test that deletes nothing, as a
    read that deletes rows by position must (the floor of :func:`scan_floors` too); the ``cli`` ops: nothing (the
    metadata is all they read)."""
    from pyspark.sql import functions as F
    with open(os.path.join(wh, f"cold-files-{name}.json")) as f:
        files = json.load(f)
    spark.conf.set("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")
    out = os.path.join(wh, f"cold-floor-{name}")
    shutil.rmtree(out, ignore_errors=True)
    schema = "id bigint, ts timestamp, v string, x double"

    def target(paths):
        return spark.read.schema(schema).parquet(*paths)

    def written(df):  # (a file a task: Spark's partitioned writer would add a rename commit of each file)
        df.selectExpr("*", "to_date(ts) AS d", "pmod(hash(id), 16) AS b").repartition("d", "b") \
            .sortWithinPartitions("d", "b").write.parquet(out)
    if op == "append":
        written(cold_append_rows(spark, rows, days))
    elif op == "delete":
        target(files["all"]).where("x < 10").selectExpr("count(*)", "sum(_metadata.row_index)",
                                                         "sum(hash(_metadata.file_path))").collect()
    elif op == "merge":
        source = merge_source(spark, rows, days, spread=False)
        keys = target(files["all"]).selectExpr("id", "_metadata.row_index AS pos", "_metadata.file_path AS path")
        matched = keys.join(F.broadcast(source.select("id")), "id")  # (the source's keys streamed past)
        written(source.join(F.broadcast(matched), "id", "left"))
    elif op == "compact":
        target(files["day"]).write.parquet(out)
    elif op == "read":  # (each row's position and file, tested as a read that deletes rows by them must)
        target(files["all"]).where(f"_metadata.row_index != -1 OR {files['ids']} != -1") \
            .selectExpr("count(*)", "sum(x)").collect()
    shutil.rmtree(out, ignore_errors=True)


def bench_cold_table(spark, rows: int) -> tuple[str, int, dict[str, int]]:
    """The cold rows' table: written by Iceberg Java (:func:`build_rowlevel_table`), v3, merge-on-read, then 1% of
    its rows deleted by Java; returns its name, days and the snapshot each operation starts from."""
    name, days = build_rowlevel_table(spark, rows, 3, prefix="cold")
    spark.sql(f"ALTER TABLE ref.b.{name} SET TBLPROPERTIES ('write.delete.mode'='merge-on-read', "
              "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')")
    import sparkberg
    base = sparkberg.catalog(spark, spark.conf.get("spark.sql.catalog.ref.warehouse")).load_table(f"b.{name}")
    written = base.metadata.current_snapshot_id
    spark.sql(f"DELETE FROM ref.b.{name} WHERE x >= 990")
    deleted = base.refresh().metadata.current_snapshot_id
    # the writes start from the table without deletes; compaction, reads and the CLI from the one with them
    starts = {op: written if op in ("append", "delete", "merge") else deleted for op in COLD_OPS}
    return name, days, starts


def bench_cold(wh: str, name: str, rows: int, days: int, starts: dict[str, int], repeats: int, results: list):
    """Each operation of :data:`COLD_OPS` in a new process (a new JVM, new Python workers) for each engine,
    alternating which goes first, ``repeats`` times, each run from the operation's start snapshot: the wall time
    of the whole process, as a scheduled job's."""
    import sparkberg
    from sparkberg.planning.scan import plan
    from sparkberg.read.fileids import FileIds
    from sparkberg.spark.tuning import ReadTuning
    meta = sparkberg.catalog(None, wh)
    compacted_day = (datetime.date(2024, 1, 1) - datetime.date(1970, 1, 1)).days + days // 2
    for op in COLD_OPS:
        t = meta.load_table(f"b.{name}")
        tasks = plan(None, t.metadata, t.io, t.metadata.snapshot_by_id(starts[op]), mode="local").arrow()
        with open(os.path.join(wh, f"cold-files-{name}.json"), "w") as f:  # (ids: each row's file id, as SQL)
            json.dump({"all": tasks.column("file_path").to_pylist(),
                       "ids": FileIds(tasks.column("file_path").to_pylist(), ReadTuning().name_ids_max_files).sql(),
                       "day": [r["file_path"] for r in tasks.select(["file_path", "partition"]).to_pylist()
                               if r["partition"]["ts_day"] == compacted_day]}, f)
        engines = ("ours", "java") + (() if op in METADATA_OPS else ("floor",))
        times: dict[str, list[float]] = {e: [] for e in engines}
        inside: dict[str, list[float]] = {e: [] for e in engines}
        counts: set = set()
        for r in range(repeats):
            for engine in engines[r % len(engines):] + engines[:r % len(engines)]:
                t = meta.load_table(f"b.{name}")
                if t.metadata.current_snapshot_id != starts[op]:
                    t.set_current_snapshot(starts[op])
                t0 = time.perf_counter()
                if engine == "ours" and op.startswith("cli "):
                    p = subprocess.run([sys.executable, "-m", "sparkberg.jobs.cli", "--warehouse", wh,
                                        "--output", "json", op.split()[1], f"b.{name}"],
                                       capture_output=True, text=True, timeout=3600)
                    if p.returncode:
                        raise RuntimeError(p.stderr[-2000:])
                else:
                    got = _child(wh, "--cold-child", f"{engine}:{op}:{name}:{rows}:{days}")
                    inside[engine].append(got["op_s"])
                    counts.add(got.get("count"))
                times[engine].append(time.perf_counter() - t0)
        if len(counts) > 1:
            raise RuntimeError(f"the engines' counts differ: {counts}")
        ours, java = statistics.median(times["ours"]), statistics.median(times["java"])
        results.append({"benchmark": f"cold process, {rows} rows v3 merge-on-read: {COLD_LABELS[op]}",
                        "variant": "a new process each", "sparkberg_s": ours, "java_s": java, "ratio": ours / java,
                        "spread": _spread(times["ours"], times["java"]),
                        "operation_s": {e: statistics.median(v) for e, v in inside.items() if v}})
        if times.get("floor"):  # (the best ratio a design made of Spark's operators could reach)
            floor = statistics.median(times["floor"])
            results[-1].update(spark_floor_s=floor, spark_floor_ratio=floor / java,
                               spark_floor_spread=_spread(times["floor"], times["java"]))
        print(results[-1], flush=True)
    meta.load_table(f"b.{name}").set_current_snapshot(starts["append"])


def table(results) -> str:
    lines = [f"{'benchmark':56s} {'variant':38s} {'sparkberg':>10s} {'java':>10s} {'ratio':>6s}  notes"]
    for r in results:
        notes = ""
        if "mor_overhead" in r:
            notes = f"MoR overhead x{r['mor_overhead']:.2f}" + (
                "" if r["java_mor_overhead"] is None else f" (java x{r['java_mor_overhead']:.2f})")
        if "files" in r:
            notes = f"files {r['files']} (java {r['java_files']})"
        if "jobs" in r:
            notes = f"plan_files() alone: {r['jobs']:g} Spark jobs"
        if "spark_floor_s" in r:
            notes = f"Spark's floor {r['spark_floor_s']:.2f} s ({r['spark_floor_ratio']:.2f} of Java's)"
        if r["variant"].endswith("tasks"):
            notes += ", tasks on the driver"
        if "touched" in r:
            notes = (f"{r['touched']} (java {r['java_touched']}); peak RSS {r['rss_mb']:.0f} MiB "
                     f"(java {r['java_rss_mb']:.0f})")
        if "rss_mb" in r and "touched" not in r:
            rss = lambda mb: "-" if mb is None else f"{mb:.0f}"  # noqa: E731
            notes = f"peak RSS {rss(r['rss_mb'])} MiB (java {rss(r['java_rss_mb'])})"
        failed = "; ".join(f"{k[:-7]} failed: {v}" for k, v in r.items() if k.endswith("_failed"))
        if failed:
            notes = f"{notes}; {failed}"
        if "floor_s" in r:
            notes = (f"Spark's scans of its files unioned {r['floor_s']:.2f} s, with row positions tested "
                     f"{r['tested_floor_s']:.2f} s")
        if "spread" in r:
            notes = f"ratio {r['spread']}" + (f"; {notes}" if notes else "")
        java = "-" if r["java_s"] is None else f"{r['java_s']:.2f}"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        ours = "-" if r["sparkberg_s"] is None else f"{r['sparkberg_s']:.2f}"
        lines.append(f"{r['benchmark']:56s} {r['variant']:38s} {ours:>10s} {java:>10s} {ratio:>6s}  "
                     f"{notes}")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=os.environ.get("BENCH_SIZES", "10,10000,100000,1000000"))
    p.add_argument("--rows", type=int, default=int(os.environ.get("BENCH_ROWS", 10_000_000)))
    p.add_argument("--repeats", type=int, default=int(os.environ.get("BENCH_REPEATS", 3)))
    p.add_argument("--wide", default=os.environ.get("BENCH_WIDE", "100000x50"),
                   help="FILESxCOLUMNS of the wide table's planning benchmarks (metrics of COLUMNS + 3 columns)")
    p.add_argument("--deletes", default=os.environ.get("BENCH_DELETES", "100000,1000000"),
                   help="files of the tables whose position deletes are in 5%% of their partitions")
    p.add_argument("--doctor", type=int, default=int(os.environ.get("BENCH_DOCTOR", 100_000)),
                   help="data files of the table the integrity check runs on")
    p.add_argument("--metatables", type=int, default=int(os.environ.get("BENCH_METATABLES", 100_000)),
                   help="data files of the table whose metadata tables are read")
    p.add_argument("--maintenance-files", type=int, default=int(os.environ.get("BENCH_MAINTENANCE_FILES", 1_000_000)),
                   help="data files of the tables the maintenance actions run on (100 snapshots)")
    p.add_argument("--scale", default=os.environ.get("BENCH_SCALE", "100000,1000000,10000000"),
                   help="data files of the tables the scale rows plan, list and expire")
    p.add_argument("--rowlevel-scale", type=int, default=int(os.environ.get("BENCH_ROWLEVEL_SCALE", 40_000_000)),
                   help="rows of the larger table the MERGE on 3 days also runs on (0: none)")
    p.add_argument("--rowlevel", default=os.environ.get("BENCH_ROWLEVEL", ""),
                   help="the row-level runs to make, as words of their names, e.g. 'merge,v2,merge-on-read' "
                        "(default: all)")
    p.add_argument("--object-store", default=os.environ.get("BENCH_OBJECT_STORE", "100000,10000000,100000"),
                   help="FILES,ROWS,OBJECTS of the S3 rows: the table planned, the rows appended and read, the "
                        "objects listed for orphans")
    p.add_argument("--python-daemon", choices=DAEMONS, default=os.environ.get("BENCH_PYTHON_DAEMON", DAEMONS[0]),
                   help="the daemon module (spark.python.daemon.module) of sparkberg's sessions in the cold and scale "
                        "rows' processes (default: PySpark's, as Spark's defaults leave it)")
    p.add_argument("--only",
                   default="planning,deletes,doctor,metatables,wide,reads,append,changes,streams,commit,catalogs,maintenance,rowlevel,"
                           "s3,memory,stages,cold,scale")
    p.add_argument("--json", default="bench.json")
    p.add_argument("--memory-child", help=argparse.SUPPRESS)
    p.add_argument("--maintenance-child", help=argparse.SUPPRESS)
    p.add_argument("--spark4-child", help=argparse.SUPPRESS)
    p.add_argument("--cold-child", help=argparse.SUPPRESS)
    p.add_argument("--stages-child", help=argparse.SUPPRESS)
    p.add_argument("--scale-child", help=argparse.SUPPRESS)
    p.add_argument("--build-child", help=argparse.SUPPRESS)
    args = p.parse_args()
    os.environ["BENCH_PYTHON_DAEMON"] = args.python_daemon  # (read by the cold and scale children)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.memory_child:
        memory_child(args.memory_child, sizes[-1])
        return 0
    if args.maintenance_child:
        maintenance_child(args.maintenance_child)
        return 0
    if args.spark4_child:
        spark4_child(args.spark4_child, args.rows, args.repeats)
        return 0
    if args.cold_child:
        cold_child(args.cold_child)
        return 0
    if args.stages_child:
        stages_child(args.stages_child)
        return 0
    if args.scale_child:
        scale_child(args.scale_child)
        return 0
    if args.build_child:
        build_child(args.build_child)
        return 0
    only = set(args.only.split(","))
    compiled_modules()  # (before the session: its JVM's Python workers inherit this process's environment)
    wh = tempfile.mkdtemp(prefix="sparkberg-bench-")
    spark = session(wh)
    results: list[dict] = []
    started = time.time()
    if "planning" in only or "memory" in only:
        bench_planning(spark, wh, sizes, args.repeats, results) if "planning" in only else \
            build_planning_table(spark, wh, f"plan{sizes[-1]}", sizes[-1])
    if "deletes" in only:
        bench_partition_deletes(spark, wh, [int(x) for x in args.deletes.split(",") if x], args.repeats, results)
    if "doctor" in only:
        bench_doctor(spark, wh, args.doctor, args.repeats, results)
    if "metatables" in only:
        bench_metadata_tables(spark, wh, args.metatables, args.repeats, results)
    if "wide" in only:
        files, columns = (int(x) for x in args.wide.split("x"))
        bench_wide_planning(spark, wh, files, columns, args.repeats, results)
    if "reads" in only:
        bench_reads(spark, wh, args.rows, args.repeats, results)
    if "append" in only:
        bench_append(spark, wh, args.rows, args.repeats, results)
    if "changes" in only:
        bench_changes(spark, wh, args.rows, args.repeats, results)
    if "streams" in only:
        bench_streams(spark, wh, args.repeats, results)
    if "commit" in only:
        bench_commit(spark, wh, args.repeats, results)
    if "catalogs" in only:
        bench_catalog_commits(spark, wh, args.repeats, results)
    if "maintenance" in only:
        bench_maintenance(spark, wh, args.maintenance_files, 100, results)
    if "rowlevel" in only:
        words = set(args.rowlevel.split(",")) - {""}
        ops = tuple(o for o in ROWLEVEL_OPS if not words & {"delete", "update", "merge"} or o.split()[0].rstrip(",") in words)
        versions = tuple(v for v in (2, 3) if not words & {"v2", "v3"} or f"v{v}" in words)
        modes = tuple(m for m in MODES if not words & set(MODES) or m in words)
        bench_rowlevel(spark, wh, args.rows, args.rowlevel_scale, args.repeats, results, ops, versions, modes)
    if "s3" in only:
        files, rows, objects = (int(x) for x in args.object_store.split(","))
        bench_object_store(spark, wh, files, rows, objects, args.repeats, results)
    if "stages" in only:
        bench_stages(spark, wh, 100_000, max(args.repeats, 3), results)
    cold = bench_cold_table(spark, args.rows) if "cold" in only else None
    spark.stop()
    # (after the session stops: its JVM, alive beside the child's, slowed the child's reads by 0.05-0.1 s each)
    if "reads" in only:
        spark4_reads(wh, args.rows, args.repeats, results)
    if "memory" in only:
        bench_memory(wh, sizes[-1], results)
    if "scale" in only:  # (as the cold rows: each child with the machine to itself)
        bench_scale(wh, [int(x) for x in args.scale.split(",") if x], results)
    if cold:  # (with no session of this process alive: each child's JVM has the machine to itself)
        name, days, starts = cold
        bench_cold(wh, name, args.rows, days, starts, args.repeats, results)
    print("\n" + table(results))
    with open(args.json, "w") as f:
        json.dump({"started": started, "seconds": time.time() - started, "sizes": sizes, "rows": args.rows,
                   "repeats": args.repeats, "results": results}, f, indent=2)
    print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
