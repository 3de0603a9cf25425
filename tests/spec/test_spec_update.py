"""Partition evolution (spec "Partition Evolution", Iceberg Java's ``BaseUpdatePartitionSpec`` rules): field ids
reused or assigned, Java's names for evolved fields, v1's void fields, and each broken rule a named error."""
import pytest

from sparkberg.errors import ValidationError
from sparkberg.format import types as T
from sparkberg.format.partitioning import PartitionField, PartitionSpec
from sparkberg.format.spec_update import SpecUpdate, evolved_name
from sparkberg.format.transforms import parse_transform

SCHEMA = T.Schema([T.NestedField(1, "id", T.LONG), T.NestedField(2, "ts", T.TIMESTAMP),
                   T.NestedField(3, "s", T.STRING), T.NestedField(4, "region", T.STRING)])


def field(source, fid, transform, name):
    return PartitionField(source, fid, parse_transform(transform), name)


CURRENT = PartitionSpec(1, [field(2, 1000, "day", "ts_day"), field(4, 1001, "identity", "region")])
OLDER = PartitionSpec(0, [field(1, 1002, "bucket[8]", "shard")])


def update(version=2, spec=CURRENT, specs=(OLDER, CURRENT), last=1002):
    return SpecUpdate(spec, tuple(specs), SCHEMA, last, version)


def test_java_names_for_evolved_fields():
    assert [evolved_name(parse_transform(t), "c") for t in
            ("identity", "bucket[8]", "truncate[4]", "year", "month", "day", "hour", "void")] == \
        ["c", "c_bucket_8", "c_trunc_4", "c_year", "c_month", "c_day", "c_hour", "c_null"]


def test_adds_removes_renames_and_reused_ids():
    u = update().add_field("truncate(s, 4)").add_field("bucket(8, id)").remove_field("region")
    u.rename_field("ts_day", "day")
    spec = u.apply()
    assert [(f.field_id, f.name, str(f.transform)) for f in spec.fields] == [
        (1000, "day", "day"), (1003, "s_trunc_4", "truncate[4]"), (1002, "shard", "bucket[8]")]  # shard: reused
    assert u.last_partition_id == 1003
    named = update().add_field("bucket(8, id)", name="b").apply()
    assert [(f.field_id, f.name) for f in named.fields][-1] == (1003, "b")  # another name: a new field
    readded = update().remove_field("region").add_field("region").apply()
    assert [f.name for f in readded.fields] == ["ts_day", "region"]  # the removal cancelled
    swapped = update().remove_field("ts_day").add_field("hour(ts)").apply()
    assert [(f.field_id, f.name) for f in swapped.fields] == [(1001, "region"), (1003, "ts_hour")]
    assert [f.name for f in update().remove_field("day(ts)").apply().fields] == ["region"]  # by expression


def test_v1_keeps_removed_fields_as_void_and_renames_them_when_a_new_field_takes_the_name():
    u = update(1, specs=(CURRENT,), last=1001).remove_field("region").add_field("region", name="region")
    assert [(f.field_id, f.name, str(f.transform)) for f in u.apply().fields] == [
        (1000, "ts_day", "day"), (1001, "region", "identity")]  # re-added: the removal cancelled
    u = update(1, specs=(CURRENT,), last=1001).remove_field("ts_day").add_field("month(ts)", name="ts_day")
    assert [(f.field_id, f.name, str(f.transform)) for f in u.apply().fields] == [
        (1000, "ts_day_1000", "void"), (1001, "region", "identity"), (1002, "ts_day", "month")]


@pytest.mark.parametrize("change,message", [
    (lambda u: u.add_field("day(ts)"), "already has it as 'ts_day'"),
    (lambda u: u.add_field("hour(ts)"), "already partitions 'ts' by time"),
    (lambda u: u.add_field("bucket(4, s)").add_field("bucket(4, s)"), "twice"),
    (lambda u: u.add_field("s", name="region"), "has a field of that name"),
    (lambda u: u.add_field("bucket(4, nope)"), "cannot find field 'nope'"),
    (lambda u: u.add_field("day(s)"), "day"),
    (lambda u: u.remove_field("nope"), "no such field"),
    (lambda u: u.add_field("s").remove_field("s"), "added in this update"),
    (lambda u: u.rename_field("region", "r").remove_field("region"), "rename and remove"),
    (lambda u: u.remove_field("region").rename_field("region", "r"), "removed in this update"),
    (lambda u: u.rename_field("region", "ts_day").apply(), "two fields named 'ts_day'"),
])
def test_broken_rules_are_named_errors(change, message):
    with pytest.raises(ValidationError, match=message):
        change(update())
