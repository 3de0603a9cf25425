"""Table metadata v1/v2/v3: the conformance JSON examples parse, re-serialize to an equal model, and bad
metadata gets an error naming the file and the field."""
import copy
import gzip
import json
import os

import pytest

from sparkberg.errors import InvalidMetadataError, UnsupportedFormatVersionError
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.snapshots import BRANCH, TAG, SnapshotRef
from sparkberg.format.transforms import BucketTransform, DayTransform
from sparkberg.format import types as T

DATA = os.path.join(os.path.dirname(__file__), "data")


def load(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


@pytest.mark.parametrize("name", ["TableMetadataV1Valid.json", "TableMetadataV2Valid.json", "TableMetadataV3Valid.json"])
def test_roundtrip(name):
    m = TableMetadata.from_json(load(name), name)
    again = TableMetadata.from_json(json.loads(m.to_json_bytes()))
    assert again == m
    assert again.to_json() == m.to_json()
    assert b"\n" not in m.to_json_bytes()  # compact, as Iceberg Java writes metadata files


def test_v2_example():
    m = TableMetadata.from_json(load("TableMetadataV2Valid.json"))
    assert m.format_version == 2 and m.last_sequence_number == 34
    assert m.current_schema.schema_id == 1 and m.current_schema.identifier_field_ids == (1, 2)
    assert m.current_schema.find_field("y").doc == "comment"
    assert [str(f.transform) for f in m.sort_order().fields] == ["identity", "bucket[4]"]
    assert m.sort_order().fields[1].direction == "desc"
    assert m.current_snapshot.snapshot_id == 3055729675574597004
    assert m.refs["main"] == SnapshotRef(3055729675574597004, BRANCH)  # implied by current-snapshot-id
    assert [s.snapshot_id for s in m.ancestors(m.current_snapshot_id)] == [3055729675574597004, 3051729675574597004]
    assert m.snapshot_as_of(1515100955770 + 1).snapshot_id == 3051729675574597004
    assert m.snapshot_as_of(1).__class__ is type(None)


def test_v1_example_reads_deprecated_fields_and_writes_both_forms():
    m = TableMetadata.from_json(load("TableMetadataV1Valid.json"))
    assert m.current_snapshot_id is None  # -1 means none (Appendix F)
    assert m.last_sequence_number == 0
    assert m.default_spec.fields[0].field_id == 1000
    out = m.to_json()
    assert out["schema"] == m.current_schema.to_json()
    assert out["partition-spec"] == [{"name": "x", "transform": "identity", "source-id": 1, "field-id": 1000}]
    assert "last-sequence-number" not in out
    assert out["current-snapshot-id"] == -1


def test_v1_partition_spec_without_field_ids_gets_1000_up():
    obj = load("TableMetadataV1Valid.json")
    obj["partition-spec"] = [{"name": "x", "transform": "identity", "source-id": 1},
                             {"name": "y", "transform": "bucket[4]", "source-id": 2}]
    m = TableMetadata.from_json(obj)
    assert [f.field_id for f in m.default_spec.fields] == [1000, 1001]
    assert m.last_partition_id == 1001


def test_v3_example():
    m = TableMetadata.from_json(load("TableMetadataV3Valid.json"))
    assert m.next_row_id == 1375
    s = m.current_snapshot
    assert (s.first_row_id, s.added_rows, s.key_id) == (1000, 375, "k1")
    assert m.refs["audit"].min_snapshots_to_keep == 2 and m.refs["audit"].max_snapshot_age_ms == 86400000
    assert m.refs["v1.0"].type == TAG and m.refs["v1.0"].max_ref_age_ms == 10000000
    assert m.statistics[0].blob_metadata[0].properties == {"ndv": "3"}
    assert m.partition_statistics[0].file_size_in_bytes == 43
    assert m.encryption_keys[0].encrypted_by_id == "kms"
    schema = m.current_schema
    assert schema.find_field("ts").field_type == T.TIMESTAMPTZ_NS
    assert schema.find_field("v").field_type == T.VARIANT
    assert schema.find_field("shape").field_type == T.GeometryType("srid:4326")
    assert (schema.find_field("n").initial_default, schema.find_field("n").write_default) == (7, 8)
    assert m.default_spec.fields[0].transform == DayTransform()
    assert m.default_spec.fields[1].transform == BucketTransform(16)
    assert m.snapshot_for_ref("v1.0").snapshot_id == 1
    assert "current-snapshot-id" in m.to_json()


def test_early_v3_draft_row_lineage_field_is_read_and_preserved():
    # seed-002: `row-lineage` boolean; next-row-id present once row lineage is enabled
    obj = load("TableMetadataV3Valid.json")
    obj["row-lineage"] = True
    m = TableMetadata.from_json(obj)
    assert m.row_lineage is True
    assert m.to_json()["row-lineage"] is True
    obj2 = load("TableMetadataV3Valid.json")
    del obj2["next-row-id"]
    obj2["row-lineage"] = False
    m2 = TableMetadata.from_json(obj2)
    assert m2.row_lineage is False and m2.next_row_id == 0


def test_unknown_top_level_fields_are_preserved():
    obj = load("TableMetadataV2Valid.json")
    obj["x-custom"] = {"a": 1}
    m = TableMetadata.from_json(obj)
    assert m.to_json()["x-custom"] == {"a": 1}


def test_gzip_metadata_is_read():
    raw = json.dumps(load("TableMetadataV2Valid.json")).encode()
    m = TableMetadata.from_bytes(gzip.compress(raw), "v3.gz.metadata.json")
    assert m == TableMetadata.from_bytes(raw)


def test_metadata_is_read_only():
    m = TableMetadata.from_json(load("TableMetadataV2Valid.json"))
    with pytest.raises(TypeError):
        m.properties["x"] = "y"
    with pytest.raises(Exception):
        m.format_version = 3


def _mutated(name, fn):
    obj = load(name)
    fn(obj)
    return obj


BAD = [
    ("format-version-4", lambda o: o.update({"format-version": 4}), UnsupportedFormatVersionError, "format-version"),
    ("format-version-missing", lambda o: o.pop("format-version"), InvalidMetadataError, "format-version"),
    ("format-version-string", lambda o: o.update({"format-version": "2"}), InvalidMetadataError, "format-version"),
    ("location-missing", lambda o: o.pop("location"), InvalidMetadataError, "location"),
    ("uuid-missing-v2", lambda o: o.pop("table-uuid"), InvalidMetadataError, "table-uuid"),
    ("schemas-missing", lambda o: o.pop("schemas"), InvalidMetadataError, "schemas"),
    ("schema-id-unknown", lambda o: o.update({"current-schema-id": 9}), InvalidMetadataError, "current-schema-id"),
    ("spec-id-unknown", lambda o: o.update({"default-spec-id": 9}), InvalidMetadataError, "default-spec-id"),
    ("sort-order-unknown", lambda o: o.update({"default-sort-order-id": 9}), InvalidMetadataError,
     "default-sort-order-id"),
    ("current-snapshot-unknown", lambda o: o.update({"current-snapshot-id": 9}), InvalidMetadataError,
     "current-snapshot-id"),
    ("ref-to-unknown-snapshot", lambda o: o.update({"refs": {"b": {"snapshot-id": 5, "type": "branch"}}}),
     InvalidMetadataError, "refs"),
    ("bad-ref-type", lambda o: o.update({"refs": {"b": {"snapshot-id": 3051729675574597004, "type": "x"}}}),
     InvalidMetadataError, "refs"),
    ("snapshot-without-manifest-list", lambda o: o["snapshots"][0].pop("manifest-list"), InvalidMetadataError,
     "snapshots"),
    ("unknown-type", lambda o: o["schemas"][0]["fields"][0].update({"type": "money"}), InvalidMetadataError,
     "schemas"),
    ("last-column-id-too-low", lambda o: o.update({"last-column-id": 1}), InvalidMetadataError, "last-column-id"),
    ("last-updated-not-int", lambda o: o.update({"last-updated-ms": "x"}), InvalidMetadataError, "last-updated-ms"),
    ("bad-sort-direction", lambda o: o["sort-orders"][0]["fields"][0].update({"direction": "up"}),
     InvalidMetadataError, "sort-orders"),
]


@pytest.mark.parametrize("name,mutate,error,fieldname", BAD, ids=[b[0] for b in BAD])
def test_bad_metadata_is_named(name, mutate, error, fieldname):
    obj = _mutated("TableMetadataV2Valid.json", mutate)
    with pytest.raises(error) as e:
        TableMetadata.from_json(obj, "s3://b/t/metadata/v7.metadata.json")
    assert "s3://b/t/metadata/v7.metadata.json" in str(e.value)
    assert fieldname in str(e.value)


def test_snapshots_committed_while_v1_have_sequence_number_0_in_an_upgraded_table():
    # A v1 table upgraded to v2 keeps the snapshots it committed as v1, which carry no sequence number; the spec
    # gives v1 data and file sequence numbers as 0, and Iceberg Java and PyIceberg read them so.
    obj = _mutated("TableMetadataV2Valid.json", lambda o: o["snapshots"][0].pop("sequence-number"))
    m = TableMetadata.from_json(obj, "v3.metadata.json")
    old = m.snapshot_by_id(obj["snapshots"][0]["snapshot-id"])
    assert old.sequence_number is None and old.data_sequence_number == 0
    assert m.current_snapshot.data_sequence_number == obj["snapshots"][1]["sequence-number"]
    again = m.to_json()
    assert "sequence-number" not in again["snapshots"][0]  # written back as it was read
    assert TableMetadata.from_json(again) == m


def test_v3_requires_next_row_id():
    with pytest.raises(InvalidMetadataError, match="next-row-id"):
        TableMetadata.from_json(_mutated("TableMetadataV3Valid.json", lambda o: o.pop("next-row-id")), "f.json")


@pytest.mark.parametrize("data,message", [
    (b"", "empty"), (b"{\"format-version\": 2, ", "malformed or truncated"), (b"[1, 2]", "JSON object"),
    (b"\x1f\x8b\x08\x00garbage", "gzip"), (b"\xff\xfe", "malformed"),
])
def test_malformed_files(data, message):
    with pytest.raises(InvalidMetadataError, match=message) as e:
        TableMetadata.from_bytes(data, "/wh/t/metadata/v1.metadata.json")
    assert "/wh/t/metadata/v1.metadata.json" in str(e.value)


def test_truncated_real_file():
    raw = json.dumps(load("TableMetadataV3Valid.json")).encode()
    for cut in (10, len(raw) // 2, len(raw) - 1):
        with pytest.raises(InvalidMetadataError):
            TableMetadata.from_bytes(raw[:cut], "v1.metadata.json")


def test_copy_does_not_alias():
    m = TableMetadata.from_json(load("TableMetadataV3Valid.json"))
    j = m.to_json()
    j2 = copy.deepcopy(j)
    j["properties"]["x"] = "y"
    assert m.to_json() == j2
