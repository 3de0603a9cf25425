"""S3 remote signing (the REST spec's ``RemoteSignRequest``, ``s3.remote-signing-enabled``): a REST catalog
(tests/restserver.py) holds the only S3 key and signs each S3 request of its tables' clients on its ``sign``
route; moto's S3 (tests/objectstores.py) checks every request's signature and the key's IAM policy. The client,
which has no S3 credential, writes, reads, lists, creates (conditionally) and deletes the table's files; a signer
that refuses is a named error; no secret is in a message or a ``repr``. No Spark: data files are written with
pyarrow through the table's FileIO and appended by the commit path the DataFrame API uses."""
import os
import sys
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkberg.catalog.rest import RestCatalog
from sparkberg.errors import FileAlreadyExistsError, StorageError
from sparkberg.format.manifests import DataFile
from sparkberg.planning.reference import reference_plan
from sparkberg.table import Catalog

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from commits import fast_append  # noqa: E402
from objectstores import REGION, S3Server, started  # noqa: E402
from restserver import RestServer  # noqa: E402
from test_catalog_reliability import ARROW, SCHEMA  # noqa: E402


@pytest.fixture
def signing(tmp_path):
    """(the REST server that signs, the S3 server, the server's S3 secret)."""
    with started(str(tmp_path), S3Server, users={"catalog": ["arn:aws:s3:::lake", "arn:aws:s3:::lake/*"]},
                 buckets=("lake",)) as s3:
        props = s3.properties("catalog")
        endpoint = {k: props[k] for k in ("s3.endpoint", "s3.region", "s3.path-style-access")}
        srv = RestServer(str(tmp_path / "rest"), warehouse="s3://lake/wh", io_properties=props,
                         signing=(props["s3.access-key-id"], props["s3.secret-access-key"]),
                         signing_config=endpoint,
                         signing_static={"properties": {"purpose": "tests"}, "headers": {"X-Signer-Team": ["etl"]}})
        try:
            yield srv, s3, props["s3.secret-access-key"]
        finally:
            srv.close()


def _rows(table) -> list[int]:
    plan = reference_plan(table.metadata, table.io, table.current_snapshot())
    return sorted(i for path in plan for i in pq.read_table(table.io.open_input(path)).column("id").to_pylist())


def test_a_table_whose_catalog_signs_its_s3_requests(signing):
    srv, s3, secret = signing
    cat = Catalog(None, RestCatalog(srv.uri, "rest", None, {}), srv.uri)
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    assert not any(k in t.io.properties for k in ("s3.access-key-id", "s3.secret-access-key"))
    path = f"{t.location}/data/{uuid.uuid4()}.parquet"
    with t.io.open_output(path) as f:
        pq.write_table(pa.table([pa.array([1, 2, 3], pa.int64())], schema=ARROW), f)
    fast_append(t, [DataFile(path, "parquet", {}, 3, t.io.size(path))])  # (the manifests: written signed too)
    t = cat.load_table("db.t")
    assert _rows(t) == [1, 2, 3]
    assert t.io.read_range(path, 0, 4) == b"PAR1"
    assert path in [p for p, _ in t.io.list_files(t.location)]
    files, dirs = t.io.list_level(t.location)
    assert files == [] and dirs == [f"{t.location}/data", f"{t.location}/metadata"]
    marker = f"{t.location}/markers/{uuid.uuid4()}.json"
    t.io.create(marker, b"{}")  # (a conditional PUT: a second create is refused)
    with pytest.raises(FileAlreadyExistsError):
        t.io.create(marker, b"{}")
    t.io.delete(marker)
    assert not t.io.exists(marker)
    # every S3 request was described to the signer, with the static properties and headers the server gave
    methods = {body["method"] for body, _ in srv.sign_requests}
    assert {"GET", "HEAD", "PUT", "DELETE"} <= methods
    assert all(body["region"] == REGION and body["properties"] == {"purpose": "tests"} and
               headers.get("X-Signer-Team") == "etl" for body, headers in srv.sign_requests)
    assert secret not in repr(t.io) and "RemoteSigner(" in repr(t.io)
    assert srv.violations == []


def test_a_signer_that_refuses_is_named_and_nothing_is_written(signing):
    srv, s3, secret = signing
    cat = Catalog(None, RestCatalog(srv.uri, "rest", None, {"token": "catalog-token-do-not-leak"}), srv.uri)
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    srv.refuse_signing = True
    path = f"{t.location}/data/x.parquet"
    with pytest.raises(StorageError, match="refused to sign PUT .*HTTP 403") as e:
        t.io.write(path, b"data")
    assert "catalog-token-do-not-leak" not in str(e.value) and secret not in str(e.value)
    srv.refuse_signing = False
    assert not t.io.exists(path)
    # a request that reaches S3 signed by another key than the catalog's is refused by S3
    unsigned = Catalog(None, RestCatalog(srv.uri, "rest", None, {}), srv.uri).load_table("db.t").io
    from sparkberg.io.fileio import TableFileIO
    forged = {"Authorization": "AWS4-HMAC-SHA256 Credential=AKIAFORGED0000000000/20240101/us-east-1/s3/aws4_request, "
                               "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + "0" * 64,
              "X-Amz-Date": "20240101T000000Z"}
    plain = TableFileIO(unsigned.properties, None, lambda m, u, h, b, r: (u, {**h, **forged}))
    with pytest.raises(StorageError, match="access denied"):
        plain.write(path, b"data")
    # remote signing asked for, with no catalog to sign: a named error
    with pytest.raises(Exception, match="no catalog's signer"):
        TableFileIO(unsigned.properties).read(path)
