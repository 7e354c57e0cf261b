BEGIN;

-- A snapshot stored as a change of another, its base, holds only the
-- entries it writes and the paths it deletes; depth counts the layers down
-- to a snapshot stored whole, which has depth 0 and no base.
ALTER TABLE snapshots ADD COLUMN base_id text REFERENCES snapshots (id);
ALTER TABLE snapshots ADD COLUMN depth integer NOT NULL DEFAULT 0;

CREATE TABLE snapshot_deletions (
	snapshot_id text NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
	path text COLLATE "C" NOT NULL,
	PRIMARY KEY (snapshot_id, path)
);

COMMIT;
