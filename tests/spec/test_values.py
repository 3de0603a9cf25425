"""Appendix D: binary and JSON single-value serialization, with the spec's examples."""
import datetime as dt
import math
import struct
import uuid
from decimal import Decimal

import pytest
from hypothesis import given, strategies as st

from sparkberg.errors import ValidationError
from sparkberg.format import types as T
from sparkberg.format.values import from_bytes, to_bytes
from sparkberg.format.scalars import date_to_days, datetime_to_micros, time_to_micros
from sparkberg.format.types import from_json_value, to_json_value

BINARY_CASES = [
    ("boolean-false", T.BOOLEAN, False, b"\x00"),
    ("boolean-true", T.BOOLEAN, True, b"\x01"),
    ("int", T.INT, 34, struct.pack("<i", 34)),
    ("int-negative", T.INT, -1, b"\xff\xff\xff\xff"),
    ("long", T.LONG, 34, struct.pack("<q", 34)),
    ("float", T.FLOAT, 1.5, struct.pack("<f", 1.5)),
    ("double", T.DOUBLE, -2.25, struct.pack("<d", -2.25)),
    ("date", T.DATE, 17486, struct.pack("<i", 17486)),
    ("time", T.TIME, 81068000000, struct.pack("<q", 81068000000)),
    ("timestamp", T.TIMESTAMP, 1510871468000001, struct.pack("<q", 1510871468000001)),
    ("timestamptz_ns", T.TIMESTAMPTZ_NS, 1510871468000001001, struct.pack("<q", 1510871468000001001)),
    ("string", T.STRING, "iceberg", b"iceberg"),
    ("uuid", T.UUID, uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
     bytes.fromhex("F79C3E09677C4BBDA4793F349CB785E7")),
    ("fixed", T.FixedType(4), b"\x00\x01\x02\x03", b"\x00\x01\x02\x03"),
    ("binary", T.BINARY, b"\x00\x01\x02\x03", b"\x00\x01\x02\x03"),
    ("decimal", T.DecimalType(9, 2), Decimal("14.20"), (1420).to_bytes(2, "big")),
    ("decimal-negative-min-bytes", T.DecimalType(9, 2), Decimal("-1.28"), b"\x80"),
    ("decimal-128-needs-two-bytes", T.DecimalType(9, 2), Decimal("1.28"), b"\x00\x80"),
    ("decimal-zero", T.DecimalType(9, 2), Decimal("0.00"), b"\x00"),
]


@pytest.mark.parametrize("name,itype,value,expected", BINARY_CASES, ids=[c[0] for c in BINARY_CASES])
def test_binary_single_value(name, itype, value, expected):
    assert to_bytes(itype, value) == expected
    assert from_bytes(itype, expected) == value


def test_negative_zero_survives():
    b = to_bytes(T.DOUBLE, -0.0)
    assert math.copysign(1.0, from_bytes(T.DOUBLE, b)) == -1.0


def test_promoted_bounds_widen():
    # an int column promoted to long keeps 4-byte bounds in old manifests
    assert from_bytes(T.LONG, struct.pack("<i", -5)) == -5
    assert from_bytes(T.DOUBLE, struct.pack("<f", 1.5)) == 1.5


JSON_CASES = [  # Appendix D JSON examples
    ("boolean", T.BOOLEAN, True, True),
    ("int", T.INT, 34, 34),
    ("long", T.LONG, 34, 34),
    ("float", T.FLOAT, 1.0, 1.0),
    ("double", T.DOUBLE, 1.0, 1.0),
    ("decimal", T.DecimalType(9, 2), Decimal("14.20"), "14.20"),
    ("decimal-negative-scale", T.DecimalType(9, -20), Decimal("2E+20"), "2E+20"),
    ("date", T.DATE, date_to_days(dt.date(2017, 11, 16)), "2017-11-16"),
    ("time", T.TIME, time_to_micros(dt.time(22, 31, 8, 123456)), "22:31:08.123456"),
    ("timestamp", T.TIMESTAMP, datetime_to_micros(dt.datetime(2017, 11, 16, 22, 31, 8, 123456)),
     "2017-11-16T22:31:08.123456"),
    ("timestamptz", T.TIMESTAMPTZ, datetime_to_micros(dt.datetime(2017, 11, 16, 22, 31, 8, 123456)),
     "2017-11-16T22:31:08.123456+00:00"),
    ("timestamp_ns", T.TIMESTAMP_NS, datetime_to_micros(dt.datetime(2017, 11, 16, 22, 31, 8, 123456)) * 1000 + 789,
     "2017-11-16T22:31:08.123456789"),
    ("timestamptz_ns", T.TIMESTAMPTZ_NS,
     datetime_to_micros(dt.datetime(2017, 11, 16, 22, 31, 8, 123456)) * 1000 + 789,
     "2017-11-16T22:31:08.123456789+00:00"),
    ("string", T.STRING, "iceberg", "iceberg"),
    ("uuid", T.UUID, uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), "f79c3e09-677c-4bbd-a479-3f349cb785e7"),
    ("fixed", T.FixedType(4), bytes.fromhex("000102ff"), "000102ff"),
    ("binary", T.BINARY, bytes.fromhex("000102ff"), "000102ff"),
    ("struct", T.StructType([T.NestedField(1, "a", T.INT), T.NestedField(2, "b", T.STRING)]),
     {1: 1, 2: "bar"}, {"1": 1, "2": "bar"}),
    ("list", T.ListType(3, T.INT), [1, 2, 3], [1, 2, 3]),
    ("map", T.MapType(4, T.STRING, 5, T.INT), {"a": 1, "b": 2}, {"keys": ["a", "b"], "values": [1, 2]}),
]


