"""Manifest lists and manifests v1-v3: exact Avro schemas with field ids, key-value metadata, round trips,
inheritance rules (sequence numbers, snapshot ids, first_row_id) and named errors for bad files."""
import io
import json
from decimal import Decimal

import fastavro
import pytest
from hypothesis import given, settings, strategies as st

from sparkberg.avro.manifest import (
    manifest_file_for, read_manifest, read_manifest_list, write_manifest, write_manifest_list,
)
from sparkberg.format.manifests import (
    ADDED, DATA, DELETED, EQUALITY_DELETES, EXISTING, MANIFEST_DATA, MANIFEST_DELETES, POSITION_DELETES, DataFile,
    ManifestEntry, ManifestFile, inherit,
)
from sparkberg.avro.schemas import manifest_entry_schema, manifest_list_schema
from sparkberg.errors import InvalidMetadataError, ValidationError
from sparkberg.format import types as T
from sparkberg.format.partitioning import PartitionField, PartitionSpec
from sparkberg.format.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform
from sparkberg.format.values import from_bytes

SCHEMA = T.Schema([T.NestedField(1, "id", T.LONG, True), T.NestedField(2, "ts", T.TIMESTAMP),
                   T.NestedField(3, "amt", T.DecimalType(9, 2)), T.NestedField(4, "u", T.UUID),
                   T.NestedField(5, "name", T.STRING)])
SPEC = PartitionSpec(3, [PartitionField(2, 1000, DayTransform(), "ts_day"),
                         PartitionField(1, 1001, BucketTransform(16), "id_bucket"),
                         PartitionField(3, 1002, IdentityTransform(), "amt"),
                         PartitionField(4, 1003, IdentityTransform(), "u"),
                         PartitionField(5, 1004, TruncateTransform(2), "name-trunc")])


def data_file(path, part, rows=10, content=DATA, **kw):
    return DataFile(file_path=path, file_format="parquet", partition=part, record_count=rows,
                    file_size_in_bytes=1000 + rows, content=content, **kw)


def part(day=19000, bucket=3, amt=Decimal("1.50"), u=None, name="ab"):
    import uuid
    return {1000: day, 1001: bucket, 1002: amt, 1003: u or uuid.UUID(int=7), 1004: name}


def _field_ids(schema, out=None):
    out = {} if out is None else out
    if isinstance(schema, dict):
        if "field-id" in schema:
            out[schema["name"]] = schema["field-id"]
        for k in ("fields", "type", "items"):
            if k in schema:
                v = schema[k]
                for s in (v if isinstance(v, list) else [v]):
                    _field_ids(s, out)
    return out


def test_schemas_follow_the_spec_tables():
    v1 = manifest_list_schema(1)
    names = [f["name"] for f in v1["fields"]]
    assert "content" not in names and "sequence_number" not in names and "first_row_id" not in names
    v2 = {f["name"]: f for f in manifest_list_schema(2)["fields"]}
    assert v2["added_files_count"]["type"] == "int"  # required in v2
    assert v2["partitions"]["type"][1]["element-id"] == 508
    v3 = {f["name"]: f for f in manifest_list_schema(3)["fields"]}
    assert v3["first_row_id"]["field-id"] == 520 and v3["first_row_id"]["type"] == ["null", "long"]
    e1 = manifest_entry_schema(1, {"type": "record", "name": "r102", "fields": []})
    ids1 = _field_ids(e1)
    assert ids1["block_size_in_bytes"] == 105 and "content" not in ids1
    assert [f["type"] for f in e1["fields"] if f["name"] == "snapshot_id"] == ["long"]
    ids3 = _field_ids(manifest_entry_schema(3, {"type": "record", "name": "r102", "fields": []}))
    for name, fid in {"content": 134, "file_path": 100, "partition": 102, "lower_bounds": 125, "first_row_id": 142,
                      "referenced_data_file": 143, "content_offset": 144, "content_size_in_bytes": 145,
                      "sequence_number": 3, "file_sequence_number": 4, "equality_ids": 135}.items():
        assert ids3[name] == fid


