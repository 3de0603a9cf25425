"""The FileIO on an S3-compatible store (moto's server on 127.0.0.1, tests/s3server.py), configured only by FileIO
properties (every AWS variable and file hidden): reads, conditional creates, listings and deletes; ``s3``, ``s3a``
and ``s3n`` as one store; a store's refusal as a named error within seconds that shows no secret; and the
file-system catalog committing on S3 with the store's conditional create, writers of several processes losing
nothing. No Spark: data files are written with pyarrow through the table's FileIO and appended by the commit path
the DataFrame API uses."""
import multiprocessing
import os
import pickle
import sys
import threading
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkberg.catalog.config import open_backend
from sparkberg.errors import FileAlreadyExistsError, MissingFileError, StorageError, ValidationError
from sparkberg.io.fileio import TableFileIO, file_io_for
from sparkberg.io.stores import S3, fileio_properties, store_of, where
from sparkberg.planning.reference import reference_plan
from sparkberg.spec import updates as U
from sparkberg.spec.manifests import DataFile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from s3server import SECRET_KEY, no_aws_environment, started  # noqa: E402
from test_catalog_reliability import ARROW, RETRIES, SCHEMA  # noqa: E402


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    with started(str(tmp_path_factory.mktemp("no-aws"))) as server:
        yield server


@pytest.fixture
def bucket(s3):
    return s3.bucket(f"b-{uuid.uuid4().hex[:10]}")


def test_s3_s3a_and_s3n_are_one_store_and_other_schemes_are_named():
    assert {store_of(f"{s}://b/k") for s in ("s3", "s3a", "s3n")} == {S3}
    assert where("s3a://b/a/k").path == "b/a/k" and where("s3n://b/a/k").bucket == "b"
    at = where("abfss://data@acct.dfs.core.windows.net/wh/t")
    assert (at.store, at.authority, at.bucket, at.path) == ("azure", "acct", "data", "data/wh/t")
    with pytest.raises(ValidationError, match="no FileIO serves scheme 'ftp'"):
        store_of("ftp://host/x")
    assert fileio_properties({"s3.endpoint": "e", "owner": "x", "gcs.project-id": 7}) == \
        {"s3.endpoint": "e", "gcs.project-id": "7"}


def test_reads_creates_lists_and_deletes_on_s3(s3, bucket):
    io = file_io_for(bucket, s3.properties())
    io.create(f"{bucket}/wh/a/one.bin", b"0123456789")
    with pytest.raises(FileAlreadyExistsError):
        io.create(f"{bucket}/wh/a/one.bin", b"other")  # (the store's conditional create)
    # s3a and s3n name the same objects
    assert io.read(f"{bucket.replace('s3://', 's3a://')}/wh/a/one.bin") == b"0123456789"
    assert io.read_range(f"{bucket.replace('s3://', 's3n://')}/wh/a/one.bin", 3, 4) == b"3456"
    io.write(f"{bucket}/wh/a/b/two.bin", b"x")
    assert io.exists(f"{bucket}/wh/a/one.bin") and not io.exists(f"{bucket}/wh/a/none.bin")
    assert io.size(f"{bucket}/wh/a/one.bin") == 10
    assert list(io.list(f"{bucket}/wh/a")) == ["b", "one.bin"]
    root = bucket.replace("s3://", "s3a://") + "/wh"
    assert sorted(p for p, _ in io.list_files(root)) == [f"{root}/a/b/two.bin", f"{root}/a/one.bin"]
    assert all(ms > 0 for _, ms in io.list_files(root))
    io.delete(f"{bucket}/wh/a/one.bin")
    io.delete(f"{bucket}/wh/a/one.bin")  # (deleting what is gone is no error)
    with pytest.raises(MissingFileError):
        io.read(f"{bucket}/wh/a/one.bin")


