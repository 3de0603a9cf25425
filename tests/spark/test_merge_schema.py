"""``merge_schema`` on writes: the data's new columns (nested ones too) and wider types become the table's in the
same commit as the data, by request or by the table's ``write.spark.accept-any-schema``; a concurrent schema
change is a conflict that leaves the table as it was."""
import json

import pytest

import sparkberg
from sparkberg.format.schema_update import mapping_of
from sparkberg.errors import CommitFailedException, ValidationError

pytestmark = pytest.mark.spark


@pytest.fixture
def table(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.m", "id bigint, n int, s struct<a: string>", partition_by=["bucket(2, id)"],
                         properties={"format-version": "2", "commit.retry.num-retries": "1"})
    t.append(spark.sql("SELECT 1L AS id, 1 AS n, named_struct('a', 'x') AS s"))
    return cat, t


NEW = "SELECT 2L AS id, 5000000000L AS n, named_struct('a', 'y', 'b', 3) AS s, 'hello' AS note"


def test_new_columns_and_wider_types_land_with_the_data(spark, table):
    cat, t = table
    t.set_properties({"schema.name-mapping.default": json.dumps(mapping_of(t.schema().fields))})
    log = len(cat.load_table("db.m").metadata.metadata_log)
    with pytest.raises(ValidationError, match="'note' is not in the table schema"):
        t.append(spark.sql(NEW))  # (without merge_schema: an error, nothing committed)
    t.append(spark.sql(NEW), merge_schema=True)
    t = cat.load_table("db.m")
    assert len(t.metadata.metadata_log) == log + 1  # one commit: the schema and the snapshot
    assert t.metadata.current_snapshot.schema_id == t.metadata.current_schema_id == 1
    s = t.schema()
    assert [f.name for f in s.fields] == ["id", "n", "s", "note"] and s.find_field("n").field_type.to_json() == "long"
    assert [f.name for f in s.find_field("s").field_type.fields] == ["a", "b"]
    rows = sorted((r.id, r.n, r.s.a, r.s.b, r.note) for r in t.to_df().collect())
    assert rows == [(1, 1, "x", None, None), (2, 5000000000, "y", 3, "hello")]
    mapping = json.loads(t.properties["schema.name-mapping.default"])  # (kept up in the same commit)
    assert [e["names"] for e in mapping] == [["id"], ["n"], ["s"], ["note"]]
    assert [e["names"] for e in mapping[2]["fields"]] == [["a"], ["b"]]
    t.append(spark.sql("SELECT 3L AS id"), merge_schema=True)  # nothing new: no schema change
    assert cat.load_table("db.m").metadata.current_schema_id == 1


def test_overwrites_and_merge_merge_too_and_the_table_property_asks_for_it(spark, table):
    cat, t = table
    t.overwrite(spark.sql("SELECT 1L AS id, 10 AS n, named_struct('a', 'o') AS s, 1.5D AS w"), "id = 1",
                merge_schema=True)
    t.dynamic_overwrite(spark.sql("SELECT 1L AS id, 11 AS n, named_struct('a', 'd') AS s, 'p' AS tag"),
                        merge_schema=True)
    src = spark.sql("SELECT 1L AS id, 12 AS n, named_struct('a', 'm') AS s, 2.5D AS w, 'q' AS tag, 7 AS extra "
                    "UNION ALL SELECT 9L, 9, named_struct('a', 'i'), 0D, 'i', 8")
    t.merge(src, "t.id = s.id", merge_schema=True).when_matched_update_all().when_not_matched_insert_all().execute()
    t = cat.load_table("db.m")
    assert [f.name for f in t.schema().fields] == ["id", "n", "s", "w", "tag", "extra"]
    assert sorted((r.id, r.n, r.s.a, r.w, r.tag, r.extra) for r in t.to_df().collect()) == [
        (1, 12, "m", 2.5, "q", 7), (9, 9, "i", 0.0, "i", 8)]
    t.set_properties({"write.spark.accept-any-schema": "true"})
    t.append(spark.sql("SELECT 4L AS id, 'auto' AS via"))
    assert "via" in [f.name for f in cat.load_table("db.m").schema().fields]


def test_a_concurrent_schema_change_is_a_conflict(spark, table):
    cat, t = table
    stale = cat.load_table("db.m")
    with cat.load_table("db.m").update_schema() as u:
        u.add_column("other", "string")
    with pytest.raises(CommitFailedException, match="schema of table .* changed"):
        stale.append(spark.sql(NEW), merge_schema=True)
    t = cat.load_table("db.m")
    assert [f.name for f in t.schema().fields] == ["id", "n", "s", "other"] and t.to_df().count() == 1
