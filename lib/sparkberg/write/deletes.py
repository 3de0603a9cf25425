"""Row-level delete files, written on the executors (or on the driver, for an operation that deletes few rows):
position delete files (v2, one per data file, sorted by position, ``referenced_data_file`` set) and deletion
vectors (v3, one per data file, merged with the file's existing DV and position deletes, written into one Puffin
file per task)."""
from __future__ import annotations

import base64
import json
import uuid
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sparkberg.arrays import from_numpy, int_values, strings
from sparkberg.io.fileio import FileIO, to_local_path
from sparkberg.format import types as T
from sparkberg.format.manifests import POSITION_DELETES, DataFile
from sparkberg.format.metadata_columns import DELETE_FILE_PATH, DELETE_FILE_POS
from sparkberg.format.puffin import dv_blob_metadata, dv_position_array, serialize_dv, write_puffin
from sparkberg.format.values import to_bytes
from sparkberg.format.types import from_json_value, to_json_value
from sparkberg.write.writer import key_runs

_PATH_ID, _POS_ID = str(DELETE_FILE_PATH.field_id), str(DELETE_FILE_POS.field_id)

POS_SCHEMA = pa.schema([
    pa.field("file_path", pa.string(), nullable=False, metadata={b"PARQUET:field_id": _PATH_ID.encode()}),
    pa.field("pos", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": _POS_ID.encode()}),
])
RESULT_DDL = "delete_file string"


def _open_out(path: str, io: FileIO):
    local = to_local_path(path)
    if local is not None:
        import os
        os.makedirs(os.path.dirname(local), exist_ok=True)
        return pa.OSFile(local, "wb")
    return io.open_output(path)


class DeleteWriter:
    """Rows (``_file``, ``_pos``) clustered by ``_file`` -> one delete file (or DV) per data file: on the executors
    (``mapInArrow``), or on the driver over each data file's positions (:meth:`write`).

    ``targets`` maps each data file to (spec id, partition as JSON by field id, delete directory, previous
    deletes to merge for DVs: a list of (puffin path, offset, length) and position delete file paths)."""

    def __init__(self, targets: dict[str, dict], dv: bool, write_id: str, compression: str = "zstd",
                 partition_scoped: bool = False, *, io: FileIO):
        self.targets = targets
        self.io = io  # (the table's: the tasks write with its credentials)
        self.dv = dv
        self.write_id = write_id
        self.compression = compression
        # (v2) one position delete file per partition of a task's rows, rather than one per data file: rows
        # clustered by partition directory, then sorted by (file, position)
        self.partition_scoped = partition_scoped

    def _positions(self, batches) -> Iterator[tuple[str, np.ndarray]]:
        """(data file, its positions as they arrived) for each run of one file's rows, across batches."""
        current, parts = None, []
        for batch in batches:
            if not batch.num_rows:
                continue
            positions = int_values(batch.column(1))[0]
            for start, end, (data_file,) in key_runs([batch.column(0)], batch.num_rows):
                if data_file != current:
                    if current is not None:
                        yield current, np.concatenate(parts)
                    current, parts = data_file, []
                parts.append(positions[start:end])
        if current is not None:
            yield current, np.concatenate(parts)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        results = self.write(self._positions(batches))
        if results:
            yield pa.RecordBatch.from_arrays([strings(results)], names=["delete_file"])

    def write(self, by_file: Iterable[tuple[str, np.ndarray]]) -> list[str]:
        """The delete files (as the JSON :func:`delete_file_from_json` reads) for ``by_file``: (data file, its
        positions), each data file once (with ``partition_scoped``, the files of a partition one after another)."""
        results = []
        blobs = []
        runs: list[tuple[str, list[int]]] = []  # (partition_scoped) the current partition's files
        position_files: dict[str, tuple[pa.ChunkedArray, pa.ChunkedArray]] = {}  # (v3) read once per task

        def flush_partition() -> None:
            if runs:
                results.append(self._write_partition_file(runs, self.targets[runs[0][0]]))
                runs.clear()
        for data_file, positions in by_file:
            target = self.targets[data_file]
            if self.dv:
                blobs.append((data_file, np.union1d(positions, _previous_positions(data_file, target, position_files,
                                                                                   self.io))))
            elif self.partition_scoped:
                if runs and self.targets[runs[0][0]]["dir"] != target["dir"]:
                    flush_partition()
                runs.append((data_file, np.unique(positions)))
            else:
                results.append(self._write_position_file(data_file, np.unique(positions), target))
        flush_partition()
        if blobs:
            results += self._write_puffin(blobs)
        return results

    def _write_position_file(self, data_file: str, positions: np.ndarray, target: dict) -> str:
        return self._write_partition_file([(data_file, positions)], target)

    def _write_partition_file(self, runs: list[tuple[str, np.ndarray]], target: dict) -> str:
        """One position delete file of (data file, ascending distinct positions) runs, in path order, of one
        partition; ``referenced_data_file`` set when it names one data file."""
        path = f"{target['dir']}/{self.write_id}-{uuid.uuid4().hex[:12]}-deletes.parquet"
        which = np.repeat(np.arange(len(runs), dtype=np.int32), [len(ps) for _, ps in runs])
        files = strings([f for f, _ in runs]).take(from_numpy(which, pa.int32()))
        positions = from_numpy(np.concatenate([ps for _, ps in runs]).astype(np.int64), pa.int64())
        count = len(positions)
        sink = _open_out(path, self.io)
        table = pa.Table.from_arrays([files, positions], schema=POS_SCHEMA)
        pq.write_table(table, sink, compression=self.compression)
        size = sink.tell()
        sink.close()
        enc = lambda b: base64.b64encode(b).decode("ascii")  # noqa: E731
        return json.dumps({
            "file_path": path, "file_format": "parquet", "record_count": count, "file_size_in_bytes": size,
            "spec_id": target["spec_id"], "partition": target["partition"],
            "referenced_data_file": runs[0][0] if len(runs) == 1 else None,
            "value_counts": {_PATH_ID: count, _POS_ID: count},
            "null_value_counts": {_PATH_ID: 0, _POS_ID: 0},
            "lower_bounds": {_PATH_ID: enc(to_bytes(T.STRING, min(f for f, _ in runs))),
                             _POS_ID: enc(to_bytes(T.LONG, min(int(ps[0]) for _, ps in runs)))},
            "upper_bounds": {_PATH_ID: enc(to_bytes(T.STRING, max(f for f, _ in runs))),
                             _POS_ID: enc(to_bytes(T.LONG, max(int(ps[-1]) for _, ps in runs)))}})

    def _write_puffin(self, blobs: list[tuple[str, np.ndarray]]) -> list[str]:
        first = self.targets[blobs[0][0]]
        path = f"{first['dir']}/{self.write_id}-{uuid.uuid4().hex[:12]}-dvs.puffin"
        payloads = [(dv_blob_metadata(f, len(p)), serialize_dv(p)) for f, p in blobs]
        data, footer = write_puffin(payloads)
        sink = _open_out(path, self.io)
        sink.write(data)
        sink.close()
        out = []
        for (f, positions), meta in zip(blobs, footer.blobs):
            t = self.targets[f]
            out.append(json.dumps({
                "file_path": path, "file_format": "puffin", "record_count": int(len(positions)),
                "file_size_in_bytes": len(data), "spec_id": t["spec_id"], "partition": t["partition"],
                "referenced_data_file": f, "content_offset": meta.offset, "content_size_in_bytes": meta.length}))
        return out


def _previous_positions(data_file: str, target: dict, position_files: dict, io: FileIO) -> np.ndarray:
    """Positions already deleted in a data file: its current DV and any position delete files (a v2 file names
    the data files of its partition, so ``position_files`` keeps the (path, position) columns of each one read,
    by path, for the next data file it names)."""
    out = [np.zeros(0, dtype=np.int64)]
    key = strings([data_file])[0] if target.get("position_files") else None
    for puffin, offset, length in target.get("dvs", ()):
        out.append(dv_position_array(io.read_range(puffin, offset, length), puffin))
    for path in target.get("position_files", ()):
        if path not in position_files:
            local = to_local_path(path)
            if local is not None:
                table = pq.read_table(local, columns=None)
            else:
                with io.open_input(path) as f:
                    table = pq.read_table(f, columns=None)
            names = {f.metadata.get(b"PARQUET:field_id") if f.metadata else None: f.name for f in table.schema}
            position_files[path] = (table.column(names.get(_PATH_ID.encode(), "file_path")),
                                    table.column(names.get(_POS_ID.encode(), "pos")))
        fp, pos = position_files[path]
        out.append(int_values(pos.filter(pc.equal(fp, key)))[0])
    return np.concatenate(out)


def delete_file_from_json(text: str, metadata) -> tuple[int, DataFile]:
    """(spec id, manifest data file) of one row the delete writer returned."""
    d = json.loads(text)
    spec = metadata.spec(d["spec_id"])
    ptype = spec.partition_type(metadata.current_schema)
    partition = {f.field_id: from_json_value(pf.field_type, d["partition"].get(str(f.field_id)))
                 for f, pf in zip(spec.fields, ptype.fields)}

    def ints(m):
        return None if m is None else {int(k): int(v) for k, v in m.items()}

    def bins(m):
        return None if m is None else {int(k): base64.b64decode(v) for k, v in m.items()}

    return d["spec_id"], DataFile(
        file_path=d["file_path"], file_format=d["file_format"], partition=partition, record_count=d["record_count"],
        file_size_in_bytes=d["file_size_in_bytes"], content=POSITION_DELETES,
        value_counts=ints(d.get("value_counts")), null_value_counts=ints(d.get("null_value_counts")),
        lower_bounds=bins(d.get("lower_bounds")), upper_bounds=bins(d.get("upper_bounds")),
        referenced_data_file=d["referenced_data_file"], content_offset=d.get("content_offset"),
        content_size_in_bytes=d.get("content_size_in_bytes"))


def partition_json(spec, schema, partition: dict) -> dict:
    ptype = spec.partition_type(schema)
    return {str(f.field_id): to_json_value(pf.field_type, partition.get(f.field_id))
            for f, pf in zip(spec.fields, ptype.fields)}
