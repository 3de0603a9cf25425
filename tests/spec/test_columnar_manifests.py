"""The columnar manifest decoder (compiled code, into Arrow) gives exactly the rows of
the reference decoder (fastavro, entry by entry): inheritance, partition values of every transform result type
in physical form, partition and metrics pruning, deleted entries, metrics maps and delete path bounds."""
import contextlib
import os
import uuid
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import example, given, settings, strategies as st

from sparkberg.avro.columnar import map_get, read_manifest_columns
from sparkberg.avro.manifest import write_manifest
from sparkberg.io.fileio import FileIO, file_io_for
from sparkberg.format.manifests import (
    ADDED, DATA, DELETED, EQUALITY_DELETES, EXISTING, MANIFEST_DATA, MANIFEST_DELETES, POSITION_DELETES, DataFile,
    ManifestEntry, ManifestFile,
)
from sparkberg.expressions.predicates import bind
from sparkberg.expressions.sql import translate_filter
from sparkberg.planning.entries import EntryDecoder, PartitionLayout
from sparkberg.planning.reference import reference_entries
from sparkberg.planning.scan import MetricsFilter, _partition_filters
from sparkberg.format import types as T
from sparkberg.format import updates as U
from sparkberg.format.partitioning import PartitionField, PartitionSpec
from sparkberg.format.transforms import (
    BucketTransform, DayTransform, HourTransform, IdentityTransform, MonthTransform, TruncateTransform,
    VoidTransform, YearTransform,
)
from sparkberg.format.values import to_bytes


SCHEMA = T.Schema([
    T.NestedField(1, "id", T.LONG, True), T.NestedField(2, "ts", T.TIMESTAMP), T.NestedField(3, "amt",
                                                                                              T.DecimalType(9, 2)),
    T.NestedField(4, "u", T.UUID), T.NestedField(5, "name", T.STRING), T.NestedField(6, "d", T.DATE),
    T.NestedField(7, "t", T.TIME), T.NestedField(8, "tz", T.TIMESTAMPTZ), T.NestedField(9, "f", T.FLOAT),
    T.NestedField(10, "b", T.BOOLEAN), T.NestedField(11, "bin", T.BINARY), T.NestedField(12, "fx", T.FixedType(3)),
    T.NestedField(13, "i", T.INT), T.NestedField(14, "ns", T.TIMESTAMP_NS), T.NestedField(15, "dbl", T.DOUBLE),
])
SPEC = PartitionSpec(0, [
    PartitionField(2, 1000, DayTransform(), "ts_day"), PartitionField(1, 1001, BucketTransform(4), "id_bucket"),
    PartitionField(3, 1002, IdentityTransform(), "amt"), PartitionField(4, 1003, IdentityTransform(), "u"),
    PartitionField(5, 1004, TruncateTransform(2), "name_trunc"), PartitionField(6, 1005, IdentityTransform(), "d"),
    PartitionField(7, 1006, IdentityTransform(), "t"), PartitionField(8, 1007, HourTransform(), "tz_hour"),
    PartitionField(9, 1008, IdentityTransform(), "f"), PartitionField(10, 1009, IdentityTransform(), "b"),
    PartitionField(11, 1010, IdentityTransform(), "bin"), PartitionField(12, 1011, IdentityTransform(), "fx"),
    PartitionField(13, 1012, IdentityTransform(), "i"), PartitionField(14, 1013, IdentityTransform(), "ns"),
    PartitionField(2, 1014, YearTransform(), "ts_year"), PartitionField(6, 1015, MonthTransform(), "d_month"),
    PartitionField(15, 1016, VoidTransform(), "dbl_void"), PartitionField(15, 1017, IdentityTransform(), "dbl"),
])
METADATA = U.new_table_metadata(SCHEMA, "file:///wh/t", SPEC, format_version=3, fresh_ids=False)