@pytest.mark.parametrize("version", [1, 2, 3])
def test_manifest_roundtrip_and_key_value_metadata(version):
    entries = [
        ManifestEntry(ADDED, data_file("s3://b/d1.parquet", part(), 10, lower_bounds={1: b"\x01" * 8},
                                       upper_bounds={1: b"\x09" * 8}, value_counts={1: 10, 2: 10},
                                       null_value_counts={1: 0}, nan_value_counts={}, column_sizes={1: 80},
                                       split_offsets=(4,), sort_order_id=0), 99 if version == 1 else None),
        ManifestEntry(EXISTING, data_file("s3://b/d2.parquet", part(day=None, name=None), 5,
                                          first_row_id=100 if version == 3 else None), 98, 4, 4),
        ManifestEntry(DELETED, data_file("s3://b/d3.parquet", part(bucket=15), 7), 99, 2, 3),
    ]
    data = write_manifest(entries, format_version=version, spec=SPEC, schema=SCHEMA)
    m = read_manifest(data, "m.avro")
    assert m.format_version == version and m.partition_spec_id == 3
    assert json.loads(m.schema_json) == SCHEMA.to_json()
    assert json.loads(m.partition_spec_json) == SPEC.fields_to_json()
    if version >= 2:
        assert m.metadata["content"] == "data" and m.metadata["schema-id"] == "0"
    got = list(m.entries)
    if version == 1:
        expected = [ManifestEntry(e.status, e.data_file.__class__(**{**e.data_file.__dict__,
                                                                     "block_size_in_bytes": 64 * 1024 * 1024}),
                                  e.snapshot_id) for e in entries]
    else:
        expected = entries
    assert got == expected
    assert got[0].data_file.partition[1002] == Decimal("1.50")
    # the partition struct's Avro field ids are the partition field ids; names are made Avro-safe
    raw = json.loads(fastavro.reader(io.BytesIO(data)).metadata["avro.schema"])
    ids = _field_ids(raw)
    assert ids["ts_day"] == 1000 and ids["name_x2Dtrunc"] == 1004


def test_delete_manifest_v2():
    entries = [
        ManifestEntry(ADDED, data_file("s3://b/pos.parquet", part(), 3, POSITION_DELETES,
                                       referenced_data_file="s3://b/d1.parquet")),
        ManifestEntry(ADDED, data_file("s3://b/eq.parquet", part(), 2, EQUALITY_DELETES, equality_ids=(1, 5))),
    ]
    m = read_manifest(write_manifest(entries, format_version=2, spec=SPEC, schema=SCHEMA, content=MANIFEST_DELETES))
    assert m.content == MANIFEST_DELETES and m.metadata["content"] == "deletes"
    assert m.entries[1].data_file.equality_ids == (1, 5)
    assert m.entries[0].data_file.referenced_data_file == "s3://b/d1.parquet"


def test_dv_entry_v3():
    dv = data_file("s3://b/dv.puffin", part(), 4, POSITION_DELETES, referenced_data_file="s3://b/d1.parquet",
                   content_offset=4, content_size_in_bytes=40)
    dv = DataFile(**{**dv.__dict__, "file_format": "puffin"})
    m = read_manifest(write_manifest([ManifestEntry(ADDED, dv)], format_version=3, spec=SPEC, schema=SCHEMA,
                                     content=MANIFEST_DELETES))
    got = m.entries[0].data_file
    assert (got.file_format, got.content_offset, got.content_size_in_bytes) == ("puffin", 4, 40)


