"""Tables on object stores (S3: moto's server; Azure: Azurite; GCS: fake-gcs-server; all on 127.0.0.1), configured
only by the catalog's FileIO properties: what runs on the executors (the writers of data and delete files, manifest
decoding, listings, deletes) reaches the store with the catalog's credentials and no environment variable. After
each test, no secret shows in what it printed or logged, nor in any object or file it wrote."""
import os
import sys
import time

import pytest

import sparkberg
from sparkberg.io.fileio import file_io_for

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from objectstores import SECRET_KEY, SECRETS, S3Server, started  # noqa: E402
from restserver import RestServer  # noqa: E402

pytestmark = pytest.mark.spark


def _shown_secrets(texts: dict[str, str]) -> list[str]:
    return [f"{where}: {secret[:6]}..." for where, text in texts.items() for secret in SECRETS if secret in text]


@pytest.fixture(autouse=True)
def no_secret_shown(request, capfd, caplog, tmp_path):
    """After the test: no secret in its output (Python's and its own processes'), its log records, the files
    under its temporary directory, nor any object on the servers it used."""
    yield
    out, err = capfd.readouterr()
    texts = {"stdout": out, "stderr": err, "log": caplog.text}
    for d, _, files in os.walk(tmp_path):
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                texts[os.path.join(d, f)] = fh.read().decode("utf-8", "replace")
    for name in ("s3", "azure", "gcs"):
        if name in request.fixturenames:
            server = request.getfixturevalue(name)
            io = file_io_for(None, server.properties())
            for root in server.roots:
                for path, _ in io.list_files(root):
                    texts[path] = io.read(path).decode("utf-8", "replace")
    assert not _shown_secrets(texts)


def test_writes_plans_metadata_tables_and_maintenance_on_s3(spark, s3, tmp_path, capfd):
    bucket = s3.bucket("lake")
    cat = sparkberg.catalog(spark, f"sqlite:///{tmp_path}/catalog.db", warehouse=f"{bucket}/wh",
                            properties=s3.properties())
    cat.create_namespace("db")
    t = cat.create_table("db.events", "id bigint, cat string", partition_by=["cat"],
                         properties={"format-version": "3", "write.delete.mode": "merge-on-read"})
    assert t.location.startswith("s3://lake/wh/db/events") and SECRET_KEY not in repr(t.io)
    t = t.append(spark.sql("SELECT id, IF(id % 2 = 0, 'even', 'odd') AS cat FROM range(100)"))
    t = t.append(spark.sql("SELECT id, 'odd' AS cat FROM range(100, 110)"))
    files = t.plan_files().collect()
    assert sum(r["record_count"] for r in files) == 110 and all(r["file_path"].startswith("s3://lake/")
                                                                 for r in files)
    assert t.io.exists(files[0]["file_path"])
    # (read by sparkberg's Arrow reader on the executors: a pip-installed PySpark has no S3 file system)
    assert t.to_df().count() == 110 and t.to_df(filter="cat = 'odd'").count() == 60
    assert sorted(r.id for r in t.to_df(filter="id >= 105").collect()) == [105, 106, 107, 108, 109]
    # (the secret in no repr, no plan string, no job description, no metadata file)
    t.to_df(filter="id >= 105").explain(mode="extended")
    shown = [repr(cat), repr(t), repr(t.io), str(t.io), capfd.readouterr().out,
             spark.sparkContext.getLocalProperty("spark.job.description") or "",
             t.io.read(t.metadata_location).decode()]
    assert not [text for text in shown if SECRET_KEY in text]
    snapshots = t.metadata_table("snapshots").collect()
    assert [r["operation"] for r in snapshots] == ["append", "append"]
    assert t.metadata_table("files").count() == len(files)
    first = t.snapshots()[0].snapshot_id
    out = t.expire_snapshots(older_than=None, retain_last=1, snapshot_ids=[first]).first()
    assert out["deleted_manifest_lists_count"] == 1 and len(cat.load_table("db.events").snapshots()) == 1
    stray = f"{t.location}/data/cat=odd/stray.parquet"
    t.io.write(stray, b"not referenced")
    time.sleep(1.1)  # (older than the listing's cut-off, which may not be in the future)
    orphans = [r[0] for r in t.remove_orphan_files(older_than=int(time.time() * 1000), dry_run=True).collect()]
    assert orphans == [stray]
    t.remove_orphan_files(older_than=int(time.time() * 1000))
    assert not t.io.exists(stray) and t.io.exists(files[0]["file_path"])


