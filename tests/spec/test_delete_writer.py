"""The executor side of merge-on-read deletes (DeleteWriter): rows (data file, position) clustered by file, in
batches that may split a file's rows, become one position delete file per data file or per partition (v2) or one
DV per data file merged with the file's earlier deletes, all in one Puffin file (v3)."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkberg.io.fileio import file_io_for
from sparkberg.format.puffin import dv_blob_metadata, dv_positions, read_blob, read_footer, serialize_dv, write_puffin
from sparkberg.write.deletes import POS_SCHEMA, DeleteWriter


def _batches(rows, sizes):
    """``rows`` of (file, position) cut into record batches of ``sizes`` rows (an empty one first)."""
    out = [pa.RecordBatch.from_pydict({"_file": pa.array([], pa.string()), "_pos": pa.array([], pa.int64())})]
    start = 0
    for n in sizes:
        part = rows[start:start + n]
        out.append(pa.RecordBatch.from_pydict({"_file": [f for f, _ in part], "_pos": [p for _, p in part]}))
        start += n
    assert start == len(rows)
    return out


def _targets(tmp_path, files, dirs=None, **extra):
    return {f: {"spec_id": 0, "partition": {}, "dir": str(tmp_path / (dirs or {}).get(f, "d")), "dvs": [],
                "position_files": [], **extra.get(f, {})} for f in files}


def _results(writer, batches):
    out = list(writer(iter(batches)))
    return [json.loads(x) for b in out for x in b.column(0).to_pylist()]


ROWS = [("/w/a.parquet", 1), ("/w/a.parquet", 5), ("/w/a.parquet", 5), ("/w/a.parquet", 9),
        ("/w/b.parquet", 0), ("/w/b.parquet", 2 ** 33 + 4), ("/w/c.parquet", 7)]


@pytest.mark.parametrize("sizes", [[7], [2, 3, 2], [1] * 7])
def test_dvs_one_per_data_file_merged_with_earlier_deletes(tmp_path, sizes):
    # /w/a.parquet had a DV (positions 0, 5); /w/c.parquet a v2 position delete file naming it and another file
    data, _ = write_puffin([(dv_blob_metadata("/w/a.parquet", 2), serialize_dv([0, 5]))])
    (tmp_path / "old.puffin").write_bytes(data)
    blob = read_footer(data).blobs[0]
    pq.write_table(pa.Table.from_pydict({"file_path": ["/w/c.parquet", "/w/c.parquet", "/w/x.parquet"],
                                         "pos": [3, 7, 11]}, schema=POS_SCHEMA), tmp_path / "old-deletes.parquet")
    targets = _targets(tmp_path, ["/w/a.parquet", "/w/b.parquet", "/w/c.parquet"], **{
        "/w/a.parquet": {"dvs": [(str(tmp_path / "old.puffin"), blob.offset, blob.length)]},
        "/w/c.parquet": {"position_files": [str(tmp_path / "old-deletes.parquet")]}})
    got = _results(DeleteWriter(targets, dv=True, write_id="w1", io=file_io_for()), _batches(ROWS, sizes))
    assert len({d["file_path"] for d in got}) == 1  # one Puffin file for the task
    puffin = (tmp_path / "d" / got[0]["file_path"].rsplit("/", 1)[1]).read_bytes()
    want = {"/w/a.parquet": [0, 1, 5, 9], "/w/b.parquet": [0, 2 ** 33 + 4], "/w/c.parquet": [3, 7]}
    assert {d["referenced_data_file"]: d["record_count"] for d in got} == {f: len(p) for f, p in want.items()}
    for d in got:
        footer = read_footer(puffin)
        meta = next(b for b in footer.blobs if b.offset == d["content_offset"])
        assert meta.length == d["content_size_in_bytes"]
        assert meta.properties == {"referenced-data-file": d["referenced_data_file"],
                                   "cardinality": str(len(want[d["referenced_data_file"]]))}
        assert dv_positions(read_blob(puffin, meta)) == want[d["referenced_data_file"]]


@pytest.mark.parametrize("sizes", [[7], [3, 4], [1] * 7])
def test_position_delete_files_one_per_data_file(tmp_path, sizes):
    targets = _targets(tmp_path, ["/w/a.parquet", "/w/b.parquet", "/w/c.parquet"])
    got = _results(DeleteWriter(targets, dv=False, write_id="w1", io=file_io_for()), _batches(ROWS, sizes))
    want = {"/w/a.parquet": [1, 5, 9], "/w/b.parquet": [0, 2 ** 33 + 4], "/w/c.parquet": [7]}
    assert {d["referenced_data_file"] for d in got} == set(want)
    for d in got:
        f = d["referenced_data_file"]
        rows = pq.read_table(d["file_path"]).to_pylist()
        assert rows == [{"file_path": f, "pos": p} for p in want[f]]
        assert d["record_count"] == len(want[f]) and d["value_counts"] == {"2147483546": len(want[f]),
                                                                           "2147483545": len(want[f])}


def test_position_delete_files_one_per_partition(tmp_path):
    dirs = {"/w/a.parquet": "p=1", "/w/b.parquet": "p=1", "/w/c.parquet": "p=2"}
    targets = _targets(tmp_path, list(dirs), dirs)
    got = _results(DeleteWriter(targets, dv=False, write_id="w1", io=file_io_for(), partition_scoped=True),
                   _batches(ROWS, [3, 4]))
    assert sorted((d["file_path"].split("/")[-2], d["record_count"], d["referenced_data_file"]) for d in got) == \
        [("p=1", 5, None), ("p=2", 1, "/w/c.parquet")]
    first = next(d for d in got if "/p=1/" in d["file_path"])
    assert [(r["file_path"], r["pos"]) for r in pq.read_table(first["file_path"]).to_pylist()] == \
        [("/w/a.parquet", 1), ("/w/a.parquet", 5), ("/w/a.parquet", 9), ("/w/b.parquet", 0),
         ("/w/b.parquet", 2 ** 33 + 4)]
    # the bounds of both columns over the file
    import base64
    import struct
    lower, upper = first["lower_bounds"], first["upper_bounds"]
    assert base64.b64decode(lower["2147483546"]) == b"/w/a.parquet"
    assert base64.b64decode(upper["2147483546"]) == b"/w/b.parquet"
    assert struct.unpack("<q", base64.b64decode(lower["2147483545"]))[0] == 0
    assert struct.unpack("<q", base64.b64decode(upper["2147483545"]))[0] == 2 ** 33 + 4


def test_a_position_delete_file_naming_several_data_files_is_read_once(tmp_path, monkeypatch):
    # a v2 table's position delete file names the data files of its partition (spec "Position Delete Files");
    # on v3 each of them gets a DV holding its positions from it
    from sparkberg.write import deletes
    old = str(tmp_path / "old-deletes.parquet")
    pq.write_table(pa.Table.from_pydict({"file_path": ["/w/a.parquet", "/w/a.parquet", "/w/b.parquet"],
                                         "pos": [2, 3, 8]}, schema=POS_SCHEMA), old)
    reads = []
    real = deletes.pq.read_table
    monkeypatch.setattr(deletes.pq, "read_table", lambda path, **kw: (reads.append(path), real(path, **kw))[1])
    targets = _targets(tmp_path, ["/w/a.parquet", "/w/b.parquet"],
                       **{f: {"position_files": [old]} for f in ("/w/a.parquet", "/w/b.parquet")})
    got = _results(DeleteWriter(targets, dv=True, write_id="w1", io=file_io_for()),
                   _batches([("/w/a.parquet", 1), ("/w/b.parquet", 0)], [1, 1]))
    assert reads == [old]
    puffin = (tmp_path / "d" / got[0]["file_path"].rsplit("/", 1)[1]).read_bytes()
    footer = read_footer(puffin)
    by_file = {d["referenced_data_file"]: next(b for b in footer.blobs if b.offset == d["content_offset"])
               for d in got}
    assert {f: dv_positions(read_blob(puffin, b)) for f, b in by_file.items()} == \
        {"/w/a.parquet": [1, 2, 3], "/w/b.parquet": [0, 8]}
