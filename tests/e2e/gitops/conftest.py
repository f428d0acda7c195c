"""The GitOps tier's fixtures (`make e2e-gitops`, DEPLOYPLANE_E2E_GITOPS=1): the session's
cluster comes from tests/e2e/conftest.py's `gitops_session`; each test gets an emulator
of its own and the operator on the host watching the test's namespace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from tests.support import gitops
from tests.support.gitops_harness import Applications, Flux, gitops_emulator
from tests.support.operator_harness import Emulator, kopf_operator, operator_env

from deployplane.devcluster.gitops import GitOpsInfo


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    """A control plane per test: the tests reuse the example's deployment names, and a
    deleted deployment's name stays taken (its tracing project stays, as on the service)."""
    emu = gitops_emulator(tmp_path / "emulator").start()
    yield emu
    emu.stop()


@pytest.fixture
def info(gitops_session: gitops.Session) -> GitOpsInfo:
    return gitops_session.info


@pytest.fixture
def apps(k8s_api: client.ApiClient, info: GitOpsInfo) -> Applications:
    return Applications(k8s_api, info)


@pytest.fixture
def flux(k8s_api: client.ApiClient, info: GitOpsInfo) -> Flux:
    return Flux(k8s_api, info)


@pytest.fixture
def operator(namespace: str, emulator: Emulator, kubeconfig: Path, crds: None) -> Iterator[Any]:
    with kopf_operator(namespace, operator_env(emulator, kubeconfig)) as runner:
        yield runner
