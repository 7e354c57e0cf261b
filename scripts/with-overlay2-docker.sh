#!/usr/bin/env bash
# Runs a command against a private docker daemon on the overlay2 storage
# driver, with the sandbox images copied into it, and removes the daemon
# afterwards:
#
#   scripts/with-overlay2-docker.sh go test ./sandbox -run '^$' -bench Overhead
#   AUTOCODER_BENCH=1 scripts/with-overlay2-docker.sh go test ./internal/chaos -run TestConcurrencyBenchmark -v
#
# It is for hosts whose daemon uses another storage driver (a FUSE overlay
# makes every file lookup in a container a round trip to user space, and
# every container start and removal costs more CPU), to measure what a
# standard daemon does on the same machine. The daemon has its own data
# dir, socket and bridge; the command sees it as DOCKER_HOST. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*" >&2; }
[ $# -gt 0 ] || { log "usage: $0 command [args...]"; exit 2; }
[ "$(id -u)" -eq 0 ] || { log "a private docker daemon needs root"; exit 2; }

dir=$(mktemp -d /var/tmp/autocoder-overlay2-docker.XXXXXX)
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
DOCKER_HOST=unix://$sock docker info >/dev/null 2>&1 || { log "private daemon did not start:"; tail "$dir/dockerd.log" >&2; exit 1; }
# Every language's image, as its generated Dockerfile names it or
# AUTOCODER_IMAGE_<LANGUAGE> renames it, where this host has it.
images=()
for img in $(head -qn1 sandbox/images/*/Dockerfile | sed -n 's/^# Sandbox image \([^ ,]*\),.*/\1/p') \
	$(env | sed -n 's/^AUTOCODER_IMAGE_[A-Z]*=//p'); do
	case $img in autocoder/sandbox-base:* | /*) continue ;; esac
	docker image inspect "$img" >/dev/null 2>&1 && images+=("$img")
done
[ ${#images[@]} -gt 0 ] || { log "no sandbox image on this host: run scripts/build-images.sh first"; exit 1; }
log "copying ${images[*]} into a private overlay2 daemon"
docker save "${images[@]}" | DOCKER_HOST=unix://$sock docker load >/dev/null
log "private daemon: $(DOCKER_HOST=unix://$sock docker info --format '{{.ServerVersion}}, storage driver {{.Driver}}')"
DOCKER_HOST=unix://$sock "$@"
