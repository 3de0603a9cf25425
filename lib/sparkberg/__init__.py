"""sparkberg: Apache Iceberg tables from PySpark, with no Iceberg jar.

    import sparkberg
    cat = sparkberg.catalog(spark, "file:///data/warehouse")
    t = cat.create_table("db.events", "id bigint, ts timestamp", partition_by=["day(ts)"])
    t = sparkberg.load_table(spark, "/path/to/table")
"""
from sparkberg import zipimports as _zipimports

_zipimports.install_in_worker()

from sparkberg.errors import (  # noqa: F401, E402
    CommitFailed, CommitFailedException, CommitStateUnknownException, InvalidIdentifierError, InvalidMetadataError,
    NoSuchNamespaceError, NoSuchTable, NoSuchTableError, NotSupportedError, SparkbergError, TableAlreadyExistsError,
    TableUUIDMismatchError, UnsupportedFormatVersionError, ValidationError,
)
from sparkberg.table import Catalog, Table, catalog, load_table  # noqa: F401, E402

__version__ = "0.1.0"
