"""Delete matching, one data file at a time: the spec's rules in plain Python (spec "Scan Planning").

Used by the local planner for small tables and by the reference planner in tests; the distributed planner
expresses the same rules as joins (:mod:`sparkberg.planning.scan`), with :func:`eq_delete_sql` for the
equality delete stats rule.
"""
from __future__ import annotations

import math
import struct
from collections import defaultdict
from typing import Any, Iterable

from sparkberg.expressions.evaluators import INTEGRAL_TYPES
from sparkberg.spec import types as T
from sparkberg.spec.metadata_columns import DELETE_FILE_PATH
from sparkberg.spec.values import from_bytes

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


class DeleteIndex:
    """Delete entries indexed for lookups by data file. Entries are (spec id, partition key, data sequence
    number, delete file dict[, file_path bounds]) where the dict has the plan's delete fields."""

    def __init__(self, deletes: Iterable[tuple], unpartitioned_spec_ids: set[int], required: frozenset = frozenset(),
                 prunable: frozenset = frozenset()):
        self.by_partition: dict[tuple, list] = defaultdict(list)  # position and equality deletes
        self.dvs: dict[str, list] = defaultdict(list)
        self.global_eq: list = []
        self.bounds: dict[int, tuple] = {}
        self.stats: dict[int, EqStats] = {}
        self.required, self.prunable = required, prunable
        for spec_id, pkey, seq, d, *rest in deletes:
            if rest and rest[0]:
                self.bounds[id(d)] = rest[0]
            if len(rest) > 1 and rest[1] is not None:
                self.stats[id(d)] = rest[1]
            if d["content"] == 1 and d["file_format"] == "puffin":
                self.dvs[d["referenced_data_file"]].append((seq, d))
            elif d["content"] == 2 and spec_id in unpartitioned_spec_ids:
                self.global_eq.append((seq, d))
            else:
                self.by_partition[(spec_id, pkey)].append((seq, d))

    def for_file(self, spec_id: int, pkey: Any, data_seq: int, path: str, stats: EqStats | None = None) -> list[dict]:
        """The delete files that apply to one data file, sorted as the distributed planner sorts them;
        ``stats`` (of the data file's equality columns) prune equality deletes as Iceberg Java does."""
        out = [d for seq, d in self.dvs.get(path, ()) if data_seq <= seq]
        has_dv = bool(out)
        for seq, d in self.by_partition.get((spec_id, pkey), ()):
            if d["content"] == 1:
                if not has_dv and data_seq <= seq and d["referenced_data_file"] in (None, path) and \
                        in_path_bounds(path, self.bounds.get(id(d))):
                    out.append(d)
            elif data_seq < seq and self._eq_applies(stats, d):
                out.append(d)
        out += [d for seq, d in self.global_eq if data_seq < seq and self._eq_applies(stats, d)]
        return sorted(out, key=delete_sort_key)


    def _eq_applies(self, stats: EqStats | None, d: dict) -> bool:
        return eq_delete_may_apply(stats, self.stats.get(id(d)), d.get("equality_ids"), self.required, self.prunable)


def delete_sort_key(d: dict) -> tuple:
    """The order in which a plan lists the delete files of a data file: by their fields, None last."""
    return tuple((v is None, v if not isinstance(v, list) else tuple(v)) for v in d.values())


def partition_key(partition: dict) -> tuple:
    return tuple(sorted(partition.items(), key=lambda kv: str(kv[0])))


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


def eq_delete_sql(data_stats: str, data_has_bounds: str, delete_stats: str, delete_has_bounds: str,
                  equality_ids: str, required: frozenset, prunable: frozenset) -> str:
    """:func:`eq_delete_may_apply` as a Spark SQL boolean expression over columns (or lambda variables)
    holding the two files' stats as ``map<int, struct<nulls, vals, lower, upper>>`` and their bounds flags."""
    def ids(s: frozenset) -> str:
        return f"array({', '.join(str(i) for i in sorted(s))})" if s else "CAST(array() AS array<int>)"
    d, x = f"element_at({data_stats}, f)", f"element_at({delete_stats}, f)"
    req = f"array_contains({ids(required)}, f)"

    def contains_null(s):
        return f"(NOT {req} AND coalesce({s}.nulls > 0, true))"

    def all_null(s):
        return f"(NOT {req} AND {s}.nulls IS NOT NULL AND {s}.vals IS NOT NULL AND {s}.nulls = {s}.vals)"

    def all_non_null(s):
        return f"({req} OR coalesce({s}.nulls <= 0, false))"

    field_ok = (f"(NOT array_contains({ids(prunable)}, f) OR CASE "
                f"WHEN {contains_null(d)} AND {contains_null(x)} THEN true "
                f"WHEN {all_null(d)} AND {all_non_null(x)} THEN false "
                f"WHEN {all_null(x)} AND {all_non_null(d)} THEN false "
                f"WHEN NOT (coalesce({data_has_bounds}, false) AND coalesce({delete_has_bounds}, false)) THEN true "
                f"WHEN {d}.lower IS NULL OR {d}.upper IS NULL OR {x}.lower IS NULL OR {x}.upper IS NULL THEN true "
                f"ELSE {d}.lower <= {x}.upper AND {x}.lower <= {d}.upper END)")
    return f"({data_stats} IS NULL OR {delete_stats} IS NULL OR forall(coalesce({equality_ids}, array()), f -> {field_ok}))"


def eq_columns(schema: T.Schema, ids: Iterable[int] | None = None) -> tuple[dict, frozenset, frozenset]:
    """(types, required ids, prunable ids) of the schema's columns whose stats can prune equality deletes
    (primitive ones, as Java; UUID bounds are not compared), restricted to ``ids`` when given."""
    fields = schema.index_by_id()
    wanted = fields.keys() if ids is None else [i for i in ids if i in fields]
    types = {fid: fields[fid].field_type for fid in wanted if fields[fid].field_type.is_primitive}
    prunable = frozenset(types)
    return types, frozenset(fid for fid in prunable if fields[fid].required), prunable
