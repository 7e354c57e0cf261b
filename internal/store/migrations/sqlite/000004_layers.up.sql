-- A snapshot stored as a change of another, its base, holds only the
-- entries it writes and the paths it deletes; depth counts the layers down
-- to a snapshot stored whole, which has depth 0 and no base. (base_id has
-- no REFERENCES clause: SQLite could not drop the column going down. The
-- store writes a base only after reading it, and snapshots are never
-- deleted.)
ALTER TABLE snapshots ADD COLUMN base_id TEXT;
ALTER TABLE snapshots ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;

CREATE TABLE snapshot_deletions (
	snapshot_id TEXT NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
	path TEXT NOT NULL,
	PRIMARY KEY (snapshot_id, path)
) WITHOUT ROWID;
