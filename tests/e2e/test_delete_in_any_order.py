"""Deleting in any order on a real kube-apiserver (its namespace controller and garbage
collector run in the dev cluster's kube-controller-manager), with the operator and the
emulator in strict mode: a whole namespace deleted at once (the connection, its API key
Secret, a Listener and the AgentDeployments on it) ends with nothing left in the
cluster or on the control plane; the Secret carries the operator's protection while the
connection names it; and a deletion that cannot be made says so in kubectl (Ready=False
DeletionBlocked, naming what is missing, and an Event) and goes once it can."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support.operator_fixtures import docker, events_for, listener
from tests.support.operator_harness import (
    API_KEY,
    Emulator,
    Resources,
    condition,
    kopf_operator,
    operator_env,
    ready_for_generation,
)

pytestmark = pytest.mark.e2e

AGD, CPC, LST = "agentdeployments", "controlplaneconnections", "listeners"
PROTECTION = "deployplane.io/secret-protection"


@contextlib.contextmanager
def operator_of(namespace: str, emulator: Emulator, kubeconfig: Path) -> Iterator[Any]:
    """The operator with no connection of its own: every resource goes through the
    namespace's `default` ControlPlaneConnection and its API key Secret."""
    env = {**operator_env(emulator, kubeconfig), "DEPLOYPLANE_CONTROL_PLANE_URL": ""}
    env["DEPLOYPLANE_API_KEY"] = ""
    with kopf_operator(namespace, env) as runner:
        yield runner
    assert runner.exit_code == 0, runner.output[-3000:]
    assert API_KEY not in runner.output, "the API key reached the operator's log"


def default_connection(emulator: Emulator) -> dict[str, Any]:
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "ControlPlaneConnection",
        "metadata": {"name": "default"},
        "spec": {"url": emulator.url, "apiKeySecretRef": {"name": "cp-key", "key": "apiKey"}},
    }


def terminating(obj: dict[str, Any] | None) -> bool:
    return bool(obj and obj["metadata"].get("deletionTimestamp"))


def listeners_with(emulator: Emulator, compute_id: str) -> list[dict[str, Any]]:
    page = emulator.http().get("/v2/listeners", params={"limit": 100}).json()
    return [item for item in page["resources"] if item["compute_id"] == compute_id]


