#!/usr/bin/env bash
# Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, helm and
# kwok from Go modules.
#
# Why from source: this machine has no container engine or registry and prebuilt
# binaries cannot be downloaded; the Go module proxy is reachable. k8s.io/kubernetes
# replaces its staging modules with local paths in its go.mod, so `go install` of it
# fails; instead a tiny wrapper module requires it and re-points every staging module
# at its published v0.<minor>.<patch> version (the list is read from the downloaded
# go.mod, never hard-coded). Idempotent: a tool whose stamp matches is skipped.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
source "$here/versions.env"
cache=${DEPLOYPLANE_CACHE:-$HOME/.cache/deployplane}
bin="$cache/k8s/v$K8S_VERSION-etcd$ETCD_VERSION-helm$HELM_VERSION/bin"
work="$cache/k8s/build"
mkdir -p "$bin" "$work" "$cache/k8s/parts"
export GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
log() { printf '[tools %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
# Two builds may run at once (two checkouts' `make test`, or `make tools` beside a test
# run): a tool found built (binary there, then its stamp written) needs no lock; the first
# one found missing takes the cache's lock, held until this script exits, and is looked
# for again, as the other build may have made it meanwhile. Every build below runs
# under the lock (they share the module directories in $work and the binaries in $bin).
lock="$cache/k8s/build.lock"
locked=""
under_lock() {
  "$@" && return 0
  [ -z "$locked" ] || return 1
  exec 9>>"$lock"
  if ! flock -n 9; then
    log "waiting for another build of the tools ($lock)"
    flock 9
  fi
  locked=1
  "$@"
}
built() { [ -x "$bin/$1" ] && [ "$(cat "$bin/.$1.stamp" 2>/dev/null)" = "$2" ]; }
have() { under_lock built "$@"; }
# A tool or stamp lands whole: written under a temporary name beside it, then renamed
# over the old one (which a process running it keeps), so that another checkout's tests
# never run a binary half written by a rebuild (a stamp of another version). `go
# install` writes into $parts, on the same file system.
parts="$cache/k8s/parts"
part() { echo "$bin/.$1.part"; }
put() { mv -f "$bin/.$1.part" "$bin/$1"; }
put_installed() { local tool; for tool in "$@"; do mv -f "$parts/$tool" "$bin/$tool"; done; }
stamp() { echo "$2" >"$bin/.$1.stamp.part"; mv -f "$bin/.$1.stamp.part" "$bin/.$1.stamp"; }

minor=${K8S_VERSION#*.}; minor=${minor%%.*}; patch=${K8S_VERSION##*.}
staging_version="v0.$minor.$patch"
build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=v$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.gitCommit=deployplane-gomod -X $pkg.buildDate=$build_date"
done

build_kube() {
  local want="v$K8S_VERSION"
  if have kube-apiserver "$want" && have kube-controller-manager "$want" \
    && have kube-scheduler "$want" && have kubectl "$want"; then
    log "kubernetes $want: cached in $bin"; return
  fi
  local mod="$work/kube-$K8S_VERSION"
  rm -rf "$mod"; mkdir -p "$mod"; cp -r "$here/kube/cmd" "$mod/"
  kube_wrapper_module "$mod"
  for tool in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    # A tool added later (kube-scheduler) must not relink the ones already built.
    if have "$tool" "$want"; then log "$tool $want: cached"; continue; fi
    log "building $tool $want (first build takes many minutes on 2 cores)"
    (cd "$mod" && go build -trimpath -ldflags "-s -w $ldflags" -o "$(part "$tool")" "./cmd/$tool")
    put "$tool"
    stamp "$tool" "$want"
  done
}

kube_wrapper_module() {
  # $1: a directory holding cmd/<tool>/main.go; writes its go.mod requiring
  # k8s.io/kubernetes with every staging module re-pointed, then `go mod tidy`.
  local mod=$1 want="v$K8S_VERSION"
  log "kubernetes $want: resolving k8s.io/kubernetes go.mod"
  local gomod
  gomod=$(cd "$mod" && go mod download -json "k8s.io/kubernetes@$want" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    echo "module deployplane.local/kube"
    echo
    echo "go $(sed -n 's/^go \([0-9.]*\).*/\1/p' "$gomod")"
    echo
    echo "require k8s.io/kubernetes $want"
    echo
    # Every `k8s.io/x => ./staging/...` replace of the upstream go.mod, re-pointed at
    # the published module of the same release.
    sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#replace \1 => \1 '"$staging_version"'#p' "$gomod"
  } >"$mod/go.mod"
  log "kubernetes $want: $(grep -c '^replace' "$mod/go.mod") staging modules re-pointed at $staging_version"
  (cd "$mod" && go mod tidy)
}

build_etcd() {
  local want="v$ETCD_VERSION"
  if have etcd "$want"; then log "etcd $want: cached"; return; fi
  local mod="$work/etcd-$ETCD_VERSION"
  rm -rf "$mod"; mkdir -p "$mod"; cp "$here/etcd/main.go" "$mod/"
  (cd "$mod" && go mod init deployplane.local/etcd >/dev/null 2>&1 \
    && go get "go.etcd.io/etcd/server/v3@$want" && go mod tidy)
  log "building etcd $want"
  (cd "$mod" && go build -trimpath -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=deployplane" -o "$(part etcd)" .)
  put etcd
  stamp etcd "$want"
}

build_kstatus() {
  # Flux's verdict on our resources for the e2e tests: tools/k8s/kstatus/main.go on
  # github.com/fluxcd/cli-utils/pkg/kstatus/status. The stamp carries the source's hash,
  # so an edit of main.go rebuilds it. Not keyed into $bin's name: adding it must not
  # move the Kubernetes binaries' cache.
  local want
  want="v$KSTATUS_VERSION-$(sha1sum "$here/kstatus/main.go" | cut -c1-12)"
  if have kstatus "$want"; then log "kstatus $want: cached"; return; fi
  local mod="$work/kstatus-$KSTATUS_VERSION"
  rm -rf "$mod"; mkdir -p "$mod"; cp "$here/kstatus/main.go" "$mod/"
  (cd "$mod" && go mod init deployplane.local/kstatus >/dev/null 2>&1 \
    && go get "github.com/fluxcd/cli-utils@v$KSTATUS_VERSION" && go mod tidy)
  log "building kstatus (fluxcd/cli-utils v$KSTATUS_VERSION)"
  (cd "$mod" && go build -trimpath -ldflags "-s -w" -o "$(part kstatus)" .)
  put kstatus
  stamp kstatus "$want"
}

build_promql() {
  # The chart's PromQL checked by Prometheus's own parser (tools/k8s/promql/main.go):
  # only github.com/prometheus/prometheus/promql/parser is compiled, a few seconds.
  local want
  want="v$PROMETHEUS_VERSION-$(sha1sum "$here/promql/main.go" | cut -c1-12)"
  if have promql "$want"; then log "promql $want: cached"; return; fi
  local mod="$work/promql-$PROMETHEUS_VERSION"
  rm -rf "$mod"; mkdir -p "$mod"; cp "$here/promql/main.go" "$mod/"
  (cd "$mod" && go mod init deployplane.local/promql >/dev/null 2>&1 \
    && go get "github.com/prometheus/prometheus@v$PROMETHEUS_VERSION" && go mod tidy)
  log "building promql (prometheus v$PROMETHEUS_VERSION parser)"
  (cd "$mod" && go build -trimpath -ldflags "-s -w" -o "$(part promql)" .)
  put promql
  stamp promql "$want"
}

crds_built() {
  built controller-gen "v$CONTROLLER_TOOLS_VERSION" && [ "$(cat "$bin/crds/.stamp" 2>/dev/null)" = "$1" ]
}

build_crds() {
  # The Gateway API's and KEDA's CRDs for the dev cluster (docs/dataplane.md): the
  # listener agent renders HTTPRoutes and ScaledObjects, which the e2e tests apply to
  # the real apiserver, validated against these schemas. controller-gen reads the
  # projects' own API packages (sigs.k8s.io/gateway-api/apis/v1,
  # github.com/kedacore/keda/v2/apis/keda/v1alpha1) in a module that requires only
  # them, so their k8s.io versions are theirs, not controller-gen's. Only the API
  # packages are compiled (type-checked), never KEDA's scalers: seconds, once the
  # modules are downloaded.
  local want="cgen-v$CONTROLLER_TOOLS_VERSION-gateway-v$GATEWAY_API_VERSION-keda-v$KEDA_VERSION-annotated"
  if under_lock crds_built "$want"; then
    log "CRDs $want: cached in $bin/crds"; return
  fi
  if ! have controller-gen "v$CONTROLLER_TOOLS_VERSION"; then
    log "building controller-gen v$CONTROLLER_TOOLS_VERSION"
    GOBIN="$parts" go install -trimpath -ldflags "-s -w" \
      "sigs.k8s.io/controller-tools/cmd/controller-gen@v$CONTROLLER_TOOLS_VERSION"
    put_installed controller-gen
    stamp controller-gen "v$CONTROLLER_TOOLS_VERSION"
  fi
  local mod="$work/crds-$want" out="$work/crds-$want/out"
  rm -rf "$mod"; mkdir -p "$out"
  cat >"$mod/tools.go" <<'GO'
//go:build tools

// Package crds only names the API packages controller-gen reads.
package crds

import (
	_ "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	_ "sigs.k8s.io/gateway-api/apis/v1"
)
GO
  (cd "$mod" && go mod init deployplane.local/crds >/dev/null 2>&1 \
    && go get "sigs.k8s.io/gateway-api@v$GATEWAY_API_VERSION" \
      "github.com/kedacore/keda/v2@v$KEDA_VERSION" && go mod tidy)
  log "generating CRDs: gateway-api v$GATEWAY_API_VERSION, keda v$KEDA_VERSION"
  (cd "$mod" && "$bin/controller-gen" crd paths=sigs.k8s.io/gateway-api/apis/v1 \
    paths=github.com/kedacore/keda/v2/apis/keda/v1alpha1 output:crd:dir="$out")
  # The apiserver refuses a CRD of a *.k8s.io group without the API-review annotation;
  # the Gateway API's own generator (a wrapper of controller-tools) adds it and the
  # bundle version, with the values the module itself declares (pkg/consts).
  local consts link
  consts="$(cd "$mod" && go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api)/pkg/consts/consts.go"
  link=$(sed -n 's/.*ApprovalLink = "\(.*\)".*/\1/p' "$consts")
  [ -n "$link" ] || { echo "no ApprovalLink in $consts" >&2; exit 1; }
  sed -i "s#^  annotations:\$#  annotations:\n    api-approved.kubernetes.io: $link\n    gateway.networking.k8s.io/bundle-version: v$GATEWAY_API_VERSION#" \
    "$out"/gateway.networking.k8s.io_*.yaml
  # What the data plane uses, and what those refer to (an HTTPRoute's parent Gateway);
  # each file replaced whole (a reader applies the directory), any other one removed.
  local crds=(gateway.networking.k8s.io_gatewayclasses gateway.networking.k8s.io_gateways
    gateway.networking.k8s.io_httproutes keda.sh_scaledobjects
    keda.sh_triggerauthentications keda.sh_clustertriggerauthentications) crd file
  mkdir -p "$bin/crds"
  for crd in "${crds[@]}"; do
    cp "$out/$crd.yaml" "$bin/crds/.$crd.yaml.part"
    mv -f "$bin/crds/.$crd.yaml.part" "$bin/crds/$crd.yaml"
  done
  for file in "$bin"/crds/*.yaml; do
    [[ " ${crds[*]} " == *" $(basename "$file" .yaml) "* ]] || rm -f "$file"
  done
  echo "$want" >"$bin/crds/.stamp.part"
  mv -f "$bin/crds/.stamp.part" "$bin/crds/.stamp"
}

build_kube_score() {
  # The workload linter platform teams run (github.com/zegl/kube-score), which the tests
  # run on the chart and on the data plane's rendered objects. A plain `go install` of the
  # pinned version; its own stamp, so it never moves the Kubernetes binaries' cache.
  local want="v$KUBE_SCORE_VERSION"
  if have kube-score "$want"; then log "kube-score $want: cached"; return; fi
  log "building kube-score $want"
  GOBIN="$bin" go install -trimpath \
    -ldflags "-s -w -X main.version=$want -X main.commit=deployplane-gomod" \
    "github.com/zegl/kube-score/cmd/kube-score@$want"
  stamp kube-score "$want"
}

# kube-score builds on its own (`build.sh kube-score`) and with `all`; a case of its own so
# other additions to the cases below and above merge cleanly.
case "${1:-all}" in
  kube-score) build_kube_score; log "kube-score ready in $bin"; exit 0 ;;
esac

# The two test checkers and the CRDs build on their own (`build.sh kstatus|promql|crds`); this
# stays apart from the Kubernetes tools' `case` below so additions there merge cleanly.
case "${1:-all}" in
  kstatus|promql|crds) "build_$1"; log "$1 ready in $bin"; exit 0 ;;
esac

build_helm() {
  # "-k8s" in the stamp: built with the Kubernetes version flags of helm's own Makefile,
  # so `helm template` reports the right .Capabilities.KubeVersion (v1.20 otherwise).
  local want="v$HELM_VERSION-k8s"
  if have helm "$want"; then log "helm $want: cached"; return; fi
  local gomod client_go k8s_major k8s_minor flags=""
  gomod=$(cd "$work" && go mod download -json "helm.sh/helm/v3@v$HELM_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  client_go=$(sed -n 's#^[[:space:]]*k8s\.io/client-go v0\.\([0-9]*\)\..*#\1#p' "$gomod" | head -1)
  k8s_major=1; k8s_minor=$client_go
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    flags+=" -X $pkg.k8sVersionMajor=$k8s_major -X $pkg.k8sVersionMinor=$k8s_minor"
  done
  log "building helm v$HELM_VERSION (Kubernetes capabilities v$k8s_major.$k8s_minor)"
  GOBIN="$parts" go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION $flags" \
    "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION"
  put_installed helm
  stamp helm "$want"
}

build_node() {
  # The dev cluster's real node (operator/deployplane/devcluster/realnode): kubelet and
  # kube-proxy from the same wrapper module as kube-apiserver (tools/k8s/node/cmd),
  # containerd, its runc shim and ctr from their Go module (CGO_ENABLED=0, as upstream's
  # static release), and the pause binary compiled from kubernetes' own
  # build/pause/linux/pause.c. runc and the CNI plugins come from Debian
  # (tools/node.sh); CoreDNS for cluster DNS from tools/k8s/coredns; the volume
  # provisioner from its Go module. Each has its stamp.
  local want="v$K8S_VERSION"
  if ! { have kubelet "$want" && have kube-proxy "$want"; }; then
    local mod="$work/node-$K8S_VERSION"
    rm -rf "$mod"; mkdir -p "$mod"; cp -r "$here/node/cmd" "$mod/"
    kube_wrapper_module "$mod"
    for tool in kubelet kube-proxy; do
      if have "$tool" "$want"; then continue; fi
      log "building $tool $want"
      (cd "$mod" && go build -trimpath -ldflags "-s -w $ldflags" -o "$(part "$tool")" "./cmd/$tool")
      put "$tool"
      stamp "$tool" "$want"
    done
  else
    log "kubelet, kube-proxy $want: cached"
  fi
  local ctrd="v$CONTAINERD_VERSION"
  if have containerd "$ctrd" && have containerd-shim-runc-v2 "$ctrd" && have ctr "$ctrd"; then
    log "containerd $ctrd: cached"
  else
    log "building containerd $ctrd (containerd, containerd-shim-runc-v2, ctr)"
    local pkg=github.com/containerd/containerd/v2
    (cd "$work" && GOBIN="$parts" CGO_ENABLED=0 go install -trimpath \
      -ldflags "-s -w -X $pkg/version.Version=$ctrd -X $pkg/version.Revision=deployplane-gomod" \
      "$pkg/cmd/containerd@$ctrd" "$pkg/cmd/containerd-shim-runc-v2@$ctrd" "$pkg/cmd/ctr@$ctrd")
    put_installed containerd containerd-shim-runc-v2 ctr
    for tool in containerd containerd-shim-runc-v2 ctr; do stamp "$tool" "$ctrd"; done
  fi
  local src
  src="$(cd "$work" && go mod download -json "k8s.io/kubernetes@$want" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')/build/pause/linux/pause.c"
  local pause_want
  pause_want="$want-$(sha1sum "$src" | cut -c1-12)"
  if have pause "$pause_want"; then log "pause $pause_want: cached"; else
    log "compiling pause from $src"
    gcc -Os -static -Wall -Werror -DVERSION="$want" -o "$(part pause)" "$src"
    strip "$(part pause)"
    put pause
    stamp pause "$pause_want"
  fi
  build_coredns
  build_local_path
}

build_local_path() {
  # rancher's local-path-provisioner (realnode/storage.py): its go.mod has no replaces,
  # so a plain `go install` of the pinned version works.
  local want="v$LOCAL_PATH_PROVISIONER_VERSION"
  if have local-path-provisioner "$want"; then log "local-path-provisioner $want: cached"; return; fi
  log "building local-path-provisioner $want"
  (cd "$work" && GOBIN="$bin" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w -X main.VERSION=$want" \
    "github.com/rancher/local-path-provisioner@$want")
  stamp local-path-provisioner "$want"
}

build_coredns() {
  # Cluster DNS for the real node: tools/k8s/coredns/main.go, CoreDNS with only the
  # plugins the node's Corefile uses; the stamp carries the source's hash.
  local want
  want="v$COREDNS_VERSION-$(sha1sum "$here/coredns/main.go" | cut -c1-12)"
  if have coredns "$want"; then log "coredns $want: cached"; return; fi
  local mod="$work/coredns-$COREDNS_VERSION"
  rm -rf "$mod"; mkdir -p "$mod"; cp "$here/coredns/main.go" "$mod/"
  (cd "$mod" && go mod init deployplane.local/coredns >/dev/null 2>&1 \
    && go get "github.com/coredns/coredns@v$COREDNS_VERSION" && go mod tidy)
  log "building coredns v$COREDNS_VERSION"
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$(part coredns)" .)
  put coredns
  stamp coredns "$want"
}

build_kwok() {
  # kwok simulates nodes and kubelets for the dev cluster's workloads. Its go.mod has
  # no local replaces, so a plain `go install` of the pinned version works; its stamp
  # carries the version, so bumping KWOK_VERSION rebuilds only kwok.
  local want="v$KWOK_VERSION"
  if have kwok "$want"; then log "kwok $want: cached"; return; fi
  log "building kwok $want"
  GOBIN="$parts" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$want"
  put_installed kwok
  stamp kwok "$want"
}

case "${1:-all}" in
  path) echo "$bin"; exit 0 ;;
  all) build_etcd; build_kube; build_helm; build_kwok ;;
  etcd|kube|helm|kwok|node) "build_$1" ;;
  *) echo "usage: $0 [all|etcd|kube|helm|kwok|node|kstatus|promql|crds|kube-score|path]" >&2; exit 2 ;;
esac
# ... and part of `all`.
if [ "${1:-all}" = all ]; then build_kstatus; build_promql; build_crds; build_kube_score; fi
log "tools ready in $bin ($(du -sh "$bin" | cut -f1))"
