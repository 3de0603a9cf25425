"""What the catalogs over a metastore of databases and tables share (AWS Glue: :mod:`sparkberg.catalog.glue`; a
Hive Metastore: :mod:`sparkberg.catalog.hive`): one-level namespaces (a database each), a new table's location
under its database's or the warehouse's ``<database>.db``, and the existence checks built on their own lookups."""
from __future__ import annotations

from typing import Iterator

from sparkberg.catalog.base import Identifier, parse_identifier, parse_namespace
from sparkberg.errors import NoSuchNamespaceError, NoSuchTableError, ValidationError


class MetastoreCatalog:
    """The shared part; a subclass gives ``kind`` (how messages name the metastore), ``name``, ``warehouse``,
    ``_get_database`` and ``_get_table`` (named errors when missing), ``_database_location`` and
    ``list_namespaces``/``list_tables``."""

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


__all__ = ["MetastoreCatalog"]
