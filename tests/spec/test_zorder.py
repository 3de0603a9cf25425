"""Z-order values, as Iceberg Java's ``ZOrderByteUtils`` defines them: each column's bytes sort as its values, and
the bits are interleaved column by column, most significant first."""
import math

import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

from sparkberg.errors import ValidationError
from sparkberg.format import types as T
from sparkberg.format.partitioning import SortField
from sparkberg.format.transforms import IdentityTransform
from sparkberg.write.ordering import ordered_bytes, parse_ordering, z_values


def one(values, t, pa_type, width=8):
    return [bytes(r) for r in ordered_bytes(pa.array(values, pa_type), t, width)]


def test_bits_are_interleaved_most_significant_first():
    # 1 and 0 as ints: 0x80..01 and 0x80..00 (sign bit flipped); interleaved: the two sign bits lead, and the
    # last bit of the first column is bit 126 of 128
    z = z_values([(pa.array([1], pa.int32()), T.INT), (pa.array([0], pa.int32()), T.INT)]).to_pylist()[0]
    assert z == bytes([0xC0]) + bytes(14) + bytes([0x02])
    # a column whose bytes run out drops out: 2 string bytes then 8 int bytes
    z = z_values([(pa.array(["\xff"], pa.string()), T.STRING), (pa.array([0], pa.int64()), T.LONG)],
                 var_length_bytes=2).to_pylist()[0]
    # 'ÿ' is UTF-8 C3 BF: bits 11000011 10111111, interleaved with 10000000 00000000 ... then the int's last 6 bytes
    bits = "".join(a + b for a, b in zip("1100001110111111", "1000000000000000")) + "0" * 48
    assert z == int(bits, 2).to_bytes(10, "big")
    assert len(z_values([(pa.array([1], pa.int32()), T.INT)] * 3, max_output_bytes=5).to_pylist()[0]) == 5


@given(st.lists(st.integers(-2 ** 63, 2 ** 63 - 1), min_size=2, max_size=50))
def test_integers_sort_as_their_bytes(values):
    assert sorted(values) == [v for _, v in sorted(zip(one(values, T.LONG, pa.int64()), values))]


@given(st.lists(st.floats(allow_nan=False), min_size=2, max_size=50))
def test_doubles_sort_as_their_bytes(values):
    keyed = sorted(zip(one(values, T.DOUBLE, pa.float64()), values))
    assert [v for _, v in keyed] == sorted(values, key=lambda v: (v, math.copysign(1, v)))


@given(st.lists(st.text(max_size=12), min_size=2, max_size=50))
def test_strings_sort_as_their_first_bytes(values):
    width = 8
    keyed = one(values, T.STRING, pa.string(), width)
    for k, v in zip(keyed, values):
        assert k == v.encode()[:width].ljust(width, b"\0")


def test_nulls_are_zero_bytes_and_dates_and_timestamps_are_integers():
    assert one([None, 5], T.INT, pa.int32()) == [bytes(8), (5 ^ (1 << 63)).to_bytes(8, "big")]
    assert one([-1], T.DATE, pa.date32()) == [((-1) % 2 ** 64 ^ (1 << 63)).to_bytes(8, "big")]
    assert one([3], T.TIMESTAMP, pa.timestamp("us")) == [(3 ^ (1 << 63)).to_bytes(8, "big")]


def test_orderings_parse_as_spark_writes_them():
    schema = T.Schema((T.NestedField(1, "id", T.LONG), T.NestedField(2, "s", T.STRING),
                       T.NestedField(3, "m", T.MapType(4, T.STRING, 5, T.STRING))), 0)
    o = parse_ordering(schema, "id DESC NULLS LAST, s")
    assert o.zorder is None and o.order_id == 0
    assert o.sort.fields == (SortField(1, IdentityTransform(), "desc", "nulls-last"),
                             SortField(2, IdentityTransform(), "asc", "nulls-first"))
    assert parse_ordering(schema, "id DESC NULLS LAST, s", [o.sort.__class__(3, o.sort.fields)]).order_id == 3
    assert parse_ordering(schema, " ZORDER(id, s) ").zorder.columns == ("id", "s")
    for bad, message in [("zorder()", "at least one column"), ("zorder(m)", "cannot z-order by column 'm'"),
                         ("zorder(id), s", "cannot be combined"), ("", "is empty"), ("nope", "cannot find field")]:
        with pytest.raises(ValidationError, match=message):
            parse_ordering(schema, bad)
