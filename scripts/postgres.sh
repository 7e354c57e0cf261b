#!/usr/bin/env bash
# Starts a private PostgreSQL 15 cluster for the store tests and prints the
# URL to use on its last line:
#
#   export "$(scripts/postgres.sh | tail -n1)"
#
# Idempotent: a cluster that is already running is left alone. Settings:
#   AUTOCODER_PG_DATA  data directory (default /var/tmp/autocoder-pg)
#   AUTOCODER_PG_PORT  TCP port on 127.0.0.1 (default 55432)
set -euo pipefail

PGBIN=${AUTOCODER_PG_BIN:-/usr/lib/postgresql/15/bin}
DATA=${AUTOCODER_PG_DATA:-/var/tmp/autocoder-pg}
PORT=${AUTOCODER_PG_PORT:-55432}
ROLE=autocoder
PASSWORD=autocoder # a throwaway cluster reachable only from 127.0.0.1
DB=autocoder_test

log() { echo "postgres.sh: $*" >&2; }

if [ ! -x "$PGBIN/initdb" ]; then
	log "installing postgresql-15"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql-15 >&2; then
		apt-get update >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql-15 >&2
	fi
fi

# initdb refuses to run as root, so the cluster belongs to the postgres user
# when the script runs as root and to the caller otherwise.
as_owner() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

mkdir -p "$DATA"
if [ "$(id -u)" = 0 ]; then
	chown postgres:postgres "$DATA"
fi
chmod 0700 "$DATA"

if [ ! -s "$DATA/PG_VERSION" ]; then
	log "initialising cluster in $DATA"
	# The socket lives in the 0700 data directory, so trusting local
	# connections admits only the cluster owner.
	as_owner "$PGBIN/initdb" -D "$DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
		--auth-local=trust --auth-host=scram-sha-256 >&2
	cat >>"$DATA/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$DATA'
unix_socket_permissions = 0700
max_connections = 200
CONF
fi

if as_owner "$PGBIN/pg_ctl" status -D "$DATA" >/dev/null 2>&1; then
	# The port of a running cluster is the fourth line of postmaster.pid.
	PORT=$(sed -n 4p "$DATA/postmaster.pid")
	log "already running on port $PORT"
else
	log "starting on 127.0.0.1:$PORT"
	as_owner "$PGBIN/pg_ctl" start -D "$DATA" -w -t 60 -l "$DATA/server.log" -o "-p $PORT" >&2
fi

psql_su() { PGOPTIONS="-c client_min_messages=warning" as_owner "$PGBIN/psql" -h "$DATA" -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qAt "$@"; }

if [ -z "$(psql_su -d postgres -c "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")" ]; then
	log "creating role $ROLE"
	psql_su -d postgres -c "CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD'"
fi
if [ -z "$(psql_su -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" ]; then
	log "creating database $DB"
	psql_su -d postgres -c "CREATE DATABASE $DB OWNER $ROLE"
fi
psql_su -d "$DB" -c "CREATE EXTENSION IF NOT EXISTS pg_trgm"

echo "AUTOCODER_TEST_DATABASE_URL=postgres://$ROLE:$PASSWORD@127.0.0.1:$PORT/$DB?sslmode=disable"
