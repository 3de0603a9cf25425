"""ORC and Avro files read by field id (no Spark): renamed, widened, nested, missing-with-default columns."""
import uuid
from decimal import Decimal

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pytest

from sparkberg.io.fileio import file_io_for
from sparkberg.read.formats import ArrowFileReader, conform
from sparkberg.format import types as T

SCHEMA = [
    T.NestedField(1, "id", T.LONG, True),
    T.NestedField(2, "label", T.STRING),  # written as "name"
    T.NestedField(3, "amount", T.DecimalType(12, 2)),  # written as decimal(9, 2)
    T.NestedField(4, "tags", T.ListType(5, T.STRING)),
    T.NestedField(6, "attrs", T.MapType(7, T.INT, 8, T.STRING)),
    T.NestedField(9, "u", T.UUID),
    T.NestedField(10, "added", T.INT, initial_default=42),
]
ARROW = pa.schema([("id", pa.int64()), ("label", pa.string()), ("amount", pa.decimal128(12, 2)),
                   ("tags", pa.list_(pa.string())), ("attrs", pa.map_(pa.int32(), pa.string())),
                   ("u", pa.string()), ("added", pa.int32()),
                   ("_key", pa.string()), ("_pos", pa.int64())])


def _avro_file(tmp_path):
    schema = {"type": "record", "name": "table", "fields": [
        {"field-id": 1, "name": "id", "type": "int"},  # widened to long since
        {"field-id": 2, "name": "name", "type": ["null", "string"]},
        {"field-id": 3, "name": "amount", "type": ["null", {"type": "fixed", "name": "dec_9_2", "size": 4,
                                                            "logicalType": "decimal", "precision": 9, "scale": 2}]},
        {"field-id": 4, "name": "tags", "type": ["null", {"type": "array", "element-id": 5, "items": "string"}]},
        {"field-id": 6, "name": "attrs", "type": ["null", {"type": "array", "logicalType": "map", "items": {
            "type": "record", "name": "k7_v8", "fields": [{"name": "key", "type": "int", "field-id": 7},
                                                          {"name": "value", "type": "string", "field-id": 8}]}}]},
        {"field-id": 9, "name": "u", "type": ["null", {"type": "fixed", "name": "uuid_fixed", "size": 16,
                                                       "logicalType": "uuid"}]},
        {"field-id": 99, "name": "dropped", "type": "string"},
    ]}
    u = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    records = [{"id": 1, "name": "a", "amount": Decimal("1.25"), "tags": ["x", "y"],
                "attrs": [{"key": 1, "value": "one"}], "u": u.bytes, "dropped": "z"},
               {"id": 2, "name": None, "amount": None, "tags": None, "attrs": None, "u": None, "dropped": "z"}]
    path = tmp_path / "f.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records)
    return str(path), u


def test_avro_columns_are_found_by_field_id(tmp_path):
    path, u = _avro_file(tmp_path)
    reader = ArrowFileReader("avro", SCHEMA, ARROW, io=file_io_for())
    out = pa.Table.from_batches(list(reader(iter([pa.record_batch([pa.array([path])], names=["p"])]))))
    assert out.schema == ARROW
    assert out.to_pylist() == [
        {"id": 1, "label": "a", "amount": Decimal("1.25"), "tags": ["x", "y"], "attrs": [(1, "one")],
         "u": str(u), "added": 42, "_key": path, "_pos": 0},
        {"id": 2, "label": None, "amount": None, "tags": None, "attrs": None, "u": None, "added": 42,
         "_key": path, "_pos": 1}]


def _orc_meta(fid):
    return {b"iceberg.id": str(fid).encode()}


def test_orc_struct_fields_are_matched_by_id_at_depth():
    inner = pa.struct([pa.field("old_b", pa.string(), metadata=_orc_meta(12)),
                       pa.field("a", pa.int32(), metadata=_orc_meta(11))])
    arr = pa.array([{"old_b": "x", "a": 1}, None], inner)
    ice = T.StructType((T.NestedField(11, "a", T.LONG), T.NestedField(12, "b", T.STRING),
                        T.NestedField(13, "c", T.STRING), T.NestedField(14, "d", T.INT, initial_default=9)))
    target = pa.struct([("a", pa.int64()), ("b", pa.string()), ("c", pa.string()), ("d", pa.int32())])
    # a nested field the file lacks takes its initial-default; a null struct stays null
    assert conform(arr, ice, target, "s").to_pylist() == [{"a": 1, "b": "x", "c": None, "d": 9}, None]


