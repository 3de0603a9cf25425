"""The manifest rewrite's entries: each live entry of a manifest becomes an EXISTING entry with what it inherits
written out. Where the manifest's ``data_file`` is encoded as the table's own manifests are, its bytes are copied
as they are (``_copied``); the reference decodes every entry and encodes it again (``_encoded``, also the way
for manifests of another encoding). Both must give the same bytes, and the manifests written from them must
read back as the inherited entries."""
import io
import math
import uuid
from decimal import Decimal

from hypothesis import given, strategies as st
import pytest

from sparkberg.avro.manifest import read_manifest, write_encoded_manifest, write_manifest
from sparkberg.avro.copies import EntryFormat
from sparkberg.maintenance.manifests import _copied, _encoded, sort_key
from sparkberg.format import types as T
from sparkberg.format.manifests import (
    ADDED, DATA, DELETED, EXISTING, MANIFEST_DATA, MANIFEST_DELETES, POSITION_DELETES, DataFile, ManifestEntry,
    ManifestFile, inherit,
)
from sparkberg.format.partitioning import PartitionField, PartitionSpec
from sparkberg.format.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform

SCHEMA = T.Schema([T.NestedField(1, "id", T.LONG, True), T.NestedField(2, "ts", T.TIMESTAMP),
                   T.NestedField(3, "amt", T.DecimalType(9, 2)), T.NestedField(4, "u", T.UUID),
                   T.NestedField(5, "name", T.STRING), T.NestedField(6, "flag", T.BOOLEAN),
                   T.NestedField(7, "score", T.DOUBLE), T.NestedField(8, "f", T.FLOAT),
                   T.NestedField(9, "blob", T.BINARY)])
SPECS = [
    PartitionSpec(3, [PartitionField(2, 1000, DayTransform(), "ts_day"),
                      PartitionField(1, 1001, BucketTransform(16), "id_bucket"),
                      PartitionField(3, 1002, IdentityTransform(), "amt"),
                      PartitionField(4, 1003, IdentityTransform(), "u"),
                      PartitionField(5, 1004, TruncateTransform(2), "name-trunc")]),
    PartitionSpec(4, [PartitionField(6, 1005, IdentityTransform(), "flag"),
                      PartitionField(7, 1006, IdentityTransform(), "score"),
                      PartitionField(8, 1007, IdentityTransform(), "f"),
                      PartitionField(9, 1008, IdentityTransform(), "blob")]),
    PartitionSpec(0, []),
]


def partition(spec, i, nulls=False):
    values = {1000: 19000 + i, 1001: i % 16, 1002: Decimal(f"{i}.25"), 1003: uuid.UUID(int=i), 1004: f"n{i}",
              1005: i % 2 == 0, 1006: i * 0.5 - 1, 1007: float(i), 1008: bytes([i, 0, 255])}
    return {f.field_id: None if nulls else values[f.field_id] for f in spec.fields}


def data_file(spec, i, content=DATA, nulls=False, **kw):
    return DataFile(file_path=f"s3://b/d{i}.parquet", file_format="PARQUET", partition=partition(spec, i, nulls),
                    record_count=10 + i, file_size_in_bytes=1000 + i, content=content,
                    lower_bounds={1: i.to_bytes(8, "little")}, upper_bounds={1: (i + 9).to_bytes(8, "little")},
                    value_counts={1: 10 + i}, null_value_counts={1: 0}, column_sizes={1: 80}, split_offsets=(4,),
                    **kw)


def data_entries(spec, version):
    v1 = version == 1
    return [
        ManifestEntry(ADDED, data_file(spec, 1), 77 if v1 else None),  # (inherits ids, sequence numbers, row id)
        ManifestEntry(EXISTING, data_file(spec, 2, nulls=True, first_row_id=500 if version == 3 else None), 70,
                      None if v1 else 2, None if v1 else 2),
        ManifestEntry(DELETED, data_file(spec, 3), 77, None if v1 else 5, None if v1 else 5),
        ManifestEntry(ADDED, data_file(spec, 4, sort_order_id=0), 77 if v1 else None),
        ManifestEntry(ADDED, data_file(spec, 5, first_row_id=900 if version == 3 else None), 77 if v1 else None),
    ]


def delete_entries(spec, version):
    """A position delete file (a DV on v3) that inherits its sequence numbers, and one that does not."""
    extra = {"content_offset": 4, "content_size_in_bytes": 40} if version == 3 else {}
    return [ManifestEntry(ADDED, data_file(spec, 1, POSITION_DELETES, referenced_data_file="s3://b/d0.parquet",
                                           **extra)),
            ManifestEntry(EXISTING, data_file(spec, 2, POSITION_DELETES), 70, 2, 3)]


