#!/usr/bin/env bash
# Set everything up on this machine and run the main job on the embedded default:
# controller environment, the local CPU engine (vLLM) and a tiny generated model, then a
# whole tier-1 campaign. Extra arguments go to the campaign (e.g. -e only=torch_compile).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh
export PATH="$PWD/.venv/bin:$PATH"
ansible-playbook playbooks/setup_local.yml
ansible-playbook optimize.yml -e tier=1 "$@"
echo
echo "fleetopt: results in $(readlink -f results/latest) (summary.json, report.md)"
