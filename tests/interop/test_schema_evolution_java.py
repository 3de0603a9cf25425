"""Schema evolution across engines: a table Java evolves with ``ALTER TABLE`` (nested renames, adds, drops, moves,
promotions at depth) reads in sparkberg exactly as in Java at every snapshot; a table sparkberg evolves with
``update_schema`` reads the same in Java (which then writes on top, read back by sparkberg), PyIceberg and DuckDB."""
import json

import pytest

import sparkberg

pytestmark = pytest.mark.interop

DDL = ("id bigint NOT NULL, n int, address struct<street: string, city: string>, "
       "points array<struct<x: int, y: int>>, attrs map<string, struct<b: float>>, legacy string")
FIRST = ("SELECT 1L AS id, 7 AS n, named_struct('street', 'main st', 'city', 'oslo') AS address, "
         "array(named_struct('x', 1, 'y', 2)) AS points, map('k', named_struct('b', CAST(1.5 AS float))) AS attrs, "
         "'old' AS legacy")
EVOLVED = ("SELECT 2L AS id, 5000000000L AS n, "
           "named_struct('street', 's', 'zip', '0150', 'town', 'bergen') AS address, "
           "array(named_struct('x', 9000000000L, 'y', 3)) AS points, "
           "map('j', named_struct('b', CAST(2.25 AS double))) AS attrs")


def norm(rows):
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in rows)


@pytest.mark.parametrize("version", [2, 3])
def test_sparkberg_reads_java_evolved_tables_at_every_snapshot(java, java_warehouse, version):
    name = f"java_nested_v{version}"
    java.sql(f"CREATE TABLE ref.evo.{name} ({DDL}) USING iceberg TBLPROPERTIES ('format-version'='{version}')")
    java.sql(f"INSERT INTO ref.evo.{name} {FIRST}")
    for stmt in ("ALTER COLUMN points.element.x TYPE bigint", "ALTER COLUMN n TYPE bigint",
                 "ALTER COLUMN attrs.value.b TYPE double", "RENAME COLUMN address.city TO town",
                 "ADD COLUMN address.zip string AFTER street", "DROP COLUMN legacy", "ALTER COLUMN n FIRST"):
        java.sql(f"ALTER TABLE ref.evo.{name} {stmt}")
    java.sql(f"INSERT INTO ref.evo.{name} SELECT n, id, address, points, attrs FROM ({EVOLVED})")
    t = sparkberg.catalog(java, java_warehouse).load_table(f"evo.{name}")
    assert [f.name for f in t.schema().fields] == ["n", "id", "address", "points", "attrs"]
    assert norm(t.to_df().collect()) == norm(java.sql(f"SELECT * FROM ref.evo.{name}").collect())
    for s in t.metadata.snapshots:
        ours = norm(t.to_df(snapshot_id=s.snapshot_id).collect())
        assert ours == norm(java.sql(f"SELECT * FROM ref.evo.{name} VERSION AS OF {s.snapshot_id}").collect())


def test_java_pyiceberg_and_duckdb_read_a_table_sparkberg_evolved(java, java_warehouse, duck):
    from pyiceberg.table import StaticTable
    cat = sparkberg.catalog(java, java_warehouse)
    t = cat.create_table("evo.sb_nested", DDL, properties={"format-version": "2"})
    t.append(java.sql(FIRST))
    with t.update_schema() as u:
        u.update_column("points.element.x", "bigint").update_column("n", "bigint")
        u.update_column("attrs.value.b", "double").rename_column("address.city", "town")
        u.add_column("address.zip", "string", after="address.street").delete_column("legacy").move_first("n")
    t.append(java.sql(f"SELECT n, id, address, points, attrs FROM ({EVOLVED})"))
    java.sql("REFRESH TABLE ref.evo.sb_nested")
    ours = norm(cat.load_table("evo.sb_nested").to_df().collect())
    assert norm(java.sql("SELECT * FROM ref.evo.sb_nested").collect()) == ours
    assert len(ours) == 2 and '"town": "oslo"' in ours[0] and '"x": 9000000000' in ours[1]
    java.sql("INSERT INTO ref.evo.sb_nested SELECT 3000000000L, 3L, named_struct('street', 't', 'zip', NULL, "
             "'town', 'rome'), array(named_struct('x', 5L, 'y', 6)), map('m', named_struct('b', 0.5D))")
    t = cat.load_table("evo.sb_nested")
    assert norm(t.to_df().collect()) == norm(java.sql("SELECT * FROM ref.evo.sb_nested").collect())
    flat = sorted((r.id, r.n, r.address.town, r.points[0].x) for r in t.to_df().collect())
    assert flat == [(1, 7, "oslo", 1), (2, 5000000000, "bergen", 9000000000), (3, 3000000000, "rome", 5)]
    pt = StaticTable.from_metadata(t.metadata_location).scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["n"], r["address"]["town"], r["points"][0]["x"]) for r in pt) == flat
    got = duck.sql(f"SELECT id, n, address.town, points[1].x FROM iceberg_scan('{t.metadata_location}')").fetchall()
    assert sorted(got) == flat


