"""The Parquet footer's ``VARIANT``, ``GEOMETRY`` and ``GEOGRAPHY`` annotations, which pyarrow cannot write as the
Iceberg spec's "Parquet" section asks (pyarrow writes neither a variant's nor an ellipsoidal geography's, and drops
some CRSs): the footer (a ``FileMetaData`` struct in Thrift's compact protocol) read as generic fields, the schema
elements of those columns given their logical type, and written back. Readers such as DuckDB find a variant or a
geometry by that annotation alone (unannotated, they read a struct of two binaries, or a binary they will not cast).

Only the footer changes: the column chunks' offsets are absolute positions in the file, and the footer follows them.
"""
from __future__ import annotations

import struct
from typing import Any

from sparkberg.format import types as T

# Thrift compact protocol type codes
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)
# parquet.thrift: FileMetaData.schema, SchemaElement.field_id / logicalType; LogicalType's VARIANT
# (VariantType.specification_version), GEOMETRY (GeometryType.crs) and GEOGRAPHY (GeographyType.crs, .algorithm,
# an EdgeInterpolationAlgorithm)
_SCHEMA, _FIELD_ID, _LOGICAL_TYPE = 2, 9, 10
_VARIANT, _GEOMETRY, _GEOGRAPHY = 16, 17, 18
_SPEC_VERSION, _CRS, _ALGORITHM = 1, 1, 2
_EDGES = {"spherical": 0, "vincenty": 1, "thomas": 2, "andoyer": 3, "karney": 4}
DEFAULT_CRS = "OGC:CRS84"  # (Parquet's default too: left out)
MAGIC = b"PAR1"

Field = tuple[int, int, Any]  # (field id, compact type, value)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        out = shift = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return out

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, t: int) -> Any:
        if t in (_TRUE, _FALSE):
            return t == _TRUE
        if t == _BYTE:
            b = self.byte()
            return b - 256 if b > 127 else b
        if t in (_I16, _I32, _I64):
            return self.zigzag()
        if t == _DOUBLE:
            self.pos += 8
            return struct.unpack_from("<d", self.data, self.pos - 8)[0]
        if t == _BINARY:
            n = self.varint()
            self.pos += n
            return bytes(self.data[self.pos - n:self.pos])
        if t in (_LIST, _SET):
            head = self.byte()
            n, et = head >> 4, head & 0x0F
            if n == 15:
                n = self.varint()
            return et, [self.byte() == _TRUE if et in (_TRUE, _FALSE) else self.value(et) for _ in range(n)]
        if t == _MAP:
            n = self.varint()
            if not n:
                return 0, 0, []
            kv = self.byte()
            return kv >> 4, kv & 0x0F, [(self.value(kv >> 4), self.value(kv & 0x0F)) for _ in range(n)]
        if t == _STRUCT:
            fields: list[Field] = []
            last = 0
            while True:
                head = self.byte()
                if head == _STOP:
                    return fields
                delta, ft = head >> 4, head & 0x0F
                fid = last + delta if delta else self.zigzag()
                fields.append((fid, ft, self.value(ft)))
                last = fid
        raise ValueError(f"Thrift compact type {t} at byte {self.pos} of a Parquet footer")


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


def _write(t: int, v: Any) -> bytes:
    if t in (_TRUE, _FALSE):
        return b""  # (a struct field's bool is in its header)
    if t == _BYTE:
        return bytes([v & 0xFF])
    if t in (_I16, _I32, _I64):
        return _zigzag(v)
    if t == _DOUBLE:
        return struct.pack("<d", v)
    if t == _BINARY:
        return _varint(len(v)) + v
    if t in (_LIST, _SET):
        et, items = v
        head = bytes([(len(items) << 4) | et]) if len(items) < 15 else bytes([0xF0 | et]) + _varint(len(items))
        return head + b"".join(bytes([_TRUE if x else _FALSE]) if et in (_TRUE, _FALSE) else _write(et, x)
                               for x in items)
    if t == _MAP:
        kt, vt, items = v
        if not items:
            return b"\x00"
        return _varint(len(items)) + bytes([(kt << 4) | vt]) + b"".join(_write(kt, k) + _write(vt, x)
                                                                        for k, x in items)
    if t == _STRUCT:
        out, last = bytearray(), 0
        for fid, ft, value in v:
            if ft in (_TRUE, _FALSE):
                ft = _TRUE if value else _FALSE
            delta = fid - last
            out += bytes([(delta << 4) | ft]) if 0 < delta <= 15 else bytes([ft]) + _zigzag(fid)
            out += _write(ft, value)
            last = fid
        return bytes(out) + b"\x00"
    raise ValueError(f"Thrift compact type {t}")


