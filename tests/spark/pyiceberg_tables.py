"""Tables written by PyIceberg 0.12 (another engine) for the read tests that run on Spark 4 in `make test`."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa


def build(root: str) -> dict:
    """Create the tables under ``root``; returns {name: (pyiceberg table, expected row count of the current snapshot)}."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import (
        BucketTransform, DayTransform, HourTransform, IdentityTransform, TruncateTransform,
        YearTransform,
    )
    from pyiceberg.types import (
        BinaryType, BooleanType, DateType, DecimalType, DoubleType, FloatType, IntegerType, ListType, LongType,
        MapType, NestedField, StringType, StructType, TimestampType, TimestamptzType,
    )

    cat = SqlCatalog("pyi", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")
    cat.create_namespace("db")
    out = {}

    schema = Schema(
        NestedField(1, "id", LongType(), required=False), NestedField(2, "i", IntegerType(), required=False),
        NestedField(3, "d", DateType(), required=False), NestedField(4, "ts", TimestamptzType(), required=False),
        NestedField(5, "tsn", TimestampType(), required=False), NestedField(6, "s", StringType(), required=False),
        NestedField(7, "b", BinaryType(), required=False), NestedField(8, "dec", DecimalType(10, 2), required=False),
        NestedField(9, "f", FloatType(), required=False), NestedField(10, "dbl", DoubleType(), required=False),
        NestedField(11, "flag", BooleanType(), required=False),
    )
    spec = PartitionSpec(
        PartitionField(1, 1000, BucketTransform(8), "id_bucket"), PartitionField(6, 1001, TruncateTransform(2), "s_trunc"),
        PartitionField(3, 1002, YearTransform(), "d_year"), PartitionField(4, 1003, DayTransform(), "ts_day"),
        PartitionField(5, 1004, HourTransform(), "tsn_hour"), PartitionField(2, 1005, IdentityTransform(), "i"),
        PartitionField(8, 1006, TruncateTransform(100), "dec_trunc"), PartitionField(10, 1007, IdentityTransform(), "dbl"),
    )
    utc = dt.timezone.utc
    rows = []
    for k in range(40):
        rows.append({
            "id": k if k % 13 else None, "i": k % 3 - 1, "d": dt.date(1969 + k % 3, 12, 31),
            "ts": dt.datetime(2024, 1, 1 + k % 4, k % 24, tzinfo=utc) if k % 7 else None,
            "tsn": dt.datetime(1969, 12, 31, 23) + dt.timedelta(hours=k), "s": ["alpha", "beta", "\u00e9t\u00e9", ""][k % 4],
            "b": bytes([k % 5, 1]), "dec": Decimal(k * 37 - 700).scaleb(-2), "f": float("nan") if k == 5 else k / 4,
            "dbl": -0.0 if k == 6 else k * 1.5, "flag": k % 2 == 0,
        })
    arrow = pa.Table.from_pylist(rows, schema=schema.as_arrow())
    for v in (1, 2):
        t = cat.create_table(f"db.all_v{v}", schema=schema, partition_spec=spec, properties={"format-version": str(v)})
        t.append(arrow.slice(0, 20))
        t.append(arrow.slice(20))
        t.delete("id >= 30 and id < 33")
        out[f"all_v{v}"] = t

    evo = cat.create_table("db.evolve", schema=Schema(
        NestedField(1, "id", IntegerType(), required=False), NestedField(2, "name", StringType(), required=False),
        NestedField(3, "score", FloatType(), required=False),
        NestedField(4, "loc", StructType(NestedField(5, "lat", DoubleType(), required=False),
                                         NestedField(6, "lon", DoubleType(), required=False)), required=False),
        NestedField(7, "tags", ListType(8, StringType(), element_required=False), required=False),
        NestedField(9, "attrs", MapType(10, StringType(), 11, LongType(), value_required=False), required=False)),
        partition_spec=PartitionSpec(PartitionField(1, 1000, BucketTransform(4), "id_bucket")),
        properties={"format-version": "2"})
    evo.append(pa.Table.from_pylist([
        {"id": 1, "name": "a", "score": 1.5, "loc": {"lat": 1.0, "lon": 2.0}, "tags": ["x"], "attrs": {"k": 1}},
        {"id": 2, "name": "b", "score": 2.5, "loc": None, "tags": None, "attrs": None}], schema=evo.schema().as_arrow()))
    with evo.update_schema() as u:
        u.rename_column("name", "label")
        u.update_column("id", LongType())
        u.update_column("score", DoubleType())
        u.add_column("added", StringType())
    with evo.update_spec() as u:
        u.add_field("label", TruncateTransform(1), "label_trunc")
    evo.append(pa.Table.from_pylist([
        {"id": 3, "label": "cc", "score": 3.25, "loc": {"lat": 3.0, "lon": None}, "tags": ["p", None],
         "attrs": {"z": None}, "added": "new"}], schema=evo.schema().as_arrow()))
    with evo.update_schema() as u:
        u.delete_column("added")
    evo.append(pa.Table.from_pylist([{"id": 4, "label": "d", "score": None, "loc": None, "tags": [], "attrs": {}}],
                                    schema=evo.schema().as_arrow()))
    out["evolve"] = evo
    return out


def build_migrated(root: str):
    """A table whose data files have no field ids (added with PyIceberg's add_files, which sets the table's
    name mapping), then renamed and widened."""
    import pyarrow.parquet as pq
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, LongType, NestedField, StringType

    cat = SqlCatalog("mig", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")
    cat.create_namespace("db")
    t = cat.create_table("db.migrated", schema=Schema(NestedField(1, "n", IntegerType(), required=False),
                                                      NestedField(2, "word", StringType(), required=False)),
                         properties={"format-version": "2"})
    import os
    os.makedirs(f"{root}/plain", exist_ok=True)
    pq.write_table(pa.table({"n": pa.array([1, 2, 3], pa.int32()), "word": ["a", "b", None]}), f"{root}/plain/f1.parquet")
    t.add_files([f"file://{root}/plain/f1.parquet"])
    with t.update_schema() as u:
        u.rename_column("word", "label")
        u.update_column("n", LongType())
    return t