def test_java_reads_a_schema_sparkberg_merged_on_write(java, java_warehouse, duck):
    cat = sparkberg.catalog(java, java_warehouse)
    t = cat.create_table("evo.sb_merged", "id bigint, s struct<a: string>", properties={"format-version": "2"})
    t.append(java.sql("SELECT 1L AS id, named_struct('a', 'x') AS s"))
    t.append(java.sql("SELECT 2L AS id, named_struct('a', 'y', 'b', 3) AS s, 'hello' AS note"), merge_schema=True)
    java.sql("REFRESH TABLE ref.evo.sb_merged")
    got = sorted((r.id, r.s.a, r.s.b, r.note) for r in java.sql("SELECT * FROM ref.evo.sb_merged").collect())
    assert got == [(1, "x", None, None), (2, "y", 3, "hello")]
    ducked = duck.sql(f"SELECT id, s.a, s.b, note FROM iceberg_scan('{t.metadata_location}')").fetchall()
    assert sorted(ducked) == got


def test_partition_evolution_matches_java_and_reads_both_ways(java, java_warehouse):
    """The same evolution done by Java's ALTER TABLE and by update_spec gives the same specs (ids, names,
    transforms); each engine reads what the other wrote under the evolved spec."""
    cat = sparkberg.catalog(java, java_warehouse)
    steps = [("ADD PARTITION FIELD bucket(8, id)", lambda u: u.add_field("bucket(8, id)")),
             ("ADD PARTITION FIELD truncate(4, s) AS s4", lambda u: u.add_field("truncate(s, 4)", name="s4")),
             ("DROP PARTITION FIELD ts_day", lambda u: u.remove_field("ts_day")),
             ("ADD PARTITION FIELD hour(ts)", lambda u: u.add_field("hour(ts)")),
             ("REPLACE PARTITION FIELD s4 WITH truncate(4, s) AS prefix",
              lambda u: u.remove_field("s4").add_field("truncate(s, 4)", name="prefix")),
             ("REPLACE PARTITION FIELD prefix WITH truncate(4, s) AS pre", lambda u: u.rename_field("prefix", "pre")),
             ("DROP PARTITION FIELD hour(ts)", lambda u: u.remove_field("hour(ts)")),
             ("ADD PARTITION FIELD days(ts)", lambda u: u.add_field("day(ts)"))]
    for v in (1, 2):
        java.sql(f"CREATE TABLE ref.evo.jspec_v{v} (id bigint, ts timestamp, s string) USING iceberg "
                 f"PARTITIONED BY (days(ts)) TBLPROPERTIES ('format-version'='{v}')")
        t = cat.create_table(f"evo.sbspec_v{v}", "id bigint, ts timestamp, s string", partition_by=["day(ts)"],
                             properties={"format-version": str(v)})
        for stmt, change in steps:
            java.sql(f"ALTER TABLE ref.evo.jspec_v{v} {stmt}")
            with t.update_spec() as u:
                change(u)
        theirs = cat.load_table(f"evo.jspec_v{v}").metadata
        ours = cat.load_table(f"evo.sbspec_v{v}").metadata

        def specs(m):
            return [[(f.source_id, f.field_id, f.name, str(f.transform)) for f in s.fields] for s in m.partition_specs]
        assert specs(ours) == specs(theirs) and ours.last_partition_id == theirs.last_partition_id
        ours_t = cat.load_table(f"evo.sbspec_v{v}")
        ours_t.append(java.sql("SELECT 1L AS id, TIMESTAMP'2024-01-02 03:00:00' AS ts, 'abcdef' AS s"))
        java.sql(f"REFRESH TABLE ref.evo.sbspec_v{v}")
        java.sql(f"INSERT INTO ref.evo.sbspec_v{v} VALUES (2, TIMESTAMP'2024-01-03 04:00:00', 'xyz')")
        got = sorted(tuple(r) for r in java.sql(f"SELECT id, s FROM ref.evo.sbspec_v{v}").collect())
        assert got == [(1, "abcdef"), (2, "xyz")]
        assert sorted(tuple(r) for r in cat.load_table(f"evo.sbspec_v{v}").to_df().select("id", "s").collect()) == got
        parts = {r[0] for r in java.sql(f"SELECT spec_id FROM ref.evo.sbspec_v{v}.files").collect()}
        assert parts == {ours.default_spec_id}