@pytest.mark.parametrize("version", [2, 3])
def test_row_level_changes_time_travel_and_the_changelog_on_s3(spark, s3, tmp_path, version):
    bucket = s3.bucket(f"mor-v{version}")
    cat = sparkberg.catalog(spark, f"{bucket}/wh", properties=s3.properties())  # (a file-system catalog on S3)
    cat.create_namespace("db")
    t = cat.create_table("db.t", "id bigint, v string", partition_by=["bucket(2, id)"],
                         properties={"format-version": str(version), "write.delete.mode": "merge-on-read",
                                     "write.update.mode": "merge-on-read", "write.merge.mode": "merge-on-read"})
    t = t.append(spark.sql("SELECT id, 'a' AS v FROM range(20)"))
    first = t.current_snapshot().snapshot_id
    t = t.delete("id IN (1, 2, 3)")
    t = t.update({"v": "'b'"}, "id >= 15")
    src = spark.sql("SELECT 4L AS id, 'm' AS v UNION ALL SELECT 100L, 'n'")
    t.merge(src, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
    t = cat.load_table("db.t")
    rows = {r.id: r.v for r in t.to_df().collect()}
    expected = {i: "b" if i >= 15 else "a" for i in range(20) if i not in (1, 2, 3)}
    expected.update({4: "m", 100: "n"})
    assert rows == expected
    assert {r["content"] for r in t.metadata_table("delete_files").collect()} == {1}
    # (the deleted rows, read from the delete files or DVs on S3 with the table's credentials)
    assert t.metadata_table("position_deletes").count() == 3 + 5 + 1
    assert t.to_df(snapshot_id=first).count() == 20
    changes = t.changes(first)
    # (an update's old rows are deletes too, without compute_updates)
    assert sorted(r.id for r in changes.where("_change_type = 'DELETE'").collect()) == [1, 2, 3, 4, 15, 16, 17, 18, 19]
    if version == 2:  # (position delete files, compacted)
        out = t.rewrite_position_delete_files(options={"rewrite-all": "true"}).first()
        assert out["rewritten_delete_files_count"] > 0
        t = cat.load_table("db.t")
    # equality deletes (an upsert's), read on the executors and on the driver with the table's credentials
    t.upsert(spark.sql("SELECT 5L AS id, 'u' AS v"), ["id"])
    expected[5] = "u"
    t = cat.load_table("db.t")
    assert {r["content"] for r in t.metadata_table("delete_files").collect()} >= {2}
    assert {r.id: r.v for r in t.to_df().collect()} == expected
    assert t.rewrite_data_files(options={"rewrite-all": "true"}).first()["rewritten_data_files_count"] > 0
    assert {r.id: r.v for r in cat.load_table("db.t").to_df().collect()} == expected


def test_add_files_from_s3(spark, s3, tmp_path):
    bucket = s3.bucket("imports")
    cat = sparkberg.catalog(spark, f"{bucket}/wh", properties=s3.properties())
    cat.create_namespace("db")
    t = cat.create_table("db.t", "id bigint, v string")
    import pyarrow as pa
    import pyarrow.parquet as pq
    for name, ids in (("a", [1, 2]), ("b", [3])):
        with t.io.open_output(f"{bucket}/landing/{name}.parquet") as f:
            pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([str(i) for i in ids])}), f)
    t.add_files(f"{bucket}/landing")
    t = cat.load_table("db.t")
    assert sorted(r.id for r in t.to_df().collect()) == [1, 2, 3]
    assert {r["file_path"] for r in t.metadata_table("files").collect()} == \
        {f"{bucket}/landing/a.parquet", f"{bucket}/landing/b.parquet"}


@pytest.mark.parametrize("store", ["gcs", "azure"])
def test_a_merge_on_read_table_on_gcs_and_azure(request, spark, store):
    server = request.getfixturevalue(store)
    root = server.container("lake") if store == "azure" else server.bucket("lake")
    cat = sparkberg.catalog(spark, f"{root}/wh", properties=server.properties())  # (a file-system catalog there)
    cat.create_namespace("db")
    t = cat.create_table("db.t", "id bigint, v string", partition_by=["bucket(2, id)"],
                         properties={"format-version": "3", "write.delete.mode": "merge-on-read",
                                     "write.update.mode": "merge-on-read"})
    assert t.location.startswith(f"{root}/wh/db/t")
    t = t.append(spark.sql("SELECT id, 'a' AS v FROM range(30)"))
    first = t.current_snapshot().snapshot_id
    t = t.delete("id < 5")
    t = t.update({"v": "'b'"}, "id >= 25")
    t = cat.load_table("db.t")
    assert {r.id: r.v for r in t.to_df().collect()} == {i: "b" if i >= 25 else "a" for i in range(5, 30)}
    assert t.to_df(snapshot_id=first).count() == 30
    assert {r["content"] for r in t.metadata_table("delete_files").collect()} == {1}  # (deletion vectors)
    assert t.rewrite_data_files(options={"rewrite-all": "true"}).first()["rewritten_data_files_count"] > 0
    assert cat.load_table("db.t").to_df().count() == 25


