"""The ``partitions`` metadata table's totals added up where the entries are decoded (``PartitionTotals``: a
Python stage's tasks, or the driver), before Spark adds up the tasks' rows: for any entries they equal the
totals worked out a file at a time, as Iceberg Java's partitions table counts them (live entries only, per
partition tuple and number of its spec's fields; rows, files and bytes of data files, rows and files of each
kind of delete file), and the row's most recent file is the greatest (commit time, snapshot id, spec id), a file
of a snapshot with no known commit time the least, as Spark orders the structs it aggregated before."""
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from sparkberg.format import types as T
from sparkberg.format import updates as U
from sparkberg.format.partitioning import UNPARTITIONED, PartitionField, PartitionSpec
from sparkberg.format.transforms import IdentityTransform
from sparkberg.inspect import PARTITION_TOTALS, PartitionTotals
from sparkberg.planning.entries import PartitionLayout

SCHEMA = T.Schema([T.NestedField(1, "k", T.INT), T.NestedField(2, "s", T.STRING), T.NestedField(3, "x", T.LONG)])
SPEC = PartitionSpec(0, [PartitionField(1, 1000, IdentityTransform(), "k"),
                         PartitionField(2, 1001, IdentityTransform(), "s")])
PARTITIONED = U.new_table_metadata(SCHEMA, "file:///wh/t", SPEC, format_version=2, fresh_ids=False)
UNPARTITIONED_TABLE = U.new_table_metadata(SCHEMA, "file:///wh/u", UNPARTITIONED, format_version=2, fresh_ids=False)
PROJECTED = {0: 2, 1: 1, 2: 2}  # (spec 2 has as many fields as spec 0: its files share spec 0's rows)
SNAPSHOTS = (11, 12, 13, 14)

_entry = st.fixed_dictionaries({
    "status": st.sampled_from([0, 1, 2]), "snapshot_id": st.sampled_from(SNAPSHOTS),
    "content": st.sampled_from([0, 0, 1, 2]), "spec_id": st.sampled_from(sorted(PROJECTED)),
    "partition": st.fixed_dictionaries({"k": st.one_of(st.none(), st.integers(-2, 2)),
                                        "s": st.one_of(st.none(), st.sampled_from(["a", "b"]))}),
    "record_count": st.integers(0, 1000), "file_size_in_bytes": st.integers(1, 10**6)})
# commit times: some snapshots unknown (expired), some sharing a time (the snapshot id then decides)
_times = st.dictionaries(st.sampled_from(SNAPSHOTS), st.sampled_from([1000, 2000, 3000]))


def _reference(entries: list[dict], times: dict[int, int], keyed: bool) -> dict:
    """The totals a file at a time: key -> (the sums in PARTITION_TOTALS' order, (time, snapshot, spec) of the
    most recent file)."""
    out: dict = {}
    for e in entries:
        if e["status"] == 2:
            continue
        key = (e["partition"]["k"], e["partition"]["s"], PROJECTED[e["spec_id"]]) if keyed else ()
        sums, last = out.get(key, ([0] * len(PARTITION_TOTALS), None))
        for i, (_, content, what) in enumerate(PARTITION_TOTALS):
            if e["content"] == content:
                sums[i] += {"rows": e["record_count"], "files": 1, "bytes": e["file_size_in_bytes"]}[what]
        ts = times.get(e["snapshot_id"])
        candidate = (ts is not None, ts or 0, e["snapshot_id"], e["spec_id"])
        last = candidate if last is None or candidate > last else last
        out[key] = (sums, last)
    return {k: (sums, (last[1] if last[0] else None, last[2], last[3])) for k, (sums, last) in out.items()}


def _totals(metadata, entries: list[dict], times: dict[int, int]) -> tuple[PartitionTotals, dict]:
    totals = PartitionTotals(PartitionLayout(metadata), SCHEMA, None, PROJECTED, times)
    arrow = pa.schema([totals.decoder.schema.field(c) for c in PartitionTotals.COLUMNS])
    if not totals.keyed:
        arrow = arrow.set(arrow.get_field_index("partition"), pa.field("partition", pa.struct([])))
        entries = [{**e, "partition": {}} for e in entries]
    got = totals.totals(pa.Table.from_pylist(entries, schema=arrow))
    assert got.schema == totals.schema
    rows = {}
    for r in got.to_pylist():
        key = (r["partition"]["k"], r["partition"]["s"], r["_projected"]) if totals.keyed else ()
        assert key not in rows, "a partition tuple in two rows of one task's totals"
        rows[key] = ([r[name] for name, _, _ in PARTITION_TOTALS], (r["_ts"], r["_snapshot_id"], r["_spec_id"]))
    return totals, rows


@settings(max_examples=150, deadline=None)
@given(st.lists(_entry, max_size=40), _times)
def test_a_task_s_totals_are_the_files_totals(entries, times):
    totals, rows = _totals(PARTITIONED, entries, times)
    assert totals.keyed
    assert rows == _reference(entries, times, keyed=True)


@settings(max_examples=50, deadline=None)
@given(st.lists(_entry, max_size=20), _times)
def test_an_unpartitioned_table_s_totals_are_one_row_or_none(entries, times):
    totals, rows = _totals(UNPARTITIONED_TABLE, entries, times)
    assert not totals.keyed
    assert rows == _reference(entries, times, keyed=False)
    assert len(rows) == (1 if any(e["status"] != 2 for e in entries) else 0)


def test_the_most_recent_file_is_the_latest_commit_then_the_greatest_snapshot_and_spec():
    base = {"status": 1, "content": 0, "partition": {"k": 1, "s": "a"}, "record_count": 1, "file_size_in_bytes": 1}
    entries = [{**base, "snapshot_id": 11, "spec_id": 0}, {**base, "snapshot_id": 14, "spec_id": 0},
               {**base, "snapshot_id": 13, "spec_id": 2}, {**base, "snapshot_id": 12, "spec_id": 0}]
    # 13 and 14 committed at the same time: the greater snapshot id; 12 has no known time: never the most recent
    _, rows = _totals(PARTITIONED, entries, {11: 1000, 13: 3000, 14: 3000})
    assert rows == {(1, "a", 2): ([4, 4, 4, 0, 0, 0, 0], (3000, 14, 0))}
    _, rows = _totals(PARTITIONED, entries, {})
    assert rows[(1, "a", 2)][1] == (None, 14, 0)


@pytest.mark.parametrize("metadata", [PARTITIONED, UNPARTITIONED_TABLE])
def test_no_live_entry_makes_no_row(metadata):
    dead = {"status": 2, "snapshot_id": 11, "content": 0, "spec_id": 0, "partition": {"k": 1, "s": "a"},
            "record_count": 5, "file_size_in_bytes": 5}
    assert _totals(metadata, [dead], {11: 1})[1] == {}
    assert _totals(metadata, [], {})[1] == {}
