"""Position deletes and deletion vectors applied to rows (spec "Position Delete Files", "Deletion Vectors").

Rows are matched to them by (file, ``_metadata.row_index``). The deleted positions of each data file become a
bitmap, on the driver where they are few (:class:`~sparkberg.spark.tuning.ReadTuning`) or on the executors, and
the rows are filtered by it: by the Parquet scan itself where it can (:func:`position_scan_filter`: Spark 4 and
classic Spark 3.5 sessions), else by a join on the file; beyond the bitmaps' bound, by an anti-join on (file,
position) keys.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as ST

from sparkberg.arrays import from_python, indices, int_values, scalar
from sparkberg.io.fileio import FileIO
from sparkberg.lru import LRU
from sparkberg.read.columns import check_formats, delete_file_rows, delete_row_count, maybe_broadcast, union_all
from sparkberg.read.deletecache import DeleteCache, delete_cache
from sparkberg.read.fileids import FileSlots, name_slice
from sparkberg.spark.frames import arrow_dataframe, local_dataframe, map_in_arrow, scalar_of
from sparkberg.spark.jvm import array_literal, long_array_layout, long_arrays_layout
from sparkberg.spark.session import is_classic, per_session
from sparkberg.spark.tuning import ReadTuning
from sparkberg.format.metadata_columns import DELETE_FILE_PATH, DELETE_FILE_POS
from sparkberg.format.puffin import dv_position_array
from sparkberg.threads import by_threads


class DVDecoder:
    """Executor side: (data_file, puffin_path, content_offset, content_size_in_bytes) -> one (``_del_file``,
    ``_del_pos``) row per deleted position; with ``keys``, (data_file_id, ...) -> the deleted rows' keys
    (``_del_row``: ``data file id << 40 | pos``), as merge-on-read reads match them."""

    def __init__(self, keys: bool = False, *, io: FileIO):
        self.keys = keys
        self.io = io  # (the table's: its credentials reach the executors)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for r in batch.to_pylist():
                positions = _dv_positions(self.io, r["puffin_path"], r["content_offset"], r["content_size_in_bytes"])
                if self.keys:
                    yield pa.RecordBatch.from_arrays([indices(r["data_file_id"] * _ROW_KEY_SHIFT + positions)],
                                                     names=["_del_row"])
                else:
                    yield pa.RecordBatch.from_arrays([pa.repeat(scalar(r["data_file"], pa.string()), len(positions)),
                                                      indices(positions)], names=["_del_file", "_del_pos"])


class PositionDeleteRows:
    """Executor side: position delete files (path, format) -> the keys (``data file id << 40 | pos``) of the
    rows they delete from the data files they apply to (``applies``: delete file -> {data file: its id});
    rows naming any other file are dropped, as the spec's scan planning rules say. With a ``cache``
    (:mod:`sparkberg.read.deletecache`), a file decoded once is not read again by this process."""

    def __init__(self, applies: dict[str, dict[str, int]], cache: DeleteCache | None, io: FileIO):
        self.applies = applies
        self.cache = cache
        self.io = io  # (the table's: its credentials reach the executors)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path, fmt in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
                for file_ids, positions in self.positions(path, fmt):
                    rows = file_ids * _ROW_KEY_SHIFT + positions
                    yield pa.RecordBatch.from_arrays([indices(rows)], names=["_del_row"])

    def positions(self, path: str, fmt: str) -> Iterator[tuple[Any, Any]]:
        """(data file ids, positions) of the rows one delete file deletes (numpy int64 arrays, non-empty), a
        pair per batch read."""
        import numpy as np
        targets = self.applies[path]
        for names, index, positions in self.decoded(path, fmt):
            ids = np.array([targets.get(f, -1) for f in names] + [-1], np.int64)
            file_ids = ids[index]  # (index -1, a row without file or position: the last id, -1)
            keep = file_ids >= 0
            if keep.any():
                yield file_ids[keep], positions[keep]

    def decoded(self, path: str, fmt: str) -> list[tuple[tuple[str, ...], Any, Any]]:
        """The rows of one delete file, whatever files they apply to: per batch read, the data file paths it
        names, each row's index into them (-1 when its path or position is null) and each row's position
        (read-only numpy arrays, kept by the cache)."""
        if self.cache is None:
            return _decode_position_file(path, fmt, self.io)
        return self.cache.get(("position deletes", path, fmt), lambda: _decode_position_file(path, fmt, self.io),
                              lambda batches: sum(i.nbytes + p.nbytes + sum(len(n) for n in names)
                                                  for names, i, p in batches))


def _decode_position_file(path: str, fmt: str, io: FileIO) -> list[tuple[tuple[str, ...], Any, Any]]:
    import numpy as np
    import pyarrow.compute as pc
    out = []
    for rb in delete_file_rows(path, fmt, [DELETE_FILE_PATH, DELETE_FILE_POS], io):
        files = pc.dictionary_encode(rb.column(0))
        pos = rb.column(1)
        index, named = int_values(files.indices)
        positions, known = int_values(pos)
        index = np.where(named & known, index, -1).astype(np.int32)
        index.flags.writeable = positions.flags.writeable = False
        out.append((tuple(files.dictionary.to_pylist()), index, positions))
    return out


class DeletedPositions:
    """Executor (or driver) side: groups of position delete sources (a JSON ``unit`` per input row:
    ``files``, position delete files as [path, format]; ``dvs``, deletion vectors as [puffin path, offset,
    size, data file id]) -> one (``_bm_file``, ``_bitmap``) row per data file they delete rows from: bit
    ``pos % 64`` of ``_bitmap[pos // 64]`` is set for each deleted position. The planner groups sources so
    that every source of a data file is in the same unit, hence one row per data file. ``targets``: position
    delete file -> {data file: its id} (what the plan applies it to: rows naming other files are dropped, as
    the spec's scan planning says); ``limits``: data file id -> its record count (positions at or past it
    name no row). With a ``cache``, the sources this process decoded once are not read again."""

    SCHEMA = pa.schema([pa.field("_bm_file", pa.int32()), pa.field("_bitmap", pa.list_(pa.int64()))])
    # (a StructType, which PySpark need not ask Spark to parse as it would a DDL string)
    SPARK_SCHEMA = ST.StructType([ST.StructField("_bm_file", ST.IntegerType()),
                                  ST.StructField("_bitmap", ST.ArrayType(ST.LongType()))])

    def __init__(self, targets: dict[str, dict[str, int]], limits: dict[int, int], cache: DeleteCache | None = None,
                 *, io: FileIO):
        self.rows = PositionDeleteRows(targets, cache, io)
        self.limits = limits

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for text in batch.column(0).to_pylist():
                bitmaps = self.unit(text)
                if bitmaps is not None:
                    yield bitmaps

    def unit(self, text: str) -> pa.RecordBatch | None:
        """The bitmaps of one unit (None when its sources delete no row of the files they apply to)."""
        found = self.found(json.loads(text))
        return self._bitmaps(found) if found else None

    def found(self, unit: dict[str, list]) -> dict[int, list]:
        """The positions one unit's sources delete (``files``, ``dvs``), as arrays by data file id."""
        import numpy as np
        found: dict[int, list] = defaultdict(list)
        for path, fmt in unit["files"]:
            for ids, positions in self.rows.positions(path, fmt):
                first = ids[0]
                if ids[-1] == first and (ids == first).all():  # (the usual case: a file's rows are together)
                    found[int(first)].append(positions)
                    continue
                for fid in np.unique(ids):
                    found[int(fid)].append(positions[ids == fid])
        for path, offset, size, fid in unit["dvs"]:
            found[fid].append(self._dv(path, offset, size))
        return found

    def _dv(self, path: str, offset: int, size: int):
        cache = self.rows.cache
        if cache is None:
            return _dv_positions(self.rows.io, path, offset, size)

        def load():
            positions = _dv_positions(self.rows.io, path, offset, size)
            positions.flags.writeable = False
            return positions
        return cache.get(("deletion vector", path, offset, size), load, lambda positions: positions.nbytes)

    def on_driver(self, units: list[str], extra: dict[int, Any] | None = None) -> pa.Table:
        """The bitmaps of all ``units``, decoded by a thread per core (Arrow reads the files without the GIL),
        with the positions of ``extra`` (numpy arrays by data file id: the rows equality deletes delete)."""
        found: dict[int, list] = defaultdict(list)
        for part in by_threads(lambda text: self.found(json.loads(text)), units):
            for fid, positions in part.items():  # (units share no data file)
                found[fid].extend(positions)
        for fid, positions in (extra or {}).items():
            if len(positions):
                found[fid].append(positions)
        return pa.Table.from_batches([self._bitmaps(found)] if found else [], self.SCHEMA)

    def _bitmaps(self, found: dict[int, list]) -> pa.RecordBatch:
        import numpy as np
        ids, words, offsets = [], [], [0]
        for fid, parts in found.items():
            pos = np.concatenate(parts)
            pos = pos[(pos >= 0) & (pos < self.limits[fid])]
            if not len(pos):
                continue
            if len(pos) > 1 and (pos[1:] < pos[:-1]).any():  # (delete files are sorted by position: rarely)
                pos = np.sort(pos)
            word = pos >> 6  # (a position repeated sets its bit twice: the same word)
            starts = np.flatnonzero(np.diff(word, prepend=-1))
            bits = np.zeros(int(word[-1]) + 1, np.uint64)
            bits[word[starts]] = np.bitwise_or.reduceat(np.left_shift(np.uint64(1), (pos & 63).astype(np.uint64)),
                                                        starts)
            words.append(bits.view(np.int64))
            ids.append(fid)
            offsets.append(offsets[-1] + len(words[-1]))
        values = indices(np.concatenate(words) if words else np.zeros(0, np.int64))
        return pa.RecordBatch.from_arrays([from_python(ids, pa.int32()), pa.ListArray.from_arrays(
            from_python(offsets, pa.int32()), values)], schema=self.SCHEMA)


def _dv_positions(io: FileIO, path: str, offset: int, size: int):
    """The positions (numpy int64) of the DV at ``offset`` of a Puffin file, read by ``io`` (the table's FileIO)."""
    return dv_position_array(io.read_range(path, offset, size), path)


_ROW_KEY_SHIFT = 1 << 40  # (file id, position) as one long: positions stay below 2^40 rows per file


@dataclass
class PositionSources:
    """What deletes rows by position from a set of data files (by data file id): position delete files
    (``applies``: delete file -> {data file: id}; ``formats``), DVs (``dvs``: (id, puffin path, offset, size)),
    and the positions equality deletes were found to delete (``derived``: numpy arrays by id); ``limits``: each
    such file's record count; ``total``: the rows of the delete files (None if one does not say); ``key``: what
    the bitmaps they make are made of; ``tuning``: the read's thresholds."""

    applies: dict[str, dict[str, int]]
    formats: dict[str, str]
    dvs: list
    limits: dict[int, int]
    total: int | None
    derived: dict[int, Any]
    key: tuple
    tuning: ReadTuning
    io: FileIO | None = None  # (the table's FileIO, which reads the delete files)

    @classmethod
    def of(cls, tasks: list, ids: list[int], derived: dict[int, Any] | None, tuning: ReadTuning,
           io: FileIO | None = None) -> PositionSources:
        """The sources of ``tasks`` (``ids``: their data files' ids) and of ``derived``, read by ``io``."""
        applies: dict[str, dict[str, int]] = defaultdict(dict)
        formats: dict[str, str] = {}
        dvs = []
        limits: dict[int, int] = {}
        total: int | None = 0
        for i, t in zip(ids, tasks):
            for d in t["deletes"]:
                if d["content"] != 1:
                    continue
                n = delete_row_count(d)
                total = None if total is None or n is None else total + n
                limits[i] = t["record_count"]
                if d["file_format"] == "puffin":
                    dvs.append((i, d["file_path"], d["content_offset"], d["content_size_in_bytes"]))
                else:
                    applies[d["file_path"]][t["file_path"]] = i
                    formats[d["file_path"]] = d["file_format"].lower()
        derived = {i: p for i, p in (derived or {}).items() if len(p)}
        if derived:
            limits.update((i, t["record_count"]) for i, t in zip(ids, tasks) if i in derived)
        # the delete sources are in the units (made from these), with the data files they apply to
        equality = {i: tuple(sorted(d["file_path"] for d in t["deletes"] if d["content"] == 2))
                    for i, t in zip(ids, tasks) if i in derived}
        key = (tuple(sorted((p, tuple(sorted(targets.items()))) for p, targets in applies.items())),
               tuple(sorted(limits.items())),
               tuple(sorted((i, t["file_path"], equality[i]) for i, t in zip(ids, tasks) if i in derived)))
        if applies:
            check_formats([(f, p) for p, f in formats.items()], "position delete")
        return cls(dict(applies), formats, dvs, limits, total, derived, key, tuning, io)

    @property
    def empty(self) -> bool:
        """Whether no row is deleted by position."""
        return not self.applies and not self.dvs and not self.derived

    @property
    def as_bitmaps(self) -> bool:
        """Whether they become bitmaps (at most ``bitmap_bytes_max`` of them)."""
        return sum(n // 8 + 8 for n in self.limits.values()) <= self.tuning.bitmap_bytes_max

    @property
    def on_driver(self) -> bool:
        """Whether the driver decodes them (few rows: cheaper than a Spark job)."""
        return self.total is not None and self.total <= self.tuning.driver_delete_rows_max

    def units(self) -> list[str]:
        """The delete files and DVs in groups for :class:`DeletedPositions` (:func:`_position_delete_units`)."""
        return _position_delete_units(self.applies, self.formats, self.dvs)


def apply_position_deletes(spark, rows: DataFrame, src: PositionSources) -> DataFrame:
    """Rows minus those that the position delete files and DVs of ``src`` delete, and those at its derived
    positions (what equality deletes delete, found by :func:`equality_positions`).
    The delete files are decoded on the driver when they hold few rows, else on the executors: each position
    delete file's rows are kept only for the data files it applies to (by the plan), each DV's positions
    belong to its one data file. They become a bitmap of deleted positions per data file, broadcast and looked
    up by each row's file id and position (a join with one small row per data file, then a bit test), as
    Iceberg Java's readers test each row against its file's deleted positions; very large ones become (file
    id, position) keys of an anti-join."""
    if src.empty:
        return rows
    applies, formats, dvs, derived = src.applies, src.formats, src.dvs, src.derived
    if src.as_bitmaps:
        units = src.units()
        cache = delete_cache(spark)
        decoder = DeletedPositions(applies, src.limits, cache, io=src.io)
        if src.on_driver:  # cheaper here than as a Spark job
            return _bitmap_filter(rows, _kept(spark, cache, ("bitmaps", tuple(units)) + src.key,
                                              lambda: decoder.on_driver(units, derived), _bitmaps_frame))
        if derived:  # (found here: their own bitmaps)
            rows = _bitmap_filter(rows, _kept(spark, cache, ("bitmaps", ()) + src.key,
                                              lambda: decoder.on_driver([], derived), _bitmaps_frame))
        if not units:
            return rows
        return _bitmap_filter(rows, map_in_arrow(local_dataframe(spark, [(u,) for u in units], "unit string"),
                                                 decoder, DeletedPositions.SPARK_SCHEMA))
    deleted = []
    if derived:
        import numpy as np
        keys = [np.asarray(p, np.int64) + i * _ROW_KEY_SHIFT for i, p in derived.items()]
        deleted.append(arrow_dataframe(spark, pa.table({"_del_row": indices(np.concatenate(keys))}),
                                       "_del_row bigint"))
    if applies:
        files = local_dataframe(spark, sorted(formats.items()), "delete_file string, file_format string")
        deleted.append(map_in_arrow(files, PositionDeleteRows(dict(applies), None, src.io), "_del_row bigint"))
    if dvs:
        refs = local_dataframe(spark, dvs, "data_file_id int, puffin_path string, content_offset bigint, "
                                           "content_size_in_bytes bigint")
        deleted.append(map_in_arrow(refs, DVDecoder(keys=True, io=src.io), "_del_row bigint"))
    d = union_all(deleted)
    rows = rows.withColumn("_row", F.col("_file_id").cast("bigint") * _ROW_KEY_SHIFT + F.col("_pos"))
    return rows.join(maybe_broadcast(d, src.total, src.tuning), rows["_row"] == d["_del_row"], "left_anti").drop("_row")


def _kept(spark, cache: DeleteCache | None, key: tuple, make: Callable[[], pa.Table],
          value: Callable[[Any, pa.Table], Any]) -> Any:
    """What ``value(spark, table)`` makes of the Arrow table ``make()`` returns (bitmaps of deleted positions): a
    DataFrame or a Column, which the session keeps by ``key`` (what the table is made of) while the delete cache is
    on: a repeated read of a merge-on-read table neither remakes its bitmaps nor sends them to Spark again. At
    most a quarter of the delete cache's bound is kept, in at most :data:`KEPT_VALUES` values; a value that is
    None (a way the session does not offer) is not kept. (A kept DataFrame joined into several reads keeps its
    columns' ids: Spark gives a relation that appears twice in one query new ids, as it does for a table read
    twice.)"""
    kept = per_session(spark, "bitmaps", LRU) if cache is not None else None
    hit = kept.get(key) if kept is not None else None
    if hit is not None:
        return hit
    table = make()
    out = value(spark, table)
    if out is not None and kept is not None and table.nbytes <= cache.max_bytes // 4:
        kept.put(key, out, table.nbytes, cache.max_bytes // 4, KEPT_VALUES)
    return out


KEPT_VALUES = 32  # bitmap DataFrames and literals a session keeps (_kept)


def _bitmaps_frame(spark, bitmaps: pa.Table) -> DataFrame:
    """:class:`DeletedPositions` rows as a DataFrame, one row per data file, to join."""
    return arrow_dataframe(spark, bitmaps, DeletedPositions.SPARK_SCHEMA)


# the scan filter's one value: how to find each row's slot (bits from ``shift`` of its file name's hash, ``mask``
# the low bits) and the bitmap at each slot
_SLOTS_SCHEMA = ST.StructType([ST.StructField("_slots", ST.StructType([
    ST.StructField("shift", ST.IntegerType()), ST.StructField("mask", ST.LongType()),
    ST.StructField("bitmaps", ST.ArrayType(ST.ArrayType(ST.LongType())))]))])


def position_scan_filter(spark, tasks: list, ids: list[int], src: PositionSources) -> Column | None:
    """A filter for the rows of the data files of ``tasks`` (``ids``: their ids; all Parquet) that drops the
    rows their position deletes, DVs and derived positions (``src``) delete, to apply straight to Spark's Parquet
    relation: bit ``_metadata.row_index`` of the bitmap of the row's file, found by the file's slot
    (:class:`FileSlots`) in one array of every file's bitmap. The filter's generated code is the same for every
    snapshot and set of deletes: a read after a commit reuses the classes Spark compiled, and the JVM compiled,
    for the read before it. On a classic session the array, and the slots' shift and mask, are literals made in
    the JVM (:func:`_scan_filter_literals`); elsewhere (Spark Connect) they are one value that a scalar subquery
    reads from a one-row relation made from Arrow (:func:`~sparkberg.spark.frames.scalar_of`). No join, so no
    broadcast stage for Spark's adaptive execution to run and plan around, and no column added to the rows: the
    rows of files with deletes keep the plain read's columns, so they union with the rest of the table's as they
    are. None where the rows take :func:`apply_position_deletes` instead: Spark 3.5 over Spark Connect (no
    scalar subquery its client can build; Spark 3.5's analyzer also fails a join on ``_metadata``), deletes too
    many to decode on the driver, or slots that need more than ``scan_filter_slot_bits_max`` bits."""
    if src.empty or not (src.as_bitmaps and src.on_driver):
        return None
    slots = FileSlots.of([t["file_path"] for t in tasks], src.tuning.scan_filter_slot_bits_max)
    if slots is None:
        return None
    units = src.units()
    cache = delete_cache(spark)
    decoder = DeletedPositions(src.applies, src.limits, cache, io=src.io)
    slot_of = dict(zip(ids, slots.slots))
    key = (tuple(units), slots.shift, slots.bits) + src.key
    found = None
    if is_classic(spark):  # (its JVM makes literals)
        found = _kept(spark, cache, ("slots literals",) + key, lambda: decoder.on_driver(units, src.derived),
                      lambda spark, table: _scan_filter_literals(spark, table, slot_of, slots))
    if found is not None:
        bitmaps, params = found
        zero = F.expr("int(least(_metadata.row_index, 0))")
        slot = name_slice(F.get(params, zero).cast("int"), F.get(params, zero + 1))
    else:
        value = scalar_of(_kept(spark, cache, ("slots",) + key, lambda: decoder.on_driver(units, src.derived),
                                lambda spark, table: arrow_dataframe(spark, _by_slot(table, slot_of, slots),
                                                                     _SLOTS_SCHEMA)))
        if value is None:
            return None
        bitmaps, slot = value.getField("bitmaps"), name_slice(value.getField("shift"), value.getField("mask"))
    word = F.get(F.get(bitmaps, slot), F.expr("int(shiftright(_metadata.row_index, 6))"))
    return F.coalesce(word.bitwiseAND(F.expr("shiftleft(1L, int(_metadata.row_index & 63))")), F.lit(0)) == 0


def _scan_filter_literals(spark, bitmaps: pa.Table, slot_of: dict[int, int], slots: FileSlots
                          ) -> tuple[Column, Column] | None:
    """The scan filter's array of bitmaps (:func:`_slot_bitmaps`) and its slots' [shift, mask] as two literals made
    in the JVM from their bytes as Spark holds them (:func:`~sparkberg.spark.jvm.array_literal`; None where the
    session cannot make them): in a fresh process, a scheduled job's, a one-row relation from Arrow and its
    scalar subquery cost the read more than all of this. Spark's generated code refers to array literals rather
    than writing them in; the filter reads the shift and mask from theirs at an index computed from each row
    (``least(_metadata.row_index, 0)``, always 0) so that constant folding does not write them into the code."""
    import numpy as np
    array = array_literal(spark, long_arrays_layout(_slot_bitmaps(bitmaps, slot_of, slots)),
                          _SLOTS_SCHEMA["_slots"].dataType["bitmaps"].dataType)
    params = array_literal(spark, long_array_layout(np.array([slots.shift, (1 << slots.bits) - 1], np.int64)),
                           ST.ArrayType(ST.LongType()))
    return None if array is None or params is None else (array, params)


def _rows_by_slot(bitmaps: pa.Table, slot_of: dict[int, int], slots: FileSlots) -> list[int | None]:
    """For each of the ``2 ** slots.bits`` slots, the row of :class:`DeletedPositions` rows whose file has it
    (None where no file with a bitmap does)."""
    rows: list[int | None] = [None] * (1 << slots.bits)
    for row, fid in enumerate(bitmaps.column("_bm_file").to_pylist()):
        rows[slot_of[fid]] = row
    return rows


def _slot_bitmaps(bitmaps: pa.Table, slot_of: dict[int, int], slots: FileSlots) -> list[Any]:
    """:class:`DeletedPositions` rows as the ``2 ** slots.bits`` bitmaps (numpy int64 arrays) of the scan filter's
    array, each file's at its slot (None where no file's is)."""
    words = bitmaps.column("_bitmap").combine_chunks()
    return [None if row is None else int_values(words[row].values)[0]
            for row in _rows_by_slot(bitmaps, slot_of, slots)]


def _by_slot(bitmaps: pa.Table, slot_of: dict[int, int], slots: FileSlots) -> pa.Table:
    """:class:`DeletedPositions` rows as the one value of :data:`_SLOTS_SCHEMA`: the slots' shift and mask, and the
    array of ``2 ** slots.bits`` bitmaps, each file's at its slot (null where no file's is)."""
    rows = _rows_by_slot(bitmaps, slot_of, slots)
    by_slot = bitmaps.column("_bitmap").combine_chunks().take(from_python(rows, pa.int32()))
    value = pa.StructArray.from_arrays(
        [from_python([slots.shift], pa.int32()), from_python([(1 << slots.bits) - 1], pa.int64()),
         pa.ListArray.from_arrays(from_python([0, len(rows)], pa.int32()), by_slot)],
        names=["shift", "mask", "bitmaps"])
    return pa.table({"_slots": value})


def _bitmap_filter(rows: DataFrame, bitmaps: DataFrame) -> DataFrame:
    """Rows minus those whose position is set in their file's bitmap (:class:`DeletedPositions` rows): a
    broadcast join with one small row per data file and a bit test."""
    # (one left anti-join on the file id, the bit test its condition: a single step for the session to analyse)
    return rows.join(F.broadcast(bitmaps), F.expr(
        "_file_id = _bm_file AND get(_bitmap, int(shiftright(_pos, 6))) & shiftleft(1L, int(_pos & 63)) != 0"),
        "left_anti")


def _position_delete_units(applies: dict[str, dict[str, int]], formats: dict[str, str], dvs: list) -> list[str]:
    """The position delete sources grouped so that all the sources of a data file are in one group (connected
    by the data files they share), each group a JSON unit for :class:`DeletedPositions`."""
    parent: dict = {}

    def root(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for path, targets in applies.items():
        for fid in targets.values():
            parent[root(("file", path))] = root(("data", fid))
    for i, (fid, *_rest) in enumerate(dvs):
        parent[root(("dv", i))] = root(("data", fid))
    units: dict = defaultdict(lambda: {"files": [], "dvs": []})
    for path in sorted(applies):
        units[root(("file", path))]["files"].append([path, formats[path]])
    for i, (fid, path, offset, size) in enumerate(dvs):
        units[root(("dv", i))]["dvs"].append([path, offset, size, fid])
    return [json.dumps(u) for u in units.values()]
