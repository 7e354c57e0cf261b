#!/usr/bin/env bash
# Entrypoint of the postgres image deploy/build-temporal-images.sh builds from
# Debian's package. It honours what docker-compose.yml relies on of the
# official image: POSTGRES_USER (default postgres), POSTGRES_PASSWORD,
# POSTGRES_DB (default POSTGRES_USER), PGDATA, and the scripts in
# /docker-entrypoint-initdb.d (*.sh run, *.sql fed to psql), which run once,
# on an empty data directory, while the server listens on its socket only.
set -euo pipefail

if [ "${1:-postgres}" != postgres ]; then
	exec "$@"
fi

: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
socket=/var/run/postgresql
export PGDATA POSTGRES_USER POSTGRES_DB

# As root: hand the data directory to postgres and run as it.
if [ "$(id -u)" = 0 ]; then
	mkdir -p "$PGDATA" "$socket"
	chown postgres:postgres "$PGDATA" "$socket"
	chmod 700 "$PGDATA"
	exec setpriv --reuid=postgres --regid=postgres --init-groups bash "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "${POSTGRES_PASSWORD:-}" ]; then
		echo "postgres: POSTGRES_PASSWORD is empty; set it to initialise the database" >&2
		exit 1
	fi
	echo "postgres: initialising $PGDATA for $POSTGRES_USER"
	initdb -D "$PGDATA" --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") \
		-E UTF8 --locale=C.UTF-8 --auth-local=trust --auth-host=scram-sha-256 >/dev/null
	# Other containers connect over the compose network, with a password.
	echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"

	pg_ctl -D "$PGDATA" -w -o "-c listen_addresses='' -k $socket" start >/dev/null
	export PGHOST=$socket
	if [ "$POSTGRES_DB" != postgres ]; then
		psql -v ON_ERROR_STOP=1 -q --username "$POSTGRES_USER" --dbname postgres -v db="$POSTGRES_DB" \
			<<<'CREATE DATABASE :"db";'
	fi
	for f in /docker-entrypoint-initdb.d/*; do
		case $f in
		*.sh) echo "postgres: running $f"; bash "$f" ;;
		*.sql) echo "postgres: running $f"; psql -v ON_ERROR_STOP=1 -q --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" -f "$f" ;;
		*) [ ! -e "$f" ] || echo "postgres: ignoring $f" ;;
		esac
	done
	unset PGHOST
	pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
	echo "postgres: initialised"
fi

exec postgres -D "$PGDATA" -c listen_addresses='*' -k "$socket"