def logical_type(t: Any) -> Field | None:
    """The member of Parquet's ``LogicalType`` union that annotates a column of Iceberg type ``t`` where pyarrow
    cannot write it (variant, geometry, geography), or None."""
    if isinstance(t, T.VariantType):
        return _VARIANT, _STRUCT, [(_SPEC_VERSION, _BYTE, 1)]
    if isinstance(t, (T.GeometryType, T.GeographyType)):
        fields = [] if t.crs == DEFAULT_CRS else [(_CRS, _BINARY, t.crs.encode())]
        if isinstance(t, T.GeometryType):
            return _GEOMETRY, _STRUCT, fields
        if t.algorithm != "spherical":
            fields.append((_ALGORITHM, _I32, _EDGES[t.algorithm]))
        return _GEOGRAPHY, _STRUCT, fields
    return None


def annotate(footer: bytes, annotations: dict[int, Field]) -> bytes:
    """A ``FileMetaData`` (its Thrift bytes) whose schema elements with a field id of ``annotations`` (and no logical
    type yet) get that logical type (:func:`logical_type`), the rest as it was."""
    meta = _Reader(footer).value(_STRUCT)
    for i, (fid, ft, value) in enumerate(meta):
        if fid != _SCHEMA:
            continue
        et, elements = value
        for element in elements:
            own = {f: v for f, _, v in element}
            if own.get(_FIELD_ID) in annotations and _LOGICAL_TYPE not in own:
                element.append((_LOGICAL_TYPE, _STRUCT, [annotations[own[_FIELD_ID]]]))
                element.sort(key=lambda f: f[0])
    return _write(_STRUCT, meta)


def logical_type_ids(footer: bytes) -> dict[int, list[int]]:
    """Each schema element's field id -> the field ids set in its ``logicalType`` union (which type it is)."""
    out = {}
    for fid, _, value in _Reader(footer).value(_STRUCT):
        if fid == _SCHEMA:
            for element in value[1]:
                own = {f: v for f, _, v in element}
                if _FIELD_ID in own and _LOGICAL_TYPE in own:
                    out[own[_FIELD_ID]] = [f for f, _, _ in own[_LOGICAL_TYPE]]
    return out


class AnnotatedFooterSink:
    """A file-like sink for pyarrow's ``ParquetWriter`` that passes every write through to ``sink``, but holds what
    the writer writes once :meth:`hold` is called (the last row group and the footer, which ``close`` writes) and
    writes it with the footer's columns annotated (:func:`annotate`, ``annotations`` by field id) at
    :meth:`finish`."""

    def __init__(self, sink: Any, annotations: dict[int, Field]):
        self.sink, self.annotations = sink, annotations
        self.held: bytearray | None = None
        self.position = 0
        self.closed = False

    def write(self, data: Any) -> int:
        data = bytes(data)
        if self.held is not None:
            self.held += data
        else:
            self.sink.write(data)
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def hold(self) -> None:
        """Hold what is written from now on (call before the writer's ``close``)."""
        self.held = bytearray()

    def finish(self) -> int:
        """Write what was held, its footer annotated; the file's size."""
        held = bytes(self.held or b"")
        length = struct.unpack("<I", held[-8:-4])[0]
        if held[-4:] != MAGIC or length + 8 > len(held):
            raise ValueError("the Parquet writer's footer was not where it should be")
        start = len(held) - 8 - length
        footer = annotate(held[start:-8], self.annotations)
        self.sink.write(held[:start] + footer + struct.pack("<I", len(footer)) + MAGIC)
        self.held = None
        return self.position - length + len(footer)
