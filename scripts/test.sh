#!/usr/bin/env bash
# The one test command: sets up everything the tests need on a fresh Debian
# machine (apt packages, Postgres, sandbox images), then runs vet and tests.
#   scripts/test.sh              # all tests
#   scripts/test.sh ./sandbox/   # some packages; extra args go to `go test`
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*" >&2; }

need_pkgs=()
command -v bwrap >/dev/null || need_pkgs+=(bubblewrap)
command -v debootstrap >/dev/null || need_pkgs+=(debootstrap)
[ -x /usr/lib/postgresql/15/bin/postgres ] || need_pkgs+=(postgresql-15)
/usr/bin/python3 -c 'import pytest' 2>/dev/null || need_pkgs+=(python3-pytest)
ctags --version 2>/dev/null | grep -q 'Universal Ctags' || need_pkgs+=(universal-ctags) # repository maps
command -v node >/dev/null || need_pkgs+=(nodejs) # bwrap's seccomp filter is tested with node
command -v javac >/dev/null || need_pkgs+=(default-jdk-headless) # and the JVM, running a program from source
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

if docker info >/dev/null 2>&1; then
  log "docker reachable; building sandbox images when missing"
  scripts/build-images.sh
else
  log "docker is not reachable: docker-backed tests will fail in CI and skip elsewhere"
fi

log "headless chromium for the Web UI check"
scripts/install-browser.sh

log "starting postgres"
pg_url=$(scripts/postgres.sh | tail -n 1)
export "${pg_url?}"

log "go vet"
go vet ./...

log "workflowcheck (determinism of workflow code)"
go run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 ./workflows

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
