"""Position delete files compacted by sparkberg on tables Iceberg Java wrote (v2, partition-scoped deletes from
several DELETE statements; the same table upgraded to v3, its deletes turned into deletion vectors): Java,
PyIceberg and DuckDB read the same rows as before."""
import pytest

import sparkberg

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("version", [2, 3])
def test_compacted_deletes_read_the_same_everywhere(java, java_warehouse, duck, version):
    from pyiceberg.table import StaticTable
    java.sql("CREATE NAMESPACE IF NOT EXISTS ref.rpd")
    name = f"ref.rpd.t{version}"
    java.sql(f"CREATE TABLE {name} (id bigint, p int) USING iceberg PARTITIONED BY (p) TBLPROPERTIES "
             "('format-version'='2', 'write.delete.mode'='merge-on-read', 'write.delete.granularity'='partition')")
    java.sql(f"INSERT INTO {name} SELECT id, CAST(id % 2 AS int) FROM range(0, 60)")
    for k in range(3):
        java.sql(f"DELETE FROM {name} WHERE id % 10 = {k}")
    before = sorted(r[0] for r in java.sql(f"SELECT id FROM {name}").collect())
    t = sparkberg.catalog(java, java_warehouse).load_table(f"rpd.t{version}")
    if version == 3:
        t.upgrade_format_version(3)
    rewritten, added, _, _ = t.rewrite_position_delete_files(options={"rewrite-all": "true"}).collect()[0]
    assert rewritten >= 3 and added >= 1
    formats = {d["file_format"] for r in t.plan_files().collect() for d in r["deletes"]}
    assert formats == ({"puffin"} if version == 3 else {"parquet"})
    java.sql(f"REFRESH TABLE {name}")
    assert sorted(r[0] for r in java.sql(f"SELECT id FROM {name}").collect()) == before
    assert sorted(StaticTable.from_metadata(t.metadata_location).scan().to_arrow().column("id").to_pylist()) == before
    assert sorted(r[0] for r in duck.sql(f"SELECT id FROM iceberg_scan('{t.metadata_location}')").fetchall()) == before
