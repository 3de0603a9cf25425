"""add_files' reading of Hive-style directory names: timestamps as Spark writes them."""
import pytest

from sparkberg.errors import ValidationError
from sparkberg.format import types as T
from sparkberg.write.imports import _from_text


@pytest.mark.parametrize("t,text,zone,value", [
    (T.TIMESTAMP, "2024-01-01 10:11:12.5", "UTC", 1704103872500000),
    (T.TIMESTAMP_NS, "2024-01-01 00:00:00.123456789", "UTC", 1704067200123456789),
    (T.TIMESTAMPTZ, "2024-01-01 00:00:00", "America/Los_Angeles", 1704096000000000),  # PST
    (T.TIMESTAMPTZ, "2024-07-01 00:00:00", "America/Los_Angeles", 1719817200000000),  # PDT
    (T.TIMESTAMPTZ, "2024-01-01T00:00:00+01:00", "America/Los_Angeles", 1704063600000000),  # an offset given
    (T.TIMESTAMPTZ, "2024-01-01 00:00:00", "+05:30", 1704047400000000),
    (T.TIMESTAMP, "1960-01-01 00:00:00.5", "UTC", -315619199500000),
])
def test_timestamp_partition_values_from_hive_directories(t, text, zone, value):
    assert _from_text(t, text, "f.parquet", "ts", zone) == value


@pytest.mark.parametrize("t,text,zone,message", [
    (T.TIMESTAMP, "2024-01-01 00:00:00Z", "UTC", "a timestamp without a zone has no offset"),
    (T.TIMESTAMP, "yesterday", "UTC", "expected yyyy-mm-dd"),
    (T.TIMESTAMPTZ, "2024-01-01 00:00:00", "Nowhere/Else", "unknown time zone"),
])
def test_bad_timestamp_partition_values_name_the_file_and_value(t, text, zone, message):
    with pytest.raises(ValidationError, match=f"cannot add f.parquet: ts='{text}' is not a {t}.*{message}"):
        _from_text(t, text, "f.parquet", "ts", zone)
