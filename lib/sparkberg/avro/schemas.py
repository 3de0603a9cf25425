"""The manifest list and manifest Avro schemas of format versions 1-3, written once, as data.

Each row is ``(field id, name, type, presence per version)``; presence is ``R`` (required),
``O`` (optional) or ``-`` (absent) for v1, v2 and v3 in that order, exactly as the spec's tables
(spec: "Manifests", "Manifest Lists"). Nested types name the element/key/value ids as the spec
does, and records are named as Iceberg Java names them (``r102``, ``k117_v118``...), so files
written here are indistinguishable in shape from Java's.
"""
from __future__ import annotations

import copy
from typing import Any

# --- types used in the tables -------------------------------------------------------------------------


def _map(key_id: int, value_id: int, value_type: str) -> dict:
    return {"type": "array", "logicalType": "map", "items": {
        "type": "record", "name": f"k{key_id}_v{value_id}", "fields": [
            {"name": "key", "type": "int", "field-id": key_id},
            {"name": "value", "type": value_type, "field-id": value_id}]}}


def _list(element_id: int, element_type: str) -> dict:
    return {"type": "array", "items": element_type, "element-id": element_id}


FIELD_SUMMARY = {"type": "record", "name": "r508", "fields": [
    {"name": "contains_null", "type": "boolean", "field-id": 509},
    {"name": "contains_nan", "type": ["null", "boolean"], "default": None, "field-id": 518},
    {"name": "lower_bound", "type": ["null", "bytes"], "default": None, "field-id": 510},
    {"name": "upper_bound", "type": ["null", "bytes"], "default": None, "field-id": 511},
]}

# --- manifest list: manifest_file ------------------------------------------------------------------------
MANIFEST_FILE_FIELDS: list[tuple[int, str, Any, str]] = [
    (500, "manifest_path", "string", "RRR"),
    (501, "manifest_length", "long", "RRR"),
    (502, "partition_spec_id", "int", "RRR"),
    (517, "content", "int", "-RR"),
    (515, "sequence_number", "long", "-RR"),
    (516, "min_sequence_number", "long", "-RR"),
    (503, "added_snapshot_id", "long", "RRR"),
    (504, "added_files_count", "int", "ORR"),
    (505, "existing_files_count", "int", "ORR"),
    (506, "deleted_files_count", "int", "ORR"),
    (512, "added_rows_count", "long", "ORR"),
    (513, "existing_rows_count", "long", "ORR"),
    (514, "deleted_rows_count", "long", "ORR"),
    (507, "partitions", _list(508, FIELD_SUMMARY), "OOO"),
    (519, "key_metadata", "bytes", "OOO"),
    (520, "first_row_id", "long", "--O"),
]

# --- manifest: manifest_entry and data_file ----------------------------------------------------------------
PARTITION_PLACEHOLDER = "__partition__"
DATA_FILE_FIELDS: list[tuple[int, str, Any, str]] = [
    (134, "content", "int", "-RR"),
    (100, "file_path", "string", "RRR"),
    (101, "file_format", "string", "RRR"),
    (102, "partition", PARTITION_PLACEHOLDER, "RRR"),
    (103, "record_count", "long", "RRR"),
    (104, "file_size_in_bytes", "long", "RRR"),
    (105, "block_size_in_bytes", "long", "R--"),
    (108, "column_sizes", _map(117, 118, "long"), "OOO"),
    (109, "value_counts", _map(119, 120, "long"), "OOO"),
    (110, "null_value_counts", _map(121, 122, "long"), "OOO"),
    (137, "nan_value_counts", _map(138, 139, "long"), "OOO"),
    (125, "lower_bounds", _map(126, 127, "bytes"), "OOO"),
    (128, "upper_bounds", _map(129, 130, "bytes"), "OOO"),
    (131, "key_metadata", "bytes", "OOO"),
    (132, "split_offsets", _list(133, "long"), "OOO"),
    (135, "equality_ids", _list(136, "int"), "-OO"),
    (140, "sort_order_id", "int", "OOO"),
    (142, "first_row_id", "long", "--O"),
    (143, "referenced_data_file", "string", "-OO"),
    (144, "content_offset", "long", "--O"),
    (145, "content_size_in_bytes", "long", "--O"),
]
MANIFEST_ENTRY_FIELDS: list[tuple[int, str, Any, str]] = [
    (0, "status", "int", "RRR"),
    (1, "snapshot_id", "long", "ROO"),
    (3, "sequence_number", "long", "-OO"),
    (4, "file_sequence_number", "long", "-OO"),
    (2, "data_file", "__data_file__", "RRR"),
]
# fields that only older writers wrote; read them when present, never write them
LEGACY_DATA_FILE_FIELDS = {106: "file_ordinal", 107: "sort_columns", 111: "distinct_counts"}
# Java's v1 manifest lists named the file counts this way
LEGACY_MANIFEST_FILE_NAMES = {"added_data_files_count": 504, "existing_data_files_count": 505,
                              "deleted_data_files_count": 506}


def _record(name: str, rows, version: int, substitutions: dict[str, Any]) -> dict:
    fields = []
    for fid, fname, ftype, presence in rows:
        mode = presence[version - 1]
        if mode == "-":
            continue
        t = copy.deepcopy(substitutions.get(ftype, ftype) if isinstance(ftype, str) else ftype)
        f: dict[str, Any] = {"name": fname, "field-id": fid}
        if mode == "O":
            f["type"] = ["null", t]
            f["default"] = None
        else:
            f["type"] = t
        fields.append(f)
    return {"type": "record", "name": name, "fields": fields}


def manifest_list_schema(version: int) -> dict:
    """The Avro schema of a manifest list of format ``version``."""
    return _record("manifest_file", MANIFEST_FILE_FIELDS, version, {})


def manifest_entry_schema(version: int, partition_record: dict) -> dict:
    """The Avro schema of a manifest of format ``version`` with the given partition record type."""
    data_file = _record("r2", DATA_FILE_FIELDS, version, {PARTITION_PLACEHOLDER: partition_record})
    return _record("manifest_entry", MANIFEST_ENTRY_FIELDS, version, {"__data_file__": data_file})


# --- reading: writers' schemas, by field id -------------------------------------------------------------

def field_ids(record_schema: dict) -> dict[int, tuple[str, Any]]:
    """Field id -> (name, avro type) of an Avro record schema (names differ between writers and versions)."""
    out = {}
    for f in record_schema.get("fields", []):
        fid = f.get("field-id")
        if fid is not None:
            out[int(fid)] = (f["name"], f["type"])
    return out


def non_null(t: Any) -> Any:
    """The non-null branch of an optional Avro union (``["null", T]`` -> ``T``); other types unchanged."""
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        return rest[0] if len(rest) == 1 else t
    return t


def manifest_list_names(raw: dict) -> tuple[dict[int, str], dict[int, str]] | None:
    """The writer's field names by field id of a manifest list schema's ``manifest_file`` and ``field_summary``
    records (pre-1.0 writers' legacy names included), or None when it is not a manifest list's."""
    ids = field_ids(raw)
    for legacy, fid in LEGACY_MANIFEST_FILE_NAMES.items():
        for f in raw.get("fields", []):
            if f["name"] == legacy and fid not in ids:
                ids[fid] = (legacy, f["type"])
    if 500 not in ids:
        return None
    summary_names = {}
    if 507 in ids:
        items = non_null(ids[507][1])
        items = items.get("items") if isinstance(items, dict) else None
        if isinstance(items, dict):
            summary_names = {fid: n for fid, (n, _) in field_ids(items).items()}
    return {fid: n for fid, (n, _) in ids.items()}, summary_names
