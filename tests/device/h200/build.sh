#!/usr/bin/env bash
# Build .devcarry/, everything the H200 machine lacks for a fleetopt campaign on SGLang, from PyPI:
# - SGLang 0.5.16 and what its server imports (../shared/tools/sglang-h200/wheelhouse.sh: 48 MiB);
# - the controller: ansible-core and resolvelib wheels, and the community.proxmox collection, which
#   optimize.yml's provisioning plays name (they are parsed even when nothing is provisioned).
# Run from the project's root after scripts/bootstrap.sh; prints what one device command would carry.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
DEST=.devcarry
ANSIBLE_CORE=$(sed -n 's/^ansible-core==//p' requirements.txt)
RESOLVELIB=1.2.1

if ! ls "$DEST"/site.tar.xz.part00 >/dev/null 2>&1; then
  ../shared/tools/sglang-h200/wheelhouse.sh "$DEST"
fi
mkdir -p "$DEST/controller"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_17_x86_64 --platform any -d "$DEST/controller" \
  "ansible-core==$ANSIBLE_CORE" "resolvelib==$RESOLVELIB"
site=$(.venv/bin/python -c 'import ansible_collections, os; print(os.path.dirname(ansible_collections.__path__[0]))')
tar -C "$site" -cJf "$DEST/controller/collections.tar.xz" ansible_collections/community/proxmox ansible_collections/ansible/posix
grep -qxF '/.devcarry/' .git/info/exclude 2>/dev/null || echo '/.devcarry/' >> .git/info/exclude

tree_bytes=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
carry_bytes=$(du -sb "$DEST" | cut -f1)
echo "checkout $((tree_bytes / 1048576)) MiB + $DEST $((carry_bytes / 1048576)) MiB" \
     "= $(((tree_bytes + carry_bytes) / 1048576)) MiB of the 64 MiB one device command carries"
