"""Orphan file removal (``Table.remove_orphan_files``): files no metadata references and older than the cutoff,
hidden files never, young files never, metadata files that fell out of the log, prefix mismatches refused, and a
location outside the table refused."""
import os
import time

import pytest

import sparkberg
from sparkberg.errors import ValidationError

OLD = time.time() - 10 * 24 * 3600


def local(t, *parts):
    return os.path.join(t.location[len("file://"):], *parts)


def make(path, old=True):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"x")
    if old:
        os.utime(path, (OLD, OLD))
    return path


@pytest.fixture
def table(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    cat.create_namespace("db")
    t = cat.create_table("db.t", "id bigint, p int", partition_by=["p"],
                         properties={"write.metadata.previous-versions-max": "1"})
    for k in range(3):
        t.append(spark.sql(f"SELECT id, CAST(id % 2 AS int) AS p FROM range({10 * k}, {10 * k + 10})"))
    for d, _, fs in os.walk(local(t)):  # (the table's own files are old too: only references keep them)
        for f in fs:
            os.utime(os.path.join(d, f), (OLD, OLD))
    return t


def test_orphans_are_found_and_deleted(spark, table):
    t = table
    stray = make(local(t, "data", "p=0", "stray.parquet"))
    deep = make(local(t, "data", "p=1", "x", "deep.parquet"))
    top = make(local(t, "leftover.txt"))
    young = make(local(t, "data", "p=0", "young.parquet"), old=False)
    hidden = [make(local(t, "data", "p=0", "_SUCCESS")), make(local(t, "data", "_temporary", "0", "part.parquet")),
              make(local(t, "data", "p=0", ".part.parquet.crc"))]
    logged = {t.metadata_location} | {e.metadata_file for e in t.metadata.metadata_log}
    logged_out = [local(t, "metadata", f) for f in os.listdir(local(t, "metadata"))
                  if f.endswith(".metadata.json") and "file://" + local(t, "metadata", f) not in logged]
    assert len(logged_out) == 2  # (v1 and v2: the log keeps one previous version)
    dry = sorted(r[0] for r in t.remove_orphan_files(dry_run=True).collect())
    expected = sorted("file://" + p for p in (stray, deep, top, *logged_out))
    assert dry == expected
    assert all(os.path.exists(p) for p in (stray, deep, top))
    rows = sorted(r[0] for r in t.to_df().select("id").collect())
    assert sorted(r[0] for r in t.remove_orphan_files().collect()) == expected
    assert not any(os.path.exists(p) for p in (stray, deep, top))
    assert os.path.exists(young) and all(os.path.exists(p) for p in hidden)
    assert sorted(r[0] for r in t.to_df().select("id").collect()) == rows  # (every referenced file kept)
    assert t.remove_orphan_files().count() == 0


def test_a_location_inside_the_table_limits_the_listing(spark, table):
    t = table
    stray = make(local(t, "data", "p=0", "stray.parquet"))
    other = make(local(t, "data", "p=1", "other.parquet"))
    found = [r[0] for r in t.remove_orphan_files(location=t.location + "/data/p=0", dry_run=True).collect()]
    assert found == ["file://" + stray] and os.path.exists(other)
    with pytest.raises(ValidationError, match="not inside the table's location"):
        t.remove_orphan_files(location="/tmp")
    with pytest.raises(ValidationError, match="in the future"):
        t.remove_orphan_files(older_than=int(time.time() * 1000) + 60_000)
    with pytest.raises(ValidationError, match="prefix_mismatch_mode"):
        t.remove_orphan_files(prefix_mismatch_mode="maybe")


def test_prefix_mismatch_is_an_error_by_default(spark, table):
    from sparkberg.maintenance.orphans import EQUAL_SCHEMES, split_location
    assert split_location("s3a://bucket/a/b", EQUAL_SCHEMES, {}) == ("s3", "bucket", "/a/b")
    assert split_location("/a/b", EQUAL_SCHEMES, {}) == split_location("file:///a/b", EQUAL_SCHEMES, {}) == \
        split_location("file:/a/b", EQUAL_SCHEMES, {})
    assert split_location("s3://b1/x", EQUAL_SCHEMES, {"b1": "b2"}) == ("s3", "b2", "/x")


def test_prefix_mismatches_are_refused_kept_or_deleted_as_asked(spark):
    from sparkberg.maintenance.orphans import EQUAL_SCHEMES, _orphans
    listed = spark.createDataFrame([("s3a://b/t/data/f1",), ("s3://other/t/data/f2",), ("s3://b/t/data/f3",)],
                                   "location string")
    valid = spark.createDataFrame([("s3://b/t/data/f1",), ("s3://b/t/data/f2",)], "location string")
    with pytest.raises(ValidationError, match="s3://other/t/data/f2 against s3://b/t/data/f2"):
        _orphans(listed, valid, EQUAL_SCHEMES, {}, "error")
    assert _orphans(listed, valid, EQUAL_SCHEMES, {}, "ignore") == ["s3://b/t/data/f3"]
    assert _orphans(listed, valid, EQUAL_SCHEMES, {}, "delete") == ["s3://b/t/data/f3", "s3://other/t/data/f2"]
    assert _orphans(listed, valid, EQUAL_SCHEMES, {"other": "b"}, "error") == ["s3://b/t/data/f3"]


def test_a_file_referenced_twice_and_under_other_forms_is_matched_once(spark):
    """A listed file referenced by several manifests, under the same and under an equal origin, is neither an
    orphan nor a mismatch; one referenced under another authority as well as its own is not a mismatch."""
    from sparkberg.maintenance.orphans import EQUAL_SCHEMES, _orphans
    listed = spark.createDataFrame([("file:///t/data/f1",), ("s3://b/t/data/f2",), ("s3://b/t/data/f3",)],
                                   "location string")
    valid = spark.createDataFrame([("/t/data/f1",), ("file:/t/data/f1",), ("file:///t/data/f1",),
                                   ("s3://b/t/data/f2",), ("s3://other/t/data/f2",), ("s3a://b/t/data/f2",)],
                                  "location string")
    assert _orphans(listed, valid, EQUAL_SCHEMES, {}, "error") == ["s3://b/t/data/f3"]
