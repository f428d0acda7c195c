#!/usr/bin/env bash
# The dev cluster's GitOps controllers (`deployplane dev cluster up --gitops`,
# docs/gitops.md): Argo CD (one `argocd` binary, run as application-controller and
# repo-server, and the `kustomize` its repo-server renders kustomizations with) and Flux's
# source-controller and kustomize-controller, built from their Go modules; redis (Argo CD's cache), git (Argo CD's repo-server and the dev cluster's
# git server) and jq from Debian.
#
#   tools/gitops/build.sh all    build what is missing (each tool stamp-keyed; a no-op when cached)
#   tools/gitops/build.sh path   print the directory (bin/ and manifests/ under it)
#
# Why this way: neither project's module can be `go install`ed. Argo CD's go.mod replaces
# its gitops-engine module with ./gitops-engine, a separate module the release's zip leaves
# out, and each Flux controller replaces its api module with ./api: the sources are
# assembled from the module cache (read-only there, so copied and made writable) and built
# in place. The manifests the controllers need at run time (their CRDs, Argo CD's
# configuration objects, Argo CD's git-verify-wrapper.sh) are copied beside the binaries
# from the same downloaded releases, so one stamp covers binary and manifests alike.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
source "$here/versions.env"
cache=${DEPLOYPLANE_CACHE:-$HOME/.cache/deployplane}
root="$cache/gitops/argocd$ARGOCD_VERSION-source$FLUX_SOURCE_CONTROLLER_VERSION-kustomize$FLUX_KUSTOMIZE_CONTROLLER_VERSION"
bin="$root/bin" manifests="$root/manifests" work="$cache/gitops/build"
export GOFLAGS=-buildvcs=false GOTOOLCHAIN=local CGO_ENABLED=0
log() { printf '[gitops-tools %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
have() { [ -x "$bin/$1" ] && [ "$(cat "$bin/.$1.stamp" 2>/dev/null)" = "$2" ]; }
stamp() { echo "$2" >"$bin/.$1.stamp"; }
module_dir() { (cd "$work" && go mod download -json "$1" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'); }

case "${1:-all}" in
  path) echo "$root"; exit 0 ;;
  all) ;;
  *) echo "usage: $0 [all|path]" >&2; exit 2 ;;
esac
mkdir -p "$bin" "$manifests" "$work"

