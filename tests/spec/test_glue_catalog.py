"""The Glue catalog against moto's Glue and S3 (one server on 127.0.0.1, tests/objectstores.py, with Glue's
``VersionId`` check: tests/motoserver.py), credentials only from properties: namespaces as databases; tables
created, loaded, committed, listed, renamed, registered, dropped and purged; the Glue table's parameters and
columns as Iceberg Java and PyIceberg write them; writers of several processes losing nothing; PyIceberg's
GlueCatalog sharing the tables; an endpoint that does not answer named within seconds. No Spark: data files are
written with pyarrow through the table's FileIO and appended by the commit path the DataFrame API uses."""
import os
import sys
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sparkberg
from sparkberg.catalog.config import open_backend
from commits import fast_append
from sparkberg.operations.request import MAIN_REQUEST
from sparkberg.errors import (
    CatalogDatabaseError, NamespaceAlreadyExistsError, NamespaceNotEmptyError, NoSuchNamespaceError,
    NoSuchTableError, TableAlreadyExistsError,
)
from sparkberg.planning.reference import reference_plan
from sparkberg.format import types as T
from sparkberg.format.manifests import DataFile
from sparkberg.table import Catalog

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from objectstores import ACCESS_KEY, REGION, SECRET_KEY, no_cloud_environment  # noqa: E402
from test_catalog_reliability import ARROW, RETRIES, run_writers  # noqa: E402

SCHEMA = T.Schema([T.NestedField(1, "id", T.LONG, True, doc="the key"),
                   T.NestedField(2, "tags", T.ListType(3, T.STRING, False), False),
                   T.NestedField(4, "amount", T.DecimalType(10, 2), False),
                   T.NestedField(5, "at", T.TIMESTAMPTZ, False)])


def _properties(s3) -> dict:
    return {**s3.properties(), "type": "glue", "glue.endpoint": s3.endpoint, "glue.region": REGION,
            "glue.access-key-id": ACCESS_KEY, "glue.secret-access-key": SECRET_KEY}


def _catalog(s3, warehouse: str) -> Catalog:
    backend, description, config = open_backend(None, "glue", warehouse, properties=_properties(s3))
    return Catalog(None, backend, description, config)


def _data_file(table, ids: list[int]) -> DataFile:
    path = f"{table.metadata.location}/data/{uuid.uuid4()}.parquet"
    with table.io.open_output(path) as f:
        pq.write_table(pa.table([pa.array(ids, pa.int64())], schema=ARROW), f)
    return DataFile(path, "parquet", {}, len(ids), table.io.size(path))


def _rows(table) -> list[int]:
    plan = reference_plan(table.metadata, table.io, table.current_snapshot())
    return sorted(i for path in plan for i in pq.read_table(table.io.open_input(path)).column("id").to_pylist())


def _glue(s3):
    import boto3
    return boto3.client("glue", endpoint_url=s3.endpoint, region_name=REGION, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY)


def test_namespaces_tables_and_commits_in_glue(s3):
    bucket = s3.bucket(f"glue-{uuid.uuid4().hex[:8]}")
    cat = _catalog(s3, f"{bucket}/wh")
    cat.create_namespace("db", {"owner": "etl"})
    with pytest.raises(NamespaceAlreadyExistsError):
        cat.create_namespace("db")
    assert ("db",) in cat.list_namespaces() and cat.load_namespace_properties("db")["owner"] == "etl"
    cat.update_namespace_properties("db", {"team": "data"}, ["owner"])
    assert cat.load_namespace_properties("db") == {"team": "data"}
    t = cat.create_table("db.t", SCHEMA, properties=RETRIES)
    assert t.location == f"{bucket}/wh/db.db/t" and "/metadata/00000-" in t.metadata_location
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table("db.t", SCHEMA)
    fast_append(t, [_data_file(t, [1, 2])], MAIN_REQUEST)
    t = cat.load_table("db.t")
    fast_append(t, [_data_file(t, [3])], MAIN_REQUEST)
    t = cat.load_table("db.t")
    assert _rows(t) == [1, 2, 3] and "/metadata/00002-" in t.metadata_location
    # the Glue table as Iceberg Java and PyIceberg write it, and its columns as Athena reads them
    glue = _glue(s3).get_table(DatabaseName="db", Name="t")["Table"]
    params = glue["Parameters"]
    assert params["table_type"] == "ICEBERG" and params["metadata_location"] == t.metadata_location
    assert "/metadata/00001-" in params["previous_metadata_location"]
    assert glue["StorageDescriptor"]["Location"] == t.location
    columns = [(c["Name"], c["Type"], c["Parameters"]["iceberg.field.id"], c.get("Comment"))
               for c in glue["StorageDescriptor"]["Columns"]]
    assert columns == [("id", "bigint", "1", "the key"), ("tags", "array<string>", "2", None),
                       ("amount", "decimal(10,2)", "3", None), ("at", "timestamp", "4", None)]  # (ids as assigned)
    assert cat.list_tables("db") == ["db.t"] and cat.table_exists("db.t") and not cat.table_exists("db.x")
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("db")
    cat.rename_table("db.t", "db.u")
    assert cat.list_tables("db") == ["db.u"] and _rows(cat.load_table("db.u")) == [1, 2, 3]
    with pytest.raises(NoSuchTableError):
        cat.load_table("db.t")
    again = cat.register_table("db.again", t.metadata_location)
    assert _rows(again) == [1, 2, 3]
    cat.drop_table("db.again")
    data = [p for p, _ in t.io.list_files(f"{t.location}/data")]
    cat.drop_table("db.u", purge=True)
    assert data and not any(t.io.exists(p) for p in data) and not t.io.exists(t.metadata_location)
    cat.drop_namespace("db")
    with pytest.raises(NoSuchNamespaceError):
        cat.create_table("db.t", SCHEMA)


