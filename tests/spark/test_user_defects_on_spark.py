"""What a new user met (issue 90): named errors for a changelog's bad range, a procedure's bad argument, a value
the store assignment policy does not write, a missing table in a query, a syntax error; UPDATE of a nested field;
a stream whose schema does not fit. Each check changes nothing in the table."""
import pytest

from sparkberg.errors import NoSuchTableError, SqlSyntaxError, ValidationError
from test_sql_statements import cat, sql  # noqa: F401 - the fixtures: a SQL catalog, and sparkberg.sql on it

pytestmark = pytest.mark.spark


def test_changes_names_a_string_id_and_an_unknown_snapshot(spark, cat):
    t = cat.create_table("db.t", "id bigint")
    t = t.append(spark.range(3))
    first = t.current_snapshot().snapshot_id
    t = t.append(spark.range(3, 5))
    # (item 2: an id given as a string is the id it spells, as Spark's read options carry ids)
    assert sorted(r.id for r in t.changes(str(first)).collect()) == [3, 4]
    with pytest.raises(ValidationError, match="cannot find the start snapshot 42: there is no such snapshot"):
        t.changes(42)
    with pytest.raises(ValidationError, match="start snapshot id must be an integer snapshot id, got float 1.5"):
        t.changes(1.5)
    with pytest.raises(ValidationError, match="end snapshot id must be an integer snapshot id, got str 'latest'"):
        t.changes(first, "latest")


def test_procedure_arguments_of_the_wrong_type_are_named(spark, cat, sql):
    t = cat.create_table("db.orders", "id bigint")
    t.append(spark.range(3))
    before = cat.load_table("db.orders").metadata
    for call, message in [
        ("retain_last => 'abc'", "expire_snapshots: argument retain_last must be an integer, got str 'abc'"),
        ("retain_last => 2.5", "argument retain_last must be an integer"),
        ("older_than => 'yesterday'", "argument older_than must be a timestamp"),
        ("retain_last => 10000000000", "argument retain_last must be a 32-bit integer"),
        ("stream_results => 'maybe'", "argument stream_results must be a boolean"),
    ]:
        with pytest.raises(ValidationError, match=message):
            sql(f"CALL system.expire_snapshots(table => 'db.orders', {call})")
    assert cat.load_table("db.orders").metadata == before
    # (a string Spark reads as a timestamp, and a number given as text, still work)
    out = sql("CALL system.expire_snapshots(table => 'db.orders', older_than => '2000-01-01 00:00:00', "
              "retain_last => '1')").collect()
    assert out[0]["deleted_data_files_count"] == 0


def test_update_and_merge_set_follow_the_store_assignment_policy(spark, cat, sql):
    t = cat.create_table("db.typed", "id int, v string")
    t.append(spark.sql("SELECT 1 AS id, 'x' AS v"))
    before = cat.load_table("db.typed").metadata
    message = r"column 'id' has type string.*, which cannot be written as int.* under " \
              r"spark.sql.storeAssignmentPolicy=ANSI"
    with pytest.raises(ValidationError, match=message):
        sql("UPDATE db.typed SET id = '5'")
    with pytest.raises(ValidationError, match=message):
        t.update({"id": "'abc'"})
    src = spark.sql("SELECT 1 AS id, '7' AS n")
    with pytest.raises(ValidationError, match=message):
        t.merge(src, "t.id = s.id").when_matched_update({"id": "s.n"}).execute()
    with pytest.raises(ValidationError, match=message):
        sql("INSERT INTO db.typed VALUES ('1', 'x')")  # (the write's own check: the same words)
    assert cat.load_table("db.typed").metadata == before
    sql("UPDATE db.typed SET id = id + 1L")  # (bigint into int: ANSI assigns numbers, checked for overflow)
    assert [tuple(r) for r in t.refresh().to_df().collect()] == [(2, "x")]
    try:
        spark.conf.set("spark.sql.storeAssignmentPolicy", "LEGACY")
        sql("UPDATE db.typed SET id = '5'")
    finally:
        spark.conf.unset("spark.sql.storeAssignmentPolicy")
    assert [tuple(r) for r in t.refresh().to_df().collect()] == [(5, "x")]


