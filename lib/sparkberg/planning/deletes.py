"""The delete files of a scan matched to its data files, by the spec's rules (spec "Scan Planning"), written once.

:class:`DeleteMatcher` is the index every planner uses (on the driver and on the executors), as Iceberg Java's
``DeleteFileIndex`` is one structure: the delete files of a scan are few next to its data files, so they are
decoded first, indexed, and the index travels with the data manifests' decoder. Each decoded batch of data entries
gets its ``deletes`` column where it is decoded, with no join, no shuffle and no per-row Python. Candidates come
from three groups, as in Java: the (spec, partition) of the data file (position deletes and partition-scoped
equality deletes), its path (deletion vectors) and the global equality deletes; each (data file, candidate) pair
is then kept or dropped by numpy and Arrow compute on whole columns:

- position delete files: same spec and partition, data sequence number <= the delete's; when the delete names a
  ``referenced_data_file``, only that file; files outside the delete file's ``file_path`` bounds are skipped;
- deletion vectors: exactly their ``referenced_data_file``, data sequence number <= the DV's; a data file with a
  DV ignores its position delete files;
- equality delete files: data sequence number strictly below the delete's, same spec and partition, or every
  partition when the delete file's spec is unpartitioned (a global delete); pruned by comparing the stats of
  their equality columns with the data file's (:func:`eq_delete_may_apply`, Java's
  ``DeleteFileIndex.canContainEqDeletesForFile``), judged pair by pair where both sides have stats.

The same rules row at a time, in plain Python, are the oracle tests compare against
(:class:`sparkberg.planning.reference.DeleteIndex`).
"""
from __future__ import annotations

import math
import struct
from collections import defaultdict
from typing import Any, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkberg.arrays import (
    from_numpy, indices, int_values, scalar, strings, true_mask, valid_mask, value_codes,
)
from sparkberg.expressions.evaluators import INTEGRAL_TYPES
from sparkberg.format import types as T
from sparkberg.format.manifests import EQUALITY_DELETES, POSITION_DELETES, sequence_applies
from sparkberg.format.metadata_columns import DELETE_FILE_PATH
from sparkberg.format.values import from_bytes

DELETE_FILE_PATH_ID = DELETE_FILE_PATH.field_id


def path_bounds(lower_bounds: dict | None, upper_bounds: dict | None) -> tuple[str | None, str | None]:
    """The range of data file paths a position delete file names, from its ``file_path`` column bounds
    (Appendix D: UTF-8 bytes); ``None`` where a bound is missing."""
    def one(bounds):
        raw = (bounds or {}).get(DELETE_FILE_PATH_ID)
        return None if raw is None else bytes(raw).decode("utf-8", errors="replace")
    return one(lower_bounds), one(upper_bounds)


def in_path_bounds(path: str, bounds: tuple[str | None, str | None] | None) -> bool:
    """Whether a position delete file with these ``file_path`` bounds may hold deletes for ``path`` (Iceberg
    Java's ``DeleteFileIndex`` skips it otherwise). Python compares ``str`` by code point: UTF-8 byte order."""
    if not bounds:
        return True
    lower, upper = bounds
    return (lower is None or lower <= path) and (upper is None or path <= upper)


def delete_sort_key(d: dict) -> tuple:
    """The order in which a plan lists the delete files of a data file: by their fields, None last."""
    return tuple((v is None, v if not isinstance(v, list) else tuple(v)) for v in d.values())


# --- equality delete files pruned by their column stats (Iceberg Java's DeleteFileIndex) -------------------
# The stats of one column of one file: (null count, value count, lower key, upper key), each None if unknown;
# a file's stats: (whether it has both lower and upper bounds maps, {field id: column stats}). Bounds become
# sortable keys: byte strings that compare (unsigned, lexicographically, as Spark compares binary) as the
# values compare, so the distributed planner compares them in SQL.
EqStats = tuple  # (bool, dict[int, tuple[int | None, int | None, bytes | None, bytes | None]])


