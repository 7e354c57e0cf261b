BEGIN;

-- Lessons are what finished tasks taught: verified fixes, unfixed failures
-- and first-try successes.
CREATE TABLE lessons (
	id text PRIMARY KEY,
	kind text NOT NULL CHECK (kind IN ('fix', 'failure', 'success')),
	language text NOT NULL,
	sig_kind text NOT NULL,
	sig_shape text NOT NULL,
	sig_text text NOT NULL,
	task text NOT NULL,
	failed_excerpt text NOT NULL,
	fix text NOT NULL,
	reflection text NOT NULL,
	recalled integer NOT NULL DEFAULT 0 CHECK (recalled >= 0),
	succeeded integer NOT NULL DEFAULT 0 CHECK (succeeded >= 0),
	misled integer NOT NULL DEFAULT 0 CHECK (misled >= 0),
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL,
	-- Words of the task (weight A) and of the signature (weight B), so one
	-- index serves both kinds of recall. 'simple' keeps identifiers whole.
	tsv tsvector GENERATED ALWAYS AS (
		setweight(to_tsvector('simple', task), 'A') ||
		setweight(to_tsvector('simple', sig_shape || ' ' || sig_text), 'B')
	) STORED
);

CREATE INDEX lessons_kind_updated ON lessons (kind, updated_at DESC, id);
CREATE INDEX lessons_task_trgm ON lessons USING gin (task gin_trgm_ops);
CREATE INDEX lessons_sig_trgm ON lessons USING gin ((sig_shape || ' ' || sig_text) gin_trgm_ops);
CREATE INDEX lessons_tsv ON lessons USING gin (tsv);

COMMIT;