def test_update_sets_a_nested_field(spark, cat, sql):
    sql("CREATE TABLE db.users (uid int, score int, addr struct<city: string, zip: string>)")
    sql("INSERT INTO db.users VALUES (1, 10, named_struct('city', 'Oslo', 'zip', '0150')), "
        "(2, 20, named_struct('city', 'Oslo', 'zip', '0151')), (3, 30, NULL)")
    sql("UPDATE db.users SET score = score + 1, addr.city = 'Bergen' WHERE uid = 2")
    sql("UPDATE db.users SET addr.zip = '5003' WHERE uid = 3")  # (a null struct gets its other fields null)
    rows = {r.uid: (r.score, r.addr and tuple(r.addr)) for r in sql("SELECT * FROM db.users").collect()}
    assert rows == {1: (10, ("Oslo", "0150")), 2: (21, ("Bergen", "0151")), 3: (30, (None, "5003"))}
    with pytest.raises(ValidationError, match="cannot update unknown column 'addr.country'"):
        sql("UPDATE db.users SET addr.country = 'NO'")
    with pytest.raises(ValidationError, match="conflicting assignments of 'addr' and 'addr.city'"):
        cat.load_table("db.users").update({"addr": "named_struct('city', 'a', 'zip', 'b')", "addr.city": "'c'"})
    t = cat.load_table("db.users")
    src = spark.sql("SELECT 1 AS uid, 'Trondheim' AS city")
    t.merge(src, "t.uid = s.uid").when_matched_update({"addr.city": "s.city"}).execute()
    assert tuple(cat.load_table("db.users").to_df().where("uid = 1").first().addr) == ("Trondheim", "0150")


def test_a_query_of_a_missing_table_is_no_such_table(spark, cat, sql):
    for statement in ["SELECT * FROM db.missing", "SELECT count(*) FROM db.missing m JOIN db.other o ON m.a = o.a",
                      "INSERT INTO db.missing VALUES (1)", "DELETE FROM db.missing WHERE a = 1"]:
        with pytest.raises(NoSuchTableError, match="table db.missing does not exist in catalog cat"):
            sql(statement)
    # (what Spark itself holds is still Spark's: a temporary view, a table function)
    spark.range(3).createOrReplaceTempView("plain_view")
    assert sql("SELECT count(*) FROM plain_view").first()[0] == 3
    assert sql("SELECT count(*) FROM range(4)").first()[0] == 4


def test_a_syntax_error_in_sql_words(sql):
    with pytest.raises(SqlSyntaxError) as e:
        sql("SELECT a *\nFROM db.t")
    assert str(e.value).startswith("line 2, column 1: the right operand of '*' is missing")
    assert "sqlglot" not in str(e.value) and "<class" not in str(e.value)
    with pytest.raises(SqlSyntaxError, match="line 1, column 1: 'SELEC' begins no SQL statement"):
        sql("SELEC 1")


def test_write_locally_ordered_by_leaves_the_distribution_mode(spark, cat, sql):
    # (item 15: as Iceberg Java's SetWriteDistributionAndOrderingExec, LOCALLY ORDERED BY alone sets no mode)
    sql("CREATE TABLE db.orders (id bigint, v string)")
    sql("ALTER TABLE db.orders WRITE LOCALLY ORDERED BY id")
    t = cat.load_table("db.orders")
    assert "write.distribution-mode" not in t.properties and [f.direction for f in t.sort_order().fields] == ["asc"]
    sql("ALTER TABLE db.orders WRITE ORDERED BY v")
    sql("ALTER TABLE db.orders WRITE LOCALLY ORDERED BY id DESC")
    t = cat.load_table("db.orders")
    assert t.properties["write.distribution-mode"] == "range" and t.sort_order().fields[0].direction == "desc"