def _appender(s3_props: dict, warehouse: str, k: int, n: int, tmp: str) -> None:
    with no_cloud_environment(tmp):
        backend, description, config = open_backend(None, "glue", warehouse, properties=s3_props)
        table = Catalog(None, backend, description, config).load_table("db.t")
        for i in range(n):
            fast_append(table, [_data_file(table, [1000 * k + i])], MAIN_REQUEST)


def test_writer_processes_lose_nothing_through_glue(s3, tmp_path, report):
    bucket = s3.bucket(f"glue-{uuid.uuid4().hex[:8]}")
    cat = _catalog(s3, f"{bucket}/wh")
    cat.create_namespace("db")
    cat.create_table("db.t", SCHEMA, properties=RETRIES)
    seconds = run_writers(_appender, [(_properties(s3), f"{bucket}/wh", k, 5, str(tmp_path)) for k in range(3)])
    table = cat.load_table("db.t")
    snapshots = table.snapshots()
    assert len(snapshots) == 15 and len({s.parent_snapshot_id for s in snapshots}) == 15
    assert _rows(table) == sorted(1000 * k + i for k in range(3) for i in range(5))
    report(f"Glue catalog (moto, VersionId checked): 3 processes x 5 appends -> 15 snapshots, linear, "
           f"{seconds:.1f} s")


def test_pyiceberg_s_glue_catalog_shares_the_tables(s3):
    from pyiceberg.catalog.glue import GlueCatalog as PyGlue
    bucket = s3.bucket(f"glue-{uuid.uuid4().hex[:8]}")
    cat = _catalog(s3, f"{bucket}/wh")
    cat.create_namespace("shared")
    t = cat.create_table("shared.t", T.Schema([T.NestedField(1, "id", T.LONG, True)]))
    fast_append(t, [_data_file(t, [1, 2])], MAIN_REQUEST)
    props = {k: v for k, v in _properties(s3).items() if k != "type"}
    pyi = PyGlue("glue", **props, warehouse=f"{bucket}/wh")
    pt = pyi.load_table("shared.t")
    assert sorted(pt.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    pt.append(pa.table({"id": pa.array([3], pa.int64())}, schema=pa.schema([pa.field("id", pa.int64(), False)])))
    t = cat.load_table("shared.t")
    assert _rows(t) == [1, 2, 3] and len(t.snapshots()) == 2
    fast_append(t, [_data_file(t, [4])], MAIN_REQUEST)
    assert sorted(pyi.load_table("shared.t").scan().to_arrow().column("id").to_pylist()) == [1, 2, 3, 4]
    pyi.create_table("shared.theirs", schema=pa.schema([pa.field("id", pa.int64())]))
    assert cat.list_tables("shared") == ["shared.t", "shared.theirs"]
    assert cat.load_table("shared.theirs").snapshots() == []


def test_a_silent_glue_endpoint_is_a_named_error_within_seconds(s3):
    props = {**_properties(s3), "glue.endpoint": "http://127.0.0.1:9"}
    start = time.monotonic()
    with pytest.raises(CatalogDatabaseError) as e:
        sparkberg.catalog(None, "glue", warehouse="s3://x/wh", properties=props).list_namespaces()
    assert time.monotonic() - start < 30 and SECRET_KEY not in str(e.value)
