"""Puffin files and the ``deletion-vector-v1`` blob (puffin-spec.md; spec "Deletion Vectors").

Pure functions over bytes: the caller does the I/O. A deletion vector is the set of deleted row
positions of one data file; its blob is ``len (4, BE) | magic D1 D3 39 64 | portable 64-bit Roaring
bitmap | CRC-32 (4, BE)`` where the CRC covers magic and bitmap.
"""
from __future__ import annotations

import array
import json
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
from pyroaring import BitMap, BitMap64

from sparkberg.errors import InvalidMetadataError, NotSupportedError
from sparkberg.format.metadata_columns import ROW_POSITION

MAGIC = b"PFA1"
FOOTER_STRUCT_LEN = 12  # payload size (4) + flags (4) + magic (4)
FLAG_COMPRESSED = 0x1
DV_MAGIC = bytes([0xD1, 0xD3, 0x39, 0x64])
DELETION_VECTOR_V1 = "deletion-vector-v1"
CREATED_BY = "sparkberg"


@dataclass(frozen=True)
class PuffinBlobMetadata:
    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int
    length: int
    compression_codec: str | None = None
    properties: dict[str, str] = field(default_factory=dict, hash=False)

    def to_json(self) -> dict:
        out: dict[str, Any] = {"type": self.type, "fields": list(self.fields), "snapshot-id": self.snapshot_id,
                               "sequence-number": self.sequence_number, "offset": self.offset,
                               "length": self.length}
        if self.compression_codec is not None:
            out["compression-codec"] = self.compression_codec
        if self.properties:
            out["properties"] = dict(self.properties)
        return out

    @staticmethod
    def from_json(obj: dict, path: str | None) -> "PuffinBlobMetadata":
        try:
            return PuffinBlobMetadata(obj["type"], tuple(obj["fields"]), int(obj["snapshot-id"]),
                                      int(obj["sequence-number"]), int(obj["offset"]), int(obj["length"]),
                                      obj.get("compression-codec"), dict(obj.get("properties") or {}))
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidMetadataError(f"malformed Puffin blob metadata: {e}", path, "blobs") from None


@dataclass(frozen=True)
class PuffinFooter:
    blobs: tuple[PuffinBlobMetadata, ...]
    properties: dict[str, str] = field(default_factory=dict, hash=False)
    footer_size: int = 0  # total footer size in bytes (magic through trailing magic)


def _decompress(codec: str | None, data: bytes, path: str | None) -> bytes:
    """Decompress a single lz4 or zstd frame (pyarrow's codecs, already a dependency)."""
    if codec is None:
        return data
    if codec not in ("lz4", "zstd"):
        raise NotSupportedError(f"unsupported Puffin compression codec {codec!r} in {path}")
    import pyarrow as pa

    try:
        with pa.CompressedInputStream(pa.BufferReader(data), codec) as stream:
            return stream.read()
    except (OSError, pa.ArrowException) as e:
        raise InvalidMetadataError(f"corrupt {codec} data: {e}", path) from None


def read_footer(data: bytes, path: str | None = None) -> PuffinFooter:
    """Parse the footer of a whole Puffin file given as bytes."""
    n = len(data)
    if n < len(MAGIC) * 2 + FOOTER_STRUCT_LEN or data[:4] != MAGIC or data[-4:] != MAGIC:
        raise InvalidMetadataError("not a Puffin file (bad magic or truncated)", path)
    payload_size, flags = struct.unpack("<ii", data[-12:-4])
    start = n - FOOTER_STRUCT_LEN - payload_size - 4
    if payload_size < 0 or start < 4 or data[start:start + 4] != MAGIC:
        raise InvalidMetadataError("corrupt Puffin footer (bad payload size or magic)", path)
    payload = data[start + 4:start + 4 + payload_size]
    if flags & FLAG_COMPRESSED:
        payload = _decompress("lz4", payload, path)
    try:
        meta = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InvalidMetadataError(f"malformed Puffin footer JSON: {e}", path) from None
    if not isinstance(meta, dict) or not isinstance(meta.get("blobs"), list):
        raise InvalidMetadataError("Puffin footer is missing required field 'blobs'", path, "blobs")
    blobs = tuple(PuffinBlobMetadata.from_json(b, path) for b in meta["blobs"])
    for b in blobs:
        if b.offset < 4 or b.offset + b.length > start:
            raise InvalidMetadataError(f"Puffin blob at offset {b.offset} length {b.length} lies outside the file",
                                       path, "blobs")
    return PuffinFooter(blobs, dict(meta.get("properties") or {}), n - start)


def read_blob(data: bytes, blob: PuffinBlobMetadata, path: str | None = None) -> bytes:
    """The (decompressed) bytes of one blob of a Puffin file given as bytes."""
    return _decompress(blob.compression_codec, data[blob.offset:blob.offset + blob.length], path)


