# deployplane: every install step lives here, so a fresh machine needs nothing by hand.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)

.PHONY: help venv shells tools node-tools previous-image gitops-tools e2e-real-node e2e-gitops e2e-dev-tier bench-gitops postgres image images docs-cli lint unit e2e e2e-existing test demo demo-down bench bench-scale clean

help: ## list targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | awk '!seen[$$0]++'

$(STAMP): pyproject.toml
	@echo "== python environment ($(VENV))"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $@

venv: $(STAMP) ## create the virtualenv and install deployplane with dev extras

tools: ## build kube-apiserver, -controller-manager, -scheduler, kubectl, etcd, helm, kwok, the kstatus/PromQL checkers and kube-score from Go modules (cached in ~/.cache/deployplane)
	@bash tools/k8s/build.sh all

node-tools: tools ## the real node's binaries: kubelet, kube-proxy, containerd (Go modules), pause (gcc), runc and CNI plugins (apt-get)
	@bash tools/node.sh ensure
	@bash tools/k8s/build.sh node

gitops-tools: ## Argo CD v3.5.3 (and the kustomize v5.8.1 it runs) and Flux's source- and kustomize-controller v1.9.6 from Go modules (tools/gitops/build.sh; about 25 min the first time, cached), redis, git and jq (apt-get)
	@bash tools/gitops/build.sh all

shells: ## zsh and fish, whose completion scripts the tests run for real (apt-get when missing)
	@bash tools/shells.sh ensure

postgres: ## PostgreSQL server binaries for the emulator's tests (apt-get when missing)
	@bash tools/postgres.sh ensure

# Images without a container engine (tools/images/): buildah builds the Dockerfile on a
# base made from Debian packages by mmdebstrap (both installed by apt-get when missing);
# OCI archives in ~/.cache/deployplane/images, cached by content.
image: ## build the Dockerfile as deployplane:dev without a Docker engine (buildah; cached by content): ~/.cache/deployplane/images/deployplane-dev.tar
	@$(PYTHON) tools/images/build.py app

# The previous release's image (tests/support/previousrelease.py pins it): built from its
# own checkout by its own tools/images/build.py, for the real-node tier's upgrade test.
previous-image: venv ## the previous release's deployplane image, from its own checkout (cached by content), for the upgrade test
	@$(PY) -m tests.support.previousrelease image

images: ## make image, plus the data plane's PostgreSQL (pgvector) and Redis images from Debian packages and the agent servers' base (langgraph-api 0.16.7, in-memory runtime)
	@$(PYTHON) tools/images/build.py all

docs-cli: venv ## regenerate docs/cli.md's command reference from the commands' --help (a unit test fails when it drifts)
	@$(PY) -m deployplane.cli.docgen

lint: venv ## ruff and mypy --strict
	@echo "== ruff"; $(VENV)/bin/ruff check operator tests bench
	@$(VENV)/bin/ruff format --check operator tests bench
	@echo "== mypy --strict"; $(VENV)/bin/mypy

# Every tier runs its tests in a shuffled order (pytest-random-order: the modules, and the
# tests of each module), so that an order dependence shows in ordinary runs; SEED=n repeats
# the order of a run that printed seed n. One seed per `make` run, passed on (exported) to
# the makes it starts (tools/lanes.sh, tools/e2e-existing.sh).
ifeq ($(origin SEED),undefined)
SEED := $(shell echo $$((RANDOM * 32768 + RANDOM)))
endif
export SEED
RANDOM_ORDER = --random-order-bucket=module --random-order-seed=$(SEED)
# Each tier of `make test` names the skips it allows (tests/support/tiers.py): a run lists
# its skips by reason and fails on any other (tests/support/skipcheck.py).
SKIPS = --skips-allowed=
comma := ,
# `make test` runs the real-node tier too, which needs root: without root it refuses to
# start unless REAL_NODE=0 opts out; then that tier does not run (a line says so) and
# what needs root or the real node's tools may skip in the others (without-real-node).
IS_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo 1)
WITHOUT_REAL_NODE = $(if $(filter 0,$(REAL_NODE)),$(comma)without-real-node)
ifneq ($(filter test,$(MAKECMDGOALS)),)
ifeq ($(IS_ROOT)$(filter 0,$(REAL_NODE)),)
$(error make test runs the real-node tier, which needs root: run it as root, or `make test REAL_NODE=0` to leave that tier out)
endif
endif

