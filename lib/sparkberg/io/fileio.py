"""FileIO: the few operations table metadata needs, for local paths and object stores.

Locations are URIs as they appear in metadata (``file:/x``, ``file:///x``, ``s3://b/x``, ``s3a://b/x``,
``gs://b/x``, ``abfss://c@a.dfs.core.windows.net/x``, ``hdfs://nn/x``) or plain local paths. A catalog's or table's
FileIO (:class:`TableFileIO`) serves them all, configured by Iceberg's FileIO properties
(:mod:`sparkberg.io.stores`). ``create`` never overwrites: on the local file system it writes a temporary file
and links it into place, on an object store it is the store's conditional create; both fail atomically if the
target exists, the commit primitive of the file-system catalog.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from typing import Any, Callable, Iterable, Iterator, Sequence
from urllib.parse import urlparse

from sparkberg import redact
from sparkberg.errors import (
    CommitStateUnknownException, FileAlreadyExistsError, MissingFileError, SparkbergError, StorageError,
)
from sparkberg.io import stores


def to_local_path(location: str) -> str | None:
    """The local path of a ``file:`` URI or plain path; None for other schemes.

    Like Hadoop's ``Path`` (which Iceberg Java resolves locations with), percent signs are literal: Java
    writes partition directories such as ``s_trunc=%C3%A9t`` with those characters in the name."""
    if location.startswith("file:"):
        p = urlparse(location)
        return p.path if p.netloc in ("", "localhost") else None
    if "://" in location:
        return None
    return location


class FileIO:
    """Read, create (never overwrite), list and delete files by location."""

    # whether ``create`` is atomic: of two writers creating one path, exactly one succeeds
    atomic_create = False

    def atomic_create_at(self, location: str) -> bool:
        """Whether ``create`` at ``location`` is atomic (:attr:`atomic_create` unless the store decides)."""
        return self.atomic_create

    def read(self, location: str) -> bytes:
        raise NotImplementedError

    def read_range(self, location: str, offset: int, length: int) -> bytes:
        """``length`` bytes of a file from ``offset`` (a deletion vector in its Puffin file)."""
        return self.read(location)[offset:offset + length]

    def read_all(self, locations: Sequence[str]) -> list[bytes]:
        """The bytes of each of ``locations``, in order (an object store's side by side: :class:`TableFileIO`)."""
        return [self.read(p) for p in locations]

    def exists(self, location: str) -> bool:
        raise NotImplementedError

    def create(self, location: str, data: bytes) -> None:
        """Write ``data`` to a new file; raise FileAlreadyExistsError if it exists (atomically where supported)."""
        raise NotImplementedError

    def write(self, location: str, data: bytes) -> None:
        """Write ``data``, replacing any file there (for files no reader depends on, like version hints)."""
        raise NotImplementedError

    def delete(self, location: str) -> None:
        raise NotImplementedError

    def size(self, location: str) -> int:
        raise NotImplementedError

    def list(self, location: str) -> Iterator[str]:
        """Names of the entries directly under a directory location (empty if it does not exist)."""
        raise NotImplementedError

    def list_files(self, location: str) -> Iterator[tuple[str, int]]:
        """(location, modification time in epoch millis) of every file under a directory location, at any depth;
        none if it does not exist (:meth:`list_level`: one level)."""
        raise NotImplementedError

    def delete_dir(self, location: str) -> None:
        raise NotImplementedError

    def list_level(self, location: str) -> tuple[list[tuple[str, int]], list[str]]:
        """What is directly under a directory location, in one listing: (location, modification time in epoch
        millis) of its files, and the locations of its directories; nothing if it does not exist."""
        raise NotImplementedError

    def file_sizes(self, location: str) -> dict[str, int]:
        """The name and size in bytes of each file directly under a directory location, in one listing (an object
        store's list call answers for a thousand objects); empty if it does not exist."""
        raise NotImplementedError

    def is_dir(self, location: str) -> bool:
        raise NotImplementedError

    def makedirs(self, location: str) -> None:
        raise NotImplementedError


class LocalFileIO(FileIO):
    """Local files; ``create`` is atomic and exclusive (temp file + hard link)."""

    atomic_create = True

    @staticmethod
    def _p(location: str) -> str:
        p = to_local_path(location)
        if p is None:
            raise SparkbergError(f"not a local location: {location}")
        return p

    def read(self, location):
        try:
            with open(self._p(location), "rb") as f:
                return f.read()
        except FileNotFoundError:
            raise MissingFileError(f"file {location} does not exist", location) from None

    def read_range(self, location, offset, length):
        try:
            with open(self._p(location), "rb") as f:
                f.seek(offset)
                return f.read(length)
        except FileNotFoundError:
            raise MissingFileError(f"file {location} does not exist", location) from None

    def exists(self, location):
        return os.path.exists(self._p(location))

    def size(self, location):
        try:
            return os.path.getsize(self._p(location))
        except FileNotFoundError:
            raise MissingFileError(f"file {location} does not exist", location) from None

    def makedirs(self, location):
        os.makedirs(self._p(location), exist_ok=True)

    def create(self, location, data):
        path = self._p(location)
        d = os.path.dirname(path)
        os.makedirs(d, exist_ok=True)
        tmp = os.path.join(d, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # atomic; fails with EEXIST if another writer got there first
        except FileExistsError:
            raise FileAlreadyExistsError(f"file already exists: {location}") from None
        finally:
            os.unlink(tmp)

    def write(self, location, data):
        path = self._p(location)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)

    def delete(self, location):
        try:
            os.unlink(self._p(location))
        except FileNotFoundError:
            pass

    def list(self, location):
        p = self._p(location)
        if not os.path.isdir(p):
            return iter(())
        return iter(sorted(os.listdir(p)))

    def list_files(self, location):
        for d, _, files in os.walk(self._p(location)):
            for f in files:
                path = os.path.join(d, f)
                try:
                    yield "file://" + path, int(os.stat(path).st_mtime * 1000)
                except FileNotFoundError:  # (removed since the directory was read)
                    continue

    def is_dir(self, location):
        return os.path.isdir(self._p(location))

    def list_level(self, location):
        files, dirs = [], []
        try:
            entries = list(os.scandir(self._p(location)))
        except (FileNotFoundError, NotADirectoryError):
            return files, dirs
        root = location.rstrip("/")
        for e in entries:
            try:
                if e.is_dir():
                    dirs.append(f"{root}/{e.name}")
                else:
                    files.append((f"{root}/{e.name}", int(e.stat().st_mtime * 1000)))
            except FileNotFoundError:  # (removed since the directory was read)
                continue
        return sorted(files), sorted(dirs)

    def file_sizes(self, location):
        sizes = {}
        try:
            entries = list(os.scandir(self._p(location)))
        except (FileNotFoundError, NotADirectoryError):
            return sizes
        for e in entries:
            try:
                if e.is_file():
                    sizes[e.name] = e.stat().st_size
            except FileNotFoundError:  # (removed since the directory was read)
                continue
        return sizes

    def delete_dir(self, location):
        import shutil
        shutil.rmtree(self._p(location), ignore_errors=True)


class ObjectStoreFileIO(FileIO):
    """Object stores (S3 and S3-compatible stores, GCS, Azure) and HDFS, configured by Iceberg's FileIO properties
    (:mod:`sparkberg.io.stores`): one client per store and account, made on first use in each process. Picklable
    (the properties travel with it to the executors: no environment variable or Hadoop configuration is needed
    there); its ``repr`` names the properties' keys, never their values. ``create`` is the store's conditional
    create, atomic where the store has one (S3, GCS, Azure); on HDFS a check then a write."""

    def __init__(self, properties: dict[str, str] | None = None,
                 renew: Callable[[], dict[str, str]] | None = None, signer: Callable | None = None):
        self._properties = stores.fileio_properties(properties)
        self._renew = renew
        self._signer = signer
        self._expires_ms = stores.expires_at_ms(self._properties) if renew is not None else None
        self._renewed_at = 0.0
        self._clients: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {"properties": self._properties, "renew": self._renew, "signer": self._signer}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["properties"], state.get("renew"), state.get("signer"))

    def _renewed(self) -> None:
        """Vended credentials that expire within :data:`~sparkberg.io.stores.RENEW_AHEAD_S` fetched again (by
        ``renew``, the catalog's), and the clients made anew with them."""
        if self._expires_ms is None or self._expires_ms / 1000 - time.time() > stores.RENEW_AHEAD_S:
            return
        with self._lock:
            if time.monotonic() - self._renewed_at < stores.RENEW_MIN_INTERVAL_S and self._renewed_at:
                return
            fresh = stores.fileio_properties(self._renew())
            self._properties = {**self._properties, **fresh}
            self._expires_ms = stores.expires_at_ms(self._properties)
            self._clients = {}
            self._renewed_at = time.monotonic()

    def __repr__(self) -> str:
        return f"ObjectStoreFileIO(properties={sorted(self._properties)})"

    @property
    def properties(self) -> dict[str, str]:
        """The FileIO properties it was configured with (credentials among them: for the one call that needs
        them, never to show)."""
        return dict(self._properties)

    def atomic_create_at(self, location: str) -> bool:
        return stores.where(location).store != stores.HDFS

    def _client(self, kind: str, at: "stores.Where", location: str):
        self._renewed()
        key = (kind, at.store, at.authority, at.bucket if kind == "obstore" else "")
        client = self._clients.get(key)
        if client is None:
            with self._lock:
                client = self._clients.get(key)
                if client is None:
                    client = stores.pyarrow_filesystem(self._properties, at, location, self._signer) \
                        if kind == "pyarrow" else stores.obstore_store(self._properties, at, self._signer)
                    self._clients[key] = client
        return client

    def _fs(self, location: str):
        at = stores.where(location)
        return self._client("pyarrow", at, location), at.path

    @contextlib.contextmanager
    def _errors(self, location: str) -> Iterator[None]:
        """A store's refusal as a :class:`StorageError` naming the location (credentials masked)."""
        try:
            yield
        except FileNotFoundError:
            raise MissingFileError(f"file {location} does not exist", location) from None
        except (OSError, RuntimeError) as e:
            if isinstance(e, FileExistsError):
                raise
            raise _refusal(location, e) from None

    def open_input(self, location: str):
        fs_, p = self._fs(location)
        with self._errors(location):
            return fs_.open_input_file(p)

    def open_output(self, location: str):
        fs_, p = self._fs(location)
        with self._errors(location):
            return fs_.open_output_stream(p)

    def read(self, location):
        fs_, p = self._fs(location)
        with self._errors(location):
            with fs_.open_input_stream(p) as f:
                return f.read()

    def read_range(self, location, offset, length):
        fs_, p = self._fs(location)
        with self._errors(location):
            with fs_.open_input_file(p) as f:
                return f.read_at(length, offset)

    def exists(self, location):
        from pyarrow import fs
        fs_, p = self._fs(location)
        with self._errors(location):
            return fs_.get_file_info(p).type != fs.FileType.NotFound

    def size(self, location):
        from pyarrow import fs
        fs_, p = self._fs(location)
        with self._errors(location):
            info = fs_.get_file_info(p)
        if info.type == fs.FileType.NotFound:
            raise MissingFileError(f"file {location} does not exist", location)
        return info.size

    def makedirs(self, location):
        fs_, p = self._fs(location)
        with self._errors(location):
            fs_.create_dir(p, recursive=True)

    def create(self, location, data):
        at = stores.where(location)
        store = self._client("obstore", at, location) if at.store != stores.HDFS else None
        if store is None:  # (HDFS: no conditional create; a check, then the write)
            if self.exists(location):
                raise FileAlreadyExistsError(f"file already exists: {location}")
            self.write(location, data)
            return
        if getattr(store, "signed_remotely", False):
            try:  # (S3 whose catalog signs: its own conditional PUT)
                with self._errors(location):
                    store.put(at.bucket, at.key, bytes(data), create=True)
            except FileExistsError:
                raise FileAlreadyExistsError(f"file already exists: {location}") from None
            return
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError
        try:
            obstore.put(store, at.key, data, mode="create")
        except (AlreadyExistsError, PreconditionError):
            raise FileAlreadyExistsError(f"file already exists: {location}") from None
        except Exception as e:  # noqa: BLE001 - the store's refusal, named (obstore's errors are its own classes)
            raise _refusal(location, e) from None

    def write(self, location, data):
        with self._errors(location):  # (a store that writes on close refuses there)
            with self.open_output(location) as f:
                f.write(data)

    def delete(self, location):
        fs_, p = self._fs(location)
        try:
            with self._errors(location):
                fs_.delete_file(p)
        except MissingFileError:
            pass

    def list(self, location):
        from pyarrow import fs
        fs_, p = self._fs(location)
        with self._errors(location):
            found = fs_.get_file_info(fs.FileSelector(p, allow_not_found=True))
        return iter(sorted(info.base_name for info in found))

    def _listing(self, location: str, recursive: bool) -> Iterator[tuple[Any, str, int]]:
        """(pyarrow's file info, the entry's location as the table names it, its modification time in epoch millis)
        of each entry under ``location``: its scheme and authority kept (s3a:// stays s3a://)."""
        from pyarrow import fs
        fs_, p = self._fs(location)
        root, base = location.rstrip("/"), p.rstrip("/")
        with self._errors(location):
            found = fs_.get_file_info(fs.FileSelector(p, allow_not_found=True, recursive=recursive))
        for info in found:
            rel = info.path[len(base):] if info.path.startswith(base) else "/" + info.path
            yield info, root + rel, int(info.mtime.timestamp() * 1000) if info.mtime is not None else 0

    def list_files(self, location):
        from pyarrow import fs
        return ((at, ms) for info, at, ms in self._listing(location, True) if info.type == fs.FileType.File)

    def is_dir(self, location):
        from pyarrow import fs
        fs_, p = self._fs(location)
        with self._errors(location):
            return fs_.get_file_info(p).type == fs.FileType.Directory

    def list_level(self, location):
        from pyarrow import fs
        files, dirs = [], []
        for info, at, ms in self._listing(location, False):
            if info.type == fs.FileType.Directory:
                dirs.append(at)
            elif info.type == fs.FileType.File:
                files.append((at, ms))
        return sorted(files), sorted(dirs)

    def file_sizes(self, location):
        from pyarrow import fs
        return {info.base_name: info.size for info, _, _ in self._listing(location, False)
                if info.type == fs.FileType.File}

    def delete_dir(self, location):
        fs_, p = self._fs(location)
        with self._errors(location):
            fs_.delete_dir(p)


