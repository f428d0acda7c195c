#!/usr/bin/env bash
# The daemonless image tools: buildah (builds Dockerfiles without a Docker engine) and
# mmdebstrap (makes the Debian base rootfs), from Debian's packages.
#
#   tools/images/ensure.sh    install them unless present (a fast no-op when they are)
#
# Like tools/postgres.sh: apt-get as root (or passwordless sudo); a clear error otherwise.
set -euo pipefail

find_missing() {
  missing=()
  command -v buildah >/dev/null || missing+=(buildah)
  command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
}
find_missing
[ ${#missing[@]} -eq 0 ] && exit 0
# Another checkout's run may be installing right now (dpkg allows one at a time): wait
# for its turn, then look again.
cache=${DEPLOYPLANE_CACHE:-$HOME/.cache/deployplane}
mkdir -p "$cache"
exec 9>>"$cache/apt.lock"
flock 9
find_missing
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo="sudo -n"
  else
    echo "tools/images/ensure.sh: needs ${missing[*]} and this user cannot install them" \
      "(install the Debian packages buildah and mmdebstrap)" >&2
    exit 1
  fi
fi
command -v apt-get >/dev/null || {
  echo "tools/images/ensure.sh: no apt-get here: install buildah and mmdebstrap" >&2
  exit 1
}
echo "== images: installing ${missing[*]} (apt-get)"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
# buildah's Recommends bring crun/fuse-overlayfs/slirp4netns; as root with the vfs or
# overlay driver and chroot isolation they are not needed, but they are harmless.
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 \
  --no-install-recommends "${missing[@]}" uidmap
