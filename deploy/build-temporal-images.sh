#!/usr/bin/env bash
# Builds, without an image registry, the images docker-compose.yml runs by
# default, under the same names, so the compose file works unchanged on a
# machine that can reach only Debian's mirror and a Go module proxy:
#
#   temporalio/server:V        temporal-server (go.temporal.io/server/cmd/server)
#   temporalio/admin-tools:V   temporal-sql-tool (go.temporal.io/server/cmd/tools/sql)
#                              and the server module's SQL schemas at
#                              /etc/temporal/schema, where the release image
#                              has them; the compose file's schema job needs
#                              nothing else (the namespace job runs autocoder)
#   temporalio/ui:U            ui-server (github.com/temporalio/ui-server/v2,
#                              the web assets are embedded in the module)
#   postgres:15                Debian's postgresql-15 with an entrypoint that
#                              honours the variables the compose file sets
#
# V and U are the versions local mode embeds (go.mod), so the cluster runs
# the server and UI that local mode runs, built against this repository's
# module graph. The Go programs are compiled on this machine with its Go (as
# deploy/build-base-images.sh copies it into the builder image) and its
# module proxy (GOPROXY), then copied onto deploy/build-base-images.sh's
# Debian base, which this script builds first when it is missing.
#
#   deploy/build-temporal-images.sh [--force] [IMAGE...]
#
# IMAGE is server, admin-tools, ui or postgres (default: all). Existing
# images are kept; --force rebuilds them. Every image built here carries the
# label autocoder.build=temporal-images:
#   docker image ls --filter label=autocoder.build=temporal-images
# Env: POSTGRES_MAJOR (default 15, Debian bookworm's),
#      AUTOCODER_IMAGE_WORKDIR (default /var/cache/autocoder-images; the Go
#      builds keep their module directories there), and those of
#      deploy/build-base-images.sh.
set -euo pipefail

cd "$(dirname "$0")/.."

WORKDIR=${AUTOCODER_IMAGE_WORKDIR:-/var/cache/autocoder-images}
DEBIAN_IMAGE=${AUTOCODER_BASE_DEBIAN_IMAGE:-autocoder/base-debian:bookworm}
PG_MAJOR=${POSTGRES_MAJOR:-15}
LABEL=autocoder.build=temporal-images

log() { printf '[build-temporal-images] %s\n' "$*" >&2; }
die() { printf 'build-temporal-images: %s\n' "$*" >&2; exit 1; }

force=0
wanted_images=()
for a in "$@"; do
	case $a in
	--force) force=1 ;;
	server | admin-tools | ui | postgres) wanted_images+=("$a") ;;
	-h | --help) sed -n '2,29p' "$0"; exit 0 ;;
	*) die "unknown argument: $a (want --force, server, admin-tools, ui or postgres)" ;;
	esac
