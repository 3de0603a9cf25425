"""Tables written by DuckDB 1.5.5 read correctly. DuckDB writes Iceberg only through a REST catalog, so the
test serves one (tests/restserver.py) over a warehouse directory; DuckDB creates, inserts, deletes and updates
(merge-on-read position deletes), and sparkberg reads every snapshot as DuckDB and Iceberg Java (through the same
REST catalog) do."""
import os
from collections import Counter

import pytest

import sparkberg

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def duck_tables(tmp_path_factory):
    from duckdbs import duckdb_on_rest
    con, rest, warehouse = duckdb_on_rest(tmp_path_factory, "duck")
    con.execute("CREATE TABLE w.db.events (id BIGINT, s VARCHAR, d DATE, ts TIMESTAMP, tstz TIMESTAMPTZ, "
                "dec DECIMAL(10,2), f DOUBLE, b BLOB, flag BOOLEAN)")
    con.execute("INSERT INTO w.db.events SELECT i, 's' || i, DATE '2024-01-01' + i::INT, "
                "TIMESTAMP '2024-01-01' + INTERVAL (i) HOUR, TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i) MINUTE, "
                "i / 3, i * 1.5, ('b' || i)::BLOB, i % 2 = 0 FROM range(0, 40) r(i)")
    con.execute("INSERT INTO w.db.events VALUES (100, NULL, NULL, NULL, NULL, NULL, 'NaN'::DOUBLE, NULL, NULL)")
    con.execute("DELETE FROM w.db.events WHERE id % 5 = 0")
    con.execute("UPDATE w.db.events SET s = 'upd', f = -0.0 WHERE id IN (7, 8)")
    con.execute("DELETE FROM w.db.events WHERE s = 's9'")
    yield con, rest, warehouse
    rest.close()


def norm(rows):
    def one(v):
        if isinstance(v, float) and v != v:
            return "NaN"
        if isinstance(v, (bytes, bytearray, memoryview)):
            return bytes(v)
        if hasattr(v, "tzinfo") and getattr(v, "tzinfo", None) is not None:
            return v.astimezone(__import__("datetime").timezone.utc).replace(tzinfo=None)
        return v
    return Counter(tuple(one(v) for v in r) for r in rows)


def test_sparkberg_reads_duckdb_tables_like_duckdb_and_java(duck_tables, java):
    con, _, warehouse = duck_tables
    t = sparkberg.load_table(java, os.path.join(warehouse, "db", "events"))
    assert [s.operation for s in t.metadata.snapshots] == ["append", "append", "delete", "overwrite", "delete"]
    assert any(d["content"] == 1 for r in t.plan_files().collect() for d in r["deletes"])
    cols = [f.name for f in t.schema().fields]
    ours = norm(t.to_df().collect())
    assert ours == norm(con.sql(f"SELECT {', '.join(cols)} FROM w.db.events").fetchall())
    assert sum(ours.values()) == 41 - 9 - 1  # ids % 5 = 0 (100 too), then s9
    # Iceberg Java reads the same table through the same REST catalog
    _, rest, _ = duck_tables
    for k, v in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "rest", ".uri": rest.uri,
                 ".cache-enabled": "false"}.items():
        java.conf.set(f"spark.sql.catalog.duckrest{k}", v)
    assert ours == norm(java.sql(f"SELECT {', '.join(cols)} FROM duckrest.db.events").collect())
    for snap in t.metadata.snapshots:  # every snapshot, as DuckDB's time travel reads it
        theirs = con.sql(f"SELECT {', '.join(cols)} FROM w.db.events AT (VERSION => {snap.snapshot_id})").fetchall()
        assert norm(t.to_df(snapshot_id=snap.snapshot_id).collect()) == norm(theirs), snap.snapshot_id


def test_sparkberg_filters_and_metadata_on_duckdb_tables(duck_tables, java):
    con, _, warehouse = duck_tables
    t = sparkberg.load_table(java, os.path.join(warehouse, "db", "events"))
    for f in ("id > 30", "d < DATE '2024-01-10'", "s = 'upd'", "f IS NULL OR isnan(f)"):
        ours = norm(t.to_df(filter=f).collect())
        theirs = norm(con.sql(f"SELECT * FROM w.db.events WHERE {f}").fetchall())
        assert ours == theirs, f
    assert t.metadata_table("files").count() == len(t.plan_files().collect()) + len(
        {d["file_path"] for r in t.plan_files().collect() for d in r["deletes"]})