def secret(core: client.CoreV1Api, namespace: str, name: str) -> client.V1Secret | None:
    try:
        return core.read_namespaced_secret(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def gone(read: Any, within: float = 180.0, what: str = "gone") -> None:
    """Poll until `read()` is None. The bound only stops a hang; it asserts no speed."""
    deadline = time.monotonic() + within
    last = read()
    while last is not None and time.monotonic() < deadline:
        time.sleep(0.5)
        last = read()
    assert last is None, f"{what}: still there: {str(last)[:2000]}"


def test_a_namespace_deleted_at_once_leaves_nothing_in_the_cluster_or_the_control_plane(
    resources: Resources,
    emulator: Emulator,
    k8s_api: client.ApiClient,
    kubeconfig: Path,
    namespace: str,
) -> None:
    """Everything at once: the namespace controller deletes the Secret as readily as the
    resources, and each thing a resource needs to be finalized outlives it (the Secret
    is seen being deleted, held by its protection, while the connection waits for the
    Listener and the Listener for the AgentDeployments)."""
    core = client.CoreV1Api(k8s_api)
    compute_id = f"cluster-{namespace}"
    names = [f"bot-{i}" for i in range(3)]
    with operator_of(namespace, emulator, kubeconfig):
        resources.put_secret("cp-key", {"apiKey": API_KEY})
        resources.create(CPC, default_connection(emulator))
        resources.create(LST, listener("cluster", compute_id))
        for name in names:
            body = docker(name, sourceConfig={"listenerRef": {"name": "cluster"}})
            resources.create(AGD, body)
        for name in names:
            resources.wait(AGD, name, ready_for_generation, what=f"{name} Ready")
        assert all(len(emulator.deployments_named(name)) == 1 for name in names)
        assert len(listeners_with(emulator, compute_id)) == 1
        # The key is protected while the connection names it, and the connection says so.
        key = secret(core, namespace, "cp-key")
        assert key is not None
        assert PROTECTION in (key.metadata.finalizers or [])
        assert (key.metadata.labels or {}).get(PROTECTION) == "true"
        conn = resources.wait(CPC, "default", ready_for_generation, what="connection Ready")
        assert conn is not None
        assert conn["status"]["protectedSecret"] == "cp-key"

        core.delete_namespace(namespace)
        held = being_deleted(core, namespace, "cp-key")
        assert held is not None, "the key went before the resources that need it"
        assert PROTECTION in (held.metadata.finalizers or [])
        gone(lambda: secret(core, namespace, "cp-key"), what="the namespace emptied")

        def namespace_left() -> client.V1Namespace | None:
            try:
                return core.read_namespace(namespace)
            except ApiException as exc:
                if exc.status == 404:
                    return None
                raise

        gone(namespace_left, what=f"namespace {namespace}")
    assert [emulator.deployments_named(name) for name in names] == [[], [], []]
    assert listeners_with(emulator, compute_id) == []


def being_deleted(core: client.CoreV1Api, namespace: str, name: str) -> client.V1Secret | None:
    """The Secret once it is being deleted, or None if it went first (without its
    protection it goes at once). The bound only stops a hang."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        found = secret(core, namespace, name)
        if found is None or found.metadata.deletion_timestamp is not None:
            return found
        time.sleep(0.25)
    raise AssertionError(f"Secret {name}: never deleted")


def test_a_deletion_that_cannot_reach_the_control_plane_says_why_and_goes_once_it_can(
    resources: Resources,
    emulator: Emulator,
    k8s_api: client.ApiClient,
    kubeconfig: Path,
    namespace: str,
) -> None:
    """The API key Secret deleted from under the operator (its protection taken off by
    hand, as an operator of an earlier version never put it on), and the resource
    deleted while no operator runs (no key cached): the resource says Ready=False
    DeletionBlocked naming the Secret, with one Warning Event, instead of Ready=True;
    the Secret created again, it goes."""
    core = client.CoreV1Api(k8s_api)
    with operator_of(namespace, emulator, kubeconfig):
        resources.put_secret("cp-key", {"apiKey": API_KEY})
        resources.create(CPC, default_connection(emulator))
        resources.create(AGD, docker("bot"))
        resources.wait(AGD, "bot", ready_for_generation, what="bot Ready")
    unprotect = {"metadata": {"finalizers": None, "labels": {PROTECTION: None}}}
    core.patch_namespaced_secret("cp-key", namespace, unprotect)
    core.delete_namespaced_secret("cp-key", namespace)
    gone(lambda: secret(core, namespace, "cp-key"), what="the Secret deleted")
    resources.delete(AGD, "bot")

    with operator_of(namespace, emulator, kubeconfig):
        blocked = resources.wait(
            AGD,
            "bot",
            lambda o: condition(o, "Ready").get("reason") == "DeletionBlocked",
            what="Ready=False DeletionBlocked",
        )
        ready, synced = condition(blocked, "Ready"), condition(blocked, "Synced")
        assert ready["status"] == "False"
        missing = "API key Secret cp-key of ControlPlaneConnection default not found"
        assert missing in ready["message"]
        assert (synced["status"], synced["reason"]) == ("False", "DependencyNotReady")
        assert len(emulator.deployments_named("bot")) == 1, "nothing deleted yet"
        warned = wait_for_events(k8s_api, namespace, "bot", "DeletionBlocked")
        assert [e.type for e in warned] == ["Warning"]

        resources.put_secret("cp-key", {"apiKey": API_KEY})
        resources.wait(AGD, "bot", lambda o: o is None, within=180, what="deleted once it could")
        assert emulator.deployments_named("bot") == []
        # The connection, unused now, goes too, and lets go of its Secret as it does.
        resources.delete(CPC, "default")
        resources.wait(CPC, "default", lambda o: o is None, what="the connection deleted")
    key = secret(core, namespace, "cp-key")
    assert key is not None
    assert PROTECTION not in (key.metadata.finalizers or [])
    assert PROTECTION not in (key.metadata.labels or {})


def wait_for_events(
    k8s_api: client.ApiClient, namespace: str, name: str, reason: str
) -> list[client.CoreV1Event]:
    """The Events of `reason` about `name`, once there is one (they are posted in the
    background). The bound only stops a hang."""
    deadline = time.monotonic() + 60
    while True:
        found = [e for e in events_for(k8s_api, namespace, name) if e.reason == reason]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)