def manifest(entries, version, spec, content=MANIFEST_DATA, data=None):
    data = data or write_manifest(entries, format_version=version, spec=spec, schema=SCHEMA, content=content)
    mf = ManifestFile("s3://b/m.avro", len(data), spec.spec_id, 77, content, 0 if version == 1 else 5,
                      first_row_id=1000 if version == 3 and content == MANIFEST_DATA else None)
    return mf, data


def assert_rewritten(version, spec, mf, data, entries, copied=True):
    fmt = EntryFormat(version, spec, SCHEMA)
    reference = _encoded(fmt, mf, data)
    rows = _copied(fmt, mf, data)
    if copied:
        assert rows == reference
    else:
        assert rows is None
    out = read_manifest(write_encoded_manifest(reference["entry"], format_version=version, spec=spec, schema=SCHEMA,
                                               content=mf.content), "rewritten.avro")
    live = [e for e in inherit(entries, mf) if e.status != DELETED]
    assert out.format_version == version and out.partition_spec_id == spec.spec_id
    # (as the rewrite's snapshot reads them: nothing left to inherit from it but a v1 table's sequence number 0)
    new = ManifestFile("s3://b/new.avro", 1, spec.spec_id, -1, mf.content, 0 if version == 1 else 99,
                       first_row_id=-1 if version == 3 and mf.content == MANIFEST_DATA else None)
    got = [(e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number, e.data_file.file_path,
            e.data_file.partition, e.data_file.first_row_id, e.data_file.record_count)
           for e in inherit(out.entries, new)]
    assert got == [(EXISTING, e.snapshot_id, e.sequence_number, e.file_sequence_number, e.data_file.file_path,
                    e.data_file.partition, e.data_file.first_row_id, e.data_file.record_count) for e in live]
    assert [pickle_partition(e) for e in live] == [pickle_partition(p) for p in reference["partition"]]
    assert reference["records"] == [e.data_file.record_count for e in live]
    assert reference["first_row_id"] == [e.data_file.first_row_id for e in live]


def pickle_partition(x):
    import pickle
    return pickle.loads(x) if isinstance(x, bytes) else tuple(x.data_file.partition.values())


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("spec", SPECS, ids=["temporal-decimal-uuid-string", "bool-floats-binary", "unpartitioned"])
def test_data_entries_are_copied_as_the_reference_encodes_them(version, spec):
    entries = data_entries(spec, version)
    mf, data = manifest(entries, version, spec)
    assert_rewritten(version, spec, mf, data, entries)
    if version == 3:  # (inherited row ids written out: from the manifest's 1000 on, past the deleted entry's rows)
        live = [e for e in inherit(entries, mf) if e.status != DELETED]
        assert [e.data_file.first_row_id for e in live] == [1000, 500, 1024, 900]


@pytest.mark.parametrize("version", [2, 3])
def test_delete_entries_are_copied_as_the_reference_encodes_them(version):
    spec = SPECS[0]
    entries = delete_entries(spec, version)
    mf, data = manifest(entries, version, spec, MANIFEST_DELETES)
    assert_rewritten(version, spec, mf, data, entries)


def v1_manifest_in_v2_table(spec):
    """Entries in a v1 manifest, listed as a table upgraded to v2 lists the v1 manifests it keeps."""
    entries = data_entries(spec, 1)
    _, data = manifest(entries, 1, spec)
    mf, _ = manifest(entries, 2, spec, data=data)
    listed = ManifestFile(mf.manifest_path, mf.manifest_length, mf.partition_spec_id, 77, sequence_number=0)
    return entries, listed, data


def test_a_manifest_of_another_encoding_is_encoded_again():
    spec = SPECS[0]
    entries, mf, data = v1_manifest_in_v2_table(spec)
    assert_rewritten(2, spec, mf, data, entries, copied=False)


values = st.one_of(st.none(), st.integers(-2 ** 63, 2 ** 63 - 1))


# (Iceberg strings are Unicode text: no lone surrogates, which UTF-8 cannot hold)
text = st.text(alphabet=st.characters(min_codepoint=1, blacklist_categories=("Cs",)))


@given(st.lists(st.tuples(values, st.one_of(st.none(), st.floats(allow_nan=False)), st.one_of(st.none(), text))))
def test_sort_keys_order_partitions_as_their_values(tuples):
    types = [T.LONG, T.DOUBLE, T.STRING]

    def natural(t):
        # (-0.0 before 0.0, as Iceberg orders them; Python's floats call them equal, which kept input order)
        return tuple((v is not None, v.encode() if isinstance(v, str) else
                      (v, math.copysign(1.0, v)) if isinstance(v, float) else v) for v in t)
    assert sorted(tuples, key=lambda t: sort_key(t, types)) == sorted(tuples, key=natural)
    assert sorted([(None, 0.0, None), (None, -0.0, "")], key=lambda t: sort_key(t, types))[0][1] == -0.0


