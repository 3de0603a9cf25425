"""Merge-on-read reads on Spark 4: each row's data file id comes from a hash of the name Spark reports (or,
when names are not usable, a join on the path), and position deletes and DVs reach the rows as bitmaps (or,
when very large, as keys of an anti-join), made on the driver or, when many, on the executors. Every way
gives the same rows, metadata columns and lineage."""
import datetime
import decimal
import random
import string

import pytest
from pyspark.sql import functions as F

import sparkberg
import sparkberg.read.fileids as fileids
import sparkberg.read.equality as equality
import sparkberg.read.positions as positions
import sparkberg.read.reader as reader
from sparkberg.spark.tuning import ReadTuning
from sparkberg.read.fileids import file_name, xxh64

pytestmark = pytest.mark.spark


def test_xxh64_is_sparks_xxhash64(spark):
    rnd = random.Random(7)
    alphabet = string.ascii_letters + string.digits + "-_.é日本 "
    texts = ["", "a", "abc"] + ["".join(rnd.choice(alphabet) for _ in range(n)) for n in range(1, 120)]
    got = spark.createDataFrame([(t,) for t in texts], "s string").selectExpr("s", "xxhash64(s) AS h").collect()
    for r in got:
        expected = xxh64(r["s"].encode())
        assert r["h"] == (expected - (1 << 64) if expected >= 1 << 63 else expected), r["s"]


def test_arrays_laid_out_as_spark_holds_them_read_back_as_they_were(spark):
    # the scan filter's arrays are literals made in the JVM from bytes in the layout of Spark's UnsafeArrayData:
    # Spark itself reads them back as the arrays they were made from (nulls, empty arrays, sizes across its
    # 64-element null words)
    import numpy as np
    from pyspark.sql import types as ST

    from sparkberg.spark.jvm import array_literal, long_array_layout, long_arrays_layout
    rnd = random.Random(3)
    arrays = [None, np.zeros(0, np.int64), np.array([-1, 1 << 62, 5], np.int64)] + [
        None if rnd.random() < 0.3 else np.array([rnd.randrange(-(1 << 63), 1 << 63) for _ in range(n)], np.int64)
        for n in (1, 63, 64, 65, 130, 7)] + [None] * 60
    nested = ST.ArrayType(ST.ArrayType(ST.LongType()))
    literal = array_literal(spark, long_arrays_layout(arrays), nested)
    assert literal is not None
    got = spark.range(1).select(literal.alias("a"), F.get(F.get(literal, F.lit(5)), F.lit(63)).alias("x"),
                                F.get(F.get(literal, F.lit(2)), F.lit(3)).alias("past")).first()
    assert got["a"] == [None if a is None else a.tolist() for a in arrays]
    assert got["x"] == (None if arrays[5] is None else int(arrays[5][63])) and got["past"] is None
    flat = arrays[8] if arrays[8] is not None else np.arange(130, dtype=np.int64)
    for values, kind in (([], nested), (flat, ST.ArrayType(ST.LongType()))):
        one = array_literal(spark, long_arrays_layout(values) if kind == nested else long_array_layout(values), kind)
        assert spark.range(1).select(one.alias("a")).first()["a"] == list(values)


def test_spark_reports_the_names_the_ids_are_hashed_from(spark, warehouse):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.names", "id bigint, p string", partition_by=["p"])
    t.append(spark.sql("SELECT id, CAST(id % 3 AS string) AS p FROM range(0, 9)"))
    paths = sorted(r["file_path"] for r in t.plan_files().collect())
    reported = spark.read.parquet(*paths).select("_metadata.file_name").distinct().collect()
    assert sorted(r[0] for r in reported) == sorted(file_name(p) for p in paths)
    assert fileids.FileIds(paths, ReadTuning().name_ids_max_files).shift is not None


