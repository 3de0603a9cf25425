"""What the command line shows of a table's metadata, computed in Python from the metadata files alone (no
Spark, no JVM): snapshots, history, refs and manifests always; files and partitions while the snapshot lists
at most :data:`LOCAL_MAX_FILES` files (beyond, the command line asks Spark for the metadata tables).

Each view is a list of rows (dicts) with the columns of Iceberg's metadata table of the same name, for
``--output json``, and :func:`render` lays them out for a terminal: chosen columns, truncated to its width,
sizes and times made readable, as PyIceberg's command line does.
"""
from __future__ import annotations

import datetime as _dt
import shutil
from typing import Any, Callable, Sequence

from sparkberg.avro.decode import manifest_entries
from sparkberg.inspect import (
    SummaryStrings, history_rows, manifest_row, partition_key_fields, refs_rows, snapshot_rows,
)
from sparkberg.planning.entries import PartitionLayout, snapshot_manifests
from sparkberg.format.manifests import DELETED
from sparkberg.format.snapshots import Snapshot
from sparkberg.format.values import to_python

# the most files a snapshot may list for ``files`` and ``partitions`` to be read here rather than by Spark: the
# reference decoder reads ~50k entries a second, so this keeps an answer under a few seconds
LOCAL_MAX_FILES = 20_000
CONTENT = {0: "data", 1: "position deletes", 2: "equality deletes"}


def _time(ms: int | None) -> str | None:
    if ms is None:
        return None
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def human_size(n: int | None) -> str:
    """Bytes as B, KiB, MiB, GiB or TiB with three significant digits."""
    if n is None:
        return ""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.3g} {unit}"
        size /= 1024
    return f"{size:.3g} TiB"


def human_count(n: Any) -> str:
    """A count with thousands separators (``1,234,567``)."""
    try:
        return f"{int(n):,}"
    except (TypeError, ValueError):
        return "" if n is None else str(n)


def snapshots(t) -> list[dict]:
    return [{**r, "committed_at": _time(r["committed_at"])}
            for r in sorted(snapshot_rows(t.metadata), key=lambda r: r["committed_at"])]


def history(t) -> list[dict]:
    return [{**r, "made_current_at": _time(r["made_current_at"])} for r in history_rows(t.metadata)]


def refs(t) -> list[dict]:
    return sorted(refs_rows(t.metadata), key=lambda r: r["name"])


def manifests(t) -> list[dict]:
    snap = t.metadata.current_snapshot
    if snap is None:
        return []
    strings = SummaryStrings(t.metadata)
    return [manifest_row(mf, strings) for mf in snapshot_manifests(t.io, snap)]


def listed_files(t, snap: Snapshot | None = None) -> int | None:
    """How many live files the snapshot's manifest list says its manifests hold (None when it does not say)."""
    snap = snap or t.metadata.current_snapshot
    if snap is None:
        return 0
    total = 0
    for mf in snapshot_manifests(t.io, snap):
        if mf.added_files_count is None or mf.existing_files_count is None:
            return None
        total += mf.added_files_count + mf.existing_files_count
    return total


def _live_entries(t):
    snap = t.metadata.current_snapshot
    for mf in snapshot_manifests(t.io, snap) if snap is not None else ():
        for e in manifest_entries(t.io.read(mf.manifest_path), mf):
            if e.status != DELETED:
                yield mf, e


def _partition(layout: PartitionLayout, spec_id: int, partition: dict) -> dict | None:
    """A file's partition tuple in the table's unified partition type, values as Iceberg's Spark types show them
    (days as dates, for example)."""
    if not layout.slots:
        return None
    row = layout.row(spec_id, partition)
    return {s.name: to_python(s.field_type, row[s.name]) for s in layout.slots}


def files(t) -> list[dict]:
    layout = PartitionLayout(t.metadata)
    return [{"content": e.data_file.content, "file_path": e.data_file.file_path,
             "file_format": e.data_file.file_format.upper(), "spec_id": mf.partition_spec_id,
             "partition": _partition(layout, mf.partition_spec_id, e.data_file.partition),
             "record_count": e.data_file.record_count, "file_size_in_bytes": e.data_file.file_size_in_bytes}
            for mf, e in _live_entries(t)]


