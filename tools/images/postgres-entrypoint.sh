#!/bin/sh
# The subset of the official postgres image's docker-entrypoint.sh that the data plane's
# renderer uses (operator/deployplane/dataplane/render/backing.py): arguments starting
# with `-` go to postgres; as root it prepares $PGDATA (a fresh volume is root's) and
# drops to the postgres user; an empty $PGDATA gets initdb with the superuser
# `postgres`, password $POSTGRES_PASSWORD, scram-sha-256 over TCP, trust on the socket.
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
