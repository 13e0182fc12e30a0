#!/usr/bin/env bash
# Run every test: lint, ansible-test sanity and units, unit tests, end-to-end campaigns on the real
# local engine (the collection built, installed and used from a user's playbook among them), and
# the molecule scenarios of the provisioning roles on podman. Installs what the tests need.
# Arguments go to pytest (e.g. scripts/test.sh -m "not e2e" for the fast part only).
set -uo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
# CPU time of the whole machine (every process, servers and containers included), in clock ticks, from /proc/stat.
busy_ticks() { local _cpu user nice system idle iowait rest; read -r _cpu user nice system idle iowait rest < /proc/stat; echo $((user + nice + system)) $((idle + iowait)); }
read -r last_busy last_idle <<< "$(busy_ticks)"
last_at=$SECONDS
# Each line also says how busy the machine was since the line before: where CI's time goes, and whether more
# running side by side could have gained anything (not where every core was busy).
phase() {
  local busy idle cores
  read -r busy idle <<< "$(busy_ticks)"
  cores=$(awk -v b=$((busy - last_busy)) -v i=$((idle - last_idle)) -v n="$(nproc)" 'BEGIN { printf "%.2f", (b + i) ? n * b / (b + i) : 0 }')
  echo "== $1 (at +$((SECONDS - started)) s; since the last line: $((SECONDS - last_at)) s, $cores of $(nproc) cores busy)"
  last_busy=$busy last_idle=$idle last_at=$SECONDS
}

scripts/bootstrap.sh || exit 1
export PATH="$PWD/.venv/bin:$PATH"
status=0

# SGLang's benchmark client (two venvs, minutes to build on a fresh machine) is built while the
# set-up and the first tests run; tests/e2e/test_sglang_client.py waits for it through the build's lock.
mkdir -p artifacts
setsid python tests/fixtures/sglang/client/provision.py 0.5.9 0.5.23 > artifacts/sglang-client-provision.log 2>&1 &
sglang_client_build=$!

# ansible-test, molecule, ansible-lint and Chromium's install share nothing with the local engine's
# set-up or each other, and mostly wait on pip, apt or podman: they run beside it, and so do the
# unit and integration tests that time nothing. The end-to-end tests marked `load_tolerant` (they
# assert no speed and no verdict that a loaded machine could change) follow the set-up while the
# others may still run, then the browser tests so marked, once Chromium is there. The rest of the
# end-to-end tests and those marked `timing` (crash detection, leases, idle exits, which a loaded
# machine slows) start once all of that has ended.
# Each pytest keeps its temporary folders in a folder of its own under this
# checkout's: pytest keeps a user's three latest runs and deletes older ones, also those of another
# run still going (ansible-test runs a pytest of its own).
temproot="${TMPDIR:-/tmp}/fleetopt-pytest-$(printf %s "$PWD" | md5sum | cut -c1-8)"
mkdir -p "$temproot/beside" "$temproot/tolerant" "$temproot/quiet"
beside=()
run_beside() {  # name, log, command...
  local name=$1 log=$2
  shift 2
  "$@" > "$log" 2>&1 &
  beside+=("$!:$name:$log")
}
run_beside "ansible-test sanity and units (the collection, from its tarball)" artifacts/ansible-test.log scripts/ansible_test.sh
if [ -x tests/molecule/run_all.sh ] && [ "${FLEETOPT_SKIP_MOLECULE:-0}" != 1 ]; then
  # Then the container fleet's host image (apt inside a container: minutes on a fresh machine), which
  # tests/e2e/test_container_fleet.py would otherwise build in the last phase, with the machine to itself.
  run_beside "molecule, then the container fleet's host image" artifacts/molecule.log bash -c \
    'tests/molecule/run_all.sh; code=$?; echo "== playbooks/containers.yml -e state=image"
     ansible-playbook playbooks/containers.yml -e state=image || code=1; exit $code'
fi
run_beside "ansible-lint" artifacts/ansible-lint.log ansible-lint
# Chromium is installed beside the rest; only the browser tests wait for it.
tests/browser/ensure_chromium.sh > artifacts/chromium.log 2>&1 &
chromium_job=$!
chromium_ready() {
  [ -n "$chromium_job" ] || return 0
  wait "$chromium_job"
  local code=$?
  phase "Chromium for the browser tests: exit $code (installed beside; its output follows)"
  cat artifacts/chromium.log
  chromium_job=""
  [ "$code" -eq 0 ] || status=1
}
# Arguments choose the tests themselves (e.g. -m "not e2e"): then they all run in the last phase.
quiet_only=()
if [ $# -eq 0 ]; then
  # Those that ansible-test runs on the collection's tarball (above) are not run twice.
  mapfile -t ansible_test_units < <(grep -v '^#' tests/ansible_test_units.txt)
  run_beside "unit and integration tests that time nothing" artifacts/pytest-beside.log \
    env PYTEST_DEBUG_TEMPROOT="$temproot/beside" python -m pytest -p no:cacheprovider --durations=10 \
    -m "not e2e and not browser and not timing" "${ansible_test_units[@]/#/--ignore=}"
fi

phase "provisioning the local engine the end-to-end tests use (ansible-test, molecule, ansible-lint and Chromium beside it)"
ansible-playbook playbooks/setup_local.yml || status=1

if [ $# -eq 0 ]; then
  phase "pytest: the load-tolerant end-to-end tests (the jobs above may still run beside them)"
  PYTEST_DEBUG_TEMPROOT="$temproot/tolerant" python -m pytest -p no:cacheprovider --durations=10 -m load_tolerant \
    --ignore=tests/browser || status=1
  chromium_ready
  phase "pytest: the load-tolerant browser tests"
  PYTEST_DEBUG_TEMPROOT="$temproot/tolerant" python -m pytest -p no:cacheprovider -m load_tolerant tests/browser ||
    status=1
fi
chromium_ready

for job in "${beside[@]}"; do
  IFS=: read -r pid name log <<< "$job"
  wait "$pid"
  code=$?
  phase "$name: exit $code (ran beside; its output follows)"
  cat "$log"
  [ "$code" -eq 0 ] || status=1
done

if [ $# -eq 0 ]; then
  # The unit and integration tests that time something mostly wait (98 of them, one at a time: 313 s of wall time
  # for 82 s of CPU on two cores, with one at 48 s that now takes 9), so they run four at a time (pytest-xdist: 54 s
  # on the idle machine), before the end-to-end tests.
  phase "pytest: the unit and integration tests that time something, four at a time"
  PYTEST_DEBUG_TEMPROOT="$temproot/quiet" python -m pytest -p no:cacheprovider --durations=10 -n 4 \
    -m "timing and not e2e and not browser and not load_tolerant" tests/unit tests/integration || status=1
  quiet_only=(-m "(e2e or browser) and not load_tolerant")
fi
phase "pytest${quiet_only:+: the other end-to-end and browser tests}"
# The slowest tests are listed at the end, so a CI log shows where its time went.
PYTEST_DEBUG_TEMPROOT="$temproot/quiet" python -m pytest --durations=25 "${quiet_only[@]}" "$@" || status=1
# A build no test waited for (a run of some tests only) is not left behind; the next run redoes it.
kill -- -"$sglang_client_build" 2>/dev/null
phase "done, status $status"
exit $status
