"""Table properties sparkberg reads that more than one module decides by: their names, defaults and typed
accessors (as Iceberg Java's ``TableProperties`` and PyIceberg's). A value that is not one the property takes is a
named error that names the property and the value."""
from __future__ import annotations

from typing import Mapping

from sparkberg.errors import ValidationError
from sparkberg.format.metadata import TableMetadata

COPY_ON_WRITE, MERGE_ON_READ = "copy-on-write", "merge-on-read"
SERIALIZABLE, SNAPSHOT = "serializable", "snapshot"
ROW_LEVEL_COMMANDS = ("delete", "update", "merge")

WAP_ENABLED = "write.wap.enabled"  # default false
ACCEPT_ANY_SCHEMA = "write.spark.accept-any-schema"  # default false: writes merge the data's schema when true
DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"  # default false
NAME_MAPPING = "schema.name-mapping.default"  # JSON (spec Appendix C), none by default
DATA_PATH = "write.data.path"  # default <table location>/data
COMPRESSION, DEFAULT_COMPRESSION = "write.parquet.compression-codec", "zstd"
TARGET_FILE_SIZE, DEFAULT_TARGET_FILE_SIZE = "write.target-file-size-bytes", 512 * 1024 * 1024


def _choice(properties: Mapping[str, str], key: str, default: str, allowed: tuple[str, ...]) -> str:
    value = properties.get(key)
    if value is None:
        return default
    if value.strip().lower() not in allowed:
        raise ValidationError(f"table property {key} must be one of {', '.join(allowed)}, got {value!r}")
    return value.strip().lower()


def boolean(properties: Mapping[str, str], key: str, default: bool = False) -> bool:
    """A true/false property (any case)."""
    value = properties.get(key)
    if value is None:
        return default
    return _choice(properties, key, "", ("true", "false")) == "true"


def integer(properties: Mapping[str, str], key: str, default: int) -> int:
    """An integer property."""
    value = properties.get(key)
    if value is None:
        return default
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValidationError(f"table property {key} must be an integer, got {value!r}") from None


def data_location(metadata: TableMetadata) -> str:
    """Where new data and delete files go: ``write.data.path``, else the table's ``data`` directory."""
    return metadata.properties.get(DATA_PATH) or f"{metadata.location}/data"


def compression(properties: Mapping[str, str]) -> str:
    """The Parquet compression codec of new files (``write.parquet.compression-codec``), lower case."""
    return properties.get(COMPRESSION, DEFAULT_COMPRESSION).strip().lower()


def target_file_size(properties: Mapping[str, str]) -> int:
    """``write.target-file-size-bytes``: the size new data files are cut at (512 MiB by default)."""
    return integer(properties, TARGET_FILE_SIZE, DEFAULT_TARGET_FILE_SIZE)


def row_level_mode(properties: Mapping[str, str], command: str) -> str:
    """``write.<command>.mode`` of a row-level command (delete, update, merge): copy-on-write (the default) or
    merge-on-read."""
    return _choice(properties, f"write.{command}.mode", COPY_ON_WRITE, (COPY_ON_WRITE, MERGE_ON_READ))


def merges_on_read(metadata: TableMetadata, command: str) -> bool:
    """Whether a row-level command writes delete files: merge-on-read on a table that can hold them (v2+)."""
    return row_level_mode(metadata.properties, command) == MERGE_ON_READ and metadata.format_version >= 2


def isolation_level(properties: Mapping[str, str], command: str) -> str:
    """``write.<command>.isolation-level`` of a row-level command: serializable (the default) or snapshot."""
    return _choice(properties, f"write.{command}.isolation-level", SERIALIZABLE, (SERIALIZABLE, SNAPSHOT))


__all__ = ["COPY_ON_WRITE", "MERGE_ON_READ", "SERIALIZABLE", "SNAPSHOT", "ROW_LEVEL_COMMANDS", "WAP_ENABLED",
           "ACCEPT_ANY_SCHEMA", "DELETE_AFTER_COMMIT", "NAME_MAPPING", "DATA_PATH", "COMPRESSION",
           "DEFAULT_COMPRESSION", "TARGET_FILE_SIZE", "DEFAULT_TARGET_FILE_SIZE", "boolean", "integer",
           "data_location", "compression", "target_file_size", "row_level_mode", "merges_on_read", "isolation_level"]
