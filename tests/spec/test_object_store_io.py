"""The FileIO on object stores (S3: moto's server; GCS: fake-gcs-server; Azure: Azurite; all on 127.0.0.1,
tests/objectstores.py), configured only by FileIO properties (every provider's variable and file hidden): reads,
conditional creates, listings and deletes; ``s3``, ``s3a`` and ``s3n`` as one store; a store's refusal (a missing
bucket, wrong credentials, a denied prefix, no server) as a named error within seconds that shows no secret; and
the file-system catalog committing on S3 and Azure with the store's conditional create, writers of several
processes losing nothing. No Spark: data files are written with pyarrow through the table's FileIO and appended by
the commit path the DataFrame API uses."""
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
from sparkberg.format import updates as U
from sparkberg.format.manifests import DataFile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from objectstores import (  # noqa: E402
    AZURE_KEY, GCS_TOKEN, SECRET_KEY, S3Server, no_cloud_environment, started,
)
from test_catalog_reliability import ARROW, RETRIES, SCHEMA, run_writers  # noqa: E402


@pytest.fixture
def bucket(s3):
    return s3.bucket(f"b-{uuid.uuid4().hex[:10]}")


SECRET_OF = {"s3": SECRET_KEY, "gcs": GCS_TOKEN, "azure": AZURE_KEY}


def _place(request, store: str) -> tuple[str, dict]:
    """A new bucket (container) on ``store``'s server: its URI and the FileIO properties that reach it."""
    server = request.getfixturevalue(store)
    name = f"b-{uuid.uuid4().hex[:10]}"
    return (server.container(name) if store == "azure" else server.bucket(name)), server.properties()


def test_s3_s3a_and_s3n_are_one_store_and_other_schemes_are_named():
    assert {store_of(f"{s}://b/k") for s in ("s3", "s3a", "s3n")} == {S3}
    assert where("s3a://b/a/k").path == "b/a/k" and where("s3n://b/a/k").bucket == "b"
    at = where("abfss://data@acct.dfs.core.windows.net/wh/t")
    assert (at.store, at.authority, at.bucket, at.path) == ("azure", "acct", "data", "data/wh/t")
    with pytest.raises(ValidationError, match="no FileIO serves scheme 'ftp'"):
        store_of("ftp://host/x")
    assert fileio_properties({"s3.endpoint": "e", "owner": "x", "gcs.project-id": 7}) == \
        {"s3.endpoint": "e", "gcs.project-id": "7"}


@pytest.mark.parametrize("store", ["gcs", "azure"])
def test_reads_writes_lists_and_deletes_on_gcs_and_azure(request, store):
    root, props = _place(request, store)
    io = file_io_for(root, props)
    io.write(f"{root}/wh/a/one.bin", b"0123456789")
    io.write(f"{root}/wh/a/b/two.bin", b"x")
    assert io.read(f"{root}/wh/a/one.bin") == b"0123456789" and io.read_range(f"{root}/wh/a/one.bin", 3, 4) == b"3456"
    assert io.exists(f"{root}/wh/a/one.bin") and not io.exists(f"{root}/wh/a/none.bin")
    assert io.size(f"{root}/wh/a/one.bin") == 10
    # (fake-gcs-server answers a delimited listing's prefixes apart, not as the items includeTrailingDelimiter asks
    # for, so pyarrow sees no directory there; GCS itself does)
    assert list(io.list(f"{root}/wh/a")) == (["one.bin"] if store == "gcs" else ["b", "one.bin"])
    assert sorted(p for p, _ in io.list_files(f"{root}/wh")) == [f"{root}/wh/a/b/two.bin", f"{root}/wh/a/one.bin"]
    # Parquet through the FileIO's streams, as the writers and the executors' reader use them
    with io.open_output(f"{root}/wh/d.parquet") as f:
        pq.write_table(pa.table({"id": list(range(1000))}), f)
    with io.open_input(f"{root}/wh/d.parquet") as f:
        assert pq.read_table(f).column("id").to_pylist() == list(range(1000))
    again = pickle.loads(pickle.dumps(io))
    assert again.read(f"{root}/wh/a/one.bin") == b"0123456789"
    assert SECRET_OF[store] not in repr(io) + str(io)
    io.delete(f"{root}/wh/a/one.bin")
    io.delete(f"{root}/wh/a/one.bin")
    with pytest.raises(MissingFileError):
        io.read(f"{root}/wh/a/one.bin")


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


# (GCS: obstore's XML API PUT with x-goog-if-generation-match: 0, answered by tests/gcsfront.py as GCS documents it)
@pytest.mark.parametrize("store", ["s3", "gcs", "azure"])
def test_racing_creates_of_one_object_have_one_winner(request, store):
    root, props = _place(request, store)
    io = file_io_for(root, props)
    target = f"{root}/t/metadata/v2.metadata.json"
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


