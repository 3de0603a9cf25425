"""The compiled Avro decoder gives fastavro's values for every field it keeps, on generated records of a schema
with every Avro type: primitives, optional fields, fixed, enums, arrays of values and of records, arrays of
arrays, records in records; maps and unions of several types are stepped over, and arrays and maps of flat items
that nothing is kept of in one instruction (blocks that give their size in bytes: whole); several blocks, both
codecs (deflate by ISA-L or zlib), several files in one pass. Files it cannot read exactly (truncated, corrupt, a codec
it lacks) are declined (None)."""
import copy
import io
import json

import fastavro
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sparkberg.avro import compiled
from sparkberg.avro.compiled import ITEMS, read_columns
from sparkberg.avro.manifest import avro_long

RAW_SCHEMA = {"type": "record", "name": "r", "fields": [
    {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
    {"name": "f", "type": "float"}, {"name": "d", "type": "double"}, {"name": "s", "type": "string"},
    {"name": "by", "type": "bytes"}, {"name": "fx", "type": {"type": "fixed", "name": "f3", "size": 3}},
    {"name": "e", "type": {"type": "enum", "name": "abc", "symbols": ["A", "B", "C"]}},
    {"name": "opt", "type": ["null", "long"]}, {"name": "multi", "type": ["null", "int", "string"]},
    {"name": "arr", "type": {"type": "array", "items": "long"}},
    {"name": "recs", "type": {"type": "array", "items": {"type": "record", "name": "kv", "fields": [
        {"name": "k", "type": "int"}, {"name": "v", "type": ["null", "bytes"]}]}}},
    {"name": "nested", "type": {"type": "array", "items": {"type": "array", "items": "int"}}},
    {"name": "m", "type": {"type": "map", "values": "long"}},
    {"name": "flat", "type": {"type": "array", "items": {"type": "record", "name": "fl", "fields": [
        {"name": "a", "type": "boolean"}, {"name": "b", "type": "float"}, {"name": "c", "type": "double"},
        {"name": "d", "type": "f3"}, {"name": "e", "type": "abc"}, {"name": "f", "type": "string"},
        {"name": "g", "type": {"type": "long"}}, {"name": "h", "type": "null"}]}}},
    {"name": "sub", "type": {"type": "record", "name": "sub", "fields": [
        {"name": "x", "type": "int"}, {"name": "y", "type": ["null", "string"]}, {"name": "again", "type": "f3"}]}},
]}
SCHEMA = fastavro.parse_schema(copy.deepcopy(RAW_SCHEMA))
LONGS = st.integers(-2 ** 63, 2 ** 63 - 1)
INTS = st.integers(-2 ** 31, 2 ** 31 - 1)
records = st.fixed_dictionaries({
    "b": st.booleans(), "i": INTS, "l": LONGS, "f": st.floats(width=32, allow_nan=False),
    "d": st.floats(allow_nan=False), "s": st.text(max_size=5), "by": st.binary(max_size=5),
    "fx": st.binary(min_size=3, max_size=3), "e": st.sampled_from(["A", "B", "C"]), "opt": st.none() | LONGS,
    "multi": st.none() | INTS | st.text(max_size=3), "arr": st.lists(LONGS, max_size=3),
    "recs": st.lists(st.fixed_dictionaries({"k": INTS, "v": st.none() | st.binary(max_size=3)}), max_size=3),
    "nested": st.lists(st.lists(INTS, max_size=2), max_size=3),
    "m": st.dictionaries(st.text(max_size=2), LONGS, max_size=2),
    "flat": st.lists(st.fixed_dictionaries({
        "a": st.booleans(), "b": st.floats(width=32, allow_nan=False), "c": st.floats(allow_nan=False),
        "d": st.binary(min_size=3, max_size=3), "e": st.sampled_from(["A", "B", "C"]), "f": st.text(max_size=3),
        "g": LONGS, "h": st.none()}), max_size=3),
    "sub": st.fixed_dictionaries({"x": INTS, "y": st.none() | st.text(max_size=3),
                                  "again": st.binary(min_size=3, max_size=3)})})
ROW = {"b": True, "i": -7, "l": 2 ** 40, "f": 1.5, "d": -0.25, "s": "é€", "by": b"\x00\xff", "fx": b"abc", "e": "C",
       "opt": None, "multi": "x", "arr": [3, -4], "recs": [{"k": 1, "v": None}, {"k": 2, "v": b"z"}],
       "nested": [[1], [], [2, 3]], "m": {"a": 1},
       "flat": [{"a": True, "b": 0.5, "c": 2.0, "d": b"def", "e": "B", "f": "ü", "g": -5, "h": None}] * 2,
       "sub": {"x": 9, "y": "q", "again": b"xyz"}}
PATHS = [(n,) for n in ("b", "i", "l", "f", "d", "s", "by", "fx", "e", "opt", "multi", "arr", "recs", "nested", "m",
                        "sub")]


def avro(rows, codec: str = "null", sync_interval: int = 64) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, SCHEMA, rows, codec=codec, sync_interval=sync_interval)
    return buf.getvalue()