partitions = st.fixed_dictionaries({
    1000: st.none() | st.integers(-3, 3), 1001: st.none() | st.integers(0, 3),
    1002: st.none() | st.sampled_from([Decimal("1.50"), Decimal("-2.00")]),
    1003: st.none() | st.sampled_from([uuid.UUID(int=7), uuid.UUID(int=2 ** 127)]),
    1004: st.none() | st.sampled_from(["ab", "é"]), 1005: st.none() | st.integers(-2, 2),
    1006: st.none() | st.sampled_from([0, 86_399_999_999]), 1007: st.none() | st.integers(-5, 5),
    1008: st.none() | st.sampled_from([1.5, -0.0, float("inf")]), 1009: st.none() | st.booleans(),
    1010: st.none() | st.sampled_from([b"", b"\x00\xff"]), 1011: st.none() | st.sampled_from([b"abc", b"\x00\x01\x02"]),
    1012: st.none() | st.integers(-2 ** 31, 2 ** 31 - 1), 1013: st.none() | st.integers(-2 ** 62, 2 ** 62),
    1014: st.none() | st.integers(-1, 1), 1015: st.none() | st.integers(0, 2), 1016: st.none(),
    1017: st.none() | st.sampled_from([0.25, float("nan")]),
})
ids = st.integers(0, 100)
entries = st.lists(st.tuples(st.sampled_from([EXISTING, ADDED, DELETED]), partitions, st.integers(0, 50), ids, ids,
                             st.none() | st.integers(0, 500), st.booleans()), max_size=12)
FILTERS = [None, "id >= 20 AND id < 40", "name LIKE 'a%' OR amt > 1.00", "ts >= TIMESTAMP_NTZ'1970-01-02 00:00:00'",
           "u = '00000000-0000-0000-0000-000000000007'", "d IS NULL OR i < 0", "b = true AND fx IS NOT NULL"]


# the decoder that reads manifests into columns: compiled code, or (compiled code off) the reference decoder's
# objects turned into columns (what planning reads where compiled code declines)
DECODERS = ["compiled", "reference"]


@contextlib.contextmanager
def fast_decoder(name: str):
    """Manifests decoded into columns by the named decoder."""
    from sparkberg.avro import compiled
    saved = os.environ.get(compiled.SETTING)
    os.environ[compiled.SETTING] = "true" if name == "compiled" else "false"
    try:
        yield
    finally:
        if saved is None:
            del os.environ[compiled.SETTING]
        else:
            os.environ[compiled.SETTING] = saved


