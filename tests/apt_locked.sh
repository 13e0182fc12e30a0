#!/usr/bin/env bash
# apt-get, one call at a time among the set-up scripts that scripts/test.sh runs side by side
# (podman, LXC, Chromium): two at once would fail on dpkg's lock instead of waiting for it.
#   tests/apt_locked.sh update; tests/apt_locked.sh install -y PACKAGE...
set -euo pipefail
exec flock --wait 1200 /run/lock/fleetopt-apt.lock apt-get "$@"
