"""Pure metadata updates: apply(update, base) -> new metadata; base never changes; errors name values.
Includes the spec's row-lineage example (first-row-id 1000, 375 rows assigned -> next-row-id 1375)."""
import pytest

from sparkberg.errors import CommitFailedException, ValidationError
from sparkberg.format import types as T
from sparkberg.format import updates as U
from sparkberg.format.partitioning import PartitionField, PartitionSpec, SortField, SortOrder
from sparkberg.format.snapshots import Snapshot
from sparkberg.format.transforms import BucketTransform, DayTransform, IdentityTransform

SCHEMA = T.Schema([
    T.NestedField(10, "id", T.LONG, True),
    T.NestedField(20, "ts", T.TIMESTAMPTZ),
    T.NestedField(30, "loc", T.StructType([T.NestedField(31, "lat", T.DOUBLE), T.NestedField(32, "lon", T.DOUBLE)])),
    T.NestedField(40, "tags", T.ListType(41, T.STRING)),
])


def new(version=2, spec=None):
    return U.new_table_metadata(SCHEMA, "file:///wh/db/t", spec, format_version=version, timestamp_ms=1000)


def test_new_table_assigns_fresh_ids():
    m = new(spec=PartitionSpec(0, [PartitionField(20, 1000, DayTransform(), "ts_day")]))
    s = m.current_schema
    assert [f.field_id for f in s.fields] == [1, 2, 3, 4]
    assert s.find_field("loc.lat").field_id == 5 and s.find_field("tags.element").field_id == 7
    assert m.last_column_id == 7
    assert m.default_spec.fields[0].source_id == 2  # follows the column to its new id
    assert m.last_partition_id == 1000
    assert m.table_uuid and m.next_row_id is None
    assert new(3).next_row_id == 0


def test_new_table_rejects_v3_types_in_v2():
    with pytest.raises(ValidationError, match="format-version 3"):
        U.new_table_metadata(T.Schema([T.NestedField(1, "t", T.TIMESTAMP_NS)]), "/x", format_version=2)


def test_upgrade_v1_v2_v3():
    m1 = new(1)
    m2 = U.apply(U.UpgradeFormatVersion(2), m1)
    assert m1.format_version == 1 and m2.format_version == 2
    m3 = U.apply(U.UpgradeFormatVersion(3), m2)
    assert m3.format_version == 3 and m3.next_row_id == 0
    with pytest.raises(ValidationError, match="downgrade"):
        U.apply(U.UpgradeFormatVersion(2), m3)
    with pytest.raises(ValidationError, match="unsupported format version 4"):
        U.apply(U.UpgradeFormatVersion(4), m3)


def snap(sid, parent, seq, first_row_id=None, added_rows=None, ts=2000):
    return Snapshot(sid, ts, parent, seq, f"s3://x/snap-{sid}.avro", None, {"operation": "append"}, 0,
                    first_row_id, added_rows)


def test_row_lineage_example_advances_next_row_id():
    base = U.apply_all([U.UpgradeFormatVersion(3)], new(2))
    base = U.apply_all([U.AddSnapshot(snap(1, None, 1, 0, 1000)), U.SetSnapshotRef("main", 1)], base)
    assert base.next_row_id == 1000
    # spec "Row lineage example": first-row-id 1000; manifests assigned 125 + 100 + 150 = 375 rows
    m = U.apply_all([U.AddSnapshot(snap(2, 1, 2, 1000, 375, 3000)), U.SetSnapshotRef("main", 2)], base)
    assert m.next_row_id == 1375
    assert m.current_snapshot_id == 2 and m.last_sequence_number == 2
    assert [e.snapshot_id for e in m.snapshot_log] == [1, 2]
    with pytest.raises(ValidationError, match="first-row-id 10 is below"):
        U.apply(U.AddSnapshot(snap(3, 2, 3, 10, 5)), m)
    with pytest.raises(ValidationError, match="first-row-id and added-rows"):
        U.apply(U.AddSnapshot(snap(3, 2, 3)), m)


def test_sequence_numbers_must_increase():
    m = U.apply_all([U.AddSnapshot(snap(1, None, 1)), U.SetSnapshotRef("main", 1)], new())
    with pytest.raises(ValidationError, match="sequence number 1 must be greater"):
        U.apply(U.AddSnapshot(snap(2, 1, 1)), m)


def test_branches_tags_and_expiry():
    m = U.apply_all([U.AddSnapshot(snap(1, None, 1)), U.SetSnapshotRef("main", 1),
                     U.AddSnapshot(snap(2, 1, 2, ts=3000)), U.SetSnapshotRef("main", 2),
                     U.SetSnapshotRef("t1", 1, "tag", max_ref_age_ms=5),
                     U.SetSnapshotRef("b1", 1, "branch", min_snapshots_to_keep=3)], new())
    assert m.refs["t1"].type == "tag" and m.refs["b1"].min_snapshots_to_keep == 3
    with pytest.raises(ValidationError, match="is a tag"):
        U.apply(U.SetSnapshotRef("t1", 2, "branch"), m)
    with pytest.raises(ValidationError, match="unknown snapshot 9"):
        U.apply(U.SetSnapshotRef("x", 9), m)
    with pytest.raises(ValidationError, match="current snapshot"):
        U.apply(U.RemoveSnapshots((2,)), m)
    gone = U.apply_all([U.RemoveSnapshots((1,))], m)
    assert [s.snapshot_id for s in gone.snapshots] == [2]
    assert "t1" not in gone.refs and "b1" not in gone.refs
    assert [e.snapshot_id for e in gone.snapshot_log] == [2]
    assert U.apply(U.RemoveSnapshotRef("t1"), m).refs.keys() == {"main", "b1"}


