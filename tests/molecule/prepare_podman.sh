#!/usr/bin/env bash
# Prepares this machine for the molecule scenarios: podman with runc, a containers.conf that
# works on this kernel, and the local Debian base image (no registry is reachable).
# Idempotent: each step is skipped when its result is already in place.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# Pinned inputs. Changing any of them rebuilds the base image (see RECIPE_ID below).
DEBIAN_SUITE="bookworm"                               # Debian 12
DEBIAN_MIRROR="${FLEETOPT_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
BASE_IMAGE="localhost/bookworm-base:latest"
BASE_INCLUDE="python3,systemd,systemd-sysv,dbus,iproute2"
APT_PINS=("podman=4.3.1*" "runc=1.1.5*" "debootstrap=1.0.128*")
CONF_SRC="${HERE}/containers.conf"
CONF_DST="/etc/containers/containers.conf"

log() { printf '[prepare_podman] %s\n' "$*"; }

if [[ "$(id -u)" != 0 ]]; then
  echo "prepare_podman.sh must run as root (it installs packages and builds an image)" >&2
  exit 1
fi

# 1. Packages.
missing=()
for pin in "${APT_PINS[@]}"; do
  pkg="${pin%%=*}"
  want="${pin#*=}"
  have="$(dpkg-query -W -f='${db:Status-Abbrev}|${Version}' "$pkg" 2>/dev/null || true)"
  # shellcheck disable=SC2053 # glob match against the pinned version pattern is intended
  if [[ "${have%%|*}" != ii* ]] || [[ "${have#*|}" != $want ]]; then
    missing+=("$pin")
  fi
done
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  "$HERE/../apt_locked.sh" update -qq
  DEBIAN_FRONTEND=noninteractive "$HERE/../apt_locked.sh" install -y -qq --no-install-recommends \
    "${missing[@]}" uidmap slirp4netns fuse-overlayfs >/dev/null
else
  log "podman, runc and debootstrap already installed"
fi

# 2. containers.conf: runc (crun fails on this kernel's hybrid cgroups) and rlimits it accepts.
install -d /etc/containers
if ! cmp -s "$CONF_SRC" "$CONF_DST"; then
  if [[ -e "$CONF_DST" ]] && ! grep -q 'fleetopt' "$CONF_DST"; then
    cp -a "$CONF_DST" "${CONF_DST}.before-fleetopt"
    log "kept the previous $CONF_DST as ${CONF_DST}.before-fleetopt"
  fi
  install -m 0644 "$CONF_SRC" "$CONF_DST"
  log "installed $CONF_DST"
else
  log "$CONF_DST already in place"
fi

# 3. Base image, built locally with debootstrap and labelled with the recipe that made it.
RECIPE_ID="$(printf '%s\n' "$DEBIAN_SUITE" "$BASE_INCLUDE" "minbase" "v1" | sha256sum | cut -c1-16)"
have_id="$(podman image inspect --format '{{ index .Labels "org.fleetopt.recipe" }}' "$BASE_IMAGE" 2>/dev/null || true)"
if [[ "$have_id" == "$RECIPE_ID" ]]; then
  log "$BASE_IMAGE is up to date (recipe $RECIPE_ID)"
else
  rootfs="$(mktemp -d /var/tmp/fleetopt-rootfs.XXXXXX)"
  trap 'rm -rf "$rootfs"' EXIT
  log "building $BASE_IMAGE with debootstrap $DEBIAN_SUITE (about a minute)"
  debootstrap --variant=minbase --include="$BASE_INCLUDE" "$DEBIAN_SUITE" "$rootfs" "$DEBIAN_MIRROR" >/dev/null
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman import \
    --change 'CMD ["/lib/systemd/systemd"]' \
    --change "LABEL org.fleetopt.recipe=$RECIPE_ID" \
    --change "LABEL org.fleetopt.debian=$(cat "$rootfs/etc/debian_version")" \
    - "$BASE_IMAGE" >/dev/null
  log "built $BASE_IMAGE (Debian $(cat "$rootfs/etc/debian_version"), recipe $RECIPE_ID)"
fi
