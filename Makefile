# deployplane: every install step lives here, so a fresh machine needs nothing by hand.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)

.PHONY: help venv tools postgres lint unit test demo demo-down bench clean

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(STAMP): pyproject.toml
	@echo "== python environment ($(VENV))"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $@

venv: $(STAMP) ## create the virtualenv and install deployplane with dev extras

tools: ## build kube-apiserver, -controller-manager, -scheduler, kubectl, etcd, helm, kwok from Go modules (cached in ~/.cache/deployplane)
	@bash tools/k8s/build.sh all

postgres: ## PostgreSQL server binaries for the emulator's tests (apt-get when missing)
	@bash tools/postgres.sh ensure

lint: venv ## ruff and mypy --strict
	@echo "== ruff"; $(VENV)/bin/ruff check operator tests bench
	@$(VENV)/bin/ruff format --check operator tests bench
	@echo "== mypy --strict"; $(VENV)/bin/mypy

unit: venv postgres ## unit and integration tests only (no cluster)
	@$(PY) -m pytest -q tests/unit tests/integration

test: venv tools postgres lint ## the whole suite: lint, unit, integration, e2e on a real kube-apiserver
	@echo "== pytest"; DEPLOYPLANE_TOOLS_BIN=$$(bash tools/k8s/build.sh path) $(PY) -m pytest -q -p no:cacheprovider

demo: venv tools ## the local demo: Kubernetes API + emulator + operator; examples reach DEPLOYED
	@DEPLOYPLANE_TOOLS_BIN=$$(bash tools/k8s/build.sh path) $(VENV)/bin/deployplane demo up

bench: venv tools ## benchmarks (emulator, then 1,000 AgentDeployments on the dev cluster); ends with the BENCH lines
	@DEPLOYPLANE_TOOLS_BIN=$$(bash tools/k8s/build.sh path) $(PY) -m bench

demo-down: venv ## stop everything the demo started
	@$(VENV)/bin/deployplane demo down

clean: ## remove local state (not the tool cache)
	rm -rf $(VENV) .deployplane .mypy_cache .ruff_cache .pytest_cache
