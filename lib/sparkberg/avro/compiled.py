"""Avro object container files decoded into columns by compiled code, for planning at scale.

Planning's wall is decoding manifests: fastavro builds a Python dict per entry. Here the writer schema is compiled
into a short program (one instruction per field, jumps for unions, loops for arrays), and one function,
compiled to machine code by numba, runs it over the records: each value the caller asked for is stored in a
column slot (integers and floats as numpy values, strings and bytes as offsets into the decompressed data),
every other value is only stepped over.

The program runs without the GIL (so threads decode manifests side by side) and checks every read against
the data's end: a malformed file makes :func:`read_columns` return None, and the reference decoder then
names the problem. numba compiles the function once per machine (kept in its on-disk cache).
"""
from __future__ import annotations

import functools
import json
import os
import zlib
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from sparkberg.avro.instructions import (
    OP_ARRAY, OP_BOOLEAN, OP_BYTES, OP_DOUBLE, OP_FIXED, OP_FLOAT, OP_INT, OP_ITEM_END, OP_JUMP,
    OP_KEYED_ARRAY, OP_MAP, OP_MARK, OP_NULL, OP_SKIP_ARRAY, OP_UNION, SKIP_LENGTH, SKIP_VARINT,
)
from sparkberg import state

# ISA-L's inflate (a dependency: see setup.cfg): the same bytes out as zlib's
from isal import isal_zlib as _deflate  # noqa: E402
INFLATE_ERRORS = (zlib.error, _deflate.error)

_SKIP_SHAPES = {"null": 0, "boolean": 1, "int": SKIP_VARINT, "long": SKIP_VARINT, "float": 4, "double": 8,
                "bytes": SKIP_LENGTH, "string": SKIP_LENGTH}
# what a slot holds: integers (boolean, int, long, enum; an array's item count), floats, bytes (string, bytes,
# fixed) as (start, length) in the data
INTS, FLOATS, BYTES = "ints", "floats", "bytes"
ITEMS = "[]"  # the path component of an array's items
MARK = "@"  # the first path component of a mark's slot: (MARK, *path of the field it is before)
_PRIMITIVES = {"null": OP_NULL, "boolean": OP_BOOLEAN, "int": OP_INT, "long": OP_INT, "float": OP_FLOAT,
               "double": OP_DOUBLE, "bytes": OP_BYTES, "string": OP_BYTES}
_KINDS = {OP_BOOLEAN: INTS, OP_INT: INTS, OP_FLOAT: FLOATS, OP_DOUBLE: FLOATS, OP_BYTES: BYTES, OP_FIXED: BYTES}
# The setting that turns compiled decoding off, for a platform where numba does not run (every manifest is then
# decoded by fastavro, the reference decoder), and for tests of the other decoders: "false" (any case) or "0".
SETTING = "SPARKBERG_COMPILED_AVRO"


def enabled() -> bool:
    """Whether compiled decoding is on in this process (:data:`SETTING`, read at each call; on by default)."""
    return os.environ.get(SETTING, "true").strip().lower() not in ("false", "0")


class Unsupported(Exception):
    """A schema or file this decoder does not read (the reference decoder does)."""


@functools.lru_cache(maxsize=1)
def _kernel():
    """The compiled interpreter and gather (:mod:`sparkberg.avro.kernels`)."""
    # imported on first use, not with this module: importing numba and loading the kernels costs a process a
    # noticeable fraction of a second, which planning a small table (decoded by fastavro) does not pay
    from sparkberg.avro import kernels
    return kernels.run, kernels.gather


def load() -> None:
    """Load the compiled code in this process now (when :func:`enabled`), not at the first file it decodes."""
    if enabled():
        _kernel()


def loaded() -> bool:
    """Whether this process has loaded the compiled code already (then it costs nothing more to start)."""
    return _kernel.cache_info().currsize > 0