def _entries(rows, content: int):
    out = []
    for k, (status, part, rc, lo, hi, first_row_id, explicit) in enumerate(rows):
        lo, hi = min(lo, hi), max(lo, hi)
        path = f"file:///wh/t/data/{k:03d}.parquet"
        d = DataFile(file_path=path, file_format="PARQUET", partition=part, record_count=rc, file_size_in_bytes=10 + rc,
                     content=content, value_counts={5: rc, 1: rc, 13: rc}, null_value_counts={1: 0, 13: rc // 3},
                     nan_value_counts={9: 0},
                     lower_bounds={5: b"a", 1: to_bytes(T.LONG, lo), 13: to_bytes(T.INT, lo - 50)},
                     upper_bounds={5: b"b", 1: to_bytes(T.LONG, hi), 13: to_bytes(T.INT, hi - 50)},
                     first_row_id=first_row_id if content == DATA else None,
                     equality_ids=(1,) if content == EQUALITY_DELETES else None, split_offsets=(4,) if explicit else None)
        if content == POSITION_DELETES:
            target = f"file:///wh/t/data/{k + 1:03d}.parquet".encode()
            pos = {2147483545: to_bytes(T.LONG, k)}  # (other keys than the path's in the maps it reads)
            d = DataFile(**{**d.__dict__, "lower_bounds": {**pos, 2147483546: target},
                            "upper_bounds": {2147483546: target, **pos},
                            "referenced_data_file": target.decode() if k % 2 else None})
        seq = None if status == ADDED and not explicit else k
        out.append(ManifestEntry(status, d, None if status == ADDED else 3, seq, seq))
    return out


def _decoders(expr: str | None, **kw):
    bound = bind(translate_filter(expr, SCHEMA), SCHEMA) if expr else None
    filters = _partition_filters(METADATA, bound) if bound is not None else None
    types = {f.field_id: f.field_type for f in SCHEMA.index_by_id().values()}
    metrics = MetricsFilter(bound, types) if bound is not None else None
    kw.setdefault("metrics_columns", len(SCHEMA.fields))  # (maps read by key, as a wide table's)
    return EntryDecoder(PartitionLayout(METADATA), partition_filters=filters, metrics_filter=metrics, io=file_io_for(),
                        **kw)


@pytest.mark.parametrize("decoder", DECODERS)
@settings(max_examples=60, deadline=None)
@given(entries, st.sampled_from([1, 2, 3]), st.sampled_from(FILTERS), st.sampled_from([0, 9]),
       st.none() | st.integers(0, 1000), st.booleans())
def test_columnar_decoding_equals_the_reference(decoder, rows, version, expr, manifest_seq, manifest_first_row_id,
                                                with_metrics):
    with fast_decoder(decoder):
        _check_columnar_decoding(decoder, rows, version, expr, manifest_seq, manifest_first_row_id, with_metrics)


def _check_columnar_decoding(decoder, rows, version, expr, manifest_seq, manifest_first_row_id, with_metrics):
    for content in ((DATA,) if version == 1 else (DATA, POSITION_DELETES, EQUALITY_DELETES)):
        es = _entries(rows, content)
        if version == 1:
            es = [ManifestEntry(e.status, e.data_file, e.snapshot_id or 1) for e in es]
        mcontent = MANIFEST_DATA if content == DATA else MANIFEST_DELETES
        data = write_manifest(es, format_version=version, spec=SPEC, schema=SCHEMA, content=mcontent)
        mf = ManifestFile("file:///wh/t/metadata/m.avro", len(data), 0, added_snapshot_id=77,
                          content=mcontent, sequence_number=manifest_seq,
                          first_row_id=manifest_first_row_id if version == 3 else None)
        # compiled code reads every type here
        assert (read_manifest_columns(data, _decoders(None)._physical(0)) is not None) == (decoder == "compiled")
        for include_deleted in (False, True):
            # (with equality delete columns' stats when deleted entries are included, to vary what is read)
            dec = _decoders(expr, with_metrics=with_metrics, include_deleted=include_deleted,
                            with_path_bounds=content == POSITION_DELETES,
                            eq_types={1: T.LONG, 13: T.INT} if include_deleted else None)
            expected = reference_entries(dec, mf, 4, data)
            got = dec.decode_table(mf, 4, data)
            assert got.schema == dec.schema
            assert _normalized(got.to_pylist()) == _normalized(pa.Table.from_pylist(expected, dec.schema).to_pylist())


def test_only_position_deletes_naming_no_data_file_carry_path_bounds():
    """A position delete file that names its data file applies to that file alone (spec
    ``referenced_data_file``): its file_path bounds prune nothing, so neither decoder extracts them."""
    rows = [(ADDED, {f: None for f in range(1000, 1018)}, 3, 0, 1, None, False)] * 3
    data = write_manifest(_entries(rows, POSITION_DELETES), format_version=2, spec=SPEC, schema=SCHEMA,
                          content=MANIFEST_DELETES)
    mf = ManifestFile("file:///wh/t/metadata/d.avro", len(data), 0, added_snapshot_id=7, content=MANIFEST_DELETES,
                      sequence_number=2)
    dec = _decoders(None, with_path_bounds=True)
    columnar = dec._from_columns([(mf, 0)], read_manifest_columns(data, dec._physical(0)))
    for got in (reference_entries(dec, mf, 0, data), columnar.to_pylist()):
        assert [(r["referenced_data_file"], r["_path_lower"], r["_path_upper"]) for r in got] == [
            (None, "file:///wh/t/data/001.parquet", "file:///wh/t/data/001.parquet"),
            ("file:///wh/t/data/002.parquet", None, None),
            (None, "file:///wh/t/data/003.parquet", "file:///wh/t/data/003.parquet")]


def _normalized(rows):
    """NaN != NaN: compare its repr."""
    def norm(v):
        if isinstance(v, float) and v != v:
            return "NaN"
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v
    return [norm(r) for r in rows]


def test_columnar_reader_declines_what_it_cannot_read():
    assert read_manifest_columns(b"") is None
    assert read_manifest_columns(b"Obj\x01garbage") is None
    import io

    import fastavro
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema({"type": "record", "name": "x", "fields": [
        {"name": "a", "type": "int"}]}), [{"a": 1}])
    assert read_manifest_columns(buf.getvalue()) is None  # not a manifest: the reference decoder names the problem


