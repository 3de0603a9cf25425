"""Which data file each row read for a merge-on-read scan came from, as a small int (``_file_id``).

Position deletes, DVs, equality deletes and the metadata columns are all matched to rows by their data file.
Spark tells each row's file as a string (``_metadata.file_path``, ``_metadata.file_name``); turning it into an
id with a broadcast join on the path costs a string hash and compare per row. When
the files' names are distinct, a slice of Spark's own ``xxhash64`` of the name that is distinct for every
file of the scan is the id instead: the same function computed here on the driver, checked for collisions
here, and evaluated per row by Spark's generated code with no join. Otherwise (names repeat, or no slice of
the hashes is collision free, which gets likely past a few thousand files) the ids are the files' indexes,
joined on the path.
"""
from __future__ import annotations

import functools
import re
import struct
from typing import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from sparkberg.read.formats import path_key
from sparkberg import state

# ids stay below 2^23: (id << 40 | position) is one positive long per row, positions below 2^40
ID_BITS = 23
_ID_MASK = (1 << ID_BITS) - 1
_SPARK_HASH_SEED = 42  # the seed of Spark's xxhash64()

_P1, _P2, _P3 = 11400714785074694791, 14029467366897019727, 1609587929392839161
_P4, _P5 = 9650029242287828579, 2870177450012600261
_M = (1 << 64) - 1


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M, 31) * _P1) & _M


def xxh64(data: bytes, seed: int = _SPARK_HASH_SEED) -> int:
    """XXH64 of ``data`` as an unsigned 64-bit int: with the default seed, what Spark's ``xxhash64()`` gives
    for a string of these UTF-8 bytes (Spark's value is the same bits, signed)."""
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed & _M, (seed - _P1) & _M]
        while i + 32 <= n:
            lanes = struct.unpack_from("<4Q", data, i)
            v = [_round(a, b) for a, b in zip(v, lanes)]
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M
        for a in v:
            h = ((h ^ _round(0, a)) * _P1 + _P4) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 8 <= n:
        h = (_rotl(h ^ _round(0, struct.unpack_from("<Q", data, i)[0]), 27) * _P1 + _P4) & _M
        i += 8
    if i + 4 <= n:
        h = (_rotl(h ^ ((struct.unpack_from("<I", data, i)[0] * _P1) & _M), 23) * _P2 + _P3) & _M
        i += 4
    while i < n:
        h = (_rotl(h ^ ((data[i] * _P5) & _M), 11) * _P1) & _M
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _M
    h ^= h >> 29
    h = (h * _P3) & _M
    return h ^ (h >> 32)


def file_name(path: str) -> str:
    """The name Spark reports in ``_metadata.file_name`` for a file read by this path (Hadoop's
    ``Path.getName``: the last segment, as written)."""
    return path.rstrip("/").rsplit("/", 1)[-1]


class FileIds:
    """The ``_file_id`` of every data file of a read (``ids``, in the order of the paths given; ``by_key``, by
    :func:`path_key`), and whether Spark can compute it from each row's file name (``shift`` set) or must
    join on the path (``shift`` None: the ids are the files' indexes)."""

    def __init__(self, paths: Sequence[str], max_files: int):
        """``max_files``: past this many files, ids by a join on the path (``ReadTuning.name_ids_max_files``)."""
        self.shift, self.ids = _name_hash_ids([file_name(p) for p in paths], max_files)
        self.by_key = {path_key(p): i for p, i in zip(paths, self.ids)}  # for the joins on the path

    def sql(self) -> str:
        """The id of each row's file, from its name, as a SQL expression (only when ``shift`` is set): one
        expression for the session to parse, where a classic session builds a Column one py4j call a step."""
        assert self.shift is not None
        return name_slice_sql(self.shift, ID_BITS)

    def column(self) -> Column:
        """:meth:`sql` as a Column."""
        return F.expr(self.sql())


# names Hadoop's Path.getName (what Spark reports) cannot spell differently from the path's last segment:
# every name Iceberg Java, PyIceberg and sparkberg give a data file. Any other name takes the join on the path.
# (A per-row check that the name is one of the scan's would cost as much as the hash.)
_PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]+")


