-- A transcript is an append-only list of entries; each entry's content is a
-- blob, so an entry repeated across transcripts is stored once.
CREATE TABLE transcript_entries (
	transcript_id TEXT NOT NULL,
	position INTEGER NOT NULL CHECK (position >= 0),
	hash TEXT NOT NULL REFERENCES blobs (hash),
	created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
	PRIMARY KEY (transcript_id, position)
) WITHOUT ROWID;
