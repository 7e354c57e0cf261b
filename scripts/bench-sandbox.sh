#!/usr/bin/env bash
# The sandbox latency benchmark: a trivial pytest and go test (and `true`,
# each path's floor) bare, in bwrap and in docker, cold and warm, with
# p50/p95 and the ratio to bare measured in the same run.
#
#   scripts/bench-sandbox.sh            # against the docker daemon in use
#   scripts/bench-sandbox.sh --overlay2 # also against a private daemon on
#                                       # the overlay2 storage driver
#
# --overlay2 is for hosts whose daemon uses another storage driver (a FUSE
# overlay makes every file lookup in a container a round trip to user
# space): it runs the benchmark again against a throwaway dockerd on
# overlay2 (scripts/with-overlay2-docker.sh). Needs root. Extra args go to
# `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*" >&2; }
bench() { go test ./sandbox -run '^$' -bench Overhead -benchtime "${BENCHTIME:-15x}" "$@" | grep -E '^(mode|noop/|syscalls/|python/|go/)'; }

overlay2=false
if [ "${1:-}" = "--overlay2" ]; then
	overlay2=true
	shift
fi

log "docker daemon in use: $(docker info --format '{{.ServerVersion}}, storage driver {{.Driver}}')"
bench "$@"
$overlay2 || exit 0

export -f bench
exec scripts/with-overlay2-docker.sh bash -c 'bench "$@"' bench "$@"
