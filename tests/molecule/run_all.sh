#!/usr/bin/env bash
# Runs `molecule test` for every role scenario (create, converge, idempotence, verify,
# destroy on podman), after preparing podman and the local base image. Ends with the line
# "N passed, M failed" counting scenarios; exits non-zero when any failed.
#   tests/molecule/run_all.sh [role ...]    (default: every role with molecule/default)
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VENV="${FLEETOPT_VENV:-$ROOT/.venv}"
LOG_DIR="${FLEETOPT_MOLECULE_LOGS:-$ROOT/artifacts/molecule}"

if [[ ! -x "$VENV/bin/molecule" ]]; then
  echo "molecule not found in $VENV (run scripts/setup.sh first)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
export PATH="$VENV/bin:$PATH"
export ANSIBLE_FORCE_COLOR=0 PY_COLORS=0 ANSIBLE_NOCOLOR=1

if ! bash "$HERE/prepare_podman.sh"; then
  echo "prepare_podman.sh failed" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

if (($#)); then
  roles=("$@")
else
  mapfile -t roles < <(cd "$ROOT/roles" && for d in */molecule/default; do echo "${d%%/*}"; done | sort)
fi

mkdir -p "$LOG_DIR"
passed=0 failed=0 failures=()
for role in "${roles[@]}"; do
  log="$LOG_DIR/$role.log"
  start=$SECONDS
  if (cd "$ROOT/roles/$role" && molecule test) >"$log" 2>&1; then
    passed=$((passed + 1))
    printf 'PASS %-26s %4ss  (%s)\n' "$role" $((SECONDS - start)) "$log"
  else
    failed=$((failed + 1))
    failures+=("$role")
    printf 'FAIL %-26s %4ss  (%s)\n' "$role" $((SECONDS - start)) "$log"
    tail -n 40 "$log" | sed 's/^/    /'
  fi
done

((failed)) && echo "failed scenarios: ${failures[*]}"
echo "$passed passed, $failed failed"
((failed == 0))
