"""A Spark SQL filter's timestamp literals as Iceberg values: a literal with a zone or an offset is that instant;
one without is read in the session's time zone against a ``timestamptz`` column and as written against a
``timestamp`` one (Spark's rules). The session's zone is asked for only when such a literal needs it: reading it
is a call into the JVM, which a filter without one does not pay."""
import pytest

from sparkberg.expressions.predicates import FALSE, TRUE, And, Predicate
from sparkberg.expressions.sql import translate_filter
from sparkberg.format import types as T

SCHEMA = T.Schema([T.NestedField(1, "id", T.LONG), T.NestedField(2, "tz", T.TIMESTAMPTZ),
                   T.NestedField(3, "ntz", T.TIMESTAMP)])
JAN_1_UTC = 1_704_067_200_000_000  # 2024-01-01 00:00:00 UTC, in micros


class Zone:
    """A time zone the translator must ask for (a session's), counting how often it does."""

    def __init__(self, name: str):
        self.name, self.calls = name, 0

    def __call__(self) -> str:
        self.calls += 1
        return self.name


def literal(expr) -> int:
    assert isinstance(expr, Predicate), expr
    return expr.value


@pytest.mark.parametrize("text, expected", [
    ("tz >= TIMESTAMP'2024-01-01 00:00:00Z'", JAN_1_UTC),
    ("tz >= TIMESTAMP'2024-01-01 00:00:00+01:00'", JAN_1_UTC - 3_600_000_000),
    ("id > 5", None),
])
def test_a_filter_with_no_zone_less_literal_never_asks_for_the_zone(text, expected):
    zone = Zone("America/Los_Angeles")
    got = translate_filter(text, SCHEMA, zone)
    assert zone.calls == 0
    if expected is not None:
        assert literal(got) == expected


def test_a_zone_less_literal_against_timestamptz_is_read_in_the_zone_asked_once():
    zone = Zone("America/Los_Angeles")
    got = translate_filter("tz >= TIMESTAMP'2024-01-01 00:00:00' AND tz < TIMESTAMP'2024-01-02 00:00:00'",
                           SCHEMA, zone)
    assert zone.calls == 1
    assert isinstance(got, And)
    assert literal(got.left) == JAN_1_UTC + 8 * 3_600_000_000  # PST is UTC-8
    assert literal(got.right) == JAN_1_UTC + 32 * 3_600_000_000
    # the same as the zone given by name
    named = translate_filter("tz >= TIMESTAMP'2024-01-01 00:00:00'", SCHEMA, "America/Los_Angeles")
    assert literal(named) == JAN_1_UTC + 8 * 3_600_000_000


def test_a_zone_less_literal_against_a_timestamp_without_zone_is_as_written():
    zone = Zone("America/Los_Angeles")
    got = translate_filter("ntz >= TIMESTAMP'2024-01-01 00:00:00'", SCHEMA, zone)
    assert literal(got) == JAN_1_UTC


@pytest.mark.parametrize("text", ["id > '1_000'", "id = '\u0661\u0662'", "id < '0x10'", "id > ' 7 '"])
def test_a_number_in_a_string_is_read_only_where_spark_reads_it_alike(text):
    # Python's int() and float() read '1_000' and other scripts' digits, which Spark casts to NULL: a comparison
    # Spark never finds true must not be taken as one that holds for every row (a DELETE would drop whole files)
    weak, strong = translate_filter(text, SCHEMA), translate_filter(text, SCHEMA, strengthen=True)
    if text == "id > ' 7 '":  # (Spark trims the spaces, as Python does)
        assert weak == strong == Predicate("gt", "id", 7)
    else:
        assert (weak, strong) == (TRUE, FALSE)