def values(cols, path):
    raw, valid = cols.ints(path)
    return [int(v) if ok else None for v, ok in zip(raw, valid)]


def lists(cols, path, items):
    offsets, valid = cols.offsets(path)
    return [items[offsets[r]:offsets[r + 1]] if valid[r] else None for r in range(len(valid))]


def check(rows, cols):
    assert cols.num_rows == len(rows)
    assert [bool(v) for v in values(cols, ("b",))] == [r["b"] for r in rows]
    for name in ("i", "l", "opt"):
        assert values(cols, (name,)) == [r[name] for r in rows]
    assert values(cols, ("e",)) == [["A", "B", "C"].index(r["e"]) for r in rows]
    f, _ = cols.floats(("f",))
    d, _ = cols.floats(("d",))
    assert f.astype(np.float32).tolist() == [np.float32(r["f"]) for r in rows] and d.tolist() == [r["d"] for r in rows]
    assert cols.binary(("s",), string=True).to_pylist() == [r["s"] for r in rows]
    for name in ("by", "fx"):
        assert cols.binary((name,)).to_pylist() == [r[name] for r in rows]
    assert not cols.has(("multi",)) and not cols.has(("m", ITEMS)) and not cols.has(("flat",))  # (stepped over)
    assert lists(cols, ("arr",), values(cols, ("arr", ITEMS))) == [r["arr"] for r in rows]
    kv = [{"k": k, "v": v} for k, v in zip(values(cols, ("recs", ITEMS, "k")),
                                           cols.binary(("recs", ITEMS, "v")).to_pylist())]
    assert lists(cols, ("recs",), kv) == [r["recs"] for r in rows]
    inner = lists(cols, ("nested", ITEMS), values(cols, ("nested", ITEMS, ITEMS)))
    assert lists(cols, ("nested",), inner) == [r["nested"] for r in rows]
    assert values(cols, ("sub", "x")) == [r["sub"]["x"] for r in rows]
    assert cols.binary(("sub", "y"), string=True).to_pylist() == [r["sub"]["y"] for r in rows]
    assert cols.binary(("sub", "again")).to_pylist() == [r["sub"]["again"] for r in rows]


@settings(max_examples=150, deadline=None)
@given(st.lists(records, max_size=12), st.sampled_from(["null", "deflate"]), st.sampled_from([16, 1000]))
def test_compiled_decoding_equals_fastavro(rows, codec, sync_interval):
    data = avro(rows, codec, sync_interval)
    assert [r for r in fastavro.reader(io.BytesIO(data))] == rows  # (the rows as written)
    cols = read_columns(data, PATHS)
    assert cols is not None
    check(rows, cols)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(records, max_size=5), min_size=1, max_size=4))
def test_several_files_of_one_schema_decode_in_one_pass(files):
    cols = read_columns([avro(rows, "deflate") for rows in files], PATHS)
    assert cols is not None and cols.file_rows == [len(rows) for rows in files]
    check([r for rows in files for r in rows], cols)


def test_only_the_paths_asked_for_are_kept():
    rows = [{**ROW, "arr": [1, 2]}]
    cols = read_columns(avro(rows), [("arr",), ("sub", "x")])
    assert cols.has(("arr", ITEMS)) and cols.has(("sub", "x")) and not cols.has(("i",)) and not cols.has(("sub", "y"))
    assert values(cols, ("arr", ITEMS)) == [1, 2] and values(cols, ("sub", "x")) == [9]