def _table(spark, warehouse, version):
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table(f"db.mor{version}", "id bigint, p string", partition_by=["p"],
                         properties={"format-version": str(version), "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, CAST(id % 4 AS string) AS p FROM range(0, 400)"))
    t.append(spark.sql("SELECT id, CAST(id % 4 AS string) AS p FROM range(400, 600)"))
    t.delete("id % 7 = 0")
    t.delete("id % 11 = 0 OR id BETWEEN 100 AND 130")  # a second delete of the same files: DVs merged (v3)
    return t


def _read(t, version):
    cols = ["id", "_file", "_pos"] + (["_row_id"] if version == 3 else [])
    return sorted(tuple(r) for r in t.to_df(columns=cols).collect())


@pytest.mark.parametrize("version", [2, 3])
def test_every_way_of_matching_rows_to_deletes_agrees(spark, warehouse, tune, version):
    t = _table(spark, warehouse, version)
    expected_ids = [i for i in range(600) if i % 7 and i % 11 and not 100 <= i <= 130]
    assert any(d for r in t.plan_files().collect() for d in r["deletes"])
    by_name_bitmaps = _read(t, version)  # bitmaps made on the driver
    assert sorted(r[0] for r in by_name_bitmaps) == expected_ids
    tune(driver_delete_rows_max=0)  # bitmaps made on the executors
    assert _read(t, version) == by_name_bitmaps
    tune(bitmap_bytes_max=0)  # (file id, position) keys of an anti-join
    assert _read(t, version) == by_name_bitmaps
    tune(name_ids_max_files=0)  # ids by a join on the path
    assert _read(t, version) == by_name_bitmaps
    tune(bitmap_bytes_max=64 << 20)
    assert _read(t, version) == by_name_bitmaps
    assert t.to_df().count() == len(expected_ids)


@pytest.mark.parametrize("version", [2, 3])
def test_a_repeated_read_decodes_no_delete_file(spark, warehouse, monkeypatch, version):
    # position delete files and DVs are kept decoded (as Iceberg Java's executor cache keeps them): the second
    # read of the table gives the same rows without reading one; a session that turns the cache off decodes
    # them on every read
    from sparkberg.read.deletecache import ENABLED, DeleteCache
    DeleteCache.clear()
    t = _table(spark, warehouse, version)
    first = _read(t, version)

    def unread(*args):
        raise AssertionError("decoded again")
    monkeypatch.setattr(positions, "_decode_position_file", unread)
    monkeypatch.setattr(positions, "_dv_positions", unread)
    assert _read(t, version) == first
    spark.conf.set(ENABLED, "false")
    try:
        with pytest.raises(AssertionError, match="decoded again"):
            _read(t, version)
    finally:
        spark.conf.unset(ENABLED)


def test_deletes_reach_only_the_files_they_apply_to(spark, warehouse, tune):
    # spec "Equality Delete Files": a delete applies to the data files of its partition with a lower data
    # sequence number. Keys in partition '1' give equality deletes for its files only; position deletes reach
    # partitions '0' and '2'; partition '3' and the file appended after the deletes have none, and keep their
    # rows. Each kind of file is read apart.
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.eq", "id bigint, p string", partition_by=["p"],
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, CAST(id % 4 AS string) AS p FROM range(0, 200)"))
    t.delete_by_keys(spark.sql("SELECT id, '1' AS p FROM range(1, 200, 8)"), ["id"])  # 1, 9, 17, ...: p = '1'
    t.delete("id % 10 = 0")
    t.append(spark.sql("SELECT 1 AS id, '1' AS p"))
    tasks = t.plan_files().collect()
    kinds = {frozenset(d["content"] for d in r["deletes"]) for r in tasks}
    assert {frozenset({2}), frozenset({1}), frozenset()} <= kinds  # each kind of file is read apart
    expected = sorted([i for i in range(200) if i % 8 != 1 and i % 10] + [1])
    got = _read(t, 2)
    assert sorted(r[0] for r in got) == expected
    tune(name_ids_max_files=0)
    assert _read(t, 2) == got


