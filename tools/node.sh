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

# shellcheck source=tools/apt-ensure.sh
source "${BASH_SOURCE%/*}/apt-ensure.sh"
apt_ensure_main "real node" node-tools "$@"
