"""Tables on S3 (moto's server on 127.0.0.1, tests/objectstores.py) shared with PyIceberg and DuckDB: what
sparkberg writes there (merge-on-read deletes included) they read exactly, and sparkberg reads what PyIceberg
writes; a table whose metadata names ``s3a://`` locations reads in every engine. Each engine gets the server's
endpoint and keys from its own configuration (FileIO properties, a DuckDB secret), none from the environment."""
import os
import sys
from collections import Counter

import pytest

import sparkberg

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from objectstores import ACCESS_KEY, REGION, SECRET_KEY  # noqa: E402

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def duck_s3(s3):
    """DuckDB with its iceberg and httpfs extensions and a secret for the server."""
    from duckdbs import duckdb_with_httpfs
    con = duckdb_with_httpfs()
    con.execute(f"CREATE SECRET lake (TYPE s3, KEY_ID '{ACCESS_KEY}', SECRET '{SECRET_KEY}', REGION '{REGION}', "
                f"ENDPOINT '127.0.0.1:{s3.port}', URL_STYLE 'path', USE_SSL false)")
    con.execute("SET TimeZone = 'UTC'")
    return con


def _pyiceberg_rows(metadata_location: str, properties: dict) -> Counter:
    from pyiceberg.table import StaticTable
    t = StaticTable.from_metadata(metadata_location, properties=properties)
    return Counter(tuple(r.values()) for r in t.scan().to_arrow().to_pylist())


@pytest.mark.parametrize("scheme", ["s3", "s3a"])
@pytest.mark.parametrize("version", [2, 3])
def test_pyiceberg_and_duckdb_read_what_sparkberg_writes_on_s3(java, s3, duck_s3, scheme, version):
    bucket = s3.bucket(f"sb-{scheme}-v{version}").replace("s3://", f"{scheme}://")
    cat = sparkberg.catalog(java, f"{bucket}/wh", properties=s3.properties())
    t = cat.create_table("db.t", "id bigint, cat string, v double", partition_by=["cat"], properties={
        "format-version": str(version), "write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"})
    t = t.append(java.sql("SELECT id, IF(id % 3 = 0, 'a', 'b') AS cat, id * 1.5D AS v FROM range(60)"))
    t = t.delete("id % 7 = 0").update({"v": "v + 1000"}, "id >= 50")
    assert t.metadata_location.startswith(f"{scheme}://")
    ours = Counter(tuple(r) for r in t.to_df().select("id", "cat", "v").collect())
    assert sum(ours.values()) == 60 - 9
    assert _pyiceberg_rows(t.metadata_location, s3.properties()) == ours
    assert Counter(duck_s3.sql(f"SELECT id, cat, v FROM iceberg_scan('{t.metadata_location}')").fetchall()) == ours


def test_sparkberg_reads_and_writes_what_pyiceberg_writes_on_s3(java, s3, tmp_path):
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    bucket = s3.bucket("pyi").replace("s3://", "s3a://")
    uri = f"sqlite:///{tmp_path}/pyi.db"
    pc = SqlCatalog("pyi", uri=uri, warehouse=f"{bucket}/wh", **s3.properties())
    pc.create_namespace("db")
    pt = pc.create_table("db.t", pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())]))
    pt.append(pa.table({"id": pa.array(range(30), pa.int64()), "s": [f"s{i}" for i in range(30)]}))
    pt.delete("id < 10")
    pt.append(pa.table({"id": pa.array([100], pa.int64()), "s": ["late"]}))
    # (PyIceberg's SqlCatalog keeps Iceberg Java's JdbcCatalog tables: sparkberg's SQL catalog opens them)
    cat = sparkberg.catalog(java, uri, name="pyi", properties=s3.properties())
    t = cat.load_table("db.t")
    assert t.metadata_location.startswith("s3a://")
    expected = Counter([(i, f"s{i}") for i in range(10, 30)] + [(100, "late")])
    assert Counter(tuple(r) for r in t.to_df().collect()) == expected
    assert Counter(tuple(r) for r in sparkberg.load_table(java, t.metadata_location, s3.properties())
                   .to_df().collect()) == expected
    t = t.delete("id = 100").append(java.sql("SELECT 200L AS id, 'sb' AS s"))
    expected += Counter([(200, "sb")])
    expected -= Counter([(100, "late")])
    assert _pyiceberg_rows(pc.load_table("db.t").metadata_location, s3.properties()) == expected


def test_the_doctor_finds_nothing_wrong_in_pyiceberg_s_and_duckdb_readable_tables_on_s3(java, s3, tmp_path):
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    bucket = s3.bucket("doctor")
    uri = f"sqlite:///{tmp_path}/pyi.db"
    pc = SqlCatalog("pyi", uri=uri, warehouse=f"{bucket}/wh", **s3.properties())
    pc.create_namespace("db")
    pt = pc.create_table("db.t", pa.schema([pa.field("id", pa.int64())]), properties={"format-version": "2"})
    pt.append(pa.table({"id": pa.array(range(10), pa.int64())}))
    pt.delete("id < 3")
    t = sparkberg.catalog(java, uri, name="pyi", properties=s3.properties()).load_table("db.t")
    assert t.check("data").collect() == []
