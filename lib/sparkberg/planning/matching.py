"""Delete matching, one data file at a time: the spec's rules in plain Python (spec "Scan Planning").

Used by the local planner for small tables and by the reference planner in tests; the distributed planner
expresses the same rules as joins (:func:`sparkberg.planning.scan.attach_deletes`).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

DELETE_FILE_PATH_ID = 2147483546  # the ``file_path`` column of position delete files (spec "Reserved Field IDs")


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

    def __init__(self, deletes: Iterable[tuple], unpartitioned_spec_ids: set[int]):
        self.by_partition: dict[tuple, list] = defaultdict(list)  # position and equality deletes
        self.dvs: dict[str, list] = defaultdict(list)
        self.global_eq: list = []
        self.bounds: dict[int, tuple] = {}
        for spec_id, pkey, seq, d, *rest in deletes:
            if rest and rest[0]:
                self.bounds[id(d)] = rest[0]
            if d["content"] == 1 and d["file_format"] == "puffin":
                self.dvs[d["referenced_data_file"]].append((seq, d))
            elif d["content"] == 2 and spec_id in unpartitioned_spec_ids:
                self.global_eq.append((seq, d))
            else:
                self.by_partition[(spec_id, pkey)].append((seq, d))

    def for_file(self, spec_id: int, pkey: Any, data_seq: int, path: str) -> list[dict]:
        """The delete files that apply to one data file, sorted as the distributed planner sorts them."""
        out = [d for seq, d in self.dvs.get(path, ()) if data_seq <= seq]
        has_dv = bool(out)
        for seq, d in self.by_partition.get((spec_id, pkey), ()):
            if d["content"] == 1:
                if not has_dv and data_seq <= seq and d["referenced_data_file"] in (None, path) and \
                        in_path_bounds(path, self.bounds.get(id(d))):
                    out.append(d)
            elif data_seq < seq:
                out.append(d)
        out += [d for seq, d in self.global_eq if data_seq < seq]
        return sorted(out, key=_sort_key)


def _sort_key(d: dict) -> tuple:
    return tuple((v is None, v if not isinstance(v, list) else tuple(v)) for v in d.values())


def partition_key(partition: dict) -> tuple:
    return tuple(sorted(partition.items(), key=lambda kv: str(kv[0])))
