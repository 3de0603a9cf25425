"""Secrets never become text: a password in a catalog URI, a bearer token, OAuth2 credentials and signatures that
a server echoes back are masked in every repr and error (issue 90, item 1)."""
import json
import os
import sys

import pytest

from sparkberg import redact
from sparkberg.catalog.config import open_backend
from sparkberg.catalog.rest import RestCatalog, RestCatalogError
from sparkberg.errors import SparkbergError
from sparkberg.table import Catalog

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from restserver import RestServer, http_server  # noqa: E402

SECRET = "s3cr3t-Pa55"


@pytest.mark.parametrize("shown,masked", [
    (f"http://user:{SECRET}@host:8181/cat", "http://user:***@host:8181/cat"),
    (f"postgresql://etl:{SECRET}@db:5432/c?sslmode=require", "postgresql://etl:***@db:5432/c?sslmode=require"),
    (f"jdbc:postgresql://db/c?user=etl&password={SECRET}", "jdbc:postgresql://db/c?user=etl&password=***"),
    (f"https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA/x&X-Amz-Signature={SECRET}",
     "https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***"),
    (f"https://a.blob.core.windows.net/c/f?sv=2022&sig={SECRET}", "https://a.blob.core.windows.net/c/f?sv=2022&sig=***"),
    ("http://host:8181/v1/config?warehouse=analytics", "http://host:8181/v1/config?warehouse=analytics"),
], ids=["userinfo", "postgres-userinfo", "password-param", "sigv4-presigned", "azure-sas", "no-secret"])
def test_uri_masks_passwords_and_secret_parameters(shown, masked):
    assert redact.uri(shown) == masked


@pytest.mark.parametrize("quoted", [
    f"request headers: {{'Authorization': 'Bearer {SECRET}', 'Accept': 'json'}}",
    f'{{"headers": {{"Authorization": "AWS4-HMAC-SHA256 Credential=AKIA/2024, Signature={SECRET}"}}}}',
    f"Authorization: Basic {SECRET}",
    f'{{"access_token": "{SECRET}", "token_type": "bearer"}}',
    f"grant_type=client_credentials&client_secret={SECRET}&scope=catalog",
    f'{{"s3.secret-access-key": "{SECRET}", "s3.endpoint": "http://x"}}',
    f"token={SECRET}",
], ids=["bearer-in-dict", "sigv4-header", "basic", "oauth2-answer", "oauth2-form", "vended-config", "token-param"])
def test_text_masks_credentials_a_server_quotes(quoted):
    out = redact.text(quoted)
    assert SECRET not in out and "***" in out


def test_text_keeps_what_is_not_a_secret():
    message = "NoSuchTableException: Table does not exist: db.t (next-page-token was 3, tokens are fine)"
    assert redact.text(message) == message


def test_rest_uri_password_never_shown(tmp_path):
    srv = RestServer(str(tmp_path / "server"))
    try:
        host = srv.uri[len("http://"):]
        backend, description, _ = open_backend(None, f"http://etl:{SECRET}@{host}")
        cat = Catalog(None, backend, description)
        assert SECRET not in repr(cat) and SECRET not in repr(backend) and SECRET not in cat.uri
        assert "etl:***@" in repr(cat)
        cat.create_namespace("db")  # (the requests themselves still carry the userinfo)
        assert cat.list_namespaces() == [("db",)]
    finally:
        srv.close()


def test_unreachable_rest_uri_error_masks_the_password():
    with pytest.raises(RestCatalogError) as e:
        RestCatalog(f"http://etl:{SECRET}@127.0.0.1:9", "r")
    assert SECRET not in str(e.value) and "etl:***@127.0.0.1:9" in str(e.value)


def test_server_error_echoing_the_authorization_header_is_masked():
    def echo(method, path, query, raw, headers):
        if path.endswith("/config"):
            return 200, b"{}"
        body = {"error": {"type": "ServerError", "code": 500,
                          "message": f"rejected request with headers {dict(headers)} and form {raw.decode()}"}}
        return 500, json.dumps(body).encode()

    server, uri = http_server(echo)
    try:
        cat = RestCatalog(uri, "r", properties={"token": SECRET})
        with pytest.raises(SparkbergError) as e:
            cat.list_namespaces()
        assert SECRET not in str(e.value) and "ServerError" in str(e.value)
    finally:
        server.shutdown()


def test_oauth2_refusal_echoing_the_client_secret_is_masked():
    def refuse(method, path, query, raw, headers):
        return 401, json.dumps({"error": "invalid_client",
                                "error_description": f"bad client in {raw.decode()}"}).encode()

    server, uri = http_server(refuse)
    try:
        with pytest.raises(SparkbergError) as e:
            RestCatalog(uri, "r", properties={"credential": f"client:{SECRET}"})
        assert SECRET not in str(e.value) and "invalid_client" in str(e.value)
    finally:
        server.shutdown()