# The unit and integration tests run on PYTEST_WORKERS processes (pytest-xdist; each
# worker its own PostgreSQL and emulators, on free ports): 3 min 35 s instead of 6 min 7 s
# on this 2-core machine.
PYTEST_WORKERS ?= 2
# The e2e tier on the dev cluster runs on E2E_WORKERS processes (pytest-xdist): each
# worker's session starts a dev cluster of its own (free ports, its own temporary state
# and namespaces), so nothing is shared between them; whole modules go to one worker
# (--dist loadfile) so a module's emulator and CRDs are set up once. The tier mostly waits
# on apiservers and controllers, so a second worker overlaps those waits.
E2E_WORKERS ?= 2
unit: venv postgres shells ## unit and integration tests only (no cluster); PYTEST_WORKERS processes (2)
	@$(PY) -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) $(RANDOM_ORDER) tests/unit tests/integration

# `make e2e KUBECONFIG=path` runs on that cluster instead of starting the dev cluster. Only
# a KUBECONFIG given on make's command line counts: one merely exported in the shell
# never points the tests at whatever cluster it names. INSTALL=helm also installs the
# chart (image E2E_IMAGE); E2E_ARGS goes to pytest (e.g. E2E_ARGS='-k argocd').
E2E_ARGS ?=
ifeq ($(origin KUBECONFIG),command line)
e2e: venv ## end-to-end tests; KUBECONFIG=path: on that cluster (INSTALL=helm, E2E_IMAGE, E2E_ARGS)
	@echo "== e2e on the existing cluster of $(KUBECONFIG)"
	@bash tools/k8s/build.sh kstatus >/dev/null
	@DEPLOYPLANE_E2E_KUBECONFIG="$(KUBECONFIG)" DEPLOYPLANE_E2E_INSTALL="$(INSTALL)" \
	  DEPLOYPLANE_E2E_IMAGE="$(E2E_IMAGE)" $(PY) -m pytest -q -p no:cacheprovider $(RANDOM_ORDER) tests/e2e $(E2E_ARGS)
else
e2e: venv tools postgres ## end-to-end tests; KUBECONFIG=path: on that cluster (INSTALL=helm, E2E_IMAGE, E2E_ARGS)
	@echo "== e2e on the dev cluster"
	@DEPLOYPLANE_TOOLS_BIN=$$(bash tools/k8s/build.sh path) $(PY) -m pytest -q -p no:cacheprovider $(RANDOM_ORDER) tests/e2e $(E2E_ARGS)
endif

# The e2e tier of `make test` on the dev cluster: E2E_WORKERS processes, whole modules to
# one worker; it ends with its 25 slowest tests, so every run says where the time goes.
e2e-dev-tier: venv tools postgres gitops-tools ## the e2e tier of make test: the whole e2e suite on E2E_WORKERS dev clusters, judged on its skips
	@echo "== pytest: e2e on the dev cluster ($(E2E_WORKERS) workers, random order, seed $(SEED))"
	@DEPLOYPLANE_TOOLS_BIN=$$(bash tools/k8s/build.sh path) \
	  DEPLOYPLANE_GITOPS_TOOLS=$$(bash tools/gitops/build.sh path) $(PY) -m pytest -q -p no:cacheprovider -n $(E2E_WORKERS) --dist loadfile --durations=25 $(RANDOM_ORDER) \
	  $(SKIPS)e2e$(WITHOUT_REAL_NODE) tests/e2e

# The e2e suite's existing-cluster path (`make e2e KUBECONFIG=...`) against a dev cluster
# with kwok nodes started as a separate process and stopped by a trap (tools/e2e-existing.sh).
# E2E_EXISTING: a pytest -k selection (E2E_EXISTING= runs the whole suite, 4.5 min or more).
# The default takes the tests that use what differs between the two kinds of cluster
# (tests/support/e2ecluster.py): the whole data plane (vendor too) and workloads modules
# (nodes and kwok detected, ServiceAccount kubeconfigs from the kubeconfig's CA), the CRDs the
# session installs, kubectl/helm from ClientTools, ServiceAccount tokens, kstatus, the
# audit-log and dev-cluster-only skips, and the session's leftover check.
E2E_EXISTING ?= test_dataplane or test_devcluster or test_demo or test_examples_are_accepted \
  or test_argocd_health_follows or test_kstatus_and_argocd or test_steady_state_makes_no \
  or test_kubectl_apply_k or test_chart_service_account or test_operator_with_only_the_chart \
  or test_external_docker_with_listener_ref or test_helm_install_creates
