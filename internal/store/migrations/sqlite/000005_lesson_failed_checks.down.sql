ALTER TABLE lessons DROP COLUMN failed_checks;
