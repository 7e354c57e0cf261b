BEGIN;

-- Trigram indexes serve fuzzy search over text tables added later.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Blobs are content-addressed and shared by every snapshot that holds them.
CREATE TABLE blobs (
	hash text PRIMARY KEY,
	data bytea NOT NULL,
	size bigint NOT NULL
);

CREATE TABLE snapshots (
	id text PRIMARY KEY,
	created_at timestamptz NOT NULL DEFAULT now()
);

-- Paths sort bytewise, the canonical order, whatever the database locale.
CREATE TABLE snapshot_entries (
	snapshot_id text NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
	path text COLLATE "C" NOT NULL,
	hash text NOT NULL REFERENCES blobs (hash),
	mode integer NOT NULL,
	size bigint NOT NULL,
	PRIMARY KEY (snapshot_id, path)
);

CREATE TABLE memo (
	key text PRIMARY KEY,
	value bytea NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);

COMMIT;