ensure_debian() {
  # redis-server and git (git http-backend too) on the host, as Argo CD's own images carry
  # them; jq for docs/gitops.md's command that installs the health check in argocd-cm.
  local missing=()
  command -v redis-server >/dev/null || missing+=(redis-server)
  command -v jq >/dev/null || missing+=(jq)
  command -v git >/dev/null && [ -x "$(git --exec-path)/git-http-backend" ] || missing+=(git)
  [ ${#missing[@]} -eq 0 ] && return
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
  log "installing ${missing[*]} (apt-get)"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    -o DPkg::Lock::Timeout=600 "${missing[@]}"
}

build_argocd() {
  # "-loopback": the application-controller's metrics server listens on 127.0.0.1, not on
  # every interface (upstream hard-codes 0.0.0.0; the dev cluster serves loopback only).
  local want="v$ARGOCD_VERSION-$ARGOCD_GITOPS_ENGINE-loopback"
  if have argocd "$want" && [ -f "$manifests/argocd/.stamp" ] \
    && [ "$(cat "$manifests/argocd/.stamp")" = "$want" ]; then
    log "argocd $want: cached"; return
  fi
  local src engine info tag_time engine_time
  src=$(module_dir "github.com/argoproj/argo-cd/v3@v$ARGOCD_VERSION")
  engine=$(module_dir "github.com/argoproj/argo-cd/gitops-engine@$ARGOCD_GITOPS_ENGINE")
  # The pinned gitops-engine must be the release's own commit: its pseudo-version's time
  # is the release tag's commit time.
  info=$(cd "$work" && go mod download -json "github.com/argoproj/argo-cd/v3@v$ARGOCD_VERSION" | sed -n 's/.*"Info": "\(.*\)".*/\1/p')
  tag_time=$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$info" | tr -d -- '-:TZ')
  engine_time=$(echo "$ARGOCD_GITOPS_ENGINE" | cut -d- -f2)
  if [ "$tag_time" != "$engine_time" ]; then
    echo "tools/gitops/build.sh: ARGOCD_GITOPS_ENGINE ($engine_time) is not Argo CD v$ARGOCD_VERSION's commit ($tag_time)" >&2
    exit 1
  fi
  local mod="$work/argocd-$ARGOCD_VERSION"
  rm -rf "$mod"; cp -r "$src" "$mod"; cp -r "$engine" "$mod/gitops-engine"; chmod -R u+w "$mod"
  local metrics='metricsAddr := fmt.Sprintf("0.0.0.0:%d", metricsPort)'
  grep -qF "$metrics" "$mod/controller/appcontroller.go" || {
    echo "tools/gitops/build.sh: the controller's metrics address is no longer '$metrics'" >&2; exit 1; }
  sed -i 's/metricsAddr := fmt.Sprintf("0.0.0.0:%d", metricsPort)/metricsAddr := fmt.Sprintf("127.0.0.1:%d", metricsPort)/' \
    "$mod/controller/appcontroller.go"
  log "building argocd v$ARGOCD_VERSION (about 10 minutes on 2 cores)"
  (cd "$mod" && go build -trimpath \
    -ldflags "-s -w -X github.com/argoproj/argo-cd/v3/common.version=$ARGOCD_VERSION" \
    -o "$bin/argocd" ./cmd)
  # Argo CD's repo-server runs this script by name (from PATH) for every revision it reads.
  install -m 0755 "$mod/hack/git-verify-wrapper.sh" "$bin/git-verify-wrapper.sh"
  rm -rf "$manifests/argocd"; mkdir -p "$manifests/argocd/crds" "$manifests/argocd/config"
  cp "$mod"/manifests/crds/*-crd.yaml "$manifests/argocd/crds/"
  cp "$mod"/manifests/base/config/argocd-*.yaml "$manifests/argocd/config/"
  echo "$want" >"$manifests/argocd/.stamp"
  stamp argocd "$want"
  rm -rf "$mod"
}

build_flux() {
  # $1: source-controller | kustomize-controller; $2: its version.
  local name=$1 version=$2 want="v$2"
  [ "$name" = source-controller ] && want+="-artifact$FLUX_PKG_ARTIFACT"
  if have "$name" "$want" && [ "$(cat "$manifests/$name/.stamp" 2>/dev/null)" = "$want" ]; then
    log "$name $want: cached"; return
  fi
  local src api mod="$work/$name-$version"
  src=$(module_dir "github.com/fluxcd/$name@v$version")
  api=$(module_dir "github.com/fluxcd/$name/api@v$version")
  rm -rf "$mod"; cp -r "$src" "$mod"; rm -rf "$mod/api"; cp -r "$api" "$mod/api"; chmod -R u+w "$mod"
  if [ "$name" = source-controller ]; then
    (cd "$mod" && go mod edit -replace "github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@$FLUX_PKG_ARTIFACT")
  fi
  log "building $name v$version (several minutes on 2 cores)"
  (cd "$mod" && go build -mod=mod -trimpath -ldflags "-s -w" -o "$bin/$name" .)
  rm -rf "$manifests/$name"; mkdir -p "$manifests/$name"
  cp "$mod"/config/crd/bases/*.yaml "$manifests/$name/"
  echo "$want" >"$manifests/$name/.stamp"
  stamp "$name" "$want"
  rm -rf "$mod"
}

build_kustomize() {
  # `go install` works for this module (no replace directives), into a scratch GOBIN.
  local want="v$KUSTOMIZE_VERSION"
  if have kustomize "$want"; then log "kustomize $want: cached"; return; fi
  log "building kustomize v$KUSTOMIZE_VERSION (a few minutes on 2 cores)"
  local gobin="$work/kustomize-bin"
  rm -rf "$gobin"; mkdir -p "$gobin"
  GOBIN="$gobin" go install -trimpath -ldflags "-s -w" \
    "sigs.k8s.io/kustomize/kustomize/v5@v$KUSTOMIZE_VERSION"
  install -m 0755 "$gobin/kustomize" "$bin/kustomize"
  rm -rf "$gobin"
  stamp kustomize "$want"
}

ensure_debian
build_kustomize
build_flux kustomize-controller "$FLUX_KUSTOMIZE_CONTROLLER_VERSION"
build_flux source-controller "$FLUX_SOURCE_CONTROLLER_VERSION"
build_argocd
log "GitOps tools ready in $root ($(du -sh "$bin" | cut -f1))"