def sortable_key(t: T.IcebergType, raw: bytes | None) -> bytes | None:
    """An Appendix D bound as a byte string ordered as the values are (None: unknown or not comparable here;
    UUIDs are left out: engines order them differently)."""
    if raw is None:
        return None
    try:
        v = from_bytes(t, bytes(raw))
    except Exception:  # noqa: BLE001 - an unreadable bound is an unknown bound
        return None
    if t in INTEGRAL_TYPES:
        return (v + 2 ** 63).to_bytes(8, "big")
    if t == T.BOOLEAN:
        return b"\x01" if v else b"\x00"
    if t in (T.FLOAT, T.DOUBLE):
        if math.isnan(v):
            return None
        bits = struct.unpack(">Q", struct.pack(">d", v))[0]  # IEEE order: -0.0 before 0.0, as Java's compare
        return struct.pack(">Q", bits ^ 0xFFFFFFFFFFFFFFFF if bits >> 63 else bits | 1 << 63)
    if t == T.STRING or t == T.BINARY or isinstance(t, T.FixedType):
        return bytes(raw)  # UTF-8 byte order is code point order
    if isinstance(t, T.DecimalType):
        return (int.from_bytes(bytes(raw), "big", signed=True) + 2 ** 255).to_bytes(33, "big")
    return None


def eq_stats(types: dict[int, T.IcebergType], value_counts: dict | None, null_counts: dict | None,
             lower_bounds: dict | None, upper_bounds: dict | None) -> EqStats:
    """A file's stats of the columns in ``types`` (the equality columns of the scan's equality deletes)."""
    return (lower_bounds is not None and upper_bounds is not None,
            {fid: ((null_counts or {}).get(fid), (value_counts or {}).get(fid),
                   sortable_key(t, (lower_bounds or {}).get(fid)), sortable_key(t, (upper_bounds or {}).get(fid)))
             for fid, t in types.items()})


def eq_delete_may_apply(data: EqStats | None, delete: EqStats | None, equality_ids, required: frozenset,
                        prunable: frozenset) -> bool:
    """Whether an equality delete file may delete rows of a data file, from their stats: Iceberg Java's
    ``DeleteFileIndex.canContainEqDeletesForFile``, field by field. ``prunable``: equality field ids that are
    primitive columns of the schema; ``required``: those declared required."""
    if data is None or delete is None:
        return True
    check_ranges = data[0] and delete[0]
    for fid in equality_ids or ():
        if fid not in prunable:
            continue
        req = fid in required
        d_nulls, d_values, d_lower, d_upper = data[1].get(fid, (None, None, None, None))
        x_nulls, x_values, x_lower, x_upper = delete[1].get(fid, (None, None, None, None))
        if _contains_null(req, d_nulls) and _contains_null(req, x_nulls):
            continue  # nulls in the data, and null deleted
        if _all_null(req, d_nulls, d_values) and _all_non_null(req, x_nulls):
            return False  # only nulls in the data, none deleted
        if _all_null(req, x_nulls, x_values) and _all_non_null(req, d_nulls):
            return False  # only nulls deleted, none in the data
        if not check_ranges or None in (d_lower, d_upper, x_lower, x_upper):
            continue
        if d_lower > x_upper or x_lower > d_upper:
            return False  # no values in common
    return True


def _contains_null(required: bool, nulls: int | None) -> bool:
    return not required and (nulls is None or nulls > 0)


def _all_null(required: bool, nulls: int | None, values: int | None) -> bool:
    return not required and nulls is not None and values is not None and nulls == values


def _all_non_null(required: bool, nulls: int | None) -> bool:
    return required or (nulls is not None and nulls <= 0)


def eq_columns(schema: T.Schema, ids: Iterable[int] | None = None) -> tuple[dict, frozenset, frozenset]:
    """(types, required ids, prunable ids) of the schema's columns whose stats can prune equality deletes
    (primitive ones, as Java; UUID bounds are not compared), restricted to ``ids`` when given."""
    fields = schema.index_by_id()
    wanted = fields.keys() if ids is None else [i for i in ids if i in fields]
    types = {fid: fields[fid].field_type for fid in wanted if fields[fid].field_type.is_primitive}
    prunable = frozenset(types)
    return types, frozenset(fid for fid in prunable if fields[fid].required), prunable


# the fields of each delete file the plan carries (``ScanPlan`` rows' ``deletes`` structs)
DELETE_STRUCT = ("file_path", "content", "file_format", "equality_ids", "referenced_data_file", "content_offset",
                 "content_size_in_bytes", "record_count")


