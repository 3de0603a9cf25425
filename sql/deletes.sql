-- Delete files and deleted rows per partition (merge-on-read debt): delete files per data file and the share
-- of rows that readers must drop. High ratios make reads slower; compaction folds the deletes in.
-- Reads the view {table}__partitions.
SELECT
  partition,
  spec_id,
  file_count AS data_files,
  position_delete_file_count + equality_delete_file_count AS delete_files,
  ROUND((position_delete_file_count + equality_delete_file_count) / GREATEST(file_count, 1), 4) AS delete_file_ratio,
  record_count AS records,
  position_delete_record_count AS position_deleted_rows,
  equality_delete_record_count AS equality_delete_rows,
  ROUND(position_delete_record_count / GREATEST(record_count, 1), 4) AS deleted_row_ratio,
  last_updated_at
FROM {table}__partitions
ORDER BY deleted_row_ratio DESC, delete_files DESC
