DROP TRIGGER lessons_fts_update;
DROP TRIGGER lessons_fts_delete;
DROP TRIGGER lessons_fts_insert;
DROP TABLE lessons_fts;
DROP TABLE lessons;
