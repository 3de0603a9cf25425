"""A columnar cache of decoded manifests, shared by every process of a machine.

Manifests are immutable: once written, a path always holds the same bytes. Planning spends most of its time
turning their Avro into Arrow columns (:mod:`sparkberg.avro.columnar`), so a decoded manifest is worth
keeping. The cache holds them as Arrow IPC files in a local directory, keyed by the manifest's path, its
length and the partition types it was decoded to: the Python workers of an executor (and the driver, when
it plans) all read the same files, memory-mapped, so a hit copies nothing and costs no decoding; the files
outlive the session, like Iceberg Java's manifest cache outlives a scan.

It is off unless the session enables it (Spark conf, read on the driver when planning starts):

- ``spark.sparkberg.manifest-cache.enabled``: ``true`` to use it (default ``false``);
- ``spark.sparkberg.manifest-cache.dir``: where (default ``<tmp>/sparkberg-manifest-cache``, on each
  machine that decodes manifests);
- ``spark.sparkberg.manifest-cache.max-bytes``: the directory's bound (default 1 GiB); the least recently
  used files go first.

Each process also keeps the cache files it has mapped, and the manifest lists it has read, in memory (at most
``max-bytes`` of mapped files; at most :data:`MANIFEST_LISTS` lists listing :data:`MANIFEST_LIST_ENTRIES` manifests
in all; the least recently used dropped first): a repeated scan opens no file for them. The metadata tables keep
the manifest lists they read there whether the cache is on or not (:func:`remembered_manifest_list`), as Iceberg
Java's cached table keeps its snapshots' manifests: a repeated query of ``all_manifests`` reads no list again.
Mapped files cost address space, not heap, and no file descriptor; the metrics a scan looked up in them
(:meth:`ManifestColumns.value`: at most one array per metrics map and field id, one value per entry) stay with them
and go when they are dropped. These are the only copies of a manifest's content that sparkberg keeps; decoded
delete files have their own bounded cache (:mod:`sparkberg.read.deletecache`).

A cache file that cannot be read is a miss (and is removed): the cache never changes what planning returns.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import uuid
from typing import Any, Callable

import pyarrow as pa

from sparkberg.avro.columnar import ManifestColumns
from sparkberg.errors import ValidationError
from sparkberg.lru import LRU
from sparkberg import state

ENABLED = "spark.sparkberg.manifest-cache.enabled"
DIRECTORY = "spark.sparkberg.manifest-cache.dir"
MAX_BYTES = "spark.sparkberg.manifest-cache.max-bytes"
MAX_BYTES_DEFAULT = 1 << 30
# bumped whenever what a cache file holds changes, so files of an older layout are never read
LAYOUT_VERSION = "1"
_PARTITION = "partition:"
MANIFEST_LISTS = 64  # manifest lists each process keeps decoded
MANIFEST_LIST_ENTRIES = 50_000  # and the manifests they list, in all (about 1 KB each as objects)


class ManifestCache:
    """Decoded manifests (:class:`ManifestColumns`) as Arrow IPC files under ``directory``, at most
    ``max_bytes`` of them. Picklable: executors get the settings and open the same directory locally."""

    # this process's mapped cache files (cache file -> columns, weighed in bytes), shared by every cache object of
    # the process (executors unpickle one per task)
    _mapped = LRU()

    def __init__(self, directory: str, max_bytes: int = MAX_BYTES_DEFAULT):
        self.directory = directory
        self.max_bytes = max_bytes
        self._written = 0  # bytes this process added since it last enforced the bound

    def __getstate__(self) -> dict:
        return {"directory": self.directory, "max_bytes": self.max_bytes}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["directory"], state["max_bytes"])

    def _file(self, path: str, length: int, types: Any) -> str:
        key = "\0".join((LAYOUT_VERSION, path, str(length), repr(types)))
        return os.path.join(self.directory, hashlib.sha1(key.encode("utf-8")).hexdigest() + ".arrow")

    def get(self, path: str, length: int, types: Any) -> ManifestColumns | None:
        """The manifest at ``path`` (``length`` bytes) decoded to partition ``types``, if cached."""
        file = self._file(path, length, types)
        hit = self._mapped.get(file)
        if hit is not None:
            return hit
        try:
            table = pa.ipc.open_file(pa.memory_map(file)).read_all()
        except FileNotFoundError:
            return None
        except (OSError, pa.ArrowException):  # a damaged file: drop it and decode again
            _remove(file)
            return None
        try:
            os.utime(file)  # recently used: evicted last
        except OSError:
            pass
        columns, partition = {}, {}
        for name, column in zip(table.column_names, table.columns):
            array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
            if name.startswith(_PARTITION):
                partition[int(name[len(_PARTITION):])] = array
            else:
                columns[name] = array
        mc = ManifestColumns(table.num_rows, columns, partition)
        self._mapped.put(file, mc, table.nbytes, self.max_bytes)
        return mc

    def put(self, path: str, length: int, types: Any, mc: ManifestColumns) -> None:
        """Keep a decoded manifest; a failure to write (disk full, read-only directory) only costs the hit."""
        names = list(mc.columns) + [f"{_PARTITION}{fid}" for fid in mc.partition]
        arrays = list(mc.columns.values()) + list(mc.partition.values())
        table = pa.Table.from_arrays(arrays, names=names) if arrays else pa.table({})
        file = self._file(path, length, types)
        tmp = f"{file}.{uuid.uuid4().hex}.tmp"
        try:
            os.makedirs(self.directory, exist_ok=True)
            with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
            os.replace(tmp, file)  # readers see a whole file or none
            self._written += os.path.getsize(file)
        except (OSError, pa.ArrowException):
            _remove(tmp)
            return
        if self._written > self.max_bytes // 10:
            self._written = 0
            self.evict()

    def evict(self) -> None:
        """Remove the least recently used files until the directory holds at most 80% of ``max_bytes``
        (when it holds more than ``max_bytes``)."""
        try:
            entries = [(st.st_mtime, st.st_size, e.path) for e in os.scandir(self.directory)
                       if e.name.endswith(".arrow") for st in (e.stat(),)]
        except OSError:
            return
        total = sum(size for _, size, _ in entries)
        if total <= self.max_bytes:
            return
        for _, size, file in sorted(entries):
            if total <= self.max_bytes * 0.8:
                break
            _remove(file)
            total -= size


def _remove(file: str) -> None:
    try:
        os.remove(file)
    except OSError:
        pass


def manifest_cache(setting: Callable[[str, str | None], str | None]) -> ManifestCache | None:
    """The session's manifest cache, or None when it is not enabled (the default); ``setting(key, default)`` reads
    the session's settings (:func:`sparkberg.spark.settings.session_conf`: this layer knows no session)."""
    if (setting(ENABLED, "false") or "false").strip().lower() != "true":
        return None
    directory = setting(DIRECTORY, None) or os.path.join(tempfile.gettempdir(), "sparkberg-manifest-cache")
    raw = setting(MAX_BYTES, None)
    try:
        max_bytes = MAX_BYTES_DEFAULT if raw is None else int(raw)
    except ValueError:
        raise ValidationError(f"{MAX_BYTES} must be a number of bytes, got {raw!r}") from None
    return ManifestCache(directory, max_bytes)


_LISTS = LRU()  # this process's decoded manifest lists, by path, weighed by the manifests they list


def remembered_manifest_list(path: str, read: Callable[[], Any]) -> Any:
    """The manifests the manifest list at ``path`` lists (columns that never change: a manifest list, like a
    manifest, never changes once written), decoded by ``read`` on this process's first request and kept in
    memory (:data:`MANIFEST_LISTS`, :data:`MANIFEST_LIST_ENTRIES`)."""
    hit = _LISTS.get(path)
    if hit is not None:
        return hit
    manifests = read()
    _LISTS.put(path, manifests, weight=len(manifests), max_weight=MANIFEST_LIST_ENTRIES,
               max_entries=MANIFEST_LISTS)
    return manifests


def _clear_memory() -> None:
    ManifestCache._mapped.clear()
    _LISTS.clear()


state.register("sparkberg.avro.cache.ManifestCache", f"decoded manifests: {MAX_BYTES} (default "
               f"{MAX_BYTES_DEFAULT >> 20} MiB); manifest lists: {MANIFEST_LISTS}, listing "
               f"{MANIFEST_LIST_ENTRIES} manifests", _clear_memory)
