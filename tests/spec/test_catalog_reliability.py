"""Writers of several processes committing through one SQL catalog (SQLite, PostgreSQL), as scheduled jobs do:
no commit lost, a linear history, every row present, no file the catalog points at missing; and a writer killed
(SIGKILL) at each step of a commit leaves a table the next writer loads and commits to. No Spark: data files are
written with pyarrow and appended by the same commit path the DataFrame API uses."""
import multiprocessing
import os
import signal
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkberg.catalog.sql import SqlCatalog, database_for
from sparkberg.io.fileio import LocalFileIO
from sparkberg.planning.reference import reference_plan
from sparkberg.format import types as T
from sparkberg.format import updates as U
from sparkberg.format.manifests import DataFile

SCHEMA = T.Schema([T.NestedField(1, "id", T.LONG, True)])
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"})])
RETRIES = {"commit.retry.num-retries": "200", "commit.retry.min-wait-ms": "5", "commit.retry.max-wait-ms": "200"}


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/catalog.db"
    return request.getfixturevalue("postgres").uri(f"rel_{uuid.uuid4().hex[:12]}")


def _table(database: str, warehouse: str):
    from sparkberg.table import Catalog
    return Catalog(None, SqlCatalog("prod", database_for(database, {}), warehouse), "prod").load_table("db.t")


def _data_file(table, ids: list[int]) -> DataFile:
    path = f"{table.metadata.location}/data/{uuid.uuid4()}.parquet"
    local = path[len("file://"):]
    os.makedirs(os.path.dirname(local), exist_ok=True)
    pq.write_table(pa.table([pa.array(ids, pa.int64())], schema=ARROW), local)
    return DataFile(path, "parquet", {}, len(ids), os.path.getsize(local))


def _appender(database: str, warehouse: str, k: int, n: int) -> None:
    from sparkberg.operations.request import MAIN_REQUEST
    from commits import fast_append
    table = _table(database, warehouse)
    for i in range(n):
        fast_append(table, [_data_file(table, [1000 * k + i])], MAIN_REQUEST)


def _rows(table) -> list[int]:
    plan = reference_plan(table.metadata, table.io, table.current_snapshot())
    out = []
    for path, deletes in plan.items():
        assert not deletes
        out += pq.read_table(path[len("file://"):]).column("id").to_pylist()
    return sorted(out)


def _new_table(database: str, tmp_path) -> SqlCatalog:
    cat = SqlCatalog("prod", database_for(database, {}), f"file://{tmp_path}/wh")
    cat.create_namespace("db")
    cat.create("db.t", U.new_table_metadata(SCHEMA, cat.default_table_location("db.t"), properties=RETRIES))
    return cat


def run_writers(target, args: list[tuple]) -> float:
    """``target(*a)`` in a spawned process for each ``a`` of ``args``, all at once; each must end well (within 10
    minutes). The seconds they took."""
    ctx = multiprocessing.get_context("spawn")
    start = time.monotonic()
    procs = [ctx.Process(target=target, args=a) for a in args]
    for p in procs:
        p.start()
    for p in procs:
        p.join(600)
    assert [p.exitcode for p in procs] == [0] * len(procs)
    return time.monotonic() - start


def test_eight_writer_processes_of_25_appends_lose_nothing(database, tmp_path, report):
    cat = _new_table(database, tmp_path)
    seconds = run_writers(_appender, [(database, cat.warehouse, k, 25) for k in range(8)])
    table = _table(database, cat.warehouse)
    snapshots = table.metadata.snapshots
    assert len(snapshots) == 200
    parents = [s.parent_snapshot_id for s in snapshots]
    assert parents[0] is None and parents[1:] == [s.snapshot_id for s in snapshots[:-1]]  # (a linear chain)
    assert [s.sequence_number for s in snapshots] == list(range(1, 201))
    assert _rows(table) == sorted(1000 * k + i for k in range(8) for i in range(25))
    io = LocalFileIO()
    for entry in table.metadata.metadata_log:
        assert io.exists(entry.metadata_file)
    report(f"{database.split(':')[0]} catalog: 8 processes x 25 appends -> {len(snapshots)} snapshots, linear, "
           f"{len(_rows(table))} rows, {seconds:.1f} s")


def _killed_writer(database: str, warehouse: str, step: int) -> None:
    """Appends one file, killing itself (SIGKILL) right after writing the data file (step 0), after its
    ``step``-th metadata file creation (1: the manifest, 2: the manifest list, 3: the metadata file) or, at step
    -1, right after the catalog swap."""
    from sparkberg.catalog import sql
    from sparkberg.operations.request import MAIN_REQUEST
    from commits import fast_append
    table = _table(database, warehouse)
    created = []
    real_create = LocalFileIO.create

    def create(self, location, data):
        real_create(self, location, data)
        created.append(location)
        if len(created) == step:
            os.kill(os.getpid(), signal.SIGKILL)
    LocalFileIO.create = create
    if step == -1:
        real_execute = sql.Database.execute

        def execute(self, statement, params=()):
            out = real_execute(self, statement, params)
            if statement.startswith("UPDATE iceberg_tables SET metadata_location"):
                os.kill(os.getpid(), signal.SIGKILL)
            return out
        sql.Database.execute = execute
    data_file = _data_file(table, [7])
    if step == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    fast_append(table, [data_file], MAIN_REQUEST)


@pytest.mark.parametrize("step", [0, 1, 2, 3, -1])
def test_a_writer_killed_at_each_step_leaves_a_table_the_next_writer_commits_to(database, tmp_path, step):
    cat = _new_table(database, tmp_path)
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=_killed_writer, args=(database, cat.warehouse, step))
    p.start()
    p.join(120)
    assert p.exitcode == -signal.SIGKILL
    table = _table(database, cat.warehouse)  # loads: the catalog points at a complete metadata file
    landed = step == -1
    assert (table.current_snapshot() is not None) == landed
    _appender(database, cat.warehouse, 1, 1)
    assert _rows(_table(database, cat.warehouse)) == sorted(([7] if landed else []) + [1000])
