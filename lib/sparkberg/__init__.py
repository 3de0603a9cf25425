"""sparkberg: Apache Iceberg tables from PySpark, with no Iceberg jar.

    import sparkberg
    cat = sparkberg.catalog(spark, "file:///data/warehouse")
    t = cat.create_table("db.events", "id bigint, ts timestamp", partition_by=["day(ts)"])
    t = sparkberg.load_table(spark, "/path/to/table")
"""
from sparkberg import zipimports as _zipimports

_zipimports.install_in_worker()

from sparkberg.errors import (  # noqa: F401, E402 - every error a user can meet, from one place
    AlreadyCommittedError, CatalogDatabaseError, CommitFailedException, CommitStateUnknownException,
    FileAlreadyExistsError, InvalidIdentifierError, InvalidMetadataError, MissingFileError, NamespaceAlreadyExistsError,
    NamespaceNotEmptyError, NoSuchNamespaceError, NoSuchTableError, NotAuthorizedError, NotSupportedError,
    NoSuchViewError, RestCatalogError, SparkbergError, SqlSyntaxError, StatementFailedError, StorageError,
    TableAlreadyExistsError, TableUUIDMismatchError, UnsupportedFormatVersionError, ValidationError,
    ViewAlreadyExistsError, WorkerEnvironmentError,
)

__version__ = "0.1.0"

if _zipimports.in_pyspark_worker():
    # A PySpark worker imports this package to unpickle the function of one of sparkberg's Python stages, which
    # needs none of the table API: the table and catalog modules, and all they import, would be most of the imports
    # of each new worker process; there they are imported on first use (``__getattr__``). Elsewhere they are
    # imported here, so that ``sparkberg.catalog`` is the function, not the subpackage that importing
    # ``sparkberg.catalog.*`` would bind; so is the SQL layer above them (:mod:`sparkberg.sql`).
    def __getattr__(name: str):
        """``Catalog``, ``Table``, ``WriteOutcome``, ``catalog`` and ``load_table`` from :mod:`sparkberg.table`, imported on first use."""
        if name in ("Catalog", "Table", "WriteOutcome", "catalog", "load_table"):
            from sparkberg import sql as _, table  # (the put-off import; the SQL layer comes with the table API)
            value = getattr(table, name)
            globals()[name] = value
            return value
        raise AttributeError(f"module 'sparkberg' has no attribute {name!r}")
else:
    from sparkberg.table import Catalog, Table, WriteOutcome, catalog, load_table  # noqa: F401
    import sparkberg.sql  # noqa: F401, E402 - the SQL layer gives the table API its views (sparkberg.table.SqlLayer)


def load_ipython_extension(ipython) -> None:
    """``%load_ext sparkberg``: the ``%%sparkberg`` cell magic (:mod:`sparkberg.sql.magic`)."""
    from sparkberg.sql.magic import load_ipython_extension as load  # (IPython only: not for every import)
    load(ipython)
