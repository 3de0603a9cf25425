"""The executor-side file writer: rows clustered by partition become one file per run of a partition."""
import json
import math
import random

import pyarrow as pa
import pytest

from sparkberg.io.fileio import file_io_for
from sparkberg.format import types as T
from sparkberg.format.partitioning import PartitionField, PartitionSpec
from sparkberg.format.transforms import parse_transform
from sparkberg.write.writer import PARTITION_PREFIX, FileWriter, key_runs


def _runs_row_by_row(keys: list[pa.Array], n: int):
    """The reference: each row's keys as Python values against the previous row's (None is None; NaN is NaN)."""
    def same(a, b):
        return all(x == y or (x is None and y is None) or (isinstance(x, float) and isinstance(y, float)
                                                         and math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))
    if not keys:
        return [(0, n, ())]
    rows = list(zip(*[k.to_pylist() for k in keys]))
    out, start = [], 0
    for i in range(1, n):
        if not same(rows[i], rows[start]):
            out.append((start, i, rows[start]))
            start = i
    out.append((start, n, rows[start]))
    return out


def _same_runs(got, want) -> bool:
    return len(got) == len(want) and all(
        g[:2] == w[:2] and all(a == b or (a != a and b != b) for a, b in zip(g[2], w[2])) for g, w in zip(got, want))


@pytest.mark.parametrize("seed", range(20))
def test_runs_are_those_of_comparing_each_row_with_the_previous(seed):
    rnd = random.Random(seed)
    n = rnd.choice([1, 2, 3, 50, 500])
    values = {
        pa.int32(): [None, -1, 0, 7],
        pa.int64(): [None, 2 ** 40, 3],
        pa.string(): [None, "", "a", "b"],
        pa.float64(): [None, float("nan"), -0.5, 2.0],
        pa.binary(): [None, b"\x00", b"\x01"],
    }
    keys = []
    for typ in rnd.sample(list(values), rnd.randint(1, 3)):
        column, row = [], 0
        while row < n:  # clustered: runs of a value, a value possibly coming back later
            column += [rnd.choice(values[typ])] * rnd.randint(1, 40)
            row = len(column)
        keys.append(pa.array(column[:n], typ))
    assert _same_runs(list(key_runs(keys, n)), _runs_row_by_row(keys, n))


def test_no_keys_is_one_run():
    assert list(key_runs([], 7)) == [(0, 7, ())]


def test_nan_and_null_partition_values_each_make_one_file(tmp_path):
    # identity partitions of a double column: the rows of NaN share a partition, as the rows of null do
    schema = T.Schema([T.NestedField(1, "x", T.DOUBLE, False)], 0)
    spec = PartitionSpec(0, [PartitionField(1, 1000, parse_transform("identity"), "x")])
    xs = [1.0, float("nan"), float("nan"), float("nan"), None, None]
    batch = pa.RecordBatch.from_arrays([pa.array(xs, pa.float64()), pa.array(xs, pa.float64())],
                                       names=["x", f"{PARTITION_PREFIX}0"])
    writer = FileWriter(schema, spec, str(tmp_path), {}, "w", io=file_io_for())
    files = [json.loads(r) for b in writer(iter([batch.slice(0, 3), batch.slice(3)]))
             for r in b.column(0).to_pylist()]
    assert [f["record_count"] for f in files] == [1, 3, 2]
