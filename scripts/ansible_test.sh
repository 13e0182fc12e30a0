#!/usr/bin/env bash
# ansible-test sanity and units for the collection fleetopt.campaign, without containers.
# ansible-test needs the collection at .../ansible_collections/fleetopt/campaign, so it runs on
# the built tarball's contents placed there. It runs from a virtual environment of its own
# (.venv-ansible-test: the pinned ansible-core, and what each test needs, installed from PyPI by
# --requirements), so the project's .venv is left as requirements.txt makes it. Only the
# Python the project uses is tested, to keep CI short.
# Usage: scripts/ansible_test.sh [sanity] [units]   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

PYTHON=${FLEETOPT_PYTHON:-python3}
python=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
core=$(grep '^ansible-core==' requirements.txt)
venv=.venv-ansible-test
if [ "$(cat "$venv/.fleetopt-core" 2>/dev/null)" != "$core" ]; then
  echo "== $venv: $core"
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$core"
  echo "$core" > "$venv/.fleetopt-core"
fi

# ansible-test gets pip into the virtual environments it makes (~/.ansible/test/venv) from a script
# on ci-files.testing.ansible.com; where that host cannot be reached, a stand-in in its cache
# installs pip from the package index instead (scripts/get_pip_standin.py).
pip_version=$(grep -oP "pip='\K[0-9.]+" "$venv"/lib/python*/site-packages/ansible_test/_internal/python_requirements.py)
get_pip="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
if [ ! -f "$get_pip" ] && ! curl -fsS -o /dev/null --max-time 10 https://ci-files.testing.ansible.com/ 2>/dev/null; then
  echo "== ci-files.testing.ansible.com cannot be reached: $get_pip is scripts/get_pip_standin.py"
  mkdir -p "$(dirname "$get_pip")"
  cp scripts/get_pip_standin.py "$get_pip"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$venv/bin/ansible-galaxy" collection build --output-path "$work/dist" . > /dev/null

# The collection as the tarball has it, under ansible_collections/fleetopt/campaign in a folder of
# its own, plus the given parts of the checkout (tests are not part of the tarball).
collection_copy() {
  local copy="$work/$1/ansible_collections/fleetopt/campaign"
  shift
  mkdir -p "$copy"
  tar -xzf "$work"/dist/fleetopt-campaign-*.tar.gz -C "$copy"
  cp -r --parents "$@" "$copy"
  echo "$copy"
}

[ $# -gt 0 ] || set -- sanity units
status=0
for step in "$@"; do
  case $step in
    sanity)
      echo "== ansible-test sanity (Python $python): the collection as the tarball has it"
      (cd "$(collection_copy sanity tests/sanity)" &&
        "$root/$venv/bin/ansible-test" sanity --local --requirements --python "$python" --color no) || status=1 ;;
    units)
      # tests/unit/plugins mirrors plugins/ (modules, module_utils, action, filter); the controller
      # package's and the playbooks' tests beside it (tests/unit/controller, tests/unit/playbooks)
      # need the controller's environment and run under pytest only (scripts/test.sh).
      echo "== ansible-test units (Python $python): the tests of the collection's plugins (tests/unit/plugins)"
      (cd "$(collection_copy units tests)" &&
        "$root/$venv/bin/ansible-test" units --local --requirements --python "$python" --color no tests/unit/plugins/) || status=1 ;;
    *) echo "unknown step $step (sanity or units)" >&2; exit 2 ;;
  esac
done
exit $status
