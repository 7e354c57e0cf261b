-- The store's identity, made once: a client that starts tasks on a cluster
-- checks that the workers read the store it wrote the task's project to.
CREATE TABLE store_id (
	id TEXT PRIMARY KEY
);
INSERT INTO store_id (id) VALUES (lower(hex(randomblob(16))));