done
[ ${#wanted_images[@]} -gt 0 ] || wanted_images=(server admin-tools ui postgres)

# module_version prints the version of a module in the repository's go.mod.
module_version() {
	go list -m -f '{{.Version}}' "$1" 2>/dev/null || die "go.mod has no $1; run from a checkout with Go installed"
}

command -v go >/dev/null || die "the host has no Go; install Go 1.26+ (it compiles the Temporal programs)"
docker version >/dev/null 2>&1 || die "the docker daemon does not answer"
SERVER_VERSION=$(module_version go.temporal.io/server)
UI_VERSION=$(module_version github.com/temporalio/ui-server/v2)

contexts=()
cleanup() { [ ${#contexts[@]} -eq 0 ] || rm -rf "${contexts[@]}"; }
trap cleanup EXIT
build_context() {
	local d
	d=$(mktemp -d "${TMPDIR:-/tmp}/autocoder-temporal-image.XXXXXX")
	contexts+=("$d")
	echo "$d"
}

# go_build NAME OUTDIR [BUILD FLAGS...] -- PACKAGE@VERSION...
# compiles main packages, static, in a module directory of their own that
# starts from this repository's go.mod: the server's dependencies are then
# exactly the ones local mode is built with, and the host's build cache
# already holds most of them.
go_build() {
	local name=$1 out=$2
	shift 2
	local flags=()
	while [ "$1" != -- ]; do flags+=("$1"); shift; done
	shift
	local dir=$WORKDIR/go-build/$name
	rm -rf "$dir"
	mkdir -p "$dir"
	cp go.mod go.sum "$dir/"
	log "compiling ${*%@*} (minutes on a cold build cache)"
	(
		cd "$dir"
		go mod edit -module "autocoder.build/$name"
		go get "$@" >&2
		CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' "${flags[@]}" -o "$out/" "${@%@*}"
	)
}

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

# wanted says whether an image must be (re)built.
wanted() {
	if [ $force = 0 ] && image_exists "$1"; then
		log "$1 exists; skipping (use --force to rebuild)"
		return 1
	fi
}

size() { docker image inspect -f '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1/1048576}'; }

# build IMAGE CONTEXT: the Dockerfile in CONTEXT, labelled.
build() {
	log "building $1"
	docker build -q --label "$LABEL" -t "$1" "$2" >/dev/null
	log "built $1 ($(size "$1"))"
}

# The user the official images run as.
TEMPORAL_USER='groupadd -g 1000 temporal && useradd -u 1000 -g temporal -M -s /usr/sbin/nologin temporal'
APT_INSTALL='apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends'
APT_CLEAN='apt-get clean && rm -rf /var/lib/apt/lists/* /var/log/apt/* /var/log/dpkg.log'

build_server() {
	local image=temporalio/server:${SERVER_VERSION#v} ctx
	wanted "$image" || return 0
	ctx=$(build_context)
	go_build temporal "$ctx" -tags disable_grpc_modules -- "go.temporal.io/server/cmd/server@$SERVER_VERSION"
	mv "$ctx/server" "$ctx/temporal-server"
	# The release image's entrypoint, from the module; it uses pipefail, which
	# Debian's sh lacks, so bash runs it.
	cp "$(go env GOMODCACHE)/go.temporal.io/server@$SERVER_VERSION/docker/scripts/sh/entrypoint.sh" "$ctx/entrypoint.sh"
	# netcat for the compose health check, as in the release image.
	cat >"$ctx/Dockerfile" <<EOF
FROM $DEBIAN_IMAGE
RUN $APT_INSTALL netcat-openbsd tzdata >/dev/null && $APT_CLEAN \\
	&& $TEMPORAL_USER && mkdir -p /etc/temporal/config/dynamicconfig && chown -R temporal:temporal /etc/temporal
COPY temporal-server /usr/local/bin/
COPY entrypoint.sh /etc/temporal/entrypoint.sh
WORKDIR /etc/temporal
USER temporal
CMD ["bash", "/etc/temporal/entrypoint.sh"]
EOF
	build "$image" "$ctx"
}

build_admin_tools() {
	local image=temporalio/admin-tools:${SERVER_VERSION#v} ctx
	wanted "$image" || return 0
	ctx=$(build_context)
	go_build temporal "$ctx" -tags disable_grpc_modules -- "go.temporal.io/server/cmd/tools/sql@$SERVER_VERSION"
	mv "$ctx/sql" "$ctx/temporal-sql-tool"
	# The release image's schema directory, for `--schema-dir` users; the
	# tool also embeds the same files (`--schema-name`).
	cp -r "$(go env GOMODCACHE)/go.temporal.io/server@$SERVER_VERSION/schema" "$ctx/schema"
	chmod -R u+w "$ctx/schema"
	cat >"$ctx/Dockerfile" <<EOF
FROM $DEBIAN_IMAGE
RUN $TEMPORAL_USER
COPY temporal-sql-tool /usr/local/bin/
COPY schema /etc/temporal/schema
USER temporal
# Idle, for docker exec; the compose jobs set their own entrypoint.
CMD ["sh", "-c", "trap exit INT HUP TERM; sleep infinity & wait"]
EOF
	build "$image" "$ctx"
}

build_ui() {
	local image=temporalio/ui:${UI_VERSION#v} ctx mod
	wanted "$image" || return 0
	ctx=$(build_context)
	go_build temporal "$ctx" -- "github.com/temporalio/ui-server/v2/cmd/server@$UI_VERSION"
	mv "$ctx/server" "$ctx/ui-server"
	# The release image's configuration (rendered from the environment by
	# ui-server itself) and start script.
	mod=$(go env GOMODCACHE)/github.com/temporalio/ui-server/v2@$UI_VERSION
	cp "$mod/config/docker.yaml" "$mod/docker/start-ui-server.sh" "$ctx/"
	cat >"$ctx/Dockerfile" <<EOF
FROM $DEBIAN_IMAGE
RUN $TEMPORAL_USER && mkdir -p /home/ui-server/config && chown -R temporal:temporal /home/ui-server
COPY --chown=temporal:temporal ui-server start-ui-server.sh /home/ui-server/
COPY --chown=temporal:temporal docker.yaml /home/ui-server/config/
WORKDIR /home/ui-server
USER temporal
EXPOSE 8080
ENTRYPOINT ["bash", "./start-ui-server.sh"]
EOF
	build "$image" "$ctx"
}

build_postgres() {
	local image=postgres:$PG_MAJOR ctx
	wanted "$image" || return 0
	ctx=$(build_context)
	cp deploy/postgres/docker-entrypoint.sh "$ctx/"
	# No cluster from the package: the entrypoint creates one in PGDATA.
	cat >"$ctx/Dockerfile" <<EOF
FROM $DEBIAN_IMAGE
RUN mkdir -p /etc/postgresql-common && echo 'create_main_cluster = false' >/etc/postgresql-common/createcluster.conf \\
	&& $APT_INSTALL postgresql-$PG_MAJOR >/dev/null && $APT_CLEAN \\
	&& mkdir -p /var/lib/postgresql/data /var/run/postgresql /docker-entrypoint-initdb.d \\
	&& chown postgres:postgres /var/lib/postgresql/data /var/run/postgresql && chmod 700 /var/lib/postgresql/data
COPY docker-entrypoint.sh /usr/local/bin/
ENV PATH=/usr/lib/postgresql/$PG_MAJOR/bin:\$PATH PGDATA=/var/lib/postgresql/data
VOLUME /var/lib/postgresql/data
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["bash", "/usr/local/bin/docker-entrypoint.sh"]
CMD ["postgres"]
EOF
	build "$image" "$ctx"
}

main() {
	mkdir -p "$WORKDIR"
	image_exists "$DEBIAN_IMAGE" || bash deploy/build-base-images.sh
	local i
	for i in "${wanted_images[@]}"; do
		case $i in
		server) build_server ;;
		admin-tools) build_admin_tools ;;
		ui) build_ui ;;
		postgres) build_postgres ;;
		esac
	done
	# Images replaced by --force are left untagged.
	docker image prune -f --filter "label=$LABEL" >/dev/null
}

main
