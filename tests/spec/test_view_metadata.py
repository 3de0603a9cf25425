"""View metadata (the view spec, format version 1), its rules drawn from the spec: the spec's example read and
written back as it is; a format version other than 1, a current version or a schema the metadata lacks, two
queries of one dialect in a version: named errors; a representation of an unknown type kept; a new version's
schema and version reused when equal, else the highest id plus one; ``version.history.num-entries`` honoured
(never the current version dropped, the log cleared before a dropped version); metadata files gzip-compressed as
Java names them (``00001-<uuid>.gz.metadata.json``) unless ``write.metadata.compression-codec=none``; and
PyIceberg 0.12's view model reads what sparkberg writes."""
import copy
import gzip
import json
import re

import pytest

from sparkberg.errors import InvalidMetadataError, UnsupportedFormatVersionError
from sparkberg.format import types as T
from sparkberg.format.views import (
    Representation, ViewMetadata, ViewVersion, new_view, replaced, with_properties,
)

# the view spec's example (Appendix "Example"), as its metadata file holds it
EXAMPLE = {
    "view-uuid": "fa6506c3-7681-40c8-86dc-e36561f83385",
    "format-version": 1,
    "location": "s3://bucket/warehouse/default.db/event_agg",
    "current-version-id": 1,
    "properties": {"comment": "Daily event counts"},
    "versions": [{
        "version-id": 1, "timestamp-ms": 1573518431292, "schema-id": 1, "default-catalog": "prod",
        "default-namespace": ["default"], "summary": {"engine-name": "Spark", "engine-version": "3.3.2"},
        "representations": [{"type": "sql", "sql": "SELECT\n    COUNT(1), CAST(event_ts AS DATE)\nFROM events\n"
                                                   "GROUP BY 2", "dialect": "spark"}]}],
    "schemas": [{"schema-id": 1, "type": "struct", "fields": [
        {"id": 1, "name": "event_count", "required": False, "type": "int", "doc": "Count of events"},
        {"id": 2, "name": "event_date", "required": False, "type": "date"}]}],
    "version-log": [{"timestamp-ms": 1573518431292, "version-id": 1}],
}


def test_the_spec_example_reads_and_writes_back_as_it_is():
    m = ViewMetadata.from_json(copy.deepcopy(EXAMPLE), "example.metadata.json")
    v = m.current_version
    assert (v.version_id, v.schema_id, v.default_catalog, v.default_namespace) == (1, 1, "prod", ("default",))
    assert v.sql("SPARK").startswith("SELECT") and v.sql("trino") is None
    assert [f.name for f in m.schema().fields] == ["event_count", "event_date"]
    assert m.to_json() == EXAMPLE
    assert ViewMetadata.from_bytes(m.to_json_bytes()) == m


@pytest.mark.parametrize("change, message", [
    (lambda o: o.update({"format-version": 2}), "view format version 2 is not supported"),
    (lambda o: o.update({"current-version-id": 7}), "'current-version-id' 7 is not among the versions"),
    (lambda o: o["versions"][0].update({"schema-id": 9}), "names schema 9, which is not among the schemas"),
    (lambda o: o["versions"][0]["representations"].append({"type": "sql", "sql": "SELECT 1", "dialect": "SPARK"}),
     "two queries for dialect 'SPARK'"),
    (lambda o: o.pop("version-log"), "lacks 'version-log'"),
    (lambda o: o["versions"][0].update({"default-namespace": "default"}), "'default-namespace' must be a list"),
])
def test_what_the_spec_forbids_is_a_named_error(change, message):
    obj = copy.deepcopy(EXAMPLE)
    change(obj)
    with pytest.raises(InvalidMetadataError, match=message) as e:
        ViewMetadata.from_json(obj, "v.metadata.json")
    assert e.value.path == "v.metadata.json"
    if "format version" in message:
        assert isinstance(e.value, UnsupportedFormatVersionError)


def test_a_representation_of_an_unknown_type_is_kept():
    obj = copy.deepcopy(EXAMPLE)
    other = {"type": "substrait", "plan": "AAEC", "extra": [1, 2]}
    obj["versions"][0]["representations"].append(other)
    m = ViewMetadata.from_json(obj)
    assert m.to_json()["versions"][0]["representations"][1] == other
    assert m.current_version.dialects == ["spark"]


