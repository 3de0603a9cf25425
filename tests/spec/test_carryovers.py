"""A changelog's carryovers (Java's ``RemoveCarryoverIterator``): rows a copy-on-write rewrite deletes and inserts
unchanged are no change. Each distinct row is kept as many times as one side has it more than the other, rows
compared as Java's ``Objects.equals`` compares them (NaN equal to NaN, -0.0 not equal to 0.0, null equal to
null)."""
import collections
import math

import numpy as np
import pyarrow as pa
import pytest

from sparkberg.read.arrow import _without_carryovers, _without_carryovers_by_rows, comparable


def _rows(t: pa.Table) -> collections.Counter:
    return collections.Counter(tuple(comparable(v) for v in row.values()) for row in t.to_pylist())


def _side(rng, n):
    def pick(values):
        return [values[i] for i in rng.integers(0, len(values), n)]
    return pa.table({"id": pa.array(pick([1, 2, 3, None]), pa.int64()), "v": pick(["a", "b", None]),
                     "x": pa.array(pick([0.0, -0.0, float("nan"), None, 2.5]), pa.float64())})


@pytest.mark.parametrize("seed", range(6))
def test_carryovers_by_codes_are_those_by_python_values(seed):
    rng = np.random.default_rng(seed)
    deleted, inserted = _side(rng, int(rng.integers(1, 80))), _side(rng, int(rng.integers(1, 80)))
    got_out, got_in = _without_carryovers(deleted, inserted)
    want_out, want_in = _without_carryovers_by_rows(deleted, inserted)
    assert _rows(got_out) == _rows(want_out) and _rows(got_in) == _rows(want_in)
    carried = _rows(deleted) & _rows(inserted)
    assert carried  # (the case has carryovers to remove)
    assert _rows(got_out) == _rows(deleted) - carried and _rows(got_in) == _rows(inserted) - carried
    assert got_out.schema == deleted.schema and got_in.schema == inserted.schema


def test_a_carryover_is_an_identical_row_and_as_many_times_as_both_sides_have_it():
    deleted = pa.table({"id": [1, 1, 1, 2, 3, None], "x": [0.0, 0.0, 0.0, float("nan"), -0.0, 1.0]})
    inserted = pa.table({"id": [1, 2, 3, None, 4], "x": [0.0, float("nan"), 0.0, 1.0, 5.0]})
    for without in (_without_carryovers, _without_carryovers_by_rows):
        out, into = without(deleted, inserted)
        # (1, 0.0) twice more deleted than inserted; (3, -0.0) is not (3, 0.0); NaN and null rows carried over
        assert [(r["id"], math.copysign(1, r["x"])) for r in out.to_pylist()] == [(1, 1.0), (1, 1.0), (3, -1.0)]
        assert into.to_pylist() == [{"id": 3, "x": 0.0}, {"id": 4, "x": 5.0}]