class Program:
    """A writer schema compiled for :func:`~sparkberg.avro.kernels.run`, keeping the values under ``paths``
    (tuples of field names; :data:`ITEMS` steps into an array's items; a path keeps every value under it).
    ``keys``: arrays of (int key, flat value) records, by path, of which only the items with these keys are
    kept (where such an array has another shape, every item is). ``marks``: fields of records outside arrays
    before which the position in the data is kept, as the int path ``(MARK, *path)``."""

    def __init__(self, schema: Any, paths: Iterable[tuple[str, ...]],
                 keys: Mapping[tuple[str, ...], Iterable[int]] | None = None,
                 marks: Iterable[tuple[str, ...]] = ()):
        self.paths = frozenset(paths)
        self.marks = frozenset(marks)
        self.keys = {path: sorted(set(ids)) for path, ids in (keys or {}).items()}
        self.code: list[list[int]] = []
        self.targets: list[int] = []
        self.slots: dict[tuple[str, ...], tuple[str, int]] = {}  # path -> (kind, index)
        self._counts = {INTS: 0, FLOATS: 0, BYTES: 0}
        # per slot of each kind: the array whose items it holds (its int slot), -1 for the records'
        self._within: dict[str, list[int]] = {INTS: [], FLOATS: [], BYTES: []}
        self._parent: dict[int, int] = {}  # array (int slot) -> the array it is in, -1 for the records
        # items per row of its parent each array was last seen with (its room: 1.25 times that), None until seen
        self.items_per_row: np.ndarray | None = None
        self._names: dict[str, Any] = {}
        self._emit(schema, (), True, 0, -1)
        if not self.code:
            raise Unsupported("an empty record")
        self.code_array = np.array(self.code, np.int64).reshape(-1, 4)
        self.targets_array = np.array(self.targets or [0], np.int64)
        self.lists = np.array(sorted(self._parent), np.int64)  # (parents come before the arrays in them)

    def count(self, kind: str) -> int:
        return self._counts[kind]

    def caps(self, n: int) -> np.ndarray:
        """Each array's room (by int slot) for ``n`` records: 1.25 times its items per row as last seen."""
        caps = np.zeros(max(1, self.count(INTS)), np.int64)
        for a in self.lists.tolist():
            rows = n if self._parent[a] < 0 else caps[self._parent[a]]
            caps[a] = int(self.items_per_row[a] * rows * 1.25) + 16
        return caps

    def learn(self, n: int, counts: np.ndarray) -> None:
        """Remember each array's items per row of its parent (the room the next files get)."""
        ratio = np.zeros(max(1, self.count(INTS)), np.float64)
        for a in self.lists.tolist():
            rows = n if self._parent[a] < 0 else counts[self._parent[a]]
            ratio[a] = counts[a] / max(1, rows)
        self.items_per_row = ratio if self.items_per_row is None else np.maximum(self.items_per_row, ratio)

    def room(self, n: int, caps: np.ndarray) -> dict[str, tuple]:
        """Flat arrays for the values of ``n`` records (each array's items: its room in ``caps``) and each
        slot's base: (ints, valid, bases), (floats, valid, bases), (starts, lengths, valid, bases)."""
        out = {}
        for kind in (INTS, FLOATS, BYTES):
            sizes = np.array([n if a < 0 else caps[a] for a in self._within[kind]], np.int64)
            bases = np.zeros(len(sizes) + 1, np.int64)
            np.cumsum(sizes, out=bases[1:])
            total = max(1, int(bases[-1]))
            if kind == BYTES:  # (offsets into the data: int32, the data is under 2 GiB)
                out[kind] = (np.empty(total, np.int32), np.empty(total, np.int32), np.zeros(total, np.uint8), bases)
            else:
                out[kind] = (np.empty(total, np.float64 if kind == FLOATS else np.int64), np.zeros(total, np.uint8),
                             bases)
        return out

    def _kept(self, path: tuple[str, ...]) -> bool:
        return any(path[:len(p)] == p for p in self.paths)

    def _slot(self, path: tuple[str, ...], kind: str, keep: bool, within: int) -> int:
        if not keep or not self._kept(path):
            return -1
        if path in self.slots:  # (two branches of one union: not a column)
            raise Unsupported(f"field {'.'.join(path)} has values of several types")
        index = self._counts[kind]
        self._counts[kind] += 1
        self.slots[path] = (kind, index)
        self._within[kind].append(within)
        return index

    def _mark(self, path: tuple[str, ...]) -> int:
        if (MARK, *path) in self.slots:
            raise Unsupported(f"field {'.'.join(path)} is in several branches of a union")
        index = self._counts[INTS]
        self._counts[INTS] += 1
        self.slots[(MARK, *path)] = (INTS, index)
        self._within[INTS].append(-1)
        return index

    def _name(self, t: dict) -> None:
        if t.get("type") in ("record", "error", "fixed", "enum") and "name" in t:
            self._names[t["name"]] = t
            if "namespace" in t:
                self._names[f"{t['namespace']}.{t['name']}"] = t

    def _flat_shape(self, t: Any, depth: int) -> list[int] | None:
        """The widths (or :data:`SKIP_VARINT`, :data:`SKIP_LENGTH`) of the values of a flat type, one after the
        other: primitives, fixed, enums and records of those; None for any other (unions, arrays, maps)."""
        if depth > 64:
            return None
        if isinstance(t, str):
            if t in _SKIP_SHAPES:
                return [_SKIP_SHAPES[t]]
            return self._flat_shape(self._names[t], depth + 1) if t in self._names else None
        if not isinstance(t, dict):
            return None
        self._name(t)
        kind = t.get("type")
        if kind in ("record", "error"):
            out: list[int] = []
            for f in t.get("fields", []):
                shape = self._flat_shape(f["type"], depth + 1)
                if shape is None:
                    return None
                out += shape
            return out
        if kind == "fixed":
            return [int(t["size"])]
        if kind == "enum":
            return [SKIP_VARINT]
        return self._flat_shape(kind, depth + 1) if isinstance(kind, str) else None  # ({"type": "long", ...})

    def _keyed_items(self, t: Any, depth: int) -> tuple[str, int] | None:
        """(the value's slot kind, its shape) when an array's items are records of an int or long ``key`` and
        a ``value`` of an integer or bytes type (a metrics map's), else None."""
        if isinstance(t, str) and t in self._names:
            t = self._names[t]
        if not isinstance(t, dict) or t.get("type") not in ("record", "error"):
            return None
        self._name(t)
        fields = t.get("fields", [])
        if [f.get("name") for f in fields] != ["key", "value"]:
            return None
        key, value = (self._flat_shape(f["type"], depth + 1) for f in fields)
        if key != [SKIP_VARINT] or _base(fields[0]["type"], self._names) not in ("int", "long"):
            return None
        base = _base(fields[1]["type"], self._names)
        if base in ("int", "long") and value == [SKIP_VARINT]:
            return INTS, SKIP_VARINT
        if base in ("bytes", "string", "fixed") and value is not None and len(value) == 1:
            return BYTES, value[0]
        return None

    def _emit(self, t: Any, path: tuple[str, ...], keep: bool, depth: int, within: int) -> None:
        if depth > 64:
            raise Unsupported("a recursive schema")
        code = self.code
        if isinstance(t, str):
            if t in _PRIMITIVES:
                op = _PRIMITIVES[t]
                code.append([op, 0, 0, -1 if op == OP_NULL else self._slot(path, _KINDS[op], keep, within)])
                return
            if t not in self._names:
                raise Unsupported(f"unknown type {t!r}")
            return self._emit(self._names[t], path, keep, depth + 1, within)
        if isinstance(t, list):
            branches = [b for b in t if b != "null"]
            keep = keep and len(branches) <= 1  # a union of several types is stepped over
            base = len(self.targets)
            code.append([OP_UNION, base, len(t), -1])
            self.targets.extend([0] * len(t))
            jumps = []
            for i, branch in enumerate(t):
                self.targets[base + i] = len(code)
                self._emit(branch, path, keep, depth + 1, within)
                jumps.append(len(code))
                code.append([OP_JUMP, 0, 0, -1])
            for j in jumps:
                code[j][1] = len(code)
            return
        if not isinstance(t, dict):
            raise Unsupported(f"unknown type {t!r}")
        kind = t.get("type")
        self._name(t)
        if kind in ("record", "error"):
            for f in t.get("fields", []):
                if within < 0 and path + (f["name"],) in self.marks:
                    code.append([OP_MARK, 0, 0, self._mark(path + (f["name"],))])
                self._emit(f["type"], path + (f["name"],), keep, depth + 1, within)
            return
        if kind in ("array", "map"):
            at = len(code)
            slot = self._slot(path, INTS, keep, within)
            shape = self._flat_shape(t["items"] if kind == "array" else t["values"], depth + 1) if slot < 0 else None
            if shape:  # (nothing of it kept: stepped over in one instruction; a map item's key is a string)
                shape = shape if kind == "array" else [SKIP_LENGTH] + shape
                code.append([OP_SKIP_ARRAY, len(self.targets), len(shape), -1])
                self.targets.extend(shape)
                return
            if slot >= 0:
                self._parent[slot] = within
            keyed = self._keyed_items(t["items"], depth + 1) if slot >= 0 and kind == "array" and \
                path in self.keys else None
            if keyed is not None:  # (only the items of some keys kept: one instruction, as OP_SKIP_ARRAY)
                value_kind, value_shape = keyed
                key_slot = self._slot(path + (ITEMS, "key"), INTS, True, slot)
                value_slot = self._slot(path + (ITEMS, "value"), value_kind, True, slot)
                code.append([OP_KEYED_ARRAY, len(self.targets), len(self.keys[path]), slot])
                self.targets.extend([key_slot, value_slot, value_shape, *self.keys[path]])
                return
            code.append([OP_ARRAY if kind == "array" else OP_MAP, 0, 0, slot])
            self._emit(t["items"] if kind == "array" else t["values"], path + (ITEMS,), keep and slot >= 0 and
                       kind == "array", depth + 1, slot)
            code.append([OP_ITEM_END, 0, 0, -1])
            code[at][1] = len(code)
            return
        if kind == "fixed":
            code.append([OP_FIXED, int(t["size"]), 0, self._slot(path, BYTES, keep, within)])
            return
        if kind == "enum":
            code.append([OP_INT, 0, 0, self._slot(path, INTS, keep, within)])
            return
        return self._emit(kind, path, keep, depth + 1, within)


