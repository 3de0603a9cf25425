"""Variant values (Parquet's Variant binary encoding, which Iceberg's ``variant`` stores) and their unshredding.

A variant is two binaries: ``metadata`` (a dictionary of the object keys it uses) and ``value`` (a tree of
primitives, objects and arrays whose objects name their keys by dictionary index). A writer may shred a variant
column (Parquet's VariantShredding): beside ``value`` it then stores a ``typed_value`` column of a Parquet type, an
object's fields as groups of their own ``value`` and ``typed_value``, an array's elements likewise. Reading one
means rebuilding each row's variant from the two, as the shredding spec's table says:

- ``value`` null, ``typed_value`` null: the value is missing (an object's field that is absent);
- ``value`` set, ``typed_value`` null: the value is ``value``, of any type;
- ``value`` null, ``typed_value`` set: the value is the shredded one;
- both set: a partly shredded object, its fields those of ``typed_value`` and of the object in ``value``.

Spark's Parquet reader does this for the files it reads; :func:`unshred` does it for sparkberg's Arrow reader
(tables on object stores, and PySpark before 4.0). A rebuilt variant has a new dictionary of its own keys: equal
as a variant, not byte for byte.
"""
from __future__ import annotations

import decimal
import struct
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from sparkberg.errors import ValidationError

# primitive type ids (the value header of basic type 0)
NULL, TRUE, FALSE, INT8, INT16, INT32, INT64, DOUBLE = 0, 1, 2, 3, 4, 5, 6, 7
DECIMAL4, DECIMAL8, DECIMAL16, DATE, TIMESTAMP, TIMESTAMP_NTZ, FLOAT = 8, 9, 10, 11, 12, 13, 14
BINARY, STRING, TIME_NTZ, TIMESTAMP_NANOS, TIMESTAMP_NTZ_NANOS, UUID = 15, 16, 17, 18, 19, 20
_PRIMITIVE, _SHORT_STRING, _OBJECT, _ARRAY = 0, 1, 2, 3
# fixed-width payloads: (struct format, size)
_FIXED = {INT8: "<b", INT16: "<h", INT32: "<i", INT64: "<q", DOUBLE: "<d", FLOAT: "<f", DATE: "<i",
          TIMESTAMP: "<q", TIMESTAMP_NTZ: "<q", TIME_NTZ: "<q", TIMESTAMP_NANOS: "<q", TIMESTAMP_NTZ_NANOS: "<q"}
_DECIMAL_BYTES = {DECIMAL4: 4, DECIMAL8: 8, DECIMAL16: 16}


class Primitive(NamedTuple):
    """A variant primitive: its type id and its value (an int, float, bool, str or bytes; a decimal as
    (unscaled, scale); dates, times and timestamps as ints in their unit)."""
    type_id: int
    value: Any = None


MISSING = object()  # (an object's field that is absent: neither value nor typed_value)


# --- decoding -----------------------------------------------------------------------------------------------------
def metadata_keys(metadata: bytes) -> list[str]:
    """The dictionary of a variant's metadata."""
    if not metadata or metadata[0] & 0x0F != 1:
        raise ValidationError(f"variant metadata of version {metadata[0] & 0x0F if metadata else None}: only 1 is "
                              "defined")
    width = (metadata[0] >> 6) + 1
    size = _uint(metadata, 1, width)
    offsets = [_uint(metadata, 1 + width * (i + 1), width) for i in range(size + 1)]
    start = 1 + width * (size + 2)
    return [bytes(metadata[start + a:start + b]).decode("utf-8") for a, b in zip(offsets, offsets[1:])]


def decode(keys: list[str], value: bytes, at: int = 0) -> Any:
    """The variant value at ``at`` of ``value`` as a tree: :class:`Primitive`, dict (key -> tree) or list."""
    header = value[at]
    basic, vh = header & 0x3, header >> 2
    if basic == _SHORT_STRING:
        return Primitive(STRING, bytes(value[at + 1:at + 1 + vh]).decode("utf-8"))
    if basic == _PRIMITIVE:
        return _primitive(vh, value, at + 1)
    large = (vh >> (4 if basic == _OBJECT else 2)) & 1
    count_width = 4 if large else 1
    n = _uint(value, at + 1, count_width)
    at += 1 + count_width
    offset_width = (vh & 0x3) + 1
    if basic == _OBJECT:
        id_width = ((vh >> 2) & 0x3) + 1
        ids = [_uint(value, at + i * id_width, id_width) for i in range(n)]
        at += n * id_width
        offsets = [_uint(value, at + i * offset_width, offset_width) for i in range(n + 1)]
        data = at + (n + 1) * offset_width
        return {keys[i]: decode(keys, value, data + o) for i, o in zip(ids, offsets)}
    offsets = [_uint(value, at + i * offset_width, offset_width) for i in range(n + 1)]
    data = at + (n + 1) * offset_width
    return [decode(keys, value, data + o) for o in offsets[:-1]]


