"""Catalogs: where tables live and how a new metadata version is swapped in atomically."""
from sparkberg.catalog.base import Identifier, parse_identifier  # noqa: F401
from sparkberg.catalog.filesystem import FileSystemCatalog  # noqa: F401