def test_racing_creates_of_one_object_have_one_winner(s3, bucket):
    io = file_io_for(bucket, s3.properties())
    target = f"{bucket}/t/metadata/v2.metadata.json"
    won, lost = [], []

    def create(k: int) -> None:
        try:
            io.create(target, f"writer {k}".encode())
            won.append(k)
        except FileAlreadyExistsError:
            lost.append(k)
    threads = [threading.Thread(target=create, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and len(lost) == 7
    assert io.read(target) == f"writer {won[0]}".encode()


def test_the_fileio_travels_without_its_secrets_showing(s3, bucket):
    io = file_io_for(bucket, {**s3.properties(), "owner": "not a FileIO property"})
    assert SECRET_KEY not in repr(io) and "s3.secret-access-key" in repr(io)
    again = pickle.loads(pickle.dumps(io))  # (as tasks carry it to the executors)
    io.write(f"{bucket}/p.bin", b"p")
    assert again.read(f"{bucket}/p.bin") == b"p" and again == io
    # a table's properties over the catalog's
    table = io.with_properties({"s3.region": "eu-west-1", "write.format.default": "parquet"})
    assert table.properties["s3.region"] == "eu-west-1" and io.with_properties({"owner": "x"}) is io


# (moto's server checks no signature unless its IAM emulation is set up, so wrong credentials and denied prefixes
# are not among these cases)
@pytest.mark.parametrize("case", ["missing bucket", "no server"])
def test_a_refusing_or_silent_store_is_a_named_error_within_seconds(s3, bucket, case):
    props = s3.properties()
    location = f"{bucket}/x.bin"
    if case == "missing bucket":
        location = "s3://no-such-bucket-here/x.bin"
    else:
        props["s3.endpoint"] = "http://127.0.0.1:9"
    io = file_io_for(location, props)
    start = time.monotonic()
    with pytest.raises((StorageError, MissingFileError)) as e:
        io.write(location, b"x")
        io.read(location)
    assert time.monotonic() - start < 30
    assert location.split("://", 1)[1] in str(e.value) and SECRET_KEY not in str(e.value)


def _write_data_file(table, ids: list[int]) -> DataFile:
    path = f"{table.metadata.location}/data/{uuid.uuid4()}.parquet"
    with table.io.open_output(path) as f:
        pq.write_table(pa.table([pa.array(ids, pa.int64())], schema=ARROW), f)
    return DataFile(path, "parquet", {}, len(ids), table.io.size(path))


def _catalog(warehouse: str, properties: dict):
    from sparkberg.table import Catalog
    backend, description, config = open_backend(None, warehouse, properties=properties)
    return Catalog(None, backend, description, config)


def _appender(warehouse: str, properties: dict, k: int, n: int, tmp: str) -> None:
    from sparkberg.commit.producer import fast_append
    from sparkberg.commit.request import MAIN_REQUEST
    with no_aws_environment(tmp):
        table = _catalog(warehouse, properties).load_table("db.t")
        for i in range(n):
            fast_append(table, [_write_data_file(table, [1000 * k + i])], MAIN_REQUEST)


def test_the_file_system_catalog_commits_on_s3_and_racing_writers_lose_nothing(s3, bucket, tmp_path, report):
    warehouse = f"{bucket.replace('s3://', 's3a://')}/wh"
    cat = _catalog(warehouse, s3.properties())
    cat.create_namespace("db")
    cat._backend.create("db.t", U.new_table_metadata(SCHEMA, cat._backend.default_table_location("db.t"),
                                                      properties=RETRIES))
    ctx = multiprocessing.get_context("spawn")
    start = time.monotonic()
    procs = [ctx.Process(target=_appender, args=(warehouse, s3.properties(), k, 5, str(tmp_path)))
             for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(600)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    table = cat.load_table("db.t")
    assert isinstance(table.io, TableFileIO) and table.metadata.location.startswith("s3a://")
    snapshots = table.snapshots()
    assert len(snapshots) == 15 and len({s.parent_snapshot_id for s in snapshots}) == 15  # a linear history
    plan = reference_plan(table.metadata, table.io, table.current_snapshot())
    rows = sorted(i for path in plan for i in pq.read_table(table.io.open_input(path)).column("id").to_pylist())
    assert rows == sorted(1000 * k + i for k in range(3) for i in range(5))
    versions = sorted(n for n in table.io.list(f"{table.metadata.location}/metadata") if n.endswith(".json"))
    assert versions == sorted(f"v{v}.metadata.json" for v in range(1, 17))
    report(f"file-system catalog on S3 (moto): 3 processes x 5 appends -> 15 snapshots, linear, "
           f"{time.monotonic() - start:.1f} s")
