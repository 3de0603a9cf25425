"""Transforms: Appendix B hash vectors, transform results, names, and the spec's truncate examples."""
import datetime as dt
import uuid
from decimal import Decimal

import pytest
from hypothesis import given, strategies as st

from sparkberg.errors import ValidationError
from sparkberg.format import types as T
from sparkberg.format.transforms import (
    BucketTransform, DayTransform, HourTransform, IdentityTransform, MonthTransform, TruncateTransform,
    UnknownTransform, VoidTransform, YearTransform, hash_value, parse_transform, parse_transform_call,
)
from sparkberg.format.values import from_python
from sparkberg.format.scalars import date_to_days, datetime_to_micros, time_to_micros

UTC = dt.timezone.utc
PST = dt.timezone(dt.timedelta(hours=-8))

# Appendix B: "32-bit Hash Requirements" test values
APPENDIX_B = [
    ("int", T.INT, 34, 2017239379),
    ("long", T.LONG, 34, 2017239379),
    ("decimal", T.DecimalType(9, 2), Decimal("14.20"), -500754589),
    ("date", T.DATE, date_to_days(dt.date(2017, 11, 16)), -653330422),
    ("time", T.TIME, time_to_micros(dt.time(22, 31, 8)), -662762989),
    ("timestamp", T.TIMESTAMP, datetime_to_micros(dt.datetime(2017, 11, 16, 22, 31, 8)), -2047944441),
    ("timestamp-micros", T.TIMESTAMP, datetime_to_micros(dt.datetime(2017, 11, 16, 22, 31, 8, 1)), -1207196810),
    ("timestamptz", T.TIMESTAMPTZ, datetime_to_micros(dt.datetime(2017, 11, 16, 14, 31, 8, tzinfo=PST)), -2047944441),
    ("timestamptz-micros", T.TIMESTAMPTZ, datetime_to_micros(dt.datetime(2017, 11, 16, 14, 31, 8, 1, tzinfo=PST)),
     -1207196810),
    ("timestamp_ns", T.TIMESTAMP_NS, datetime_to_micros(dt.datetime(2017, 11, 16, 22, 31, 8)) * 1000, -2047944441),
    ("timestamp_ns-nanos", T.TIMESTAMP_NS,
     datetime_to_micros(dt.datetime(2017, 11, 16, 22, 31, 8, 1)) * 1000 + 1, -1207196810),
    ("timestamptz_ns", T.TIMESTAMPTZ_NS,
     datetime_to_micros(dt.datetime(2017, 11, 16, 14, 31, 8, tzinfo=PST)) * 1000, -2047944441),
    ("timestamptz_ns-nanos", T.TIMESTAMPTZ_NS,
     datetime_to_micros(dt.datetime(2017, 11, 16, 14, 31, 8, 1, tzinfo=PST)) * 1000 + 1, -1207196810),
    ("string", T.STRING, "iceberg", 1210000089),
    ("uuid", T.UUID, uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), 1488055340),
    ("fixed", T.FixedType(4), bytes([0, 1, 2, 3]), -188683207),
    ("binary", T.BINARY, bytes([0, 1, 2, 3]), -188683207),
    ("boolean", T.BOOLEAN, True, 1392991556),
    ("float-1", T.FLOAT, 1.0, -142385009),
    ("float-0", T.FLOAT, 0.0, 1669671676),
    ("float-neg0", T.FLOAT, -0.0, 1669671676),
    ("double-1", T.DOUBLE, 1.0, -142385009),
    ("double-0", T.DOUBLE, 0.0, 1669671676),
    ("double-neg0", T.DOUBLE, -0.0, 1669671676),
]


@pytest.mark.parametrize("name,itype,value,expected", APPENDIX_B, ids=[c[0] for c in APPENDIX_B])
def test_appendix_b_hash(name, itype, value, expected):
    assert hash_value(itype, value) == expected


def test_uuid_bytes_are_big_endian():
    assert uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7").bytes.hex().upper() == "F79C3E09677C4BBDA4793F349CB785E7"


