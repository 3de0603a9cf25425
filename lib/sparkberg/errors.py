"""One exception hierarchy for sparkberg.

Every error a user can provoke derives from :class:`SparkbergError`, so jobs can catch one type
and schedulers get a clear message. Messages name the file, the field and the offending value.
"""
from __future__ import annotations


class SparkbergError(Exception):
    """Base class of every error sparkberg raises on purpose."""


class ValidationError(SparkbergError, ValueError):
    """Input that breaks the Iceberg spec or the table's rules: bad schema, spec, value or update."""


class InvalidMetadataError(ValidationError):
    """A metadata file (JSON, manifest list, manifest, Puffin) that is malformed, truncated or foreign.

    ``path`` names the file and ``field`` the offending field, when known.
    """

    def __init__(self, message: str, path: str | None = None, field: str | None = None):
        self.path = path
        self.field = field
        where = []
        if path:
            where.append(f"file {path}")
        if field:
            where.append(f"field {field!r}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class UnsupportedFormatVersionError(InvalidMetadataError):
    """Table metadata with a format version this library cannot read (above 3)."""


class NotSupportedError(SparkbergError, NotImplementedError):
    """A valid Iceberg feature this library does not support yet (for example reading variant data)."""


class NoSuchNamespaceError(SparkbergError):
    """The namespace does not exist in the catalog."""


class NamespaceAlreadyExistsError(SparkbergError):
    """The namespace already exists in the catalog."""


class NamespaceNotEmptyError(SparkbergError):
    """The namespace still holds tables and cannot be dropped."""


class NoSuchTableError(SparkbergError):
    """The table does not exist in the catalog, or the path holds no Iceberg table."""


class TableAlreadyExistsError(SparkbergError):
    """A table with that identifier already exists."""


class NoSuchViewError(SparkbergError):
    """The view does not exist in the catalog."""


class ViewAlreadyExistsError(SparkbergError):
    """A view with that identifier already exists (or a table holds the name)."""


class InvalidIdentifierError(ValidationError):
    """A namespace or table identifier that is empty or tries to escape the warehouse."""


class FileAlreadyExistsError(SparkbergError, FileExistsError):
    """A file that must be new (a metadata version, a written data file) already exists: ``create`` found it."""


class MissingFileError(SparkbergError, FileNotFoundError):
    """A file the table's metadata references (manifest list, manifest, data or delete file, deletion vector)
    does not exist. ``path`` names it; the message also names what references it, where known."""

    def __init__(self, message: str, path: str | None = None):
        self.path = path
        super().__init__(message)


class StorageError(SparkbergError):
    """An object store or file system refused or did not answer a request: a missing bucket, credentials it does
    not accept, a prefix it denies, an endpoint that does not answer. It names the location and the store's
    reason, never a credential."""


class WorkerEnvironmentError(SparkbergError):
    """Spark's Python workers cannot run sparkberg's code: the interpreter they run lacks the package."""


class AlreadyCommittedError(SparkbergError):
    """A write's idempotency key (``app_id``, ``version``) is already recorded: snapshot ``snapshot_id`` records
    the application with version ``recorded``, as large or larger. The write is not committed. A write on its
    own reports this in its return value, having written nothing; a transaction whose commit finds a key another
    writer recorded meanwhile raises it, and nothing of the transaction is committed."""

    def __init__(self, app_id: str, version: int, snapshot_id: int, recorded: int):
        self.app_id, self.version, self.snapshot_id, self.recorded = app_id, version, snapshot_id, recorded
        super().__init__(f"application {app_id!r} version {version} is already committed: snapshot {snapshot_id} "
                         f"records version {recorded}")


class CommitFailedException(SparkbergError):
    """A commit lost the race for the next metadata version, or its requirements no longer hold.

    The table is left exactly as the winning writer left it; nothing of this commit is visible.
    """


class CommitStateUnknownException(SparkbergError):
    """The commit may or may not have succeeded (the catalog's answer to the swap was lost): its files are kept,
    and the table must be refreshed to tell."""


class TableUUIDMismatchError(ValidationError):
    """A refreshed table is another table: its ``table-uuid`` changed (dropped and re-created meanwhile)."""




class CatalogDatabaseError(SparkbergError):
    """The SQL catalog's database cannot be reached or refused a statement (it names the database, never its
    password)."""


class RestCatalogError(SparkbergError):
    """The REST catalog answered with an error this client has no narrower exception for, or could not be reached
    (it names the request, the status and the server's message, with any credential in it masked)."""


class NotAuthorizedError(RestCatalogError):
    """The REST catalog (or its OAuth2 endpoint) refused the credentials (401) or the operation (403)."""


class SqlSyntaxError(ValidationError):
    """A ``sparkberg.sql`` statement that does not parse: ``line`` and ``column`` (from 1) of the script, and what
    was expected there; no statement of the script ran."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(f"line {line}, column {column}: {message}")
        self.line, self.column = line, column


class StatementFailedError(SparkbergError):
    """A statement of a ``sparkberg.sql`` script failed: ``number`` (from 1), its ``statement`` text; the cause is
    chained (``cause``). The statements before it ran; it and those after it changed nothing."""

    def __init__(self, number: int, statement: str, cause: BaseException):
        super().__init__(f"statement {number} failed ({statement}): {type(cause).__name__}: {cause}")
        self.number, self.statement, self.cause = number, statement, cause