@pytest.mark.parametrize("name,itype,value,expected", JSON_CASES, ids=[c[0] for c in JSON_CASES])
def test_json_single_value(name, itype, value, expected):
    assert to_json_value(itype, value) == expected
    assert from_json_value(itype, expected) == value


def test_json_timestamp_before_epoch():
    micros = datetime_to_micros(dt.datetime(1969, 12, 31, 23, 59, 59, 500000))
    text = to_json_value(T.TIMESTAMP, micros)
    assert text == "1969-12-31T23:59:59.500000"
    assert from_json_value(T.TIMESTAMP, text) == micros


def test_json_timestamptz_accepts_offsets_and_rejects_missing_zone():
    assert from_json_value(T.TIMESTAMPTZ, "2017-11-16T14:31:08-08:00") == \
        from_json_value(T.TIMESTAMPTZ, "2017-11-16T22:31:08.000000+00:00")
    with pytest.raises(ValidationError, match="zone offset"):
        from_json_value(T.TIMESTAMPTZ, "2017-11-16T22:31:08")
    with pytest.raises(ValidationError, match="must not include"):
        from_json_value(T.TIMESTAMP, "2017-11-16T22:31:08+00:00")


@pytest.mark.parametrize("itype,bad", [(T.INT, "1"), (T.BOOLEAN, 1), (T.DATE, "2017-13-01"), (T.UUID, "nope"),
                                       (T.FixedType(2), "00"), (T.DecimalType(9, 2), "1.234")])
def test_bad_json_values_are_named(itype, bad):
    with pytest.raises(ValidationError, match=str(itype).replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        from_json_value(itype, bad)


@given(st.integers(-(2 ** 31), 2 ** 31 - 1))
def test_int_roundtrip(v):
    assert from_bytes(T.INT, to_bytes(T.INT, v)) == v
    assert from_json_value(T.INT, to_json_value(T.INT, v)) == v


@given(st.integers(-(2 ** 63), 2 ** 63 - 1))
def test_timestamp_roundtrips(v):
    for t in (T.TIMESTAMP, T.TIMESTAMPTZ, T.LONG):
        assert from_bytes(t, to_bytes(t, v)) == v
    # JSON form is limited to years 1..9999
    v = v % (253402300799 * 10 ** 6) - 62135596800 * 10 ** 6
    assert from_json_value(T.TIMESTAMP, to_json_value(T.TIMESTAMP, v)) == v
    assert from_json_value(T.TIMESTAMPTZ_NS, to_json_value(T.TIMESTAMPTZ_NS, v)) == v


@given(st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-10 ** 30, max_value=10 ** 30))
def test_decimal_roundtrip(d):
    t = T.DecimalType(38, 3)
    assert from_bytes(t, to_bytes(t, d)) == d
    assert from_json_value(t, to_json_value(t, d)) == d


@given(st.text())
def test_string_roundtrip(s):
    assert from_bytes(T.STRING, to_bytes(T.STRING, s)) == s


@given(st.floats(allow_nan=False))
def test_double_roundtrip(f):
    assert from_bytes(T.DOUBLE, to_bytes(T.DOUBLE, f)) == f


@pytest.mark.parametrize("name,offset_minutes", [
    ("UTC", 0), ("Z", 0), ("+08:00", 480), ("UTC+8", 480), ("GMT-03:30", -210), ("+0530", 330),
    ("America/Los_Angeles", -480),  # (in January)
])
def test_zone_of_reads_the_names_a_spark_session_time_zone_takes(name, offset_minutes):
    import datetime as dt
    from sparkberg.format.scalars import zone_of
    assert zone_of(name).utcoffset(dt.datetime(2024, 1, 1)) == dt.timedelta(minutes=offset_minutes)


def test_zone_of_an_unknown_zone_is_a_value_error():
    from sparkberg.format.scalars import zone_of
    with pytest.raises(ValueError, match="unknown time zone 'Nowhere/Else'"):
        zone_of("Nowhere/Else")