def test_nan_hash_is_canonical():
    import struct
    other_nan = struct.unpack("<d", struct.pack("<q", 0x7FF8000000000001))[0]
    assert hash_value(T.DOUBLE, other_nan) == hash_value(T.DOUBLE, float("nan"))


@given(st.integers(-(2 ** 31), 2 ** 31 - 1))
def test_int_and_long_hash_alike(v):
    # Appendix B note 1: promotion int -> long must not change buckets
    assert hash_value(T.INT, v) == hash_value(T.LONG, v)


@given(st.integers(-(2 ** 62), 2 ** 62))
def test_bucket_is_non_negative_and_bounded(v):
    b = BucketTransform(16).apply(T.LONG)(v)
    assert 0 <= b < 16


def test_bucket_formula():
    # bucket_N(x) = (murmur3_x86_32_hash(x) & Integer.MAX_VALUE) % N
    assert BucketTransform(100).apply(T.INT)(34) == (2017239379 & 0x7FFFFFFF) % 100
    assert BucketTransform(7).apply(T.STRING)("iceberg") == 1210000089 % 7
    assert BucketTransform(7).apply(T.STRING)(None) is None


TRUNCATE_EXAMPLES = [  # spec: "Truncate Transform Details"
    ("int-1", T.INT, 10, 1, 0),
    ("int-neg1", T.INT, 10, -1, -10),
    ("long-1", T.LONG, 10, 1, 0),
    ("long-neg1", T.LONG, 10, -1, -10),
    ("decimal", T.DecimalType(9, 2), 50, Decimal("10.65"), Decimal("10.50")),
    ("string", T.STRING, 3, "iceberg", "ice"),
    ("binary", T.BINARY, 3, b"\x01\x02\x03\x04\x05", b"\x01\x02\x03"),
    ("string-code-points", T.STRING, 2, "\U0001F600\U0001F601x", "\U0001F600\U0001F601"),
    ("decimal-negative", T.DecimalType(9, 2), 50, Decimal("-0.05"), Decimal("-0.50")),
]


@pytest.mark.parametrize("name,itype,width,value,expected", TRUNCATE_EXAMPLES, ids=[c[0] for c in TRUNCATE_EXAMPLES])
def test_truncate_examples(name, itype, width, value, expected):
    assert TruncateTransform(width).apply(itype)(value) == expected


