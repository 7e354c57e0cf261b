BEGIN;
DROP TABLE memo;
DROP TABLE snapshot_entries;
DROP TABLE snapshots;
DROP TABLE blobs;
COMMIT;
