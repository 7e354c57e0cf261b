#!/usr/bin/env bash
# The one test command: sets up everything the tests need on a fresh Debian
# machine (apt packages, Postgres, sandbox images), then runs vet and tests.
#   scripts/test.sh              # all tests
#   scripts/test.sh ./sandbox/   # some packages; extra args go to `go test`
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*" >&2; }

if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
need_pkgs=()
command -v bwrap >/dev/null || need_pkgs+=(bubblewrap)
command -v debootstrap >/dev/null || need_pkgs+=(debootstrap)
[ -x /usr/lib/postgresql/15/bin/postgres ] || need_pkgs+=(postgresql-15)
/usr/bin/python3 -c 'import pytest' 2>/dev/null || need_pkgs+=(python3-pytest)
ctags --version 2>/dev/null | grep -q 'Universal Ctags' || need_pkgs+=(universal-ctags) # repository maps
command -v node >/dev/null || need_pkgs+=(nodejs) # bwrap's seccomp filter is tested with node
command -v javac >/dev/null || need_pkgs+=(default-jdk-headless) # and the JVM, running a program from source
# The languages' host toolchains, for the bwrap backend (each language's
# HostCheck says what it needs).
[ -x /usr/bin/cargo ] || need_pkgs+=(cargo rustc)
command -v cmake >/dev/null || need_pkgs+=(cmake)
[ -d /usr/lib/x86_64-linux-gnu/cmake/GTest ] || [ -d /usr/lib/cmake/GTest ] || need_pkgs+=(libgtest-dev libgmock-dev googletest)
[ -d /usr/lib/cmake/Catch2 ] || [ -d /usr/share/Catch2 ] || dpkg -s catch2 >/dev/null 2>&1 || need_pkgs+=(catch2)
[ -r /usr/share/java/junit-platform-console-standalone.jar ] || need_pkgs+=(junit5)
[ -r /usr/share/java/assertj-core.jar ] || need_pkgs+=(libassertj-core-java)
command -v tsc >/dev/null || need_pkgs+=(node-typescript node-undici)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

# TypeScript on the host needs Node's type declarations where tsc looks
# (the host's Node may not be Debian's, which ships them).
if ! [ -d /usr/local/lib/node_modules/@types/node ] && ! [ -d /usr/lib/node_modules/@types/node ]; then
  if ! [ -d /usr/share/nodejs/@types/node ]; then
    log "unpacking @types/node from Debian's nodejs package"
    v=$(apt-cache madison nodejs | awk '$0 ~ /debian/ {print $3; exit}')
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download -qq "nodejs=$v" >/dev/null && dpkg-deb -x nodejs_*.deb x)
    $SUDO mkdir -p /usr/share/nodejs/@types
    $SUDO cp -a "$tmp/x/usr/share/nodejs/@types/node" /usr/share/nodejs/@types/node
    rm -rf "$tmp"
  fi
  $SUDO mkdir -p /usr/local/lib/node_modules/@types
  $SUDO ln -sfn /usr/share/nodejs/@types/node /usr/local/lib/node_modules/@types/node
fi

# The sandbox images build (when missing) in the background while the code
# compiles and vets: the tests wait for them before they start.
images_pid=
images_log=$(mktemp)
if docker info >/dev/null 2>&1; then
  log "docker reachable; building sandbox images when missing (in the background; log: $images_log)"
  scripts/build-images.sh >"$images_log" 2>&1 &
  images_pid=$!
else
  log "docker is not reachable: docker-backed tests will fail in CI and skip elsewhere"
fi
wait_images() {
  [ -n "$images_pid" ] || return 0
  log "waiting for the sandbox images"
  if ! wait "$images_pid"; then
    cat "$images_log" >&2
    echo "test.sh: building the sandbox images failed" >&2
    exit 1
  fi
  cat "$images_log" >&2
  images_pid=
}

log "headless chromium for the Web UI check"
scripts/install-browser.sh

log "starting postgres"
pg_url=$(scripts/postgres.sh | tail -n 1)
export "${pg_url?}"

log "go vet"
go vet ./...

log "workflowcheck (determinism of workflow code)"
go run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 ./workflows

wait_images
if [ $# -gt 0 ]; then
  log "go test $*"
  exec go test -count=1 -timeout 25m "$@"
fi
# -count=1: a cached pass must never stand in for a service that is gone.
# Unit and contract tests run under the race detector; the packages that
# embed a whole Temporal server run without it (it multiplies their build
# and run time several times over on a small machine).
heavy='/internal/(e2e|chaos|devserver)$'
log "go test -race (unit, contract, sandbox)"
go test -race -count=1 -timeout 20m $(go list ./... | grep -Ev "$heavy")
log "go test (end to end)"
go test -count=1 -timeout 25m $(go list ./... | grep -E "$heavy")