def test_add_files_into_an_unpartitioned_table_counts_no_partitions(spark, cat, sql, tmp_path):
    # (item 17: Java's add_files reports changed_partition_count null where the table has no partitions)
    sql("CREATE TABLE db.flat (id bigint)")
    spark.sql("SELECT 7L AS id").write.parquet(str(tmp_path / "import"))
    out = sql(f"CALL system.add_files(table => 'db.flat', source_table => '`parquet`.`{tmp_path}/import`')").collect()
    assert [tuple(r) for r in out] == [(1, None)]


@pytest.mark.parametrize("version", [2, 3])
def test_rewrite_all_counts_deletes_as_java_does(spark, cat, sql, version):
    # (item 16: Iceberg Java 1.10's rewrite removes the delete files that concern a rewritten data file alone, and
    # counts only the deletion vectors among them: a v2 position delete file naming one file goes uncounted, as the
    # twin run of tests/interop/test_sql_statements_java.py shows it (removed_delete_files_count 0 there); the
    # delete files remove-dangling-deletes finds are counted)
    sql(f"CREATE TABLE db.mor (id bigint, p int) PARTITIONED BY (p) TBLPROPERTIES ('format-version'='{version}', "
        "'write.delete.mode'='merge-on-read')")
    sql("INSERT INTO db.mor SELECT id, CAST(id % 2 AS int) FROM range(10)")
    sql("DELETE FROM db.mor WHERE id = 3")
    out = sql("CALL system.rewrite_data_files(table => 'db.mor', options => map('rewrite-all', 'true'))").first()
    deletes = sql("SELECT count(*) FROM db.mor.delete_files").first()[0]
    assert (out["removed_delete_files_count"], deletes) == ((1, 0) if version == 3 else (0, 0))
    assert sorted(r.id for r in sql("SELECT id FROM db.mor").collect()) == [0, 1, 2, 4, 5, 6, 7, 8, 9]
    if version == 2:  # (an equality delete, which names no file: only remove-dangling-deletes counts it)
        cat.load_table("db.mor").delete_by_keys(spark.sql("SELECT 5L AS id, 1 AS p"), ["id"])
        opts = "map('rewrite-all', 'true', 'remove-dangling-deletes', 'true')"
        out = sql(f"CALL system.rewrite_data_files(table => 'db.mor', options => {opts})").first()
        assert out["removed_delete_files_count"] == 1
        assert sql("SELECT count(*) FROM db.mor.delete_files").first()[0] == 0
        assert sorted(r.id for r in sql("SELECT id FROM db.mor").collect()) == [0, 1, 2, 4, 6, 7, 8, 9]


def test_a_stream_that_does_not_fit_the_table_is_named_before_it_starts(spark, cat, tmp_path):
    # (item 9: the schema mismatch is the ValidationError itself, not a StreamingQueryException around it, and the
    # query never starts: no checkpoint, no commit)
    t = cat.create_table("db.sink", "id bigint, v string")
    src = tmp_path / "src"
    spark.sql("SELECT 1L AS id, 'x' AS v, 2 AS extra").write.parquet(str(src))
    stream = spark.readStream.schema("id bigint, v string, extra int").parquet(str(src))
    active = len(spark.streams.active)
    with pytest.raises(ValidationError, match="column 'extra' is not in the table schema"):
        t.write_stream(stream, str(tmp_path / "ckpt"), trigger={"availableNow": True})
    wrong_type = spark.readStream.schema("id string, v string").parquet(str(src))
    with pytest.raises(ValidationError, match="column 'id' has type string, which cannot be written as long"):
        t.write_stream(wrong_type, str(tmp_path / "ckpt"), trigger={"availableNow": True})
    assert len(spark.streams.active) == active and not (tmp_path / "ckpt").exists()
    assert cat.load_table("db.sink").current_snapshot() is None
