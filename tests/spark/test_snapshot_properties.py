"""Snapshot properties: every write records them in the summary of the snapshot it commits; a key the summary
computes itself is a named error that commits nothing."""
import pytest

import sparkberg
from sparkberg.operations.properties import snapshot_properties
from sparkberg.errors import ValidationError

pytestmark = pytest.mark.spark


def test_every_write_records_its_snapshot_properties(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.sp", "id bigint, k string", partition_by=["k"],
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    rows = spark.sql("SELECT id, IF(id % 2 = 0, 'a', 'b') AS k FROM range(0, 10)")
    writes = [
        ("append", lambda p: t.append(rows, snapshot_properties=p)),
        ("delete", lambda p: t.delete("id = 1", snapshot_properties=p)),
        ("update", lambda p: t.update({"id": "id + 100"}, "id = 2", snapshot_properties=p)),
        ("overwrite", lambda p: t.overwrite(spark.sql("SELECT 3L AS id, 'b' AS k"), "id = 3", snapshot_properties=p)),
        ("dynamic_overwrite", lambda p: t.dynamic_overwrite(spark.sql("SELECT 4L AS id, 'a' AS k"),
                                                            snapshot_properties=p)),
        ("delete_by_keys", lambda p: t.delete_by_keys(spark.sql("SELECT 5L AS id, 'b' AS k"), ["id"],
                                                      snapshot_properties=p)),
        ("merge", lambda p: t.merge(spark.sql("SELECT 7L AS id, 'x' AS k"), "t.id = s.id", snapshot_properties=p)
         .when_matched_delete().execute()),
    ]
    for i, (name, write) in enumerate(writes):
        write({"job.batch": str(i), "job.name": name})
        summary = cat.load_table("db.sp").metadata.current_snapshot.summary
        assert (summary["job.batch"], summary["job.name"]) == (str(i), name), summary
        assert summary["operation"] in ("append", "delete", "overwrite")
    with snapshot_properties({"job.run": "r1"}):  # an enclosing block adds to what each write gives
        t.append(rows, snapshot_properties={"job.batch": "last"})
    summary = cat.load_table("db.sp").metadata.current_snapshot.summary
    assert (summary["job.run"], summary["job.batch"]) == ("r1", "last")
    t.append(rows)
    assert "job.batch" not in cat.load_table("db.sp").metadata.current_snapshot.summary  # (only in the block)


def test_reserved_or_malformed_properties_commit_nothing(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.sp2", "id bigint")
    location = t.metadata_location
    for bad, message in [({"operation": "delete"}, "'operation' is a summary field"),
                         ({"added-records": "9"}, "'added-records' is a summary field"),
                         ({"total-data-files": "0"}, "summary field"), ({"n": 1}, "string values")]:
        with pytest.raises(ValidationError, match=message):
            t.append(spark.range(0, 3), snapshot_properties=bad)
        with pytest.raises(ValidationError, match=message):
            t.merge(spark.range(0, 3), "t.id = s.id", snapshot_properties=bad)
    assert cat.load_table("db.sp2").metadata_location == location
