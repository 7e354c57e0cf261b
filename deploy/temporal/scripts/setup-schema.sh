#!/bin/sh
# Creates Temporal's two databases when they are missing and migrates both to
# the schema version of the temporal-sql-tool running it, which is the
# server's (same image version). Every step is idempotent, so this runs on
# every `docker-compose up`. The schemas are the ones embedded in the tool.
#
# Env: SQL_PLUGIN, SQL_HOST, SQL_PORT, SQL_USER, SQL_PASSWORD (read by
# temporal-sql-tool itself), DBNAME, VISIBILITY_DBNAME.
set -eu

setup() { # setup DATABASE EMBEDDED_SCHEMA
	echo "temporal-schema: $1: create, set up and migrate to the latest $2"
	temporal-sql-tool --database "$1" create-database
	temporal-sql-tool --database "$1" setup-schema --version 0.0
	temporal-sql-tool --database "$1" update-schema --schema-name "$2"
}

setup "${DBNAME:-temporal}" postgresql/v12/temporal
setup "${VISIBILITY_DBNAME:-temporal_visibility}" postgresql/v12/visibility
echo "temporal-schema: done"
