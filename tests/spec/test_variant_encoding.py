"""Variant values, drawn from Parquet's Variant encoding and shredding specs (which Iceberg's ``variant`` stores):
every primitive, objects and arrays small and large, and shredded columns rebuilt as the shredding spec's table
and examples say (a value shredded as a primitive, objects with fields missing, null and left in ``value``,
arrays of shredded elements)."""
import decimal
import struct

import pyarrow as pa
import pytest

from sparkberg.format import variant as V
from sparkberg.format.variant import Primitive as P


def plain(tree):
    """A tree as plain Python: primitives by their value (a decimal as a Decimal), objects as dicts."""
    if isinstance(tree, dict):
        return {k: plain(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [plain(v) for v in tree]
    if tree.type_id in (V.DECIMAL4, V.DECIMAL8, V.DECIMAL16):
        return decimal.Decimal(tree.value[0]).scaleb(-tree.value[1])
    return tree.value


def round_trip(tree):
    metadata, value = V.encode(tree)
    return V.decode(V.metadata_keys(metadata), value)


PRIMITIVES = [P(V.NULL), P(V.TRUE, True), P(V.FALSE, False), P(V.INT8, -128), P(V.INT16, 32767),
              P(V.INT32, -2 ** 31), P(V.INT64, 2 ** 63 - 1), P(V.DOUBLE, 1e300), P(V.FLOAT, 1.5),
              P(V.DECIMAL4, (-12345, 2)), P(V.DECIMAL8, (10 ** 17, 3)), P(V.DECIMAL16, (-(10 ** 37), 10)),
              P(V.DATE, -1), P(V.TIMESTAMP, 1_700_000_000_123_456), P(V.TIMESTAMP_NTZ, -1),
              P(V.TIME_NTZ, 86_399_999_999), P(V.TIMESTAMP_NANOS, -1),
              P(V.TIMESTAMP_NTZ_NANOS, 1_700_000_000_123_456_789), P(V.BINARY, b"\x00\xff"), P(V.STRING, ""),
              P(V.STRING, "ünïcode"), P(V.STRING, "x" * 64), P(V.UUID, bytes(range(16)))]


@pytest.mark.parametrize("p", PRIMITIVES, ids=lambda p: f"{p.type_id}")
def test_every_primitive_round_trips(p):
    assert round_trip(p) == p


def test_strings_under_64_bytes_are_short_strings():
    _, value = V.encode(P(V.STRING, "n/a"))
    assert value == bytes([0b1101]) + b"n/a"  # (basic type 1, length 3: the shredding spec's example 13 6E 2F 61)
    _, value = V.encode(P(V.STRING, "y" * 64))
    assert value[0] == V.STRING << 2 and struct.unpack_from("<I", value, 1)[0] == 64


def test_objects_and_arrays_empty_deep_and_large():
    assert round_trip({}) == {} and round_trip([]) == []
    deep = P(V.INT8, 1)
    for i in range(40):
        deep = {f"k{i % 3}": [deep, P(V.NULL)]}
    assert round_trip(deep) == deep
    # 300 keys: a large object (4-byte count) with 2-byte field ids; 70,000 bytes of values: 3-byte offsets
    wide = {f"key{i:03d}": P(V.STRING, "v" * 200 if i % 2 else str(i)) for i in range(300)}
    metadata, value = V.encode(wide)
    header = value[0] >> 2
    assert header >> 4 & 1 == 1 and (header >> 2 & 3) + 1 == 2 and (header & 3) + 1 == 2
    assert V.decode(V.metadata_keys(metadata), value) == wide
    long_array = [P(V.INT64, i) for i in range(1000)]
    assert round_trip(long_array) == long_array
    assert round_trip({"b": P(V.INT8, 1), "a": {"b": P(V.INT8, 2)}}) == {"a": {"b": P(V.INT8, 2)}, "b": P(V.INT8, 1)}


def test_metadata_is_a_sorted_dictionary_of_the_keys():
    metadata, value = V.encode({"b": P(V.NULL), "a": {"c": P(V.NULL), "b": P(V.NULL)}})
    assert metadata[0] & 0x0F == 1 and metadata[0] >> 4 & 1 == 1  # (version 1, sorted)
    assert V.metadata_keys(metadata) == ["a", "b", "c"]
    # an object's field ids are listed in the order of their keys
    assert value[0] & 3 == 2 and list(value[2:4]) == [0, 1]


# --- shredding --------------------------------------------------------------------------------------------------
EMPTY = V.encode(P(V.NULL))[0]  # (a dictionary without keys)


def shredded(value, typed, metadata=None, mask=None):
    n = len(value)
    return pa.StructArray.from_arrays([pa.array(metadata or [EMPTY] * n, pa.binary()), value, typed],
                                      names=["metadata", "value", "typed_value"], mask=mask)


def rows(array):
    out = []
    for r in V.unshred(array).to_pylist():
        out.append(None if r is None else plain(V.decode(V.metadata_keys(r["metadata"]), r["value"])))
    return out


def test_a_value_shredded_as_a_primitive():
    # the spec's series of measurements 34, null, "n/a", 100 (typed_value an int64)
    value = pa.array([None, bytes([0]), bytes([0b1101]) + b"n/a", None], pa.binary())
    typed = pa.array([34, None, None, 100], pa.int64())
    assert rows(shredded(value, typed)) == [34, None, "n/a", 100]
    got = V.unshred(shredded(value, typed)).to_pylist()
    assert V.decode([], got[0]["value"]) == P(V.INT64, 34)  # (the shredded type kept)


def test_objects_shredded_with_fields_missing_null_and_left_in_value():
    # fields event_type (string) and event_ts (timestamp) shredded; others stay in value as an object
    def field(values, typed):
        return pa.StructArray.from_arrays([pa.array(values, pa.binary()), typed], names=["value", "typed_value"])
    meta, residual = V.encode({"extra": P(V.INT8, 5), "event_type": P(V.NULL)})
    typed = pa.StructArray.from_arrays(
        [field([None, None, bytes([0]), None], pa.array(["login", None, None, "x"], pa.string())),
         field([None, None, None, None],
               pa.array([1_700_000_000_000_000, None, None, None], pa.timestamp("us", "UTC")))],
        names=["event_type", "event_ts"], mask=pa.array([False, True, False, False]))
    value = pa.array([None, V.encode(P(V.INT32, 7))[1], residual, None], pa.binary())
    got = rows(shredded(value, typed, metadata=[EMPTY, EMPTY, meta, EMPTY]))
    assert got == [{"event_type": "login", "event_ts": 1_700_000_000_000_000},  # (fully shredded)
                   7,  # (not an object: typed_value null, the value whole)
                   {"event_type": None, "extra": 5},  # (a field present as null; another left in value)
                   {"event_type": "x"}]  # (event_ts missing: both null)
    first = V.unshred(shredded(value, typed, metadata=[EMPTY, EMPTY, meta, EMPTY])).to_pylist()[0]
    assert V.decode(V.metadata_keys(first["metadata"]), first["value"])["event_ts"].type_id == V.TIMESTAMP


def test_arrays_of_shredded_elements_and_null_rows():
    # the spec's tags: ["comedy", "drama"], ["horror", null], ["comedy", "drama", "romance"], null
    elements = pa.StructArray.from_arrays(
        [pa.array([None, None, None, bytes([0]), None, None, None], pa.binary()),
         pa.array(["comedy", "drama", "horror", None, "comedy", "drama", "romance"], pa.string())],
        names=["value", "typed_value"])
    typed = pa.ListArray.from_arrays(pa.array([0, 2, 4, 7, 7], pa.int32()), elements,
                                     mask=pa.array([False, False, False, True]))
    value = pa.array([None, None, None, None], pa.binary())
    array = shredded(value, typed, mask=pa.array([False, False, False, True]))
    assert rows(array) == [["comedy", "drama"], ["horror", None], ["comedy", "drama", "romance"], None]
    assert rows(array.slice(1, 2)) == [["horror", None], ["comedy", "drama", "romance"]]


def test_every_shredded_primitive_type_keeps_its_variant_type():
    cases = [(pa.array([True], pa.bool_()), P(V.TRUE, True)), (pa.array([-3], pa.int8()), P(V.INT8, -3)),
             (pa.array([7], pa.int16()), P(V.INT16, 7)), (pa.array([7], pa.int32()), P(V.INT32, 7)),
             (pa.array([1.5], pa.float32()), P(V.FLOAT, 1.5)), (pa.array([2.5], pa.float64()), P(V.DOUBLE, 2.5)),
             (pa.array([decimal.Decimal("-1.25")], pa.decimal128(5, 2)), P(V.DECIMAL4, (-125, 2))),
             (pa.array([decimal.Decimal("1.000")], pa.decimal128(18, 3)), P(V.DECIMAL8, (1000, 3))),
             (pa.array([decimal.Decimal("1")], pa.decimal128(38, 0)), P(V.DECIMAL16, (1, 0))),
             (pa.array([-1], pa.int32()).cast(pa.date32()), P(V.DATE, -1)),
             (pa.array([5], pa.int64()).cast(pa.timestamp("us")), P(V.TIMESTAMP_NTZ, 5)),
             (pa.array([-1], pa.int64()).cast(pa.timestamp("ns", "UTC")), P(V.TIMESTAMP_NANOS, -1)),
             (pa.array([9], pa.int64()).cast(pa.timestamp("ns")), P(V.TIMESTAMP_NTZ_NANOS, 9)),
             (pa.array([60_000_000], pa.int64()).cast(pa.time64("us")), P(V.TIME_NTZ, 60_000_000)),
             (pa.array([b"\x01"], pa.binary()), P(V.BINARY, b"\x01")),
             (pa.array([bytes(16)], pa.binary(16)), P(V.UUID, bytes(16)))]
    for typed, want in cases:
        got = V.unshred(shredded(pa.array([None], pa.binary()), typed)).to_pylist()[0]
        assert V.decode([], got["value"]) == want, typed.type
