#!/usr/bin/env bash
# Runs make targets in lanes side by side: `make test`'s last tiers each start a cluster of
# their own and mostly wait on it (controllers, pods, image imports), so two lanes overlap
# those waits. A lane is one target or several joined by "+", run one after the other.
#
#   tools/lanes.sh e2e-gitops+e2e-existing e2e-real-node
#
# Each lane writes to its own log; a line says when a lane starts and when it ends (and,
# every HEARTBEAT seconds, which lanes still run); each lane's whole log is printed when all
# have ended, in the order given, so no two tiers' output interleave. Fails when a lane
# fails. An interrupt is passed to the lanes, whose own traps stop their clusters.
set -uo pipefail
# Each lane in a process group of its own, so that an interrupt reaches all of a lane's
# processes (make, pytest, the clusters they start) and only through this script.
set -m
cd "$(dirname "$0")/.."
HEARTBEAT=${HEARTBEAT:-120}
logs=$(mktemp -d "${TMPDIR:-/tmp}/deployplane-lanes.XXXXXX")
lanes=("$@")
pids=()

run_lane() {  # lane log
  local target status=0
  IFS=+ read -ra targets <<<"$1"
  for target in "${targets[@]}"; do
    make --no-print-directory "$target" >>"$2" 2>&1 || { status=$?; break; }
  done
  return "$status"
}

stop_lanes() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
  [ -n "${beat:-}" ] && kill -- "-$beat" 2>/dev/null
  wait
  rm -rf "$logs"
  exit 130
}
trap stop_lanes INT TERM

seconds() { printf '%d min %d s' $(($1 / 60)) $(($1 % 60)); }

start=$SECONDS
for i in "${!lanes[@]}"; do
  run_lane "${lanes[$i]}" "$logs/$i.log" &
  pids+=($!)
  echo "== lane ${lanes[$i]}: started (its output follows when every lane has ended)"
done

# Every HEARTBEAT seconds, which lanes still run (a long tier says nothing until it ends).
(
  while sleep "$HEARTBEAT"; do
    running=()
    for i in "${!lanes[@]}"; do kill -0 "${pids[$i]}" 2>/dev/null && running+=("${lanes[$i]}"); done
    echo "== lanes still running after $(seconds $((SECONDS - start))): ${running[*]}"
  done
) &
beat=$!

failed=()
remaining=("${pids[@]}")
while [ "${#remaining[@]}" -gt 0 ]; do
  wait -n -p ended "${remaining[@]}"
  status=$?
  for i in "${!lanes[@]}"; do [ "${pids[$i]}" = "$ended" ] && break; done
  verdict=passed
  [ "$status" -ne 0 ] && { verdict="failed (exit $status)"; failed+=("${lanes[$i]}"); }
  echo "== lane ${lanes[$i]}: $verdict after $(seconds $((SECONDS - start)))"
  left=()
  for pid in "${remaining[@]}"; do [ "$pid" != "$ended" ] && left+=("$pid"); done
  remaining=("${left[@]}")
done
kill -- "-$beat" 2>/dev/null
wait "$beat" 2>/dev/null

for i in "${!lanes[@]}"; do
  echo "== lane ${lanes[$i]}: its output"
  cat "$logs/$i.log"
done
rm -rf "$logs"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "== lanes failed: ${failed[*]}" >&2
  exit 1
fi
