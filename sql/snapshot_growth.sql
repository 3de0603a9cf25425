-- Snapshot growth: records, data files, delete files and bytes after each snapshot, and the change from the
-- one before (from the totals in the snapshot summaries).
-- Reads the view {table}__snapshots.
SELECT
  committed_at,
  snapshot_id,
  operation,
  CAST(summary['total-records'] AS BIGINT) AS total_records,
  CAST(summary['total-data-files'] AS BIGINT) AS total_data_files,
  CAST(summary['total-delete-files'] AS BIGINT) AS total_delete_files,
  CAST(summary['total-files-size'] AS BIGINT) AS total_files_size,
  CAST(summary['total-records'] AS BIGINT)
    - LAG(CAST(summary['total-records'] AS BIGINT), 1, 0) OVER (ORDER BY committed_at, snapshot_id) AS records_change,
  CAST(summary['total-files-size'] AS BIGINT)
    - LAG(CAST(summary['total-files-size'] AS BIGINT), 1, 0) OVER (ORDER BY committed_at, snapshot_id) AS bytes_change
FROM {table}__snapshots
ORDER BY committed_at, snapshot_id
