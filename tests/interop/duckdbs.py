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