def _version(sql: str, ts: int, namespace=("db",)) -> ViewVersion:
    return ViewVersion(0, ts, 0, {"engine-name": "spark", "engine-version": "4.0.0"},
                       (Representation("sql", sql, "spark"),), tuple(namespace))


SCHEMA = T.Schema([T.NestedField(1, "id", T.LONG, False)])
WIDER = T.Schema([T.NestedField(1, "id", T.LONG, False), T.NestedField(2, "v", T.STRING, False)])


def test_versions_and_schemas_reused_when_equal_else_numbered_after_the_highest():
    m = new_view("file:/wh/db/v", SCHEMA, _version("SELECT id FROM t", 1000))
    assert (m.current_version_id, m.current_version.schema_id, len(m.version_log)) == (1, 0, 1)
    m2 = replaced(m, _version("SELECT id, v FROM t", 2000), WIDER)
    assert (m2.current_version_id, m2.current_version.schema_id) == (2, 1)
    assert [e.version_id for e in m2.version_log] == [1, 2]
    # back to the first query and schema: version 1 and schema 0 again, a log entry, no new version
    m3 = replaced(m2, _version("SELECT id FROM t", 3000), SCHEMA)
    assert (m3.current_version_id, len(m3.versions), len(m3.schemas)) == (1, 2, 2)
    assert [(e.version_id, e.timestamp_ms) for e in m3.version_log] == [(1, 1000), (2, 2000), (1, 3000)]
    # the same query in another default namespace is another version
    m4 = replaced(m3, _version("SELECT id FROM t", 4000, ("other",)), SCHEMA)
    assert m4.current_version_id == 3 and m4.current_version.default_namespace == ("other",)
    with pytest.raises(Exception, match="two queries for dialect"):
        replaced(m4, ViewVersion(0, 5000, 0, {}, (Representation("sql", "a", "spark"),
                                                   Representation("sql", "b", "Spark")), ("db",)), SCHEMA)


def test_version_history_num_entries_is_honoured():
    m = new_view("file:/wh/db/v", SCHEMA, _version("SELECT 1", 1000), {"version.history.num-entries": "2"})
    for k in range(2, 6):
        m = replaced(m, _version(f"SELECT {k}", k * 1000), SCHEMA)
    assert [v.version_id for v in m.versions] == [4, 5] and m.current_version_id == 5
    assert [e.version_id for e in m.version_log] == [4, 5]  # (cleared before the dropped versions)
    m = with_properties(m, {"version.history.num-entries": "1"})
    assert [v.version_id for v in m.versions] == [5] and [e.version_id for e in m.version_log] == [5]
    with pytest.raises(Exception, match="must be positive"):
        with_properties(m, {"version.history.num-entries": "0"})


def test_metadata_files_are_gzip_as_java_names_them_unless_told_otherwise():
    m = new_view("file:/wh/db/v", SCHEMA, _version("SELECT 1", 1000))
    assert re.fullmatch(r"00001-[0-9a-f-]{36}\.gz\.metadata\.json", m.file_name(1))
    data = m.to_json_bytes()
    assert data[:2] == b"\x1f\x8b" and json.loads(gzip.decompress(data)) == m.to_json()
    plain = with_properties(m, {"write.metadata.compression-codec": "none"})
    assert re.fullmatch(r"00002-[0-9a-f-]{36}\.metadata\.json", plain.file_name(2))
    assert json.loads(plain.to_json_bytes()) == plain.to_json()
    with pytest.raises(Exception, match="gzip or none"):
        with_properties(m, {"write.metadata.compression-codec": "zstd"})


def test_pyiceberg_reads_the_view_metadata_sparkberg_writes():
    from pyiceberg.view.metadata import ViewMetadata as PyIcebergView
    m = replaced(new_view("file:/wh/db/v", SCHEMA, _version("SELECT id FROM t", 1000), {"comment": "c"}),
                 _version("SELECT id, v FROM t", 2000), WIDER)
    theirs = PyIcebergView.model_validate_json(json.dumps(m.to_json()))
    assert theirs.current_version_id == 2 and theirs.view_uuid == m.view_uuid
    assert [v.version_id for v in theirs.versions] == [1, 2]
    current = next(v for v in theirs.versions if v.version_id == 2)
    assert current.representations[0].root.sql == "SELECT id, v FROM t" and current.schema_id == 1