def test_v1_cannot_hold_deletes():
    with pytest.raises(ValidationError, match="v1 manifests cannot hold delete files"):
        write_manifest([ManifestEntry(ADDED, data_file("x", part(), 1, POSITION_DELETES), 1)], format_version=1,
                       spec=SPEC, schema=SCHEMA)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_manifest_list_roundtrip(version):
    entries = [ManifestEntry(ADDED, data_file("s3://b/d1.parquet", part(day=5), 10), 7),
               ManifestEntry(ADDED, data_file("s3://b/d2.parquet", part(day=None, bucket=1), 5), 7)]
    mf = manifest_file_for(entries, path="s3://b/m1.avro", length=123, spec=SPEC, schema=SCHEMA,
                           added_snapshot_id=7, sequence_number=0 if version == 1 else 4,
                           first_row_id=1000 if version == 3 else None)
    assert (mf.added_files_count, mf.added_rows_count, mf.existing_files_count) == (2, 15, 0)
    summary = mf.partitions
    assert summary[0].contains_null and from_bytes(T.DATE, summary[0].lower_bound) == 5
    assert from_bytes(T.INT, summary[1].lower_bound) == 1 and from_bytes(T.INT, summary[1].upper_bound) == 3
    manifests = [mf]
    if version >= 2:
        manifests.append(ManifestFile("s3://b/m2.avro", 50, 3, 7, MANIFEST_DELETES, 4, 4, 1, 0, 0, 3, 0, 0, (), None))
    data = write_manifest_list(manifests, format_version=version, snapshot_id=7, parent_snapshot_id=None,
                               sequence_number=4, first_row_id=1000 if version == 3 else None)
    got = read_manifest_list(data)
    assert got == manifests
    meta = fastavro.reader(io.BytesIO(data)).metadata
    assert meta["snapshot-id"] == "7" and meta["format-version"] == str(version)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_manifest_lists_decoded_fast_equal_the_reference_decoder(version, monkeypatch):
    from sparkberg.avro import columnar, compiled, decode
    manifests = []
    for i in range(300):  # (several Avro blocks)
        entries = [ManifestEntry(ADDED, data_file(f"s3://b/d{i}.parquet", part(day=None if i % 7 == 0 else i,
                                                                             bucket=i % 4), 10 + i), 7)]
        manifests.append(manifest_file_for(entries, path=f"s3://b/m{i}.avro", length=100 + i, spec=SPEC,
                                           schema=SCHEMA, added_snapshot_id=7,
                                           sequence_number=0 if version == 1 else 4,
                                           first_row_id=1000 + i if version == 3 else None))
    if version >= 2:
        manifests.append(ManifestFile("s3://b/md.avro", 50, 3, 7, MANIFEST_DELETES, 4, 2, 1, 0, 0, 3, 0, 0, None,
                                      b"key"))
    data = write_manifest_list(manifests, format_version=version, snapshot_id=7, parent_snapshot_id=None,
                               sequence_number=4, first_row_id=1000 if version == 3 else None)
    # the compiled decoder, for lists of any size
    monkeypatch.setattr(decode, "FAST_LIST_MIN_BYTES", 0)
    monkeypatch.delenv(compiled.SETTING, raising=False)
    fast = []
    real = columnar.read_manifest_list_compiled
    monkeypatch.setattr(decode, "read_manifest_list_compiled", lambda *a: fast.append(real(*a)) or fast[-1])
    got = decode.manifest_list(data).manifests()
    assert fast and fast[0] is not None  # (the fast path read it)
    with pytest.raises(InvalidMetadataError) as e:  # the fast path declines a truncated file: the reference names it
        decode.manifest_list(data[: len(data) - 40], "s3://b/snap.avro")
    assert "s3://b/snap.avro" in str(e.value) and fast[-1] is None
    assert got == read_manifest_list(data)  # (the reference decoder's)
    monkeypatch.setattr(decode, "FAST_LIST_MIN_BYTES", 2 ** 40)
    assert decode.manifest_list(data).manifests() == got  # (the reference decoder's, as columns)
    if version >= 2:
        assert got[:-1] == manifests[:-1] and got[-1].key_metadata == b"key"