def _key_value(v: Any) -> Any:
    """A partition value as a dict key that equals itself (NaN does not: Spark's joins match NaN to NaN)."""
    return ("NaN",) if isinstance(v, float) and math.isnan(v) else v


def _stats_of(entry: dict) -> EqStats | None:
    if entry.get("_eq_stats") is None:
        return None
    return (entry["_has_bounds"], {fid: (s["nulls"], s["vals"], s["lower"], s["upper"])
                                   for fid, s in entry["_eq_stats"]})


class _Groups:
    """Candidate delete indexes by group: flat, with offsets, so (row, candidate) pairs come out of numpy."""

    def __init__(self, groups: Sequence[Sequence[int]]):
        lengths = np.array([len(g) for g in groups], np.int64)
        self.lengths = lengths
        self.starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if len(groups) else lengths
        self.flat = np.concatenate([np.asarray(g, np.int64) for g in groups]) if len(groups) else \
            np.empty(0, np.int64)

    def pairs(self, group_of_row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row, delete index) for every row whose group is known (``group_of_row`` >= 0)."""
        known = group_of_row >= 0
        g = np.where(known, group_of_row, 0)
        sizes = np.where(known, self.lengths[g] if len(self.lengths) else 0, 0)
        total = int(sizes.sum())
        if total == 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        rows = np.repeat(np.arange(len(group_of_row), dtype=np.int64), sizes)
        within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        return rows, self.flat[np.repeat(self.starts[g], sizes) + within]


def distinct_rows(columns: list[np.ndarray], sizes: list[int]) -> tuple[np.ndarray, np.ndarray] | None:
    """The distinct rows of columns of non-negative integers below ``sizes`` (an array of rows x columns) and
    each row's index among them: a row's values as one number (mixed radix), so one 1-d unique. None when that
    number could pass 62 bits."""
    if math.prod(sizes) >= 2 ** 62:
        return None
    code = np.zeros(len(columns[0]), np.int64)
    for c, size in zip(columns, sizes):
        code = code * size + c
    distinct, inverse = np.unique(code, return_inverse=True)
    digits = []
    for size in reversed(sizes):
        digits.append(distinct % size)
        distinct = distinct // size
    return np.stack(digits[::-1], axis=1), inverse.reshape(-1)


def _sorted_deletes(deletes: pa.Table) -> pa.Table:
    """The delete entries in :func:`delete_sort_key` order: sorted by Arrow on the struct's columns but
    ``equality_ids`` (nulls last, strings by code point as Python compares them); by the key itself where entries
    that tie on the columns before ``equality_ids`` hold different ones (Arrow cannot order lists)."""
    if deletes.num_rows < 2:
        return deletes
    columns = [c for c in DELETE_STRUCT if c != "equality_ids"]
    try:  # (pyarrow 25+ takes the null placement per key)
        order = pc.sort_indices(deletes.select(columns), sort_keys=[(c, "ascending", "at_end") for c in columns])
    except (TypeError, ValueError, pa.ArrowException):
        order = pc.sort_indices(deletes.select(columns), sort_keys=[(c, "ascending") for c in columns],
                                null_placement="at_end")
    ordered = deletes.take(order)
    n = ordered.num_rows
    ties = np.ones(n - 1, bool)
    for c in DELETE_STRUCT[:DELETE_STRUCT.index("equality_ids")]:
        a, b = ordered.column(c).slice(0, n - 1), ordered.column(c).slice(1)
        ties &= true_mask(pc.equal(a, b)) | (~valid_mask(a) & ~valid_mask(b))
    tied = np.flatnonzero(ties)
    if len(tied):
        ids = ordered.column("equality_ids").to_pylist()
        if any(ids[i] != ids[i + 1] for i in tied.tolist()):
            rows = ordered.select(list(DELETE_STRUCT)).to_pylist()
            ordered = ordered.take(indices(sorted(range(n), key=lambda i: delete_sort_key(rows[i]))))
    return ordered


def _partition_keys(spec_ids: pa.Array, partition: pa.StructArray) -> tuple[list[tuple], np.ndarray]:
    """The distinct (spec id, partition values...) keys of rows (each value as :func:`_key_value` makes it a
    dict key) and the index of each row's key: one Python tuple per distinct partition, not per row."""
    columns = [spec_ids] + [partition.field(i) for i in range(partition.type.num_fields)]
    if all(pa.types.is_integer(c.type) and c.null_count == 0 for c in columns):
        found = _integral_keys([int_values(c)[0] for c in columns])
        if found is not None:
            return found
    codes, dictionaries = [], []
    for col in columns:
        col_codes, values = value_codes(col)
        codes.append(col_codes)
        dictionaries.append(values)
    found = distinct_rows(codes, [max(1, len(d)) for d in dictionaries])
    if found is None:
        distinct, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
    else:
        distinct, inverse = found
    keys = [tuple(_key_value(d[c]) for d, c in zip(dictionaries, combo)) for combo in distinct.tolist()]
    return keys, inverse.reshape(-1)