# how the clients say a store refused the caller: wrong or expired credentials, or a policy that denies the path
# (pyarrow's "AWS Error ACCESS_DENIED", Azure's "AuthorizationFailure"/"AuthenticationFailed", GCS's 401/403 and
# obstore's PermissionDeniedError/UnauthenticatedError)
_DENIED = ("ACCESS_DENIED", "AccessDenied", "SignatureDoesNotMatch", "SIGNATURE_DOES_NOT_MATCH",
           "InvalidAccessKeyId", "INVALID_ACCESS_KEY_ID", "ExpiredToken", "EXPIRED_TOKEN", "InvalidToken",
           "AuthorizationFailure", "AuthenticationFailed", "AuthorizationPermissionMismatch", "PermissionDenied",
           "Unauthenticated", "401 Unauthorized", "403 Forbidden")


def _refusal(location: str, error: BaseException) -> StorageError:
    """A store's refusal of ``location`` as a :class:`StorageError` naming it and its cause (secrets masked)."""
    text = f"{type(error).__name__}: {error}" if type(error).__module__.startswith("obstore") else str(error)
    cause = "access denied (wrong or expired credentials, or a policy that denies this location)" \
        if any(word in text for word in _DENIED) else "the store refused or did not answer"
    return StorageError(redact.text(f"{location}: {cause}: {text}"))