# The real-node tier: one dev cluster with a real node (kubelet, containerd, kube-proxy in
# a sandbox; needs root) shared by its modules (tests/support/realnode.py), with the images
# of `make images` imported: the node itself (test_realnode.py, whose teardown tests run
# last), the data plane's workloads as real containers (test_dataplane.py),
# `langgraph deploy --remote` to images the emulator builds (test_realnode_langgraph.py),
# `helm upgrade` from the previous release (test_realnode_upgrade.py), and first, before
# the tier's node starts, `make demo REAL_NODE=1` on a node of its own
# (test_demo_realnode.py).
REAL_NODE_TESTS ?= tests/e2e/test_demo_realnode.py tests/e2e/test_dataplane.py \
  tests/e2e/test_realnode_helm.py tests/e2e/test_realnode_server.py \
  tests/e2e/test_realnode_langgraph.py tests/e2e/test_realnode_upgrade.py \
  tests/e2e/test_realnode.py
# One real node per machine (fixed veth and namespace names): a second tier started
# meanwhile waits for this lock instead of failing on the first one's node.
REAL_NODE_LOCK ?= $(HOME)/.cache/deployplane/realnode.lock
e2e-real-node: venv node-tools images previous-image ## e2e on a real node (part of make test): pods, logs, exec, port-forward, Services, egress guard, the data plane's real containers, clean teardown (root)
	@echo "== e2e on a real node (random order, seed $(SEED))"
	@mkdir -p $(dir $(REAL_NODE_LOCK))
	@flock $(REAL_NODE_LOCK) env DEPLOYPLANE_E2E_REAL_NODE=1 DEPLOYPLANE_TOOLS_BIN=$$(bash tools/k8s/build.sh path) \
	  DEPLOYPLANE_E2E_AGENT_IMAGE=docker.io/library/deployplane-e2e-agent \
	  DEPLOYPLANE_POSTGRES_IMAGE=docker.io/library/deployplane-postgres:17-pgvector \
	  DEPLOYPLANE_REDIS_IMAGE=docker.io/library/deployplane-redis:7.0 \
	  $(PY) -m pytest -q -p no:cacheprovider --durations=10 $(RANDOM_ORDER) $(SKIPS)real-node \
	  $(REAL_NODE_TESTS) $(E2E_ARGS)

# The GitOps tier: one dev cluster started by `deployplane dev cluster up --gitops
# --workloads` (Argo CD, Flux, the git server beside it), Applications and Kustomizations
# of the examples/gitops/ manifests, judged by the controllers themselves; its last test
# stops the cluster with `down` and checks that no process is left.
GITOPS_TESTS ?= tests/e2e/gitops/
e2e-gitops: venv tools gitops-tools ## e2e with Argo CD and Flux (part of make test): sync waves, health, self-heal, prune, cascade deletion, the chart as an Application
	@echo "== e2e with Argo CD and Flux (random order, seed $(SEED))"
	@DEPLOYPLANE_E2E_GITOPS=1 DEPLOYPLANE_TOOLS_BIN=$$(bash tools/k8s/build.sh path) \
	  $(PY) -m pytest -q -p no:cacheprovider --durations=10 $(RANDOM_ORDER) $(SKIPS)gitops \
	  $(GITOPS_TESTS) $(E2E_ARGS)

e2e-existing: venv tools ## the e2e suite once on a cluster it did not start (a dev cluster with kwok nodes, stopped afterwards)
	@echo "== e2e on an existing cluster: a dev cluster with kwok nodes started as another process (random order, seed $(SEED))"
	@bash tools/e2e-existing.sh "$(E2E_EXISTING)"