def test_arrays_and_maps_of_flat_items_that_no_path_keeps_are_stepped_over_in_one_instruction():
    prog = compiled.program(json.dumps(RAW_SCHEMA), frozenset([("i",), ("sub", "x")]))
    # arr (longs), m (a map of longs), flat (records of primitives, fixed and enums), nested's inner arrays (of
    # ints); not recs (a union in its items) nor nested itself (arrays in it: its items stepped one by one)
    assert prog.code_array[:, 0].tolist().count(compiled.OP_SKIP_ARRAY) == 4
    kept = compiled.program(json.dumps(RAW_SCHEMA), frozenset([("arr",), ("m",), ("flat",)]))
    assert kept.code_array[:, 0].tolist().count(compiled.OP_SKIP_ARRAY) == 1  # (nested's inner arrays only)
    rows = [{**ROW, "i": i, "arr": list(range(i)), "m": {str(k): k for k in range(i)}, "flat": ROW["flat"] * i}
            for i in range(5)]
    cols = read_columns(avro(rows), [("i",), ("sub", "x")])
    assert values(cols, ("i",)) == list(range(5)) and values(cols, ("sub", "x")) == [9] * 5


def raw_container(schema: dict, records: list[bytes]) -> bytes:
    """An Avro object container file (no codec) of one block of already encoded ``records``."""
    text = json.dumps(schema).encode()
    meta = avro_long(1) + avro_long(len(b"avro.schema")) + b"avro.schema" + avro_long(len(text)) + text + avro_long(0)
    sync = bytes(range(16))
    body = b"".join(records)
    return b"Obj\x01" + meta + sync + avro_long(len(records)) + avro_long(len(body)) + body + sync


def test_blocks_that_give_their_size_in_bytes_are_stepped_over_whole():
    """Arrays and maps may be written in blocks of a negative count followed by the block's size in bytes (Avro
    spec, "Complex Types"; Java's blocking encoder writes them): stepped over by that size, kept items decoded."""
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "a", "type": {"type": "array", "items": "long"}},
        {"name": "m", "type": {"type": "map", "values": "long"}}, {"name": "z", "type": "int"}]}
    first = avro_long(5) + avro_long(-300)
    pair = avro_long(1) + b"k" + avro_long(9)
    body = (avro_long(-2) + avro_long(len(first)) + first + avro_long(1) + avro_long(7) + avro_long(0) +
            avro_long(-1) + avro_long(len(pair)) + pair + avro_long(0) + avro_long(42))

    def container(record: bytes) -> bytes:
        return raw_container(schema, [record, record])

    data = container(body)
    assert list(fastavro.reader(io.BytesIO(data))) == [{"a": [5, -300, 7], "m": {"k": 9}, "z": 42}] * 2
    cols = read_columns(data, [("z",)])
    assert values(cols, ("z",)) == [42, 42]
    cols = read_columns(data, [("a",), ("z",)])
    assert lists(cols, ("a",), values(cols, ("a", ITEMS))) == [[5, -300, 7]] * 2 and values(cols, ("z",)) == [42, 42]
    # a block size past the data's end: stepping over by it is declined (to the decoders that read item by item,
    # as fastavro, which reads such a file whole); kept, the items are read one by one, as fastavro reads them
    bad = container(avro_long(-2) + avro_long(1000) + body[len(avro_long(-2) + avro_long(len(first))):])
    assert list(fastavro.reader(io.BytesIO(bad))) == [{"a": [5, -300, 7], "m": {"k": 9}, "z": 42}] * 2
    assert read_columns(bad, [("z",)]) is None
    cols = read_columns(bad, [("a",), ("z",)])
    assert lists(cols, ("a",), values(cols, ("a", ITEMS))) == [[5, -300, 7]] * 2 and values(cols, ("z",)) == [42, 42]