def test_time_transforms_floor_before_epoch():
    ts = datetime_to_micros(dt.datetime(1969, 12, 31, 23, 59, 59, 999999))
    assert YearTransform().apply(T.TIMESTAMP)(ts) == -1
    assert MonthTransform().apply(T.TIMESTAMP)(ts) == -1
    assert DayTransform().apply(T.TIMESTAMP)(ts) == -1
    assert HourTransform().apply(T.TIMESTAMP)(ts) == -1
    d = date_to_days(dt.date(2017, 11, 16))
    assert YearTransform().apply(T.DATE)(d) == 47
    assert MonthTransform().apply(T.DATE)(d) == 47 * 12 + 10
    assert DayTransform().apply(T.DATE)(d) == d
    ns = datetime_to_micros(dt.datetime(2017, 11, 16, 22, 31, 8)) * 1000 + 7
    assert HourTransform().apply(T.TIMESTAMP_NS)(ns) == HourTransform().apply(T.TIMESTAMP)(ns // 1000)
    assert DayTransform().apply(T.TIMESTAMPTZ_NS)(ns) == d


def test_result_types():
    assert DayTransform().result_type(T.TIMESTAMP) == T.DATE
    assert BucketTransform(4).result_type(T.STRING) == T.INT
    assert TruncateTransform(4).result_type(T.STRING) == T.STRING
    assert YearTransform().result_type(T.DATE) == T.INT
    assert VoidTransform().result_type(T.LONG) == T.LONG
    assert IdentityTransform().result_type(T.UUID) == T.UUID


def test_applicability():
    assert not HourTransform().can_transform(T.DATE)
    assert not BucketTransform(2).can_transform(T.FLOAT)
    assert not BucketTransform(2).can_transform(T.BOOLEAN)
    assert not TruncateTransform(2).can_transform(T.DATE)
    assert not IdentityTransform().can_transform(T.GeometryType())
    assert BucketTransform(2).can_transform(T.TIMESTAMPTZ_NS)
    with pytest.raises(ValidationError, match="cannot be applied"):
        HourTransform().check(T.DATE)


@pytest.mark.parametrize("text,expected", [
    ("identity", IdentityTransform()), ("bucket[16]", BucketTransform(16)), ("truncate[4]", TruncateTransform(4)),
    ("year", YearTransform()), ("month", MonthTransform()), ("day", DayTransform()), ("hour", HourTransform()),
    ("void", VoidTransform()), ("zorder", UnknownTransform("zorder")),
])
def test_parse_and_print(text, expected):
    t = parse_transform(text)
    assert t == expected
    assert str(t) == text


def test_unknown_transform_cannot_be_applied():
    t = parse_transform("geohash[5]")
    assert not t.is_known
    with pytest.raises(ValidationError):
        t.apply(T.STRING)


@pytest.mark.parametrize("text,transform,column", [
    ("day(ts)", DayTransform(), "ts"), ("bucket(16, id)", BucketTransform(16), "id"),
    ("bucket(id, 16)", BucketTransform(16), "id"), ("truncate(name, 4)", TruncateTransform(4), "name"),
    ("years(ts)", YearTransform(), "ts"), ("region", IdentityTransform(), "region"),
])
def test_partition_expressions(text, transform, column):
    assert parse_transform_call(text) == (transform, column)


def test_bad_partition_expressions():
    for bad in ("bucket(id)", "frobnicate(x)", "truncate(a, b)", ""):
        with pytest.raises(ValidationError):
            parse_transform_call(bad)


def test_human_strings():
    assert DayTransform().to_human_string(T.DATE, date_to_days(dt.date(2024, 1, 2))) == "2024-01-02"
    assert MonthTransform().to_human_string(T.INT, 54 * 12 + 1) == "2024-02"
    assert HourTransform().to_human_string(T.INT, 24 + 5) == "1970-01-02-05"
    assert YearTransform().to_human_string(T.INT, 0) == "1970"
    assert IdentityTransform().to_human_string(T.STRING, None) == "null"
    assert from_python(T.DATE, dt.date(1970, 1, 2)) == 1


def test_truncate_wraps_at_the_integer_edge_like_java():
    # Java computes v - (((v % W) + W) % W) in int arithmetic, which wraps for values near the minimum
    assert TruncateTransform(3).apply(T.INT)(-2147483647) == 2147483647
    assert TruncateTransform(3).apply(T.LONG)(-(2 ** 63) + 1) == 2 ** 63 - 1
    assert TruncateTransform(10).apply(T.INT)(-2147483648) == 2147483646  # -2147483650 wrapped


def test_a_partition_type_follows_the_schema_it_is_asked_about():
    # spec "Partitioning": a partition field's type is its transform's result on its source column's type
    from sparkberg.format.partitioning import PartitionField, PartitionSpec
    spec = PartitionSpec(0, [PartitionField(1, 1000, parse_transform("bucket[4]"), "id_bucket"),
                             PartitionField(2, 1001, parse_transform("identity"), "x")])
    v1 = T.Schema([T.NestedField(1, "id", T.LONG, True), T.NestedField(2, "x", T.INT, False)], 0)
    v2 = T.Schema([T.NestedField(1, "id", T.LONG, True), T.NestedField(2, "x", T.LONG, False)], 1)  # x promoted
    first = spec.partition_type(v1)
    assert [(f.field_id, f.name, f.field_type) for f in first.fields] == \
        [(1000, "id_bucket", T.INT), (1001, "x", T.INT)]
    assert spec.partition_type(v1) is first  # (asked again of the same schema: the same answer)
    assert [f.field_type for f in spec.partition_type(v2).fields] == [T.INT, T.LONG]
    assert [f.field_type for f in spec.partition_type(v1).fields] == [T.INT, T.INT]
    assert spec == PartitionSpec(0, list(spec.fields)) and hash(spec) == hash(PartitionSpec(0, list(spec.fields)))