def test_schema_evolution_updates():
    base = new()
    s = base.current_schema
    added = T.Schema(s.fields + (T.NestedField(8, "v", T.STRING),))
    m = U.apply_all([U.AddSchema(added, 8), U.SetCurrentSchema(U.LAST_ADDED)], base)
    assert m.current_schema_id == 1 and m.last_column_id == 8
    again = U.apply_all([U.AddSchema(added, 8), U.SetCurrentSchema(U.LAST_ADDED)], m)
    assert len(again.schemas) == 2  # an identical schema is reused, not added twice
    with pytest.raises(ValidationError, match="no schema was added"):
        U.apply_all([U.SetCurrentSchema(U.LAST_ADDED)], base)
    with pytest.raises(ValidationError, match="format version 3"):
        U.apply(U.AddSchema(T.Schema(s.fields + (T.NestedField(8, "n", T.TIMESTAMP_NS),))), base)


def test_partition_evolution_updates():
    base = new()
    spec = PartitionSpec(0, [PartitionField(1, 1000, BucketTransform(8), "id_bucket")])
    m = U.apply_all([U.AddPartitionSpec(spec), U.SetDefaultSpec(U.LAST_ADDED)], base)
    assert m.default_spec_id == 1 and m.last_partition_id == 1000
    same = U.apply_all([U.AddPartitionSpec(spec), U.SetDefaultSpec(U.LAST_ADDED)], m)
    assert len(same.partition_specs) == 2
    with pytest.raises(ValidationError, match="missing source column id 99"):
        U.apply(U.AddPartitionSpec(PartitionSpec(0, [PartitionField(99, 1001, IdentityTransform(), "x")])), base)
    with pytest.raises(ValidationError, match="cannot be applied"):
        U.apply(U.AddPartitionSpec(PartitionSpec(0, [PartitionField(1, 1001, DayTransform(), "x")])), base)
    with pytest.raises(ValidationError, match="must be primitive"):
        U.apply(U.AddPartitionSpec(PartitionSpec(0, [PartitionField(3, 1001, IdentityTransform(), "x")])), base)
    with pytest.raises(ValidationError, match="list or map"):
        U.apply(U.AddPartitionSpec(PartitionSpec(0, [PartitionField(7, 1001, IdentityTransform(), "x")])), base)


def test_sort_orders_and_properties():
    base = new()
    order = SortOrder(0, [SortField(1, IdentityTransform(), "desc", "nulls-last")])
    m = U.apply_all([U.AddSortOrder(order), U.SetDefaultSortOrder(U.LAST_ADDED)], base)
    assert m.default_sort_order_id == 1
    m = U.apply_all([U.SetProperties({"a": "1", "b": "2"}), U.RemoveProperties(("b",))], m)
    assert dict(m.properties) == {"a": "1", CODEC: "zstd"}
    with pytest.raises(ValidationError, match="reserved"):
        U.apply(U.SetProperties({"format-version": "3"}), m)
    assert base.properties == {CODEC: "zstd"}  # the base is untouched


CODEC = "write.parquet.compression-codec"


def test_new_and_replaced_tables_record_the_parquet_codec_as_java_does():
    """Iceberg Java's ``persistedProperties``: a new table's metadata says zstd unless told otherwise; a replacement
    sets it again (Java's ``buildReplacement`` persists the same defaults)."""
    assert new().properties == {CODEC: "zstd"}
    given = U.new_table_metadata(SCHEMA, "file:///wh/t", properties={CODEC: "gzip", "k": "v"})
    assert given.properties == {CODEC: "gzip", "k": "v"}
    replaced = U.apply_all(U.replacement(given, given.current_schema, PartitionSpec(0, []), SortOrder(0, []),
                                         {"k2": "v2"}), given)
    assert replaced.properties == {CODEC: "zstd", "k": "v", "k2": "v2"}


