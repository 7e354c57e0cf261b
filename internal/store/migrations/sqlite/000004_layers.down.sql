-- Every layered snapshot is stored whole again before the layers go.
CREATE TEMP TABLE flat AS
WITH RECURSIVE chain (top, id, base_id, depth) AS (
	SELECT id, id, base_id, depth FROM snapshots WHERE base_id IS NOT NULL
	UNION ALL
	SELECT c.top, s.id, s.base_id, s.depth FROM snapshots s JOIN chain c ON s.id = c.base_id
),
layered (top, path, hash, mode, size, depth) AS (
	SELECT c.top, e.path, e.hash, e.mode, e.size, c.depth FROM snapshot_entries e JOIN chain c ON e.snapshot_id = c.id
	UNION ALL
	SELECT c.top, d.path, NULL, NULL, NULL, c.depth FROM snapshot_deletions d JOIN chain c ON d.snapshot_id = c.id
),
ranked AS (
	SELECT top, path, hash, mode, size, row_number() OVER (PARTITION BY top, path ORDER BY depth DESC) AS n FROM layered
)
SELECT top, path, hash, mode, size FROM ranked WHERE n = 1 AND hash IS NOT NULL;

DELETE FROM snapshot_entries WHERE snapshot_id IN (SELECT id FROM snapshots WHERE base_id IS NOT NULL);
INSERT INTO snapshot_entries (snapshot_id, path, hash, mode, size) SELECT top, path, hash, mode, size FROM flat;
DROP TABLE flat;
DROP TABLE snapshot_deletions;
ALTER TABLE snapshots DROP COLUMN depth;
ALTER TABLE snapshots DROP COLUMN base_id;