def test_v1_manifest_list_defaults_and_legacy_names():
    # a v1 list as older Java wrote it: *_data_files_count names, no content/sequence numbers
    schema = {"type": "record", "name": "manifest_file", "fields": [
        {"name": "manifest_path", "type": "string", "field-id": 500},
        {"name": "manifest_length", "type": "long", "field-id": 501},
        {"name": "partition_spec_id", "type": "int", "field-id": 502},
        {"name": "added_snapshot_id", "type": ["null", "long"], "default": None, "field-id": 503},
        {"name": "added_data_files_count", "type": ["null", "int"], "default": None, "field-id": 504},
        {"name": "existing_data_files_count", "type": ["null", "int"], "default": None, "field-id": 505},
        {"name": "deleted_data_files_count", "type": ["null", "int"], "default": None, "field-id": 506}]}
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [{"manifest_path": "m", "manifest_length": 1,
                                                          "partition_spec_id": 0, "added_snapshot_id": 5,
                                                          "added_data_files_count": 2,
                                                          "existing_data_files_count": 0,
                                                          "deleted_data_files_count": 1}])
    (mf,) = read_manifest_list(buf.getvalue())
    assert (mf.content, mf.sequence_number, mf.min_sequence_number) == (MANIFEST_DATA, 0, 0)
    assert (mf.added_files_count, mf.deleted_files_count, mf.added_snapshot_id) == (2, 1, 5)


def test_sequence_number_inheritance():
    mf = ManifestFile("m", 1, 0, added_snapshot_id=42, sequence_number=7)
    raw = [ManifestEntry(ADDED, data_file("a", {})), ManifestEntry(EXISTING, data_file("b", {}), 1, 3, 3),
           ManifestEntry(ADDED, data_file("c", {}), None, 5, None)]  # explicit data seq for an added file
    a, b, c = inherit(raw, mf)
    assert (a.snapshot_id, a.sequence_number, a.file_sequence_number) == (42, 7, 7)
    assert (b.snapshot_id, b.sequence_number, b.file_sequence_number) == (1, 3, 3)
    assert (c.sequence_number, c.file_sequence_number) == (5, 7)
    # v1 manifests: sequence numbers default to 0
    v1 = inherit([ManifestEntry(EXISTING, data_file("a", {}), 9)], ManifestFile("m", 1, 0, 42))
    assert (v1[0].sequence_number, v1[0].file_sequence_number) == (0, 0)


def test_first_row_id_inheritance_example():
    # spec "Row lineage example": manifest added1 first_row_id 1000: data1 EXISTING (800), data2/data3 ADDED null
    mf = ManifestFile("added1", 1, 0, 1, sequence_number=2, first_row_id=1000)
    raw = [ManifestEntry(EXISTING, data_file("data1", {}, 25, first_row_id=800), 1, 1, 1),
           ManifestEntry(ADDED, data_file("data2", {}, 50)), ManifestEntry(ADDED, data_file("data3", {}, 50))]
    assert [e.data_file.first_row_id for e in inherit(raw, mf)] == [800, 1000, 1050]
    # no first_row_id on the manifest (pre-v3 snapshot): stays null
    assert [e.data_file.first_row_id for e in inherit(raw, ManifestFile("m", 1, 0, 1))] == [800, None, None]
    # delete manifests never assign row ids
    dm = ManifestFile("d", 1, 0, 1, content=MANIFEST_DELETES, first_row_id=5)
    assert inherit([ManifestEntry(ADDED, data_file("p", {}, 3, POSITION_DELETES))], dm)[0].data_file.first_row_id \
        is None


@pytest.mark.parametrize("data,message", [
    (b"", "not a readable Avro"), (b"Obj\x01garbage", "not a readable Avro"), (b"{\"json\": true}", "Avro"),
])
def test_foreign_or_empty_files(data, message):
    with pytest.raises(InvalidMetadataError, match=message) as e:
        read_manifest(data, "s3://b/m.avro")
    assert "s3://b/m.avro" in str(e.value)


def test_truncated_manifest_is_named():
    data = write_manifest([ManifestEntry(ADDED, data_file(f"f{i}", part(), i)) for i in range(200)],
                          format_version=2, spec=SPEC, schema=SCHEMA)
    with pytest.raises(InvalidMetadataError) as e:
        read_manifest(data[: len(data) - 40], "s3://b/m.avro")
    assert "s3://b/m.avro" in str(e.value)


