-- Lessons are what finished tasks taught: verified fixes, unfixed failures
-- and first-try successes. seq gives the full-text index a stable rowid.
CREATE TABLE lessons (
	seq INTEGER PRIMARY KEY,
	id TEXT NOT NULL UNIQUE,
	kind TEXT NOT NULL CHECK (kind IN ('fix', 'failure', 'success')),
	language TEXT NOT NULL,
	sig_kind TEXT NOT NULL,
	sig_shape TEXT NOT NULL,
	sig_text TEXT NOT NULL,
	task TEXT NOT NULL,
	failed_excerpt TEXT NOT NULL,
	fix TEXT NOT NULL,
	reflection TEXT NOT NULL,
	recalled INTEGER NOT NULL DEFAULT 0 CHECK (recalled >= 0),
	succeeded INTEGER NOT NULL DEFAULT 0 CHECK (succeeded >= 0),
	misled INTEGER NOT NULL DEFAULT 0 CHECK (misled >= 0),
	-- UTC with microseconds, fixed width so text order is time order.
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
);

CREATE INDEX lessons_kind_updated ON lessons (kind, updated_at DESC, id);

-- Trigram tokens let recall match parts of words, like pg_trgm does.
CREATE VIRTUAL TABLE lessons_fts USING fts5(task, sig, tokenize = 'trigram');

CREATE TRIGGER lessons_fts_insert AFTER INSERT ON lessons BEGIN
	INSERT INTO lessons_fts (rowid, task, sig) VALUES (new.seq, new.task, new.sig_shape || ' ' || new.sig_text);
END;

CREATE TRIGGER lessons_fts_delete AFTER DELETE ON lessons BEGIN
	DELETE FROM lessons_fts WHERE rowid = old.seq;
END;

-- Counters and timestamps change often; only the searched text reindexes.
CREATE TRIGGER lessons_fts_update AFTER UPDATE OF seq, task, sig_shape, sig_text ON lessons BEGIN
	DELETE FROM lessons_fts WHERE rowid = old.seq;
	INSERT INTO lessons_fts (rowid, task, sig) VALUES (new.seq, new.task, new.sig_shape || ' ' || new.sig_text);
END;
