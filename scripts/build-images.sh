#!/usr/bin/env bash
# Builds the sandbox images without an image registry: a Debian bookworm
# minbase rootfs from the host's apt mirror, plus the language toolchain,
# imported with `docker import`.
#
#   scripts/build-images.sh [--force] [python] [go]
#
# Env: AUTOCODER_IMAGE_PYTHON, AUTOCODER_IMAGE_GO (image names),
#      AUTOCODER_IMAGE_WORKDIR (cache of the base rootfs, default /var/cache/autocoder-images),
#      DEBIAN_MIRROR (default: first URI of the host's debian.sources).
set -euo pipefail

PY_IMAGE=${AUTOCODER_IMAGE_PYTHON:-autocoder/sandbox-python:1}
GO_IMAGE=${AUTOCODER_IMAGE_GO:-autocoder/sandbox-go:1}
WORKDIR=${AUTOCODER_IMAGE_WORKDIR:-/var/cache/autocoder-images}
SUITE=bookworm
SANDBOX_PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Must match the environment the sandbox gives a run, or the pre-built Go
# cache entries would not be hits.
GO_ENV=(GOTOOLCHAIN=local GOPROXY=off GO111MODULE=on CGO_ENABLED=0 GOFLAGS= GOPATH=/tmp/gopath GOMODCACHE=/tmp/gopath/pkg/mod HOME=/tmp)

force=0
targets=()
for a in "$@"; do
	case $a in
	--force) force=1 ;;
	python | go) targets+=("$a") ;;
	-h | --help) sed -n '2,10p' "$0"; exit 0 ;;
	*) echo "unknown argument: $a" >&2; exit 2 ;;
	esac