def _primitive(type_id: int, value: bytes, at: int) -> Primitive:
    if type_id in (NULL, TRUE, FALSE):
        return Primitive(type_id, type_id == TRUE if type_id != NULL else None)
    fmt = _FIXED.get(type_id)
    if fmt is not None:
        return Primitive(type_id, struct.unpack_from(fmt, value, at)[0])
    if type_id in _DECIMAL_BYTES:
        width = _DECIMAL_BYTES[type_id]
        return Primitive(type_id, (int.from_bytes(value[at + 1:at + 1 + width], "little", signed=True), value[at]))
    if type_id in (BINARY, STRING):
        n = _uint(value, at, 4)
        raw = bytes(value[at + 4:at + 4 + n])
        return Primitive(type_id, raw.decode("utf-8") if type_id == STRING else raw)
    if type_id == UUID:
        return Primitive(type_id, bytes(value[at:at + 16]))
    raise ValidationError(f"variant primitive type {type_id} is not defined")


def _uint(data: bytes, at: int, width: int) -> int:
    return int.from_bytes(data[at:at + width], "little")


# --- encoding -----------------------------------------------------------------------------------------------------
def encode(tree: Any) -> tuple[bytes, bytes]:
    """(metadata, value) of a tree :func:`decode` gives: a sorted dictionary of its keys, and the value."""
    keys: set[str] = set()
    _keys(tree, keys)
    ordered = sorted(keys, key=lambda k: k.encode("utf-8"))
    ids = {k: i for i, k in enumerate(ordered)}
    return _metadata(ordered), _value(tree, ids)


def _keys(tree: Any, out: set[str]) -> None:
    if isinstance(tree, dict):
        out.update(tree)
        for v in tree.values():
            _keys(v, out)
    elif isinstance(tree, list):
        for v in tree:
            _keys(v, out)


def _width(n: int) -> int:
    return 1 if n <= 0xFF else 2 if n <= 0xFFFF else 3 if n <= 0xFFFFFF else 4


def _metadata(keys: list[str]) -> bytes:
    raw = [k.encode("utf-8") for k in keys]
    offsets = [0]
    for r in raw:
        offsets.append(offsets[-1] + len(r))
    width = _width(max(len(keys), offsets[-1]))
    head = bytes([1 | (1 << 4) | ((width - 1) << 6)])  # (version 1, sorted and unique keys)
    return head + b"".join(n.to_bytes(width, "little") for n in (len(keys), *offsets)) + b"".join(raw)


def _value(tree: Any, ids: dict[str, int]) -> bytes:
    if isinstance(tree, dict):
        fields = sorted(tree.items(), key=lambda kv: kv[0].encode("utf-8"))  # (the spec's order of field ids)
        parts = [_value(v, ids) for _, v in fields]
        offsets = _offsets(parts)
        id_width, offset_width = _width(max((ids[k] for k, _ in fields), default=0)), _width(offsets[-1])
        large = len(fields) > 0xFF
        header = _OBJECT | (((int(large) << 4) | ((id_width - 1) << 2) | (offset_width - 1)) << 2)
        return (bytes([header]) + len(fields).to_bytes(4 if large else 1, "little")
                + b"".join(ids[k].to_bytes(id_width, "little") for k, _ in fields)
                + b"".join(o.to_bytes(offset_width, "little") for o in offsets) + b"".join(parts))
    if isinstance(tree, list):
        parts = [_value(v, ids) for v in tree]
        offsets = _offsets(parts)
        offset_width, large = _width(offsets[-1]), len(parts) > 0xFF
        header = _ARRAY | (((int(large) << 2) | (offset_width - 1)) << 2)
        return (bytes([header]) + len(parts).to_bytes(4 if large else 1, "little")
                + b"".join(o.to_bytes(offset_width, "little") for o in offsets) + b"".join(parts))
    return _primitive_value(tree)


def _offsets(parts: list[bytes]) -> list[int]:
    out = [0]
    for p in parts:
        out.append(out[-1] + len(p))
    return out


def _primitive_value(p: Primitive) -> bytes:
    t, v = p
    if t == STRING:
        raw = v.encode("utf-8")
        if len(raw) < 64:
            return bytes([_SHORT_STRING | (len(raw) << 2)]) + raw
        return bytes([t << 2]) + struct.pack("<I", len(raw)) + raw
    head = bytes([t << 2])
    if t in (NULL, TRUE, FALSE):
        return head
    fmt = _FIXED.get(t)
    if fmt is not None:
        return head + struct.pack(fmt, v)
    if t in _DECIMAL_BYTES:
        unscaled, scale = v
        return head + bytes([scale]) + unscaled.to_bytes(_DECIMAL_BYTES[t], "little", signed=True)
    if t == BINARY:
        return head + struct.pack("<I", len(v)) + v
    if t == UUID:
        return head + bytes(v)
    raise ValidationError(f"variant primitive type {t} is not defined")


