"""Deleting through the GitOps tools never deadlocks: Flux pruning a deleted
Kustomization and Argo CD deleting an Application with its resources (cascade) delete
the API key Secret, the ControlPlaneConnection, the Listener and the AgentDeployments
at once, and both end with nothing left in the cluster or on the control plane.

Each deletion happens while no operator runs, then an operator starts: no key is
cached anywhere, so the finalizations need the Secret itself, which outlives them
(the operator's in-use protection, `deployplane.io/secret-protection`). Skipped unless
DEPLOYPLANE_E2E_GITOPS=1 (`make e2e-gitops`; tests/support/gitops.py).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.e2e.gitops.harness import (
    AGD,
    CONN,
    LST,
    Applications,
    Flux,
    all_ready,
    app_status,
    application,
    example,
    gone,
    push_agents,
    verdict,
    wait_until,
)
from tests.e2e.operator_harness import Emulator, Resources, kopf_operator, operator_env
from tests.support import gitops
from tests.support.gitops import GitRepo

from deployplane.devcluster.gitops import GitOpsInfo
from deployplane.devcluster.manifests import Applier

pytestmark = pytest.mark.skipif(gitops.skip_reason() is not None, reason=str(gitops.skip_reason()))

BOTS = ("support-bot", "triage-bot")
KEY_SECRET = "control-plane-key"
PROTECTION = "deployplane.io/secret-protection"


@contextlib.contextmanager
def operator_of(namespace: str, emulator: Emulator, kubeconfig: Path) -> Iterator[Any]:
    with kopf_operator(namespace, operator_env(emulator, kubeconfig)) as runner:
        yield runner
    assert runner.exit_code == 0, runner.output[-3000:]


def key_secret(core: client.CoreV1Api, namespace: str) -> client.V1Secret | None:
    try:
        return core.read_namespaced_secret(KEY_SECRET, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def protected(core: client.CoreV1Api, namespace: str) -> bool:
    secret = key_secret(core, namespace)
    return secret is not None and PROTECTION in (secret.metadata.finalizers or [])


def terminating(resources: Resources, plural: str, name: str) -> bool:
    obj = resources.get(plural, name)
    return bool(obj and obj["metadata"].get("deletionTimestamp"))


def held_while_no_operator_runs(
    resources: Resources, core: client.CoreV1Api, namespace: str
) -> None:
    """Every resource being deleted waits on our finalizer, and the Secret they need
    is still there (being deleted, held by its protection)."""
    named = [(AGD, bot) for bot in BOTS] + [(LST, "dev-cluster"), (CONN, "default")]
    for plural, name in named:
        wait_until(
            f"{plural}/{name} being deleted",
            functools.partial(terminating, resources, plural, name),
        )
    secret = wait_until(
        "the key Secret being deleted",
        lambda: (
            (s := key_secret(core, namespace)) is not None
            and s.metadata.deletion_timestamp is not None
            and s
        ),
    )
    assert PROTECTION in (secret.metadata.finalizers or [])


def all_gone(resources: Resources, core: client.CoreV1Api, namespace: str) -> None:
    named = [(AGD, bot) for bot in BOTS] + [(LST, "dev-cluster"), (CONN, "default")]
    for plural, name in named:
        wait_until(f"{plural}/{name} deleted", functools.partial(gone, resources, plural, name))
    wait_until("the key Secret deleted", lambda: key_secret(core, namespace) is None)


def test_a_deleted_flux_kustomization_prunes_everything_in_any_order(
    flux: Flux,
    resources: Resources,
    emulator: Emulator,
    info: GitOpsInfo,
    namespace: str,
    applier: Applier,
    kubeconfig: Path,
    crds: None,
    k8s_api: client.ApiClient,
    tmp_path: Path,
) -> None:
    core = client.CoreV1Api(k8s_api)
    repo = GitRepo(info, namespace, tmp_path / "repo")
    push_agents(repo, emulator)
    source, kustomization = example("flux.yaml")
    for doc in (source, kustomization):
        doc["metadata"]["name"] = namespace
    source["spec"]["url"] = repo.url
    kustomization["spec"]["sourceRef"]["name"] = namespace
    kustomization["spec"]["targetNamespace"] = namespace
    with operator_of(namespace, emulator, kubeconfig):
        applier.apply([source, kustomization])
        wait_until("every AgentDeployment Ready", lambda: all_ready(resources, BOTS))
        assert all(len(emulator.deployments_named(bot)) == 1 for bot in BOTS)
        assert protected(core, namespace), "the key Secret carries the protection"

    flux.kustomizations.delete(namespace)
    wait_until("the Kustomization deleted", lambda: flux.kustomizations.get(namespace) is None)
    flux.sources.delete(namespace)
    held_while_no_operator_runs(resources, core, namespace)

    with operator_of(namespace, emulator, kubeconfig):
        all_gone(resources, core, namespace)
    assert [emulator.deployments_named(bot) for bot in BOTS] == [[], []]
    listed = emulator.http().get("/v2/listeners", params={"limit": 100}).json()
    assert [x for x in listed["resources"] if x["compute_id"] == repo.name] == []


def test_an_argo_cd_application_deleted_with_its_resources_leaves_nothing(
    apps: Applications,
    resources: Resources,
    emulator: Emulator,
    info: GitOpsInfo,
    namespace: str,
    kubeconfig: Path,
    crds: None,
    k8s_api: client.ApiClient,
    tmp_path: Path,
) -> None:
    core = client.CoreV1Api(k8s_api)
    repo = GitRepo(info, namespace, tmp_path / "repo")
    first = push_agents(repo, emulator)
    body = application(namespace, repo.url, namespace, "argocd-application.yaml")
    with operator_of(namespace, emulator, kubeconfig):
        apps.custom.create_namespaced_custom_object(
            apps.group, apps.version, apps.namespace, apps.plural, body
        )
        wait_until(
            "Synced and Healthy",
            lambda: verdict(apps.get(namespace)) == ("Synced", "Healthy", first),
            show=app_status(apps, namespace),
        )
        assert protected(core, namespace), "the key Secret carries the protection"

    # Cascade: Argo CD's resources finalizer deletes every resource of the Application,
    # the Secret with them, and waits for them before the Application goes.
    apps.delete(namespace)
    held_while_no_operator_runs(resources, core, namespace)
    assert apps.get(namespace) is not None, "the Application waits for its resources"

    with operator_of(namespace, emulator, kubeconfig):
        all_gone(resources, core, namespace)
        wait_until("the Application deleted", lambda: apps.get(namespace) is None)
    assert [emulator.deployments_named(bot) for bot in BOTS] == [[], []]
    listed = emulator.http().get("/v2/listeners", params={"limit": 100}).json()
    assert [x for x in listed["resources"] if x["compute_id"] == repo.name] == []
