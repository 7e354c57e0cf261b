#!/usr/bin/env bash
# Creates the autocoder role and database, with pg_trgm, beside Temporal's.
# The postgres image runs this once, when it initialises an empty data volume,
# as the superuser POSTGRES_USER; later edits need a fresh volume or a manual run.
set -euo pipefail

: "${AUTOCODER_DB_USER:=autocoder}"
: "${AUTOCODER_DB_NAME:=autocoder}"
if [ -z "${AUTOCODER_DB_PASSWORD:-}" ]; then
	echo "10-autocoder.sh: AUTOCODER_DB_PASSWORD is empty" >&2
	exit 1
fi

# Values are psql variables (:"ident", :'literal'), so quoting is psql's job.
psql -v ON_ERROR_STOP=1 -q \
	--username "$POSTGRES_USER" --dbname "${POSTGRES_DB:-$POSTGRES_USER}" \
	-v role="$AUTOCODER_DB_USER" -v db="$AUTOCODER_DB_NAME" -v pw="$AUTOCODER_DB_PASSWORD" <<'SQL'
SELECT NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role') AS need_role \gset
\if :need_role
CREATE ROLE :"role" LOGIN PASSWORD :'pw';
\endif
SELECT NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = :'db') AS need_db \gset
\if :need_db
CREATE DATABASE :"db" OWNER :"role";
\endif
\connect :"db"
-- pg_trgm is trusted since PostgreSQL 13, but creating it here keeps the
-- store's migration working on servers where it is not.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
SQL
echo "10-autocoder.sh: database $AUTOCODER_DB_NAME ready for role $AUTOCODER_DB_USER"
