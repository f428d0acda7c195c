# Sourced by the scripts that install Debian packages a tier needs (tools/shells.sh,
# tools/node.sh): each sets `packages`, defines `missing` (what is not there yet, one per
# line) and calls `apt_ensure_main WHAT MAKE_TARGET "$@"`.
#
#   ensure   install `packages` unless nothing is missing (a fast no-op then)
#   check    exit 1 (saying what is missing) unless nothing is

apt_ensure_main() {  # what make-target [ensure|check]
  local what=$1 target=$2 script=${0#"$PWD"/}
  case "${3:-ensure}" in
    ensure)
      [ -z "$(missing)" ] && return 0
      # Another checkout's run may be installing right now (dpkg allows one at a time):
      # wait for its turn, then look again.
      local cache=${DEPLOYPLANE_CACHE:-$HOME/.cache/deployplane} sudo=""
      mkdir -p "$cache"
      exec 9>>"$cache/apt.lock"
      flock 9
      [ -z "$(missing)" ] && return 0
      if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
      echo "== $what: installing ${packages[*]} (apt-get)"
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 --no-install-recommends "${packages[@]}"
      if [ -n "$(missing)" ]; then echo "$script: still missing: $(missing | tr '\n' ' ')" >&2; exit 1; fi
      ;;
    check)
      if [ -n "$(missing)" ]; then echo "missing: $(missing | tr '\n' ' '); run 'make $target'" >&2; exit 1; fi
      ;;
    *) echo "usage: $script [ensure|check]" >&2; exit 2 ;;
  esac
}