def test_what_it_cannot_read_exactly_is_declined():
    rows = [dict(ROW) for _ in range(20)]
    data = avro(rows, "deflate")
    assert read_columns(data[:-30], PATHS) is None  # truncated
    assert read_columns(b"not avro", PATHS) is None
    corrupt = bytearray(avro(rows, "null"))
    corrupt[-40:-17] = b"\xff" * 23  # (varints that never end, inside the last block)
    assert read_columns(bytes(corrupt), PATHS) is None
    buf = io.BytesIO()
    fastavro.writer(buf, SCHEMA, rows, codec="bzip2")
    assert read_columns(buf.getvalue(), PATHS) is None  # a codec it lacks
    other = io.BytesIO()
    fastavro.writer(other, fastavro.parse_schema({"type": "record", "name": "o", "fields": [
        {"name": "i", "type": "int"}]}), [{"i": 1}])
    assert read_columns([data, other.getvalue()], [("i",)]) is None  # two writer schemas


@pytest.mark.parametrize("inflater", ["isal", "zlib"])
def test_deflate_blocks_inflate_alike_by_isal_and_by_zlib(monkeypatch, inflater):
    import zlib
    if inflater == "isal":  # (a dependency: the decoder uses it)
        from isal import isal_zlib
        assert compiled._deflate is isal_zlib
    else:  # (the fallback where isal is missing)
        monkeypatch.setattr(compiled, "_deflate", zlib)
    rows = [{**ROW, "i": i, "s": "s" * (i % 7)} for i in range(300)]
    data = avro(rows, "deflate", 16)
    check(rows, read_columns(data, PATHS))
    _, pos = compiled.header(data)
    _, at = compiled._long(data, pos + 16)  # (the first block's record count, then its length)
    _, start = compiled._long(data, at)
    corrupt = bytearray(data)
    corrupt[start] = 0xFF  # (deflate block type 3: reserved, an error to any inflater)
    assert read_columns(bytes(corrupt), PATHS) is None


def test_arrays_longer_than_the_room_first_made_are_decoded_again_with_more():
    """A program's first file is counted before it is decoded; later files get room for as many items per row,
    and one with more is counted and decoded again."""
    compiled.program.cache_clear()
    for k in (2, 3, 200, 5):
        rows = [{**ROW, "arr": list(range(k)), "nested": [list(range(k))] * k} for _ in range(3)]
        cols = read_columns(avro(rows), [("arr",), ("nested",)])
        assert lists(cols, ("arr",), values(cols, ("arr", ITEMS))) == [list(range(k))] * 3
        inner = lists(cols, ("nested", ITEMS), values(cols, ("nested", ITEMS, ITEMS)))
        assert lists(cols, ("nested",), inner) == [[list(range(k))] * k] * 3


def test_turned_off_the_decoder_declines(monkeypatch):
    monkeypatch.setenv(compiled.SETTING, "false")
    assert read_columns(avro([dict(ROW)]), PATHS) is None


@pytest.mark.parametrize("n", [0, 1])
def test_empty_and_single_record_files(n):
    rows = [dict(ROW) for _ in range(n)]
    cols = read_columns(avro(rows), PATHS)
    assert cols is not None
    check(rows, cols)


