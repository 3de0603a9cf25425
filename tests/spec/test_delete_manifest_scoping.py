"""Which delete manifests may hold deletes for a data manifest (distributed planning without equality deletes):
position deletes and deletion vectors apply only within their own spec and partition (spec "Scan Planning"),
so a delete manifest whose partition summaries cannot overlap a data manifest's holds none for it."""
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkberg.format.manifests import MANIFEST_DATA, MANIFEST_DELETES, FieldSummary, ManifestFile
from sparkberg.planning.scan import overlapping_delete_manifests
from sparkberg.format import types as T
from sparkberg.format import updates as U
from sparkberg.format.partitioning import PartitionField, PartitionSpec
from sparkberg.format.transforms import BucketTransform, IdentityTransform, TruncateTransform
from sparkberg.format.values import to_bytes

SCHEMA = T.Schema([T.NestedField(1, "id", T.LONG, True), T.NestedField(2, "d", T.DATE),
                   T.NestedField(3, "s", T.STRING)])
SPEC = PartitionSpec(0, [PartitionField(2, 1000, IdentityTransform(), "d"),
                         PartitionField(1, 1001, BucketTransform(8), "b"),
                         PartitionField(3, 1002, TruncateTransform(2), "s")])
METADATA = U.apply_all([U.AddPartitionSpec(PartitionSpec(1, []))],
                       U.new_table_metadata(SCHEMA, "file:///wh/t", SPEC, format_version=2, fresh_ids=False))


def _summary(lo, hi, t, nulls=False):
    return FieldSummary(nulls, None, None if lo is None else to_bytes(t, lo), None if hi is None else to_bytes(t, hi))


def _manifest(name, content, days=None, buckets=None, strings=("aa", "ab"), spec_id=0, nulls=False):
    parts = None if days is None else (_summary(*days, T.DATE, nulls), _summary(*buckets, T.INT),
                                       _summary(*strings, T.STRING))
    return ManifestFile(f"file:///wh/t/metadata/{name}.avro", 100, spec_id, added_snapshot_id=1, content=content,
                        sequence_number=1, partitions=parts)


def test_delete_manifests_are_kept_where_their_partitions_may_overlap():
    data = [_manifest("d0", MANIFEST_DATA, (10, 12), (0, 7)),
            _manifest("d1", MANIFEST_DATA, (20, 20), (3, 3)),
            _manifest("d2", MANIFEST_DATA),  # no summaries: every delete manifest of its spec
            _manifest("d3", MANIFEST_DATA, (None, None), (0, 7), nulls=True)]  # only null days
    deletes = [_manifest("x0", MANIFEST_DELETES, (12, 15), (0, 7)),  # shares day 12 with d0
               _manifest("x1", MANIFEST_DELETES, (16, 19), (3, 3)),  # between d0's and d1's days
               _manifest("x2", MANIFEST_DELETES, (20, 25), (4, 5)),  # d1's day, not its bucket
               _manifest("x3", MANIFEST_DELETES, (None, None), (0, 0), nulls=True),  # null days, like d3
               _manifest("x4", MANIFEST_DELETES, spec_id=1),  # unpartitioned: global equality deletes
               _manifest("x5", MANIFEST_DELETES),  # no summaries
               _manifest("x6", MANIFEST_DELETES, (10, 10), (0, 0), strings=("zz", "zz"))]  # strings: not compared
    assert overlapping_delete_manifests(METADATA, data, deletes) == [
        (0, 4, 5, 6), (4, 5), (0, 1, 2, 3, 4, 5, 6), (3, 4, 5)]


def test_a_data_manifest_of_another_spec_gets_only_its_own_specs_deletes():
    data = [_manifest("u", MANIFEST_DATA, spec_id=1)]
    deletes = [_manifest("x0", MANIFEST_DELETES, (12, 15), (0, 7)), _manifest("x1", MANIFEST_DELETES, spec_id=1)]
    assert overlapping_delete_manifests(METADATA, data, deletes) == [(1,)]
    assert overlapping_delete_manifests(METADATA, data, []) == [()]


def _may_overlap(data: ManifestFile, delete: ManifestFile) -> bool:
    """The rule pair by pair: on every integral field (day, bucket), unknown summaries overlap, two that
    both contain nulls overlap, and bounds overlap when both are known and the ranges meet."""
    if data.partition_spec_id != delete.partition_spec_id:
        return False
    if data.partitions is None or delete.partitions is None:
        return True
    for k, t in ((0, T.DATE), (1, T.INT)):
        a, b = data.partitions[k], delete.partitions[k]
        if a.contains_null and b.contains_null:
            continue
        if None in (a.lower_bound, a.upper_bound, b.lower_bound, b.upper_bound):
            return False
        lo, hi = (int.from_bytes(x, "little", signed=True) for x in (a.lower_bound, a.upper_bound))
        d_lo, d_hi = (int.from_bytes(x, "little", signed=True) for x in (b.lower_bound, b.upper_bound))
        if d_lo > hi or lo > d_hi:
            return False
    return True


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.one_of(st.none(), st.tuples(
    st.tuples(st.integers(0, 30), st.integers(0, 5)), st.tuples(st.integers(0, 7), st.integers(0, 3)),
    st.booleans()))), min_size=1, max_size=40), st.integers(0, 39))
def test_vectorized_overlap_equals_the_rule_pair_by_pair(manifests, split):
    made = []
    for i, (is_data, summary) in enumerate(manifests):
        if summary is None:
            m = _manifest(f"m{i}", MANIFEST_DATA if is_data else MANIFEST_DELETES)
        else:
            (day, width), (bucket, bwidth), nulls = summary
            m = _manifest(f"m{i}", MANIFEST_DATA if is_data else MANIFEST_DELETES, (day, day + width),
                          (bucket, bucket + bwidth), nulls=nulls)
        made.append(m)
    data = [m for m in made if m.content == MANIFEST_DATA]
    deletes = [m for m in made if m.content == MANIFEST_DELETES][:split]
    assert overlapping_delete_manifests(METADATA, data, deletes) == [
        tuple(j for j, d in enumerate(deletes) if _may_overlap(m, d)) for m in data]