# --- unshredding --------------------------------------------------------------------------------------------------
def unshred(array: pa.StructArray) -> pa.StructArray:
    """A shredded variant column (``metadata``, ``value``, ``typed_value``) as unshredded variants
    (``metadata``, ``value``), row for row; a null row stays null."""
    n = len(array)
    metadata = array.field("metadata").to_pylist() if n else []
    dictionaries: dict[bytes, list[str]] = {}  # (rows share a few: each parsed once, an empty one too)
    for m in metadata:
        if m is not None and m not in dictionaries:
            dictionaries[m] = metadata_keys(m)
    keys = [None if m is None else dictionaries[m] for m in metadata]
    trees = _group(array, keys)
    valid = array.is_valid().to_pylist()
    out_meta, out_value = [], []
    for ok, tree in zip(valid, trees):
        if not ok or tree is MISSING:
            out_meta.append(None)
            out_value.append(None)
            continue
        m, v = encode(tree)
        out_meta.append(m)
        out_value.append(v)
    return pa.StructArray.from_arrays([pa.array(out_meta, pa.binary()), pa.array(out_value, pa.binary())],
                                      names=["metadata", "value"], mask=array.is_null())


def _group(group: pa.StructArray, keys: list) -> list:
    """Each row's tree of a group of ``value`` and ``typed_value`` (either may be absent), MISSING where both are
    null; ``keys``: each row's dictionary."""
    children = dict(zip([group.type.field(i).name for i in range(group.type.num_fields)], group.flatten()))
    n = len(group)
    value = children.get("value")
    values = value.to_pylist() if value is not None else [None] * n
    typed = children.get("typed_value")
    trees = _typed(typed, keys) if typed is not None else [MISSING] * n
    out = []
    for i, (tree, raw) in enumerate(zip(trees, values)):
        if raw is not None:
            residual = decode(keys[i], raw)
            if tree is MISSING:
                tree = residual
            elif isinstance(tree, dict) and isinstance(residual, dict):
                tree = {**residual, **tree}  # (a partly shredded object: its fields in both)
            # (else both hold a value that is not an object, which the spec does not allow: typed_value's, as
            # its first version told readers to take)
        out.append(tree)
    return out


def _typed(typed: pa.Array, keys: list) -> list:
    """Each row's tree of a ``typed_value`` column (MISSING where it is null)."""
    t = typed.type
    valid = typed.is_valid().to_pylist()
    if pa.types.is_struct(t):  # (a shredded object: a group per field)
        names = [t.field(i).name for i in range(t.num_fields)]
        fields = [_group(child, keys) for child in typed.flatten()]
        return [{name: f[i] for name, f in zip(names, fields) if f[i] is not MISSING} if valid[i] else MISSING
                for i in range(len(typed))]
    if pa.types.is_list(t) or pa.types.is_large_list(t):  # (a shredded array: a group per element)
        parents = pc.list_parent_indices(typed).to_pylist()
        elements = _group(typed.flatten(), [keys[p] for p in parents])
        offsets = typed.offsets.to_pylist()
        base = offsets[0]
        return [[Primitive(NULL) if e is MISSING else e for e in elements[a - base:b - base]] if valid[i]
                else MISSING for i, (a, b) in enumerate(zip(offsets, offsets[1:]))]
    type_id, values = _shredded_primitives(typed)
    return [MISSING if not ok else Primitive(type_id(v), v) for ok, v in zip(valid, values)]


def _shredded_primitives(typed: pa.Array) -> tuple[Any, list]:
    """(value -> its variant type id, the values as :class:`Primitive` holds them) of a shredded primitive
    column, by its Arrow type."""
    t = typed.type
    if isinstance(t, pa.BaseExtensionType):
        typed, t = typed.storage, t.storage_type
    if pa.types.is_boolean(t):
        return (lambda v: TRUE if v else FALSE), typed.to_pylist()
    ints = {8: INT8, 16: INT16, 32: INT32, 64: INT64}
    if pa.types.is_integer(t) and pa.types.is_signed_integer(t):
        return (lambda v, k=ints[t.bit_width]: k), typed.to_pylist()
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return (lambda v, k=FLOAT if pa.types.is_float32(t) else DOUBLE: k), typed.to_pylist()
    if pa.types.is_decimal(t):
        kind = DECIMAL4 if t.precision <= 9 else DECIMAL8 if t.precision <= 18 else DECIMAL16
        values = [None if d is None else (int(d.scaleb(t.scale, decimal.Context(prec=76))), t.scale)
                  for d in typed.to_pylist()]
        return (lambda v: kind), values
    if pa.types.is_date32(t):
        return (lambda v: DATE), typed.cast(pa.int32()).to_pylist()
    if pa.types.is_timestamp(t) and t.unit in ("us", "ns"):
        nanos = t.unit == "ns"
        kind = (TIMESTAMP_NANOS if nanos else TIMESTAMP) if t.tz else (TIMESTAMP_NTZ_NANOS if nanos else TIMESTAMP_NTZ)
        return (lambda v: kind), typed.cast(pa.int64()).to_pylist()
    if pa.types.is_time64(t) and t.unit == "us":
        return (lambda v: TIME_NTZ), typed.cast(pa.int64()).to_pylist()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return (lambda v: STRING), typed.to_pylist()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return (lambda v: BINARY), typed.to_pylist()
    if pa.types.is_fixed_size_binary(t) and t.byte_width == 16:
        return (lambda v: UUID), typed.to_pylist()
    raise ValidationError(f"a variant shredded as {t}, which the variant shredding spec does not define")
