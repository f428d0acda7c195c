#!/usr/bin/env bash
# The shells whose completion scripts the tests run for real (tests/integration/
# test_cli_completion.py: `deployplane completion bash|zsh|fish` sourced into the shell
# itself, a TAB pressed on a pseudo-terminal):
#
#   tools/shells.sh ensure   install zsh and fish unless present (a fast no-op when they are)
#   tools/shells.sh check    exit 1 (saying what is missing) unless present
#
# bash is the machine's own. zsh and fish come from Debian (apt-get; root or sudo), so a
# fresh machine runs every shell's test instead of skipping two of them.
set -euo pipefail
packages=(zsh fish)

missing() {
  local p
  for p in "${packages[@]}"; do command -v "$p" >/dev/null || echo "$p"; done
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
    echo "== shells: installing $(missing | tr '\n' ' ')(apt-get)"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 --no-install-recommends "${packages[@]}"
    if [ -n "$(missing)" ]; then echo "tools/shells.sh: still missing: $(missing | tr '\n' ' ')" >&2; exit 1; fi
    ;;
  check)
    if [ -n "$(missing)" ]; then echo "missing: $(missing | tr '\n' ' '); run 'make shells'" >&2; exit 1; fi
    ;;
  *) echo "usage: $0 [ensure|check]" >&2; exit 2 ;;
esac