def test_a_replacement_keeps_ids_by_name_and_history_and_drops_main():
    """Java's ``buildReplacement``: fields of the same full name keep their ids, new ones come after the last
    column id; partition fields of the same source and transform keep theirs; main goes, so no snapshot is
    current; an equal schema or spec is reused, not added again."""
    base = new(spec=PartitionSpec(0, [PartitionField(10, 1000, BucketTransform(4), "id_bucket")]))
    base = U.apply_all([U.AddSnapshot(Snapshot(7, 2000, None, 1, "s3://m/snap.avro", None, {"operation": "append"},
                                               0)), U.SetSnapshotRef("main", 7)], base)
    fields = [f for f in base.current_schema.fields if f.name != "ts"]
    schema = T.Schema([fields[0], T.NestedField(99, "extra", T.STRING, False), *fields[1:]], 0)
    spec = PartitionSpec(0, [PartitionField(fields[0].field_id, 1000, BucketTransform(4), "b"),
                             PartitionField(99, 1001, IdentityTransform(), "extra")])
    m = U.apply_all(U.replacement(base, schema, spec, SortOrder(0, [])), base)
    ids = {f.name: f.field_id for f in m.current_schema.fields}
    old = {f.name: f.field_id for f in base.current_schema.fields}
    assert ids["extra"] == base.last_column_id + 1 and all(ids[n] == old[n] for n in ids if n != "extra")
    assert [(f.field_id, f.source_id) for f in m.default_spec.fields] == [(1000, old["id"]),
                                                                          (base.last_partition_id + 1,
                                                                           ids["extra"])]
    assert m.current_snapshot_id is None and "main" not in m.refs and m.snapshot_by_id(7) is not None
    again = U.apply_all(U.replacement(m, schema, spec, SortOrder(0, [])), m)
    assert len(again.schemas) == len(m.schemas) and len(again.partition_specs) == len(m.partition_specs)


def test_requirements():
    m = new()
    U.AssertTableUUID(m.table_uuid).check(m)
    with pytest.raises(CommitFailedException, match="table uuid changed"):
        U.AssertTableUUID("other").check(m)
    U.AssertRefSnapshotId("main", None).check(m)
    with pytest.raises(CommitFailedException, match="ref 'main' changed"):
        U.AssertRefSnapshotId("main", 5).check(m)
    with pytest.raises(CommitFailedException):
        U.AssertCurrentSchemaId(3).check(m)


def test_last_updated_never_goes_back():
    m = new()
    out = U.apply_all([U.SetProperties({"a": "b"})], m, timestamp_ms=10)
    assert out.last_updated_ms == m.last_updated_ms


def test_the_requirements_a_commit_states_of_its_base():
    # what a REST catalog is sent with a commit's updates: what the server's current metadata must still hold for
    # them to apply (all of it holds on the base they were made on)
    from sparkberg.format.snapshots import StatisticsFile
    base = U.apply_all([U.AddSnapshot(snap(1, None, 1)), U.SetSnapshotRef("main", 1),
                        U.SetSnapshotRef("old-tag", 1, "tag"), U.SetProperties({"keep": "1", "drop": "2"})], new())
    s = base.current_schema
    steps = [
        [U.AddSnapshot(snap(2, 1, 2)), U.SetSnapshotRef("main", 2)],
        [U.AddSchema(T.Schema(s.fields + (T.NestedField(8, "v", T.STRING),)), 8), U.SetCurrentSchema(U.LAST_ADDED)],
        [U.AddPartitionSpec(PartitionSpec(0, [PartitionField(1, 1000, BucketTransform(8), "id_bucket")])),
         U.SetDefaultSpec(U.LAST_ADDED)],
        [U.AddSortOrder(SortOrder(0, [SortField(1, IdentityTransform(), "desc", "nulls-last")])),
         U.SetDefaultSortOrder(U.LAST_ADDED)],
        [U.SetProperties({"keep": "3", "new": "4"}), U.RemoveProperties(("drop",))],
        [U.SetSnapshotRef("audit", 1, "branch", max_ref_age_ms=1000), U.RemoveSnapshotRef("old-tag")],
        [U.SetLocation("file:///wh/moved")],
        [U.SetStatistics(StatisticsFile(1, "file:///wh/s.puffin", 10, 5, ()))],
        [U.UpgradeFormatVersion(3)],
        [U.AddSnapshot(snap(2, 1, 2)), U.SetSnapshotRef("main", 2), U.RemoveSnapshotRef("old-tag"),
         U.RemoveSnapshots((1,))],
    ]
    for updates in steps:
        reqs = U.requirements_for(base, updates)
        for r in reqs:
            r.check(base)  # (all hold on the base they were made from)
        assert reqs[0] == U.AssertTableUUID(base.table_uuid)
    assert U.requirements_for(base, steps[0])[1:] == [U.AssertRefSnapshotId("main", 1)]
    assert U.requirements_for(base, steps[1] + steps[2] + steps[3])[1:] == [
        U.AssertLastAssignedFieldId(base.last_column_id), U.AssertCurrentSchemaId(0),
        U.AssertLastAssignedPartitionId(base.last_partition_id), U.AssertDefaultSpecId(0),
        U.AssertDefaultSortOrderId(0)]
    # a concurrent commit to main fails the requirement the stale change carries
    raced = U.apply_all([U.AddSnapshot(snap(3, 1, 2)), U.SetSnapshotRef("main", 3)], base)
    with pytest.raises(CommitFailedException, match="ref 'main' changed"):
        for r in U.requirements_for(base, steps[0]):
            r.check(raced)
