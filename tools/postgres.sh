#!/usr/bin/env bash
# PostgreSQL server binaries for the emulator's tests (tests/support/postgres.py).
#
#   tools/postgres.sh ensure   install them unless present (a fast no-op when they are)
#   tools/postgres.sh path     print the directory holding initdb and pg_ctl
#
# The tests start their own throwaway server (initdb into a temporary directory, a free
# port on 127.0.0.1); only the binaries are needed, never a running system cluster.
# Looked for, in order: $DEPLOYPLANE_PG_BIN, /usr/lib/postgresql/<newest>/bin (Debian),
# then PATH. When missing they come from the distribution (apt-get; root or sudo), as
# CI starts from a fresh Debian machine with no container engine.
set -euo pipefail

find_bin() {
  local dir
  if [ -n "${DEPLOYPLANE_PG_BIN:-}" ]; then
    [ -x "$DEPLOYPLANE_PG_BIN/initdb" ] && [ -x "$DEPLOYPLANE_PG_BIN/pg_ctl" ] || return 1
    echo "$DEPLOYPLANE_PG_BIN"; return 0
  fi
  # newest major version first (sort -V: 9.6 < 15 < 16)
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then echo "$dir"; return 0; fi
  done
  dir=$(command -v initdb 2>/dev/null) || return 1
  dir=$(dirname "$(readlink -f "$dir")")
  [ -x "$dir/pg_ctl" ] || return 1
  echo "$dir"
}

# Cannot install: under CI that is an error (CI must run the PostgreSQL tests); elsewhere
# the tests skip their PostgreSQL runs and say why.
cannot_install() {
  case "${CI:-}" in
    [Tt][Rr][Uu][Ee] | 1 | [Yy][Ee][Ss])
      echo "tools/postgres.sh: $*" >&2
      exit 1
      ;;
  esac
  echo "tools/postgres.sh: warning: $*; the PostgreSQL runs of the tests will be skipped" >&2
  exit 0
}

install() {
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo="sudo -n"
    else
      cannot_install "PostgreSQL is not installed and this user cannot install it" \
        "(install the 'postgresql' package, or set DEPLOYPLANE_PG_BIN)"
    fi
  fi
  if ! command -v apt-get >/dev/null; then
    cannot_install "no apt-get here: install PostgreSQL >= 10 server binaries" \
      "and set DEPLOYPLANE_PG_BIN to their directory"
  fi
  # Another checkout's run may be installing right now (dpkg allows one at a time):
  # wait for its turn, then look again.
  local cache=${DEPLOYPLANE_CACHE:-$HOME/.cache/deployplane}
  mkdir -p "$cache"
  exec 9>>"$cache/apt.lock"
  flock 9
  if find_bin >/dev/null; then return 0; fi
  echo "== postgresql: installing the server binaries (apt-get)"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 \
    --no-install-recommends postgresql
}

case "${1:-ensure}" in
  ensure)
    if dir=$(find_bin); then
      exit 0
    fi
    if [ -n "${DEPLOYPLANE_PG_BIN:-}" ]; then
      echo "tools/postgres.sh: DEPLOYPLANE_PG_BIN=$DEPLOYPLANE_PG_BIN has no initdb and pg_ctl" >&2
      exit 1
    fi
    install
    dir=$(find_bin) || { echo "tools/postgres.sh: installed, but no initdb found" >&2; exit 1; }
    echo "== postgresql: $dir"
    ;;
  path)
    find_bin || { echo "tools/postgres.sh: no PostgreSQL binaries; run 'make postgres'" >&2; exit 1; }
    ;;
  *)
    echo "usage: $0 [ensure|path]" >&2
    exit 2
    ;;
esac