def test_avro_that_is_not_a_manifest():
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema({"type": "record", "name": "x", "fields": [
        {"name": "a", "type": "int"}]}), [{"a": 1}])
    for _ in range(2):  # (the second time from the schema's remembered layout)
        with pytest.raises(InvalidMetadataError, match="not a manifest") as e:
            read_manifest(buf.getvalue(), "x.avro")
        assert "x.avro" in str(e.value)
    with pytest.raises(InvalidMetadataError, match="not a manifest list"):
        read_manifest_list(buf.getvalue(), "x.avro")


paths = st.text("abc/._", min_size=1, max_size=12)
counts = st.none() | st.dictionaries(st.integers(1, 50), st.integers(0, 2 ** 40), max_size=3)
bounds = st.none() | st.dictionaries(st.integers(1, 50), st.binary(max_size=16), max_size=3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([EXISTING, ADDED, DELETED]), paths, st.integers(0, 2 ** 40), counts,
                          bounds, st.none() | st.integers(0, 2 ** 40), st.none() | st.integers(0, 10),
                          st.none() | st.integers(-(2 ** 31), 2 ** 31 - 1), st.none() | st.text(max_size=5)),
                max_size=8), st.sampled_from([2, 3]))
def test_manifest_roundtrip_property(rows, version):
    spec = PartitionSpec(0, [PartitionField(1, 1000, BucketTransform(4), "b"), PartitionField(5, 1001,
                                                                                              IdentityTransform(), "n")])
    entries = [ManifestEntry(status, data_file(p, {1000: b, 1001: n}, rc, value_counts=c, lower_bounds=lb,
                                               first_row_id=fr if version == 3 else None),
                             None if status == ADDED else 1, seq if status != ADDED else None,
                             seq if status != ADDED else None)
               for status, p, rc, c, lb, fr, seq, b, n in rows]
    got = read_manifest(write_manifest(entries, format_version=version, spec=spec, schema=SCHEMA)).entries
    assert list(got) == entries


def test_v1_snapshot_manifests_list_without_manifest_list():
    from sparkberg.avro.manifest import manifest_file_from_manifest
    entries = [ManifestEntry(ADDED, data_file("s3://b/d1.parquet", part(day=3), 10), 5),
               ManifestEntry(EXISTING, data_file("s3://b/d2.parquet", part(day=9), 4), 4)]
    data = write_manifest(entries, format_version=1, spec=SPEC, schema=SCHEMA)
    mf = manifest_file_from_manifest("s3://b/m.avro", len(data), data, snapshot_id=5)
    assert (mf.partition_spec_id, mf.content, mf.sequence_number, mf.added_snapshot_id) == (3, MANIFEST_DATA, 0, 5)
    assert (mf.added_files_count, mf.existing_files_count, mf.added_rows_count) == (1, 1, 10)
    assert from_bytes(T.DATE, mf.partitions[0].lower_bound) == 3
    got = inherit(read_manifest(data).entries, mf)
    assert [(e.sequence_number, e.snapshot_id) for e in got] == [(0, 5), (0, 4)]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_reading_without_metrics_skips_only_the_metrics(version):
    entries = [ManifestEntry(ADDED, data_file(f"s3://b/d{i}.parquet", part(), 10, value_counts={1: 10},
                                              lower_bounds={1: b"\x01" * 8}, split_offsets=(4,), sort_order_id=0),
                             7) for i in range(3)]
    data = write_manifest(entries, format_version=version, spec=SPEC, schema=SCHEMA)
    full = read_manifest(data).entries
    lean = read_manifest(data, with_metrics=False).entries
    assert [e.data_file.value_counts for e in lean] == [None] * 3
    assert [e.data_file.lower_bounds for e in lean] == [None] * 3
    strip = dict(value_counts=None, lower_bounds=None, column_sizes=None, null_value_counts=None,
                 nan_value_counts=None, upper_bounds=None)
    assert [ManifestEntry(e.status, DataFile(**{**e.data_file.__dict__, **strip}), e.snapshot_id, e.sequence_number,
                          e.file_sequence_number) for e in full] == list(lean)


