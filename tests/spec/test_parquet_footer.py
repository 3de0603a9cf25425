"""The Parquet footer's VARIANT annotation (spec "Parquet": a variant is a group annotated VARIANT), which pyarrow
cannot write and sparkberg adds to the footer: every other byte of the footer kept (a Thrift compact round trip is
exact), the column chunks where they were, and the file read back by pyarrow with the annotation."""
import io
import struct

import pyarrow as pa
import pyarrow.parquet as pq

from sparkberg.write.footer import VariantFooterSink, _Reader, _write, annotate_variants, logical_type_ids

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
    assert annotate_variants(footer, set()) == footer


def test_the_sink_annotates_the_variant_groups_and_nothing_else():
    plain, out = io.BytesIO(), io.BytesIO()
    pq.write_table(_table(), plain)
    sink = VariantFooterSink(out, {2, 4})
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
