"""moto's server, with the one behaviour of AWS Glue that moto leaves out and that the Glue catalog's tests need:
``UpdateTable`` with a ``VersionId`` that is no longer the table's current version fails with
``ConcurrentModificationException`` (Glue's optimistic check, which Iceberg's Glue catalogs commit by). Run as
``python motoserver.py -H 127.0.0.1 -p PORT`` (moto.server's arguments).

For the benchmarks, ``POST /_sparkberg/fill?bucket=B&prefix=P&count=N`` stores N one-byte objects
``P<k % 100>/o<k>.bin`` in bucket B inside the server, without N requests (moto stores some 80 objects a second
through its API, so 100k objects would take the bench twenty minutes to make before it lists them)."""
import threading
import urllib.parse

from moto.core.exceptions import JsonRESTError
from moto.glue.models import GlueBackend
from moto.glue.responses import GlueResponse
from moto.server import DomainDispatcherApplication, main

_LOCK = threading.Lock()
_update_table = GlueBackend.update_table


class ConcurrentModificationException(JsonRESTError):
    code = 400

    def __init__(self, message: str):
        super().__init__("ConcurrentModificationException", message)


def update_table(self, database_name, table_name, table_input, version_id=None):
    with _LOCK:  # (the check and the update as one step, as Glue makes them)
        table = self.get_table(database_name, table_name)
        if version_id is not None and str(version_id) != str(table._current_version):
            raise ConcurrentModificationException(
                f"table {database_name}.{table_name} is at version {table._current_version}, not {version_id}")
        return _update_table(self, database_name, table_name, table_input)


def update_table_response(self):
    table_input = self._get_param("TableInput")
    self.glue_backend.update_table(self._get_param("DatabaseName"), table_input.get("Name"), table_input,
                                   self._get_param("VersionId"))
    return "{}"


def fill(environ, start_response):
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends
    query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
    bucket, prefix, count = query["bucket"][0], query["prefix"][0], int(query["count"][0])
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for k in range(count):
        backend.put_object(bucket, f"{prefix}{k % 100}/o{k}.bin", b"x", disable_notification=True)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [str(count).encode()]


_dispatch = DomainDispatcherApplication.__call__


def dispatch(self, environ, start_response):
    if environ.get("PATH_INFO") == "/_sparkberg/fill" and environ.get("REQUEST_METHOD") == "POST":
        return fill(environ, start_response)
    return _dispatch(self, environ, start_response)


GlueBackend.update_table = update_table
GlueResponse.update_table = update_table_response
DomainDispatcherApplication.__call__ = dispatch

if __name__ == "__main__":
    main()
