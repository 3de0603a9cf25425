"""Which catalog a ``sparkberg.catalog(...)`` call opens: from its URI, or by name from the Spark conf keys
Iceberg's ``SparkCatalog`` reads (``spark.sql.catalog.<name>.*``), so one ``spark-defaults.conf`` configures
both.

- a warehouse location (``file:///data/wh``, a local path, ``s3://...``, ``hdfs://...``): the file-system
  catalog (``type`` ``hadoop``);
- ``sqlite:///path``, ``jdbc:sqlite:path``, ``postgresql://...``, ``jdbc:postgresql://...``: the SQL catalog
  (``type`` ``jdbc``), with ``warehouse`` for new tables and ``name`` stored as ``catalog_name``;
- ``http://...``, ``https://...`` (or ``type="rest"``): an Iceberg REST catalog, with ``token``, ``credential``,
  ``oauth2-server-uri``, ``scope`` and ``header.*`` in ``properties``;
- ``type="glue"``: AWS Glue (:mod:`sparkberg.catalog.glue`), with ``warehouse`` and ``glue.*`` properties;
- ``thrift://host:port`` (or ``type="hive"``): a Hive Metastore (:mod:`sparkberg.catalog.hive`), with
  ``warehouse``;
- a name with ``spark.sql.catalog.<name>.type`` (``hadoop``, ``jdbc``, ``rest``, ``glue``, ``hive``; or Iceberg Java's
  ``.catalog-impl`` class), ``.uri``, ``.warehouse``,
  ``.jdbc.user``, ``.jdbc.password``, ``.token``, ``.credential``, ``.header.*`` ... in the Spark conf.
"""
from __future__ import annotations

import os
from typing import Any

from sparkberg.catalog.filesystem import FileSystemCatalog
from sparkberg.catalog.sql import SqlCatalog, database_for
from sparkberg import redact
from sparkberg.errors import ValidationError
from sparkberg.io.fileio import file_io_for, normalize_location
from sparkberg.spark.jvm import session_conf_entries_35

SQL_SCHEMES = ("sqlite:", "jdbc:sqlite:", "postgresql:", "postgres:", "jdbc:postgresql:")
CONF_PREFIX = "spark.sql.catalog."
# the catalog types, as Iceberg's Spark conf names them (``sql``: PyIceberg's name of ``jdbc``)
CATALOG_TYPES = ("hadoop", "jdbc", "sql", "rest", "glue", "hive")
# Iceberg Java's catalog classes (``spark.sql.catalog.<name>.catalog-impl``), by the type each is
CATALOG_IMPLS = {"org.apache.iceberg.hadoop.HadoopCatalog": "hadoop", "org.apache.iceberg.jdbc.JdbcCatalog": "jdbc",
                 "org.apache.iceberg.rest.RESTCatalog": "rest", "org.apache.iceberg.aws.glue.GlueCatalog": "glue",
                 "org.apache.iceberg.hive.HiveCatalog": "hive"}
DEFAULT_NAME = "default"


def conf_properties(spark: Any, name: str) -> dict[str, str]:
    """The ``spark.sql.catalog.<name>.*`` keys of the session's conf, without the prefix ({} when none): what the
    session holds now, keys set at runtime with ``spark.conf.set`` included, on every supported PySpark."""
    prefix = f"{CONF_PREFIX}{name}."
    return {k[len(prefix):]: v for k, v in _session_conf_pairs(spark, prefix) if k.startswith(prefix)}


def _session_conf_pairs(spark: Any, prefix: str) -> list[tuple[str, str]]:
    """The session's conf entries (at least those under ``prefix``)."""
    get_all = getattr(type(spark.conf), "getAll", None)
    if get_all is not None:  # PySpark 4: the session's SQL conf, classic and Connect
        return list(spark.conf.getAll.items())
    return session_conf_entries_35(spark, prefix)


