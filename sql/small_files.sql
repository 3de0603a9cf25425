-- Small-file ratio per partition: data files under {small_file_bytes} bytes among all data files.
-- Many small files slow planning and reads; compact partitions with a high ratio (t.rewrite_data_files()).
-- Reads the view {table}__files (cat.register_views / t.register_views).
SELECT
  partition,
  spec_id,
  COUNT(*) AS data_files,
  SUM(CASE WHEN file_size_in_bytes < {small_file_bytes} THEN 1 ELSE 0 END) AS small_files,
  ROUND(SUM(CASE WHEN file_size_in_bytes < {small_file_bytes} THEN 1 ELSE 0 END) / COUNT(*), 4) AS small_file_ratio,
  CAST(AVG(file_size_in_bytes) AS BIGINT) AS avg_file_size_in_bytes,
  SUM(record_count) AS records
FROM {table}__files
WHERE content = 0
GROUP BY partition, spec_id
ORDER BY small_file_ratio DESC, data_files DESC
