#!/bin/sh
# The subset of the official postgres image's docker-entrypoint.sh that the data plane's
# renderer uses (operator/deployplane/dataplane/render/backing.py): arguments starting
# with `-` go to postgres; an empty $PGDATA gets initdb with the superuser `postgres`,
# password $POSTGRES_PASSWORD, scram-sha-256 over TCP, trust on the socket. It runs as
# the image's user (the data plane's pod says the same user, and its fsGroup makes the
# volume writable); started as root instead, it prepares $PGDATA (a fresh volume is
# root's) and drops to that user. What it writes besides $PGDATA: its socket and lock in
# /var/run/postgresql and the password's file in /tmp (volumes on a read-only root).
set -eu
if [ $# -eq 0 ] || [ "${1#-}" != "$1" ]; then
  set -- postgres "$@"
fi
if [ "$1" != postgres ]; then
  exec "$@"
fi
: "${PGDATA:=/var/lib/postgresql/data}"
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
# As the official image's: PostgreSQL starts only on a data directory of mode 0700 (or
# 0750), and the kubelet's fsGroup gives the directories of a volume group write.
mkdir -p "$PGDATA"
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "docker-entrypoint.sh: POSTGRES_PASSWORD is not set: refusing to initialize $PGDATA" >&2
    exit 1
  fi
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb --username="${POSTGRES_USER:-postgres}" --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  echo "docker-entrypoint.sh: initialized $PGDATA"
fi
exec "$@"
