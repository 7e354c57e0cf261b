#!/usr/bin/env bash
# Builds the base images of the Dockerfile without an image registry, and
# with --app the autocoder image on top of them.
#
#   deploy/build-base-images.sh [--force] [--app]
#
#   base-debian  Debian bookworm minbase from the host's apt mirror (debootstrap),
#                plus ca-certificates.
#   base-golang  base-debian plus the host's Go root at /usr/local/go.
#
# Existing images are kept (the script is idempotent); --force rebuilds them.
# Env: AUTOCODER_BASE_DEBIAN_IMAGE (default autocoder/base-debian:bookworm),
#      AUTOCODER_BASE_GOLANG_IMAGE (default autocoder/base-golang:<host Go major.minor>),
#      AUTOCODER_APP_IMAGE (default autocoder/autocoder:dev),
#      GOPROXY (of the host's compile of the app's programs),
#      AUTOCODER_EXTRA_CA_DIR (default /usr/local/share/ca-certificates: the site's
#      CA certificates, *.crt, trusted in the images, e.g. for a TLS-intercepting
#      proxy; set it empty to trust only Debian's bundle),
#      AUTOCODER_IMAGE_WORKDIR (rootfs cache shared with scripts/build-images.sh,
#      default /var/cache/autocoder-images), DEBIAN_MIRROR (default: the host's).
set -euo pipefail

cd "$(dirname "$0")/.."

SUITE=bookworm
WORKDIR=${AUTOCODER_IMAGE_WORKDIR:-/var/cache/autocoder-images}
DEBIAN_IMAGE=${AUTOCODER_BASE_DEBIAN_IMAGE:-autocoder/base-debian:$SUITE}
APP_IMAGE=${AUTOCODER_APP_IMAGE:-autocoder/autocoder:dev}
PATH_IN_IMAGE=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Marks the images built here, so the script removes its own leftovers only.
LABEL=autocoder.build=base-images

force=0
app=0
for a in "$@"; do
	case $a in
	--force) force=1 ;;
	--app) app=1 ;;
	-h | --help) sed -n '2,20p' "$0"; exit 0 ;;
	*) echo "unknown argument: $a" >&2; exit 2 ;;
	esac
done

log() { printf '[build-base-images] %s\n' "$*" >&2; }
die() { printf 'build-base-images: %s\n' "$*" >&2; exit 1; }

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

# wanted says whether an image must be (re)built.
wanted() {
	if [ $force = 0 ] && image_exists "$1"; then
		log "$1 exists; skipping (use --force to rebuild)"
		return 1
	fi
}

goroot() {
	local r
	r=$(go env GOROOT 2>/dev/null) || die "the host has no Go; install Go 1.26+ (its root is copied into the builder image)"
	[ -x "$r/bin/go" ] || die "no go binary under GOROOT $r"
	echo "$r"
}