def partitions(t) -> list[dict]:
    """Iceberg's ``partitions`` table: one row per tuple of the unified partition type and number of its fields the
    file's spec has (:func:`~sparkberg.inspect.partition_key_fields`), with the spec and snapshot of its most
    recent commit (the reference for ``t.metadata_table("partitions")``, which Spark computes)."""
    layout = PartitionLayout(t.metadata)
    times = {s.snapshot_id: s.timestamp_ms for s in t.metadata.snapshots}
    counts = partition_key_fields(t.metadata)
    rows: dict[tuple, dict] = {}
    for mf, e in _live_entries(t):
        part = _partition(layout, mf.partition_spec_id, e.data_file.partition) or {}
        # (a float's text: -0.0 and 0.0 are two tuples, every NaN one, as Iceberg Java compares them)
        key = (counts.get(mf.partition_spec_id),
               tuple(sorted((k, repr(v) if isinstance(v, float) else v) for k, v in part.items())))
        r = rows.setdefault(key, {"partition": part or None, "spec_id": mf.partition_spec_id, "record_count": 0,
                                  "file_count": 0, "total_data_file_size_in_bytes": 0,
                                  "position_delete_record_count": 0, "position_delete_file_count": 0,
                                  "equality_delete_record_count": 0, "equality_delete_file_count": 0,
                                  "_last": None})
        d = e.data_file
        kind = {0: ("record_count", "file_count"), 1: ("position_delete_record_count", "position_delete_file_count"),
                2: ("equality_delete_record_count", "equality_delete_file_count")}[d.content]
        r[kind[0]] += d.record_count
        r[kind[1]] += 1
        if d.content == 0:
            r["total_data_file_size_in_bytes"] += d.file_size_in_bytes
        last = (times.get(e.snapshot_id, -1), e.snapshot_id, mf.partition_spec_id)
        if r["_last"] is None or last > r["_last"]:
            r["_last"] = last
    out = []
    for r in rows.values():
        ts, sid, spec_id = r.pop("_last")
        r.update(spec_id=spec_id, last_updated_at=_time(ts) if ts >= 0 else None, last_updated_snapshot_id=sid)
        if not layout.slots:
            del r["partition"], r["spec_id"]
        out.append(r)
    return out


VIEWS: dict[str, Callable[[Any], list[dict]]] = {
    "snapshots": snapshots, "history": history, "refs": refs, "manifests": manifests, "files": files,
    "partitions": partitions}

# what a terminal shows of each view: (column, heading, formatter)
_PATH = ("path", lambda v: v.rsplit("/", 1)[-1] if v else "")


def _partition_text(v: Any) -> str:
    if not v:
        return ""
    return ", ".join(f"{k}={x}" for k, x in v.items())


def _summary(key: str) -> Callable[[dict], str]:
    return lambda r: human_count(r["summary"].get(key))


