"""Direction 1: tables written by Iceberg Java 1.10 parse completely, re-serialize to equal models, and
agree with Java's own metadata tables (files, manifests, snapshots, refs, position_deletes)."""
import glob
import json
import os

import pytest

from sparkberg.avro.manifest import read_manifest, read_manifest_list, write_manifest, write_manifest_list
from sparkberg.format.manifests import DATA, DELETED, MANIFEST_DELETES, POSITION_DELETES, inherit
from sparkberg.io.fileio import file_io_for
from sparkberg.format.metadata import TableMetadata
from sparkberg.format.puffin import dv_positions, read_blob, read_footer, serialize_dv
from sparkberg.format.types import Schema

pytestmark = pytest.mark.interop
IO = file_io_for()


def metadata_files(warehouse, name):
    return sorted(glob.glob(os.path.join(warehouse, "db", name, "metadata", "*.metadata.json")))


def current(warehouse, name):
    import sparkberg
    return sparkberg.load_table(None, os.path.join(warehouse, "db", name))


def live_entries(t, snapshot):
    """(manifest file, inherited entry) for every live entry of a snapshot."""
    out = []
    for mf in read_manifest_list(IO.read(snapshot.manifest_list), snapshot.manifest_list):
        m = read_manifest(IO.read(mf.manifest_path), mf.manifest_path)
        out += [(mf, e) for e in inherit(m.entries, mf) if e.status != DELETED]
    return out


def test_corpus_is_complete(corpus, java_warehouse):
    for name in corpus:
        assert metadata_files(java_warehouse, name), name
    assert any(f.endswith(".gz.metadata.json") for f in metadata_files(java_warehouse, "v1_evolve"))


@pytest.mark.parametrize("name", ["v1_evolve", "v2_transforms", "v2_transforms_days", "v2_mor", "v3_dv",
                                  "v2_to_v3", "v2_evolution", "v2_nested", "v2_eqdeletes"])
def test_every_file_parses_and_roundtrips(corpus, java_warehouse, name):
    files = metadata_files(java_warehouse, name)
    seen_lists, seen_manifests = set(), set()
    for path in files:
        m = TableMetadata.from_bytes(IO.read(path), path)
        again = TableMetadata.from_json(json.loads(m.to_json_bytes()))
        assert again == m, path
        raw = json.loads(IO.read(path) if not path.endswith(".gz.metadata.json") else
                         __import__("gzip").decompress(IO.read(path)))
        assert m.format_version == raw["format-version"]
        assert len(m.snapshots) == len(raw.get("snapshots", []))
        for snap in m.snapshots:
            if snap.manifest_list in seen_lists:
                continue
            seen_lists.add(snap.manifest_list)
            data = IO.read(snap.manifest_list)
            manifests = read_manifest_list(data, snap.manifest_list)
            rewritten = write_manifest_list(manifests, format_version=m.format_version, snapshot_id=snap.snapshot_id,
                                            parent_snapshot_id=snap.parent_snapshot_id,
                                            sequence_number=snap.data_sequence_number,
                                            first_row_id=snap.first_row_id)
            assert read_manifest_list(rewritten) == manifests, snap.manifest_list
            for mf in manifests:
                if mf.manifest_path in seen_manifests:
                    continue
                seen_manifests.add(mf.manifest_path)
                manifest = read_manifest(IO.read(mf.manifest_path), mf.manifest_path)
                assert manifest.content == mf.content
                assert manifest.partition_spec_id == mf.partition_spec_id
                schema = Schema.from_json(json.loads(manifest.schema_json))
                spec = manifest.partition_spec
                back = read_manifest(write_manifest(manifest.entries, format_version=manifest.format_version,
                                                    spec=spec, schema=schema, content=manifest.content))
                assert back.entries == manifest.entries, mf.manifest_path
                assert mf.added_files_count is None or mf.added_files_count == sum(
                    e.status == 1 for e in manifest.entries)
    assert seen_manifests, f"{name} has no manifests"


@pytest.mark.parametrize("name", ["v1_evolve", "v2_transforms", "v2_transforms_days", "v2_mor", "v3_dv",
                                  "v2_to_v3", "v2_evolution", "v2_nested", "v2_eqdeletes"])
def test_files_agree_with_java(corpus, java, java_warehouse, name):
    t = current(java_warehouse, name)
    snap = t.metadata.current_snapshot
    ours = sorted((e.data_file.file_path, e.data_file.content, e.data_file.record_count, e.data_file.file_size_in_bytes,
                   e.data_file.first_row_id if t.format_version >= 3 and e.data_file.content == DATA else None,
                   e.data_file.referenced_data_file, e.data_file.content_offset, e.sequence_number)
                  for _, e in live_entries(t, snap))
    cols = "file_path, content, record_count, file_size_in_bytes, " + (
        "first_row_id, " if t.format_version >= 3 else "NULL, ") + (
        "referenced_data_file" if t.format_version >= 2 else "NULL") + ", " + (
        "content_offset" if t.format_version >= 3 else "NULL")
    java_rows = java.sql(f"SELECT {cols} FROM ref.db.{name}.files").collect()
    seqs = {r[0]: r[1] for r in java.sql(f"SELECT data_file.file_path, sequence_number FROM ref.db.{name}.entries "
                                         "WHERE status < 2").collect()}
    theirs = sorted(tuple(r) + (seqs[r[0]],) for r in java_rows)
    assert ours == theirs


