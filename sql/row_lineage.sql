-- Row-id coverage on v3 tables: the data files (and rows) that carry a first_row_id, so every row has a
-- _row_id. Files added before an upgrade to v3 get theirs at the next commit; anything below 100% means
-- rows without lineage.
-- Reads the view {table}__files.
SELECT
  COUNT(*) AS data_files,
  SUM(CASE WHEN first_row_id IS NOT NULL THEN 1 ELSE 0 END) AS files_with_row_ids,
  SUM(record_count) AS records,
  COALESCE(SUM(CASE WHEN first_row_id IS NOT NULL THEN record_count ELSE 0 END), 0) AS records_with_row_ids,
  ROUND(COALESCE(SUM(CASE WHEN first_row_id IS NOT NULL THEN record_count ELSE 0 END), 0)
        / GREATEST(SUM(record_count), 1), 4) AS row_id_coverage,
  MIN(first_row_id) AS min_first_row_id,
  MAX(first_row_id + record_count) AS max_row_id_exclusive
FROM {table}__files
WHERE content = 0
