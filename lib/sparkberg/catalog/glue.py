"""The AWS Glue Data Catalog as an Iceberg catalog, as Iceberg Java's ``GlueCatalog`` and PyIceberg's keep it.

A namespace is a Glue database (one level); a table is a Glue table whose parameters name its current metadata
file: ``table_type`` ``ICEBERG``, ``metadata_location``, ``previous_metadata_location``; its storage descriptor
holds its location and its current schema's columns as Glue shows them to Athena (Hive type names, with each
column's Iceberg field id, optionality and docs). A commit writes the next metadata file
(``<location>/metadata/<version>-<uuid>.metadata.json``), then updates the Glue table with the ``VersionId`` it
read, which Glue refuses once another writer updated the table (``ConcurrentModificationException``): a lost race,
retried as any catalog's (``commit.retry.*``), so writers from sparkberg, Iceberg Java and PyIceberg lose nothing.

Properties (Iceberg's names): ``warehouse`` (new tables go to ``<warehouse>/<database>.db/<table>`` unless their
database has a location), ``glue.region`` (else ``client.region``), ``glue.endpoint``, ``glue.id`` (the catalog's
account), ``glue.skip-archive`` (default true: Glue keeps no copy of each version), credentials
``glue.access-key-id``, ``glue.secret-access-key``, ``glue.session-token`` (else ``client.*`` of the same names,
else AWS's default chain); and the FileIO's (``s3.*``...). Needs boto3 (the ``aws`` extra).
"""
from __future__ import annotations

from typing import Any, Iterator, Sequence

from sparkberg import redact
from sparkberg.catalog.base import (
    Identifier, parse_identifier, parse_namespace, read_metadata, with_metadata_log, delete_dropped,
    write_metastore_metadata, metastore_version,
)
from sparkberg.catalog.metastore import Column, HivePartition, HiveTable, MetastoreCatalog
from sparkberg.catalog.purge import referenced_files
from sparkberg.commit.pending import PendingCommit
from sparkberg.errors import (
    CatalogDatabaseError, CommitFailedException, CommitStateUnknownException, NamespaceAlreadyExistsError,
    NamespaceNotEmptyError, NoSuchNamespaceError, NoSuchTableError, NotAuthorizedError, NotSupportedError,
    TableAlreadyExistsError, ValidationError,
)
from sparkberg.io.fileio import FileIO
from sparkberg.format import types as T
from sparkberg.format.metadata import TableMetadata

ICEBERG = "ICEBERG"
TABLE_TYPE = "table_type"
METADATA_LOCATION = "metadata_location"
PREVIOUS_METADATA_LOCATION = "previous_metadata_location"
# the database parameter and the namespace property a database's location goes by
LOCATION = "location"
CONNECT_TIMEOUT_S = 5
READ_TIMEOUT_S = 60
# the most partitions one BatchCreatePartition takes
GLUE_PARTITION_BATCH = 100


def hive_type(t: T.IcebergType) -> str:
    """An Iceberg type as a Glue (Hive) column type, as Iceberg Java's ``IcebergToGlueConverter`` names it."""
    if isinstance(t, T.StructType):
        return "struct<" + ",".join(f"{f.name}:{hive_type(f.field_type)}" for f in t.fields) + ">"
    if isinstance(t, T.ListType):
        return f"array<{hive_type(t.element_type)}>"
    if isinstance(t, T.MapType):
        return f"map<{hive_type(t.key_type)},{hive_type(t.value_type)}>"
    if isinstance(t, T.DecimalType):
        return f"decimal({t.precision},{t.scale})"
    name = str(t)
    return {"boolean": "boolean", "int": "int", "long": "bigint", "float": "float", "double": "double",
            "date": "date", "time": "string", "timestamp": "timestamp", "timestamptz": "timestamp",
            "timestamp_ns": "timestamp", "timestamptz_ns": "timestamp", "string": "string", "uuid": "string",
            "binary": "binary"}.get(name, "binary" if name.startswith("fixed") else "string")


def glue_columns(metadata: TableMetadata) -> list[dict[str, Any]]:
    """The current schema's columns as a Glue storage descriptor lists them."""
    out = []
    for f in metadata.current_schema.fields:
        column = {"Name": f.name, "Type": hive_type(f.field_type),
                  "Parameters": {"iceberg.field.id": str(f.field_id),
                                 "iceberg.field.optional": str(not f.required).lower(),
                                 "iceberg.field.current": "true"}}
        if f.doc:
            column["Comment"] = f.doc
        out.append(column)
    return out


