#!/usr/bin/env bash
# Start the exported images without a container engine, the way Kubernetes would run them.
#
#   tools/images/smoke.sh app        deployplane --version as the image's user (10001),
#                                    root filesystem read-only, /tmp and /data tmpfs (the
#                                    chart's emptyDirs); then the emulator as the chart
#                                    runs it, answering /healthz
#   tools/images/smoke.sh postgres   the entrypoint with the renderer's env and `-c` args,
#                                    as the image's user on a read-only root with the
#                                    data plane's volumes (data, socket, /tmp); the
#                                    readiness probe (pg_isready -U postgres); a password
#                                    login over TCP; CREATE EXTENSION vector
#   tools/images/smoke.sh redis      the entrypoint with the renderer's --maxmemory args,
#                                    as the image's user on a read-only root (/data a
#                                    volume); PING and CONFIG GET maxmemory over TCP
#   tools/images/smoke.sh e2e-agent  the agent-server stand-in's command as its user on a
#                                    read-only root (on a free port): GET /ok
#
# Each image is taken from its archive in the images directory (what a node imports),
# unpacked by buildah into a throwaway container, and run by chroot inside a private
# mount namespace (`unshare --mount`: the /proc, /dev and read-only mounts vanish with
# it) on the host network, listening on 127.0.0.1 and a free port. The container is
# removed afterwards; servers are stopped by their pid.
set -euo pipefail
cd "$(dirname "$0")"
images=$(python3 build.py dir)
work=$(dirname "$images")/image-build
bah() { buildah --root "$work/storage" --runroot "$work/run" "$@"; }

what=${1:?usage: smoke.sh app|postgres|redis|e2e-agent}
case $what in
  app) archive=deployplane-dev.tar tag=dev ;;
  postgres) archive=deployplane-postgres-17-pgvector.tar tag=17-pgvector ;;
  redis) archive=deployplane-redis-7.0.tar tag=7.0 ;;
  e2e-agent) archive=deployplane-e2e-agent-1.tar tag=1 ;;
  *) echo "usage: smoke.sh app|postgres|redis|e2e-agent" >&2; exit 2 ;;
esac

# the image is chosen by its OCI ref.name (its tag): an archive may hold several
ctr=$(bah from --quiet "oci-archive:$images/$archive:$tag")
pid=""
# The volumes of `--rw PATH`: host directories, so that every in_image (each in a mount
# namespace of its own) sees the same ones, as the containers of one pod do.
volumes=$(mktemp -d)
# The server is the child of the background job (unshare, chroot, env, the entrypoint
# and setpriv all exec): signal it, by pid, with its own stop signal and let the job reap
# it (killing the job first would leave it to PID 1); SIGKILL after 20 s.
stop_signal=TERM
cleanup() {
  if [ -n "$pid" ]; then
    local children i
    children=$(ps -o pid= --ppid "$pid" || true)
    # shellcheck disable=SC2086
    [ -z "$children" ] || kill -s "$stop_signal" $children 2>/dev/null || true
    for i in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    # shellcheck disable=SC2086
    kill -KILL $children "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  bah umount "$ctr" >/dev/null || true
  bah rm "$ctr" >/dev/null || true
  rm -rf "$volumes"
}
trap cleanup EXIT
root=$(bah mount "$ctr")
# The image's environment and user, as a runtime would take them from its config.
mapfile -t env < <(bah inspect --format '{{range .OCIv1.Config.Env}}{{println .}}{{end}}' "$ctr" | sed '/^$/d')
user=$(bah inspect --format '{{.OCIv1.Config.User}}' "$ctr")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# in_image [--ro] [--rw PATH]... [--user U] ENV=... -- cmd...: run cmd in the image's root;
# --ro: the root read-only, /tmp and /data tmpfs; --rw PATH: PATH a volume (see above)
in_image() {
  local ro="" as="${user:-0}" envs=() rw=""
  while [ "$1" != -- ]; do
    case $1 in
      --ro) ro=1 ;;
      --user) as=$2; shift ;;
      --rw) rw="$rw $2"; mkdir -p "$volumes$2"; chmod 1777 "$volumes$2"; shift ;;
      *) envs+=("$1") ;;
    esac
    shift
  done
  shift
  case $as in *:*) ;; *) as="$as:$as" ;; esac # numeric ids (chroot would look names up on the host)
  # shellcheck disable=SC2016
  unshare --mount --propagation private -- sh -ec '
    root=$1 ro=$2 as=$3 volumes=$4 rw=$5; shift 5
    mount --rbind /dev "$root/dev"; mount -t proc proc "$root/proc"
    if [ -n "$ro" ]; then
      mkdir -p "$root/data"
      mount --bind "$root" "$root"; mount -o remount,bind,ro "$root"
      mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"; mount -t tmpfs -o mode=1777 tmpfs "$root/data"
    fi
    # where the path leads inside the image (/var/run is a link to /run), as a runtime
    # resolves a volume'"'"'s mount path in the container'"'"'s root
    for path in $rw; do mount --bind "$volumes$path" "$root$(chroot "$root" readlink -f "$path")"; done
    exec chroot --userspec="$as" "$root" "$@"' \
    sh "$root" "$ro" "$as" "$volumes" "$rw" env -i "${env[@]}" "${envs[@]}" "$@"
}