def write_puffin(blobs: Iterable[tuple[PuffinBlobMetadata, bytes]], properties: dict[str, str] | None = None
                 ) -> tuple[bytes, PuffinFooter]:
    """Serialize blobs (uncompressed) into a Puffin file; offsets/lengths in the metadata are filled in."""
    out = bytearray(MAGIC)
    metas = []
    for meta, payload in blobs:
        if meta.compression_codec is not None:
            raise NotSupportedError("sparkberg writes uncompressed Puffin blobs only")
        metas.append(PuffinBlobMetadata(meta.type, meta.fields, meta.snapshot_id, meta.sequence_number,
                                        len(out), len(payload), None, meta.properties))
        out += payload
    props = {"created-by": CREATED_BY, **(properties or {})}
    payload = json.dumps({"blobs": [m.to_json() for m in metas], "properties": props}).encode("utf-8")
    footer_start = len(out)
    out += MAGIC + payload + struct.pack("<ii", len(payload), 0) + MAGIC
    return bytes(out), PuffinFooter(tuple(metas), props, len(out) - footer_start)


# --- deletion vectors ---------------------------------------------------------------------------------

def serialize_positions(positions: Iterable[int] | np.ndarray) -> bytes:
    """Portable 64-bit Roaring serialization of row positions (keys = high 32 bits, run-optimized), made by
    CRoaring's 64-bit bitmap from the positions as one array."""
    bitmap = BitMap64(array.array("Q", position_array(positions).tobytes()))
    bitmap.run_optimize()  # Iceberg Java run-length encodes before serializing
    return bitmap.serialize()


def position_array(positions: Iterable[int] | np.ndarray) -> np.ndarray:
    """Row positions as an int64 array; ValueError naming the first that is not a positive 63-bit value."""
    values = positions if isinstance(positions, (np.ndarray, list, tuple, range)) else list(positions)
    try:
        out = np.asarray(values, dtype=np.int64) if isinstance(values, np.ndarray) else \
            np.fromiter(values, dtype=np.int64, count=len(values))
    except OverflowError:
        out = None
    if out is None or (out.size and out.min() < 0):
        bad = next(int(p) for p in values if int(p) < 0 or int(p) >> 63)
        raise ValueError(f"deleted row position {bad} is not a positive 63-bit value")
    return out


def deserialize_positions(data: bytes, path: str | None = None) -> list[tuple[int, BitMap]]:
    """Parse a portable 64-bit Roaring bitmap into (key, 32-bit bitmap) pairs, keys ascending."""
    try:
        (count,) = struct.unpack_from("<q", data, 0)
        if count < 0:
            raise ValueError(f"negative bitmap count {count}")
        pos = 8
        out = []
        last_key = -1
        for _ in range(count):
            (key,) = struct.unpack_from("<I", data, pos)
            pos += 4
            if key <= last_key:
                raise ValueError("bitmap keys are not strictly ascending")
            last_key = key
            bm = BitMap.deserialize(bytes(data[pos:]))
            pos += len(bm.serialize())  # a deserialized bitmap re-serializes to the bytes it was read from
            out.append((key, bm))
    except (struct.error, ValueError) as e:
        raise InvalidMetadataError(f"corrupt deletion vector bitmap: {e}", path) from None
    if pos != len(data):
        raise InvalidMetadataError(f"deletion vector bitmap has {len(data) - pos} trailing bytes", path)
    return out


def serialize_dv(positions: Iterable[int] | np.ndarray) -> bytes:
    """The ``deletion-vector-v1`` blob for a set of deleted row positions (in any order, repeats allowed)."""
    body = DV_MAGIC + serialize_positions(positions)
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def deserialize_dv(blob: bytes, path: str | None = None) -> list[tuple[int, BitMap]]:
    """Parse and verify a ``deletion-vector-v1`` blob into (key, bitmap) pairs."""
    if len(blob) < 12:
        raise InvalidMetadataError(f"deletion vector blob too short ({len(blob)} bytes)", path)
    (length,) = struct.unpack_from(">I", blob, 0)
    if length + 8 != len(blob):
        raise InvalidMetadataError(f"deletion vector length {length} does not match blob size {len(blob)}", path)
    body = blob[4:4 + length]
    if body[:4] != DV_MAGIC:
        raise InvalidMetadataError("deletion vector has bad magic bytes", path)
    (crc,) = struct.unpack_from(">I", blob, 4 + length)
    if zlib.crc32(body) & 0xFFFFFFFF != crc:
        raise InvalidMetadataError("deletion vector CRC-32 mismatch", path)
    return deserialize_positions(body[4:], path)


def dv_positions(blob: bytes, path: str | None = None) -> list[int]:
    """The deleted row positions of a ``deletion-vector-v1`` blob, ascending."""
    return dv_position_array(blob, path).tolist()


def dv_position_array(blob: bytes, path: str | None = None) -> np.ndarray:
    """:func:`dv_positions` as an int64 array."""
    parts = [np.frombuffer(bm.to_array(), dtype=np.uint32).astype(np.int64) | (key << 32)
             for key, bm in deserialize_dv(blob, path)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def dv_blob_metadata(referenced_data_file: str, cardinality: int) -> PuffinBlobMetadata:
    """Blob metadata for a DV (snapshot id and sequence number are -1 until committed, per spec)."""
    return PuffinBlobMetadata(DELETION_VECTOR_V1, (ROW_POSITION.field_id,), -1, -1, 0, 0, None,
                              {"referenced-data-file": referenced_data_file, "cardinality": str(cardinality)})