def test_equality_deletes_decoded_on_the_driver_read_by_spark_or_decoded_in_python_agree(spark, tune, warehouse,
                                                                                         monkeypatch):
    # spec "Equality Delete Files": a delete applies to every data file of its (here: unpartitioned) table with
    # a lower data sequence number, and null equals null. Delete files apply to the files of both appends; the
    # row appended after it keeps its key. Few deletes are decoded on the driver; more are read by Spark (Parquet)
    # or decoded on the executors.
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.eq_unpartitioned", "id bigint, v string",
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, CAST(id AS string) AS v FROM range(0, 50)"))
    t.append(spark.sql("SELECT IF(id = 50, NULL, id) AS id, CAST(id AS string) AS v FROM range(50, 100)"))
    t.delete_by_keys(spark.sql("SELECT IF(id = 0, NULL, id) AS id FROM range(0, 100, 3)"), ["id"])
    t.append(spark.sql("SELECT 3L AS id, 'again' AS v"))
    tasks = t.plan_files().collect()
    pairs = {(r["file_path"], d["file_path"]) for r in tasks for d in r["deletes"] if d["content"] == 2}
    assert max(sum(1 for _, d in pairs if d == one) for _, one in pairs) > 1  # applied to several data files
    # the keys are 3, 6, ... and null (in place of 0): row 0 stays, the row with a null id goes
    expected = sorted([(i, str(i)) for i in range(100) if (i % 3 or i == 0) and i != 50] + [(3, "again")])
    found = []
    real_found = reader.equality_positions
    monkeypatch.setattr(reader, "equality_positions", lambda *a: found.append(real_found(*a)) or found[-1])
    assert sorted(tuple(r) for r in t.to_df().collect()) == expected  # found as positions, on the driver
    assert found and found[0] and all(len(p) for p in found[0].values())
    tune(equality_positions_rows_max=-1)  # joined by Spark
    decoded = []
    real = equality._equality_rows_on_driver
    monkeypatch.setattr(equality, "_equality_rows_on_driver", lambda *a: decoded.append(1) or real(*a))
    assert sorted(tuple(r) for r in t.to_df().collect()) == expected and decoded
    tune(driver_delete_rows_max=-1)
    assert sorted(tuple(r) for r in t.to_df().collect()) == expected
    monkeypatch.setattr(equality, "read_by_spark", lambda *a: [])  # (decoded in Python)
    assert sorted(tuple(r) for r in t.to_df().collect()) == expected and len(decoded) == 1


def test_data_files_with_the_same_equality_deletes_share_one_copy_of_their_rows(spark, warehouse, monkeypatch, tune):
    # spec "Equality Delete Files": a delete applies to the data files with a lower data sequence number. The
    # first append's files have both delete files, the second's the later one, the third's none: two sets of
    # delete files for five data files, so the delete rows are joined once per set (the later file's twice),
    # not once per data file, and the rows are those the rule keeps.
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.eq_sets", "id bigint, v string",
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, CAST(id AS string) AS v FROM range(0, 300)").repartition(3))
    t.delete_by_keys(spark.sql("SELECT id FROM range(0, 400, 7)").coalesce(1), ["id"])
    t.append(spark.sql("SELECT id, CAST(id AS string) AS v FROM range(300, 400)").repartition(2))
    t.delete_by_keys(spark.sql("SELECT id FROM range(0, 400, 5)").coalesce(1), ["id"])
    t.append(spark.sql("SELECT 5L AS id, 'again' AS v"))
    expected = sorted([(i, str(i)) for i in range(300) if i % 7 and i % 5] +
                      [(i, str(i)) for i in range(300, 400) if i % 5] + [(5, "again")])
    assert sorted(tuple(r) for r in t.to_df().collect()) == expected  # (found as positions)
    tune(equality_positions_rows_max=-1)  # joined by Spark
    applied = []
    real = equality._equality_delete_rows
    monkeypatch.setattr(equality, "_equality_delete_rows",
                        lambda spark, metadata, fields, applies, *rest: applied.append(dict(applies)) or
                        real(spark, metadata, fields, applies, *rest))
    assert sorted(tuple(r) for r in t.to_df().collect()) == expected
    # (two delete files: the first in one set, the second in both; the ids joined on are the two sets')
    assert sorted(len(ids) for ids in applied[0].values()) == [1, 2] and len(set().union(*applied[0].values())) == 2
    assert sum(1 for r in t.plan_files().collect() if any(d["content"] == 2 for d in r["deletes"])) == 5


