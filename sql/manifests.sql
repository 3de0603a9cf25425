-- Manifests per snapshot and their sizes: planning reads every manifest of a snapshot, so their count and
-- size drive planning time (manifest merging and rewrite_manifests keep them in check).
-- Reads the views {table}__all_manifests and {table}__snapshots.
SELECT
  s.committed_at,
  m.reference_snapshot_id AS snapshot_id,
  s.operation,
  COUNT(*) AS manifests,
  SUM(CASE WHEN m.content = 0 THEN 1 ELSE 0 END) AS data_manifests,
  SUM(CASE WHEN m.content = 1 THEN 1 ELSE 0 END) AS delete_manifests,
  SUM(m.length) AS total_manifest_bytes,
  CAST(AVG(m.length) AS BIGINT) AS avg_manifest_bytes
FROM {table}__all_manifests m
JOIN {table}__snapshots s ON s.snapshot_id = m.reference_snapshot_id
GROUP BY s.committed_at, m.reference_snapshot_id, s.operation
ORDER BY s.committed_at
