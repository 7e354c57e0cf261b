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
# space): it starts a throwaway dockerd on overlay2 with its own data dir,
# socket and bridge, copies the sandbox images into it, runs the benchmark
# there and removes it all. Needs root. Extra args go to `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*" >&2; }
bench() { go test ./sandbox -run '^$' -bench Overhead -benchtime "${BENCHTIME:-15x}" "$@" | grep -E '^(mode|noop/|python/|go/)'; }

overlay2=false
if [ "${1:-}" = "--overlay2" ]; then
	overlay2=true
	shift
fi

log "docker daemon in use: $(docker info --format '{{.ServerVersion}}, storage driver {{.Driver}}')"
bench "$@"
$overlay2 || exit 0

[ "$(id -u)" -eq 0 ] || { log "--overlay2 needs root"; exit 2; }
dir=$(mktemp -d /var/tmp/autocoder-bench-docker.XXXXXX)
sock=$dir/docker.sock
bridge=acbench$$
cleanup() {
	[ -f "$dir/docker.pid" ] && kill "$(cat "$dir/docker.pid")" 2>/dev/null && sleep 3
	ip link del "$bridge" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
# A bridge of its own: a daemon started with --bridge none would delete the
# main daemon's docker0.
ip link add "$bridge" type bridge
ip addr add 10.213.$(($$ % 250)).1/24 dev "$bridge"
ip link set "$bridge" up
echo '{}' >"$dir/daemon.json" # not the host's daemon.json: its settings would clash
dockerd --config-file "$dir/daemon.json" --data-root "$dir/data" --exec-root "$dir/exec" \
	--pidfile "$dir/docker.pid" --host "unix://$sock" --storage-driver overlay2 \
	--bridge "$bridge" --iptables=false --ip-masq=false >"$dir/dockerd.log" 2>&1 &
for _ in $(seq 60); do
	DOCKER_HOST=unix://$sock docker info >/dev/null 2>&1 && break
	sleep 0.5
done
images=(${AUTOCODER_IMAGE_PYTHON:-autocoder/sandbox-python:1} ${AUTOCODER_IMAGE_GO:-autocoder/sandbox-go:1})
log "copying ${images[*]} into a private overlay2 daemon"
docker save "${images[@]}" | DOCKER_HOST=unix://$sock docker load >/dev/null
log "private daemon: $(DOCKER_HOST=unix://$sock docker info --format '{{.ServerVersion}}, storage driver {{.Driver}}')"
DOCKER_HOST=unix://$sock bench "$@"