# Every image is built (or found cached) by the `images` prerequisite before any pytest
# run: a first build belongs to the build, not to a test's timeout (on a slow machine a
# cold image build inside a fixture outlasted pytest-timeout's 300 s); so are the GitOps
# tools (`gitops-tools`).
# `make test` ends with the tiers that need clusters, in two lanes side by side
# (tools/lanes.sh; each mostly waits on its own clusters): the e2e tier on the dev cluster
# then the GitOps tier in one, the real-node tier, the longest, then the existing-cluster
# path in the other (REAL_NODE=0 leaves the real-node tier out). The real node's tools and
# the previous release's image are built before, so that no first build runs beside a tier.
# DEPLOYPLANE_GITOPS_TOOLS names the GitOps tools just built: the tests that need Argo CD's
# own binary (its verdict on the chart's health check) fail without it rather than skip.
test: venv tools postgres shells $(if $(IS_ROOT),images) gitops-tools lint ## the whole suite: lint, unit, integration, e2e on a real kube-apiserver, then side by side the GitOps tier and e2e on a cluster it did not start, and the real-node tier (root; REAL_NODE=0 leaves it out); random order, SEED=n repeats one
	@$(if $(filter 0,$(REAL_NODE)),,$(MAKE) --no-print-directory node-tools previous-image)
	@echo "== make test: random order, seed $(SEED) (make test SEED=$(SEED) repeats it)"
	@echo "== pytest: unit and integration ($(PYTEST_WORKERS) workers)"; DEPLOYPLANE_TOOLS_BIN=$$(bash tools/k8s/build.sh path) \
	  DEPLOYPLANE_GITOPS_TOOLS=$$(bash tools/gitops/build.sh path) $(PY) -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --durations=10 $(RANDOM_ORDER) \
	  $(SKIPS)unit$(WITHOUT_REAL_NODE) tests/unit tests/integration
	@bash tools/lanes.sh e2e-dev-tier+e2e-gitops $(if $(filter 0,$(REAL_NODE)),,e2e-real-node+)e2e-existing
	@$(if $(filter 0,$(REAL_NODE)),echo "== not run (REAL_NODE=0): the real-node tier: $(REAL_NODE_TESTS)$(comma) and what the tiers above list as skipped for without-real-node")
	@echo "== make test passed (random order, seed $(SEED))"

# REAL_NODE=1: the same demo on a real node (root): the chart installed with the image of
# `make images`, the operator and listener agent as pods, the emulator on the host
# building real images, the workloads as real containers (operator/deployplane/demo/realnode.py).
# GITOPS=1: the example AgentDeployments reach the cluster through Argo CD from the cluster's git server.
REAL_NODE ?=
GITOPS ?=
demo: venv tools $(if $(filter 1,$(REAL_NODE)),node-tools images) $(if $(filter 1,$(GITOPS)),gitops-tools) ## the local demo: Kubernetes API + emulator + operator; examples reach DEPLOYED (REAL_NODE=1: on a real node, as pods; GITOPS=1: through Argo CD)
	@DEPLOYPLANE_TOOLS_BIN=$$(bash tools/k8s/build.sh path) $(VENV)/bin/deployplane demo up \
	  $(if $(filter 1,$(REAL_NODE)),--real-node) $(if $(filter 1,$(GITOPS)),--gitops)

bench: venv tools ## benchmarks (emulator; the CLI, whole processes; four floor and operator pairs in alternating order, on 1,000 AgentDeployments; data plane; the in-memory server's restart on 1,000 threads); ends with the BENCH lines. BENCH_PROFILE=dir: profiles
	@DEPLOYPLANE_TOOLS_BIN=$$(bash tools/k8s/build.sh path) $(PY) -m bench

bench-scale: venv tools ## the operator at 10,000 AgentDeployments (with Listeners and a connection) against its 1,000, then two label shards taking them over (~30-45 min); ends with the BENCH lines
	@DEPLOYPLANE_TOOLS_BIN=$$(bash tools/k8s/build.sh path) $(PY) -m bench.scale

bench-gitops: venv tools gitops-tools ## Argo CD and Flux on the dev cluster: a commit to Healthy / Ready against a direct apply, their controllers' memory; ends with the BENCH lines
	@DEPLOYPLANE_TOOLS_BIN=$$(bash tools/k8s/build.sh path) $(PY) -m bench.gitops

demo-down: venv ## stop everything the demo started
	@$(VENV)/bin/deployplane demo down

clean: ## remove local state (not the tool cache)
	rm -rf $(VENV) .deployplane .mypy_cache .ruff_cache .pytest_cache
