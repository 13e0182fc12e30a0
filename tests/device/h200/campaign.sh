#!/usr/bin/env bash
# A tier-1 SGLang campaign on the H200 machine, driven by fleetopt's own playbook, roles and modules.
#
# Here first: scripts/bootstrap.sh, then tests/device/h200/build.sh (makes .devcarry/, 49 MiB). Then, as device
# commands made back to back (the machine keeps /tmp only while it is warm, about 30 s after a call, and one
# command runs at most 10 minutes), with `.devcarry` carried:
#   bash tests/device/h200/campaign.sh start 540    set the machine up, start the campaign detached, follow it
#   bash tests/device/h200/campaign.sh follow 560   follow it on; returns early once the campaign has ended
#   bash tests/device/h200/campaign.sh preload      the kept client's preload of SGLang's client, measured
# Every call leaves in $OUT what the campaign has so far: play.log (the playbook's output), results.tar.gz (the
# campaign folder: cells, logs, summary.json, reports, exports) and timeline.txt (where the time went, and the
# figures of issue 30, from tests/device/h200/timeline.py). Nothing measured is lost when a call ends.
set -uo pipefail
ROOT=${FLEETOPT_H200_ROOT:-/tmp/fleetopt-h200}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
CARRY=$REPO/.devcarry
WORK=$ROOT/checkout
# `follow` follows the campaign that the last `start` named, unless FLEETOPT_H200_CAMPAIGN names another.
CAMPAIGN=${FLEETOPT_H200_CAMPAIGN:-}
if [ -z "$CAMPAIGN" ] && [ "${1:-}" = follow ]; then
  CAMPAIGN=$(cat "$ROOT/campaign" 2>/dev/null)
fi
CAMPAIGN=${CAMPAIGN:-h200}
OUT=${OUT:-$ROOT/out}
PY=$(command -v python3)
export FLEETOPT_H200_ROOT=$ROOT PYTHONUNBUFFERED=1
mkdir -p "$ROOT" "$OUT"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
note() { echo "[h200 +$(since "$T0") s] $*" | tee -a "$ROOT/setup.times"; }
T0=$(now)

