"""``readable_metrics`` of the metadata tables: the columnar decoder builds it a column at a time
(``MetadataDecoder.readable_metrics``) and must give exactly what the reference builds a row at a time
(``readable_rows``, Appendix D's single-value deserialization of each bound): for every primitive type, nested
columns, bounds of a promoted column's older width (int -> long, float -> double, date -> timestamp), maps that
are null, empty, hold keys of no column or repeat a key, and rows sliced out of a larger batch. A malformed
bound is named by the same error."""
import datetime
import decimal
import struct
import uuid

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from sparkberg.errors import ValidationError
from sparkberg.inspect import MetadataDecoder
from sparkberg.format import types as T
from sparkberg.format import updates as U
from sparkberg.format.partitioning import UNPARTITIONED
from sparkberg.planning.entries import PartitionLayout

SCHEMA = T.Schema([
    T.NestedField(1, "b", T.BOOLEAN), T.NestedField(2, "i", T.INT), T.NestedField(3, "l", T.LONG),
    T.NestedField(4, "f", T.FLOAT), T.NestedField(5, "d", T.DOUBLE), T.NestedField(6, "dt", T.DATE),
    T.NestedField(7, "ts", T.TIMESTAMP), T.NestedField(8, "tstz", T.TIMESTAMPTZ),
    T.NestedField(9, "ns", T.TIMESTAMP_NS), T.NestedField(10, "s", T.STRING), T.NestedField(11, "u", T.UUID),
    T.NestedField(12, "bin", T.BINARY), T.NestedField(13, "fx", T.FixedType(3)),
    T.NestedField(14, "dec", T.DecimalType(10, 2)),
    T.NestedField(15, "st", T.StructType([T.NestedField(16, "x", T.LONG), T.NestedField(17, "y", T.STRING)])),
])
METADATA = U.new_table_metadata(SCHEMA, "file:///wh/t", UNPARTITIONED, format_version=3, fresh_ids=False)
DECODER = MetadataDecoder(PartitionLayout(METADATA), SCHEMA)
ENTRIES = pa.schema([f for f in DECODER.schema if f.name != "readable_metrics"])
READABLE = DECODER.schema.field("readable_metrics").type
OTHER_KEYS = (0, 99, 2147483546)  # (no column's: ignored; the last is a position delete file's path field)


def _bytes_of(fid: int) -> st.SearchStrategy:
    """Appendix D bytes of field ``fid``'s type, older widths included."""
    t = SCHEMA.find_field(fid).field_type
    ints = st.integers(-2 ** 31, 2 ** 31 - 1)
    longs = st.integers(-2 ** 62, 2 ** 62)
    return {
        T.BOOLEAN: st.sampled_from([b"\x00", b"\x01"]),
        T.INT: ints.map(lambda v: struct.pack("<i", v)),
        T.LONG: st.one_of(longs.map(lambda v: struct.pack("<q", v)), ints.map(lambda v: struct.pack("<i", v))),
        T.FLOAT: st.floats(width=32, allow_nan=False).map(lambda v: struct.pack("<f", v)),
        T.DOUBLE: st.one_of(st.floats(allow_nan=False).map(lambda v: struct.pack("<d", v)),
                            st.floats(width=32, allow_nan=False).map(lambda v: struct.pack("<f", v))),
        T.DATE: st.integers(-100_000, 100_000).map(lambda v: struct.pack("<i", v)),
        T.TIMESTAMP: st.one_of(st.integers(-2 ** 50, 2 ** 50).map(lambda v: struct.pack("<q", v)),
                               st.integers(-100_000, 100_000).map(lambda v: struct.pack("<i", v))),
        T.TIMESTAMPTZ: st.integers(-2 ** 50, 2 ** 50).map(lambda v: struct.pack("<q", v)),
        T.TIMESTAMP_NS: st.integers(-2 ** 60, 2 ** 60).map(lambda v: struct.pack("<q", v)),
        T.STRING: st.text(max_size=5).map(lambda v: v.encode()),
        T.UUID: st.uuids().map(lambda v: v.bytes),
        T.BINARY: st.binary(max_size=4),
        T.FixedType(3): st.binary(min_size=3, max_size=3),
        T.DecimalType(10, 2): st.integers(-10 ** 9, 10 ** 9).map(lambda v: v.to_bytes(8, "big", signed=True)),
    }[t]


FIDS = [f for f in range(1, 18) if f != 15]


@st.composite
def metrics_map(draw, values):
    """A map column's value: None, or (key, value) items of some columns (a key repeated, keys of no column)."""
    if draw(st.booleans()) and draw(st.booleans()):
        return None
    keys = draw(st.lists(st.sampled_from(FIDS + list(OTHER_KEYS)), max_size=8))
    return [(k, draw(values(k))) for k in keys]


