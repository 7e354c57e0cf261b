-- failed_checks counts the checks that failed in tasks after the lesson was
-- recalled into them: a lesson followed by failures ranks lower. (No CHECK
-- clause: SQLite could not drop the column going down; the store refuses
-- negative counts.)
ALTER TABLE lessons ADD COLUMN failed_checks INTEGER NOT NULL DEFAULT 0;
