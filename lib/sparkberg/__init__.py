"""sparkberg: Apache Iceberg tables from PySpark, with no Iceberg jar.

    import sparkberg
    cat = sparkberg.catalog(spark, "file:///data/warehouse")
    t = cat.create_table("db.events", "id bigint, ts timestamp", partition_by=["day(ts)"])
    t = sparkberg.load_table(spark, "/path/to/table")
"""
from sparkberg import zipimports as _zipimports

_zipimports.install_in_worker()

from sparkberg.errors import (  # noqa: F401, E402
    CommitFailed, CommitFailedException, InvalidIdentifierError, InvalidMetadataError, NoSuchNamespaceError,
    NoSuchTable, NoSuchTableError, NotSupportedError, SparkbergError, TableAlreadyExistsError,
    UnsupportedFormatVersionError, ValidationError,
)

__version__ = "0.1.0"
__all__ = ["Catalog", "Table", "catalog", "load_table", "CommitFailed", "CommitFailedException",
           "InvalidIdentifierError", "InvalidMetadataError", "NoSuchNamespaceError", "NoSuchTable",
           "NoSuchTableError", "NotSupportedError", "SparkbergError", "TableAlreadyExistsError",
           "UnsupportedFormatVersionError", "ValidationError"]
_FACADE = frozenset({"Catalog", "Table", "catalog", "load_table"})


def __getattr__(name: str):
    """The table facade's names (PEP 562)."""
    if name in _FACADE:
        # imported on first use, with the planner, the reader and the writers: every Spark Python worker imports
        # this package to unpickle a task that needs one module of it
        from sparkberg import table
        return getattr(table, name)
    raise AttributeError(f"module 'sparkberg' has no attribute {name!r}")