def test_columnar_decoding_reads_first_row_ids_of_the_spec_example():
    # spec "Row lineage example": manifest first_row_id 1000; data1 EXISTING (800), data2/data3 ADDED with none
    def df(path, rc, first=None):
        return DataFile(file_path=path, file_format="parquet", partition={}, record_count=rc, file_size_in_bytes=1,
                        first_row_id=first)
    es = [ManifestEntry(EXISTING, df("data1", 25, 800), 1, 1, 1), ManifestEntry(ADDED, df("data2", 50)),
          ManifestEntry(ADDED, df("data3", 50))]
    spec = PartitionSpec(0, [])
    meta = U.new_table_metadata(SCHEMA, "file:///wh/t", spec, format_version=3, fresh_ids=False)
    data = write_manifest(es, format_version=3, spec=spec, schema=SCHEMA)
    mf = ManifestFile("added1", len(data), 0, 1, sequence_number=2, first_row_id=1000)
    got = EntryDecoder(PartitionLayout(meta), io=file_io_for()).decode_table(mf, 0, data)
    assert got.column("first_row_id").to_pylist() == [800, 1000, 1050]
    assert got.column("sequence_number").to_pylist() == [1, 2, 2]


def test_auto_planning_goes_local_under_both_bounds():
    from sparkberg.planning.scan import LOCAL_MAX_BYTES_DEFAULT, LOCAL_MAX_FILES_DEFAULT, _small_enough
    from sparkberg.errors import ValidationError

    def mf(files, length=1000):
        return ManifestFile("m", length, 0, 1, added_files_count=files, existing_files_count=0, deleted_files_count=0)
    half = LOCAL_MAX_FILES_DEFAULT // 2
    assert _small_enough(METADATA, [mf(half), mf(LOCAL_MAX_FILES_DEFAULT - half)])
    assert not _small_enough(METADATA, [mf(half), mf(LOCAL_MAX_FILES_DEFAULT - half + 1)])  # too many entries
    assert _small_enough(METADATA, [mf(10, length=LOCAL_MAX_BYTES_DEFAULT)])
    assert not _small_enough(METADATA, [mf(10, length=LOCAL_MAX_BYTES_DEFAULT + 1)])  # too many bytes
    assert _small_enough(METADATA, [ManifestFile("m", 1000, 0, 1)])  # no counts (v1 lists): the bytes decide
    tuned = U.apply(U.SetProperties({"sparkberg.planning.local-max-files": "10"}), METADATA)
    assert not _small_enough(tuned, [mf(11)])
    bad = U.apply(U.SetProperties({"sparkberg.planning.local-max-files": "many"}), METADATA)
    with pytest.raises(ValidationError, match="local-max-files"):
        _small_enough(bad, [mf(1)])


# --- the manifest cache (decoded manifests as Arrow IPC files) ----------------------------------------------
class _CountingIO:
    """A FileIO holding one manifest, counting its reads."""

    def __init__(self, data: bytes):
        self.data, self.reads = data, 0

    def read(self, path: str) -> bytes:
        self.reads += 1
        return self.data


@pytest.mark.parametrize("decoder", DECODERS)
@settings(max_examples=25, deadline=None)
@given(entries, st.sampled_from([2, 3]), st.sampled_from(FILTERS))
def test_cached_manifests_decode_to_the_same_rows(tmp_path_factory, decoder, rows, version, expr):
    with fast_decoder(decoder):
        _check_cached_manifests(tmp_path_factory, decoder, rows, version, expr)


def _check_cached_manifests(tmp_path_factory, decoder, rows, version, expr):
    from sparkberg.avro.cache import ManifestCache
    cache = ManifestCache(str(tmp_path_factory.mktemp("cache")))
    for content in (DATA, POSITION_DELETES):
        mcontent = MANIFEST_DATA if content == DATA else MANIFEST_DELETES
        data = write_manifest(_entries(rows, content), format_version=version, spec=SPEC, schema=SCHEMA,
                              content=mcontent)
        mf = ManifestFile(f"file:///wh/t/metadata/m{content}.avro", len(data), 0, added_snapshot_id=77,
                          content=mcontent, sequence_number=9, first_row_id=100 if version == 3 else None)
        io = _CountingIO(data)
        dec = _decoders(expr, with_path_bounds=content == POSITION_DELETES, cache=cache)
        expected = _normalized(dec.decode_table(mf, 4, data).to_pylist())
        assert _normalized(dec.load(mf, 4, io).to_pylist()) == expected  # a miss: read, decoded, kept
        reads = io.reads
        assert _normalized(dec.load(mf, 4, io).to_pylist()) == expected  # a hit: not even read
        assert io.reads == reads