def test_engines_read_files_sparkberg_added(java, java_warehouse, duck, tmp_path):
    """Hive-layout Parquet files (no field ids, no partition column in the files) added by add_files read the same
    in Java, PyIceberg and DuckDB, partition column included; Java then appends on top."""
    from pyiceberg.table import StaticTable
    src = str(tmp_path / "hive")
    java.sql("SELECT id, concat('v', id) AS v, IF(id % 2 = 0, 'eu', 'us') AS region FROM range(0, 20)") \
        .write.partitionBy("region").parquet(src)
    cat = sparkberg.catalog(java, java_warehouse)
    t = cat.create_table("evo.imported", "id bigint, v string, region string", partition_by=["region"],
                         properties={"format-version": "2"})
    t.add_files(src)
    expected = sorted((i, f"v{i}", "eu" if i % 2 == 0 else "us") for i in range(20))
    assert sorted(tuple(r) for r in t.to_df().collect()) == expected
    java.sql("REFRESH TABLE ref.evo.imported")
    assert sorted(tuple(r) for r in java.sql("SELECT * FROM ref.evo.imported").collect()) == expected
    assert [tuple(r) for r in java.sql("SELECT id FROM ref.evo.imported WHERE id = 7").collect()] == [(7,)]
    pt = StaticTable.from_metadata(t.metadata_location).scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["v"], r["region"]) for r in pt) == expected
    duck.execute("SET TimeZone = 'UTC'")
    ducked = duck.sql(f"SELECT id, v, region FROM iceberg_scan('{t.metadata_location}')").fetchall()
    assert sorted(ducked) == expected
    java.sql("INSERT INTO ref.evo.imported VALUES (100, 'java', 'eu')")
    assert cat.load_table("evo.imported").to_df().count() == 21


def test_java_and_pyiceberg_read_v3_defaults_sparkberg_added(java, java_warehouse):
    # a column added with a default (initial-default and write-default, v3): rows written before it read the
    # default in every engine, rows written after it without the column get it too
    from pyiceberg.table import StaticTable
    cat = sparkberg.catalog(java, java_warehouse)
    t = cat.create_table("evo.sb_defaults", "id bigint, s struct<a: int>", properties={"format-version": "3"})
    t.append(java.sql("SELECT 1L AS id, named_struct('a', 1) AS s"))
    with t.update_schema() as u:
        u.add_column("region", "string", default="eu").add_column("s.b", "int", default=7)
        u.add_column("score", "int", default=5, required=True)
    t.append(java.sql("SELECT 2L AS id, named_struct('a', 2, 'b', 3) AS s, 'us' AS region, 9 AS score"))
    expected = [(1, 1, 7, "eu", 5), (2, 2, 3, "us", 9)]
    java.sql("REFRESH TABLE ref.evo.sb_defaults")
    flat = "SELECT id, s.a, s.b, region, score FROM ref.evo.sb_defaults"
    assert sorted(tuple(r) for r in java.sql(flat).collect()) == expected
    ours = sorted((r.id, r.s.a, r.s.b, r.region, r.score) for r in cat.load_table("evo.sb_defaults").to_df().collect())
    assert ours == expected
    pt = StaticTable.from_metadata(t.metadata_location).scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["s"]["a"], r["s"]["b"], r["region"], r["score"]) for r in pt) == expected