def test_equality_deletes_match_by_value_whatever_the_join_key(spark, warehouse, monkeypatch, tune):
    # spec "Equality Delete Files": a row is deleted when its values equal a delete row's in every equality
    # column, null equal to null. Rows and deletes are joined on a hash of (file, values), the pairs sharing it
    # checked exactly: a hash that collides for every row of a file, and the join without the hash (kept for
    # floating-point columns, which other writers may use: 0.0 and -0.0 hash apart), give the same rows.
    from collections import Counter

    from pyspark.sql import functions as F
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.eq_values", "id bigint, v string, x double",
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    rows = [(i if i % 5 else None, None if i % 7 == 0 else f"v{i % 4}", float(i % 6)) for i in range(60)]
    t.append(spark.createDataFrame(rows, "id bigint, v string, x double"))
    keys = [(None, "v1"), (None, None), (3, "v3"), (4, "v1"), (8, None), (9, "v0")] + \
        [(i, f"v{i % 4}") for i in range(10, 60, 3)]
    t.delete_by_keys(spark.createDataFrame(keys, "id bigint, v string"), ["id", "v"])
    t.delete_by_keys(spark.createDataFrame([(5,), (6,)], "id bigint"), ["id"])  # a second set of columns
    expected = Counter(r for r in rows if (r[0], r[1]) not in keys and r[0] not in (5, 6))
    assert sum(expected.values()) <= len(rows) - 15

    def read():
        return Counter(tuple(r) for r in t.to_df().collect())
    assert read() == expected  # (found as positions on the driver)
    tune(equality_positions_rows_max=-1)  # joined by Spark
    assert read() == expected
    tune(driver_delete_rows_max=-1)  # (the deletes read by Spark)
    assert read() == expected
    monkeypatch.setattr(equality, "_equality_key", lambda file, values: F.xxhash64(file))
    assert read() == expected
    plain = equality._equality_condition
    monkeypatch.setattr(equality, "_equality_condition", lambda *a, hashed: plain(*a, hashed=False))
    assert read() == expected