class GlueCatalog(MetastoreCatalog):
    """A catalog kept in AWS Glue (see the module docstring)."""

    kind = "Glue"

    def __init__(self, name: str, warehouse: str | None, io: FileIO, properties: dict[str, str] | None = None):
        props = dict(properties or {})
        self.name = name
        self.warehouse = warehouse.rstrip("/") if warehouse else None
        self.io = io
        self._catalog_id = props.get("glue.id")
        self._skip_archive = str(props.get("glue.skip-archive", "true")).lower() == "true"
        self._client = _client(props)
        self._errors = self._client.exceptions

    def __repr__(self) -> str:
        return f"GlueCatalog({self.name!r})"

    # --- calls ----------------------------------------------------------------------------------------
    def _call(self, operation: str, **kwargs) -> dict:
        """One Glue call (with the catalog's account id); AWS's refusals as sparkberg's errors."""
        if self._catalog_id:
            kwargs["CatalogId"] = self._catalog_id
        try:
            return getattr(self._client, operation)(**kwargs)
        except self._errors.EntityNotFoundException as e:
            raise _NotFound(str(e)) from None
        except self._errors.AlreadyExistsException as e:
            raise _Exists(str(e)) from None
        except self._errors.ConcurrentModificationException as e:
            raise CommitFailedException(f"Glue table changed: {e}") from None
        except self._errors.AccessDeniedException as e:
            raise NotAuthorizedError(redact.text(f"Glue refused {operation}: {e}")) from None
        except Exception as e:  # noqa: BLE001 - botocore's connection and client errors, named
            if type(e).__name__ == "ClientError" and "ConcurrentModification" in str(e):
                raise CommitFailedException(f"Glue table changed: {e}") from None
            if type(e).__name__ in ("ClientError",) and any(
                    w in str(e) for w in ("UnrecognizedClient", "InvalidSignature", "AccessDenied",
                                          "ExpiredToken", "SignatureDoesNotMatch")):
                raise NotAuthorizedError(redact.text(f"Glue refused {operation}: {e}")) from None
            raise CatalogDatabaseError(redact.text(f"Glue catalog {self.name}: {operation} failed: {e}")) from None

    # --- namespaces -----------------------------------------------------------------------------------
    def create_namespace(self, namespace, properties: dict[str, str] | None = None) -> None:
        props = {k: str(v) for k, v in (properties or {}).items()}
        database: dict[str, Any] = {"Name": self._database(namespace), "Parameters": props}
        if LOCATION in props:
            database["LocationUri"] = props[LOCATION]
        if "comment" in props:
            database["Description"] = props["comment"]
        try:
            self._call("create_database", DatabaseInput=database)
        except _Exists:
            raise NamespaceAlreadyExistsError(f"namespace {database['Name']} already exists") from None

    def _get_database(self, namespace) -> dict:
        name = self._database(namespace)
        try:
            return self._call("get_database", Name=name)["Database"]
        except _NotFound:
            raise NoSuchNamespaceError(f"namespace {name} does not exist") from None

    def list_namespaces(self, parent=()) -> list[tuple[str, ...]]:
        if parent and parse_namespace(parent):
            self._get_database(parent)
            return []  # (Glue's databases have no children)
        return sorted((d["Name"],) for page in self._pages("get_databases") for d in page["DatabaseList"])

    def _pages(self, operation: str, **kwargs) -> Iterator[dict]:
        token = None
        while True:
            page = self._call(operation, **kwargs, **({"NextToken": token} if token else {}))
            yield page
            token = page.get("NextToken")
            if not token:
                return

    def load_namespace_properties(self, namespace) -> dict[str, str]:
        database = self._get_database(namespace)
        props = dict(database.get("Parameters") or {})
        if database.get("LocationUri"):
            props[LOCATION] = database["LocationUri"]
        if database.get("Description"):
            props["comment"] = database["Description"]
        return props

    def update_namespace_properties(self, namespace, updates: dict[str, str] | None = None,
                                    removals: Sequence[str] = ()) -> None:
        """Set ``updates`` and remove ``removals`` (one Glue update)."""
        props = self._updated_properties(namespace, updates, removals)
        name = self._database(namespace)
        database: dict[str, Any] = {"Name": name, "Parameters": {k: v for k, v in props.items()
                                                                 if k not in (LOCATION, "comment")}}
        if LOCATION in props:
            database["LocationUri"] = props[LOCATION]
        if "comment" in props:
            database["Description"] = props["comment"]
        self._call("update_database", Name=name, DatabaseInput=database)

    def drop_namespace(self, namespace) -> None:
        name = self._database(namespace)
        self._get_database(name)
        if self.list_tables(name):
            raise NamespaceNotEmptyError(f"namespace {name} is not empty")
        self._call("delete_database", Name=name)

    # --- tables ---------------------------------------------------------------------------------------
    def _glue_tables(self, database: str) -> Iterator[dict]:
        for page in self._pages("get_tables", DatabaseName=database):
            yield from page["TableList"]

    def list_tables(self, namespace) -> list[Identifier]:
        name = self._database(namespace)
        self._get_database(name)
        return [Identifier((name,), n) for n in sorted(t["Name"] for t in self._glue_tables(name) if _is_iceberg(t))]

    def _get_table(self, ident: Identifier) -> dict:
        try:
            table = self._call("get_table", DatabaseName=self._database(ident.namespace), Name=ident.name)["Table"]
        except _NotFound:
            raise NoSuchTableError(f"table {ident} does not exist in catalog {self.name}") from None
        if not _is_iceberg(table):
            raise NoSuchTableError(f"Glue table {ident} is not an Iceberg table (table_type "
                                   f"{(table.get('Parameters') or {}).get(TABLE_TYPE)!r})")
        return table

    @staticmethod
    def _database_location(database: dict) -> str | None:
        """The database's own location (None when it has none)."""
        return database.get("LocationUri") or None

    def load(self, identifier) -> tuple[Identifier, str, TableMetadata]:
        """(identifier, metadata location, metadata) of the table's current version."""
        ident = parse_identifier(identifier)
        location = self._get_table(ident)["Parameters"][METADATA_LOCATION]
        return ident, location, read_metadata(self.io, location)

    def _table_input(self, ident: Identifier, metadata: TableMetadata, location: str, previous: str | None,
                     parameters: dict[str, str] | None = None) -> dict[str, Any]:
        params = {**(parameters or {}), TABLE_TYPE: ICEBERG, METADATA_LOCATION: location}
        if previous is not None:
            params[PREVIOUS_METADATA_LOCATION] = previous
        else:
            params.pop(PREVIOUS_METADATA_LOCATION, None)
        out: dict[str, Any] = {"Name": ident.name, "TableType": "EXTERNAL_TABLE", "Parameters": params,
                               "StorageDescriptor": {"Location": metadata.location,
                                                     "Columns": glue_columns(metadata)}}
        if metadata.properties.get("comment"):
            out["Description"] = metadata.properties["comment"]
        return out

    def create(self, identifier, metadata: TableMetadata) -> tuple[Identifier, str, TableMetadata]:
        """Write the first metadata file of a new table and create its Glue table; fails if the table exists
        (the file is then deleted)."""
        ident = parse_identifier(identifier)
        database = self._database(ident.namespace)
        self._get_database(database)
        location = write_metastore_metadata(self.io, metadata, 0)
        try:
            self._call("create_table", DatabaseName=database,
                       TableInput=self._table_input(ident, metadata, location, None))
        except _Exists:
            self.io.delete(location)
            raise TableAlreadyExistsError(f"table {ident} already exists") from None
        except BaseException:
            self.io.delete(location)
            raise
        return ident, location, metadata

    def register(self, identifier, metadata_location: str) -> tuple[Identifier, str, TableMetadata]:
        """Add a table whose metadata file exists already (written by any engine)."""
        ident = parse_identifier(identifier)
        metadata = read_metadata(self.io, metadata_location)
        try:
            self._call("create_table", DatabaseName=self._database(ident.namespace),
                       TableInput=self._table_input(ident, metadata, metadata_location, None))
        except _Exists:
            raise TableAlreadyExistsError(f"table {ident} already exists") from None
        return ident, metadata_location, metadata

    def commit(self, identifier, base_location: str, pending: PendingCommit) -> tuple[str, TableMetadata]:
        """Swap in ``pending``'s metadata as the version after ``base_location``: the Glue table is updated only if
        it still names ``base_location`` and no other update came between (its ``VersionId``)."""
        ident = parse_identifier(identifier)
        table = self._get_table(ident)
        current = table["Parameters"].get(METADATA_LOCATION)
        if current != base_location:
            raise CommitFailedException(f"table {ident} changed: based on {base_location}, current is {current}")
        new, dropped = with_metadata_log(pending.base, base_location, pending.metadata)
        location = write_metastore_metadata(self.io, new, metastore_version(base_location) + 1)
        update = {"DatabaseName": self._database(ident.namespace), "SkipArchive": self._skip_archive,
                  "TableInput": self._table_input(ident, new, location, base_location, table.get("Parameters")),
                  "VersionId": table.get("VersionId")}
        if update["VersionId"] is None:
            update.pop("VersionId")
        try:
            self._call("update_table", **update)
        except CommitFailedException:
            self.io.delete(location)
            raise
        except CatalogDatabaseError as e:  # (the request may have landed: the table tells)
            try:
                landed = self._get_table(ident)["Parameters"].get(METADATA_LOCATION) == location
            except Exception:  # noqa: BLE001 - Glue unreachable still: unknown
                raise CommitStateUnknownException(f"commit of table {ident} may or may not have landed ({e}); its "
                                                  f"new metadata file {location} is kept") from None
            if not landed:
                self.io.delete(location)
                raise CommitFailedException(f"commit of table {ident} failed: {e}") from None
        delete_dropped(self.io, new, dropped)
        return location, new

    def rename(self, source, target) -> None:
        """Rename a table: Glue has none, so (as Iceberg Java does) the table is created under the new name and
        the old one deleted; its files stay where they are."""
        src, dst = parse_identifier(source), parse_identifier(target)
        table = self._get_table(src)
        self._get_database(dst.namespace)
        location = table["Parameters"][METADATA_LOCATION]
        metadata = read_metadata(self.io, location)
        try:
            self._call("create_table", DatabaseName=self._database(dst.namespace),
                       TableInput=self._table_input(dst, metadata, location,
                                                    table["Parameters"].get(PREVIOUS_METADATA_LOCATION),
                                                    table.get("Parameters")))
        except _Exists:
            raise TableAlreadyExistsError(f"table {dst} already exists") from None
        try:
            self._call("delete_table", DatabaseName=self._database(src.namespace), Name=src.name)
        except BaseException:
            self._call("delete_table", DatabaseName=self._database(dst.namespace), Name=dst.name)
            raise

    # --- plain Glue tables (what migrate, snapshot and add_files import) ---------------------------------
    def _plain_table(self, ident: Identifier) -> dict:
        try:
            table = self._call("get_table", DatabaseName=self._database(ident.namespace), Name=ident.name)["Table"]
        except _NotFound:
            raise NoSuchTableError(f"table {ident} does not exist in catalog {self.name}") from None
        if _is_iceberg(table):
            raise ValidationError(f"table {ident} is an Iceberg table already")
        if str(table.get("TableType") or "").upper() == "VIRTUAL_VIEW":
            raise ValidationError(f"{ident} is a view, not a table")
        return table

    def hive_table(self, identifier) -> HiveTable:
        """The plain (not Iceberg) Glue table ``identifier`` names; a named error for an Iceberg table or a view."""
        ident = parse_identifier(identifier)
        table = self._plain_table(ident)
        sd = table.get("StorageDescriptor") or {}
        params = dict(table.get("Parameters") or {})
        storage = " ".join(str(x) for x in (sd.get("InputFormat"), (sd.get("SerdeInfo") or {}).get(
            "SerializationLibrary"), params.get("spark.sql.sources.provider"), params.get("classification")) if x)
        if table.get("Description") and "comment" not in params:
            params["comment"] = table["Description"]
        return HiveTable(ident, tuple(_columns(sd.get("Columns"))), tuple(_columns(table.get("PartitionKeys"))),
                         sd.get("Location") or "", storage.lower(), params,
                         str(table.get("TableType") or "").upper() == "MANAGED_TABLE")

    def _glue_partitions(self, ident: Identifier) -> Iterator[dict]:
        for page in self._pages("get_partitions", DatabaseName=self._database(ident.namespace),
                                TableName=ident.name):
            yield from page["Partitions"]

    def hive_partitions(self, identifier) -> list[HivePartition]:
        """Every partition of the plain Glue table ``identifier``: its values and its location."""
        ident = parse_identifier(identifier)
        keys = [c["Name"] for c in self._plain_table(ident).get("PartitionKeys") or []]
        return [HivePartition(dict(zip(keys, p.get("Values") or [])),
                              (p.get("StorageDescriptor") or {}).get("Location") or "")
                for p in self._glue_partitions(ident)]

    def move_hive_table(self, source, target, external: bool) -> None:
        """Rename the plain Glue table ``source`` (with its partitions) to ``target``, its files left where they
        are, as an external or a managed table: Glue has no rename, so the table and its partitions are created
        under the new name and the old one deleted (Glue never deletes a table's files)."""
        src, dst = parse_identifier(source), parse_identifier(target)
        table = self._plain_table(src)
        database = self._database(dst.namespace)
        self._get_database(database)
        keep = ("Description", "Owner", "Retention", "StorageDescriptor", "PartitionKeys", "Parameters")
        table_input = {k: table[k] for k in keep if k in table}
        table_input.update(Name=dst.name, TableType="EXTERNAL_TABLE" if external else "MANAGED_TABLE")
        try:
            self._call("create_table", DatabaseName=database, TableInput=table_input)
        except _Exists:
            raise TableAlreadyExistsError(f"table {dst} already exists") from None
        try:
            parts = [{k: p[k] for k in ("Values", "StorageDescriptor", "Parameters") if k in p}
                     for p in self._glue_partitions(src)]
            for i in range(0, len(parts), GLUE_PARTITION_BATCH):
                out = self._call("batch_create_partition", DatabaseName=database, TableName=dst.name,
                                 PartitionInputList=parts[i:i + GLUE_PARTITION_BATCH])
                if out.get("Errors"):
                    raise CatalogDatabaseError(f"Glue catalog {self.name}: cannot copy the partitions of {src} to "
                                               f"{dst}: {out['Errors'][0]}")
            self._call("delete_table", DatabaseName=self._database(src.namespace), Name=src.name)
        except BaseException:
            self._call("delete_table", DatabaseName=database, Name=dst.name)
            raise

    def drop_hive_table(self, identifier) -> None:
        """Delete the plain Glue table ``identifier`` (Glue never deletes its files)."""
        ident = parse_identifier(identifier)
        self._plain_table(ident)
        self._call("delete_table", DatabaseName=self._database(ident.namespace), Name=ident.name)

    def drop(self, identifier, purge: bool = False) -> None:
        """Delete the Glue table; with ``purge`` also every file its metadata references."""
        ident, location, metadata = self.load(identifier)
        try:
            self._call("delete_table", DatabaseName=self._database(ident.namespace), Name=ident.name)
        except _NotFound:
            raise NoSuchTableError(f"table {ident} does not exist in catalog {self.name}") from None
        if purge:
            for f in referenced_files(self.io, metadata):
                self.io.delete(f)
            self.io.delete(location)


