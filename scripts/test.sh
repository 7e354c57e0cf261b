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

log "starting postgres"
pg_url=$(scripts/postgres.sh | tail -n 1)
export "${pg_url?}"

log "go vet"
go vet ./...

log "go test"
if [ $# -eq 0 ]; then set -- ./...; fi
go test -race -timeout 25m "$@"