DEEP_DDL = ("id bigint, points array<struct<x: int, y: int>>, attrs map<string, struct<a: int, b: string>>, "
            "deep map<string, array<struct<p: int, q: struct<r: int, w: int>>>>")
DEEP_FIRST = ("SELECT 1L AS id, array(named_struct('x', 1, 'y', 2)) AS points, "
              "map('k', named_struct('a', 1, 'b', 'q')) AS attrs, "
              "map('m', array(named_struct('p', 3, 'q', named_struct('r', 4, 'w', 5)))) AS deep")
DEEP_EVOLUTION = [("points.element.z", "add", "bigint"), ("points.element.x", "type", "bigint"),
                  ("points.element.y", "drop", None), ("attrs.value.b", "rename", "bb"),
                  ("deep.value.element.s", "add", "string"), ("deep.value.element.q.r", "rename", "rr"),
                  ("deep.value.element.q.t", "add", "int"), ("deep.value.element.p", "type", "bigint")]
DEEP_SECOND = ("SELECT 2L AS id, array(named_struct('x', 5000000000L, 'z', 7L)) AS points, "
               "map('j', named_struct('a', 2, 'bb', 'r')) AS attrs, "
               "map('n', array(named_struct('p', 6000000000L, 'q', named_struct('rr', 8, 'w', 9, 't', 10), "
               "'s', 'new'))) AS deep")


def _java_evolve(java, name):
    sql = {"add": "ADD COLUMN {c} {v}", "type": "ALTER COLUMN {c} TYPE {v}", "drop": "DROP COLUMN {c}",
           "rename": "RENAME COLUMN {c} TO {v}"}
    for column, kind, value in DEEP_EVOLUTION:
        java.sql(f"ALTER TABLE {name} " + sql[kind].format(c=column, v=value))


def _sparkberg_evolve(t):
    with t.update_schema() as u:
        for column, kind, value in DEEP_EVOLUTION:
            {"add": lambda: u.add_column(column, value), "type": lambda: u.update_column(column, value),
             "drop": lambda: u.delete_column(column), "rename": lambda: u.rename_column(column, value)}[kind]()


@pytest.mark.parametrize("evolved_by", ["java", "sparkberg"])
def test_structs_in_lists_and_maps_of_java_files_read_after_evolution(java, java_warehouse, evolved_by):
    # Java writes its files with the input's nullability: every nested field of these rows is `required` in the
    # Parquet file, and Spark 3.5's vectorized reader, matching by field id, refuses a struct inside a list or
    # map that lacks a requested field or names it otherwise
    name = f"java_deep_{evolved_by}"
    java.sql(f"CREATE TABLE ref.evo.{name} ({DEEP_DDL}) USING iceberg TBLPROPERTIES ('format-version'='2')")
    java.sql(f"INSERT INTO ref.evo.{name} {DEEP_FIRST}")
    cat = sparkberg.catalog(java, java_warehouse)
    if evolved_by == "java":
        _java_evolve(java, f"ref.evo.{name}")
    else:
        _sparkberg_evolve(cat.load_table(f"evo.{name}"))
        java.sql(f"REFRESH TABLE ref.evo.{name}")
    java.sql(f"INSERT INTO ref.evo.{name} {DEEP_SECOND}")
    t = cat.load_table(f"evo.{name}")
    expected = norm(java.sql(f"SELECT * FROM ref.evo.{name}").collect())
    assert norm(t.to_df().collect()) == expected
    old = next(r for r in expected if '"id": 1' in r)
    assert '"points": [{"x": 1, "z": null}]' in old and '"rr": 4' in old and '"t": null' in old and '"bb": "q"' in old
    for s in t.metadata.snapshots:
        ours = norm(t.to_df(snapshot_id=s.snapshot_id).collect())
        assert ours == norm(java.sql(f"SELECT * FROM ref.evo.{name} VERSION AS OF {s.snapshot_id}").collect())
    # filters and projections on evolved nested columns, and the SQL view of the table
    assert [r.id for r in t.to_df(filter="id = 1", columns=["id", "deep"]).collect()] == [1]
    t.register_views(f"deep_{evolved_by}")
    assert norm(java.sql(f"SELECT * FROM deep_{evolved_by}").collect()) == expected


