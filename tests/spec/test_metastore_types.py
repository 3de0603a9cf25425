"""The schema of a plain Hive or Glue table, as Spark reads it (and so as Iceberg Java's migrate and snapshot
convert it): Hive type names, Spark data-source tables' own schema parameters, and a type with no Iceberg type
named."""
import json

import pytest

from sparkberg.catalog.base import Identifier
from sparkberg.catalog.metastore import Column, HiveTable, hive_to_iceberg
from sparkberg.errors import NotSupportedError
from sparkberg.format import types as T


@pytest.mark.parametrize("hive, iceberg", [
    ("tinyint", "int"), ("smallint", "int"), ("INT", "int"), ("bigint", "long"), ("float", "float"),
    ("double", "double"), ("boolean", "boolean"), ("string", "string"), ("varchar(20)", "string"),
    ("char(3)", "string"), ("binary", "binary"), ("date", "date"), ("timestamp", "timestamptz"),
    ("timestamp_ntz", "timestamp"), ("decimal", "decimal(10,0)"), ("decimal(12, 3)", "decimal(12,3)"),
    ("array<string>", "list<string>"), ("map<string,array<int>>", "map<string, list<int>>"),
    ("struct<a:int,`b c`:map<string,decimal(5,2)>>", "struct<0: a: optional int, 0: b c: optional "
                                                      "map<string, decimal(5,2)>>"),
])
def test_hive_types_as_spark_reads_them(hive, iceberg):
    assert str(hive_to_iceberg(hive, "t.c")) == iceberg


def test_a_hive_type_without_an_iceberg_type_is_named():
    with pytest.raises(NotSupportedError, match="column t.u: the Hive type 'uniontype<int,string>'"):
        hive_to_iceberg("uniontype<int,string>", "t.u")


def test_a_spark_data_source_table_reads_by_the_schema_spark_keeps_in_its_parameters():
    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {"comment": "the key"}},
        {"name": "tags", "type": {"type": "array", "elementType": "string", "containsNull": True},
         "nullable": True, "metadata": {}},
        {"name": "day", "type": "date", "nullable": True, "metadata": {}}]}
    text = json.dumps(schema)
    params = {"spark.sql.sources.provider": "parquet", "spark.sql.sources.schema.numParts": "2",
              "spark.sql.sources.schema.part.0": text[:40], "spark.sql.sources.schema.part.1": text[40:],
              "spark.sql.sources.schema.numPartCols": "1", "spark.sql.sources.schema.partCol.0": "day",
              "comment": "events"}
    # (the storage descriptor's columns of such a table are Spark's placeholder, not the table's)
    table = HiveTable(Identifier(("db",), "t"), (Column("col", "array<string>"),), (Column("day", "date"),),
                      "file:/x", "parquet", params)
    s = table.schema()
    assert [(f.name, str(f.field_type), f.doc) for f in s.fields] == [
        ("id", "long", "the key"), ("tags", "list<string>", None), ("day", "date", None)]
    assert table.partition_names == ["day"] and table.is_parquet
    assert table.properties() == {"comment": "events"}
    assert all(isinstance(f, T.NestedField) and not f.required for f in s.fields)
