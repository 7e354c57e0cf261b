BEGIN;

-- failed_checks counts the checks that failed in tasks after the lesson was
-- recalled into them: a lesson followed by failures ranks lower.
ALTER TABLE lessons ADD COLUMN failed_checks integer NOT NULL DEFAULT 0 CHECK (failed_checks >= 0);

COMMIT;