# requests to an object store in flight at once when many small objects are read (manifests, delete files): a
# request's time is the store's latency, so threads, not cores, bound it
IO_THREADS = 16


class TableFileIO(FileIO):
    """The FileIO of a catalog or a table: local locations by :class:`LocalFileIO`, every other by one
    :class:`ObjectStoreFileIO` configured by the FileIO properties (the catalog's, then the table's, then what
    the catalog vends for the table). Picklable, for the executors."""

    def __init__(self, properties: dict[str, str] | None = None,
                 renew: Callable[[], dict[str, str]] | None = None, signer: Callable | None = None):
        self._local = LocalFileIO()
        self._stores = ObjectStoreFileIO(properties, renew, signer)

    def __getstate__(self) -> dict:
        return {"properties": self._stores.properties, "renew": self._renew, "signer": self._signer}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["properties"], state.get("renew"), state.get("signer"))

    def __repr__(self) -> str:
        renew = f", renew={self._renew!r}" if self._renew is not None else ""
        signer = f", signer={self._signer!r}" if self._signer is not None else ""
        return f"TableFileIO(properties={sorted(self._stores.properties)}{renew}{signer})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TableFileIO) and other.properties == self.properties and \
            other._renew == self._renew and other._signer == self._signer

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.properties)))

    @property
    def properties(self) -> dict[str, str]:
        """The FileIO properties it was configured with (credentials among them: never to show)."""
        return self._stores.properties

    @property
    def _renew(self) -> Callable[[], dict[str, str]] | None:
        return self._stores._renew

    @property
    def _signer(self) -> Callable | None:
        return self._stores._signer

    def with_properties(self, properties: dict[str, Any] | None) -> "TableFileIO":
        """This FileIO with ``properties``' FileIO properties over its own (a table's over its catalog's); itself
        when they change nothing."""
        more = stores.fileio_properties(properties)
        if all(self.properties.get(k) == v for k, v in more.items()):
            return self
        return TableFileIO({**self.properties, **more}, self._renew, self._signer)

    def with_renewal(self, renew: Callable[[], dict[str, str]] | None) -> "TableFileIO":
        """This FileIO, fetching its credentials again with ``renew`` (a catalog's, picklable: it travels to the
        executors) when they are about to expire (:func:`~sparkberg.io.stores.expires_at_ms`)."""
        return TableFileIO(self.properties, renew, self._signer)

    def with_signer(self, signer: Callable | None) -> "TableFileIO":
        """This FileIO, its S3 requests signed by ``signer`` (a REST catalog's, picklable) where
        ``s3.remote-signing-enabled`` says (:mod:`sparkberg.io.signeds3`)."""
        return TableFileIO(self.properties, self._renew, signer)

    def _io(self, location: str) -> FileIO:
        return self._local if to_local_path(location) is not None else self._stores

    def atomic_create_at(self, location: str) -> bool:
        io = self._io(location)
        return io.atomic_create if io is self._local else self._stores.atomic_create_at(location)

    def open_input(self, location: str):
        """A seekable file to read (pyarrow's, or a local file object)."""
        io = self._io(location)
        if io is self._local:
            try:
                return open(LocalFileIO._p(location), "rb")
            except FileNotFoundError:
                raise MissingFileError(f"file {location} does not exist", location) from None
        return self._stores.open_input(location)

    def open_output(self, location: str):
        """A stream to write a new file to (replacing one of that name)."""
        io = self._io(location)
        if io is self._local:
            path = LocalFileIO._p(location)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            return open(path, "wb")
        return self._stores.open_output(location)

    def read(self, location):
        return self._io(location).read(location)

    def read_all(self, locations: Sequence[str]) -> list[bytes]:
        """The bytes of each of ``locations``, in order: local files one after another, an object store's objects
        :data:`IO_THREADS` requests at a time (each waits on the network, not on a core)."""
        if len(locations) <= 1 or all(to_local_path(p) is not None for p in locations):
            return [self.read(p) for p in locations]
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=min(IO_THREADS, len(locations))) as pool:
            return list(pool.map(self.read, locations))

    def read_range(self, location, offset, length):
        return self._io(location).read_range(location, offset, length)

    def exists(self, location):
        return self._io(location).exists(location)

    def create(self, location, data):
        return self._io(location).create(location, data)

    def write(self, location, data):
        return self._io(location).write(location, data)

    def delete(self, location):
        return self._io(location).delete(location)

    def size(self, location):
        return self._io(location).size(location)

    def list(self, location):
        return self._io(location).list(location)

    def list_files(self, location):
        return self._io(location).list_files(location)

    def delete_dir(self, location):
        return self._io(location).delete_dir(location)

    def is_dir(self, location):
        return self._io(location).is_dir(location)

    def list_level(self, location):
        return self._io(location).list_level(location)

    def file_sizes(self, location):
        return self._io(location).file_sizes(location)

    def makedirs(self, location):
        return self._io(location).makedirs(location)