@pytest.mark.parametrize("deleted", [False, True])
def test_positions_without_file_columns(spark, warehouse, deleted):
    # _pos alone is read from each file's row index, with no match to the file (files no delete applies to)
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table(f"db.positions_{int(deleted)}", "id bigint, p string", partition_by=["p"],
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, CAST(id % 2 AS string) AS p FROM range(0, 60)"))
    if deleted:
        t.delete("p = '0' AND id % 3 = 0")  # files of partition '1' have no deletes
    alone = sorted(tuple(r) for r in t.to_df(columns=["id", "_pos"]).collect())
    with_file = sorted((r["id"], r["_pos"]) for r in t.to_df(columns=["id", "_file", "_pos"]).collect())
    assert alone == with_file
    assert len(alone) == (50 if deleted else 60) and all(pos is not None for _, pos in alone)


def test_equality_deletes_found_as_positions_once_per_data_file(spark, warehouse, monkeypatch, tune):
    # spec "Equality Delete Files": a row is deleted when its values equal a delete row's in every equality
    # column (null equal to null; a column a data file lacks reads as null), by the deletes with a higher
    # sequence number. The positions of the rows they delete are found once per data file and set of delete
    # files: a repeated read reads no data file for them, a new delete finds those of the files it applies to.
    from collections import Counter
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.eq_found", "id bigint, d date, amt decimal(10,2)",
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    rows = [(i, None if i % 9 == 0 else datetime.date(2024, 1, 1 + i % 5), None if i % 4 == 0 else
             decimal.Decimal(i % 3)) for i in range(60)]
    t.append(spark.createDataFrame(rows, "id bigint, d date, amt decimal(10,2)").repartition(2))
    keys = [(None, None), (datetime.date(2024, 1, 2), decimal.Decimal(1)), (datetime.date(2024, 1, 3), None)]
    t.delete_by_keys(spark.createDataFrame(keys, "d date, amt decimal(10,2)"), ["d", "amt"])
    t.add_columns("tag string")
    t.append(spark.sql("SELECT 100L AS id, DATE'2024-01-02' AS d, 1.00BD AS amt, 'new' AS tag"))
    t.delete_by_keys(spark.sql("SELECT CAST(NULL AS string) AS tag, 7L AS id"), ["tag", "id"])
    expected = Counter(r + (None,) for r in rows if (r[1], r[2]) not in keys and r[0] != 7)
    expected[(100, datetime.date(2024, 1, 2), decimal.Decimal("1.00"), "new")] += 1
    reads = []
    real = equality._equality_deleted_positions
    monkeypatch.setattr(equality, "_equality_deleted_positions", lambda path, *a: reads.append(path) or real(path, *a))

    def read():
        return Counter(tuple(r) for r in t.to_df().collect())
    assert read() == expected
    first = len(reads)
    # the first append's two files (the plan gives the last append's file no delete: its id bounds exclude 7)
    assert first == 2
    assert read() == expected and len(reads) == first  # (kept by the delete cache)
    tune(equality_positions_rows_max=-1)
    assert read() == expected and len(reads) == first  # joined by Spark: the same rows
    tune(equality_positions_rows_max=1 << 30)
    t.delete_by_keys(spark.sql("SELECT 100L AS id"), ["id"])
    del expected[(100, datetime.date(2024, 1, 2), decimal.Decimal("1.00"), "new")]
    assert read() == expected and len(reads) == first + 1  # (the one file whose ids the new delete may hold)


def test_floating_point_and_large_equality_deletes_are_left_to_the_join(spark, warehouse):
    # 0.0 and -0.0, NaN: the join defines their equality (sparkberg writes no such deletes, other writers may);
    # more data rows than EQUALITY_POSITIONS_ROWS_MAX, or deletes without a record count: joined too
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table("db.eq_double", "id bigint, x double",
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, CAST(id % 4 AS double) AS x FROM range(0, 20)"))
    m = t.metadata
    ids = {f.name: f.field_id for f in m.current_schema.fields}
    fields = m.current_schema.index_by_id()

    def tasks(equality_ids, record_count=1, data_rows=20):
        delete = {"content": 2, "file_path": "/nowhere/eq.parquet", "file_format": "PARQUET",
                  "equality_ids": equality_ids, "record_count": record_count}
        return [dict(r.asDict(recursive=True), deletes=[delete], record_count=data_rows)
                for r in t.plan_files().collect()]
    for case in (tasks([ids["x"]]), tasks([ids["id"], ids["x"]]), tasks([ids["id"]], record_count=None),
                 tasks([ids["id"]], data_rows=ReadTuning().equality_positions_rows_max + 1)):
        assert equality.equality_positions(m, case, list(range(len(case))), fields, None, ReadTuning()) is None


@pytest.mark.parametrize("planning", ["local", "distributed"])
def test_equality_deletes_that_delete_nothing_leave_a_plain_read(spark, warehouse, monkeypatch, planning):
    # id 5 is within the file's bounds, so the plan applies the delete to it; no row equals it
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table(f"db.eq_nothing_{planning}", "id bigint, v string",
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id * 2 AS id, 'v' AS v FROM range(0, 10)").coalesce(1))
    t.append(spark.sql("SELECT 5L AS id, 'later' AS v"))  # (older than the delete: it goes)
    t.delete_by_keys(spark.sql("SELECT 5L AS id"), ["id"])
    t.append(spark.sql("SELECT 5L AS id, 'after' AS v"))
    assert sum(1 for r in t.plan_files(planning=planning).collect() if r["deletes"]) == 2
    applied = []  # (the data files whose rows are matched to positions)
    real = positions.PositionSources.of
    monkeypatch.setattr(positions.PositionSources, "of", classmethod(lambda cls, tasks, *a: applied.append(
        len(tasks)) or real(tasks, *a)))
    rows = sorted(tuple(r) for r in t.to_df(columns=["id", "v", "_file", "_pos"], planning=planning).collect())
    assert [r[:2] for r in rows] == sorted([(i * 2, "v") for i in range(10)] + [(5, "after")])
    # the even ids' file is read as a file without deletes: only the 'later' row's file is matched to positions
    assert applied == [1] and all(r[2] and r[3] is not None for r in rows)


@pytest.mark.parametrize("delete", [False, True])
def test_parquet_and_avro_data_files_read_together(spark, warehouse, tmp_path, delete):
    # an Avro data file (read by Arrow) beside Parquet files that position deletes apply to: the plain read,
    # the read of positions alone and the merge-on-read read each put both kinds of file in one DataFrame
    import os

    import fastavro

    from sparkberg.format.manifests import DataFile
    from sparkberg.operations.request import MAIN_REQUEST
    from commits import fast_append
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table(f"db.mixed_formats_{int(delete)}", "id bigint, v string",
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, CAST(id AS string) AS v FROM range(0, 20)"))
    path = os.path.join(t.location.removeprefix("file:"), "data", "extra.avro")
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "id", "type": "long", "field-id": 1}, {"name": "v", "type": ["null", "string"], "field-id": 2}]}
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), [{"id": 100 + i, "v": f"a{i}"} for i in range(5)])
    fast_append(t, [DataFile(file_path=path, file_format="avro", partition={}, record_count=5,
                             file_size_in_bytes=os.path.getsize(path))], MAIN_REQUEST)
    t = cat.load_table(f"db.mixed_formats_{int(delete)}")
    if delete:
        t.delete("id < 100 AND id % 4 = 1")  # (rows of the Parquet files only: the Avro file stays plain)
        tasks = t.plan_files().collect()
        assert {r["file_format"] for r in tasks if r["deletes"]} == {"parquet"}
        assert [r["file_format"] for r in tasks if not r["deletes"]] == ["avro"]
    ids = [i for i in range(20) if not (delete and i % 4 == 1)] + list(range(100, 105))
    assert sorted(tuple(r) for r in t.to_df().collect()) == sorted(
        (i, str(i) if i < 100 else f"a{i - 100}") for i in ids)
    assert sorted(tuple(r) for r in t.to_df(columns=["v", "id"]).collect()) == sorted(
        (str(i) if i < 100 else f"a{i - 100}", i) for i in ids)
    positions = t.to_df(columns=["id", "_pos"]).collect()
    assert sorted(r["id"] for r in positions) == ids
    assert {r["_pos"] for r in positions if r["id"] >= 100} == set(range(5))
    with_file = t.to_df(columns=["id", "_file", "_pos"]).collect()
    assert sorted((r["id"], r["_pos"]) for r in with_file) == sorted((r["id"], r["_pos"]) for r in positions)


