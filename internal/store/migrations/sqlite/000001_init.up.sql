-- Blobs are content-addressed and shared by every snapshot that holds them.
CREATE TABLE blobs (
	hash TEXT PRIMARY KEY,
	data BLOB NOT NULL,
	size INTEGER NOT NULL
);

CREATE TABLE snapshots (
	id TEXT PRIMARY KEY,
	created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- Entry rows are small, so a clustered primary key saves a second b-tree.
CREATE TABLE snapshot_entries (
	snapshot_id TEXT NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
	path TEXT NOT NULL,
	hash TEXT NOT NULL REFERENCES blobs (hash),
	mode INTEGER NOT NULL,
	size INTEGER NOT NULL,
	PRIMARY KEY (snapshot_id, path)
) WITHOUT ROWID;

CREATE TABLE memo (
	key TEXT PRIMARY KEY,
	value BLOB NOT NULL,
	created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
