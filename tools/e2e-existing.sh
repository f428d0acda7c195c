#!/usr/bin/env bash
# The suite's existing-cluster path, run once by `make test` (so by CI): a dev cluster
# with kwok nodes started as a separate process, the way a user starts kind, then
# `make e2e KUBECONFIG=<its kubeconfig>` against it, then the cluster stopped, also when
# the run fails or is interrupted (trap). $1: pytest selection (-k expression) or empty
# for the whole suite.
#
# Besides pytest's own verdict (and the session's check that nothing of the run is left
# in the cluster, tests/e2e/conftest.py), the run must not skip what this cluster has:
# it has nodes that accept pods and kwok nodes, so the only skips allowed are those no
# existing cluster can do (its audit log, the dev cluster's own tests, INSTALL=helm) and
# the real-node tier's tests: the list `existing` of tests/support/tiers.py, which the
# run is judged by (tests/support/skipcheck.py).
set -euo pipefail
cd "$(dirname "$0")/.."
selection=${1:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/deployplane-e2e-existing.XXXXXX")
state="$work/cluster"
cli=(.venv/bin/deployplane dev cluster)

stop() {
  "${cli[@]}" down --state-dir "$state" >/dev/null || echo "warning: could not stop the dev cluster in $state" >&2
  rm -rf "$work"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bin=$(bash tools/k8s/build.sh path)
DEPLOYPLANE_TOOLS_BIN=$bin "${cli[@]}" up --workloads --state-dir "$state"
# The Gateway API and KEDA CRDs `make tools` generates, as a kind user would install those
# projects' CRDs: the vendor data-plane tests need them served (docs/kind.md).
kubectl=("$bin/kubectl" --kubeconfig "$state/admin.kubeconfig")
"${kubectl[@]}" apply --server-side -f "$bin/crds" >/dev/null
"${kubectl[@]}" wait --for condition=Established --timeout=60s -f "$bin/crds" >/dev/null
args=(--durations=10 --skips-allowed=existing)
[ -n "$selection" ] && args+=(-k "$selection")
# KUBECONFIG on make's command line: the only way the e2e target picks a cluster.
make --no-print-directory e2e KUBECONFIG="$state/admin.kubeconfig" \
  E2E_ARGS="$(printf '%q ' "${args[@]}")"