@functools.lru_cache(maxsize=1 << 16)
def _name_hash(name: str) -> int:
    """:func:`xxh64` of a file name, remembered: the files of a table are read again and again (~20 us each)."""
    return xxh64(name.encode())


def name_slice_sql(shift: int, bits: int) -> str:
    """``bits`` bits from bit ``shift`` of the hash of each row's file name (``_metadata.file_name``), as the
    SQL Spark evaluates per row: what :func:`_distinct_slice` computes here from :func:`xxh64` of the name."""
    return f"CAST(shiftrightunsigned(xxhash64(_metadata.file_name), {shift}) & {(1 << bits) - 1} AS INT)"


def name_slice(shift: Column, mask: Column) -> Column:
    """:func:`name_slice_sql` with the shift and the mask (``2 ** bits - 1``) given as Columns: values a query reads
    (a scalar subquery), not constants written into its generated code."""
    hashed = F.call_function("shiftrightunsigned", F.expr("xxhash64(_metadata.file_name)"), shift)
    return hashed.bitwiseAND(mask).cast("int")


def _usable_names(names: list[str], max_files: int) -> bool:
    return bool(names) and len(names) <= max_files and len(set(names)) == len(names) and \
        all(_PLAIN_NAME.fullmatch(n) for n in names)


def _distinct_slice(hashes: list[int], bits: int) -> tuple[int, list[int]] | None:
    """(the smallest shift that makes ``bits`` bits of the hashes distinct, those bits of each), or None."""
    mask = (1 << bits) - 1
    for shift in range(64 - bits + 1):
        ids = [(h >> shift) & mask for h in hashes]
        if len(set(ids)) == len(ids):
            return shift, ids
    return None


def _name_hash_ids(names: list[str], max_files: int) -> tuple[int | None, list[int]]:
    """(the smallest shift that makes ``ID_BITS`` bits of the names' hashes distinct, those bits of each name);
    (None, the names' indexes) if the names are not all plain and distinct, or no shift does."""
    found = _distinct_slice([_name_hash(n) for n in names], ID_BITS) if _usable_names(names, max_files) else None
    return found if found is not None else (None, list(range(len(names))))


class FileSlots:
    """Dense ids of a few files, from their names as :class:`FileIds`' are: ``bits`` bits of the hash of each
    name Spark reports, from bit ``shift``, distinct for these files, so that a table of ``2 ** bits`` entries
    indexed by each row's slot (as :func:`name_slice` computes it) finds its file's entry with no join.
    :meth:`of` looks for the fewest bits, up to ``max_bits`` (for n files, expect about 2 log2(n))."""

    def __init__(self, shift: int, bits: int, slots: list[int]):
        self.shift, self.bits, self.slots = shift, bits, slots

    @classmethod
    def of(cls, paths: Sequence[str], max_bits: int) -> FileSlots | None:
        """The slots of ``paths`` (in their order), or None if their names are not all plain and distinct or
        need more than ``max_bits`` bits."""
        return _file_slots(tuple(file_name(p) for p in paths), max_bits)


@functools.lru_cache(maxsize=256)
def _file_slots(names: tuple[str, ...], max_bits: int) -> FileSlots | None:
    """:meth:`FileSlots.of`, remembered: the same files are read again and again. n files in ``2 ** b`` slots
    have about n^2 / 2^(b+1) colliding pairs at a given shift, so past n^2 > 2^(max_bits+4) (8 or more pairs at
    ``max_bits``: no shift is likely to have none) nothing is tried."""
    if not _usable_names(list(names), len(names)) or len(names) ** 2 > 1 << (max_bits + 4):
        return None
    hashes = [_name_hash(n) for n in names]
    for bits in range(max(1, (len(names) - 1).bit_length()), max_bits + 1):
        found = _distinct_slice(hashes, bits)
        if found is not None:
            return FileSlots(found[0], bits, found[1])
    return None


state.register("sparkberg.read.fileids._name_hash", "65,536 file names", _name_hash.cache_clear)
state.register("sparkberg.read.fileids._file_slots", "256 sets of files", _file_slots.cache_clear)