def _deleted_table(spark, warehouse, name, kind):
    """A merge-on-read table of 4 partitions (8 data files) whose deletes are of ``kind``, and the ids it keeps.
    Partition '3' gets no delete; the second append's files get only the second delete."""
    version = 3 if kind == "dv" else 2
    cat = sparkberg.catalog(spark, warehouse)
    t = cat.create_table(f"db.{name}", "id bigint, p string, v string", partition_by=["p"],
                         properties={"format-version": str(version), "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, CAST(id % 4 AS string) AS p, CAST(id AS string) AS v FROM range(0, 300)"))
    t.append(spark.sql("SELECT id, CAST(id % 4 AS string) AS p, CAST(id AS string) AS v FROM range(300, 500)"))
    gone = set()
    if kind in ("position", "dv", "position and equality"):
        t.delete("p != '3' AND id % 5 = 0")
        gone |= {i for i in range(500) if i % 4 != 3 and i % 5 == 0}
    if kind in ("equality", "position and equality"):
        t.delete_by_keys(spark.sql("SELECT id, CAST(id % 4 AS string) AS p FROM range(1, 500, 6) WHERE id % 4 != 3"),
                         ["id"])
        gone |= {i for i in range(1, 500, 6) if i % 4 != 3}
    t.delete("id BETWEEN 350 AND 360 AND p != '3'")  # (a second delete of the second append's files)
    gone |= {i for i in range(350, 361) if i % 4 != 3}
    return t, [i for i in range(500) if i not in gone]


