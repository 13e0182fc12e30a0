#!/usr/bin/env bash
# Install Debian's Chromium for the browser tests (tests/browser) unless it is there already.
# Idempotent; scripts/test.sh runs it before pytest.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
apt="$(cd "$(dirname "$0")/.." && pwd)/apt_locked.sh"
$sudo "$apt" update
$sudo "$apt" install -y chromium
/usr/bin/chromium --version