class _Files(FileIO):
    """A FileIO over paths held in memory."""

    def __init__(self, files: dict[str, bytes]):
        self.files = files

    def read(self, path: str) -> bytes:
        return self.files[path]


manifest_specs = st.lists(st.tuples(entries, st.sampled_from([0, 9]), st.none() | st.integers(0, 1000),
                                    st.sampled_from([None, 77])), min_size=1, max_size=5)


_ROW = (ADDED, {f: None for f in range(1000, 1018)}, 5, 1, 2, None, False)


@pytest.mark.parametrize("cached", [False, True])
@settings(max_examples=40, deadline=None)
@given(manifest_specs, st.sampled_from([1, 2, 3]), st.sampled_from(FILTERS), st.integers(0, 6),
       st.sampled_from([1, 4 << 20]))
@example(specs=[([_ROW, _ROW], 9, 1000, 77), ([(EXISTING, *_ROW[1:5], 40, False), _ROW], 0, 2000, None)], version=3,
         expr=None, min_entries=0, batch_bytes=4 << 20)  # (first row ids assigned in each manifest of one batch)
def test_manifests_decoded_together_equal_each_by_the_reference(tmp_path_factory, cached, specs, version, expr,
                                                               min_entries, batch_bytes):
    """Consecutive manifests decoded and filtered in one batch (one pass of the compiled decoder, or their cached
    columns joined) give each manifest's rows as the reference decoder does, in order: inheritance of snapshot ids,
    sequence numbers and first row ids per manifest, entry ordinals within each; where compiled code is not loaded,
    manifests decoded before the process has decoded ``min_entries`` entries (the load budget) go to the reference
    decoder between batches; batches end at ``batch_bytes``; batches decoded by several threads come out in
    order."""
    from sparkberg.avro import decode
    from sparkberg.planning import entries as E
    saved = decode.LOAD_BUDGET_ENTRIES, decode._reference_entries, decode._reference_manifests, E.BATCH_BYTES
    decode.LOAD_BUDGET_ENTRIES, decode._reference_entries, decode._reference_manifests, E.BATCH_BYTES = \
        min_entries, 0, 0, batch_bytes
    try:
        _check_manifests_together(tmp_path_factory, cached, specs, version, expr)
    finally:
        decode.LOAD_BUDGET_ENTRIES, decode._reference_entries, decode._reference_manifests, E.BATCH_BYTES = saved


def _check_manifests_together(tmp_path_factory, cached, specs, version, expr):
    from sparkberg.avro.cache import ManifestCache
    files, manifests = {}, []
    for k, (rows, seq, first_row_id, snapshot_id) in enumerate(specs):
        es = _entries(rows, DATA)
        if version == 1:
            es = [ManifestEntry(e.status, e.data_file, e.snapshot_id or 1) for e in es]
        data = write_manifest(es, format_version=version, spec=SPEC, schema=SCHEMA)
        path = f"file:///wh/t/metadata/m{k}.avro"
        files[path] = data
        manifests.append(ManifestFile(path, len(data), 0, added_snapshot_id=snapshot_id,
                                      sequence_number=0 if version == 1 else seq,
                                      first_row_id=first_row_id if version == 3 else None,
                                      added_files_count=len(es), existing_files_count=0, deleted_files_count=0))
    cache = ManifestCache(str(tmp_path_factory.mktemp("cache"))) if cached else None
    for include_deleted in (False, True):
        dec = _decoders(expr, include_deleted=include_deleted, cache=cache)
        io = _Files(files)
        expected = [r for k, mf in enumerate(manifests) for r in reference_entries(dec, mf, k + 3, files[mf.manifest_path])]
        for threads in (1, 3, 1):  # (cached: a miss, then hits; threads: batches decoded side by side, in order)
            got = dec.load_many(((mf, k + 3, io) for k, mf in enumerate(manifests)), threads)
            assert got.schema == dec.schema
            assert _normalized(got.to_pylist()) == _normalized(pa.Table.from_pylist(expected, dec.schema).to_pylist())


