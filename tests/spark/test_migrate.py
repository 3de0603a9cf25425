"""``migrate``, ``snapshot`` and ``add_files`` from a catalog table, of the plain Parquet tables of a Hive
Metastore (Hive 2.3's own server, tests/hiveserver.py) and of AWS Glue (moto's, with its S3): the Iceberg table's
schema, partitioning and properties as Iceberg Java makes them, its rows those of the source (a partition kept
outside the table's directory included: its values come from the metastore), the source left as it was by a
snapshot and kept as a backup by a migration; failures (an ORC table, a file that is not Parquet, a taken backup
name) named, with nothing changed."""
import datetime
import decimal
import os
import shutil
import sys
import uuid

import pytest

import sparkberg
from sparkberg.errors import NotSupportedError, TableAlreadyExistsError, ValidationError

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hiveserver import create_plain_table  # noqa: E402

COLUMNS = [("id", "bigint"), ("name", "varchar(20)"), ("amount", "decimal(10,2)"), ("day", "date"),
           ("ts", "timestamp"), ("tags", "array<string>"), ("attrs", "struct<k:string,v:int>")]
ROWS = [(1, "a", decimal.Decimal("1.50"), datetime.date(2024, 1, 1), datetime.datetime(2024, 1, 1, 10, 0), ["x"],
         ("k1", 1), "eu"),
        (2, "b", decimal.Decimal("2.25"), datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 2, 11, 30), [],
         ("k2", 2), "eu"),
        (3, "c", None, None, None, None, None, "us"),
        (4, "d", decimal.Decimal("4.00"), datetime.date(2024, 3, 4), datetime.datetime(2024, 3, 4, 0, 0), ["y", "z"],
         ("k4", None), "us")]
DDL = ("id bigint, name string, amount decimal(10,2), day date, ts timestamp, tags array<string>, "
       "attrs struct<k:string,v:int>, region string")


def _write_source(spark, root: str) -> tuple[str, list]:
    """Parquet files of ROWS as Spark writes a Hive table's partitions: ``region=eu`` under the table's
    directory, ``us`` in a directory of its own elsewhere. (location, partitions)."""
    location = f"{root}/tbl"
    df = spark.createDataFrame(ROWS, DDL)
    df.where("region = 'eu'").drop("region").coalesce(1).write.parquet(f"{location}/region=eu")
    df.where("region = 'us'").drop("region").repartition(2).write.parquet(f"{root}/elsewhere/us-files")
    return "file:" + location, [(["eu"], f"file:{location}/region=eu"), (["us"], f"file:{root}/elsewhere/us-files")]


def _rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.select(*[c for c, _ in COLUMNS], "region").collect())


def _expected(spark) -> list[tuple]:
    return _rows(spark.createDataFrame(ROWS, DDL))


@pytest.fixture(scope="module")
def hive_catalog(spark, hive_metastore, tmp_path_factory):
    warehouse = "file:" + str(tmp_path_factory.mktemp("hive-wh"))
    cat = sparkberg.catalog(spark, hive_metastore.uri, warehouse=warehouse, type="hive")
    # The metastore lives as long as the test process, this fixture as long as a run of this module's tests: under
    # xdist a process may run some of them, other modules, then the rest, and come here twice.
    if not cat.namespace_exists("mig"):
        cat.create_namespace("mig")
    return cat


def _source(spark, uri: str, name: str, root: str, **kwargs) -> str:
    location, partitions = _write_source(spark, root)
    create_plain_table(uri, "mig", name, COLUMNS, [("region", "string")], location, partitions,
                       {"comment": "orders", "owner.team": "etl"}, **kwargs)
    return location


