#!/usr/bin/env bash
# Builds the sandbox images without an image registry: a Debian bookworm
# minbase from the host's apt mirror (debootstrap), imported once as the
# base every image shares, then each language's image on it from its
# recipe (internal/lang/<name>). Images that exist are kept.
#
#   scripts/build-images.sh [--force] [name...]
#
# A name is a folder of sandbox/images (python, go, ...) or a language; none
# means all. --force rebuilds the images (not the base).
# Env: AUTOCODER_IMAGE_<LANGUAGE> (an image's name, e.g. AUTOCODER_IMAGE_PYTHON),
#      AUTOCODER_IMAGE_BASE (default autocoder/sandbox-base:bookworm),
#      AUTOCODER_IMAGE_WORKDIR (cache of the base rootfs, default /var/cache/autocoder-images),
#      DEBIAN_MIRROR (default: the host's apt mirror).
set -euo pipefail

cd "$(dirname "$0")/.."

BASE=${AUTOCODER_IMAGE_BASE:-autocoder/sandbox-base:bookworm}
WORKDIR=${AUTOCODER_IMAGE_WORKDIR:-/var/cache/autocoder-images}

# Everything this script says goes to stderr: nothing it runs has its
# output captured.
log() { printf '[build-images] %s\n' "$*" >&2; }
die() { printf 'build-images: %s\n' "$*" >&2; exit 1; }

args=()
for a in "$@"; do
	case $a in
	--force) args+=(--force) ;;
	-h | --help) sed -n '2,14p' "$0"; exit 0 ;;
	-*) die "unknown argument: $a" ;;
	*) args+=("$a") ;;
	esac
done

# shellcheck source=scripts/lib/debian.sh
. scripts/lib/debian.sh

# ensure_debootstrap installs debootstrap when the base has to be made and
# it is not on PATH, and its output goes to stderr. Installed, it is found
# in the sbin directories too, which a non-login root shell may not have on
# its PATH; the builder looks there as well.
ensure_debootstrap() {
	docker image inspect "$BASE" >/dev/null 2>&1 && return
	[ -s "$WORKDIR/base-bookworm.tar" ] && return
	command -v debootstrap >/dev/null && return
	[ "$(id -u)" = 0 ] || die "the base image needs debootstrap, run as root; rerun with sudo"
	log "installing debootstrap via apt"
	local path=$PATH:/usr/sbin:/sbin # dpkg runs programs from there
	PATH=$path apt-get update -qq >&2
	PATH=$path DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2
	PATH=$path command -v debootstrap >/dev/null || die "debootstrap is not found after installing it"
}

docker version >/dev/null 2>&1 || die "the docker daemon does not answer"
# sudo's PATH often lacks Go's: the builder is a Go program.
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || die "the builder needs Go 1.26+ on PATH"
ensure_debootstrap
DEBIAN_MIRROR=$(mirror)
export DEBIAN_MIRROR AUTOCODER_IMAGE_WORKDIR=$WORKDIR AUTOCODER_IMAGE_BASE=$BASE
log "building the sandbox images (base $BASE, mirror $DEBIAN_MIRROR)"
exec go run ./sandbox/cmd/build-images "${args[@]}"
