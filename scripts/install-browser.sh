#!/usr/bin/env bash
# Installs Debian's headless-capable Chromium for the Web UI browser test
# (internal/e2e TestWebUIShowsTask) when it is missing. Idempotent.
set -euo pipefail

log() { printf 'install-browser.sh: %s\n' "$*" >&2; }

if command -v chromium >/dev/null; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
log "installing chromium"
# Try the cached package lists first; refresh them only when that fails.
if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
fi
command -v chromium >/dev/null || { log "chromium still missing after install"; exit 1; }