COLUMNS: dict[str, list[tuple[str, str, Callable[[dict], Any]]]] = {
    "snapshots": [("committed_at", "committed at", lambda r: _text(r["committed_at"])[:19]),
                  ("snapshot_id", "snapshot", lambda r: r["snapshot_id"]),
                  ("parent_id", "parent", lambda r: r["parent_id"] or ""),
                  ("operation", "operation", lambda r: r["operation"] or ""),
                  ("added-data-files", "+files", _summary("added-data-files")),
                  ("deleted-data-files", "-files", _summary("deleted-data-files")),
                  ("added-records", "+records", _summary("added-records")),
                  ("total-records", "records", _summary("total-records")),
                  ("total-files-size", "size", lambda r: human_size(
                      int(r["summary"]["total-files-size"])) if "total-files-size" in r["summary"] else "")],
    "history": [("made_current_at", "made current at", lambda r: _text(r["made_current_at"])[:19]),
                ("snapshot_id", "snapshot", lambda r: r["snapshot_id"]),
                ("parent_id", "parent", lambda r: r["parent_id"] or ""),
                ("is_current_ancestor", "current ancestor", lambda r: "yes" if r["is_current_ancestor"] else "no")],
    "refs": [("name", "name", lambda r: r["name"]), ("type", "type", lambda r: r["type"]),
             ("snapshot_id", "snapshot", lambda r: r["snapshot_id"]),
             ("min_snapshots_to_keep", "keep snapshots", lambda r: r["min_snapshots_to_keep"] or ""),
             ("max_snapshot_age_in_ms", "max snapshot age", lambda r: _ms(r["max_snapshot_age_in_ms"])),
             ("max_reference_age_in_ms", "max ref age", lambda r: _ms(r["max_reference_age_in_ms"]))],
    "manifests": [("path", "manifest", lambda r: _PATH[1](r["path"])),
                  ("content", "content", lambda r: "data" if r["content"] == 0 else "deletes"),
                  ("partition_spec_id", "spec", lambda r: r["partition_spec_id"]),
                  ("added_snapshot_id", "added by", lambda r: r["added_snapshot_id"]),
                  ("files", "files (+/=/-)", lambda r: "/".join(human_count(r[f"{k}_{c}_files_count"]) for k in (
                      "added", "existing", "deleted") for c in (("data",) if r["content"] == 0 else ("delete",)))),
                  ("length", "size", lambda r: human_size(r["length"]))],
    "files": [("content", "content", lambda r: CONTENT.get(r["content"], r["content"])),
              ("file_path", "file", lambda r: _PATH[1](r["file_path"])),
              ("file_format", "format", lambda r: r["file_format"]),
              ("partition", "partition", lambda r: _partition_text(r.get("partition"))),
              ("record_count", "records", lambda r: human_count(r["record_count"])),
              ("file_size_in_bytes", "size", lambda r: human_size(r["file_size_in_bytes"]))],
    "partitions": [("partition", "partition", lambda r: _partition_text(r.get("partition"))),
                   ("record_count", "records", lambda r: human_count(r["record_count"])),
                   ("file_count", "files", lambda r: human_count(r["file_count"])),
                   ("total_data_file_size_in_bytes", "size", lambda r: human_size(r["total_data_file_size_in_bytes"])),
                   ("position_delete_record_count", "pos. deletes",
                    lambda r: human_count(r["position_delete_record_count"])),
                   ("equality_delete_record_count", "eq. deletes",
                    lambda r: human_count(r["equality_delete_record_count"])),
                   ("last_updated_at", "last updated", lambda r: _text(r.get("last_updated_at"))[:19])],
}


def _ms(v: int | None) -> str:
    if v is None:
        return ""
    return str(_dt.timedelta(milliseconds=v))


def _text(v: Any) -> str:
    if isinstance(v, _dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    return "" if v is None else str(v)


def render(view: str, rows: Sequence[dict], width: int | None = None) -> str:
    """``rows`` of ``view`` as a text table that fits ``width`` columns (the terminal's by default): the
    widest column is cut first, with an ellipsis, down to a few characters."""
    spec = COLUMNS[view]
    headings = [h for _, h, _ in spec]
    cells = [[str(fmt(r)) for _, _, fmt in spec] for r in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headings)]
    width = width or shutil.get_terminal_size((120, 24)).columns
    while sum(widths) + 2 * (len(widths) - 1) > width and max(widths) > 8:
        i = widths.index(max(widths))
        widths[i] -= 1

    def cut(text: str, n: int) -> str:
        return text if len(text) <= n else text[:n - 1] + "\u2026"
    right = {i for i, (_, h, _) in enumerate(spec) if h in ("records", "+records", "size", "files", "+files", "-files",
                                                             "pos. deletes", "eq. deletes")}

    def line(values: list[str]) -> str:
        return "  ".join(cut(v, w).rjust(w) if i in right else cut(v, w).ljust(w)
                         for i, (v, w) in enumerate(zip(values, widths))).rstrip()
    out = [line(headings), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    return "\n".join(out)
