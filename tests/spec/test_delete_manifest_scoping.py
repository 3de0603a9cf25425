"""Which delete manifests may hold deletes for a data manifest (distributed planning without equality deletes):
position deletes and deletion vectors apply only within their own spec and partition (spec "Scan Planning"),
so a delete manifest whose partition summaries cannot overlap a data manifest's holds none for it."""
from sparkberg.avro.manifest import MANIFEST_DATA, MANIFEST_DELETES, FieldSummary, ManifestFile
from sparkberg.planning.scan import overlapping_delete_manifests
from sparkberg.spec import types as T
from sparkberg.spec import updates as U
from sparkberg.spec.partitioning import PartitionField, PartitionSpec
from sparkberg.spec.transforms import BucketTransform, IdentityTransform, TruncateTransform
from sparkberg.spec.values import to_bytes

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