def test_manifests_decoded_together_in_one_pass():
    """Manifests of one writer schema are decoded together by one pass of the compiled decoder."""
    from sparkberg.avro import compiled
    from sparkberg.avro.columnar import read_manifests_columns
    datas = [write_manifest(_entries([(ADDED, {1000: k, 1001: 1}, 10, k, k + 5, None, False)] * (k + 1), DATA),
                            format_version=2, spec=SPEC, schema=SCHEMA) for k in range(3)]
    calls = []
    real = compiled.read_columns
    try:
        compiled.read_columns = lambda *a, **kw: calls.append(a[0]) or real(*a, **kw)
        mc = read_manifests_columns(datas, _decoders(None)._physical(0))
    finally:
        compiled.read_columns = real
    assert mc.file_rows == [1, 2, 3] and mc.num_rows == 6 and len(calls) == 1 and calls[0] == datas
    assert mc.columns["file_path"].to_pylist() == [f"file:///wh/t/data/{k:03d}.parquet"
                                                   for rows in (1, 2, 3) for k in range(rows)]
    other = write_manifest(_entries([(ADDED, {1000: 1, 1001: 1}, 10, 1, 5, None, False)], DATA), format_version=3,
                           spec=SPEC, schema=SCHEMA)
    assert read_manifests_columns([datas[0], other], _decoders(None)._physical(0)) is None  # (two writer schemas)


def _manifest(n: int = 3):
    rows = [(ADDED, {1000: k, 1001: 1}, 10, k, k + 5, None, False) for k in range(n)]
    data = write_manifest(_entries(rows, DATA), format_version=2, spec=SPEC, schema=SCHEMA)
    return ManifestFile("file:///wh/t/metadata/a.avro", len(data), 0, added_snapshot_id=1, sequence_number=1), data


def test_manifest_cache_keys_by_path_length_and_partition_types(tmp_path):
    from dataclasses import replace
    from sparkberg.avro.cache import ManifestCache
    cache = ManifestCache(str(tmp_path))
    mf, data = _manifest()
    cols = read_manifest_columns(data)
    cache.put(mf.manifest_path, mf.manifest_length, "types", cols)
    hit = cache.get(mf.manifest_path, mf.manifest_length, "types")
    assert hit.num_rows == 3 and hit.columns.keys() == cols.columns.keys()
    assert hit.partition.keys() == cols.partition.keys()
    assert all(hit.columns[k].equals(cols.columns[k]) for k in cols.columns)
    assert cache.get(mf.manifest_path, mf.manifest_length + 1, "types") is None  # another file at that path
    assert cache.get(mf.manifest_path + "x", mf.manifest_length, "types") is None
    assert cache.get(mf.manifest_path, mf.manifest_length, "other types") is None
    # the decoder keys by the manifest's partition types too: a promoted source type is decoded again
    dec = _decoders(None, cache=cache)
    io = _CountingIO(data)
    dec.load(replace(mf, manifest_path="file:///wh/t/metadata/b.avro"), 0, io)
    dec.load(replace(mf, manifest_path="file:///wh/t/metadata/b.avro"), 0, io)
    assert io.reads == 1


def test_a_damaged_cache_file_is_a_miss_and_is_removed(tmp_path):
    from sparkberg.avro.cache import ManifestCache
    cache = ManifestCache(str(tmp_path))
    mf, data = _manifest()
    dec = _decoders(None, cache=cache)
    expected = dec.decode_table(mf, 0, data).to_pylist()
    dec.load(mf, 0, _CountingIO(data))
    [file] = list(tmp_path.iterdir())
    file.write_bytes(file.read_bytes()[:40])  # truncated
    io = _CountingIO(data)
    assert dec.load(mf, 0, io).to_pylist() == expected and io.reads == 1
    assert [f.stat().st_size for f in tmp_path.iterdir()] != [40]  # decoded again, kept again whole


def test_manifest_cache_evicts_the_least_recently_used(tmp_path):
    import os
    from sparkberg.avro.cache import ManifestCache
    mf, data = _manifest(50)
    cols = read_manifest_columns(data)
    probe = ManifestCache(str(tmp_path / "probe"))
    probe.put("p", 1, "t", cols)
    size = os.path.getsize(next((tmp_path / "probe").iterdir()))
    cache = ManifestCache(str(tmp_path / "c"), max_bytes=int(size * 3.5))
    for k in range(3):
        cache.put(f"m{k}", 1, "t", cols)
        os.utime(cache._file(f"m{k}", 1, "t"), (1000 + k, 1000 + k))
    assert cache.get("m0", 1, "t") is not None  # m0 is now the most recently used
    cache.put("m3", 1, "t", cols)
    cache.evict()  # over the bound: down to 80% of it, oldest first
    assert [cache.get(f"m{k}", 1, "t") is not None for k in range(4)] == [True, False, False, True]


