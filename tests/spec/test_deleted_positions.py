"""How merge-on-read reads find each row's data file and its deleted positions, without Spark: the file ids
taken from a hash of the file's name (XXH64, as Spark's ``xxhash64``), the grouping of position delete sources
by data file, and the bitmaps of deleted positions built from position delete files and DVs."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkberg.io.fileio import file_io_for
from sparkberg.read.fileids import ID_BITS, FileIds, FileSlots, file_name, xxh64
from sparkberg.read.positions import DeletedPositions, _by_slot, _position_delete_units
from sparkberg.spark.tuning import ReadTuning
from sparkberg.format.puffin import serialize_dv


@pytest.mark.parametrize("data, seed, expected", [
    # the XXH64 reference test values (xxHash's own sanity checks and python-xxhash's documentation)
    (b"", 0, 0xEF46DB3751D8E999),
    (b"a", 0, 0xD24EC4F1A98C6E5B),
    (b"abc", 0, 0x44BC2CF5AD770999),
    (b"Nobody inspects the spammish repetition", 0, 0xFBCEA83C8A378BF1),  # > 32 bytes: the four-lane loop
])
def test_xxh64_reference_values(data, seed, expected):
    assert xxh64(data, seed) == expected


def test_file_ids_are_distinct_slices_of_the_name_hashes():
    paths = [f"s3://bucket/t/data/ts_day=2024-01-{d:02d}/0000{d}-0-6f1c2a9e-{d:04d}-00001.parquet"
             for d in range(1, 31)]
    ids = FileIds(paths, ReadTuning().name_ids_max_files)
    assert ids.shift is not None
    assert len(set(ids.ids)) == len(paths) and all(0 <= i < 1 << ID_BITS for i in ids.ids)
    for p, i in zip(paths, ids.ids):  # what Spark computes from _metadata.file_name
        assert (xxh64(file_name(p).encode()) >> ids.shift) & ((1 << ID_BITS) - 1) == i


@pytest.mark.parametrize("paths", [
    ["/w/a/data.parquet", "/w/b/data.parquet"],  # one name in two directories
    ["/w/a/part one.parquet", "/w/a/part-two.parquet"],  # a name Hadoop's Path might spell differently
    [],
])
def test_file_ids_fall_back_to_indexes(paths):
    ids = FileIds(paths, ReadTuning().name_ids_max_files)
    assert ids.shift is None and ids.ids == list(range(len(paths)))


def test_file_ids_of_too_many_files_are_indexes():
    limit = ReadTuning().name_ids_max_files
    assert FileIds([f"/w/{i}.parquet" for i in range(limit + 1)], limit).shift is None
    assert FileIds([f"/w/{i}.parquet" for i in range(3)], 2).shift is None
    assert FileIds([f"/w/{i}.parquet" for i in range(3)], 3).shift is not None


def test_file_name_is_the_last_segment():
    assert file_name("file:///w/t/data/x=1/a.parquet") == "a.parquet"
    assert file_name("s3://b/k/a.parquet") == "a.parquet"


def test_units_keep_every_source_of_a_data_file_together():
    # d1 and d2 share data file 5, so one unit; d3 stands alone; the DV of file 5 joins d1 and d2, that of 9 not
    applies = {"d1": {"a": 5}, "d2": {"a": 5, "b": 6}, "d3": {"c": 7}}
    formats = {"d1": "parquet", "d2": "parquet", "d3": "orc"}
    dvs = [(5, "p.puffin", 4, 10), (9, "p.puffin", 14, 10)]
    units = [json.loads(u) for u in _position_delete_units(applies, formats, dvs)]
    as_sets = sorted((sorted(p for p, _ in u["files"]), sorted(d[3] for d in u["dvs"])) for u in units)
    assert as_sets == [([], [9]), (["d1", "d2"], [5]), (["d3"], [])]


def _bits(words):
    return {w * 64 + b for w, word in enumerate(words) for b in range(64) if (word >> b) & 1}


def test_bitmaps_of_position_delete_files_and_dvs(tmp_path):
    # spec "Position Delete Files": rows (file_path, pos) delete from the files the plan applied them to; rows
    # naming other files are dropped; two delete files of one data file add up; positions past the data file's
    # record count name no row. "Deletion Vectors": the positions of one data file, from a Puffin blob.
    schema = pa.schema([pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
                        pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"})])
    one, two = str(tmp_path / "one.parquet"), str(tmp_path / "two.parquet")
    pq.write_table(pa.table([["file:/w/a.parquet", "file:/w/other.parquet", "file:/w/a.parquet"], [0, 1, 64]],
                            schema=schema), one)
    pq.write_table(pa.table([["file:/w/a.parquet", "file:/w/a.parquet"], [70, 1000]], schema=schema), two)
    blob = serialize_dv([2, 63, 64, 9999, 10000])
    puffin = tmp_path / "dv.puffin"
    puffin.write_bytes(b"PFA1" + blob)
    decoder = DeletedPositions({one: {"file:/w/a.parquet": 3}, two: {"file:/w/a.parquet": 3}},
                               {3: 100, 8: 10000, 11: 2}, io=file_io_for())
    unit = json.dumps({"files": [[one, "parquet"], [two, "parquet"]], "dvs": [[str(puffin), 4, len(blob), 8]]})
    empty = json.dumps({"files": [], "dvs": [[str(puffin), 4, len(blob), 11]]})  # all past file 11's 2 rows
    out = {}
    for b in decoder(iter([pa.record_batch([pa.array([unit, empty])], names=["unit"])])):
        for fid, words in zip(b.column(0).to_pylist(), b.column(1).to_pylist()):
            assert fid not in out
            out[fid] = _bits(words)
    assert out == {3: {0, 64, 70}, 8: {2, 63, 64, 9999}}


def test_bitmaps_of_interleaved_unsorted_positions(tmp_path):
    # spec "Position Delete Files" asks writers to sort rows by file and position; a reader must not depend on
    # it: two data files' rows interleaved, positions out of order and repeated, give the same bitmaps, made
    # on the executors or on the driver.
    schema = pa.schema([pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
                        pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"})])
    one = str(tmp_path / "one.parquet")
    a, b = "file:/w/a.parquet", "file:/w/b.parquet"
    pq.write_table(pa.table([[b, a, b, a, a, a], [9, 65, 1, 5, 65, 2]], schema=schema), one)
    decoder = DeletedPositions({one: {a: 3, b: 5}}, {3: 100, 5: 100}, io=file_io_for())
    unit = json.dumps({"files": [[one, "parquet"]], "dvs": []})
    executors = {fid: _bits(words) for rb in decoder(iter([pa.record_batch([pa.array([unit])], names=["unit"])]))
                 for fid, words in zip(rb.column(0).to_pylist(), rb.column(1).to_pylist())}
    assert executors == {3: {2, 5, 65}, 5: {1, 9}}
    driver = decoder.on_driver([unit])
    assert {fid: _bits(words) for fid, words in zip(driver.column(0).to_pylist(),
                                                     driver.column(1).to_pylist())} == executors


def _bitmaps_of(decoder, units):
    table = decoder.on_driver(units)
    return {fid: _bits(words) for fid, words in zip(table.column(0).to_pylist(), table.column(1).to_pylist())}


def test_decoded_deletes_are_kept_between_reads(tmp_path, monkeypatch):
    # delete files never change once written: a second read of the same position delete file and DV decodes
    # nothing, and the plan's targets still filter the kept rows (another read may apply the file to other files)
    from sparkberg.read import positions
    from sparkberg.read.deletecache import DeleteCache
    DeleteCache.clear()
    schema = pa.schema([pa.field("file_path", pa.string(), True, {b"PARQUET:field_id": b"2147483546"}),
                        pa.field("pos", pa.int64(), True, {b"PARQUET:field_id": b"2147483545"})])
    one = str(tmp_path / "one.parquet")
    a, b = "file:/w/a.parquet", "file:/w/b.parquet"
    pq.write_table(pa.table([[a, b, a, None, a], [3, 4, 70, 5, None]], schema=schema), one)
    blob = serialize_dv([1, 2, 200])
    puffin = tmp_path / "dv.puffin"
    puffin.write_bytes(b"PFA1" + blob)
    unit = json.dumps({"files": [[one, "parquet"]], "dvs": [[str(puffin), 4, len(blob), 9]]})
    cache = DeleteCache(1 << 20)
    first = _bitmaps_of(DeletedPositions({one: {a: 3}}, {3: 100, 9: 300}, cache, io=file_io_for()), [unit])
    assert first == {3: {3, 70}, 9: {1, 2, 200}}

    def unread(*args):
        raise AssertionError("decoded again")
    monkeypatch.setattr(positions, "delete_file_rows", unread)
    monkeypatch.setattr(positions, "_dv_positions", unread)
    again = _bitmaps_of(DeletedPositions({one: {a: 3}}, {3: 100, 9: 300}, cache, io=file_io_for()), [unit])
    assert again == first
    # the same file applied to both data files, from the kept rows (a null path or position deletes nothing)
    both = _bitmaps_of(DeletedPositions({one: {a: 3, b: 4}}, {3: 100, 4: 100, 9: 300}, cache, io=file_io_for()), [unit])
    assert both == {3: {3, 70}, 4: {4}, 9: {1, 2, 200}}
    with pytest.raises(AssertionError, match="decoded again"):  # without the cache, every read decodes
        DeletedPositions({one: {a: 3}}, {3: 100, 9: 300}, io=file_io_for()).on_driver([unit])


def test_delete_cache_is_bounded():
    from sparkberg.read.deletecache import DeleteCache
    DeleteCache.clear()
    cache = DeleteCache(400)
    loads = []

    def get(key, size):
        return cache.get(key, lambda: loads.append(key) or key, lambda _: size)
    get("a", 100), get("b", 100), get("c", 100)
    get("a", 100)  # a hit: now the most recently used
    get("d", 100), get("e", 100)  # 500 bytes: the least recently used, b, goes
    assert loads == ["a", "b", "c", "d", "e"]
    get("a", 100), get("c", 100), get("b", 100)
    assert loads[5:] == ["b"]
    get("big", 101), get("big", 101)  # over a quarter of the bound: never kept
    assert loads[6:] == ["big", "big"]
    DeleteCache.clear()
    get("a", 100)
    assert loads[-1] == "a"


def test_delete_cache_settings():
    from sparkberg.errors import ValidationError
    from sparkberg.read.deletecache import ENABLED, MAX_BYTES, MAX_BYTES_DEFAULT, delete_cache

    class Session:
        def __init__(self, **conf):
            self.conf = type("Conf", (), {"get": lambda _, k, d=None: conf.get(k, d)})()
    assert delete_cache(Session()).max_bytes == MAX_BYTES_DEFAULT  # on by default, as Iceberg Java's
    assert delete_cache(Session(**{MAX_BYTES: "1000"})).max_bytes == 1000
    assert delete_cache(Session(**{ENABLED: "false"})) is None
    with pytest.raises(ValidationError, match="max-bytes must be a number of bytes, got 'lots'"):
        delete_cache(Session(**{MAX_BYTES: "lots"}))


def test_file_slots_are_the_fewest_bits_of_the_name_hashes_that_tell_the_files_apart():
    paths = [f"/w/t/data/p={i % 7}/{i:05d}-3-9a0c77e1-{i:04d}-00001.parquet" for i in range(48)]
    slots = FileSlots.of(paths, max_bits=16)
    assert slots is not None and len(set(slots.slots)) == len(paths)
    mask = (1 << slots.bits) - 1
    hashes = [xxh64(file_name(p).encode()) for p in paths]
    assert slots.slots == [(h >> slots.shift) & mask for h in hashes]  # what Spark computes from the name
    assert 1 << slots.bits >= len(paths)
    # no fewer bits would do, at any shift
    fewer = slots.bits - 1
    assert all(len({(h >> s) & ((1 << fewer) - 1) for h in hashes}) < len(paths) for s in range(64 - fewer + 1))


@pytest.mark.parametrize("paths, max_bits", [
    (["/w/a/data.parquet", "/w/b/data.parquet"], 16),  # one name twice
    (["/w/a/part one.parquet"], 16),  # a name Hadoop's Path might spell differently
    ([f"/w/{i}.parquet" for i in range(100)], 6),  # 100 files cannot have distinct slots among 64
])
def test_file_slots_are_none_when_names_cannot_tell_the_files_apart(paths, max_bits):
    assert FileSlots.of(paths, max_bits) is None


def test_bitmaps_by_slot():
    bitmaps = pa.table({"_bm_file": pa.array([7, 3], pa.int32()),
                        "_bitmap": pa.array([[1, 2], [4]], pa.list_(pa.int64()))}, schema=DeletedPositions.SCHEMA)
    slots = FileSlots(shift=11, bits=3, slots=[5, 0, 2])
    out = _by_slot(bitmaps, {7: 5, 3: 0, 9: 2}, slots)  # (file 9 has a slot and no bitmap: deletes nothing)
    assert out.column_names == ["_slots"] and out.num_rows == 1
    assert out.column(0).to_pylist() == [{"shift": 11, "mask": 7,
                                          "bitmaps": [[4], None, None, None, None, [1, 2], None, None]}]
