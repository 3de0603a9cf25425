"""What a write's Python worker imports: the key stage, the data file writer and the delete writer build their
Arrow arrays from buffers (``sparkberg.arrays``), never through ``pa.array``/``pa.scalar``/``to_numpy``, which
import pandas whenever it is installed (a cost at each fresh worker's start). Each check runs in a fresh process, on
batches read from an Arrow IPC file as a worker receives them from Spark."""
import datetime
import decimal
import json
import os
import subprocess
import sys
import uuid

import pyarrow as pa
import pytest
from pandas_watch import WATCH

LIB = os.path.join(os.path.dirname(__file__), "..", "..", "lib")

CHILD = WATCH + r"""
import pyarrow as pa
from sparkberg.io.fileio import file_io_for
from sparkberg.format import types as T
from sparkberg.format.partitioning import PartitionField, PartitionSpec
from sparkberg.format.transforms import parse_transform
from sparkberg.write.deletes import DeleteWriter
from sparkberg.write.ordering import KeyColumns, ZOrder, spec_keys
from sparkberg.write.writer import PARTITION_PREFIX, FileWriter

batch = pa.ipc.open_file(sys.argv[1]).get_batch(0)
out = sys.argv[2]
names = ["id", "n", "ts", "d", "v", "x", "f", "b", "dec", "u", "bin"]
types = [T.LONG, T.INT, T.TIMESTAMPTZ, T.DATE, T.STRING, T.DOUBLE, T.FLOAT, T.BOOLEAN, T.DecimalType(9, 2), T.UUID,
         T.BINARY]
schema = T.Schema([T.NestedField(i + 1, n, t, False) for i, (n, t) in enumerate(zip(names, types))], 0)
transforms = {"bucket[16]": 1, "day": 3, "month": 4, "truncate[2]": 5, "identity": 2, "hour": 3, "year": 4}
transforms.update({"bucket[4]": 10, "truncate[10]": 2})
fields = [PartitionField(src, 1000 + i, parse_transform(t), f"p{i}") for i, (t, src) in enumerate(transforms.items())]
spec = PartitionSpec(0, fields)
keys = spec_keys(spec, PARTITION_PREFIX)
with_keys = list(KeyColumns(schema, keys, ZOrder(["id", "x", "v"]))(iter([batch])))
table = pa.Table.from_batches(with_keys)
writer = FileWriter(schema, spec, out + "/data", {}, "w", io=file_io_for())
written = list(writer(iter(table.sort_by([(k[0], "ascending") for k in keys]).to_batches())))
files = [json.loads(r) for b in written for r in b.column(0).to_pylist()]
runs = pa.ipc.open_file(sys.argv[3]).get_batch(0)
targets = {p: {"spec_id": 0, "partition": {}, "dir": out + "/deletes", "dvs": [], "position_files": []}
           for p in runs.column(0).to_pylist()}
dvs = list(DeleteWriter(targets, dv=True, write_id="w", io=file_io_for())(iter([runs])))
positions = list(DeleteWriter(targets, dv=False, write_id="w", partition_scoped=True, io=file_io_for())(iter([runs])))
print(json.dumps({"pandas": first[0] if first else None, "files": len(files), "dvs": sum(b.num_rows for b in dvs),
                  "position_files": sum(b.num_rows for b in positions)}))
"""


def _ipc(path, batch: pa.RecordBatch) -> str:
    with pa.ipc.new_file(str(path), batch.schema) as w:
        w.write_batch(batch)
    return str(path)


def test_writing_data_and_delete_files_imports_no_pandas(tmp_path):
    n = 500
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    u = [str(uuid.UUID(int=i * 7919)) for i in range(n)]
    batch = pa.RecordBatch.from_pydict({
        "id": pa.array([None if i % 97 == 0 else i * 31 for i in range(n)], pa.int64()),
        "n": pa.array([i % 7 - 3 for i in range(n)], pa.int32()),
        "ts": pa.array([start + datetime.timedelta(hours=5 * i) for i in range(n)], pa.timestamp("us", "UTC")),
        "d": pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=i) for i in range(n)], pa.date32()),
        "v": pa.array([None if i % 13 == 0 else f"v{i % 50}" for i in range(n)], pa.string()),
        "x": pa.array([float("nan") if i % 11 == 0 else (-0.0 if i % 17 == 0 else i / 3) for i in range(n)]),
        "f": pa.array([i / 7 for i in range(n)], pa.float32()),
        "b": pa.array([i % 3 == 0 for i in range(n)]),
        "dec": pa.array([decimal.Decimal(i) / 4 for i in range(n)], pa.decimal128(9, 2)),
        "u": pa.array(u, pa.string()),
        "bin": pa.array([bytes([i % 256, 1]) for i in range(n)], pa.binary()),
    })
    data = _ipc(tmp_path / "batch.arrow", batch)
    rows = [(f"{tmp_path}/data/f{i // 40}.parquet", p) for i, p in enumerate(range(0, 400, 1))]
    runs = _ipc(tmp_path / "runs.arrow", pa.RecordBatch.from_pydict(
        {"_file": [f for f, _ in rows], "_pos": pa.array([p for _, p in rows], pa.int64())}))
    p = subprocess.run([sys.executable, "-c", CHILD, data, str(tmp_path / "out"), runs], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": LIB}, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    # (a DV for each of the 10 data files named; their position deletes in one file: one partition directory)
    assert got["files"] > 1 and got["dvs"] == 10 and got["position_files"] == 1
    assert got["pandas"] is None, got["pandas"]


MATCHING = WATCH + r"""
import pyarrow as pa
from sparkberg.operations.merge import _inner_pairs
from sparkberg.read.arrow import _without_carryovers
from sparkberg.read.equality import equal_rows

t = pa.ipc.open_file(sys.argv[1]).read_all()
half = t.slice(0, t.num_rows // 2)
deleted = equal_rows(t.select(["id", "v"]), half.select(["id", "v"]))
carried_out, carried_in = _without_carryovers(t, half)
left, right = _inner_pairs([t.column("id"), t.column("v").cast(pa.large_string())],
                           [half.column("id"), half.column("v").cast(pa.large_string())])
print(json.dumps({"pandas": first[0] if first else None, "deleted": int(deleted.sum()), "out": carried_out.num_rows,
                  "in": carried_in.num_rows, "pairs": len(left)}))
"""


def test_matching_rows_on_several_columns_imports_no_pandas(tmp_path):
    # a data file's equality deletes on two columns, a changelog's carryovers and the driver MERGE's pairs: what
    # Arrow would join or group by imports pandas with pyarrow.acero
    n = 200
    table = pa.table({"id": pa.array([None if i % 9 == 0 else i % 50 for i in range(n)], pa.int64()),
                      "v": [None if i % 7 == 0 else f"v{i % 3}" for i in range(n)],
                      "x": [float("nan") if i % 5 == 0 else i / 4 for i in range(n)]})
    p = subprocess.run([sys.executable, "-c", MATCHING, _ipc(tmp_path / "t.arrow", table.combine_chunks()
                                                              .to_batches()[0])],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": LIB}, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["deleted"] >= n // 2 and got["out"] == n - n // 2 and got["in"] == 0 and got["pairs"] > 0
    assert got["pandas"] is None, got["pandas"]
