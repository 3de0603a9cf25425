"""Fast append (new data files in a new manifest, every existing manifest kept) and the pieces every snapshot
producer shares: retry settings, summary totals and v3 first-row-id assignment. Appends have no conflict to
validate (spec "Commit Conflict Resolution and Retry"): a lost race is simply retried."""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from sparkberg.avro.manifest import MANIFEST_DATA, DataFile, ManifestFile
from sparkberg.errors import SparkbergError
from sparkberg.spec.snapshots import Snapshot

SUMMARY_TOTALS = ("total-records", "total-files-size", "total-data-files", "total-delete-files",
                  "total-position-deletes", "total-equality-deletes")


def _retry_settings(props) -> tuple[int, int, int, float]:
    def get(key: str, default: int) -> int:
        try:
            return int(props.get(key, default))
        except ValueError:
            raise SparkbergError(f"table property {key} must be an integer") from None
    return (get("commit.retry.num-retries", 4), get("commit.retry.min-wait-ms", 100),
            get("commit.retry.max-wait-ms", 60_000), get("commit.retry.total-timeout-ms", 1_800_000) / 1000)


def assign_first_row_ids(manifests: list[ManifestFile], next_row_id: int) -> tuple[list[ManifestFile], int]:
    """v3: give every data manifest without a ``first_row_id`` one, in list order (spec "First Row ID
    Assignment"); returns the manifests and the new next-row-id."""
    out = []
    for m in manifests:
        if m.content == MANIFEST_DATA and m.first_row_id is None:
            out.append(replace(m, first_row_id=next_row_id))
            next_row_id += (m.added_rows_count or 0) + (m.existing_rows_count or 0)
        else:
            out.append(m)
    return out, next_row_id


def fast_append(table, files: Sequence[DataFile]) -> Snapshot:
    """Commit ``files`` (written for the table's default spec) as one append snapshot on ``main``."""
    from sparkberg.commit.producer import Changes, commit_changes
    return commit_changes(table, Changes("append", added_data=list(files)))