def _base(t: Any, names: Mapping[str, Any]) -> str | None:
    """The Avro type name of a type that is not a union (a named type's kind, a primitive's name)."""
    for _ in range(64):
        if isinstance(t, str):
            if t not in names:
                return t
            t = names[t]
        elif isinstance(t, dict):
            if isinstance(t.get("type"), str) and t["type"] in ("record", "error", "fixed", "enum", "array", "map"):
                return t["type"]
            t = t.get("type")
        else:
            return None
    return None


@functools.lru_cache(maxsize=256)
def program(schema_json: str, paths: frozenset[tuple[str, ...]],
            keys: frozenset[tuple[tuple[str, ...], frozenset[int]]] = frozenset(),
            marks: frozenset[tuple[str, ...]] = frozenset()) -> Program:
    """The compiled program of a writer schema and projection (manifests of a table share a few of each)."""
    return Program(json.loads(schema_json), paths, dict(keys), marks)


class Columns:
    """Decoded records: the values of each kept path. Integers and floats are numpy arrays with a validity
    mask (null where the file held null or another union branch); bytes and strings become Arrow arrays on
    request; an array field is its item count per row, its items being the rows of the paths under it."""

    def __init__(self, n: int, buf: np.ndarray, prog: Program, room: dict[str, tuple], counts: np.ndarray):
        self.num_rows = n
        self._buf = buf
        self._prog = prog
        (self._ints, self._ivalid, self._ibase), (self._floats, self._fvalid, self._fbase), \
            (self._starts, self._lens, self._bvalid, self._bbase) = room[INTS], room[FLOATS], room[BYTES]
        self._counts = counts
        self._offsets: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = {}
        self._item_rows: dict[tuple[str, ...], np.ndarray] = {}
        self.file_rows = [n]  # rows of each file read, in order

    def has(self, path: tuple[str, ...]) -> bool:
        return path in self._prog.slots

    def kind(self, path: tuple[str, ...]) -> str:
        """What a kept path's values are: :data:`INTS`, :data:`FLOATS` or :data:`BYTES`."""
        return self._prog.slots[path][0]

    @property
    def data(self) -> np.ndarray:
        """The decompressed records, one file's after the other's (what marks and bytes' starts point into)."""
        return self._buf

    def rows(self, path: tuple[str, ...]) -> int:
        """How many values ``path`` has: the records' count, or for paths inside arrays, their items'."""
        for i in range(len(path) - 1, -1, -1):
            if path[i] == ITEMS:
                kind, index = self._prog.slots[path[:i]]
                return int(self._counts[index])
        return self.num_rows

    def ints(self, path: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """(values, valid) of an integer (or boolean) path."""
        kind, index = self._prog.slots[path]
        if kind != INTS:
            raise Unsupported(f"{'.'.join(path)} is not an integer")
        n = self.rows(path)
        at = self._ibase[index]
        return self._ints[at:at + n], self._ivalid[at:at + n].view(bool)

    def floats(self, path: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        kind, index = self._prog.slots[path]
        if kind != FLOATS:
            raise Unsupported(f"{'.'.join(path)} is not a float")
        n = self.rows(path)
        at = self._fbase[index]
        return self._floats[at:at + n], self._fvalid[at:at + n].view(bool)

    def binary(self, path: tuple[str, ...], string: bool = False):
        """The values of a bytes, string or fixed path as an Arrow binary (or string) array."""
        return binary_array(*self.raw(path), string=string)

    def raw(self, path: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(data, starts, lengths, valid) of a bytes path: its values in place."""
        kind, index = self._prog.slots[path]
        if kind != BYTES:
            raise Unsupported(f"{'.'.join(path)} is not bytes")
        n = self.rows(path)
        at = self._bbase[index]
        return self._buf, self._starts[at:at + n], self._lens[at:at + n], self._bvalid[at:at + n].view(bool)

    def offsets(self, path: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """(int32 offsets into the items, valid) of an array path: row i's items are offsets[i]:offsets[i+1]."""
        out = self._offsets.get(path)
        if out is None:
            counts, valid = self.ints(path)
            offsets = np.zeros(len(counts) + 1, np.int32)
            np.cumsum(np.where(valid, counts, 0), out=offsets[1:])
            out = self._offsets[path] = offsets, valid
        return out

    def item_rows(self, path: tuple[str, ...]) -> np.ndarray:
        """The row each item of an array path belongs to (ascending), made once per path."""
        out = self._item_rows.get(path)
        if out is None:
            offsets, _ = self.offsets(path)
            out = self._item_rows[path] = np.repeat(np.arange(self.num_rows, dtype=np.int64), np.diff(offsets))
        return out


def binary_array(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, valid: np.ndarray,
                 string: bool = False):
    """The byte strings at (start, length) of ``data`` (null where not ``valid``) as an Arrow binary or string
    array."""
    import pyarrow as pa
    n = len(starts)
    offsets, values = _kernel()[1](data, starts, lengths, valid, n)
    nulls = n - int(np.count_nonzero(valid))
    bitmap = None if nulls == 0 else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.string() if string else pa.binary(), n,
                                 [bitmap, pa.py_buffer(offsets), pa.py_buffer(values)], null_count=nulls)


def header(data: bytes) -> tuple[dict[bytes, bytes], int]:
    """The metadata of an Avro object container file's header and the position of its sync marker."""
    if data[:4] != b"Obj\x01":
        raise Unsupported("not an Avro object container file")
    view = memoryview(data)
    pos = 4
    size = len(data)

    def long() -> int:
        nonlocal pos
        value, pos = _long(data, pos)
        return value

    def raw() -> bytes:
        nonlocal pos
        n = long()
        if n < 0 or pos + n > size:
            raise Unsupported("truncated")
        pos += n
        return bytes(view[pos - n:pos])

    meta: dict[bytes, bytes] = {}
    while True:
        count = long()
        if count == 0:
            return meta, pos
        if count < 0:
            count = -count
            long()  # (the block's size in bytes)
        for _ in range(count):
            key = raw()
            meta[key] = raw()


def container(data: bytes) -> tuple[str, int, np.ndarray]:
    """(writer schema, record count, decompressed blocks) of an Avro object container file."""
    meta, pos = header(data)
    view = memoryview(data)
    size = len(data)
    sync = bytes(view[pos:pos + 16])
    pos += 16
    codec = meta.get(b"avro.codec", b"null")
    if codec not in (b"null", b"deflate") or b"avro.schema" not in meta:
        raise Unsupported(f"codec {codec!r}")
    blocks, n = [], 0
    while pos < size:
        count, at = _long(data, pos)
        length, pos = _long(data, at)
        if count < 0 or length < 0 or pos + length + 16 > size:
            raise Unsupported("truncated")
        block = view[pos:pos + length]
        pos += length
        if bytes(view[pos:pos + 16]) != sync:
            raise Unsupported("bad sync marker")
        pos += 16
        blocks.append(_deflate.decompress(block, -15) if codec == b"deflate" else block)
        n += count
    return meta[b"avro.schema"].decode("utf-8"), n, np.frombuffer(b"".join(blocks), np.uint8)


def _long(data: bytes, pos: int) -> tuple[int, int]:
    """The Avro long at ``pos`` and the position after it."""
    shift = value = 0
    while True:
        if pos >= len(data):
            raise Unsupported("truncated")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (value >> 1) ^ -(value & 1), pos


def read_columns(data: bytes | Sequence[bytes], paths: Iterable[tuple[str, ...]],
                 schema_json: str | None = None,
                 keys: Mapping[tuple[str, ...], Iterable[int]] | None = None,
                 marks: Iterable[tuple[str, ...]] = ()) -> Columns | None:
    """The records of an Avro file, or of several files of one writer schema one after the other (their row
    counts in :attr:`Columns.file_rows`), the values under ``paths`` kept; None when this decoder cannot read
    them (a codec other than null and deflate, files of different schemas, a schema it does
    not handle, malformed data). ``keys``: arrays of (int key, flat value) records (metrics maps) of which only
    the items with these keys are wanted (the others may be left out); ``marks``: see :class:`Program`."""
    if not enabled():
        return None
    kernel = _kernel()
    try:
        parts = [container(d) for d in ([data] if isinstance(data, (bytes, bytearray, memoryview)) else data)]
        schemas = {schema for schema, _, _ in parts}
        if len(schemas) != 1 or (schema_json is not None and schemas != {schema_json}):
            return None
        prog = program(schemas.pop(), frozenset(paths),
                       frozenset((path, frozenset(ids)) for path, ids in (keys or {}).items()), frozenset(marks))
    except (Unsupported, *INFLATE_ERRORS, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    rows = [n for _, n, _ in parts]
    n = sum(rows)
    buf = parts[0][2] if len(parts) == 1 else np.concatenate([b for _, _, b in parts])
    if len(buf) >= 2 ** 31:  # (offsets are int32)
        return None
    run = kernel[0]

    def count() -> np.ndarray | None:
        """Each array's items (a pass that stores nothing), or None for data that does not fit."""
        counts = np.zeros(max(1, prog.count(INTS)), np.int64)
        none = prog.room(0, counts)
        return counts if run(buf, n, prog.code_array, prog.targets_array, *none[INTS], *none[FLOATS], *none[BYTES],
                             counts, counts, False) == len(buf) else None
    # the room for each array's items: as many per row as this program's files had, or counted first
    caps = count() if len(prog.lists) and prog.items_per_row is None else prog.caps(n)
    while True:
        if caps is None:
            return None
        room = prog.room(n, caps)
        counts = np.zeros_like(caps)
        end = run(buf, n, prog.code_array, prog.targets_array, *room[INTS], *room[FLOATS], *room[BYTES], counts, caps,
                  True)
        if end == -1:  # (more items than this program's files had: counted, then decoded again)
            caps = count()
            continue
        if end != len(buf):
            return None
        if len(prog.lists):  # (the next files of this program get room for as many items per row)
            prog.learn(n, counts)
        out = Columns(n, buf, prog, room, counts)
        out.file_rows = rows
        return out


state.register("sparkberg.avro.compiled._kernel", "one (the compiled kernels)", _kernel.cache_clear)
state.register("sparkberg.avro.compiled.program", "256 programs (writer schema and projection)", program.cache_clear)
