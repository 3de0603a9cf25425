"""DuckDB as the interop tests use it."""
import os

import pytest


def duckdb_with_httpfs():
    """DuckDB with the iceberg and httpfs extensions loaded (httpfs: REST catalogs and object stores), each from
    its PyPI wheel, as make interop installs them."""
    import glob

    import duckdb
    from reference import duckdb_with_iceberg
    con = duckdb_with_iceberg()
    site = os.path.dirname(os.path.dirname(duckdb.__file__))
    httpfs = glob.glob(os.path.join(site, "duckdb_extension_httpfs", "extensions", "*", "httpfs.duckdb_extension"))
    if not httpfs:
        pytest.fail("duckdb-extension-httpfs is not installed in the interop venv (make interop installs it)")
    con.execute(f"LOAD '{httpfs[0]}'")
    return con


def duckdb_on_rest(tmp_path_factory, name: str):
    """(DuckDB attached as ``w`` with a schema ``w.db``, the REST catalog it writes through, its warehouse
    directory): a REST catalog served by tests/restserver.py over a warehouse of its own, as DuckDB writes Iceberg
    only through one. The caller closes the catalog."""
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from restserver import RestServer
    warehouse = str(tmp_path_factory.mktemp(f"{name}-wh"))
    rest = RestServer(str(tmp_path_factory.mktemp(f"{name}-rest")), warehouse="file://" + warehouse)
    con = duckdb_with_httpfs()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"ATTACH 'wh' AS w (TYPE iceberg, ENDPOINT '{rest.uri}', AUTHORIZATION_TYPE 'none')")
    con.execute("CREATE SCHEMA w.db")
    return con, rest, warehouse