@pytest.mark.parametrize("kind", ["position", "dv", "equality", "position and equality"])
def test_deletes_as_a_filter_of_the_scan_agree_with_the_join(spark, warehouse, monkeypatch, kind):
    # Spark 4: position deletes, DVs and the positions equality deletes delete are tested on the Parquet relation
    # itself (each row's _metadata.row_index in the bitmap of its file, found by the file's slot in one array
    # that a scalar subquery reads); the join of bitmaps gives the same rows. Files without deletes are a plain
    # read, unioned.
    t, kept = _deleted_table(spark, warehouse, f"scan_filter_{kind.replace(' ', '_')}", kind)
    assert any(not r["deletes"] for r in t.plan_files().collect())
    used = []
    real = reader.position_scan_filter
    monkeypatch.setattr(reader, "position_scan_filter", lambda *a: used.append(real(*a)) or used[-1])

    def reads():
        return (sorted(tuple(r) for r in t.to_df().collect()),
                sorted(tuple(r) for r in t.to_df(columns=["v", "id", "_pos"]).collect()),
                sorted(r["id"] for r in t.to_df(filter="id >= 100 AND v != '200'").collect()))
    made = []  # (the filter's array: a literal made in the JVM)
    real_made = positions._scan_filter_literals
    monkeypatch.setattr(positions, "_scan_filter_literals",
                        lambda *a: made.append(real_made(*a)) or made[-1])
    filtered = reads()
    assert used and all(u is not None for u in used)  # (each read took the filter)
    assert made and all(m is not None for m in made)
    assert filtered[0] == [(i, str(i % 4), str(i)) for i in kept]
    assert filtered[2] == [i for i in kept if i >= 100 and i != 200]
    monkeypatch.setattr(positions, "_scan_filter_literals", lambda *a: None)  # the array read by a scalar subquery
    positions.per_session(spark, "bitmaps", positions.LRU).clear()  # (the literals the reads above kept)
    assert reads() == filtered
    monkeypatch.setattr(reader, "position_scan_filter", lambda *a: None)  # the join of bitmaps
    assert reads() == filtered
    with_file = sorted((r["v"], r["id"], r["_pos"]) for r in t.to_df(columns=["v", "id", "_pos", "_file"]).collect())
    assert with_file == filtered[1]


def test_the_scan_filter_of_another_snapshot_compiles_no_new_code(spark, warehouse, monkeypatch):
    # the slots' shift and mask travel with the bitmaps, in literals the code refers to, not in the filter's text:
    # a read after a commit that deleted from other files (other slots) runs the classes Spark compiled for the
    # read before it, as Iceberg Java's reader does, instead of compiling (and the JVM warming) new ones
    from sparkberg.read.fileids import FileSlots
    t = sparkberg.catalog(spark, warehouse).create_table(
        "db.scan_filter_code", "id bigint, p string", partition_by=["p"],
        properties={"format-version": "3", "write.delete.mode": "merge-on-read"})
    for first in (0, 300):  # (8 files: 2 in each of 4 partitions)
        t.append(spark.sql(f"SELECT id, CAST(id % 4 AS string) AS p FROM range({first}, {first + 300})"))
    slots = []
    real_of = FileSlots.of
    monkeypatch.setattr(FileSlots, "of", lambda paths, bits: slots.append(real_of(paths, bits)) or slots[-1])
    metrics = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics

    def compiled() -> int:
        before = metrics.METRIC_COMPILATION_TIME().getCount()
        assert sorted(r["id"] for r in t.to_df().collect()) == [i for i in range(600) if i not in gone]
        return metrics.METRIC_COMPILATION_TIME().getCount() - before
    gone = [0, 1]
    t.delete("id IN (0, 1)")  # (deletes in 2 files: slots of 1 bit)
    compiled()
    assert compiled() == 0  # (the same read again runs what the first compiled)
    before = slots[-1]
    gone += [2, 3, 300, 301, 302]
    t.delete("id IN (2, 3, 300, 301, 302)")  # (deletes in 7 files: 3 bits or more; 1 file without)
    assert compiled() == 0
    assert before.bits == 1 and slots[-1].bits >= 3  # (other slots, and other shift and mask, in the same code)