def _carried_over(version, spec, entries, content=MANIFEST_DATA, data=None, mf=None):
    """What a commit that removes the files of entries 1 and 4 (when live) writes for their manifest, by the copies
    and by the reference, both decoded; and whether the copies were taken."""
    import fastavro

    from sparkberg.avro import copies as copies_module
    from sparkberg.avro.decode import manifest_entries
    from sparkberg.commit import producer
    if mf is None:
        mf, data = manifest(entries, version, spec, content)
    decoded = manifest_entries(data, mf)
    out = [ManifestEntry(DELETED, e.data_file, 4242, e.sequence_number, e.file_sequence_number) if k in (1, 4) else
           ManifestEntry(EXISTING, e.data_file, e.snapshot_id, e.sequence_number, e.file_sequence_number)
           for k, e in enumerate(decoded) if e.status != DELETED]
    fmt = producer._entry_format({}, len(decoded), version, spec, SCHEMA)
    used = []
    real = copies_module.copies
    producer.copies = lambda *a: used.append(real(*a)) or used[-1]
    try:
        got = producer._rewritten(fmt, mf, data, decoded, out, version, spec, SCHEMA)
    finally:
        producer.copies = real
    taken = bool(used) and used[-1] is not None
    reference = write_manifest(out, format_version=version, spec=spec, schema=SCHEMA, content=content)
    return ([r for r in fastavro.reader(io.BytesIO(got))], [r for r in fastavro.reader(io.BytesIO(reference))],
            read_manifest(got, "got.avro"), taken)


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("spec", SPECS, ids=["temporal-decimal-uuid-string", "bool-floats-binary", "unpartitioned"])
def test_a_commit_rewrites_a_manifest_with_its_data_files_copied(version, spec):
    # a commit that removes files rewrites the manifests holding them: the removed entries DELETED by its snapshot,
    # the others EXISTING, each with what it inherits written out; data_file bytes copied, as the reference encodes
    got, reference, read, taken = _carried_over(version, spec, data_entries(spec, version))
    assert taken and got == reference
    assert read.format_version == version and read.partition_spec_id == spec.spec_id
    assert [(e.status, e.snapshot_id) for e in read.entries] == [(EXISTING, 77), (DELETED, 4242), (EXISTING, 77),
                                                                 (DELETED, 4242)]
    if version > 1:
        assert [e.sequence_number for e in read.entries] == [5, 2, 5, 5]
    if version == 3:  # (inherited row ids written into the copies)
        assert [e.data_file.first_row_id for e in read.entries] == [1000, 500, 1024, 900]


@pytest.mark.parametrize("version", [2, 3])
def test_a_commit_rewrites_a_delete_manifest_with_its_files_copied(version):
    spec = SPECS[0]
    entries = delete_entries(spec, version)
    got, reference, read, taken = _carried_over(version, spec, entries, MANIFEST_DELETES)
    assert taken and got == reference
    assert [(e.status, e.sequence_number) for e in read.entries] == [(EXISTING, 5), (DELETED, 2)]


def test_a_commit_encodes_a_manifest_of_another_encoding_again():
    spec = SPECS[0]
    entries, mf, data = v1_manifest_in_v2_table(spec)
    got, reference, read, taken = _carried_over(2, spec, entries, data=data, mf=mf)
    assert not taken and got == reference and len(read.entries) == 4


@pytest.mark.parametrize("entries,decoded,copied", [(5, 0, False), (64, 0, True), (5, 60, True), (5, 40, True)])
def test_a_process_without_compiled_code_copies_only_once_it_has_decoded_enough(monkeypatch, entries, decoded,
                                                                                copied):
    # loading compiled code costs a process as much as decoding a few thousand entries by the reference decoder:
    # as planning, a commit starts it only once the entries decoded so (``decoded``) and the manifest's, with
    # MANIFEST_ENTRIES for the manifest (20), reach LOAD_BUDGET_ENTRIES (64 here)
    from sparkberg.avro import compiled, decode
    spec = SPECS[2]
    many = [ManifestEntry(ADDED, data_file(spec, i)) for i in range(entries)]
    monkeypatch.setattr(compiled, "loaded", lambda: False)
    monkeypatch.setattr(decode, "LOAD_BUDGET_ENTRIES", 64)
    monkeypatch.setattr(decode, "_reference_entries", decoded)
    monkeypatch.setattr(decode, "_reference_manifests", 0)  # (the manifest's own counts MANIFEST_ENTRIES more)
    got, reference, read, taken = _carried_over(2, spec, many)
    assert taken == copied and got == reference and len(read.entries) == entries
