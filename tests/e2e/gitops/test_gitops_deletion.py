"""Deleting through the GitOps tools never deadlocks: Flux pruning a deleted
Kustomization deletes the API key Secret, the ControlPlaneConnection, the Listener and
the AgentDeployments at once, Argo CD deleting an Application with its resources
(cascade) deletes them wave by wave, and both end with nothing left in the cluster or
on the control plane.

Each deletion starts while no operator runs, then an operator starts: no key is cached
anywhere, so the finalizations need the Secret itself, which Flux has deleted with the
rest and which outlives them (the operator's in-use protection,
`deployplane.io/secret-protection`). Skipped unless DEPLOYPLANE_E2E_GITOPS=1 (`make
e2e-gitops`; tests/support/gitops.py).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support import gitops
from tests.support.gitops import GitRepo
from tests.support.gitops_harness import (
    AGD,
    CONN,
    LST,
    Applications,
    Flux,
    app_status,
    application,
    flux_objects,
    gone,
    push_agents,
    ready_condition,
    verdict,
    wait_until,
)
from tests.support.operator_harness import Emulator, Resources, kopf_operator, operator_env

from deployplane.devcluster.gitops import GitOpsInfo
from deployplane.devcluster.manifests import Applier

pytestmark = pytest.mark.skipif(gitops.skip_reason() is not None, reason=str(gitops.skip_reason()))

PROTECTION = "deployplane.io/secret-protection"


@contextlib.contextmanager
def operator_of(namespace: str, emulator: Emulator, kubeconfig: Path) -> Iterator[Any]:
    with kopf_operator(namespace, operator_env(emulator, kubeconfig)) as runner:
        yield runner
    assert runner.exit_code == 0, runner.output[-3000:]


@dataclass(frozen=True)
class Synced:
    """What the tool applied to the test's namespace, as read back from the cluster
    (so the test holds whatever names the example gives them)."""

    named: list[tuple[str, str]]
    """(plural, name) of every AgentDeployment, Listener and ControlPlaneConnection."""
    secrets: list[str]
    """The API key Secrets the connections name."""
    deployments: list[str]
    """The AgentDeployments' names on the control plane."""

    @classmethod
    def read(cls, resources: Resources) -> Synced:
        named = [
            (plural, obj["metadata"]["name"])
            for plural in (AGD, LST, CONN)
            for obj in resources.list_all(plural)
        ]
        secrets = sorted({c["spec"]["apiKeySecretRef"]["name"] for c in resources.list_all(CONN)})
        deployments = [
            obj["spec"].get("name") or obj["metadata"]["name"] for obj in resources.list_all(AGD)
        ]
        return cls(named, secrets, deployments)


def read_secret(core: client.CoreV1Api, namespace: str, name: str) -> client.V1Secret | None:
    try:
        return core.read_namespaced_secret(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def protected(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    secret = read_secret(core, namespace, name)
    return secret is not None and PROTECTION in (secret.metadata.finalizers or [])


def terminating(resources: Resources, plural: str, name: str) -> bool:
    obj = resources.get(plural, name)
    return bool(obj and obj["metadata"].get("deletionTimestamp"))


def synced_and_protected(resources: Resources, core: client.CoreV1Api) -> Synced:
    synced = Synced.read(resources)
    assert {plural for plural, _ in synced.named} == {AGD, LST, CONN}, synced
    assert synced.secrets, "a connection with an API key Secret"
    for name in synced.secrets:
        assert protected(core, resources.namespace, name), f"Secret {name} protected"
    return synced


def held_while_no_operator_runs(
    resources: Resources, core: client.CoreV1Api, synced: Synced
) -> None:
    """Every resource being deleted waits on our finalizer, and the Secrets they need
    are still there (being deleted, held by their protection)."""
    for plural, name in synced.named:
        wait_until(
            f"{plural}/{name} being deleted",
            functools.partial(terminating, resources, plural, name),
        )
    for name in synced.secrets:
        secret = wait_until(
            f"Secret {name} being deleted",
            functools.partial(being_deleted, core, resources.namespace, name),
        )
        assert PROTECTION in (secret.metadata.finalizers or [])


def being_deleted(core: client.CoreV1Api, namespace: str, name: str) -> client.V1Secret | None:
    """The Secret once it is being deleted (held by a finalizer), else None."""
    secret = read_secret(core, namespace, name)
    return secret if secret is not None and secret.metadata.deletion_timestamp else None


def secret_gone(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    return read_secret(core, namespace, name) is None


def all_gone(resources: Resources, core: client.CoreV1Api, synced: Synced) -> None:
    for plural, name in synced.named:
        wait_until(f"{plural}/{name} deleted", functools.partial(gone, resources, plural, name))
    for name in synced.secrets:
        wait_until(
            f"Secret {name} deleted",
            functools.partial(secret_gone, core, resources.namespace, name),
        )


def nothing_on_the_control_plane(emulator: Emulator, synced: Synced, compute_id: str) -> None:
    assert {name: emulator.deployments_named(name) for name in synced.deployments} == {
        name: [] for name in synced.deployments
    }
    listed = emulator.http().get("/v2/listeners", params={"limit": 100}).json()
    assert [x for x in listed["resources"] if x["compute_id"] == compute_id] == []


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
    with operator_of(namespace, emulator, kubeconfig):
        applier.apply(flux_objects(namespace, repo.url, namespace))
        wait_until(
            "the Kustomization Ready",
            lambda: ready_condition(flux.kustomizations.get(namespace)).get("status") == "True",
        )
        synced = synced_and_protected(resources, core)
        assert all(len(emulator.deployments_named(name)) == 1 for name in synced.deployments)

    # Prune: Flux deletes every object it applied, the Secret with them.
    flux.kustomizations.delete(namespace)
    held_while_no_operator_runs(resources, core, synced)

    with operator_of(namespace, emulator, kubeconfig):
        all_gone(resources, core, synced)
    wait_until("the Kustomization deleted", lambda: flux.kustomizations.get(namespace) is None)
    flux.sources.delete(namespace)
    nothing_on_the_control_plane(emulator, synced, repo.name)


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
        synced = synced_and_protected(resources, core)

    # Cascade: Argo CD's resources finalizer deletes the Application's resources wave by
    # wave, the last wave first (the AgentDeployments), each waited for before the next,
    # and the Application goes last.
    apps.delete(namespace)
    for plural, name in synced.named:
        if plural == AGD:
            wait_until(
                f"{plural}/{name} being deleted",
                functools.partial(terminating, resources, plural, name),
            )
    assert apps.get(namespace) is not None, "the Application waits for its resources"

    with operator_of(namespace, emulator, kubeconfig):
        all_gone(resources, core, synced)
        wait_until("the Application deleted", lambda: apps.get(namespace) is None)
    nothing_on_the_control_plane(emulator, synced, repo.name)