def test_snapshot_of_a_hive_parquet_table(spark, hive_catalog, hive_metastore, tmp_path):
    location = _source(spark, hive_metastore.uri, "src", str(tmp_path))
    before = sorted(os.listdir(location[len("file:"):]))
    t = hive_catalog.snapshot_table("mig.src", "mig.src_ice", properties={"write.format.default": "parquet"})
    # Iceberg Java's conversion of the Hive schema (through Spark's): Hive's timestamp is an instant, varchar a
    # string, the partition column last; identity partitioning on it; every field optional
    s = t.schema()
    assert [(f.name, str(f.field_type)) for f in s.fields] == [
        ("id", "long"), ("name", "string"), ("amount", "decimal(10,2)"), ("day", "date"), ("ts", "timestamptz"),
        ("tags", "list<string>"), ("attrs", "struct<10: k: optional string, 11: v: optional int>"),
        ("region", "string")]
    assert all(not f.required for f in s.fields)
    assert [(f.name, str(f.transform)) for f in t.spec().fields] == [("region", "identity")]
    props = t.properties
    assert (props["gc.enabled"], props["snapshot"], props["comment"], props["owner.team"]) == \
        ("false", "true", "orders", "etl")
    assert "schema.name-mapping.default" in props and "transient_lastDdlTime" not in props
    assert t.location != location and not t.location.startswith(location)
    assert _rows(t.to_df()) == _expected(spark)
    assert t.current_snapshot().summary["total-data-files"] == "3"
    # the source is as it was: a plain Hive table, its directory unchanged (no metadata written into it)
    assert hive_catalog._backend.hive_table("mig.src").partition_names == ["region"]
    assert sorted(os.listdir(location[len("file:"):])) == before
    # (a filter on the partition column is answered from the metastore's values)
    assert t.to_df("region = 'us'").count() == 2


def test_add_files_from_a_hive_table_with_a_partition_filter(spark, hive_catalog, hive_metastore, tmp_path):
    _source(spark, hive_metastore.uri, "src2", str(tmp_path))
    t = hive_catalog.create_table("mig.target", DDL, partition_by=["region"])
    t.add_files(source_table="mig.src2", partition_filter={"region": "us"})
    assert _rows(t.refresh().to_df()) == [r for r in _expected(spark) if r[-1] == "us"]
    with pytest.raises(ValidationError, match="partition_filter names day: table mig.src2 is partitioned by region"):
        t.add_files(source_table="mig.src2", partition_filter={"day": "2024-01-01"})
    other = hive_catalog.create_table("mig.target_by_day", DDL, partition_by=["day"])
    with pytest.raises(ValidationError, match="partitioned by region, to table .*must be partitioned"):
        other.add_files(source_table="mig.src2")
    assert other.refresh().current_snapshot() is None
    # through Iceberg's procedure, a partition filter as a map
    out = sparkberg.sql(spark, "CALL system.add_files(table => 'mig.target', source_table => 'mig.src2', "
                               "partition_filter => map('region', 'eu'))", catalog=hive_catalog).collect()
    assert [tuple(r) for r in out] == [(1, 1)]
    assert _rows(t.refresh().to_df()) == _expected(spark)


def test_migrate_keeps_a_backup_and_puts_the_source_back_on_failure(spark, hive_catalog, hive_metastore, tmp_path):
    location = _source(spark, hive_metastore.uri, "orders", str(tmp_path))
    # a file that is not Parquet in a partition: the import fails naming it, and the table is as it was
    bad = os.path.join(location[len("file:"):], "region=eu", "notes.txt")
    with open(bad, "w") as f:
        f.write("not parquet")
    with pytest.raises(ValidationError, match="notes.txt: it is not a Parquet file"):
        hive_catalog.migrate_table("mig.orders")
    source = hive_catalog._backend.hive_table("mig.orders")
    assert source.managed and not hive_catalog.table_exists("mig.orders")
    assert "orders_backup_" not in [i.name for i in _all_tables(hive_catalog)]
    assert not os.path.exists(os.path.join(location[len("file:"):], "metadata")) or \
        not os.listdir(os.path.join(location[len("file:"):], "metadata"))
    os.remove(bad)
    out = sparkberg.sql(spark, "CALL system.migrate('mig.orders')", catalog=hive_catalog).collect()
    assert [tuple(r) for r in out] == [(3,)]
    t = hive_catalog.load_table("mig.orders")
    assert t.location == location and t.properties["migrated"] == "true" and "snapshot" not in t.properties
    assert _rows(t.to_df()) == _expected(spark)
    backup = hive_catalog._backend.hive_table("mig.orders_BACKUP_")
    assert not backup.managed and backup.location == location  # (external: its drop keeps the files)
    # the Iceberg table takes writes where the Hive table was
    t.append(spark.createDataFrame([(5, "e", None, None, None, None, None, "eu")], DDL))
    assert t.refresh().count() == 5
    _source(spark, hive_metastore.uri, "orders2", str(tmp_path / "b"))
    with pytest.raises(TableAlreadyExistsError, match="orders_BACKUP_ already exists"):
        hive_catalog.migrate_table("mig.orders2", backup_table_name="orders_BACKUP_")
    assert hive_catalog._backend.hive_table("mig.orders2").managed  # (nothing changed)
    hive_catalog.migrate_table("mig.orders2", drop_backup=True)
    assert "orders2_backup_" not in [i.name.lower() for i in _all_tables(hive_catalog)]
    assert _rows(hive_catalog.load_table("mig.orders2").to_df()) == _expected(spark)


