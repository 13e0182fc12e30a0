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
# Scenarios run two at a time (FLEETOPT_MOLECULE_JOBS): each spends much of its time waiting on
# podman and apt, and each has its own containers and molecule state.
jobs_max="${FLEETOPT_MOLECULE_JOBS:-2}"
results="$(mktemp -d)"
trap 'rm -rf "$results"' EXIT

run_scenario() {
  local role="$1" log="$LOG_DIR/$1.log" start=$SECONDS
  if (cd "$ROOT/roles/$role" && molecule test) >"$log" 2>&1; then
    printf 'PASS %-26s %4ss  (%s)\n' "$role" $((SECONDS - start)) "$log" | tee "$results/$role.pass"
  else
    printf 'FAIL %-26s %4ss  (%s)\n' "$role" $((SECONDS - start)) "$log" | tee "$results/$role.fail"
    tail -n 40 "$log" | sed 's/^/    /'
  fi
}

for role in "${roles[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs_max)); do
    wait -n
  done
  run_scenario "$role" &
  sleep 15  # molecule's start-up (its prerun, the podman checks) is not made for two at once
done
wait

passed=0 failed=0 failures=()
for role in "${roles[@]}"; do
  if [[ -e "$results/$role.pass" ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+=("$role")
  fi
done

((failed)) && echo "failed scenarios: ${failures[*]}"
echo "$passed passed, $failed failed"
((failed == 0))
