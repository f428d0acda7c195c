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

# shellcheck source=tools/apt-ensure.sh
source "${BASH_SOURCE%/*}/apt-ensure.sh"
apt_ensure_main "shells" shells "$@"