def _all_tables(cat):
    """Every table of the database, plain ones too (the catalog lists Iceberg tables only)."""
    from sparkberg.catalog.thrift import STRING
    from sparkberg.catalog.base import Identifier
    names = cat._backend._call("get_all_tables", [(1, STRING, "mig")])
    return [Identifier(("mig",), n) for n in names]


def test_what_cannot_be_migrated_is_named(spark, hive_catalog, hive_metastore, tmp_path):
    root = tmp_path / "orc"
    create_plain_table(hive_metastore.uri, "mig", "orc_t", COLUMNS, [], f"file:{root}", orc=True)
    with pytest.raises(NotSupportedError, match="mig.orc_t is not stored as Parquet"):
        hive_catalog.migrate_table("mig.orc_t")
    with pytest.raises(NotSupportedError, match="not stored as Parquet"):
        hive_catalog.snapshot_table("mig.orc_t", "mig.orc_ice")
    assert not hive_catalog.table_exists("mig.orc_ice")
    assert hive_catalog._backend.hive_table("mig.orc_t").storage.count("orc") >= 1
    t = hive_catalog.create_table("mig.ice", "id bigint")
    with pytest.raises(ValidationError, match="mig.ice is an Iceberg table already"):
        hive_catalog.migrate_table("mig.ice")
    with pytest.raises(ValidationError, match="add_files takes files or a source_table"):
        t.add_files()
    local = sparkberg.catalog(spark, "file:" + str(tmp_path / "fs"))
    local.create_namespace("db")
    with pytest.raises(NotSupportedError, match="keeps no Hive tables"):
        local.migrate_table("db.x")


def test_glue_parquet_table_snapshot_and_migrate(spark, s3, tmp_path):
    import boto3
    from objectstores import ACCESS_KEY, REGION, SECRET_KEY
    bucket = s3.bucket(f"mig-{uuid.uuid4().hex[:8]}")
    props = {**s3.properties(), "glue.endpoint": s3.endpoint, "glue.region": REGION,
             "glue.access-key-id": ACCESS_KEY, "glue.secret-access-key": SECRET_KEY}
    cat = sparkberg.catalog(spark, "glue", warehouse=f"{bucket}/wh", type="glue", properties=props)
    cat.create_namespace("gdb")
    glue = boto3.client("glue", endpoint_url=s3.endpoint, region_name=REGION, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY)
    # the Parquet files written locally by Spark, then put where Glue's table says
    local = str(tmp_path / "glue-src")
    _, partitions = _write_source(spark, local)
    location = f"{bucket}/src"
    io = cat._backend.io
    places = {}
    for values, at in partitions:
        target = f"{location}/region={values[0]}"
        places[values[0]] = target
        for name in os.listdir(at[len("file:"):]):
            with open(os.path.join(at[len("file:"):], name), "rb") as src, io.open_output(f"{target}/{name}") as out:
                out.write(src.read())
    shutil.rmtree(local)
    sd = {"Columns": [{"Name": n, "Type": t} for n, t in COLUMNS], "Location": location,
          "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
          "SerdeInfo": {"SerializationLibrary": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"}}
    glue.create_table(DatabaseName="gdb", TableInput={
        "Name": "src", "TableType": "EXTERNAL_TABLE", "StorageDescriptor": sd, "Description": "orders",
        "PartitionKeys": [{"Name": "region", "Type": "string"}], "Parameters": {"classification": "parquet"}})
    glue.batch_create_partition(DatabaseName="gdb", TableName="src", PartitionInputList=[
        {"Values": [k], "StorageDescriptor": {**sd, "Location": at}} for k, at in places.items()])
    snap = cat.snapshot_table("gdb.src", "gdb.src_ice")
    assert _rows(snap.to_df()) == _expected(spark) and snap.properties["comment"] == "orders"
    t = cat.migrate_table("gdb.src")
    assert t.location == location and _rows(t.to_df()) == _expected(spark)
    backup = glue.get_table(DatabaseName="gdb", Name="src_BACKUP_")["Table"]
    assert backup["TableType"] == "EXTERNAL_TABLE"
    assert len(glue.get_partitions(DatabaseName="gdb", TableName="src_BACKUP_")["Partitions"]) == 2
    assert glue.get_table(DatabaseName="gdb", Name="src")["Table"]["Parameters"]["table_type"] == "ICEBERG"
