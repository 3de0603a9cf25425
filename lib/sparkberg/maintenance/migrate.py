"""Iceberg tables made of the plain Parquet tables of a Hive Metastore or of AWS Glue, as Iceberg Java's
``migrate`` and ``snapshot`` actions and its ``add_files`` from a catalog table make them: the table's files are
imported where they are (footers read for their metrics, partition values from the metastore's partitions), never
copied or rewritten.

- ``snapshot``: a new Iceberg table beside the source (its own location, by default the catalog's), with the
  source's schema, identity partitions on its partition columns and its parameters as properties, plus
  ``gc.enabled=false`` (its expiry and orphan removal must not delete files the source still owns) and
  ``snapshot=true``. The source table is not touched.
- ``migrate``: the source table becomes an Iceberg table of the same name in the same location (``migrated=true``).
  The source is kept under ``<name>_BACKUP_`` (or the name given) until the Iceberg table has committed, and put
  back if anything fails; with ``drop_backup`` it is then dropped from the metastore. Unlike Iceberg Java's, the
  backup is made an external table before it is renamed: the metastore moves the directory of a managed table it
  renames, and drops a managed table's files with it (apache/iceberg#2425, #8425), which would take the migrated
  table's files away; here the files stay where the Iceberg table names them and dropping the backup keeps them.

Only Parquet tables are imported (an ORC or Avro table is a named error), as ``add_files`` imports only Parquet.
"""
from __future__ import annotations

from typing import Any

from sparkberg.catalog.base import Identifier, parse_identifier
from sparkberg.errors import NotSupportedError, ValidationError

BACKUP_SUFFIX = "_BACKUP_"


def metastore(catalog: Any) -> Any:
    """The catalog's backend, which must keep plain tables (a Hive Metastore's or Glue's); a named error else."""
    backend = getattr(catalog, "_backend", None)
    if not hasattr(backend, "hive_table"):
        raise NotSupportedError(f"catalog {getattr(catalog, 'uri', None)} keeps no Hive tables: migrate, snapshot and add_files from a "
                                "catalog table import the plain tables of a Hive Metastore or AWS Glue catalog")
    return backend


def source_files(backend: Any, source: Any, partition_filter: dict[str, Any] | None = None
                 ) -> dict[str, dict[str, str] | None]:
    """The data files of the plain table ``source`` (a :class:`~sparkberg.catalog.metastore.HiveTable`), each with
    its partition's values as the metastore keeps them: the files directly in each partition's location (or the
    table's, unpartitioned), hidden and ``_``-prefixed names skipped as Hive skips them; only the partitions whose
    values match ``partition_filter``."""
    source.check_parquet()
    keys = source.partition_names
    wanted = {str(k): str(v) for k, v in (partition_filter or {}).items()}
    unknown = sorted(set(wanted) - set(keys))
    if unknown:
        raise ValidationError(f"partition_filter names {', '.join(unknown)}: table {source.identifier} is "
                              + (f"partitioned by {', '.join(keys)}" if keys else "not partitioned"))
    if keys:
        places = [(p.location, p.values) for p in backend.hive_partitions(source.identifier)
                  if all(p.values.get(k) == v for k, v in wanted.items())]
    else:
        places = [(source.location, None)]
    io = backend.io
    out: dict[str, dict[str, str] | None] = {}
    for location, values in places:
        files, _ = io.list_level(location.rstrip("/"))
        for path, _ in sorted(files):
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if not name.startswith(("_", ".")) and not name.endswith(".crc"):
                out[path] = values
    return out


def check_partitioning(source: Any, spec: Any, target: str) -> None:
    """A named error unless the files of ``source`` can go into a table of ``spec``: a partitioned source's
    partition columns are exactly the table's identity partition fields (a partition column's values are in the
    metastore, not in the files)."""
    keys = source.partition_names
    if not keys:
        return
    names = {f.name for f in spec.fields if str(f.transform) == "identity"}
    if names != set(keys) or len(spec.fields) != len(names):
        raise ValidationError(f"cannot add the files of table {source.identifier}, partitioned by "
                              f"{', '.join(keys)}, to table {target}, partitioned by "
                              f"{', '.join(str(f) for f in spec.fields) or 'nothing'}: the table must be partitioned "
                              "by exactly those columns (identity)")


def _import(catalog: Any, backend: Any, source: Any, files: dict[str, dict[str, str] | None], ident: Identifier,
            location: str | None, properties: dict[str, str]) -> Any:
    """A new Iceberg table ``ident`` of the source's schema and partitioning holding ``files``; no table when the
    import fails (its metadata files deleted, the source's files untouched)."""
    table = catalog.create_table(ident, source.schema(), partition_by=source.partition_names,
                                 properties=properties, location=location)
    try:
        if files:
            table._add_files(list(files), False, files)
    except BaseException:
        metadata_location = table.metadata_location
        backend.drop(ident, purge=False)
        table.io.delete(metadata_location)
        raise
    return catalog.load_table(ident)


def snapshot_table(catalog: Any, source: str | Any, target: str | Any, location: str | None = None,
                   properties: dict[str, str] | None = None) -> Any:
    """The new table: see the module docstring."""
    backend = metastore(catalog)
    hive = backend.hive_table(source)
    if location is not None and location.rstrip("/") == hive.location.rstrip("/"):
        raise ValidationError(f"snapshot of {hive.identifier}: the new table's location {location} is the source "
                              "table's; give another (or migrate the table)")
    props = {**hive.properties(), **(properties or {}), "gc.enabled": "false", "snapshot": "true"}
    return _import(catalog, backend, hive, source_files(backend, hive), parse_identifier(target), location, props)


def migrate_table(catalog: Any, identifier: str | Any, properties: dict[str, str] | None = None,
                  drop_backup: bool = False, backup_table_name: str | None = None) -> Any:
    """The migrated table: see the module docstring."""
    backend = metastore(catalog)
    ident = parse_identifier(identifier)
    hive = backend.hive_table(ident)
    backup = Identifier(ident.namespace, backup_table_name or f"{ident.name}{BACKUP_SUFFIX}")
    props = {**hive.properties(), **(properties or {}), "migrated": "true"}
    files = source_files(backend, hive)  # (listed before anything changes: a failure here changes nothing)
    backend.move_hive_table(ident, backup, external=True)
    try:
        out = _import(catalog, backend, hive, files, ident, hive.location, props)
    except BaseException:
        backend.move_hive_table(backup, ident, external=not hive.managed)
        raise
    if drop_backup:
        backend.drop_hive_table(backup)
    return out


__all__ = ["BACKUP_SUFFIX", "check_partitioning", "metastore", "migrate_table", "snapshot_table", "source_files"]