def test_data_on_gcs_under_a_local_catalog(spark, gcs, tmp_path):
    # (metadata on the local disk, data and delete files on GCS through write.data.path)
    root = gcs.bucket("data-lake")
    cat = sparkberg.catalog(spark, f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "wh"),
                            properties=gcs.properties())
    cat.create_namespace("db")
    t = cat.create_table("db.t", "id bigint, v string",
                         properties={"format-version": "2", "write.delete.mode": "merge-on-read",
                                     "write.data.path": f"{root}/t/data"})
    t = t.append(spark.sql("SELECT id, CAST(id AS STRING) AS v FROM range(50)"))
    t = t.delete("id % 10 = 0")
    t = cat.load_table("db.t")
    paths = [r["file_path"] for r in t.metadata_table("all_files").collect()]
    assert paths and all(p.startswith(f"{root}/t/data/") for p in paths)
    assert sorted(r.id for r in t.to_df().collect()) == [i for i in range(50) if i % 10]
    assert t.to_df(filter="id >= 40").count() == 9  # (40 is deleted)


def test_spark_s_own_reader_where_the_session_says_its_file_system_serves_the_scheme(spark, s3, tmp_path):
    bucket = s3.bucket("by-spark")
    cat = sparkberg.catalog(spark, f"{bucket}/wh", properties=s3.properties())
    t = cat.create_table("db.t", "id bigint").append(spark.range(10))
    key = "spark.sparkberg.read.spark-file-systems"
    try:
        spark.conf.set(key, "s3a, gs")  # (other schemes: sparkberg's reader still reads s3://)
        assert t.to_df().count() == 10
        # (this Spark has no Hadoop file system for s3://: a setting that says it has is named as the cause)
        spark.conf.set(key, "s3")
        with pytest.raises(sparkberg.StorageError, match="no Hadoop file system for scheme 's3'.*spark-file-systems"):
            t.to_df().count()
    finally:
        spark.conf.unset(key)
    assert t.to_df().count() == 10


def test_vended_credentials_are_renewed_before_they_expire(spark, tmp_path):
    # (moto's IAM emulation checks every request's keys: the REST server's own, and the client's it vends)
    everything = ["arn:aws:s3:::vended", "arn:aws:s3:::vended/*"]
    with started(str(tmp_path), S3Server, users={"server": everything, "client": everything},
                 buckets=("vended",)) as s3:
        asked = []

        def vend(why: str) -> dict:
            asked.append(why)
            props = s3.properties("client")  # (an IAM user's keys: no session token in moto's emulation)
            now_ms = int(time.time() * 1000)
            if why == "load":  # (credentials a minute from expiry, which the store no longer takes)
                return {**props, "s3.secret-access-key": "about-to-expire",
                        "s3.session-token-expires-at-ms": str(now_ms + 60_000)}
            return {**props, "s3.session-token-expires-at-ms": str(now_ms + 3_600_000)}
        server = RestServer(str(tmp_path / "rest"), warehouse="s3://vended/wh", io_properties=s3.properties("server"),
                            vend=vend)
        try:
            cat = sparkberg.catalog(spark, server.uri)  # (no storage property: the server vends them)
            cat.create_namespace("db")
            t = cat.create_table("db.t", "id bigint", properties={"format-version": "2",
                                                                  "write.delete.mode": "merge-on-read"})
            t = t.append(spark.range(20))
            t = t.delete("id < 5")
            again = cat.load_table("db.t")
            assert again.to_df().count() == 15 and sorted(r.id for r in again.to_df().collect())[0] == 5
            assert "about-to-expire" not in repr(again.io) and "credentials" in repr(again.io)
            renewals = [r for r in server.requests if r.endswith("/credentials")]
            assert renewals and asked.count("credentials") == len(renewals)
            assert not server.violations
        finally:
            server.close()