@pytest.mark.parametrize("name", ["v1_evolve", "v2_mor", "v3_dv", "v2_to_v3", "v2_eqdeletes"])
def test_snapshots_refs_and_manifests_agree_with_java(corpus, java, java_warehouse, name):
    t = current(java_warehouse, name)
    m = t.metadata
    snaps = sorted((s.snapshot_id, s.parent_snapshot_id, s.operation, s.manifest_list, s.timestamp_ms)
                   for s in m.snapshots)
    jsnaps = sorted((r[0], r[1], r[2], r[3], int(r[4].timestamp() * 1000)) for r in java.sql(
        f"SELECT snapshot_id, parent_id, operation, manifest_list, committed_at FROM ref.db.{name}.snapshots"
    ).collect())
    assert snaps == jsnaps
    refs = sorted((n, r.type.upper(), r.snapshot_id, r.max_ref_age_ms, r.max_snapshot_age_ms,
                   r.min_snapshots_to_keep) for n, r in m.refs.items())
    jrefs = sorted(tuple(r) for r in java.sql(
        f"SELECT name, type, snapshot_id, max_reference_age_in_ms, max_snapshot_age_in_ms, min_snapshots_to_keep "
        f"FROM ref.db.{name}.refs").collect())
    assert refs == jrefs
    manifests = sorted((mf.manifest_path, mf.content, mf.partition_spec_id, mf.added_snapshot_id,
                        mf.added_files_count, mf.existing_files_count, mf.deleted_files_count)
                       for mf in read_manifest_list(IO.read(m.current_snapshot.manifest_list)))
    jmanifests = sorted(tuple(r) for r in java.sql(
        f"SELECT path, content, partition_spec_id, added_snapshot_id, added_data_files_count + "
        f"added_delete_files_count, existing_data_files_count + existing_delete_files_count, "
        f"deleted_data_files_count + deleted_delete_files_count FROM ref.db.{name}.manifests").collect())
    assert manifests == jmanifests


@pytest.mark.parametrize("name", ["v3_dv", "v2_to_v3"])
def test_deletion_vectors_roundtrip_bit_for_bit(corpus, java, java_warehouse, name):
    t = current(java_warehouse, name)
    dvs = [e.data_file for _, e in live_entries(t, t.metadata.current_snapshot)
           if e.data_file.content == POSITION_DELETES and e.data_file.file_format == "puffin"]
    assert dvs, "the corpus should hold deletion vectors"
    java_positions = {}
    for r in java.sql(f"SELECT delete_file_path, file_path, pos FROM ref.db.{name}.position_deletes").collect():
        java_positions.setdefault((r[0], r[1]), []).append(r[2])
    for dv in dvs:
        data = IO.read(dv.file_path)
        footer = read_footer(data, dv.file_path)
        (blob,) = [b for b in footer.blobs if b.offset == dv.content_offset]
        assert blob.length == dv.content_size_in_bytes
        assert blob.type == "deletion-vector-v1"
        assert blob.properties["referenced-data-file"] == dv.referenced_data_file
        raw = read_blob(data, blob)
        positions = dv_positions(raw, dv.file_path)
        assert len(positions) == dv.record_count == int(blob.properties["cardinality"])
        assert serialize_dv(positions) == raw  # bit for bit
        assert sorted(java_positions[(dv.file_path, dv.referenced_data_file)]) == positions


def test_upgraded_table_keeps_v2_position_deletes_and_assigns_row_ids(corpus, java_warehouse):
    t = current(java_warehouse, "v2_to_v3")
    m = t.metadata
    assert m.format_version == 3 and m.next_row_id > 0
    pre = [s for s in m.snapshots if s.first_row_id is None]
    post = [s for s in m.snapshots if s.first_row_id is not None]
    assert pre and post  # snapshots from before the upgrade have no row ids
    entries = live_entries(t, m.current_snapshot)
    assert all(e.data_file.first_row_id is not None for _, e in entries if e.data_file.content == DATA)
    assert any(e.data_file.file_format == "parquet" and e.data_file.content == POSITION_DELETES
               for _, e in entries) or any(e.data_file.file_format == "puffin" for _, e in entries)


