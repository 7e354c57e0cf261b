DROP TABLE transcript_entries;
