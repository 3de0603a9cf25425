"""Which catalog a ``sparkberg.catalog(...)`` call opens: from its URI, or by name from the Spark conf keys
Iceberg's ``SparkCatalog`` reads (``spark.sql.catalog.<name>.*``), so one ``spark-defaults.conf`` configures
both.

- a warehouse location (``file:///data/wh``, a local path, ``s3://...``, ``hdfs://...``): the file-system
  catalog (``type`` ``hadoop``);
- ``sqlite:///path``, ``jdbc:sqlite:path``, ``postgresql://...``, ``jdbc:postgresql://...``: the SQL catalog
  (``type`` ``jdbc``), with ``warehouse`` for new tables and ``name`` stored as ``catalog_name``;
- ``http://...``, ``https://...`` (or ``type="rest"``): an Iceberg REST catalog, with ``token``, ``credential``,
  ``oauth2-server-uri``, ``scope`` and ``header.*`` in ``properties``;
- a name with ``spark.sql.catalog.<name>.type`` (``hadoop``, ``jdbc``, ``rest``), ``.uri``, ``.warehouse``,
  ``.jdbc.user``, ``.jdbc.password``, ``.token``, ``.credential``, ``.header.*`` ... in the Spark conf.
"""
from __future__ import annotations

from typing import Any

from sparkberg.catalog.filesystem import FileSystemCatalog
from sparkberg.catalog.sql import SqlCatalog, database_for
from sparkberg import redact
from sparkberg.errors import ValidationError
from sparkberg.io.fileio import normalize_location

SQL_SCHEMES = ("sqlite:", "jdbc:sqlite:", "postgresql:", "postgres:", "jdbc:postgresql:")
CONF_PREFIX = "spark.sql.catalog."
DEFAULT_NAME = "default"


def conf_properties(spark: Any, name: str) -> dict[str, str]:
    """The ``spark.sql.catalog.<name>.*`` keys of the session's conf, without the prefix ({} when none)."""
    prefix = f"{CONF_PREFIX}{name}."
    pairs: list[tuple[str, str]] = []
    try:
        pairs = list(spark.conf.getAll.items())  # (PySpark 4: the session's SQL conf)
    except Exception:  # noqa: BLE001 - older sessions: the context's conf
        try:
            pairs = list(spark.sparkContext.getConf().getAll())
        except Exception:  # noqa: BLE001 - no conf to list (Spark Connect 3.5): the keys one by one
            for key in ("type", "uri", "warehouse", "jdbc.user", "jdbc.password", "token", "credential",
                        "oauth2-server-uri", "scope"):
                try:
                    value = spark.conf.get(prefix + key, None)
                except Exception:  # noqa: BLE001
                    value = None
                if value is not None:
                    pairs.append((prefix + key, value))
    return {k[len(prefix):]: v for k, v in pairs if k.startswith(prefix)}


def open_backend(spark: Any, uri: str, warehouse: str | None = None, name: str | None = None,
                 type: str | None = None, properties: dict[str, str] | None = None):
    """(backend, what to call the catalog, the arguments that open it again without a session) for
    :func:`sparkberg.catalog`'s arguments."""
    props = dict(properties or {})
    if spark is not None and name is None and type is None and is_catalog_name(uri):
        from_conf = conf_properties(spark, uri)
        if from_conf:
            name, props = uri, {**from_conf, **props}
            conf_uri = str(props.get("uri", ""))
            type = props.get("type", "jdbc" if conf_uri.startswith(SQL_SCHEMES) else
                             "rest" if conf_uri.startswith(("http:", "https:")) else "hadoop")
            uri = props.get("uri") or props.get("warehouse") or ""
            warehouse = warehouse or props.get("warehouse")
    kind = type or ("jdbc" if uri.startswith(SQL_SCHEMES) else "rest" if uri.startswith(("http:", "https:"))
                    else "hadoop")
    if kind == "hadoop":
        if not (warehouse or uri or "").strip():  # (an empty location would open the working directory)
            raise ValidationError("warehouse location cannot be empty: give the catalog a location, a database or "
                                  "REST URI, or the name of a catalog configured in the Spark conf")
        location = normalize_location(warehouse or uri)
        # (a name, when it was opened by one from the Spark conf: the name SQL statements qualify tables with)
        config = {"type": "hadoop", "uri": location, **({"name": name} if name else {})}
        return FileSystemCatalog(location), location, config
    if kind in ("jdbc", "sql"):
        if not warehouse:
            raise ValidationError(f"the SQL catalog {uri!r} needs warehouse=... (where new tables go)")
        db = database_for(uri, props)
        location = normalize_location(warehouse)
        config = {"type": "jdbc", "uri": db.uri, "warehouse": location, "name": name or DEFAULT_NAME,
                  "properties": props}
        return SqlCatalog(name or DEFAULT_NAME, db, location), f"{name or DEFAULT_NAME} ({redact.uri(uri)})", config
    if kind == "rest":
        # (imported here, not with this module: its HTTP client, requests, is about two fifths of the time
        # `import sparkberg` takes, which every process that opens no REST catalog need not pay)
        from sparkberg.catalog.rest import RestCatalog
        catalog = RestCatalog(uri, name or DEFAULT_NAME, warehouse, props)
        config = {"type": "rest", "uri": uri, "warehouse": warehouse, "name": name or DEFAULT_NAME,
                  "properties": props}
        return catalog, f"{name or DEFAULT_NAME} ({catalog.uri})", config
    raise ValidationError(f"unknown catalog type {kind!r} (hadoop, jdbc, rest)")


def is_catalog_name(uri: str) -> bool:
    """Whether ``uri`` could be a catalog name (no scheme, no path)."""
    return bool(uri) and ":" not in uri and "/" not in uri and "\\" not in uri and "." not in uri