def normalize_location(location: str) -> str:
    """A warehouse or table location as a URI: plain local paths become absolute ``file:`` URIs."""
    if "://" in location or location.startswith("file:"):
        return location.rstrip("/")
    return "file://" + os.path.abspath(location)


def file_io_for(location: str | None = None, properties: dict[str, Any] | None = None) -> TableFileIO:
    """The FileIO configured by ``properties`` (Iceberg's FileIO properties, :mod:`sparkberg.io.stores`), which
    serves every location: local files, object stores, HDFS. (``location`` is checked to name a known scheme.)"""
    if location is not None:
        stores.store_of(location)
    return TableFileIO(properties)


def delete_named(named: Iterable[tuple[FileIO, Callable[[], Iterable[str]]]]) -> None:
    """Delete the files each ``(io, paths)`` pair names (``paths()`` is called now)."""
    for io, paths in named:
        for p in paths():
            io.delete(p)


@contextlib.contextmanager
def deleted_on_failure(io: FileIO, paths: Callable[[], Iterable[str]]) -> Iterator[None]:
    """Delete the files ``paths()`` names (called when the block fails) if the block raises, then raise; except
    when a commit's outcome is unknown (CommitStateUnknownException): the files may be the table's now, and
    are kept. (A write of a transaction keeps them at risk after the block too:
    :meth:`sparkberg.operations.request.CommitRequest.written`.)"""
    try:
        yield
    except CommitStateUnknownException:
        raise
    except BaseException:
        for p in paths():
            io.delete(p)
        raise
