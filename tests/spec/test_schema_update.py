"""Schema evolution rules (spec "Schema Evolution"), each change and each broken rule once, on a schema with nested
structs, lists and maps: the builder applies them all at once to the schema as it was."""
import pytest

from sparkberg.errors import ValidationError
from sparkberg.format import types as T
from sparkberg.format.partitioning import PartitionField, PartitionSpec, SortField, SortOrder
from sparkberg.format.schema_update import SchemaUpdate
from sparkberg.format.transforms import parse_transform

PRIMITIVES = {"int": T.INT, "bigint": T.LONG, "long": T.LONG, "float": T.FLOAT, "double": T.DOUBLE,
              "string": T.STRING, "date": T.DATE, "timestamp_ntz": T.TIMESTAMP, "decimal(9,2)": T.DecimalType(9, 2),
              "decimal(12,2)": T.DecimalType(12, 2), "decimal(12,3)": T.DecimalType(12, 3)}


def parse(text):
    if text == "struct<a: int, b: string>":
        return T.StructType([T.NestedField(1, "a", T.INT), T.NestedField(2, "b", T.STRING)])
    return PRIMITIVES[text]


SCHEMA = T.Schema([
    T.NestedField(1, "id", T.LONG, required=True),
    T.NestedField(2, "n", T.INT),
    T.NestedField(3, "address", T.StructType([T.NestedField(6, "street", T.STRING),
                                              T.NestedField(7, "city", T.STRING)])),
    T.NestedField(4, "points", T.ListType(8, T.StructType([T.NestedField(10, "x", T.INT),
                                                           T.NestedField(11, "y", T.INT)]))),
    T.NestedField(5, "attrs", T.MapType(12, T.STRING, 13, T.StructType([T.NestedField(14, "b", T.FLOAT)]))),
    T.NestedField(15, "legacy", T.STRING),
    T.NestedField(16, "d", T.DATE),
    T.NestedField(17, "price", T.DecimalType(9, 2)),
], 3, identifier_field_ids=(1,))
SPEC = PartitionSpec(0, [PartitionField(16, 1000, parse_transform("day"), "d_day")])
ORDER = SortOrder(1, [SortField(7, parse_transform("identity"), "asc", "nulls-first")])


def update(version=2):
    return SchemaUpdate(SCHEMA, 17, version, SPEC, ORDER, parse)


def names(schema):
    return sorted(schema.index_by_name())


def test_every_change_at_every_depth_in_one_update():
    u = update(3)
    u.add_column("address.zip", "string", doc="postal code", after="address.street")
    u.add_column("points.element.z", "bigint")
    u.add_column("attrs.value.c", "struct<a: int, b: string>")
    u.add_column("flag", "int", required=True, default=7)
    u.rename_column("n", "count").rename_column("address.city", "town").rename_column("points.element.x", "px")
    u.delete_column("legacy")
    u.update_column("n", None, doc="how many")  # (by its old name: paths name the schema before the update)
    u.update_column("n", "bigint").update_column("points.element.y", "long").update_column("attrs.value.b", "double")
    u.update_column("price", "decimal(12,2)").update_column("d", "timestamp_ntz")
    u.make_optional("id").set_identifier_fields()
    u.move_first("flag").move_after("address", "attrs")
    s = u.apply()
    assert [f.name for f in s.fields] == ["flag", "id", "count", "points", "attrs", "address", "d", "price"]
    by = s.index_by_name()
    assert [f.name for f in by["address"].field_type.fields] == ["street", "zip", "town"]
    assert by["address.zip"].doc == "postal code" and by["address.town"].field_id == 7  # renamed, same id
    assert (by["count"].field_id, by["count"].field_type, by["count"].doc) == (2, T.LONG, "how many")
    assert by["points.element.y"].field_type == T.LONG and by["points.element.px"].field_id == 10
    assert by["attrs.value.b"].field_type == T.DOUBLE and by["price"].field_type == T.DecimalType(12, 2)
    assert by["d"].field_type == T.TIMESTAMP and not by["id"].required and s.identifier_field_ids == ()
    assert (by["flag"].required, by["flag"].initial_default, by["flag"].write_default) == (True, 7, 7)
    assert [by[p].field_id for p in ("address.zip", "points.element.z", "attrs.value.c", "attrs.value.c.a",
                                     "attrs.value.c.b", "flag")] == [18, 19, 20, 21, 22, 23]  # fresh, in order
    assert "legacy" not in by and u.last_column_id == 23


@pytest.mark.parametrize("change,message", [
    (lambda u: u.add_column("id", "int"), "a column of that name already exists"),
    (lambda u: u.add_column("ADDRESS.Street", "int"), "already exists"),
    (lambda u: u.add_column("n.x", "int"), "it is a int, not a struct"),
    (lambda u: u.add_column("req", "int", required=True), "required column 'req' without a default"),
    (lambda u: u.add_column("dflt", "int", default=1), "need format version 3"),
    (lambda u: u.add_column("nope.x", "int"), "cannot find column 'nope'"),
    (lambda u: u.rename_column("n", "id"), "a column of that name already exists"),
    (lambda u: u.rename_column("points.element", "e"), "fixed names"),
    (lambda u: u.delete_column("id"), "identifier field"),
    (lambda u: u.delete_column("d"), "partition field 'd_day'"),
    (lambda u: u.delete_column("address"), "sort order uses it"),
    (lambda u: u.update_column("n", "string"), "not a valid type promotion"),
    (lambda u: u.update_column("id", "int"), "not a valid type promotion"),
    (lambda u: u.update_column("price", "decimal(12,3)"), "not a valid type promotion"),
    (lambda u: u.update_column("d", "timestamp_ntz"), "not a valid type promotion for a v2 table"),
    (lambda u: u.update_column("address", "string"), "only primitive types are promoted"),
    (lambda u: u.move_after("n", "address.city"), "not in the same struct"),
    (lambda u: u.move_before("n", "n"), "relative to itself"),
    (lambda u: u.delete_column("legacy").rename_column("legacy", "x"), "deleted in this update"),
    (lambda u: u.delete_column("attrs").update_column("attrs.value.b", "double"), "deleted in this update"),
])
def test_broken_rules_are_named_errors(change, message):
    with pytest.raises(ValidationError, match=message):
        change(update())


