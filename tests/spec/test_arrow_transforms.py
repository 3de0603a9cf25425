"""The vectorized (Arrow/numpy) partition transforms used by writers agree with the scalar reference
transforms of the spec module on random values (hypothesis), nulls included."""
import datetime as dt
from decimal import Decimal

import pyarrow as pa
from hypothesis import given, settings, strategies as st

from sparkberg.format import types as T
from sparkberg.format.transforms import (
    BucketTransform, DayTransform, HourTransform, IdentityTransform, MonthTransform, TruncateTransform, YearTransform,
)
from sparkberg.format.scalars import date_to_days, datetime_to_micros
from sparkberg.write.arrow_transforms import apply_transform, murmur3_longs
from sparkberg.write.writer import truncate_upper_binary, truncate_upper_string

CASES = [
    (T.INT, pa.int32(), st.integers(-(2 ** 31), 2 ** 31 - 1), lambda v: v),
    (T.LONG, pa.int64(), st.integers(-(2 ** 63), 2 ** 63 - 1), lambda v: v),
    (T.DATE, pa.date32(), st.dates(), date_to_days),
    (T.TIMESTAMP, pa.timestamp("us"), st.datetimes(), datetime_to_micros),
    (T.STRING, pa.string(), st.text(max_size=8), lambda v: v),
    (T.BINARY, pa.binary(), st.binary(max_size=8), lambda v: v),
    (T.DecimalType(9, 2), pa.decimal128(9, 2), st.integers(-10 ** 8, 10 ** 8).map(lambda u: Decimal(u).scaleb(-2)),
     lambda v: v),
]
TRANSFORMS = [IdentityTransform(), BucketTransform(16), BucketTransform(7), TruncateTransform(3), TruncateTransform(100),
              YearTransform(), MonthTransform(), DayTransform(), HourTransform()]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_vectorized_transforms_match_scalar(data):
    itype, atype, values, to_internal = data.draw(st.sampled_from(CASES))
    transform = data.draw(st.sampled_from([t for t in TRANSFORMS if t.can_transform(itype)]))
    py = data.draw(st.lists(st.none() | values, max_size=20))
    got = apply_transform(transform, itype, pa.array(py, atype)).to_pylist()
    scalar = transform.apply(itype)
    expected = [scalar(None if v is None else to_internal(v)) for v in py]
    assert got == expected


@given(st.lists(st.integers(-(2 ** 63), 2 ** 63 - 1), max_size=50))
def test_numpy_murmur3_matches_mmh3(values):
    import numpy as np
    from sparkberg.format.transforms import hash_long
    assert murmur3_longs(np.array(values, dtype=np.int64)).tolist() == [hash_long(v) for v in values]


def test_truncated_upper_bounds_carry():
    assert truncate_upper_string("abcdef", 3) == "abd"
    assert truncate_upper_string("ab", 3) == "ab"
    assert truncate_upper_string("a\U0010FFFF\U0010FFFFz", 3) == "b"
    assert truncate_upper_string("\U0010FFFF" * 4, 3) is None
    assert truncate_upper_binary(b"\x01\xff\xffz", 3) == b"\x02"
    assert truncate_upper_binary(b"\xff\xff\xff\xff", 3) is None
    assert truncate_upper_string("ab\ud7ffzz", 3) == "ab\ue000"


@given(st.text(min_size=1, max_size=30), st.integers(1, 20))
def test_truncated_upper_bound_is_an_upper_bound(s, n):
    u = truncate_upper_string(s, n)
    if u is not None:
        assert u.encode("utf-8") >= s.encode("utf-8") and len(u) <= n


def test_timestamp_before_epoch_floors():
    ts = dt.datetime(1969, 12, 31, 23, 30)
    got = apply_transform(HourTransform(), T.TIMESTAMP, pa.array([ts], pa.timestamp("us"))).to_pylist()
    assert got == [-1]