case $what in
  app)
    echo "config: user=$user entrypoint=$(bah inspect --format '{{.OCIv1.Config.Entrypoint}}' "$ctr")"
    in_image --ro HOME=/tmp -- deployplane --version
    in_image --ro HOME=/tmp -- sh -c 'id -u; touch /probe 2>/dev/null && echo root writable || echo root read-only'
    # The chart's emulator container: its command and arguments, HOME=/tmp, data on /data.
    in_image --ro HOME=/tmp PYTHONDONTWRITEBYTECODE=1 -- deployplane controlplane serve \
      --host 127.0.0.1 --port "$port" --database sqlite+aiosqlite:////data/controlplane.db \
      --api-key smoke-key &
    pid=$!
    for _ in $(seq 60); do
      curl -fsS "http://127.0.0.1:$port/healthz" 2>/dev/null && break
      sleep 1
    done
    echo
    curl -fsS "http://127.0.0.1:$port/healthz" | sed 's/^/emulator healthz: /'
    echo
    ;;
  postgres)
    stop_signal=INT # fast shutdown, as the image's STOPSIGNAL
    echo "config: user=$user"
    # As backing.py renders it: POSTGRES_PASSWORD, PGDATA under the volume, `-c` args;
    # the root read-only, the data directory, the socket's and /tmp its volumes.
    pg=(--ro --rw /var/lib/postgresql/data --rw /var/run/postgresql)
    in_image "${pg[@]}" POSTGRES_PASSWORD=smoke PGDATA=/var/lib/postgresql/data/pgdata -- \
      docker-entrypoint.sh -c max_connections=20 -c port="$port" -c listen_addresses=127.0.0.1 &
    pid=$!
    for _ in $(seq 60); do
      in_image "${pg[@]}" -- pg_isready -q -U postgres -p "$port" && break
      sleep 1
    done
    in_image "${pg[@]}" -- pg_isready -U postgres -p "$port"
    in_image "${pg[@]}" PGPASSWORD=smoke -- psql -h 127.0.0.1 -p "$port" -U postgres -d postgres -tAc \
      "CREATE EXTENSION vector; SELECT 'pgvector ' || extversion FROM pg_extension WHERE extname = 'vector'; SHOW max_connections"
    # owned by the user the image runs as, that the data plane renders
    stat -c 'data directory owner: %u' "$volumes/var/lib/postgresql/data/pgdata"
    ;;
  redis)
    echo "config: user=$user"
    in_image --ro -- docker-entrypoint.sh --maxmemory 900000 --maxmemory-policy allkeys-lru \
      --port "$port" --bind 127.0.0.1 &
    pid=$!
    for _ in $(seq 30); do
      in_image -- redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
      sleep 1
    done
    in_image -- redis-cli -p "$port" ping
    in_image -- redis-cli -p "$port" config get maxmemory
    in_image -- redis-cli -p "$port" config get protected-mode
    ;;
  e2e-agent)
    echo "config: user=$user cmd=$(bah inspect --format '{{.OCIv1.Config.Cmd}}' "$ctr")"
    in_image --ro -- python3 -m http.server "$port" --bind 127.0.0.1 --directory /srv/agent &
    pid=$!
    for _ in $(seq 30); do
      curl -fsS "http://127.0.0.1:$port/ok" >/dev/null 2>&1 && break
      sleep 1
    done
    curl -fsS "http://127.0.0.1:$port/ok" | sed 's/^/GET \/ok: /'
    ;;
esac
