"""Schemas and types: Appendix C JSON both ways, v3 defaults, validation, and hypothesis round trips."""
import json
import uuid

import pytest
from hypothesis import given, settings, strategies as st

from sparkberg.errors import ValidationError
from sparkberg.format import types as T
from sparkberg.format.types import Schema, parse_type

TYPE_STRINGS = [
    "unknown", "boolean", "int", "long", "float", "double", "date", "time", "timestamp", "timestamptz",
    "timestamp_ns", "timestamptz_ns", "string", "uuid", "fixed[16]", "binary", "decimal(9,2)", "variant",
    "geometry", "geometry(srid:4326)", "geography", "geography(srid:4326, vincenty)",
]


@pytest.mark.parametrize("text", TYPE_STRINGS)
def test_type_strings_roundtrip(text):
    assert parse_type(text).to_json() == text


def test_type_strings_accept_whitespace():
    assert parse_type("decimal(9, 2)") == T.DecimalType(9, 2)
    assert parse_type(" fixed[ 4 ] ") == T.FixedType(4)
    assert parse_type("geography(srid:4326,  spherical)") == T.GeographyType("srid:4326")


def test_unknown_type_is_named():
    with pytest.raises(ValidationError, match="unknown type 'varchar'"):
        parse_type("varchar")
    with pytest.raises(ValidationError, match="precision"):
        parse_type("decimal(39,2)")


# Appendix C: the struct example with uuid defaults, the list example and the map example
APPENDIX_C_STRUCT = {
    "type": "struct",
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "uuid",
         "initial-default": "0db3e2a8-9d1d-42b9-aa7b-74ebe558dceb",
         "write-default": "ec5911be-b0a7-458c-8438-c9a3e53cffae"},
        {"id": 2, "name": "data", "required": False,
         "type": {"type": "list", "element-id": 3, "element-required": True, "element": "string"}},
        {"id": 4, "name": "props", "required": False,
         "type": {"type": "map", "key-id": 5, "key": "string", "value-id": 6, "value-required": False,
                  "value": "double"}},
    ],
}


def test_appendix_c_struct_example():
    t = parse_type(APPENDIX_C_STRUCT)
    f = t.fields[0]
    assert f.initial_default == uuid.UUID("0db3e2a8-9d1d-42b9-aa7b-74ebe558dceb")
    assert f.write_default == uuid.UUID("ec5911be-b0a7-458c-8438-c9a3e53cffae")
    assert t.fields[1].field_type == T.ListType(3, T.STRING, True)
    assert t.fields[2].field_type == T.MapType(5, T.STRING, 6, T.DOUBLE, False)
    assert t.to_json() == APPENDIX_C_STRUCT


def test_schema_json_with_identifier_fields():
    obj = {"type": "struct", "schema-id": 3, "identifier-field-ids": [1],
           "fields": [{"id": 1, "name": "id", "required": True, "type": "long"},
                      {"id": 2, "name": "loc", "required": False, "type": {"type": "struct", "fields": [
                          {"id": 3, "name": "lat", "required": True, "type": "double", "doc": "latitude"}]}}]}
    s = Schema.from_json(obj)
    assert s.schema_id == 3 and s.identifier_field_ids == (1,)
    assert s.find_field("loc.lat").doc == "latitude"
    assert s.find_field(3).name == "lat"
    assert s.to_json() == obj
    assert s.highest_field_id() == 3


def test_struct_default_is_an_empty_object():
    # spec "Default values": a non-null struct default is stored as {} with sub-field defaults
    obj = {"id": 1, "name": "point", "required": False, "initial-default": {}, "write-default": {},
           "type": {"type": "struct", "fields": [
               {"id": 2, "name": "x", "required": True, "type": "int", "initial-default": 0, "write-default": 0},
               {"id": 3, "name": "y", "required": True, "type": "int", "initial-default": 0, "write-default": 0}]}}
    f = T.parse_field(obj)
    assert f.initial_default == {2: None, 3: None}
    assert f.field_type.fields[0].initial_default == 0


