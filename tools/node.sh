#!/usr/bin/env bash
# What the dev cluster's real node needs from Debian (docs/devcluster.md, "A real node"):
#
#   tools/node.sh ensure   install them unless present (a fast no-op when they are)
#   tools/node.sh check    exit 1 (saying what is missing) unless present
#
# runc (the OCI runtime containerd's runc shim calls), containernetworking-plugins
# (bridge, host-local, loopback, portmap in /usr/lib/cni) and busybox-static (the tiny
# image the real-node tests build). containerd itself is built from its Go module by
# tools/k8s/build.sh node: Debian's containerd 1.6 is end-of-life and Kubernetes 1.36
# needs 2.2+, so it is never installed here (and its shim is never looked up on PATH).
set -euo pipefail
packages=(runc containernetworking-plugins busybox-static)
files=(/usr/sbin/runc /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback /usr/lib/cni/portmap /bin/busybox)

missing() {
  local f
  for f in "${files[@]}"; do [ -x "$f" ] || echo "$f"; done
}

case "${1:-ensure}" in
  ensure)
    [ -z "$(missing)" ] && exit 0
    # Another checkout's run may be installing right now (dpkg allows one at a time):
    # wait for its turn, then look again.
    cache=${DEPLOYPLANE_CACHE:-$HOME/.cache/deployplane}
    mkdir -p "$cache"
    exec 9>>"$cache/apt.lock"
    flock 9
    [ -z "$(missing)" ] && exit 0
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
    echo "== real node: installing ${packages[*]} (apt-get)"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 --no-install-recommends "${packages[@]}"
    if [ -n "$(missing)" ]; then echo "tools/node.sh: still missing: $(missing | tr '\n' ' ')" >&2; exit 1; fi
    ;;
  check)
    if [ -n "$(missing)" ]; then echo "missing: $(missing | tr '\n' ' '); run 'make node-tools'" >&2; exit 1; fi
    ;;
  *) echo "usage: $0 [ensure|check]" >&2; exit 2 ;;
esac
