"""Puffin files and deletion vectors: the spec's byte layout, 64-bit positions, codecs on read, and the
64-bit Roaring portable format checked against its layout written out key by key."""
import json
import random
import struct
import zlib

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st
import numpy as np
from pyroaring import BitMap

from sparkberg.errors import InvalidMetadataError
from sparkberg.format.puffin import (
    DELETION_VECTOR_V1, DV_MAGIC, MAGIC, PuffinBlobMetadata, deserialize_dv, dv_blob_metadata, dv_position_array,
    dv_positions,
    read_blob, read_footer, serialize_dv, serialize_positions, write_puffin,
)


def test_dv_layout_matches_spec():
    blob = serialize_dv([0, 5, 7])
    (length,) = struct.unpack(">I", blob[:4])
    assert length == len(blob) - 8  # combined length of magic and vector
    assert blob[4:8] == DV_MAGIC == bytes([0xD1, 0xD3, 0x39, 0x64])
    body = blob[4:-4]
    assert struct.unpack(">I", blob[-4:])[0] == zlib.crc32(body)  # CRC over magic + vector, big-endian
    vector = body[4:]
    assert struct.unpack("<q", vector[:8])[0] == 1  # one 32-bit bitmap
    assert struct.unpack("<I", vector[8:12])[0] == 0  # key 0, little-endian
    assert dv_positions(blob) == [0, 5, 7]


def test_64_bit_positions_use_keys():
    positions = [1, 2 ** 32 + 3, 5 * 2 ** 32]
    blob = serialize_dv(positions)
    keys = [k for k, _ in deserialize_dv(blob)]
    assert keys == [0, 1, 5]
    assert dv_positions(blob) == positions


def _portable_layout(positions) -> bytes:
    """The spec's portable 64-bit Roaring layout written out: the number of 32-bit bitmaps (8 bytes, LE), then
    for each high 32 bits ascending its key (4 bytes, LE) and the 32-bit Roaring bitmap of the low 32 bits,
    run-length encoded where that is smaller (as Iceberg Java writes them)."""
    by_key = {}
    for p in positions:
        by_key.setdefault(p >> 32, []).append(p & 0xFFFFFFFF)
    out = bytearray(struct.pack("<q", len(by_key)))
    for key in sorted(by_key):
        bm = BitMap(by_key[key])
        bm.run_optimize()
        out += struct.pack("<I", key) + bm.serialize()
    return bytes(out)


@settings(max_examples=80, deadline=None)
@given(st.sets(st.integers(0, 2 ** 34) | st.integers(0, 70000), max_size=300))
def test_portable_format_is_the_spec_layout(positions):
    want = _portable_layout(positions)
    assert serialize_positions(sorted(positions)) == want
    assert serialize_positions(np.array(sorted(positions), dtype=np.int64)) == want
    shuffled = list(positions) * 2  # (any order, repeats allowed)
    random.Random(len(shuffled)).shuffle(shuffled)
    assert serialize_positions(shuffled) == want
    assert dv_positions(serialize_dv(positions)) == sorted(positions)
    assert dv_position_array(serialize_dv(positions)).tolist() == sorted(positions)


@pytest.mark.parametrize("bad", [-1, 2 ** 63])
def test_a_position_out_of_range_is_named(bad):
    with pytest.raises(ValueError, match=f"position {bad} is not a positive 63-bit value"):
        serialize_dv([0, 7, bad])


def test_runs_are_encoded_compactly():
    blob = serialize_dv(range(100000))
    assert len(blob) < 64  # one run container, as Java's run-length encoded DVs


@pytest.mark.parametrize("mutate,message", [
    (lambda b: b[:-1] + bytes([b[-1] ^ 1]), "CRC-32"),
    (lambda b: b[:4] + b"\x00\x00\x00\x00" + b[8:], "magic"),
    (lambda b: b[:20], "length"),
    (lambda b: b[:3], "too short"),
])
def test_corrupt_dv_is_named(mutate, message):
    with pytest.raises(InvalidMetadataError, match=message) as e:
        deserialize_dv(mutate(serialize_dv([1, 2, 3])), "s3://b/dv.puffin")
    assert "s3://b/dv.puffin" in str(e.value)


def test_puffin_roundtrip_with_dvs():
    blobs = [(dv_blob_metadata("s3://b/a.parquet", 3), serialize_dv([1, 2, 3])),
             (dv_blob_metadata("s3://b/b.parquet", 1), serialize_dv([9]))]
    data, footer = write_puffin(blobs)
    assert data[:4] == MAGIC and data[-4:] == MAGIC
    parsed = read_footer(data, "f.puffin")
    assert parsed.blobs == footer.blobs and parsed.footer_size == footer.footer_size
    b0 = parsed.blobs[0]
    assert (b0.type, b0.snapshot_id, b0.sequence_number) == (DELETION_VECTOR_V1, -1, -1)
    assert b0.properties == {"referenced-data-file": "s3://b/a.parquet", "cardinality": "3"}
    assert b0.offset == 4 and b0.compression_codec is None
    assert dv_positions(read_blob(data, parsed.blobs[1])) == [9]
    assert parsed.properties["created-by"] == "sparkberg"


def _puffin(blob_payload: bytes, codec: str | None, footer_codec: bool):
    meta = {"blobs": [{"type": "t", "fields": [1], "snapshot-id": 2, "sequence-number": 3, "offset": 4,
                       "length": len(blob_payload), **({"compression-codec": codec} if codec else {})}]}
    payload = json.dumps(meta).encode()
    if footer_codec:
        payload = pa.compress(payload, codec="lz4", asbytes=True)
    return MAGIC + blob_payload + MAGIC + payload + struct.pack("<ii", len(payload), 1 if footer_codec else 0) + MAGIC


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_compressed_blobs_and_footer_are_read(codec):
    original = b"some statistics " * 50
    data = _puffin(pa.compress(original, codec=codec, asbytes=True), codec, footer_codec=True)
    footer = read_footer(data)
    assert footer.blobs[0].compression_codec == codec
    assert read_blob(data, footer.blobs[0]) == original


@pytest.mark.parametrize("data,message", [
    (b"", "not a Puffin file"), (b"PFA1PFA1", "not a Puffin file"),
    (MAGIC + MAGIC + b"{}" + struct.pack("<ii", 2, 0) + MAGIC, "blobs"),
    (MAGIC + MAGIC + b"xx" + struct.pack("<ii", 99, 0) + MAGIC, "corrupt Puffin footer"),
])
def test_bad_puffin_files(data, message):
    with pytest.raises(InvalidMetadataError, match=message):
        read_footer(data, "x.puffin")


def test_blob_outside_file_is_rejected():
    meta = PuffinBlobMetadata("t", (1,), 1, 1, 4, 3)
    data, _ = write_puffin([(meta, b"abc")])
    bad = data.replace(b'"length": 3', b'"length": 9999')
    with pytest.raises(InvalidMetadataError):
        read_footer(bad)