def test_small_manifest_lists_are_read_by_fastavro_until_compiled_code_is_loaded(monkeypatch):
    """A list of a few manifests is decoded by the reference decoder while the process has not loaded compiled code
    (planning a small table does not start numba), and by compiled code once it has."""
    from sparkberg.avro import compiled, decode
    manifests = [ManifestFile(f"s3://b/m{i}.avro", 100, 0, 7, 0, 4, 4, 1, 0, 0, 3, 0, 0, None) for i in range(3)]
    data = write_manifest_list(manifests, format_version=2, snapshot_id=7, parent_snapshot_id=None, sequence_number=4)
    real = decode.read_manifest_list_compiled
    monkeypatch.setattr(compiled, "loaded", lambda: False)
    monkeypatch.setattr(decode, "read_manifest_list_compiled", lambda *a: pytest.fail("compiled code read it"))
    assert decode.manifest_list(data).manifests() == manifests
    used = []
    monkeypatch.setattr(compiled, "loaded", lambda: True)
    monkeypatch.setattr(decode, "read_manifest_list_compiled", lambda *a: used.append(real(*a)) or used[-1])
    assert decode.manifest_list(data).manifests() == manifests and used and used[0] is not None


def _in_a_fresh_process(tmp_path, entries: int, code: str) -> list[str]:
    """What ``code`` prints, run in a fresh Python process with ``data``, the bytes of a manifest of ``entries``
    entries, and ``decode`` (:mod:`sparkberg.avro.decode`)."""
    import subprocess
    import sys
    es = [ManifestEntry(ADDED, data_file(f"s3://b/d{i}.parquet", part(), 10), 7) for i in range(entries)]
    path = str(tmp_path / "m.avro")
    with open(path, "wb") as f:
        f.write(write_manifest(es, format_version=2, spec=SPEC, schema=SCHEMA))
    out = subprocess.run([sys.executable, "-c", "import sys; from sparkberg.avro import decode; "
                          f"data = open({path!r}, 'rb').read(); " + code],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout.split()


def test_a_fresh_process_loads_compiled_code_once_its_decoding_has_paid_for_it(tmp_path):
    """Planning a table of a few hundred files in a fresh process (a scheduled job, the CLI) does not start numba;
    a process that goes on decoding loads it once the entries it has decoded reach the load budget."""
    code = ("cols = decode.manifest_columns([(data, 'm.avro', 500)]); "
            "assert cols[0].num_rows == 500, cols; print('numba' in sys.modules); "
            "runs = [decode.manifest_columns([(data, 'm.avro', 500)]) "
            "        for _ in range(decode.LOAD_BUDGET_ENTRIES // 500)]; "
            "assert all(c.num_rows == 500 for r in runs for c in r); "
            "print(decode.compiled.loaded(), 'numba' in sys.modules)")
    assert _in_a_fresh_process(tmp_path, 500, code) == ["False", "True", "True"]


def test_small_manifests_spend_the_load_budget_by_their_number_too(tmp_path):
    """Opening a manifest costs the reference decoder about as much as ``MANIFEST_ENTRIES`` entries: a process
    decoding ten-entry manifests one by one loads compiled code once their entries and their number reach the
    budget, long before their entries alone would (a metadata table of delete files queried again and again)."""
    code = ("n = decode.LOAD_BUDGET_ENTRIES // (10 + decode.MANIFEST_ENTRIES); "
            "assert n * 10 < decode.LOAD_BUDGET_ENTRIES // 2; "
            "cols = [decode.manifest_columns([(data, 'm.avro', 10)]) for _ in range(n - 1)]; "
            "assert all(c.num_rows == 10 for r in cols for c in r); "
            "print(decode.compiled.loaded(), decode._reference_manifests == n - 1); "
            "cols = [decode.manifest_columns([(data, 'm.avro', 10)]) for _ in range(2)]; "
            "assert all(c.num_rows == 10 for r in cols for c in r); "
            "print(decode.compiled.loaded(), decode._reference_manifests <= n)")
    assert _in_a_fresh_process(tmp_path, 10, code) == ["False", "True", "True", "True"]