@pytest.mark.parametrize("transform,allowed", [("day", True), ("month", True), ("year", True), ("identity", False),
                                               ("bucket[4]", False)])
def test_a_date_promoted_to_timestamp_keeps_its_partition_values(transform, allowed):
    """Spec: no promotion of a partition source whose transform would give a different value."""
    spec = PartitionSpec(0, [PartitionField(16, 1000, parse_transform(transform), "d_part")])
    u = SchemaUpdate(SCHEMA, 17, 3, spec, ORDER, parse)
    if allowed:
        assert u.update_column("d", "timestamp_ntz").apply().find_field("d").field_type == T.TIMESTAMP
    else:
        with pytest.raises(ValidationError, match="partition field 'd_part' of the current spec would change value"):
            u.update_column("d", "timestamp_ntz")


@pytest.mark.parametrize("paths,message", [
    (("n",), "must be required"),
    (("nope",), "no such column"), (("attrs.value.b",), "primitive non-floating"),
])
def test_identifier_fields_are_checked_on_the_result(paths, message):
    with pytest.raises(ValidationError, match=message):
        update().set_identifier_fields(*paths).apply()


def test_union_by_name_numbers_a_structs_new_fields_before_its_parents_as_java():
    # Java's UnionByNameVisitor is depth first: a new top-level column given before a struct that gains a field
    # takes its id after that field's (and after fields gained in list elements and map values)
    other = T.StructType([
        T.NestedField(1, "note", T.STRING),
        T.NestedField(2, "address", T.StructType([T.NestedField(3, "zip", T.STRING)])),
        T.NestedField(4, "points", T.ListType(5, T.StructType([T.NestedField(6, "z", T.LONG)]))),
        T.NestedField(7, "attrs", T.MapType(8, T.STRING, 9, T.StructType([T.NestedField(10, "c", T.INT)]))),
        T.NestedField(11, "e", T.INT),
    ])
    by = update().union_by_name(other).apply().index_by_name()
    assert [by[n].field_id for n in ("address.zip", "points.element.z", "attrs.value.c", "note", "e")] == \
        [18, 19, 20, 21, 22]


def test_union_by_name_adds_widens_and_relaxes_but_never_deletes():
    other = T.StructType([
        T.NestedField(1, "ID", T.LONG),  # optional here: made optional (matched case-insensitively)
        T.NestedField(2, "n", T.LONG),  # promoted
        T.NestedField(3, "address", T.StructType([T.NestedField(4, "zip", T.STRING)])),  # nested add
        T.NestedField(5, "points", T.ListType(6, T.StructType([T.NestedField(7, "x", T.INT)]), False)),
        T.NestedField(8, "new", T.ListType(9, T.INT)),
    ])
    s = update().union_by_name(other).set_identifier_fields().apply()
    by = s.index_by_name()
    assert not by["id"].required and by["n"].field_type == T.LONG and by["address.zip"].field_type == T.STRING
    assert names(s) == sorted(names(SCHEMA) + ["address.zip", "new", "new.element"])
    assert (by["address.zip"].field_id, by["new"].field_id, by["new.element"].field_id) == (18, 19, 20)
    narrower = T.StructType([T.NestedField(1, "n", T.INT), T.NestedField(2, "id", T.INT, required=True)])
    assert update().union_by_name(narrower).apply().find_field("id").field_type == T.LONG  # int fits in long
    with pytest.raises(ValidationError, match="cannot change column 'legacy' from string to int"):
        update().union_by_name(T.StructType([T.NestedField(1, "legacy", T.INT)]))
    with pytest.raises(ValidationError, match="cannot union column 'address'"):
        update().union_by_name(T.StructType([T.NestedField(1, "address", T.STRING)]))


def test_a_nested_columns_position_names_a_sibling_in_its_struct():
    # (issue 90, item 14: ALTER TABLE ... ADD COLUMN address.country string AFTER street, as Spark names the
    # position: a field of the same struct)
    u = update()
    u.add_column("address.country", "string", after="street")
    u.move_after("address.street", "city")
    address = u.apply().find_field("address").field_type
    assert [f.name for f in address.fields] == ["country", "city", "street"]
    u = update()
    u.add_column("address.zip", "string", after="address.street")  # (a path from the top, as before)
    assert [f.name for f in u.apply().find_field("address").field_type.fields] == ["street", "zip", "city"]
    with pytest.raises(ValidationError, match="not in the same struct"):
        update().add_column("address.zip", "string", after="legacy")
