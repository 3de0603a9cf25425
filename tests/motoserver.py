"""moto's server, with the one behaviour of AWS Glue that moto leaves out and that the Glue catalog's tests need:
``UpdateTable`` with a ``VersionId`` that is no longer the table's current version fails with
``ConcurrentModificationException`` (Glue's optimistic check, which Iceberg's Glue catalogs commit by). Run as
``python motoserver.py -H 127.0.0.1 -p PORT`` (moto.server's arguments)."""
import threading

from moto.core.exceptions import JsonRESTError
from moto.glue.models import GlueBackend
from moto.glue.responses import GlueResponse
from moto.server import main

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


GlueBackend.update_table = update_table
GlueResponse.update_table = update_table_response

if __name__ == "__main__":
    main()