setup() {
  [ -f "$ROOT/.ready" ] && { note "set up already"; return 0; }
  { nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv; nproc;
    "$PY" -c 'import sys, torch; print(sys.version, torch.__version__, torch.version.cuda)'; } > "$ROOT/device.txt" 2>&1
  local t
  t=$(now)
  # The engine: the image's Python (torch 2.11) with SGLang 0.5.16's site tree first on its path, and the
  # transformers release SGLang pins (the image's 5.17.0 fails SGLang's import).
  mkdir -p "$ROOT/engine/site" "$ROOT/engine/bin" "$ROOT/models"
  cat "$CARRY"/site.tar.xz.part* | xz -d -T0 | tar -x -C "$ROOT/engine/site" || return 1
  "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$ROOT/engine/site" \
    "$CARRY"/transformers-*.whl "$CARRY"/tokenizers-*.whl || return 1
  printf '#!/bin/sh\nPYTHONPATH=%s/engine/site${PYTHONPATH:+:$PYTHONPATH} exec %s "$@"\n' "$ROOT" "$PY" \
    > "$ROOT/engine/bin/python"
  chmod +x "$ROOT/engine/bin/python"
  note "engine unpacked in $(since "$t") s ($(du -sm "$ROOT/engine/site" | cut -f1) MiB)"
  t=$(now)
  # The controller: ansible-core in the image's Python (it has jinja2, PyYAML, packaging, numpy, scipy,
  # matplotlib and tabulate for the report), and the collection the provisioning plays name.
  "$PY" -m pip install -q --no-index --no-deps --no-compile "$CARRY"/controller/*.whl || return 1
  mkdir -p ~/.ansible/collections && tar -xJf "$CARRY/controller/collections.tar.xz" -C ~/.ansible/collections
  note "controller installed in $(since "$t") s"
  t=$(now)
  "$ROOT/engine/bin/python" "$REPO/tests/device/h200/make_shaped_model.py" "$ROOT/models/llama-8b-shape" \
    > "$ROOT/make_model.log" 2>&1 || { cat "$ROOT/make_model.log"; return 1; }
  note "model made in $(since "$t") s: $(tail -1 "$ROOT/make_model.log")"
  # The campaign runs from a copy: a later device command lays the checkout anew under the running playbook.
  mkdir -p "$WORK"
  tar -C "$REPO" --exclude=./.devcarry --exclude=./results -cf - . | tar -C "$WORK" -xf -
  touch "$ROOT/.ready"
}

start() {
  if [ -f "$ROOT/play.pid" ] && kill -0 "$(cat "$ROOT/play.pid")" 2>/dev/null; then
    note "the campaign runs already"; return 0
  fi
  tar -xJf "$CARRY/controller/collections.tar.xz" -C ~/.ansible/collections
  cd "$WORK" || return 1
  date +%s > "$ROOT/play.started"
  echo "$CAMPAIGN" > "$ROOT/campaign"
  rm -f "$ROOT/follow.offset"
  # FLEETOPT_H200_ONLY=id,id runs those optimizations (with the baseline and the A/A) instead of all of tier 1.
  local select=(-e tier=1)
  [ -n "${FLEETOPT_H200_ONLY:-}" ] && select=(-e "only=$FLEETOPT_H200_ONLY")
  # FLEETOPT_H200_LAUNCHES=N launches each variant N times instead of the inventory's campaign_launches.
  [ -n "${FLEETOPT_H200_LAUNCHES:-}" ] && select+=(-e "campaign_launches=$FLEETOPT_H200_LAUNCHES")
  # FLEETOPT_H200_VARS='{"campaign_bench_trials": 2}' sets any other of the campaign's variables.
  [ -n "${FLEETOPT_H200_VARS:-}" ] && select+=(-e "$FLEETOPT_H200_VARS")
  note "selection: ${select[*]}"
  setsid "$(dirname "$PY")/ansible-playbook" -i inventory/h200 optimize.yml "${select[@]}" -e campaign_id="$CAMPAIGN" \
    > "$ROOT/play.log" 2>&1 < /dev/null &
  echo $! > "$ROOT/play.pid"
  note "campaign $CAMPAIGN started (pid $(cat "$ROOT/play.pid"))"
}

collect() {
  cp "$ROOT/play.log" "$OUT/play.log" 2>/dev/null
  cat "$ROOT/setup.times" "$ROOT/device.txt" > "$OUT/setup.txt" 2>/dev/null
  if [ -d "$WORK/results/$CAMPAIGN" ]; then
    tar -C "$WORK/results" -czf "$OUT/results.tar.gz" "$CAMPAIGN"
    "$PY" "$REPO/tests/device/h200/timeline.py" "$WORK/results/$CAMPAIGN" --play-started "$(cat "$ROOT/play.started")" \
      > "$OUT/timeline.txt" 2>&1
    cat "$OUT/timeline.txt"
  fi
}

follow() {  # seconds
  local until offset size pid
  until=$(awk -v a="$T0" -v s="$1" 'BEGIN { printf "%.3f", a + s - 25 }')
  offset=$(cat "$ROOT/follow.offset" 2>/dev/null || echo 0)
  pid=$(cat "$ROOT/play.pid" 2>/dev/null)
  while :; do
    size=$(stat -c %s "$ROOT/play.log" 2>/dev/null || echo 0)
    [ "$size" -lt "$offset" ] && offset=0  # a later start began the log anew
    if [ "$size" -gt "$offset" ]; then
      tail -c +"$((offset + 1))" "$ROOT/play.log" | head -c "$((size - offset))" | grep -vE '^(ok|skipping|included):|^$'
      offset=$size
      echo "$offset" > "$ROOT/follow.offset"
    fi
    kill -0 "$pid" 2>/dev/null || { note "campaign ended"; break; }
    awk -v u="$until" -v n="$(now)" 'BEGIN { exit !(n >= u) }' && { note "still running; follow again"; break; }
    sleep 5
  done
  collect
}

case ${1:-} in
  start) setup || { note "set-up failed"; exit 1; }; start; follow "${2:-540}";;
  follow) follow "${2:-560}";;
  # The kept client's preload on the real engine (tests/device/h200/client_preload.py); no server, no GPU time.
  preload) setup || { note "set-up failed"; exit 1; }
    rm -rf "$ROOT/preload"
    "$ROOT/engine/bin/python" "$REPO/tests/device/h200/client_preload.py" "$ROOT/engine/bin/python" "$ROOT/preload" \
      | tee "$OUT/client_preload.json";;
  *) echo "usage: $0 start|follow [SECONDS] | preload" >&2; exit 2;;
esac