def test_manifest_cache_keeps_what_this_process_mapped_within_its_bound(tmp_path):
    import os
    from sparkberg.avro.cache import ManifestCache
    mf, data = _manifest(50)
    cols = read_manifest_columns(data)
    cache = ManifestCache(str(tmp_path))
    cache.put("m0", 1, "t", cols)
    first = cache.get("m0", 1, "t")
    os.remove(cache._file("m0", 1, "t"))
    # every cache object of the process, on the same directory, still has it: no file is opened again
    again = ManifestCache(str(tmp_path)).get("m0", 1, "t")
    assert again is first and again.columns["file_path"].equals(cols.columns["file_path"])
    assert ManifestCache(str(tmp_path / "other")).get("m0", 1, "t") is None
    # at most max_bytes of mapped files: the least recently used are dropped first
    size = sum(a.nbytes for a in [*first.columns.values(), *first.partition.values()])
    small = ManifestCache(str(tmp_path / "small"), max_bytes=int(size * 2.5))
    for k in range(3):
        small.put(f"s{k}", 1, "t", cols)
        assert small.get(f"s{k}", 1, "t") is not None
        os.remove(small._file(f"s{k}", 1, "t"))
    assert [small.get(f"s{k}", 1, "t") is not None for k in range(3)] == [False, True, True]


def test_a_process_reads_a_manifest_list_once_within_its_bounds():
    from sparkberg.avro import cache as C
    C._LISTS.clear()
    reads = []

    def read(path, n=1):
        reads.append(path)
        return [path] * n  # (a manifest list of n manifests)
    assert C.remembered_manifest_list("a", lambda: read("a")) == ["a"]
    assert C.remembered_manifest_list("a", lambda: read("a")) == ["a"] and reads == ["a"]
    for k in range(C.MANIFEST_LISTS):  # (as many lists again: "a", the least recently used, is dropped)
        C.remembered_manifest_list(f"l{k}", lambda: read("l"))
    assert C.remembered_manifest_list("a", lambda: read("a")) == ["a"] and reads.count("a") == 2
    # (lists of more manifests than the bound in all: the least recently used go first, the newest is kept)
    C.remembered_manifest_list("big", lambda: read("big", C.MANIFEST_LIST_ENTRIES - 1))
    assert C.remembered_manifest_list("a", lambda: read("a")) == ["a"] and reads.count("a") == 2
    C.remembered_manifest_list("bigger", lambda: read("bigger", C.MANIFEST_LIST_ENTRIES))
    assert len(C._LISTS) == 1 and C._LISTS.weight == C.MANIFEST_LIST_ENTRIES
    C.remembered_manifest_list("big", lambda: read("big", C.MANIFEST_LIST_ENTRIES - 1))
    assert reads.count("big") == 2
    C._LISTS.clear()


def test_manifest_columns_keep_the_map_values_they_looked_up():
    mf, data = _manifest(5)
    cols = read_manifest_columns(data)
    value = cols.value("lower_bounds", 1)
    assert value.equals(map_get(cols.columns["lower_bounds"], 1)) and value.null_count < 5
    assert cols.value("lower_bounds", 1) is value


