"""What the catalogs over a metastore of databases and tables share (AWS Glue: :mod:`sparkberg.catalog.glue`; a
Hive Metastore: :mod:`sparkberg.catalog.hive`): one-level namespaces (a database each), a new table's location
under its database's or the warehouse's ``<database>.db``, the existence checks built on their own lookups, and
the plain (not Iceberg) tables they also hold, as :class:`HiveTable`, for ``migrate``, ``snapshot`` and
``add_files`` to import."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Iterator

from sparkberg.catalog.base import Identifier, parse_identifier, parse_namespace
from sparkberg.errors import NoSuchNamespaceError, NoSuchTableError, NotSupportedError, ValidationError
from sparkberg.format import types as T

# how a metastore names a Parquet table's storage: Hive's serde and input format, Spark's data source provider
_PARQUET = ("parquet",)
# the table parameters that describe the source table's storage or history, not the table: not carried over
# (Iceberg Java's migrate and snapshot leave out the first three; the others are Hive's and Spark's bookkeeping)
EXCLUDED_PARAMETERS = frozenset({
    "path", "transient_lastDdlTime", "serialization.format", "EXTERNAL", "numFiles", "numRows", "rawDataSize",
    "totalSize", "numPartitions", "COLUMN_STATS_ACCURATE", "last_modified_by", "last_modified_time",
    "table_type", "metadata_location", "previous_metadata_location", "spark.sql.create.version",
    "spark.sql.partitionProvider"})
_SPARK_SCHEMA = "spark.sql.sources.schema"


@dataclass(frozen=True)
class Column:
    """A column of a plain metastore table: its name, its type as the metastore spells it, its comment."""

    name: str
    type: str
    comment: str | None = None


@dataclass(frozen=True)
class HivePartition:
    """A partition of a plain metastore table: its values by partition column (as text) and its location."""

    values: dict[str, str]
    location: str


@dataclass(frozen=True)
class HiveTable:
    """A plain (not Iceberg) table of a Hive Metastore or Glue: what importing its files needs."""

    identifier: Identifier
    columns: tuple[Column, ...]
    partition_keys: tuple[Column, ...]
    location: str
    storage: str  # (its input format, serde and provider, lower-cased, for telling its file format)
    parameters: dict[str, str] = field(default_factory=dict)
    managed: bool = False

    @property
    def is_parquet(self) -> bool:
        return any(p in self.storage for p in _PARQUET)

    def check_parquet(self) -> None:
        """A named error unless the table's files are Parquet (the only format sparkberg imports)."""
        if not self.is_parquet:
            raise NotSupportedError(f"table {self.identifier} is not stored as Parquet ({self.storage or 'no format'}"
                                    "): sparkberg imports Parquet files only")

    def schema(self) -> T.Schema:
        """The table's columns, then its partition columns, as an Iceberg schema (ids from 1, all optional), the
        types as Spark reads the metastore's (Hive's ``timestamp`` is Spark's, an instant: ``timestamptz``)."""
        spark = spark_schema(self.parameters)
        if spark is not None:
            types = [(name, spark_type(t), doc) for name, t, doc in spark]
        else:
            types = [(c.name, hive_to_iceberg(c.type, f"{self.identifier}.{c.name}"), c.comment)
                     for c in self.columns + self.partition_keys]
        fields = [T.NestedField(i + 1, name, t, False, doc) for i, (name, t, doc) in enumerate(types)]
        return T.Schema(fields)

    @property
    def partition_names(self) -> list[str]:
        keys = spark_partition_columns(self.parameters)
        return keys if keys is not None else [c.name for c in self.partition_keys]

    def properties(self) -> dict[str, str]:
        """The table's parameters an Iceberg table made of it keeps (its comment among them)."""
        return {k: v for k, v in self.parameters.items()
                if k not in EXCLUDED_PARAMETERS and not k.startswith("spark.sql.sources.")}


_ANGLE = re.compile(r"^(array|map|struct)\s*<(.*)>$", re.S)
_PRIMITIVES = {"boolean": T.BOOLEAN, "tinyint": T.INT, "smallint": T.INT, "int": T.INT, "integer": T.INT,
               "bigint": T.LONG, "float": T.FLOAT, "double": T.DOUBLE, "double precision": T.DOUBLE,
               "string": T.STRING, "binary": T.BINARY, "date": T.DATE, "timestamp": T.TIMESTAMPTZ,
               "timestamp_ntz": T.TIMESTAMP, "timestamp_ltz": T.TIMESTAMPTZ}


def _split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside angle brackets and parentheses."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [p.strip() for p in out]


def hive_to_iceberg(text: str, column: str) -> T.IcebergType:
    """A Hive column type (``bigint``, ``decimal(10,2)``, ``array<struct<a:int>>``...) as the Iceberg type Spark
    reads it as; field ids are placeholders (the table's creation assigns them)."""
    t = text.strip()
    low = t.lower()
    if low in _PRIMITIVES:
        return _PRIMITIVES[low]
    if re.fullmatch(r"(var)?char\s*\(\s*\d+\s*\)", low):
        return T.STRING
    if low == "decimal":
        return T.DecimalType(10, 0)
    m = re.fullmatch(r"decimal\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)", low)
    if m:
        return T.DecimalType(int(m.group(1)), int(m.group(2) or 0))
    m = _ANGLE.match(t)
    if m:
        kind, inner = m.group(1).lower(), m.group(2)
        if kind == "array":
            return T.ListType(0, hive_to_iceberg(inner, column), False)
        if kind == "map":
            parts = _split_top(inner)
            if len(parts) == 2:
                return T.MapType(0, hive_to_iceberg(parts[0], column), 0, hive_to_iceberg(parts[1], column), False)
        else:
            fields = []
            for part in _split_top(inner):
                name, sep, ftype = part.partition(":")
                if not sep:
                    break
                fields.append(T.NestedField(0, name.strip().strip("`"), hive_to_iceberg(ftype, column), False))
            else:
                return T.StructType(fields)
    raise NotSupportedError(f"column {column}: the Hive type {text!r} has no Iceberg type")


