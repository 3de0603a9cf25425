"""The Parquet footer's VARIANT, GEOMETRY and GEOGRAPHY annotations (spec "Parquet": a variant is a group annotated
VARIANT, a geometry a binary annotated GEOMETRY, a geography GEOGRAPHY, with their CRS and edge algorithm), which
pyarrow cannot write and sparkberg adds to the footer: every other byte of the footer kept (a Thrift compact round
trip is exact), the column chunks where they were, and the file read back by pyarrow with the annotations."""
import io
import struct

import pyarrow as pa
import pyarrow.parquet as pq

import pytest

from sparkberg.format import types as T
from sparkberg.write.footer import AnnotatedFooterSink, _Reader, _write, annotate, logical_type, logical_type_ids

VARIANT = pa.struct([pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary(), nullable=False)])


def _table() -> pa.Table:
    v = pa.array([{"metadata": b"\x01\x00\x00", "value": b"\x0c\x05"}] * 3, VARIANT)
    nested = pa.array([{"x": {"metadata": b"\x01\x00\x00", "value": b"\x00"}, "n": i} for i in range(3)],
                      pa.struct([pa.field("x", VARIANT, metadata={"PARQUET:field_id": "4"}),
                                 pa.field("n", pa.int32())]))
    schema = pa.schema([pa.field("id", pa.int64(), metadata={"PARQUET:field_id": "1"}),
                        pa.field("v", VARIANT, metadata={"PARQUET:field_id": "2"}),
                        pa.field("s", nested.type, metadata={"PARQUET:field_id": "3"})])
    return pa.table([pa.array([1, 2, 3], pa.int64()), v, nested], schema=schema)


def _footer(data: bytes) -> bytes:
    n = struct.unpack("<I", data[-8:-4])[0]
    return data[-8 - n:-8]


def test_footers_round_trip_exactly():
    buf = io.BytesIO()
    pq.write_table(_table(), buf, compression="zstd")
    footer = _footer(buf.getvalue())
    assert _write(12, _Reader(footer).value(12)) == footer
    assert annotate(footer, {}) == footer


def test_the_sink_annotates_the_variant_groups_and_nothing_else():
    plain, out = io.BytesIO(), io.BytesIO()
    pq.write_table(_table(), plain)
    sink = AnnotatedFooterSink(out, {2: logical_type(T.VariantType()), 4: logical_type(T.VariantType())})
    writer = pq.ParquetWriter(sink, _table().schema)
    writer.write_table(_table())
    sink.hold()
    writer.close()
    size = sink.finish()
    data = out.getvalue()
    assert size == len(data) and data[:4] == data[-4:] == b"PAR1"
    assert logical_type_ids(_footer(data)) == {2: [16], 4: [16]}  # (LogicalType.VARIANT)
    assert not logical_type_ids(_footer(plain.getvalue()))
    f = pq.ParquetFile(io.BytesIO(data))
    assert "v (Variant(1))" in str(f.schema) and "x (Variant(1))" in str(f.schema)
    assert f.read().to_pylist() == pq.read_table(io.BytesIO(plain.getvalue())).to_pylist()
    before = plain.getvalue()
    assert data[:-len(_footer(data)) - 8] == before[:-len(_footer(before)) - 8]  # (the column chunks, unmoved)


@pytest.mark.parametrize("t, logical", [
    (T.GeometryType(), {"Type": "Geometry"}),
    (T.GeometryType("EPSG:4326"), {"Type": "Geometry", "crs": "EPSG:4326"}),
    (T.GeographyType(), {"Type": "Geography"}),
    (T.GeographyType("srid:4269", "karney"), {"Type": "Geography", "crs": "srid:4269", "algorithm": "karney"}),
    (T.GeographyType("OGC:CRS84", "vincenty"), {"Type": "Geography", "algorithm": "vincenty"}),
])
def test_geometry_and_geography_columns_get_their_logical_types_with_crs_and_edges(t, logical):
    import json
    point = struct.pack("<BI2d", 1, 1, 1.0, 2.0)
    table = pa.table([pa.array([1, 2], pa.int64()), pa.array([point, None], pa.binary())],
                     schema=pa.schema([pa.field("id", pa.int64(), metadata={"PARQUET:field_id": "1"}),
                                       pa.field("g", pa.binary(), metadata={"PARQUET:field_id": "2"})]))
    out = io.BytesIO()
    sink = AnnotatedFooterSink(out, {2: logical_type(t)})
    writer = pq.ParquetWriter(sink, table.schema)
    writer.write_table(table)
    sink.hold()
    writer.close()
    sink.finish()
    f = pq.ParquetFile(io.BytesIO(out.getvalue()))
    got = json.loads(f.metadata.schema.column(1).logical_type.to_json())
    assert {k: v for k, v in got.items() if k != "crs" or v} == logical  # (Parquet's default CRS: left out)
    assert f.metadata.schema.column(1).physical_type == "BYTE_ARRAY"
    assert f.read().column("g").to_pylist() == [point, None] or \
        [getattr(v, "wkb", v) for v in f.read().column("g").to_pylist()] == [point, None]
    assert logical_type(T.STRING) is None


@pytest.mark.parametrize("version, parses", [("3.5.6", False), ("4.0.5", False), ("4.1.0", True), ("4.3.0", True)])
@pytest.mark.parametrize("column", [T.VARIANT, T.GeometryType(), T.GeographyType()])
def test_spark_s_reader_opens_annotated_files_only_from_parquet_java_1_16(version, parses, column):
    """Spark 3.5 (parquet-java 1.13) and 4.0 (1.15) fail on a footer with any of these annotations, whatever the
    columns read (a NullPointerException in ``LogicalType.getSetField``, seen on PySpark 3.5.6 and 4.0.5); 4.1
    (1.16) and later read them. Before that, sparkberg's Arrow reader reads the table; a table without them,
    Spark's reader on every version."""
    from types import SimpleNamespace
    from sparkberg.format.updates import new_table_metadata
    from sparkberg.read.columns import spark_parses
    spark = SimpleNamespace(version=version)
    annotated = new_table_metadata(T.Schema([T.NestedField(1, "id", T.LONG), T.NestedField(2, "c", column)]),
                                   "file:///wh/t", format_version=3)
    plain = new_table_metadata(T.Schema([T.NestedField(1, "id", T.LONG)]), "file:///wh/t", format_version=3)
    assert spark_parses(spark, annotated) is parses
    assert spark_parses(spark, plain) is True
