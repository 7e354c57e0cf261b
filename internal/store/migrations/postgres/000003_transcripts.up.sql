BEGIN;

-- A transcript is an append-only list of entries; each entry's content is a
-- blob, so an entry repeated across transcripts is stored once.
CREATE TABLE transcript_entries (
	transcript_id text NOT NULL,
	position integer NOT NULL CHECK (position >= 0),
	hash text NOT NULL REFERENCES blobs (hash),
	created_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (transcript_id, position)
);

COMMIT;