def _integral_keys(values: list[np.ndarray]) -> tuple[list[tuple], np.ndarray] | None:
    """:func:`_partition_keys` of integer columns without nulls (day, bucket, identity of ints...): each value
    offset by its column's minimum, with no dictionary to build (None where their ranges' product is too big)."""
    lows = np.array([int(v.min()) for v in values], np.int64)
    found = distinct_rows([v - low for v, low in zip(values, lows)],
                          [int(v.max()) - int(low) + 1 for v, low in zip(values, lows)])
    if found is None:
        return None
    distinct, inverse = found
    return [tuple(key) for key in (distinct + lows).tolist()], inverse


def _by_path(members: np.ndarray, paths: pa.Array) -> tuple[pa.Array, _Groups]:
    """The distinct paths of deletes ``members`` (indexes into ``paths``, the path each names), and the group of
    each: its members, in order."""
    grouped: dict[str, list[int]] = defaultdict(list)
    for i, path in zip(members.tolist(), paths.take(indices(members)).to_pylist()):
        grouped[path].append(i)
    return strings(list(grouped)), _Groups(list(grouped.values()))


def _path_groups(paths: pa.Array, keys: pa.Array) -> np.ndarray:
    """The index in ``keys`` of each of ``paths`` (-1: not there), by one hash lookup of each path."""
    if not len(keys):
        return np.full(len(paths), -1, np.int64)
    found = pc.index_in(paths, value_set=keys)
    return np.where(valid_mask(found), int_values(found)[0], -1).astype(np.int64)


