"""Idempotent writes: ``idempotency=(app_id, version)`` on append, overwrite, dynamic_overwrite, upsert and merge
commits only if no snapshot of the target's ancestry records the application with that version or a later one;
else nothing is written and the outcome says so. The check runs again in every try of the commit, so a writer
that loaded the table before another committed the key, and two processes racing one key, commit it once, on
every catalog."""
import json
import os
import re
import subprocess
import sys

import pytest

import sparkberg
from sparkberg.operations.request import APP_ID, VERSION
from sparkberg.errors import AlreadyCommittedError, ValidationError

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from restserver import RestServer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def files_under(root):
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)


def local(path):
    return re.sub(r"^file:/*", "/", path)


def rows(t):
    return sorted(tuple(r) for r in t.to_df().collect())


def batch(spark, lo, hi, v="a"):
    return spark.sql(f"SELECT id, CAST(id % 4 AS INT) AS p, '{v}' AS v FROM range({lo}, {hi})")


@pytest.fixture
def table(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    return cat.create_table("db.t", "id bigint, p int, v string", partition_by=["p"],
                            properties={"format-version": "2", "write.delete.mode": "merge-on-read"})


def test_an_append_is_committed_once_per_key_and_version(spark, table, warehouse):
    first = table.append(batch(spark, 0, 10), idempotency=("nightly", 5))
    assert first.committed and not first.skipped and first.table is table
    snap = table.current_snapshot()
    assert first.snapshot_id == snap.snapshot_id
    assert snap.summary[APP_ID] == "nightly" and snap.summary[VERSION] == "5"
    before_files = files_under(warehouse)
    before = table.metadata
    for version in (5, 4, 0):  # the same version again, and older ones: nothing written
        again = table.append(batch(spark, 100, 110), idempotency=("nightly", version))
        assert again.skipped and not again.committed and again.snapshot_id == snap.snapshot_id
    assert table.metadata is before and files_under(warehouse) == before_files
    assert table.append(batch(spark, 10, 20), idempotency=("other-app", 5)).committed  # keys are per application
    assert table.append(batch(spark, 20, 30), idempotency=("nightly", 6)).committed
    assert [r[0] for r in rows(table)] == list(range(30))
    # an unrelated commit in between does not hide the key: the whole ancestry is searched
    table.delete("id = 0")
    assert table.append(batch(spark, 100, 110), idempotency=("nightly", 6)).skipped
    assert [r[0] for r in rows(table)] == list(range(1, 30))


def test_every_data_write_takes_a_key(spark, table):
    table.append(batch(spark, 0, 8))
    key = ("job", 1)
    assert table.overwrite(batch(spark, 0, 2, "o"), "p = 0", idempotency=key).committed
    assert table.overwrite(batch(spark, 0, 2, "X"), "p = 0", idempotency=key).skipped
    key = ("job", 2)
    assert table.dynamic_overwrite(batch(spark, 1, 2, "d"), idempotency=key).committed
    assert table.dynamic_overwrite(batch(spark, 1, 2, "X"), idempotency=key).skipped
    key = ("job", 3)
    assert table.upsert(batch(spark, 2, 3, "u"), "id", idempotency=key).committed
    assert table.upsert(batch(spark, 2, 3, "X"), "id", idempotency=key).skipped
    key = ("job", 4)
    assert table.upsert(batch(spark, 3, 4, "m"), "id", mode="merge", idempotency=key).committed
    assert table.upsert(batch(spark, 3, 4, "X"), "id", mode="merge", idempotency=key).skipped
    key = ("job", 5)
    src = batch(spark, 6, 7, "g")
    assert table.merge(src, "t.id = s.id", idempotency=key).when_matched_update_all().execute().committed
    assert table.merge(src, "t.id = s.id", idempotency=key).when_matched_update_all().execute().skipped
    assert table.merge(src, "t.id = s.id").when_matched_update_all().execute() is None  # (no key: as before)
    assert rows(table) == [(0, 0, "o"), (1, 1, "d"), (2, 2, "u"), (3, 3, "m"), (6, 2, "g"), (7, 3, "a")]
    versions = [s.summary.get(VERSION) for s in table.metadata.ancestors(table.metadata.current_snapshot_id)]
    assert [v for v in versions if v] == ["5", "4", "3", "2", "1"]


def test_a_key_is_per_branch(spark, table):
    table.append(batch(spark, 0, 2))
    table.create_branch("audit")
    assert table.append(batch(spark, 2, 4), branch="audit", idempotency=("load", 1)).committed
    assert table.append(batch(spark, 2, 4), branch="audit", idempotency=("load", 1)).skipped
    assert table.append(batch(spark, 2, 4), idempotency=("load", 1)).committed  # main's ancestry lacks it
    assert [r[0] for r in rows(table)] == [0, 1, 2, 3]


def test_a_writer_that_loaded_the_table_before_the_key_was_committed_commits_nothing(spark, table, warehouse):
    # the check before the write passes on the stale table; the one in the commit's retry, on the fresh base, finds
    # the key: the files the stale writer wrote are deleted
    cat = table.catalog
    stale = cat.load_table("db.t")
    assert table.append(batch(spark, 0, 10), idempotency=("nightly", 1)).committed
    before_files = files_under(warehouse)
    outcome = stale.append(batch(spark, 0, 10), idempotency=("nightly", 1))
    assert outcome.skipped and outcome.snapshot_id == table.current_snapshot().snapshot_id
    assert files_under(warehouse) == before_files
    assert [r[0] for r in rows(cat.load_table("db.t"))] == list(range(10))


def test_a_transaction_skips_a_recorded_key_and_fails_on_one_recorded_meanwhile(spark, table, warehouse):
    table.append(batch(spark, 0, 2), idempotency=("tx", 1))
    with table.transaction() as tx:
        assert tx.append(batch(spark, 2, 4), idempotency=("tx", 1)).skipped
        assert tx.append(batch(spark, 2, 4), idempotency=("tx", 2)).committed  # (staged: committed with the block)
    assert [r[0] for r in rows(table)] == [0, 1, 2, 3]
    other = table.catalog.load_table("db.t")
    before_files = files_under(warehouse)
    with pytest.raises(AlreadyCommittedError, match="'tx' version 3 is already committed"):
        with table.transaction() as tx:
            tx.append(batch(spark, 4, 6), idempotency=("tx", 3))
            other.append(batch(spark, 4, 6), idempotency=("tx", 3))  # another writer, before the transaction commits
    table.refresh()
    assert [r[0] for r in rows(table)] == [0, 1, 2, 3, 4, 5]  # (the other writer's rows, once)
    new = set(files_under(warehouse)) - set(before_files)
    snap = table.current_snapshot()
    referenced = {local(r[0]) for r in table.metadata_table("files").where("file_path LIKE '%.parquet'")
                  .select("file_path").collect()} | {local(snap.manifest_list)} | \
        {local(r[0]) for r in table.metadata_table("manifests").select("path").collect()}
    assert {f for f in new if not f.endswith(".metadata.json") and not f.endswith("version-hint.text")} == \
        referenced & new  # the transaction left nothing behind


def test_bad_keys_are_named_errors_and_nothing_is_written(spark, table, warehouse):
    before_files = files_under(warehouse)
    for key, message in [(("", 1), "app_id must be a non-empty string"), (("a", -1), "non-negative integer"),
                         (("a", 1.5), "non-negative integer"), (("a", True), "non-negative integer"),
                         ("a", "a pair"), (("a", 1, 2), "a pair"),
                         # (issue 90, item 8: a version past 64 bits would skip every later real version)
                         (("a", 2 ** 70), "at most 64 bits"), (("a", 2 ** 63), "at most 64 bits")]:
        with pytest.raises(ValidationError, match=message):
            table.append(batch(spark, 0, 1), idempotency=key)
    with pytest.raises(ValidationError, match="sparkberg.idempotency.app-id.*summary field"):
        table.append(batch(spark, 0, 1), snapshot_properties={APP_ID: "forged"})
    assert files_under(warehouse) == before_files and table.current_snapshot() is None


CATALOGS = ["filesystem", "sqlite", "postgresql", "rest"]


def test_two_processes_racing_one_key_commit_once_on_every_catalog(spark, postgres, tmp_path):
    # One pair of writer processes races on each catalog in turn (a race per catalog: both load the table, then
    # both append with the key), so the four races cost two Spark processes, not eight.
    servers, races = [], []
    for kind in CATALOGS:
        root = tmp_path / kind
        if kind == "filesystem":
            cat = sparkberg.catalog(spark, str(root / "wh"))
        elif kind == "sqlite":
            cat = sparkberg.catalog(spark, f"sqlite:///{root}.db", warehouse=str(root / "wh"))
        elif kind == "postgresql":
            cat = sparkberg.catalog(spark, postgres.uri(f"idem_{os.getpid()}"), warehouse=str(root / "wh"))
        else:
            servers.append(RestServer(str(root / "server")))
            cat = sparkberg.catalog(spark, servers[-1].uri)
        cat.create_namespace("db")
        cat.create_table("db.race", "id bigint, p int", partition_by=["p"])
        races.append({"catalog": cat.config, "table": "db.race", "ready": str(tmp_path / f"ready-{kind}")})
        os.mkdir(races[-1]["ready"])
    try:
        procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "idempotent_writer.py"), json.dumps(races), str(w)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  env={**os.environ, "PYSPARK_PYTHON": sys.executable}) for w in range(2)]
        outputs = [p.communicate(timeout=600)[0] for p in procs]
        assert all(p.returncode == 0 for p in procs), "\n".join(o[-3000:] for o in outputs)
        check_races(spark, races, outputs)
    finally:
        for srv in servers:
            srv.close()
    assert all(srv.violations == [] for srv in servers)


def check_races(spark, races, outputs):
    """Each race committed its key once: one snapshot, one writer committed and the other skipped, every row
    once, and no file of the loser left."""
    for n, (kind, race) in enumerate(zip(CATALOGS, races)):
        outcomes = sorted(line.split(" ", 2)[2] for o in outputs for line in o.splitlines()
                          if line.startswith(f"OUTCOME {n} "))
        cat = sparkberg.catalog(spark, race["catalog"].pop("uri"), **race["catalog"])
        t = cat.load_table("db.race")
        assert len(t.metadata.snapshots) == 1, (kind, outcomes)
        sid = t.current_snapshot().snapshot_id
        assert outcomes == [f"committed=False skipped=True snapshot={sid}",
                            f"committed=True skipped=False snapshot={sid}"], kind
        assert sorted(r[0] for r in t.to_df().collect()) == list(range(100)), kind
        live = {local(r[0]) for r in t.metadata_table("files").select("file_path").collect()}
        assert set(files_under(local(t.location) + "/data")) == live, kind  # the loser's data files are gone
