#!/usr/bin/env bash
# Make the project's virtual environment (.venv) with the pinned controller packages and the
# `fleetopt` command. Does nothing when requirements.txt and pyproject.toml have not changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${FLEETOPT_PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "fleetopt needs Python 3.11 or newer for ansible-core 2.19 (set FLEETOPT_PYTHON)" >&2
  exit 2
fi

stamp=.venv/.fleetopt-requirements
wanted=$(cat requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
  exit 0
fi

echo "fleetopt: installing the controller environment into .venv (pinned, about a minute)"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
.venv/bin/pip install --quiet --disable-pip-version-check --no-deps -e .
echo "$wanted" > "$stamp"