@pytest.mark.parametrize("store", ["gcs", "azure"])
def test_a_silent_gcs_or_azure_endpoint_is_a_named_error_within_seconds(request, store):
    root, props = _place(request, store)
    dead = "http://127.0.0.1:9"
    if store == "gcs":
        props["gcs.service.host"] = dead
    else:
        (key, value), = props.items()
        props[key] = value.replace(request.getfixturevalue("azure").endpoint.rsplit("/", 1)[0], dead)
    io = file_io_for(root, props)
    start = time.monotonic()
    with pytest.raises(StorageError) as e:
        io.read(f"{root}/x.bin")
    assert time.monotonic() - start < 30
    assert f"{root}/x.bin" in str(e.value) and SECRET_OF[store] not in str(e.value)


def test_wrong_credentials_and_a_denied_prefix_are_named_and_change_nothing(tmp_path):
    # (moto's IAM emulation: signatures checked, and user "writer" may use only lake/wh/)
    with started(str(tmp_path), S3Server, users={"writer": ["arn:aws:s3:::lake", "arn:aws:s3:::lake/wh/*"]},
                 buckets=("lake",)) as server:
        io = file_io_for("s3://lake/wh", server.properties("writer"))
        io.create("s3://lake/wh/t/v1.json", b"one")
        assert io.read("s3://lake/wh/t/v1.json") == b"one"
        secret = server.properties("writer")["s3.secret-access-key"]
        for where_, call in [("s3://lake/other/x.bin", lambda io, p: io.write(p, b"x")),
                             ("s3://lake/other/x.bin", lambda io, p: io.read(p)),
                             ("s3://lake/other/v1.json", lambda io, p: io.create(p, b"x"))]:
            with pytest.raises(StorageError, match="access denied") as e:
                call(io, where_)
            assert where_ in str(e.value) and secret not in str(e.value)
        wrong = file_io_for("s3://lake/wh", {**server.properties("writer"), "s3.secret-access-key": "wrong-one"})
        for call in (lambda p: wrong.read(p), lambda p: wrong.create(p, b"two"), lambda p: wrong.delete(p)):
            with pytest.raises(StorageError, match="access denied") as e:
                call("s3://lake/wh/t/v1.json")
            assert "s3://lake/wh/t/v1.json" in str(e.value) and "wrong-one" not in str(e.value)
        assert io.read("s3://lake/wh/t/v1.json") == b"one"
        assert [p for p, _ in io.list_files("s3://lake/wh")] == ["s3://lake/wh/t/v1.json"]


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
    from commits import fast_append
    from sparkberg.operations.request import MAIN_REQUEST
    with no_cloud_environment(tmp):
        table = _catalog(warehouse, properties).load_table("db.t")
        for i in range(n):
            fast_append(table, [_write_data_file(table, [1000 * k + i])], MAIN_REQUEST)


@pytest.mark.parametrize("store", ["s3", "gcs", "azure"])
def test_the_file_system_catalog_commits_on_object_stores_and_racing_writers_lose_nothing(request, store, tmp_path,
                                                                                         report):
    root, props = _place(request, store)
    warehouse = f"{root.replace('s3://', 's3a://')}/wh"
    cat = _catalog(warehouse, props)
    cat.create_namespace("db")
    cat._backend.create("db.t", U.new_table_metadata(SCHEMA, cat._backend.default_table_location("db.t"),
                                                      properties=RETRIES))
    seconds = run_writers(_appender, [(warehouse, props, k, 5, str(tmp_path)) for k in range(3)])
    table = cat.load_table("db.t")
    assert isinstance(table.io, TableFileIO) and table.metadata.location.startswith(warehouse.split("/")[0])
    snapshots = table.snapshots()
    assert len(snapshots) == 15 and len({s.parent_snapshot_id for s in snapshots}) == 15  # a linear history
    plan = reference_plan(table.metadata, table.io, table.current_snapshot())
    rows = sorted(i for path in plan for i in pq.read_table(table.io.open_input(path)).column("id").to_pylist())
    assert rows == sorted(1000 * k + i for k in range(3) for i in range(5))
    versions = sorted(n for n in table.io.list(f"{table.metadata.location}/metadata") if n.endswith(".json"))
    assert versions == sorted(f"v{v}.metadata.json" for v in range(1, 17))
    server = {"s3": "moto", "gcs": "fake-gcs-server", "azure": "Azurite"}[store]
    report(f"file-system catalog on {store} ({server}): 3 processes x 5 appends -> "
           f"15 snapshots, linear, {seconds:.1f} s")