def test_equality_deletes_are_read(corpus, java_warehouse):
    t = current(java_warehouse, "v2_eqdeletes")
    deletes = [(mf, e) for mf, e in live_entries(t, t.metadata.current_snapshot) if e.data_file.content == 2]
    assert len(deletes) == 4
    assert {e.data_file.equality_ids for _, e in deletes} == {(1,)}
    specs = sorted({mf.partition_spec_id for mf, _ in deletes})
    assert specs == [0, 1]  # global (unpartitioned spec) and partitioned equality deletes
    assert all(mf.content == MANIFEST_DELETES for mf, _ in deletes)
    assert len({e.sequence_number for _, e in deletes}) == 4


def test_v1_table_features(corpus, java_warehouse):
    t = current(java_warehouse, "v1_evolve")
    m = t.metadata
    assert m.format_version == 1 and t.metadata_location.endswith(".gz.metadata.json")
    assert [str(f.transform) for f in m.default_spec.fields] == ["bucket[4]", "void", "day"]
    assert [f.field_id for f in m.default_spec.fields] == [1000, 1001, 1002]
    assert m.current_schema.find_field("label").field_id == 2


def test_v3_row_lineage_in_metadata(corpus, java_warehouse):
    m = current(java_warehouse, "v3_dv").metadata
    snaps = sorted(m.snapshots, key=lambda s: s.sequence_number)
    assert snaps[0].first_row_id == 0
    for a, b in zip(snaps, snaps[1:]):
        assert b.first_row_id >= a.first_row_id + a.added_rows or b.first_row_id >= a.first_row_id
    assert m.next_row_id == max(s.first_row_id + s.added_rows for s in m.snapshots)
    assert {"audit", "v_one", "main"} <= set(m.refs)
    assert m.refs["audit"].min_snapshots_to_keep == 2 and m.refs["audit"].max_ref_age_ms == 7 * 86400000


@pytest.mark.parametrize("name", ["v1_evolve", "v2_transforms", "v2_transforms_days", "v2_mor", "v3_dv",
                                  "v2_to_v3", "v2_evolution", "v2_nested", "v2_eqdeletes", "v2_many_files",
                                  "v1_partition_merge", "v2_prune_types"])
def test_columnar_decoding_of_java_manifests_equals_the_reference_decoder(corpus, java_warehouse, name, monkeypatch):
    """Planning decodes manifests of a few entries with fastavro and the rest into Arrow columns (compiled code),
    a snapshot's manifests together: the compiled decoder reads every manifest Java wrote and gives the
    reference decoder's rows, with every column (metrics, path bounds, eq stats)."""
    import dataclasses

    import pyarrow as pa

    from sparkberg.avro import compiled
    from sparkberg.avro.columnar import read_manifest_columns
    from sparkberg.planning.reference import reference_entries
    from sparkberg.planning.entries import EntryDecoder, PartitionLayout
    monkeypatch.delenv(compiled.SETTING, raising=False)
    m = TableMetadata.from_bytes(IO.read(metadata_files(java_warehouse, name)[-1]))
    layout = PartitionLayout(m)
    eq_types = {f.field_id: f.field_type for f in m.current_schema.fields if f.field_type.is_primitive}
    decoders = [EntryDecoder(layout, with_metrics=True, include_deleted=True, io=file_io_for()),
                EntryDecoder(layout, with_path_bounds=True, eq_types=eq_types, io=file_io_for())]

    def normalized(rows):
        return [{k: ("NaN" if isinstance(v, float) and v != v else v) for k, v in r.items()} for r in rows]
    checked = 0
    for snap in m.snapshots:
        manifests = read_manifest_list(IO.read(snap.manifest_list), snap.manifest_list)
        for dec in decoders:
            together = []
            for k, mf in enumerate(manifests):
                data = IO.read(mf.manifest_path)
                assert read_manifest_columns(data, dec._physical(mf.partition_spec_id)) is not None, mf.manifest_path
                columnar_mf = dataclasses.replace(mf, added_files_count=None, existing_files_count=None,
                                                  deleted_files_count=None)  # (no counts: the columnar reader decides)
                expected = pa.Table.from_pylist(reference_entries(dec, mf, k, data), schema=dec.schema).to_pylist()
                assert normalized(dec.decode_table(columnar_mf, k, data).to_pylist()) == normalized(expected), \
                    mf.manifest_path
                together += expected
                checked += 1
            got = dec.load_many((dataclasses.replace(mf, added_files_count=None), k, IO)
                                for k, mf in enumerate(manifests))
            assert normalized(got.to_pylist()) == normalized(together), snap.manifest_list
    assert checked


def test_the_doctor_finds_nothing_wrong_in_java_s_tables(corpus, java, java_warehouse):
    # (every table Iceberg Java wrote for the corpus, every format version, at the deepest level)
    import sparkberg
    for name in corpus:
        t = sparkberg.load_table(java, os.path.join(java_warehouse, "db", name))
        found = [(r["rule"], r["location"], r["detail"]) for r in t.check("data").collect()]
        assert found == [], name
