"""Delete matching, one data file at a time: the spec's rules in plain Python (spec "Scan Planning").

Used by the local planner for small tables and by the reference planner in tests; the distributed planner
expresses the same rules as joins (:func:`sparkberg.planning.scan.attach_deletes`).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable


class DeleteIndex:
    """Delete entries indexed for lookups by data file. Entries are (spec id, partition key, data sequence
    number, delete file dict) where the dict has the plan's delete fields."""

    def __init__(self, deletes: Iterable[tuple[int, Any, int, dict]], unpartitioned_spec_ids: set[int]):
        self.by_partition: dict[tuple, list] = defaultdict(list)  # position and equality deletes
        self.dvs: dict[str, list] = defaultdict(list)
        self.global_eq: list = []
        for spec_id, pkey, seq, d in deletes:
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
                if not has_dv and data_seq <= seq and d["referenced_data_file"] in (None, path):
                    out.append(d)
            elif data_seq < seq:
                out.append(d)
        out += [d for seq, d in self.global_eq if data_seq < seq]
        return sorted(out, key=_sort_key)


def _sort_key(d: dict) -> tuple:
    return tuple((v is None, v if not isinstance(v, list) else tuple(v)) for v in d.values())


def partition_key(partition: dict) -> tuple:
    return tuple(sorted(partition.items(), key=lambda kv: str(kv[0])))
