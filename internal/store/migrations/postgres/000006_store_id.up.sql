BEGIN;

-- The store's identity, made once: a client that starts tasks on a cluster
-- checks that the workers read the store it wrote the task's project to.
-- (md5 of random text rather than gen_random_uuid, which needs pgcrypto
-- before Postgres 13.)
CREATE TABLE store_id (
	id text PRIMARY KEY
);
INSERT INTO store_id (id) VALUES (md5(random()::text || clock_timestamp()::text || pg_backend_pid()::text));

COMMIT;
