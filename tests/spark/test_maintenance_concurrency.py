"""Maintenance racing a pipeline in another process: every append, delete and merge survives compaction,
manifest and position delete rewrites and snapshot expiry committed in between; a maintenance commit that
conflicts fails cleanly; afterwards no file under the table is unreferenced."""
import os
import subprocess
import sys
import time

import pytest

import sparkberg
from sparkberg.errors import CommitFailedException

pytestmark = pytest.mark.spark
HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
from racing_writer import expected  # noqa: E402

ITERATIONS = 6


def test_maintenance_racing_a_writer_loses_nothing(spark, warehouse, tmp_path):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.race", "id bigint, p int, v string", partition_by=["p"], properties={
        "format-version": "2", "write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read",
        "write.merge.mode": "merge-on-read", "commit.retry.num-retries": "30", "commit.retry.min-wait-ms": "20",
        "commit.retry.max-wait-ms": "1000",
        "commit.manifest.min-count-to-merge": "1000"})
    seed = spark.sql("SELECT id, CAST(id % 4 AS INT) AS p, 'seed' AS v FROM range(0, 40)")
    for lo in range(0, 40, 10):
        t.append(seed.where(f"id >= {lo} AND id < {lo + 10}"))
    log = open(tmp_path / "writer.log", "w+")  # (a file, not a pipe: nobody reads it while the writer runs)
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "racing_writer.py"), warehouse, "db.race",
                             str(ITERATIONS)], stdout=log, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    done, failed, worked = [], [], {}
    steps = [
        ("rewrite_data_files", lambda t: t.rewrite_data_files(options={"min-input-files": "2",
                                                                       "delete-file-threshold": "1"})),
        ("rewrite_position_delete_files", lambda t: t.rewrite_position_delete_files(options={"rewrite-all": "true"})),
        ("rewrite_manifests", lambda t: t.rewrite_manifests()),
        ("expire_snapshots", lambda t: t.expire_snapshots(older_than=int(time.time() * 1000), retain_last=2)),
    ]
    i = 0
    while proc.poll() is None or i < len(steps):  # at least one round, then until the writer is done
        name, step = steps[i % len(steps)]
        i += 1
        started = time.perf_counter()
        try:
            row = step(cat.load_table("db.race")).collect()[0]
            done.append(name)
            worked[name] = worked.get(name, 0) + sum(v for v in row.asDict().values())
        except CommitFailedException as e:  # a conflict: nothing of this step is left behind (checked below)
            failed.append((name, str(e)))
        print(f"{name}: {time.perf_counter() - started:.1f} s", flush=True)
        time.sleep(2)  # a maintenance commit every few seconds: the writer's retries are not starved
    proc.wait(timeout=600)
    log.seek(0)
    output = log.read()
    assert proc.returncode == 0, output[-3000:]
    t = cat.load_table("db.race")
    seeded = [(j, j % 4, "seed") for j in range(40)]
    assert sorted(tuple(r) for r in t.to_df().collect()) == sorted(seeded + expected(ITERATIONS))
    assert set(done) == {name for name, _ in steps}, (done, failed)
    # compaction, manifest rewrites and expiry always find work here; the position delete rewrite only when it
    # runs before a compaction folded the writer's deletes into new files, which is up to the timing
    assert all(worked[name] > 0 for name in ("rewrite_data_files", "rewrite_manifests", "expire_snapshots")), worked
    # nothing unreferenced under the table: no file of a failed maintenance step or writer try is left
    orphans = t.remove_orphan_files(older_than=int(time.time() * 1000), dry_run=True).collect()
    assert orphans == [], (orphans, failed)
    print(f"maintenance steps committed {len(done)}, conflicted {len(failed)}; writer retries "
          f"{output.count('retry ')}")
