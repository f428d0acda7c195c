#!/bin/sh
# The subset of the official redis image's docker-entrypoint.sh that the data plane's
# renderer uses (operator/deployplane/dataplane/render/backing.py): arguments starting
# with `-` go to redis-server; it runs as the image's user, its snapshot in /data (a
# volume on a read-only root); started as root it drops to that user. Debian's redis-server
# keeps protected mode on without a config file (the official image builds it off):
# the Service's clients are other pods, so it is turned off here, as there.
set -eu
if [ $# -eq 0 ] || [ "${1#-}" != "$1" ]; then
  set -- redis-server "$@"
fi
if [ "$1" = redis-server ]; then
  if [ "$(id -u)" = 0 ]; then
    chown redis:redis /data
    exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
  fi
  shift
  set -- redis-server --protected-mode no --dir /data "$@"
fi
exec "$@"