def spark_schema(parameters: dict[str, str]) -> list[tuple[str, dict | str, str | None]] | None:
    """The (name, Spark JSON type, comment) of each column of a table Spark created as a data source table, from
    the schema it keeps in the table's parameters (whole, or in numbered parts); None for another table."""
    text = parameters.get(_SPARK_SCHEMA)
    if text is None and f"{_SPARK_SCHEMA}.numParts" in parameters:
        text = "".join(parameters[f"{_SPARK_SCHEMA}.part.{i}"]
                       for i in range(int(parameters[f"{_SPARK_SCHEMA}.numParts"])))
    if text is None:
        return None
    return [(f["name"], f["type"], (f.get("metadata") or {}).get("comment")) for f in json.loads(text)["fields"]]


def spark_partition_columns(parameters: dict[str, str]) -> list[str] | None:
    """The partition columns of a table Spark created as a data source table (None for another table)."""
    n = parameters.get(f"{_SPARK_SCHEMA}.numPartCols")
    if n is None:
        return None if _SPARK_SCHEMA not in parameters and f"{_SPARK_SCHEMA}.numParts" not in parameters else []
    return [parameters[f"{_SPARK_SCHEMA}.partCol.{i}"] for i in range(int(n))]


_SPARK_PRIMITIVES = {"boolean": T.BOOLEAN, "byte": T.INT, "short": T.INT, "integer": T.INT, "long": T.LONG,
                     "float": T.FLOAT, "double": T.DOUBLE, "string": T.STRING, "binary": T.BINARY, "date": T.DATE,
                     "timestamp": T.TIMESTAMPTZ, "timestamp_ntz": T.TIMESTAMP}


def spark_type(t: dict | str) -> T.IcebergType:
    """A Spark type in its JSON form as the Iceberg type Iceberg Java converts it to."""
    if isinstance(t, str):
        if t in _SPARK_PRIMITIVES:
            return _SPARK_PRIMITIVES[t]
        return hive_to_iceberg(t, "a Spark column")
    kind = t.get("type")
    if kind == "array":
        return T.ListType(0, spark_type(t["elementType"]), not t.get("containsNull", True))
    if kind == "map":
        return T.MapType(0, spark_type(t["keyType"]), 0, spark_type(t["valueType"]),
                         not t.get("valueContainsNull", True))
    if kind == "struct":
        return T.StructType([T.NestedField(0, f["name"], spark_type(f["type"]), not f.get("nullable", True),
                                           (f.get("metadata") or {}).get("comment")) for f in t["fields"]])
    raise NotSupportedError(f"the Spark type {t!r} has no Iceberg type")


class MetastoreCatalog:
    """The shared part; a subclass gives ``kind`` (how messages name the metastore), ``name``, ``warehouse``,
    ``_get_database`` and ``_get_table`` (named errors when missing), ``_database_location`` and
    ``list_namespaces``/``list_tables``; and of its plain tables: ``hive_table``, ``hive_partitions``,
    ``move_hive_table`` and ``drop_hive_table``."""

    kind = "metastore"
    name: str
    warehouse: str | None

    def _database(self, namespace) -> str:
        ns = parse_namespace(namespace)
        if len(ns) != 1:
            raise ValidationError(f"{self.kind} namespaces have one level (a database), got {'.'.join(ns)!r}")
        return ns[0]

    def namespace_exists(self, namespace) -> bool:
        try:
            self._get_database(namespace)
            return True
        except NoSuchNamespaceError:
            return False

    def table_exists(self, identifier) -> bool:
        try:
            self._get_table(parse_identifier(identifier))
            return True
        except (NoSuchTableError, NoSuchNamespaceError):
            return False

    def _updated_properties(self, namespace, updates: dict[str, str] | None, removals) -> dict[str, str]:
        """The namespace's properties with ``updates`` set and ``removals`` removed (a key in both is an error)."""
        updates = {k: str(v) for k, v in (updates or {}).items()}
        overlap = set(updates) & set(removals)
        if overlap:
            raise ValidationError(f"properties both set and removed: {sorted(overlap)}")
        props = {k: v for k, v in self.load_namespace_properties(namespace).items() if k not in removals}
        props.update(updates)
        return props

    def tables(self) -> Iterator[Identifier]:
        for (ns,) in self.list_namespaces():
            yield from self.list_tables(ns)

    def default_table_location(self, identifier) -> str:
        ident = parse_identifier(identifier)
        location = self._database_location(self._get_database(ident.namespace))
        if location:
            return f"{location.rstrip('/')}/{ident.name}"
        if self.warehouse is None:
            raise ValidationError(f"{self.kind} catalog {self.name!r} has no warehouse for new tables and database "
                                  f"{ident.namespace[0]} no location: give warehouse=..., or a location")
        return f"{self.warehouse}/{ident.namespace[0]}.db/{ident.name}"


__all__ = ["Column", "HivePartition", "HiveTable", "MetastoreCatalog", "hive_to_iceberg"]