# arrays of (int key, flat value) records, as Iceberg writes its metrics maps, of which a caller may want only
# the items of some keys; "other" has a union value, so its items are all kept whatever the keys
KEYED_SCHEMA = {"type": "record", "name": "k", "fields": [
    {"name": "counts", "type": ["null", {"type": "array", "logicalType": "map", "items": {
        "type": "record", "name": "k_v", "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "long"}]}}],
     "default": None},
    {"name": "bounds", "type": ["null", {"type": "array", "items": {"type": "record", "name": "k_b", "fields": [
        {"name": "key", "type": "int"}, {"name": "value", "type": "bytes"}]}}]},
    {"name": "fixed", "type": {"type": "array", "items": {"type": "record", "name": "k_f", "fields": [
        {"name": "key", "type": "long"}, {"name": "value", "type": {"type": "fixed", "name": "f2", "size": 2}}]}}},
    {"name": "text", "type": {"type": "array", "items": {"type": "record", "name": "k_s", "fields": [
        {"name": "key", "type": {"type": "int"}}, {"name": "value", "type": "string"}]}}},
    {"name": "other", "type": {"type": "array", "items": {"type": "record", "name": "k_o", "fields": [
        {"name": "key", "type": "int"}, {"name": "value", "type": ["null", "long"]}]}}},
    {"name": "z", "type": "int"},
]}
KEYED_PATHS = [("counts",), ("bounds",), ("fixed",), ("text",), ("other",), ("z",)]
KEYS = st.integers(-2, 6)
keyed_records = st.fixed_dictionaries({
    "counts": st.none() | st.lists(st.fixed_dictionaries({"key": KEYS, "value": LONGS}), max_size=6),
    "bounds": st.none() | st.lists(st.fixed_dictionaries({"key": KEYS, "value": st.binary(max_size=9)}), max_size=6),
    "fixed": st.lists(st.fixed_dictionaries({"key": KEYS, "value": st.binary(min_size=2, max_size=2)}), max_size=4),
    "text": st.lists(st.fixed_dictionaries({"key": KEYS, "value": st.text(max_size=3)}), max_size=4),
    "other": st.lists(st.fixed_dictionaries({"key": KEYS, "value": st.none() | LONGS}), max_size=3),
    "z": INTS})


def keyed_avro(rows, codec: str = "null") -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(copy.deepcopy(KEYED_SCHEMA)), rows, codec=codec, sync_interval=64)
    return buf.getvalue()


def keyed_items(cols, name: str, value) -> list:
    items = [{"key": k, "value": v} for k, v in zip(values(cols, (name, ITEMS, "key")), value)]
    return lists(cols, (name,), items)


def check_keyed(rows, cols, keys):
    def wanted(items, name):
        return None if items is None else [i for i in items if name == "other" or i["key"] in keys]
    assert values(cols, ("z",)) == [r["z"] for r in rows]
    assert keyed_items(cols, "counts", values(cols, ("counts", ITEMS, "value"))) == \
        [wanted(r["counts"], "counts") for r in rows]
    for name, string in (("bounds", False), ("fixed", False), ("text", True)):
        found = cols.binary((name, ITEMS, "value"), string=string).to_pylist()
        assert keyed_items(cols, name, found) == [wanted(r[name], name) for r in rows]
    assert keyed_items(cols, "other", values(cols, ("other", ITEMS, "value"))) == [r["other"] for r in rows]


@settings(max_examples=120, deadline=None)
@given(st.lists(keyed_records, max_size=10), st.frozensets(KEYS, max_size=3), st.sampled_from(["null", "deflate"]))
def test_arrays_of_keyed_records_keep_only_the_items_of_the_keys_asked_for(rows, keys, codec):
    """Every item is stepped over and those of the keys asked for are kept, in order (repeated keys too), as
    the interpreter keeps an array's items: each row's items from its offsets, a null array null."""
    data = keyed_avro(rows, codec)
    every = read_columns(data, KEYED_PATHS)
    check_keyed(rows, every, set(range(-2, 7)))
    paths = {p: keys for p in KEYED_PATHS if p != ("z",)}
    check_keyed(rows, read_columns(data, KEYED_PATHS, keys=paths), keys)
    check_keyed(rows * 2, read_columns([data, data], KEYED_PATHS, keys=paths), keys)  # (two files, one pass)


@settings(max_examples=120, deadline=None)
@given(st.lists(keyed_records, max_size=10), KEYS, st.booleans())
def test_a_key_looked_up_in_place_equals_arrow_lookup_in_the_built_maps(rows, key, everywhere):
    """A metrics value looked up in the decoded items (planning's way) is Arrow's lookup of the key's first item in
    the maps built whole: absent keys, null maps, keys repeated in a map, and every map holding the key."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from sparkberg.avro.columnar import _compiled_map, _compiled_map_get
    if everywhere:  # (each map holds the key: the case of a column whose metrics every file has)
        rows = [{**r, "counts": (r["counts"] or []) + [{"key": key, "value": 7}],
                 "bounds": (r["bounds"] or []) + [{"key": key, "value": b"b"}]} for r in rows]
    cols = read_columns(keyed_avro(rows), KEYED_PATHS)
    for name, value_type in (("counts", pa.int64()), ("bounds", pa.binary())):
        maps = _compiled_map(cols, (name,), value_type)
        expected = pc.map_lookup(maps, pa.scalar(key, pa.int32()), "first").to_pylist() if len(rows) else []
        assert _compiled_map_get(cols, (name,), value_type, key).to_pylist() == expected


def test_keyed_arrays_are_one_instruction_where_items_are_an_int_key_and_a_flat_value():
    prog = compiled.program(json.dumps(KEYED_SCHEMA), frozenset(KEYED_PATHS),
                            frozenset(((p,), frozenset({1})) for p in ("counts", "bounds", "fixed", "text", "other")))
    assert prog.code_array[:, 0].tolist().count(compiled.OP_KEYED_ARRAY) == 4  # (not "other": a union value)
    every = compiled.program(json.dumps(KEYED_SCHEMA), frozenset(KEYED_PATHS))
    assert every.code_array[:, 0].tolist().count(compiled.OP_KEYED_ARRAY) == 0


def test_keyed_arrays_that_outgrow_their_room_are_decoded_again_with_more():
    compiled.program.cache_clear()
    for k in (1, 2, 150, 3):
        rows = [{"counts": [{"key": 1, "value": i} for i in range(k)] + [{"key": 2, "value": -1}] * 3,
                 "bounds": None, "fixed": [], "text": [], "other": [], "z": k}] * 3
        cols = read_columns(keyed_avro(rows), KEYED_PATHS, keys={("counts",): {1}})
        assert keyed_items(cols, "counts", values(cols, ("counts", ITEMS, "value"))) == \
            [[{"key": 1, "value": i} for i in range(k)]] * 3


def test_keyed_arrays_in_blocks_that_give_their_size_in_bytes_and_malformed_ones():
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "m", "type": {"type": "array", "items": {"type": "record", "name": "kv", "fields": [
            {"name": "key", "type": "int"}, {"name": "value", "type": "bytes"}]}}}, {"name": "z", "type": "int"}]}
    items = [(3, b"abc"), (4, b""), (3, b"z")]
    block = b"".join(avro_long(k) + avro_long(len(v)) + v for k, v in items)
    body = avro_long(-3) + avro_long(len(block)) + block + avro_long(0) + avro_long(42)

    def container(record: bytes) -> bytes:
        return raw_container(schema, [record])

    data = container(body)
    assert list(fastavro.reader(io.BytesIO(data))) == [{"m": [{"key": k, "value": v} for k, v in items], "z": 42}]
    cols = read_columns(data, [("m",), ("z",)], keys={("m",): {3}})
    assert keyed_items(cols, "m", cols.binary(("m", ITEMS, "value")).to_pylist()) == \
        [[{"key": 3, "value": b"abc"}, {"key": 3, "value": b"z"}]]
    assert values(cols, ("z",)) == [42]
    # a value's length past the data's end, and an item count past it: declined
    past = avro_long(1) + avro_long(3) + avro_long(100) + b"abc"
    assert read_columns(container(past), [("m",)], keys={("m",): {3}}) is None
    assert read_columns(container(avro_long(1000) + avro_long(3)), [("m",)], keys={("m",): {3}}) is None


def test_marks_are_where_fields_start():
    """A mark keeps the position a record's field starts at: each record's bytes from a mark on are that field's
    encoding and those of the fields after it (what the manifest rewrite copies)."""
    schema = {"type": "record", "name": "m", "fields": [
        {"name": "a", "type": "long"}, {"name": "arr", "type": {"type": "array", "items": "long"}},
        {"name": "sub", "type": {"type": "record", "name": "s", "fields": [
            {"name": "x", "type": ["null", "long"]}, {"name": "y", "type": "string"}]}}]}
    rows = [{"a": i * 1000, "arr": list(range(i)), "sub": {"x": None if i % 2 else i, "y": "y" * i}}
            for i in range(40)]
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), rows, codec="deflate", sync_interval=64)
    cols = read_columns(buf.getvalue(), [("a",)], marks=[("a",), ("sub",), ("sub", "y")])
    data = cols.data.tobytes()
    starts = cols.ints((compiled.MARK, "a"))[0].tolist() + [len(data)]
    for i, row in enumerate(rows):
        for mark, encoded in ((("sub",), row["sub"]), (("sub", "y"), row["sub"]["y"])):
            at = int(cols.ints((compiled.MARK, *mark))[0][i])
            out = io.BytesIO()
            fastavro.schemaless_writer(out, fastavro.parse_schema(
                schema["fields"][2]["type"] if mark == ("sub",) else "string"), encoded)
            assert data[at:starts[i + 1]] == out.getvalue()
    assert cols.ints(("a",))[0].tolist() == [r["a"] for r in rows]
