#!/usr/bin/env bash
# private_dev.sh MOUNTPOINT NODES_DIR COMMAND...
# Run under `unshare --mount --propagation private`: gives this mount namespace its own /dev, a
# tmpfs holding a copy of the host's /dev (its mounts, such as /dev/pts and /dev/shm, bound in)
# plus the device nodes of NODES_DIR, then runs COMMAND. The host's /dev is never written to, and
# the nodes vanish with the namespace when COMMAND ends, however it ends.
set -euo pipefail
mnt="$1" nodes="$2"
shift 2
mount -t tmpfs -o mode=0755,size=16m fleetopt-test-dev "$mnt"
shopt -s dotglob nullglob
for entry in /dev/*; do
  name="${entry##*/}"
  if mountpoint -q "$entry"; then
    mkdir -p "$mnt/$name"
    mount --rbind "$entry" "$mnt/$name"
  else
    cp -a "$entry" "$mnt/"
  fi
done
for entry in "$nodes"/*; do
  rm -rf "${mnt:?}/${entry##*/}"
  cp -a "$entry" "$mnt/"
done
mount --rbind "$mnt" /dev
exec "$@"
