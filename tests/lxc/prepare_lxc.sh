#!/usr/bin/env bash
# Prepares this machine for tests/lxc: LXC (lxc-execute, its static init and common.conf) and a
# static busybox for the guest's root file system. Idempotent: installs only what is missing.
set -euo pipefail

log() { printf '[prepare_lxc] %s\n' "$*"; }

if [[ "$(id -u)" != 0 ]]; then
  echo "prepare_lxc.sh must run as root (it installs packages; the test makes device nodes and starts LXC)" >&2
  exit 1
fi

missing=()
for pkg in lxc busybox-static; do
  if [[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)" != "ii " ]]; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/apt_locked.sh"
  # Install from the current lists first; refresh them only when that fails (a fresh image).
  if ! "$apt" install -y -q --no-install-recommends "${missing[@]}"; then
    "$apt" update -q
    "$apt" install -y -q --no-install-recommends "${missing[@]}"
  fi
else
  log "lxc and busybox-static already installed"
fi

for path in /usr/bin/lxc-execute /bin/busybox /usr/share/lxc/config/common.conf; do
  [[ -e "$path" ]] || { echo "prepare_lxc.sh: $path is missing after installation" >&2; exit 1; }
done
if [[ "$(LC_ALL=C ldd /bin/busybox 2>&1 || true)" != *"not a dynamic executable"* ]]; then
  echo "prepare_lxc.sh: /bin/busybox is not static (busybox-static should provide it)" >&2
  exit 1
fi
log "ready: $(lxc-execute --version 2>/dev/null | head -1 | sed 's/^/lxc /'), busybox static"