def test_avro_nested_fields_the_file_lacks_take_their_initial_default():
    from sparkberg.read.formats import avro_converter
    node = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "int", "field-id": 11}]}
    ice = T.StructType((T.NestedField(11, "a", T.INT), T.NestedField(12, "b", T.STRING, initial_default="dflt"),
                        T.NestedField(13, "c", T.STRING)))
    convert = avro_converter(node, ice, "s")
    assert convert({"a": 1}) == {"a": 1, "b": "dflt", "c": None}
    assert convert(None) is None


def test_orc_file_with_iceberg_ids_reads_renamed_and_missing_columns(tmp_path):
    table = pa.table({"id": pa.array([5, 6], pa.int64()), "name": ["p", None]})
    table = table.cast(pa.schema([pa.field("id", pa.int64(), metadata=_orc_meta(1)),
                                  pa.field("name", pa.string(), metadata=_orc_meta(2))]))
    path = str(tmp_path / "f.orc")
    orc.write_table(table, path)
    fields = SCHEMA[:2] + [SCHEMA[-1]]
    arrow = pa.schema([ARROW.field("id"), ARROW.field("label"), ARROW.field("added"), ARROW.field("_key"),
                       ARROW.field("_pos")])
    got = pa.Table.from_batches(list(ArrowFileReader("orc", fields, arrow, {2: ["name"]}, io=file_io_for())(
        iter([pa.record_batch([pa.array([path])], names=["p"])])))).to_pylist()
    # pyarrow may drop the attributes when writing; then the name mapping finds "name"
    assert got == [{"id": 5, "label": "p", "added": 42, "_key": path, "_pos": 0},
                   {"id": 6, "label": None, "added": 42, "_key": path, "_pos": 1}]


def test_unknown_format_is_named():
    from sparkberg.errors import NotSupportedError
    with pytest.raises(NotSupportedError, match="lance"):
        ArrowFileReader("lance", SCHEMA, ARROW, io=file_io_for())


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_position_delete_rows_keep_only_the_data_files_the_plan_applies_them_to(tmp_path, fmt):
    # spec "Position Delete Files": rows (file_path, pos); a delete file applies to the data files planning
    # matched it with, so rows naming any other file are dropped; the key is data file id << 40 | pos
    import pyarrow.parquet as pq

    from sparkberg.read.positions import PositionDeleteRows
    files = ["file:/wh/a.parquet", "file:/wh/b.parquet", "file:/wh/other.parquet"]
    paths = [files[0], files[0], files[1], files[2], files[1], files[0]]
    positions = [0, 7, 3, 1, 2 ** 33, 9]
    path = str(tmp_path / f"deletes.{fmt}")
    if fmt == "avro":
        schema = {"type": "record", "name": "deletes", "fields": [
            {"field-id": 2147483546, "name": "file_path", "type": "string"},
            {"field-id": 2147483545, "name": "pos", "type": "long"}]}
        with open(path, "wb") as f:
            fastavro.writer(f, fastavro.parse_schema(schema),
                            [{"file_path": p, "pos": n} for p, n in zip(paths, positions)])
    else:
        meta = ({b"PARQUET:field_id": b"2147483546"}, {b"PARQUET:field_id": b"2147483545"}) if fmt == "parquet" \
            else ({b"iceberg.id": b"2147483546"}, {b"iceberg.id": b"2147483545"})
        table = pa.table([pa.array(paths), pa.array(positions, pa.int64())], schema=pa.schema([
            pa.field("file_path", pa.string(), False, meta[0]), pa.field("pos", pa.int64(), False, meta[1])]))
        (pq.write_table if fmt == "parquet" else orc.write_table)(table, path)
    decoder = PositionDeleteRows({path: {files[0]: 0, files[1]: 5}}, None, file_io_for())
    out = [k for b in decoder([pa.record_batch([pa.array([path]), pa.array([fmt])], names=["p", "f"])])
           for k in b.column(0).to_pylist()]
    assert sorted(out) == sorted([0, 7, 9] + [5 * 2 ** 40 + 3, 5 * 2 ** 40 + 2 ** 33])