def open_backend(spark: Any, uri: str, warehouse: str | None = None, name: str | None = None,
                 type: str | None = None, properties: dict[str, str] | None = None):
    """(backend, what to call the catalog, the arguments that open it again without a session) for
    :func:`sparkberg.catalog`'s arguments."""
    props = dict(properties or {})
    type = type or props.get("type") or _impl_type(props)  # (the properties' type is the catalog's, as in Spark's conf)
    from_conf = conf_properties(spark, uri) if spark is not None and name is None and is_catalog_name(uri) else {}
    if from_conf or (name is None and is_catalog_name(uri) and not os.path.isdir(uri)):
        # a name, not a location: the catalog the Spark conf configures under it, or one the properties describe
        # (a bare word that is neither, nor a directory here, is an error, not a new warehouse)
        if not from_conf and type is None:
            raise ValidationError(
                f"no catalog named {uri!r}: the Spark conf has no spark.sql.catalog.{uri}.* keys, and no catalog type "
                f"was given (type=..., or properties={{'type': ...}}); for a file-system warehouse give its location "
                f"(./{uri}, /data/{uri}, file:///data/{uri})")
        name, props = uri, {**from_conf, **props}
        conf_uri = str(props.get("uri", ""))
        type = type or _impl_type(props) or props.get("type", "jdbc" if conf_uri.startswith(SQL_SCHEMES) else
                                 "rest" if conf_uri.startswith(("http:", "https:")) else
                                 "hive" if conf_uri.startswith("thrift:") else "hadoop")
        uri = props.get("uri") or props.get("warehouse") or ""
        warehouse = warehouse or props.get("warehouse")
    kind = (type or ("jdbc" if uri.startswith(SQL_SCHEMES) else "rest" if uri.startswith(("http:", "https:"))
                     else "hive" if uri.startswith("thrift:") else "hadoop")).lower()
    if kind not in CATALOG_TYPES:
        raise ValidationError(f"unknown catalog type {kind!r}: sparkberg opens {', '.join(CATALOG_TYPES)} catalogs")
    if kind == "hadoop":
        if not (warehouse or uri or "").strip():  # (an empty location would open the working directory)
            raise ValidationError("warehouse location cannot be empty: give the catalog a location, a database or "
                                  "REST URI, or the name of a catalog configured in the Spark conf")
        location = normalize_location(warehouse or uri)
        # (a name, when it was opened by one from the Spark conf: the name SQL statements qualify tables with)
        config = {"type": "hadoop", "uri": location, **({"name": name} if name else {}),
                  **({"properties": props} if props else {})}
        return FileSystemCatalog(location, file_io_for(location, props)), location, config
    if kind in ("jdbc", "sql"):
        # (no warehouse: enough to read, list and commit to the catalog's tables; creating one names what is missing)
        db = database_for(uri, props)
        location = normalize_location(warehouse) if warehouse else None
        io = file_io_for(location, props)
        config = {"type": "jdbc", "uri": db.uri, "warehouse": location, "name": name or DEFAULT_NAME,
                  "properties": props}
        return SqlCatalog(name or DEFAULT_NAME, db, location, io), f"{name or DEFAULT_NAME} ({redact.uri(uri)})", \
            config
    if kind == "glue":
        from sparkberg.catalog.glue import GlueCatalog  # (boto3: only where a Glue catalog is opened)
        where = warehouse or (uri if "://" in uri else None)  # (a location given as the URI is the warehouse)
        location = normalize_location(where) if where else None
        catalog = GlueCatalog(name or DEFAULT_NAME, location, file_io_for(location, props), props)
        config = {"type": "glue", "uri": uri, "warehouse": location, "name": name or DEFAULT_NAME,
                  "properties": props}
        return catalog, f"{name or DEFAULT_NAME} (Glue)", config
    if kind == "hive":
        from sparkberg.catalog.hive import HiveCatalog  # (only where a metastore is opened)
        location = normalize_location(warehouse) if warehouse else None
        catalog = HiveCatalog(name or DEFAULT_NAME, uri, location, file_io_for(location, props), props)
        config = {"type": "hive", "uri": uri, "warehouse": location, "name": name or DEFAULT_NAME,
                  "properties": props}
        return catalog, f"{name or DEFAULT_NAME} (Hive Metastore {uri})", config
    if kind == "rest":
        # (imported here, not with this module: its HTTP client, requests, is about two fifths of the time
        # `import sparkberg` takes, which every process that opens no REST catalog need not pay)
        from sparkberg.catalog.rest import RestCatalog
        catalog = RestCatalog(uri, name or DEFAULT_NAME, warehouse, props)
        config = {"type": "rest", "uri": uri, "warehouse": warehouse, "name": name or DEFAULT_NAME,
                  "properties": props}
        return catalog, f"{name or DEFAULT_NAME} ({catalog.uri})", config
    raise ValidationError(f"unknown catalog type {kind!r}: sparkberg opens {', '.join(CATALOG_TYPES)} catalogs")


def _impl_type(props: dict[str, Any]) -> str | None:
    """The type of the Iceberg Java class ``catalog-impl`` names; an unknown class is a named error."""
    impl = props.get("catalog-impl")
    if impl is None:
        return None
    if impl not in CATALOG_IMPLS:
        raise ValidationError(f"catalog-impl {impl!r}: sparkberg opens {', '.join(sorted(CATALOG_IMPLS))}")
    return CATALOG_IMPLS[impl]


def is_catalog_name(uri: str) -> bool:
    """Whether ``uri`` could be a catalog name (no scheme, no path)."""
    return bool(uri) and ":" not in uri and "/" not in uri and "\\" not in uri and "." not in uri