def test_merge_schema_assigns_the_ids_and_positions_javas_union_by_name_does(java, java_warehouse):
    # a write with new nested fields (in a struct, in a list's struct, in a map's struct) and new top-level columns
    ddl = "id bigint, info struct<a: int, b: string>, pts array<struct<x: int>>, m map<string, struct<p: int>>"
    first = ("SELECT 1L AS id, named_struct('a', 1, 'b', 'x') AS info, array(named_struct('x', 1)) AS pts, "
             "map('k', named_struct('p', 1)) AS m")
    # (Iceberg Java's write then checks the data's field order against the evolved table's: new fields last)
    wider = ("SELECT 2L AS id, named_struct('a', 2, 'b', 'y', 'z', 5L) AS info, "
             "array(named_struct('x', 2, 'w', 'q')) AS pts, map('k', named_struct('p', 2, 'r', 3)) AS m, "
             "'dee' AS d, named_struct('e', 1) AS extra")
    props = "TBLPROPERTIES ('format-version'='2', 'write.spark.accept-any-schema'='true')"
    java.sql(f"CREATE TABLE ref.evo.union_java ({ddl}) USING iceberg {props}")
    java.sql(f"INSERT INTO ref.evo.union_java {first}")
    java.sql(wider).writeTo("ref.evo.union_java").option("merge-schema", "true").append()
    cat = sparkberg.catalog(java, java_warehouse)
    t = cat.create_table("evo.union_sb", ddl, properties={"format-version": "2"})
    t.append(java.sql(first))
    t.append(java.sql(wider), merge_schema=True)
    theirs = cat.load_table("evo.union_java").schema().to_json()["fields"]
    ours = cat.load_table("evo.union_sb").schema().to_json()["fields"]
    assert ours == theirs
    # data whose new top-level column comes before a struct that gains a field (Java's write refuses that order,
    # its union does not): Java's UpdateSchema.unionByNameWith, called directly, against merge_schema
    java.sql(f"CREATE TABLE ref.evo.union_java2 ({ddl}) USING iceberg TBLPROPERTIES ('format-version'='2')")
    jvm = java._jvm
    jtable = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(java._jsparkSession, "ref.evo.union_java2")
    ahead = ("SELECT 2L AS id, 'dee' AS d, named_struct('a', 2, 'b', 'y', 'z', 5L) AS info, "
             "array(named_struct('x', 2, 'w', 'q')) AS pts, map('k', named_struct('p', 2, 'r', 3)) AS m")
    jschema = jvm.org.apache.iceberg.spark.SparkSchemaUtil.convert(java.sql(ahead)._jdf.schema())
    jtable.updateSchema().unionByNameWith(jschema).commit()
    t2 = cat.create_table("evo.union_sb2", ddl, properties={"format-version": "2"})
    t2.append(java.sql(ahead), merge_schema=True)
    theirs = cat.load_table("evo.union_java2").schema().to_json()["fields"]
    assert cat.load_table("evo.union_sb2").schema().to_json()["fields"] == theirs
    ids = {f.name: f.field_id for f in cat.load_table("evo.union_sb2").schema().index_by_id().values()}
    assert ids["z"] < ids["w"] < ids["r"] < ids["d"]  # a struct's new fields first