def test_a_merge_run_again_compiles_no_new_code(spark, warehouse):
    # a scheduled upsert runs the classes Spark compiled for its last run: every query of the merge has the same
    # text each time (no query whose generated code differs per run, as a ``limit(1).count()`` has), so none of
    # them take new places in Spark's code cache (100 classes by default) and evict the classes of the reads after
    t = sparkberg.catalog(spark, warehouse).create_table(
        "db.merge_code", "id bigint, v string, p string", partition_by=["p"],
        properties={"format-version": "3", "write.merge.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, 'old' AS v, CAST(id % 4 AS string) AS p FROM range(0, 2000)"))
    base = t.metadata.current_snapshot_id
    src = spark.sql("SELECT id, 'new' AS v, CAST(id % 4 AS string) AS p FROM range(1000, 3000)")  # (a range)
    metrics = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics

    def merged() -> int:
        before = metrics.METRIC_COMPILATION_TIME().getCount()
        t.merge(src, "t.id = s.id AND t.p = s.p").when_matched_update_all().when_not_matched_insert_all().execute()
        return metrics.METRIC_COMPILATION_TIME().getCount() - before
    row_ids = dict(t.to_df(columns=["id", "_row_id"]).collect())
    assert merged() > 0
    t.set_current_snapshot(base)
    assert merged() == 0
    rows = t.to_df().groupBy("v").agg(F.count("*").alias("n"), F.min("id").alias("lo"), F.max("id").alias("hi"))
    assert sorted(tuple(r) for r in rows.collect()) == [("new", 2000, 1000, 2999), ("old", 1000, 0, 999)]
    after = dict(t.to_df(columns=["id", "_row_id"]).collect())
    assert all(after[i] == row_ids[i] for i in row_ids)  # (updated rows keep theirs)
    assert len(set(after.values())) == 3000


def test_deletes_take_the_join_when_files_have_no_slots(spark, warehouse, monkeypatch, tune):
    t, kept = _deleted_table(spark, warehouse, "no_slots", "position")
    tune(scan_filter_slot_bits_max=0)  # (no file has a slot: the bitmaps are joined)
    used = []
    real = reader.position_scan_filter
    monkeypatch.setattr(reader, "position_scan_filter", lambda *a: used.append(real(*a)) or used[-1])
    assert sorted(r["id"] for r in t.to_df().collect()) == kept
    assert used == [None]


def test_reads_that_share_kept_bitmaps_are_joined_and_unioned(spark, warehouse):
    # the session keeps a read's bitmaps (a small DataFrame) for the next read of the same files and deletes:
    # two reads in one query (a self-join, a union) still each get their own columns
    from pyspark.sql import functions as F

    from sparkberg.lru import LRU
    from sparkberg.read.deletecache import ENABLED
    from sparkberg.spark.session import per_session
    t, kept = _deleted_table(spark, warehouse, "shared_bitmaps", "position")
    frames = per_session(spark, "bitmaps", LRU)
    frames.clear()
    a, b = t.to_df(), t.to_df()
    assert len(frames) == 1
    assert a.join(b, a["id"] == b["id"] + 1).count() == sum(1 for i in kept if i - 1 in set(kept))
    assert a.alias("x").join(b.alias("y"), F.col("x.id") == F.col("y.id")).select("x.v", "y.id").count() == len(kept)
    assert a.union(b).count() == 2 * len(kept)
    frames.clear()
    spark.conf.set(ENABLED, "false")  # (a session without the delete cache keeps none)
    try:
        assert sorted(r["id"] for r in t.to_df().collect()) == kept
        assert len(frames) == 0
    finally:
        spark.conf.unset(ENABLED)