done
[ ${#targets[@]} -gt 0 ] || targets=(python go)

log() { printf '[build-images] %s\n' "$*"; }

need_root() {
	if [ "$(id -u)" != 0 ]; then
		echo "build-images: debootstrap and chroot need root; rerun with sudo" >&2
		exit 1
	fi
}

# shellcheck source=scripts/lib/debian.sh
. "$(dirname "$0")/lib/debian.sh"

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

ensure_debootstrap() {
	if ! command -v debootstrap >/dev/null; then
		log "installing debootstrap via apt"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
	fi
}

# base_rootfs builds (once) and caches a minbase rootfs as a tarball.
base_rootfs() {
	local tarball=$WORKDIR/base-$SUITE.tar
	if [ -s "$tarball" ]; then
		log "base rootfs cached at $tarball" >&2
		echo "$tarball"
		return
	fi
	ensure_debootstrap
	local m dir
	m=$(mirror)
	dir=$(mktemp -d "$WORKDIR/base.XXXXXX")
	log "debootstrap --variant=minbase $SUITE from $m (a few minutes)" >&2
	debootstrap --variant=minbase "$SUITE" "$dir" "$m" >"$WORKDIR/debootstrap.log" 2>&1 || {
		echo "debootstrap failed; see $WORKDIR/debootstrap.log" >&2
		tail -20 "$WORKDIR/debootstrap.log" >&2
		exit 1
	}
	tar -C "$dir" -cf "$tarball.tmp" .
	mv "$tarball.tmp" "$tarball"
	rm -rf "$dir"
	echo "$tarball"
}

# new_rootfs unpacks the cached base into a fresh directory.
new_rootfs() {
	local dir
	dir=$(mktemp -d "$WORKDIR/rootfs.XXXXXX")
	tar -C "$dir" -xf "$1"
	echo "$dir"
}

# in_chroot runs a command in the rootfs with /proc mounted and undone after.
in_chroot() {
	local root=$1
	shift
	mount -t proc proc "$root/proc"
	local rc=0
	chroot "$root" /usr/bin/env -i PATH=$SANDBOX_PATH DEBIAN_FRONTEND=noninteractive "$@" || rc=$?
	umount "$root/proc"
	return $rc
}

slim() {
	local root=$1
	rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
		"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/tmp/* "$root"/root/.cache
	# The sandbox user runs with HOME=/tmp and a read-only rootfs.
	mkdir -p "$root/work" "$root/tmp"
	chmod 1777 "$root/work" "$root/tmp"
}

import_rootfs() {
	local root=$1 image=$2 profile=$3
	log "importing $image"
	tar -C "$root" --numeric-owner -c . | docker import \
		-c "ENV PATH=$SANDBOX_PATH" \
		-c 'ENV HOME=/tmp' \
		-c 'USER 65534:65534' \
		-c 'WORKDIR /work' \
		-c "LABEL autocoder.sandbox.image=$profile" \
		-c 'CMD ["/bin/sh"]' \
		- "$image" >/dev/null
	log "built $image ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1048576}'))"
}

build_python() {
	local root
	root=$(new_rootfs "$1")
	log "python: apt-get install python3 python3-pytest"
	in_chroot "$root" apt-get update -qq
	in_chroot "$root" apt-get install -y -qq --no-install-recommends python3 python3-pytest >/dev/null
	in_chroot "$root" python3 -c 'import pytest' 
	slim "$root"
	import_rootfs "$root" "$PY_IMAGE" python
	rm -rf "$root"
}

build_go() {
	local root goroot
	root=$(new_rootfs "$1")
	goroot=$(go env GOROOT 2>/dev/null || true)
	if [ -n "$goroot" ] && [ -x "$goroot/bin/go" ]; then
		log "go: copying host Go root $goroot ($("$goroot/bin/go" env GOVERSION)) to /usr/local/go"
		mkdir -p "$root/usr/local"
		cp -a "$goroot" "$root/usr/local/go"
		rm -rf "$root/usr/local/go/pkg/obj" "$root/usr/local/go/test" "$root/usr/local/go/api"
	else
		log "go: no host Go; installing Debian's golang"
		in_chroot "$root" apt-get update -qq
		in_chroot "$root" apt-get install -y -qq --no-install-recommends golang-go ca-certificates >/dev/null
		ln -s /usr/lib/go "$root/usr/local/go"
	fi
	# Pre-compile the packages a small test usually needs, so `go test` in a
	# fresh container links instead of building the standard library. The
	# cache is read-only in the image; a run copies it to its writable /tmp.
	log "go: pre-compiling the standard library test dependencies"
	mkdir -p "$root/opt/warm/w"
	cat >"$root/opt/warm/w/go.mod" <<'MOD'
module warm

go 1.21
MOD
	cat >"$root/opt/warm/w/w_test.go" <<'SRC'
package warm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var _ = []any{bytes.NewReader, json.Marshal, errors.New, fmt.Sprint, math.Abs, os.Getenv,
	regexp.MustCompile, sort.Ints, strconv.Itoa, strings.ToUpper, sync.Once{}, time.Now}

func TestWarm(t *testing.T) {}
SRC
	in_chroot "$root" /bin/sh -c "cd /opt/warm/w && env ${GO_ENV[*]} GOCACHE=/opt/gocache go test -count=1 ./... && env ${GO_ENV[*]} GOCACHE=/opt/gocache go vet ./..."
	rm -rf "$root/opt/warm" "$root/tmp/gopath"
	chmod -R a+rX "$root/opt/gocache"
	slim "$root"
	import_rootfs "$root" "$GO_IMAGE" go
	rm -rf "$root"
}

main() {
	if ! docker version >/dev/null 2>&1; then
		echo "build-images: the docker daemon does not answer" >&2
		exit 1
	fi
	local todo=()
	for t in "${targets[@]}"; do
		local img=$PY_IMAGE
		[ "$t" = go ] && img=$GO_IMAGE
		if [ $force = 0 ] && image_exists "$img"; then
			log "$img exists; skipping (use --force to rebuild)"
		else
			todo+=("$t")
		fi
	done
	[ ${#todo[@]} -gt 0 ] || { log "nothing to do"; exit 0; }
	need_root
	mkdir -p "$WORKDIR"
	local base
	base=$(base_rootfs)
	for t in "${todo[@]}"; do
		"build_$t" "$base"
	done
	log "done"
}

main