golang_image() {
	if [ -n "${AUTOCODER_BASE_GOLANG_IMAGE:-}" ]; then
		echo "$AUTOCODER_BASE_GOLANG_IMAGE"
		return
	fi
	local v
	v=$("$(goroot)/bin/go" env GOVERSION) # go1.26.8
	v=${v#go}
	echo "autocoder/base-golang:${v%.*}"
}

# shellcheck source=scripts/lib/debian.sh
. "$(dirname "$0")/../scripts/lib/debian.sh"

# rootfs_tarball returns the cached minbase rootfs, bootstrapping it once.
# The file name matches scripts/build-images.sh, so both share one bootstrap.
rootfs_tarball() {
	local tarball=$WORKDIR/base-$SUITE.tar
	if [ -s "$tarball" ]; then
		log "base rootfs cached at $tarball"
		echo "$tarball"
		return
	fi
	[ "$(id -u)" = 0 ] || die "debootstrap needs root; rerun with sudo"
	command -v debootstrap >/dev/null || {
		log "installing debootstrap via apt"
		apt-get update -qq >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
	}
	mkdir -p "$WORKDIR"
	local dir m
	dir=$(mktemp -d "$WORKDIR/base.XXXXXX")
	m=$(mirror)
	log "debootstrap --variant=minbase $SUITE from $m (a few minutes)"
	debootstrap --variant=minbase "$SUITE" "$dir" "$m" >"$WORKDIR/debootstrap.log" 2>&1 || {
		tail -20 "$WORKDIR/debootstrap.log" >&2
		rm -rf "$dir"
		die "debootstrap failed; see $WORKDIR/debootstrap.log"
	}
	tar -C "$dir" --numeric-owner -cf "$tarball.tmp" .
	mv "$tarball.tmp" "$tarball"
	rm -rf "$dir"
	echo "$tarball"
}

# build_context makes an empty build directory removed when the script exits.
contexts=()
cleanup() { [ ${#contexts[@]} -eq 0 ] || rm -rf "${contexts[@]}"; }
trap cleanup EXIT
build_context() {
	local d
	d=$(mktemp -d "${TMPDIR:-/tmp}/autocoder-image.XXXXXX")
	contexts+=("$d")
	echo "$d"
}

size() { docker image inspect -f '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1/1048576}'; }

build_debian() {
	local tarball ctx
	tarball=$(rootfs_tarball)
	ctx=$(build_context)
	# A hard link avoids copying 200 MB when the cache and /tmp share a file system.
	ln "$tarball" "$ctx/rootfs.tar" 2>/dev/null || cp "$tarball" "$ctx/rootfs.tar"
	mkdir "$ctx/ca"
	local ca_dir=${AUTOCODER_EXTRA_CA_DIR-/usr/local/share/ca-certificates} crt
	if [ -n "$ca_dir" ]; then
		for crt in "$ca_dir"/*.crt; do
			[ -f "$crt" ] || continue
			log "trusting site CA $crt"
			cp "$crt" "$ctx/ca/"
		done
	fi
	# The apt sources of the image are the mirror debootstrap used. The second
	# stage flattens the result into one layer, so what the first removes is
	# really gone from the image.
	cat >"$ctx/Dockerfile" <<EOF
FROM scratch AS rootfs
LABEL $LABEL
ADD rootfs.tar /
# Installing ca-certificates adds these to the bundle.
COPY ca/ /usr/local/share/ca-certificates/
ENV PATH=$PATH_IN_IMAGE
RUN apt-get update -qq \\
	&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ca-certificates >/dev/null \\
	&& apt-get clean \\
	&& rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt/* /var/log/dpkg.log \\
		/usr/share/doc/* /usr/share/man/* /usr/share/info/* /usr/share/locale/* /tmp/*

FROM scratch
LABEL $LABEL
COPY --from=rootfs / /
ENV PATH=$PATH_IN_IMAGE LANG=C.UTF-8
CMD ["/bin/bash"]
EOF
	log "building $DEBIAN_IMAGE"
	docker build -q -t "$DEBIAN_IMAGE" "$ctx" >/dev/null
	log "built $DEBIAN_IMAGE ($(size "$DEBIAN_IMAGE"))"
}

build_golang() {
	local image=$1 root ctx
	root=$(goroot)
	ctx=$(build_context)
	log "copying host Go root $root ($("$root/bin/go" env GOVERSION))"
	cp -a "$root" "$ctx/go"
	# Build caches, the Go test suite and API lists are not needed to build.
	rm -rf "$ctx/go/pkg/obj" "$ctx/go/test" "$ctx/go/api"
	# GOTOOLCHAIN=local: the copied Go is the one to use, never a download.
	cat >"$ctx/Dockerfile" <<EOF
FROM $DEBIAN_IMAGE
COPY go /usr/local/go
ENV GOTOOLCHAIN=local GOPATH=/go PATH=/go/bin:$PATH_IN_IMAGE
RUN mkdir -p /go/bin /go/src && chmod 1777 /go /go/bin /go/src && go version
WORKDIR /go
EOF
	log "building $image"
	docker build -q -t "$image" "$ctx" >/dev/null
	log "built $image ($(size "$image"))"
}

# build_app builds the Dockerfile with the two programs compiled on the host
# (static, as the Dockerfile compiles them): the host's build cache makes a
# rebuild take seconds where a compile in the builder starts cold each time.
build_app() {
	local golang=$1 prebuilt=.prebuilt
	rm -rf "$prebuilt"
	contexts+=("$PWD/$prebuilt")
	log "compiling autocoder on the host (minutes on a cold build cache)"
	CGO_ENABLED=0 GOFLAGS= go build -trimpath -ldflags='-s -w' -o "$prebuilt/autocoder" .
	CGO_ENABLED=0 GOFLAGS= go build -trimpath -ldflags='-s -w' -o "$prebuilt/egress-forward" ./sandbox/cmd/egress-forward
	log "building $APP_IMAGE (GO_IMAGE=$golang RUNTIME_IMAGE=$DEBIAN_IMAGE)"
	docker build -q --build-arg "GO_IMAGE=$golang" --build-arg "RUNTIME_IMAGE=$DEBIAN_IMAGE" \
		--build-arg "PREBUILT=$prebuilt" -t "$APP_IMAGE" . >/dev/null
	log "built $APP_IMAGE ($(size "$APP_IMAGE"))"
}

main() {
	docker version >/dev/null 2>&1 || die "the docker daemon does not answer"
	local golang
	golang=$(golang_image)
	local rebuilt=0
	if wanted "$DEBIAN_IMAGE"; then
		build_debian
		rebuilt=1
	fi
	# A rebuilt base-debian must not leave base-golang on the old one.
	if [ $rebuilt = 1 ] || wanted "$golang"; then
		build_golang "$golang"
	fi
	# The flattening stage and images replaced by --force are left untagged.
	docker image prune -f --filter "label=$LABEL" >/dev/null
	if [ $app = 1 ]; then
		build_app "$golang"
	else
		log "build the image with:"
		log "  docker build --build-arg GO_IMAGE=$golang --build-arg RUNTIME_IMAGE=$DEBIAN_IMAGE -t $APP_IMAGE ."
	fi
}

main
