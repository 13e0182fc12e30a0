#!/usr/bin/env bash
# Run every test: ansible-lint, ansible-test sanity and units, the molecule scenarios of the
# provisioning roles on podman, the unit and integration tests, end-to-end campaigns on the real
# local engine (the collection built, installed and used from a user's playbook among them) and the
# browser tests. Installs what the tests need.
# Arguments go to pytest, which then runs once with them instead of the unit, end-to-end and browser
# steps (e.g. scripts/test.sh -m "not e2e and not browser" for the fast part only).
# FLEETOPT_SKIP_MOLECULE=1 leaves out molecule and the container fleet's image.
set -uo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
status=0
elapsed() { echo "+$((SECONDS - started)) s"; }

scripts/bootstrap.sh || exit 1
export PATH="$PWD/.venv/bin:$PATH"
mkdir -p artifacts

# Each real-engine start-up of the suite appends a line here; the count is printed at the end.
export FLEETOPT_REAL_STARTUPS_LOG="$PWD/artifacts/real-engine-startups.log"
: > "$FLEETOPT_REAL_STARTUPS_LOG"

# Each pytest keeps its temporary folders in a folder of its own: pytest keeps a user's three latest
# runs and deletes older ones, also those of another run still going (ansible-test runs a pytest of
# its own beside ours).
temproot="${TMPDIR:-/tmp}/fleetopt-pytest-$(printf %s "$PWD" | md5sum | cut -c1-8)"

# A step in the foreground: its name, its exit status and how long it took.
run_step() {  # name, command...
  local name=$1 begun=$SECONDS code
  shift
  echo "== $name (at $(elapsed))"
  "$@"
  code=$?
  echo "== $name: exit $code in $((SECONDS - begun)) s (at $(elapsed))"
  [ "$code" -eq 0 ] || status=1
}

# Jobs that run beside the steps, their output in a log each, printed once the job has been waited for.
declare -A job_pid job_name job_log job_begun
start_job() {  # key, name, log, command...
  local key=$1 name=$2 log=$3
  shift 3
  echo "== $name: started beside the steps (at $(elapsed)), output in $log"
  "$@" > "$log" 2>&1 &
  job_pid[$key]=$! job_name[$key]=$name job_log[$key]=$log job_begun[$key]=$SECONDS
}
wait_job() {  # key
  local key=$1 code
  [ -n "${job_pid[$key]:-}" ] || return 0
  wait "${job_pid[$key]}"
  code=$?
  echo "== ${job_name[$key]}: exit $code, done $((SECONDS - ${job_begun[$key]})) s after it started (at $(elapsed)); its output follows"
  cat "${job_log[$key]}"
  unset "job_pid[$key]"
  [ "$code" -eq 0 ] || status=1
}

pytest_step() {  # name, temporary folder's name, pytest arguments...
  local name=$1 temp="$temproot/$2"
  shift 2
  mkdir -p "$temp"
  run_step "$name" env PYTEST_DEBUG_TEMPROOT="$temp" python -m pytest -p no:cacheprovider "$@"
}

start_jobs() {
  # SGLang's benchmark client (two venvs, minutes to build on a fresh machine) is built beside the
  # rest; tests/e2e/test_sglang_client.py waits for it through the build's lock.
  setsid python tests/fixtures/sglang/client/provision.py 0.5.9 0.5.23 > artifacts/sglang-client-provision.log 2>&1 &
  sglang_client_build=$!
  start_job ansible_test "ansible-test sanity and units (the collection, from its tarball)" artifacts/ansible-test.log \
    scripts/ansible_test.sh
  # The container fleet's host image first (apt inside a container: minutes on a fresh machine), which
  # tests/e2e/test_container_fleet.py uses: artifacts/fleet-image.done says it is there. Then molecule.
  rm -f "$image_done"
  if [ -x tests/molecule/run_all.sh ] && [ "${FLEETOPT_SKIP_MOLECULE:-0}" != 1 ]; then
    start_job molecule "the container fleet's host image, then molecule" artifacts/molecule.log bash -c \
      'echo "== playbooks/containers.yml -e state=image"; ansible-playbook playbooks/containers.yml -e state=image
       code=$?; echo "$code" > '"$image_done"'; tests/molecule/run_all.sh || code=1; exit $code'
  else
    echo skipped > "$image_done"
  fi
  start_job lint "ansible-lint" artifacts/ansible-lint.log ansible-lint
  start_job chromium "Chromium for the browser tests" artifacts/chromium.log tests/browser/ensure_chromium.sh
}
image_done=artifacts/fleet-image.done
sglang_client_build=

run_step "setup_local.yml: the local engine the end-to-end tests use" ansible-playbook playbooks/setup_local.yml

if [ $# -eq 0 ]; then
  # The tests marked `timed` (vLLM's token gaps, the scripted engine's planted timing as vLLM's client measures it,
  # the verdicts a campaign reaches on it) run first, with nothing beside them: on two cores any other process
  # changes what they measure.
  pytest_step "end-to-end tests that time what a server delivers (alone)" e2e-timed --durations=10 -m "e2e and timed"
  start_jobs
  # Most end-to-end tests wait on processes, so they run three files at a time (a file's tests share its fixtures),
  # as a job beside the step below, once the container fleet's host image is there.
  mkdir -p "$temproot/e2e"
  start_job e2e "end-to-end tests (pytest -n 3, by file)" artifacts/e2e.log bash -c \
    'until [ -s "$0" ]; do sleep 2; done; echo "== the container fleet image: exit $(cat "$0")"; temp=$1
     exec env PYTHONUNBUFFERED=1 PYTEST_DEBUG_TEMPROOT="$temp" python -m pytest -p no:cacheprovider --durations=25 -n 3 \
       --dist loadfile -m "e2e and not timed"' "$image_done" "$temproot/e2e"
  # Most of these wait on the processes they start, so they run four at a time. The tests of the
  # collection's plugins (tests/unit/plugins) are ansible-test's, run on the tarball by the job above.
  pytest_step "unit and integration tests (pytest -n 4)" unit --durations=10 -n 4 \
    -m "not e2e and not browser" --ignore=tests/unit/plugins
  wait_job e2e
  wait_job chromium
  pytest_step "browser tests" browser --durations=10 -m browser
else
  start_jobs
  wait_job molecule
  wait_job chromium
  pytest_step "pytest $*" args --durations=25 "$@"
fi

for key in chromium lint molecule ansible_test; do
  wait_job "$key"
done

# A build no test waited for (a run of some tests only) is not left behind; the next run redoes it.
[ -n "$sglang_client_build" ] && kill -- -"$sglang_client_build" 2>/dev/null

echo "== real-engine start-ups: $(wc -l < "$FLEETOPT_REAL_STARTUPS_LOG") (one line each in $FLEETOPT_REAL_STARTUPS_LOG)"
echo "== done, status $status, total wall time $((SECONDS - started)) s"
exit $status