def test_decoders_keep_only_the_metrics_of_the_fields_they_read():
    """A decoder that does not output the metrics maps keeps only the items of the fields its metrics filter,
    equality delete columns and delete path bounds read; those look up as in the whole maps, others are an
    error (not a missing metric, which would keep files a filter could prune)."""
    assert _decoders("id >= 20 AND (i < 0 OR d IS NULL)")._metric_keys == {1, 13, 6}
    assert _decoders("id >= 20", with_metrics=True)._metric_keys is None
    assert _decoders(None, with_path_bounds=True, eq_types={13: T.INT})._metric_keys == {2147483546, 13}
    assert _decoders(None)._metric_keys == frozenset()
    # narrow maps (few columns, or many keys read of them) are kept whole: reading by key costs more there
    assert _decoders("id >= 20", metrics_columns=7)._metric_keys is None
    assert _decoders("id >= 20 AND i < 0", metrics_columns=8)._metric_keys == {1, 13}
    assert _decoders("id >= 20 AND i < 0 AND d IS NULL", metrics_columns=11)._metric_keys is None
    assert _decoders("id >= 20", metrics_columns=None)._metric_keys is None
    es = _entries([(ADDED, {}, 10, k, k + 5, None, False) for k in range(40)], DATA)
    data = write_manifest(es, format_version=2, spec=SPEC, schema=SCHEMA, content=MANIFEST_DATA)
    every = read_manifest_columns(data)
    kept = read_manifest_columns(data, None, None, frozenset({13}))
    assert kept.metric_keys == {13} and every.metric_keys is None
    for name in ("value_counts", "null_value_counts", "lower_bounds", "upper_bounds"):
        assert kept.value(name, 13).equals(every.value(name, 13)) and every.value(name, 13).null_count == 0
        with pytest.raises(KeyError, match="metrics of field 1 were not decoded"):
            kept.value(name, 1)
    assert kept.columns["lower_bounds"].to_pylist()[0] == [(13, to_bytes(T.INT, -50))]
    assert kept.columns["nan_value_counts"].to_pylist()[0] == []


def test_manifest_cache_is_off_unless_the_session_enables_it(tmp_path):
    from sparkberg.avro.cache import manifest_cache
    from sparkberg.errors import ValidationError

    def setting(**conf):
        conf = {f"spark.sparkberg.manifest-cache.{k.replace('_', '-')}": v for k, v in conf.items()}
        return lambda key, default: conf.get(key, default)
    assert manifest_cache(setting()) is None
    assert manifest_cache(setting(enabled="false", dir=str(tmp_path))) is None
    c = manifest_cache(setting(enabled="true", dir=str(tmp_path), max_bytes="1000"))
    assert (c.directory, c.max_bytes) == (str(tmp_path), 1000)
    assert manifest_cache(setting(enabled="TRUE")).max_bytes == 1 << 30
    with pytest.raises(ValidationError, match="max-bytes"):
        manifest_cache(setting(enabled="true", max_bytes="1G"))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.none() | st.lists(st.tuples(st.integers(0, 4), st.binary(max_size=3)), max_size=4), max_size=8),
       st.integers(0, 4), st.integers(0, 8), st.integers(0, 8))
def test_map_get_equals_arrow_map_lookup(maps, key, start, length):
    import pyarrow.compute as pc
    from sparkberg.avro.columnar import map_get
    arr = pa.array(maps, pa.map_(pa.int32(), pa.binary())).slice(start, length)
    expected = pc.map_lookup(arr, pa.scalar(key, pa.int32()), "first").to_pylist() if len(arr) else []
    assert map_get(arr, key).to_pylist() == expected


def test_avro_header_schema_is_read_like_fastavro_reads_it():
    # Avro spec "Object Container Files": magic, then the metadata map as blocks of (count, [size], entries);
    # a negative count is followed by the block's size in bytes
    import io as _io

    import fastavro

    from sparkberg.avro.columnar import _avro_schema
    mf, data = _manifest()
    assert _avro_schema(data) == fastavro.reader(_io.BytesIO(data)).metadata["avro.schema"]

    def zigzag(n: int) -> bytes:
        n = (n << 1) ^ (n >> 63)
        out = b""
        while True:
            if n < 0x80:
                return out + bytes([n])
            out += bytes([(n & 0x7F) | 0x80])
            n >>= 7

    def string(b: bytes) -> bytes:
        return zigzag(len(b)) + b
    schema = '{"type": "record", "name": "r", "fields": [{"name": "' + "x" * 200 + '", "type": "int"}]}'
    entries = string(b"avro.codec") + string(b"null") + string(b"avro.schema") + string(schema.encode())
    header = b"Obj\x01" + zigzag(-2) + zigzag(len(entries)) + entries + zigzag(0) + b"\x00" * 16
    assert _avro_schema(header) == schema
    with pytest.raises(ValueError, match="avro.schema"):
        _avro_schema(b"Obj\x01" + zigzag(1) + string(b"avro.codec") + string(b"null") + zigzag(0))