class DeleteMatcher:
    """The delete files of a scan, indexed to attach to data entries a batch at a time (picklable).

    ``deletes``: decoded delete entries (:class:`~sparkberg.planning.entries.EntryDecoder` columns: ``spec_id``,
    ``partition``, ``sequence_number``, the :data:`DELETE_STRUCT` fields, and when decoded, ``_path_lower`` /
    ``_path_upper`` and ``_eq_stats`` / ``_has_bounds``); ``unpartitioned``: spec ids whose equality deletes
    are global; ``required`` / ``prunable``: equality field ids, as for :func:`eq_delete_may_apply`.
    """

    def __init__(self, deletes: pa.Table, unpartitioned: set[int], required: frozenset = frozenset(),
                 prunable: frozenset = frozenset()):
        # sorted once as the plan lists them (the local planner's order), so each file's deletes come out sorted
        entries = _sorted_deletes(deletes.filter(pc.not_equal(deletes.column("content"),
                                                              scalar(0, deletes.schema.field("content").type))))
        n = entries.num_rows
        self.required, self.prunable = required, prunable
        self.size = n

        def column(name: str, type: pa.DataType | None = None) -> pa.Array:
            if name not in entries.column_names:
                return pa.nulls(n, type)
            values = entries.column(name).combine_chunks()
            return values if type is None or values.type == type else values.cast(type)
        struct_type = pa.struct([deletes.schema.field(k) for k in DELETE_STRUCT])
        self.structs = pa.StructArray.from_arrays([column(k) for k in DELETE_STRUCT], fields=list(struct_type))
        self.list_type = pa.list_(struct_type)
        self.seq = int_values(column("sequence_number"))[0]
        self.content = int_values(column("content"))[0].astype(np.int8)
        refs = column("referenced_data_file", pa.string())
        self.lower = column("_path_lower", pa.string())
        self.upper = column("_path_upper", pa.string())
        self.has_bounds = self.lower.null_count < n or self.upper.null_count < n
        self.stats = [_stats_of(e) for e in entries.select(["_eq_stats", "_has_bounds"]).to_pylist()] \
            if "_eq_stats" in entries.column_names else [None] * n
        self.eq_ids = column("equality_ids").to_pylist()
        self.has_stats = any(s is not None for s in self.stats)
        # the three groups of candidates: deletion vectors by the file they name, global equality deletes, and
        # the rest by (spec, partition); each group's members in the sorted order
        spec_ids = column("spec_id")
        is_dv = (self.content == POSITION_DELETES) & \
            true_mask(pc.equal(column("file_format", pa.string()), scalar("puffin", pa.string())))
        is_global = (self.content == EQUALITY_DELETES) & \
            np.isin(int_values(spec_ids)[0], np.array(sorted(unpartitioned), np.int64))
        self.dv_refs, self.dvs = _by_path(np.flatnonzero(is_dv), refs)
        # position delete files of one data file (``referenced_data_file``, or ``file_path`` bounds of one path,
        # as Iceberg's Spark writers bound them): found by that path, as deletion vectors are, not among their
        # partition's candidates (comparing each of a partition's files with each of them copied every path)
        one_path = valid_mask(self.lower) & true_mask(pc.equal(self.lower, self.upper))
        is_file_scoped = (self.content == POSITION_DELETES) & ~is_dv & (valid_mask(refs) | one_path)
        file_scoped = np.flatnonzero(is_file_scoped)
        self.file_refs, self.by_file = _by_path(file_scoped, pc.coalesce(refs, self.lower))
        global_eq = np.flatnonzero(is_global).tolist()
        self.global_eq = _Groups([global_eq] if global_eq else [])
        # the (spec, partition) groups of the rest, with the keys of the file-scoped ones too (a file's delete
        # applies only within its partition): each group's members in the sorted order
        keyed = np.flatnonzero(~is_dv & ~is_global)
        members: dict[tuple, list[np.ndarray]] = defaultdict(list)
        self.file_group = np.full(n, -1, np.int64)  # (the group of each file-scoped delete's partition)
        if len(keyed):
            take = indices(keyed)
            keys, inverse = _partition_keys(spec_ids.take(take), column("partition").take(take))
            order = np.argsort(inverse, kind="stable")
            for key, group in zip(keys, np.split(keyed[order], np.cumsum(np.bincount(inverse))[:-1])):
                # (keys that compare equal, as 0.0 and -0.0, share a group)
                members[key].append(group[~is_file_scoped[group]])
            group_of = {k: g for g, k in enumerate(members)}
            self.file_group[keyed] = np.array([group_of[k] for k in keys], np.int64)[inverse]
        self.group_of_key = {k: g for g, k in enumerate(members)}
        self.scoped = _Groups([np.sort(np.concatenate(m)) if len(m) > 1 else m[0] for m in members.values()])

    def equality_ids(self) -> list[int]:
        """The field ids the equality deletes compare (their data files' stats of these columns prune them)."""
        return sorted({i for c, ids in zip(self.content, self.eq_ids) if c == 2 for i in ids or ()})

    def _scoped_groups(self, data: pa.Table) -> np.ndarray:
        """The scoped group of each data row (-1: none), looked up once per distinct (spec, partition)."""
        n = data.num_rows
        if not self.group_of_key or n == 0:
            return np.full(n, -1, np.int64)
        keys, inverse = _partition_keys(data.column("spec_id").combine_chunks(),
                                        data.column("partition").combine_chunks())
        return np.array([self.group_of_key.get(key, -1) for key in keys], np.int64)[inverse]

    def deletes_for(self, data: pa.Table) -> pa.Array:
        """The ``deletes`` column of ``data`` (data entries with ``spec_id``, ``partition``,
        ``sequence_number``, ``file_path`` and, when the scan has equality deletes, ``_eq_stats`` /
        ``_has_bounds``): for each data file, the delete files that apply to it, sorted."""
        n = data.num_rows
        if not self.size or n == 0:
            return pa.ListArray.from_arrays(from_numpy(np.zeros(n + 1, np.int32), pa.int32()), self.structs.slice(0, 0),
                                            type=self.list_type)
        data_seq = int_values(data.column("sequence_number"))[0]
        paths = data.column("file_path").combine_chunks()
        # deletion vectors: by path, data sequence number <= theirs; a file with one ignores position delete files
        dv_rows, dv_dels = self.dvs.pairs(_path_groups(paths, self.dv_refs))
        dv_keep = sequence_applies(POSITION_DELETES, data_seq[dv_rows], self.seq[dv_dels])
        dv_rows, dv_dels = dv_rows[dv_keep], dv_dels[dv_keep]
        has_dv = np.zeros(n, bool)
        has_dv[dv_rows] = True
        # position delete files of one data file: by path, as deletion vectors
        file_rows, file_dels = self.by_file.pairs(_path_groups(paths, self.file_refs))
        groups = self._scoped_groups(data)
        file_keep = ~has_dv[file_rows] & (groups[file_rows] == self.file_group[file_dels]) & \
            sequence_applies(POSITION_DELETES, data_seq[file_rows], self.seq[file_dels])
        file_keep[file_keep] = self._in_reach(paths, file_rows[file_keep], file_dels[file_keep])
        by_path_rows = np.concatenate([dv_rows, file_rows[file_keep]])
        by_path_dels = np.concatenate([dv_dels, file_dels[file_keep]])
        # position deletes and partition-scoped equality deletes: by (spec, partition)
        rows, dels = self.scoped.pairs(groups)
        content, d_seq, r_seq = self.content[dels], self.seq[dels], data_seq[rows]
        pos = (content == POSITION_DELETES) & ~has_dv[rows] & sequence_applies(POSITION_DELETES, r_seq, d_seq)
        if pos.any() and self.has_bounds:
            pos[pos] = self._in_reach(paths, rows[pos], dels[pos])
        keep = pos | ((content == EQUALITY_DELETES) & sequence_applies(EQUALITY_DELETES, r_seq, d_seq))
        g_rows, g_dels = self.global_eq.pairs(np.zeros(n, np.int64)) if len(self.global_eq.lengths) else (
            np.empty(0, np.int64), np.empty(0, np.int64))
        g_keep = sequence_applies(EQUALITY_DELETES, data_seq[g_rows], self.seq[g_dels])
        rows = np.concatenate([by_path_rows, rows[keep], g_rows[g_keep]])
        dels = np.concatenate([by_path_dels, dels[keep], g_dels[g_keep]])
        if self.has_stats and "_eq_stats" in data.column_names:
            rows, dels = self._by_eq_stats(data, rows, dels)
        order = np.lexsort((dels, rows))
        rows, dels = rows[order], dels[order]
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum(np.bincount(rows, minlength=n), out=offsets[1:])
        return pa.ListArray.from_arrays(from_numpy(offsets, pa.int32()), self.structs.take(indices(dels)),
                                        type=self.list_type)

    def _in_reach(self, paths: pa.Array, rows: np.ndarray, dels: np.ndarray) -> np.ndarray:
        """Of (data row, position delete) pairs, those whose delete's ``file_path`` bounds hold the data file's
        path (UTF-8 byte order, as Iceberg Java; no bound: in reach)."""
        ok = np.ones(len(rows), bool)
        if not self.has_bounds or not len(rows):
            return ok
        path = paths.take(indices(rows))
        take = indices(dels)
        for bound, op in ((self.lower, pc.greater_equal), (self.upper, pc.less_equal)):
            b = bound.take(take)
            if b.null_count < len(b):
                ok &= ~valid_mask(b) | true_mask(op(path, b))
        return ok

    def _by_eq_stats(self, data: pa.Table, rows: np.ndarray, dels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Drop equality delete pairs whose column stats show they share no values (Java's DeleteFileIndex)."""
        eq = np.flatnonzero(self.content[dels] == 2)
        if len(eq) == 0:
            return rows, dels
        wanted = np.unique(rows[eq])
        table = data.select(["_eq_stats", "_has_bounds"]).take(indices(wanted)).to_pylist()
        stats = {int(r): _stats_of(e) for r, e in zip(wanted, table)}
        keep = np.ones(len(rows), bool)
        for j in eq:
            d = int(dels[j])
            keep[j] = eq_delete_may_apply(stats[int(rows[j])], self.stats[d], self.eq_ids[d], self.required,
                                          self.prunable)
        return rows[keep], dels[keep]
