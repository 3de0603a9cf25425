"""Delete matching a batch of data files at a time: the rules of :class:`~sparkberg.planning.matching.DeleteIndex`
(spec "Scan Planning") over Arrow columns, for the planners on the executors and on the driver.

The delete files of a scan are few next to its data files (Iceberg Java keeps them all in the driver's
``DeleteFileIndex``), so they are decoded first and this index travels with the data manifests' decoder: each
decoded batch of data entries gets its ``deletes`` column where it is decoded, with no join, no shuffle and no
per-row Python. Candidates come from three groups, as in Java: the (spec, partition) of the data file
(position deletes and partition-scoped equality deletes), its path (deletion vectors) and the global equality
deletes; each (data file, candidate) pair is then kept or dropped by numpy and Arrow compute on whole columns.
Only equality deletes with column stats on both sides are judged pair by pair
(:func:`~sparkberg.planning.matching.eq_delete_may_apply`).
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkberg.planning.matching import EqStats, delete_sort_key, eq_delete_may_apply

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
        self.flat = np.array([i for g in groups for i in g], np.int64)

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


def _sorted_deletes(deletes: pa.Table) -> list[dict]:
    """The delete entries as dicts in :func:`delete_sort_key` order: sorted by Arrow on the struct's columns
    but ``equality_ids`` (nulls last, strings by code point as Python compares them); by the key itself where
    entries that tie on the columns before ``equality_ids`` hold different ones (Arrow cannot order lists)."""
    columns = [c for c in DELETE_STRUCT if c != "equality_ids"]
    try:  # (pyarrow 25+ takes the null placement per key)
        order = pc.sort_indices(deletes.select(columns), sort_keys=[(c, "ascending", "at_end") for c in columns])
    except (TypeError, ValueError, pa.ArrowException):
        order = pc.sort_indices(deletes.select(columns), sort_keys=[(c, "ascending") for c in columns],
                                null_placement="at_end")
    ordered = deletes.take(order)
    rows = ordered.to_pylist()
    if len(rows) > 1:
        ties = np.ones(len(rows) - 1, bool)
        for c in DELETE_STRUCT[:DELETE_STRUCT.index("equality_ids")]:
            a, b = ordered.column(c).slice(0, len(rows) - 1), ordered.column(c).slice(1)
            ties &= pc.or_(pc.fill_null(pc.equal(a, b), False), pc.and_(pc.is_null(a), pc.is_null(b))).to_numpy()
        if any(rows[i]["equality_ids"] != rows[i + 1]["equality_ids"] for i in np.flatnonzero(ties).tolist()):
            rows.sort(key=lambda e: delete_sort_key({k: e[k] for k in DELETE_STRUCT}))
    return rows


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
        entries = _sorted_deletes(deletes.filter(pc.not_equal(deletes.column("content"), 0)))
        self.required, self.prunable = required, prunable
        self.size = len(entries)
        struct_type = pa.struct([deletes.schema.field(k) for k in DELETE_STRUCT])
        self.structs = pa.array([{k: e[k] for k in DELETE_STRUCT} for e in entries], struct_type)
        self.list_type = pa.list_(struct_type)
        self.seq = np.array([e["sequence_number"] for e in entries], np.int64)
        self.content = np.array([e["content"] for e in entries], np.int8)
        self.refs = pa.array([e["referenced_data_file"] for e in entries], pa.string())
        self.lower = pa.array([e.get("_path_lower") for e in entries], pa.string())
        self.upper = pa.array([e.get("_path_upper") for e in entries], pa.string())
        self.has_refs = self.refs.null_count < len(entries)
        self.has_bounds = self.lower.null_count < len(entries) or self.upper.null_count < len(entries)
        self.stats = [_stats_of(e) for e in entries]
        self.eq_ids = [e["equality_ids"] for e in entries]
        self.has_stats = any(s is not None for s in self.stats)
        scoped: dict[tuple, list[int]] = defaultdict(list)
        dvs: dict[str, list[int]] = defaultdict(list)
        global_eq: list[int] = []
        for i, e in enumerate(entries):
            if e["content"] == 1 and e["file_format"] == "puffin":
                dvs[e["referenced_data_file"]].append(i)
            elif e["content"] == 2 and e["spec_id"] in unpartitioned:
                global_eq.append(i)
            else:
                scoped[self._key(e["spec_id"], e["partition"])].append(i)
        self.group_of_key = {k: g for g, k in enumerate(scoped)}
        self.scoped = _Groups(list(scoped.values()))
        self.dv_refs = pa.array(list(dvs), pa.string())
        self.dvs = _Groups(list(dvs.values()))
        self.global_eq = _Groups([global_eq] if global_eq else [])

    @staticmethod
    def _key(spec_id: int, partition: dict | None) -> tuple:
        return (spec_id, *(_key_value(v) for v in (partition or {}).values()))

    def equality_ids(self) -> list[int]:
        """The field ids the equality deletes compare (their data files' stats of these columns prune them)."""
        return sorted({i for c, ids in zip(self.content, self.eq_ids) if c == 2 for i in ids or ()})

    def _scoped_groups(self, data: pa.Table) -> np.ndarray:
        """The scoped group of each data row (-1: none), looked up once per distinct (spec, partition)."""
        n = data.num_rows
        if not self.group_of_key or n == 0:
            return np.full(n, -1, np.int64)
        columns = [data.column("spec_id").combine_chunks()]
        partition = data.column("partition").combine_chunks()
        columns += [partition.field(i) for i in range(partition.type.num_fields)]
        if all(pa.types.is_integer(c.type) and c.null_count == 0 for c in columns):
            found = self._integral_groups([c.to_numpy().astype(np.int64) for c in columns])
            if found is not None:
                return found
        codes, dictionaries = [], []
        for col in columns:
            enc = pc.dictionary_encode(col, null_encoding="encode")
            codes.append(enc.indices.to_numpy(zero_copy_only=False).astype(np.int64))
            dictionaries.append(enc.dictionary.to_pylist())
        found = distinct_rows(codes, [max(1, len(d)) for d in dictionaries])
        if found is None:
            distinct, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
        else:
            distinct, inverse = found
        group = np.array([self.group_of_key.get(tuple(_key_value(d[c]) for d, c in zip(dictionaries, combo)), -1)
                          for combo in distinct.tolist()], np.int64)
        return group[inverse.reshape(-1)]

    def _integral_groups(self, values: list[np.ndarray]) -> np.ndarray | None:
        """:meth:`_scoped_groups` of integer columns without nulls (day, bucket, identity of ints...): each value
        offset by its column's minimum, with no dictionary to build."""
        lows = np.array([int(v.min()) for v in values], np.int64)
        found = distinct_rows([v - low for v, low in zip(values, lows)],
                               [int(v.max()) - int(low) + 1 for v, low in zip(values, lows)])
        if found is None:
            return None
        distinct, inverse = found
        group = np.array([self.group_of_key.get(tuple(key), -1) for key in (distinct + lows).tolist()], np.int64)
        return group[inverse]

    def deletes_for(self, data: pa.Table) -> pa.Array:
        """The ``deletes`` column of ``data`` (data entries with ``spec_id``, ``partition``,
        ``sequence_number``, ``file_path`` and, when the scan has equality deletes, ``_eq_stats`` /
        ``_has_bounds``): for each data file, the delete files that apply to it, sorted."""
        n = data.num_rows
        if not self.size or n == 0:
            return pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, np.int32)), self.structs.slice(0, 0),
                                            type=self.list_type)
        data_seq = data.column("sequence_number").to_numpy()
        paths = data.column("file_path").combine_chunks()
        # deletion vectors: by path, data sequence number <= theirs; a file with one ignores position delete files
        dv_group = pc.fill_null(pc.index_in(paths, value_set=self.dv_refs), -1).to_numpy(zero_copy_only=False) \
            if len(self.dv_refs) else np.full(n, -1)
        dv_rows, dv_dels = self.dvs.pairs(dv_group.astype(np.int64))
        dv_keep = data_seq[dv_rows] <= self.seq[dv_dels]
        dv_rows, dv_dels = dv_rows[dv_keep], dv_dels[dv_keep]
        has_dv = np.zeros(n, bool)
        has_dv[dv_rows] = True
        # position deletes and partition-scoped equality deletes: by (spec, partition)
        rows, dels = self.scoped.pairs(self._scoped_groups(data))
        content, d_seq, r_seq = self.content[dels], self.seq[dels], data_seq[rows]
        pos = (content == 1) & ~has_dv[rows] & (r_seq <= d_seq)
        if pos.any() and (self.has_refs or self.has_bounds):
            pos &= self._in_reach(paths, rows, dels, pos)
        keep = pos | ((content == 2) & (r_seq < d_seq))
        g_rows, g_dels = self.global_eq.pairs(np.zeros(n, np.int64)) if len(self.global_eq.lengths) else (
            np.empty(0, np.int64), np.empty(0, np.int64))
        g_keep = data_seq[g_rows] < self.seq[g_dels]
        rows = np.concatenate([dv_rows, rows[keep], g_rows[g_keep]])
        dels = np.concatenate([dv_dels, dels[keep], g_dels[g_keep]])
        if self.has_stats and "_eq_stats" in data.column_names:
            rows, dels = self._by_eq_stats(data, rows, dels)
        order = np.lexsort((dels, rows))
        rows, dels = rows[order], dels[order]
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum(np.bincount(rows, minlength=n), out=offsets[1:])
        return pa.ListArray.from_arrays(pa.array(offsets), self.structs.take(pa.array(dels)), type=self.list_type)

    def _in_reach(self, paths: pa.Array, rows: np.ndarray, dels: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """Of position delete candidates (``pos``), those that name no other file (``referenced_data_file``)
        and whose ``file_path`` bounds hold the data file's path (UTF-8 byte order, as Iceberg Java)."""
        idx = np.flatnonzero(pos)
        path = paths.take(pa.array(rows[idx]))
        take = pa.array(dels[idx])
        ok = pa.array(np.ones(len(idx), bool))
        for bound, op in ((self.refs, pc.equal), (self.lower, pc.greater_equal), (self.upper, pc.less_equal)):
            if bound.null_count == len(bound):
                continue
            b = bound.take(take)
            if b.null_count < len(b):
                ok = pc.and_(ok, pc.or_kleene(b.is_null(), pc.fill_null(op(path, b), False)))
        out = np.ones(len(pos), bool)
        out[idx] = ok.to_numpy(zero_copy_only=False)
        return out

    def _by_eq_stats(self, data: pa.Table, rows: np.ndarray, dels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Drop equality delete pairs whose column stats show they share no values (Java's DeleteFileIndex)."""
        eq = np.flatnonzero(self.content[dels] == 2)
        if len(eq) == 0:
            return rows, dels
        wanted = np.unique(rows[eq])
        table = data.select(["_eq_stats", "_has_bounds"]).take(pa.array(wanted)).to_pylist()
        stats = {int(r): _stats_of(e) for r, e in zip(wanted, table)}
        keep = np.ones(len(rows), bool)
        for j in eq:
            d = int(dels[j])
            keep[j] = eq_delete_may_apply(stats[int(rows[j])], self.stats[d], self.eq_ids[d], self.required,
                                          self.prunable)
        return rows[keep], dels[keep]