def _columns(columns: list | None) -> list[Column]:
    return [Column(c["Name"], c.get("Type") or "", c.get("Comment")) for c in columns or []]


class _NotFound(Exception):
    pass


class _Exists(Exception):
    pass


def _is_iceberg(table: dict) -> bool:
    return str((table.get("Parameters") or {}).get(TABLE_TYPE, "")).upper() == ICEBERG


def _client(props: dict[str, str]):
    """Glue's client from the properties (credentials, region, endpoint), timing out within seconds."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise NotSupportedError("the Glue catalog needs boto3: pip install 'sparkberg[aws]'") from None

    def prop(name: str) -> str | None:
        return props.get(f"glue.{name}") or props.get(f"client.{name}")
    region = prop("region")
    if not region:
        raise ValidationError("the Glue catalog needs a region: glue.region or client.region")
    session = boto3.session.Session(aws_access_key_id=prop("access-key-id"),
                                    aws_secret_access_key=prop("secret-access-key"),
                                    aws_session_token=prop("session-token"), region_name=region)
    return session.client("glue", endpoint_url=props.get("glue.endpoint"),
                          config=Config(connect_timeout=CONNECT_TIMEOUT_S, read_timeout=READ_TIMEOUT_S,
                                        retries={"max_attempts": 3, "mode": "standard"}))
