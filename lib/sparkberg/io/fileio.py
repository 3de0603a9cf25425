"""FileIO: the few operations table metadata needs, for local paths and for any pyarrow filesystem.

Locations are URIs as they appear in metadata (``file:/x``, ``file:///x``, ``s3://b/x``,
``hdfs://nn/x``) or plain local paths. ``create`` never overwrites: on the local file system it
writes a temporary file and links it into place, which fails atomically if the target exists —
the commit primitive of the file-system catalog.
"""
from __future__ import annotations

import contextlib
import os
import uuid
from typing import Callable, Iterable, Iterator
from urllib.parse import urlparse

from sparkberg.errors import CommitStateUnknownException, FileAlreadyExistsError, MissingFileError, SparkbergError


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

    def read(self, location: str) -> bytes:
        raise NotImplementedError

    def read_range(self, location: str, offset: int, length: int) -> bytes:
        """``length`` bytes of a file from ``offset`` (a deletion vector in its Puffin file)."""
        return self.read(location)[offset:offset + length]

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

    def list_files(self, location: str, recursive: bool = True) -> Iterator[tuple[str, int]]:
        """(location, modification time in epoch millis) of every file under a directory location, at any depth
        (``recursive=False``: directly under it); none if it does not exist."""
        raise NotImplementedError

    def delete_dir(self, location: str) -> None:
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
        return os.path.getsize(self._p(location))

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

    def list_files(self, location, recursive=True):
        for d, _, files in os.walk(self._p(location)):
            for f in files:
                path = os.path.join(d, f)
                try:
                    yield "file://" + path, int(os.stat(path).st_mtime * 1000)
                except FileNotFoundError:  # (removed since the directory was read)
                    continue
            if not recursive:
                return

    def is_dir(self, location):
        return os.path.isdir(self._p(location))

    def delete_dir(self, location):
        import shutil
        shutil.rmtree(self._p(location), ignore_errors=True)


class PyArrowFileIO(FileIO):
    """Object stores and HDFS through ``pyarrow.fs``; ``create`` checks then writes (not atomic on
    object stores, which is why the SQL catalog, not the file-system catalog, suits them)."""

    def __init__(self, location: str):
        from pyarrow import fs
        self._fs, _ = fs.FileSystem.from_uri(location)
        self._scheme = urlparse(location).scheme

    def _p(self, location: str) -> str:
        p = urlparse(location)
        return f"{p.netloc}{p.path}" if self._scheme not in ("hdfs", "viewfs") else p.path

    def read(self, location):
        try:
            with self._fs.open_input_stream(self._p(location)) as f:
                return f.read()
        except FileNotFoundError:
            raise MissingFileError(f"file {location} does not exist", location) from None

    def exists(self, location):
        from pyarrow import fs
        return self._fs.get_file_info(self._p(location)).type != fs.FileType.NotFound

    def size(self, location):
        return self._fs.get_file_info(self._p(location)).size

    def makedirs(self, location):
        self._fs.create_dir(self._p(location), recursive=True)

    def create(self, location, data):
        if self.exists(location):
            raise FileAlreadyExistsError(f"file already exists: {location}")
        self.write(location, data)

    def write(self, location, data):
        with self._fs.open_output_stream(self._p(location)) as f:
            f.write(data)

    def delete(self, location):
        try:
            self._fs.delete_file(self._p(location))
        except FileNotFoundError:
            pass

    def list(self, location):
        from pyarrow import fs
        sel = fs.FileSelector(self._p(location), allow_not_found=True)
        return iter(sorted(info.base_name for info in self._fs.get_file_info(sel)))

    def list_files(self, location, recursive=True):
        from pyarrow import fs
        sel = fs.FileSelector(self._p(location), allow_not_found=True, recursive=recursive)
        prefix = location.split("://", 1)[0] + "://"
        for info in self._fs.get_file_info(sel):
            if info.type == fs.FileType.File:
                yield prefix + info.path, int(info.mtime.timestamp() * 1000) if info.mtime is not None else 0

    def is_dir(self, location):
        from pyarrow import fs
        return self._fs.get_file_info(self._p(location)).type == fs.FileType.Directory

    def delete_dir(self, location):
        self._fs.delete_dir(self._p(location))


def normalize_location(location: str) -> str:
    """A warehouse or table location as a URI: plain local paths become absolute ``file:`` URIs."""
    if "://" in location or location.startswith("file:"):
        return location.rstrip("/")
    return "file://" + os.path.abspath(location)


def file_io_for(location: str) -> FileIO:
    """The FileIO for a location: local for ``file:`` and plain paths, pyarrow.fs otherwise."""
    if to_local_path(location) is not None:
        return LocalFileIO()
    return PyArrowFileIO(location)


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
    :meth:`sparkberg.commit.request.CommitRequest.written`.)"""
    try:
        yield
    except CommitStateUnknownException:
        raise
    except BaseException:
        for p in paths():
            io.delete(p)
        raise