@pytest.mark.parametrize("fields,message", [
    ([{"id": 1, "name": "a", "required": True, "type": "int"}, {"id": 1, "name": "b", "required": True, "type": "int"}],
     "duplicate field id 1"),
    ([{"id": 1, "name": "a", "required": True, "type": "int"}, {"id": 2, "name": "a", "required": True, "type": "int"}],
     "duplicate field name 'a'"),
    ([{"id": 1, "name": "u", "required": True, "type": "unknown"}], "must be optional"),
    ([{"id": 1, "name": "v", "required": False, "type": "variant", "initial-default": 1}], "default to null"),
    ([{"id": 1, "name": "a", "type": "int"}], "missing required field 'required'"),
])
def test_invalid_schemas_are_named(fields, message):
    with pytest.raises(ValidationError, match=message):
        Schema.from_json({"type": "struct", "fields": fields})


def test_identifier_fields_rules():
    base = [{"id": 1, "name": "a", "required": False, "type": "int"},
            {"id": 2, "name": "f", "required": True, "type": "double"}]
    with pytest.raises(ValidationError, match="must be required"):
        Schema.from_json({"type": "struct", "identifier-field-ids": [1], "fields": base})
    with pytest.raises(ValidationError, match="non-floating"):
        Schema.from_json({"type": "struct", "identifier-field-ids": [2], "fields": base})


def test_promotions():
    assert T.is_promotion_allowed(T.INT, T.LONG)
    assert T.is_promotion_allowed(T.FLOAT, T.DOUBLE)
    assert T.is_promotion_allowed(T.DecimalType(9, 2), T.DecimalType(18, 2))
    assert not T.is_promotion_allowed(T.DecimalType(9, 2), T.DecimalType(18, 3))
    assert not T.is_promotion_allowed(T.LONG, T.INT)


def test_min_format_version():
    assert T.type_min_format_version(T.TIMESTAMP_NS) == 3
    assert T.type_min_format_version(T.ListType(1, T.VARIANT)) == 3
    assert T.type_min_format_version(T.ListType(1, T.LONG)) == 1


# --- hypothesis: any schema survives JSON ----------------------------------------------------------------
PRIMS = st.sampled_from([T.BOOLEAN, T.INT, T.LONG, T.FLOAT, T.DOUBLE, T.DATE, T.TIME, T.TIMESTAMP, T.TIMESTAMPTZ,
                         T.TIMESTAMP_NS, T.TIMESTAMPTZ_NS, T.STRING, T.UUID, T.BINARY, T.VARIANT, T.UNKNOWN]) | \
    st.builds(T.FixedType, st.integers(1, 64)) | \
    st.builds(T.DecimalType, st.integers(1, 38), st.integers(0, 10))


def _types():
    def nested(children):
        return (
            st.builds(lambda e, r: T.ListType(0, e, r and e != T.UNKNOWN), children, st.booleans())
            | st.builds(lambda k, v, r: T.MapType(0, k, 0, v, r and v != T.UNKNOWN), PRIMS.filter(
                lambda t: t not in (T.VARIANT, T.UNKNOWN)), children, st.booleans())
            | st.lists(st.tuples(st.text("abcxyz_", min_size=1, max_size=6), children, st.booleans()),
                       min_size=1, max_size=3, unique_by=lambda x: x[0]).map(
                lambda fs: T.StructType(T.NestedField(0, n, t, r and t != T.UNKNOWN) for n, t, r in fs)))
    return st.recursive(PRIMS, nested, max_leaves=6)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text("abcdef", min_size=1, max_size=5), _types(), st.booleans(),
                          st.none() | st.text(max_size=10)), min_size=1, max_size=5, unique_by=lambda x: x[0]))
def test_schema_json_roundtrip(fields):
    from sparkberg.format.updates import assign_fresh_ids
    schema = assign_fresh_ids(Schema([T.NestedField(0, n, t, r and t != T.UNKNOWN, doc) for n, t, r, doc in fields]))
    assert len(schema.index_by_id()) == schema.highest_field_id()  # ids are 1..n, unique
    text = json.dumps(schema.to_json())
    again = Schema.from_json(json.loads(text))
    assert again == schema
    assert again.to_json() == schema.to_json()