def test_executors_write_and_read_through_a_catalog_that_signs_every_s3_request(spark, tmp_path):
    # (moto checks every request's signature: only the REST server holds a key, and signs for the executors)
    with started(str(tmp_path), S3Server, users={"server": ["arn:aws:s3:::signed", "arn:aws:s3:::signed/*"]},
                 buckets=("signed",)) as s3:
        props = s3.properties("server")
        server = RestServer(str(tmp_path / "rest"), warehouse="s3://signed/wh", io_properties=props,
                            signing=(props["s3.access-key-id"], props["s3.secret-access-key"]),
                            signing_config={k: props[k] for k in ("s3.endpoint", "s3.region",
                                                                  "s3.path-style-access")})
        try:
            cat = sparkberg.catalog(spark, server.uri)  # (no storage property, no key)
            cat.create_namespace("db")
            t = cat.create_table("db.t", "id bigint, p int", partition_by=["p"],
                                 properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
            t = t.append(spark.range(30).selectExpr("id", "cast(id % 3 AS int) AS p"))
            t = t.delete("id < 5")
            again = cat.load_table("db.t")
            assert again.to_df().count() == 25 and again.to_df("p = 1").count() == 8
            assert again.metadata_table("delete_files").count() >= 1
            signed = {body["method"] for body, _ in server.sign_requests}
            assert {"PUT", "GET", "HEAD"} <= signed and props["s3.secret-access-key"] not in repr(again.io)
            assert not server.violations
        finally:
            server.close()


def test_copy_on_write_overwrite_sql_statements_and_a_stream_on_s3(spark, s3, tmp_path):
    bucket = s3.bucket("cow")
    cat = sparkberg.catalog(spark, f"{bucket}/wh", properties=s3.properties())
    # Iceberg's Spark SQL statements on an S3 table (copy-on-write: data files rewritten on S3)
    sparkberg.sql(spark, """CREATE TABLE db.t (id bigint, v string) USING iceberg PARTITIONED BY (bucket(2, id));
                            INSERT INTO db.t SELECT id, 'a' FROM range(0, 10);
                            DELETE FROM db.t WHERE id < 2;
                            UPDATE db.t SET v = 'u' WHERE id = 5""", catalog=cat)
    spark.sql("SELECT * FROM VALUES (6L, 'm'), (50L, 'n') AS s(id, v)").createOrReplaceTempView("cow_src")
    sparkberg.sql(spark, "MERGE INTO db.t t USING cow_src s ON t.id = s.id "
                         "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *", catalog=cat)
    got = {r.id: r.v for r in sparkberg.sql(spark, "SELECT * FROM db.t", catalog=cat).collect()}
    assert got == {**{i: "a" for i in range(2, 10)}, 5: "u", 6: "m", 50: "n"}
    t = cat.load_table("db.t")
    assert t.metadata_table("delete_files").count() == 0  # (copy-on-write)
    assert [r["operation"] for r in sparkberg.sql(spark, "SELECT operation FROM db.t.snapshots ORDER BY "
                                                         "committed_at", catalog=cat).collect()][-1] == "overwrite"
    # an overwrite by filter
    t = t.overwrite(spark.sql("SELECT 7L AS id, 'o' AS v"), filter="id >= 7")
    assert sorted(r.id for r in t.to_df().collect()) == [2, 3, 4, 5, 6, 7]
    # a stream into the S3 table (its checkpoint and claim on the local disk beside the job)
    src = tmp_path / "src"
    src.mkdir()
    spark.range(100, 103).selectExpr("id", "'s' AS v").write.parquet(str(src / "one"))
    stream = spark.readStream.schema("id bigint, v string").parquet(str(src / "one"))
    q = t.write_stream(stream, str(tmp_path / "ckpt"), trigger={"availableNow": True})
    q.awaitTermination()
    assert q.exception() is None
    assert sorted(r.id for r in cat.load_table("db.t").to_df().collect()) == [2, 3, 4, 5, 6, 7, 100, 101, 102]


def test_format_v3_types_on_s3(spark, s3, tmp_path):
    """Nanosecond timestamps, geometry (its bounds a box) and variant columns written to S3 and read back by the
    Arrow reader (which floors the nanoseconds and gives Spark the variants), credentials from properties only."""
    import struct as st

    from pyspark.sql import types as ST
    bucket = s3.bucket("lake")
    cat = sparkberg.catalog(spark, f"sqlite:///{tmp_path}/catalog.db", warehouse=f"{bucket}/wh",
                            properties=s3.properties())
    cat.create_namespace("db")
    variant = hasattr(ST, "VariantType")
    t = cat.create_table("db.v3", "id bigint, ts timestamp_ns, g geometry" + (", v variant" if variant else ""),
                         properties={"format-version": "3"})
    point = st.pack("<BI2d", 1, 1, 3.0, -4.0)  # (POINT (3 -4), little-endian WKB)
    t = t.append(spark.sql("SELECT 1L AS id, TIMESTAMP_NTZ'1969-12-31 23:59:59.999999' AS ts, "
                           f"X'{point.hex()}' AS g" + (", parse_json('{\"a\": [1, 2]}') AS v" if variant else "")))
    bounds = t.metadata_table("files", columns=["lower_bounds", "upper_bounds"]).first()
    assert bounds["lower_bounds"][3] == bounds["upper_bounds"][3] == st.pack("<2d", 3.0, -4.0)
    got = t.to_df().selectExpr("id", "CAST(ts AS string)", "hex(g)", *(["to_json(v)"] if variant else [])).collect()
    assert [tuple(r) for r in got] == [(1, "1969-12-31 23:59:59.999999", point.hex().upper(),
                                        *(['{"a":[1,2]}'] if variant else []))]