@st.composite
def entry(draw):
    counts = lambda _k: st.integers(0, 2 ** 40)  # noqa: E731
    bounds = lambda k: _bytes_of(k) if k in FIDS else st.binary(max_size=9)  # noqa: E731
    return {**entry_defaults(),
            **{k: draw(metrics_map(counts)) for k in ("column_sizes", "value_counts", "null_value_counts",
                                                      "nan_value_counts")},
            **{k: draw(metrics_map(bounds)) for k in ("lower_bounds", "upper_bounds")}}


def reference(rows: list[dict]) -> list:
    done = DECODER.readable_rows([dict(r) for r in rows])
    return pa.array([r["readable_metrics"] for r in done], READABLE).to_pylist()


def columnar(rows: list[dict]) -> list:
    table = pa.Table.from_pylist(rows, schema=ENTRIES)
    return DECODER.readable_metrics(table).to_pylist()


@settings(max_examples=150, deadline=None)
@given(st.lists(entry(), max_size=12), st.integers(0, 3))
def test_columnar_readable_metrics_are_the_references(rows, skip):
    expected = reference(rows)
    assert columnar(rows) == expected
    # rows sliced out of a larger batch (Arrow arrays whose items do not start at 0)
    table = pa.Table.from_pylist(rows, schema=ENTRIES).slice(min(skip, len(rows)))
    assert DECODER.readable_metrics(table).to_pylist() == expected[min(skip, len(rows)):]


def test_values_are_decoded_as_their_types():
    u = uuid.UUID("80000000-0000-0000-0000-000000000001")
    lower = [(1, b"\x01"), (2, struct.pack("<i", -7)), (3, struct.pack("<i", 5)), (4, struct.pack("<f", 1.5)),
             (5, struct.pack("<f", 2.5)), (6, struct.pack("<i", 19_723)), (7, struct.pack("<q", 1_000_001)),
             (8, struct.pack("<q", -1)), (9, struct.pack("<q", 1_999)), (10, "é".encode()), (11, u.bytes),
             (12, b""), (13, b"abc"), (14, (12345).to_bytes(3, "big", signed=True)), (16, struct.pack("<q", 3)),
             (17, b"z"), (2147483546, b"file:///a/b.parquet")]
    row = {**entry_defaults(), "lower_bounds": lower,
           "upper_bounds": [(3, struct.pack("<i", 5)), (3, struct.pack("<q", 6))]}
    got = columnar([row])[0]
    assert got["b"]["lower_bound"] is True and got["i"]["lower_bound"] == -7 and got["l"]["lower_bound"] == 5
    assert got["f"]["lower_bound"] == 1.5 and got["d"]["lower_bound"] == 2.5
    assert got["dt"]["lower_bound"] == datetime.date(2024, 1, 1)
    assert got["ts"]["lower_bound"] == datetime.datetime(1970, 1, 1, 0, 0, 1, 1)
    if "ns" in got:  # (a Spark with a type for nanosecond timestamps: as micros, floored)
        assert got["ns"]["lower_bound"] == datetime.datetime(1970, 1, 1, 0, 0, 0, 1)
    assert got["s"]["lower_bound"] == "é" and got["u"]["lower_bound"] == str(u)
    assert got["bin"]["lower_bound"] == b"" and got["fx"]["lower_bound"] == b"abc"
    assert got["dec"]["lower_bound"] == decimal.Decimal("123.45")
    assert got["st.x"]["lower_bound"] == 3 and got["st.y"]["lower_bound"] == "z"
    assert got["l"]["upper_bound"] == 6  # (a repeated key: its last item)
    assert got["i"]["upper_bound"] is None and got["i"]["column_size"] is None
    assert [got] == reference([row])


def entry_defaults() -> dict:
    return {"_manifest_ordinal": 0, "_entry_ordinal": 0, "manifest_path": "m.avro", "status": 1,
            "snapshot_id": 1, "sequence_number": 1, "file_sequence_number": 1, "content": 0,
            "file_path": "f.parquet", "file_format": "parquet", "spec_id": 0, "record_count": 1,
            "file_size_in_bytes": 1, "column_sizes": None, "value_counts": None, "null_value_counts": None,
            "nan_value_counts": None, "lower_bounds": None, "upper_bounds": None}


@pytest.mark.parametrize("fid, raw", [(3, b"\x01\x02\x03"), (10, b"\xff\xfe"), (4, b"\x00" * 8)])
def test_a_malformed_bound_is_named_as_the_reference_names_it(fid, raw):
    row = {**entry_defaults(), "lower_bounds": [(fid, raw)]}
    with pytest.raises(ValidationError) as ours:
        columnar([row])
    with pytest.raises(ValidationError) as theirs:
        reference([row])
    assert str(ours.value) == str(theirs.value)
