"""ControlPlaneConnection on a real kube-apiserver, against the emulator in strict mode
with two workspaces (each its own API key): which connection each resource uses, the
connection's own Ready/Synced from one cheap read, a refused key healed by fixing its
Secret, and what Flux's kstatus and Argo CD's health.lua say of a connection."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from tests.support import gotools
from tests.support.argocd import argocd_health_all
from tests.support.existing_cluster import ENV_KUBECONFIG
from tests.support.operator_fixtures import docker, events_for
from tests.support.operator_harness import (
    API_KEY,
    REPO,
    SECOND_API_KEY,
    SECOND_WORKSPACE,
    Emulator,
    Resources,
    condition,
    is_true,
    kopf_operator,
    operator_env,
    ready_for_generation,
)

from deployplane.devcluster.manifests import Applier

AGD, CPC = "agentdeployments", "controlplaneconnections"


@pytest.fixture
def operator(
    namespace: str, emulator: Emulator, kubeconfig: Path, resources: Resources
) -> Iterator[Any]:
    with kopf_operator(namespace, operator_env(emulator, kubeconfig)) as runner:
        yield runner
        # While the operator runs, so that its finalizers come off: a connection left
        # with one would hold the CRD's deletion (and every later module) for good.
        delete_all(resources)
    assert runner.exit_code == 0, runner.output[-3000:]
    for key in (API_KEY, SECOND_API_KEY, "wrong-key-5d1c"):
        assert key not in runner.output, "an API key reached the operator's log"


def delete_all(resources: Resources) -> None:
    for plural in (AGD, CPC):
        for obj in resources.list_all(plural):
            resources.delete(plural, obj["metadata"]["name"])
    for plural in (AGD, CPC):
        for obj in resources.list_all(plural):
            name = obj["metadata"]["name"]
            resources.wait(plural, name, lambda o: o is None, what=f"{name} deleted")


def connection(name: str, url: str, secret: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "ControlPlaneConnection",
        "metadata": {"name": name},
        "spec": {"url": url, "apiKeySecretRef": {"name": secret, "key": "apiKey"}, **spec},
    }


def writes(emulator: Emulator) -> int:
    """Requests other than GET that reached the control plane so far."""
    arrived: dict[str, int] = emulator.stats()["arrived"]
    return sum(n for route, n in arrived.items() if not route.startswith("GET "))


def test_each_resource_uses_its_connection_else_the_namespace_default_else_the_operators(
    operator: Any,
    resources: Resources,
    emulator: Emulator,
    k8s_api: client.ApiClient,
    namespace: str,
) -> None:
    resources.put_secret("second-key", {"apiKey": SECOND_API_KEY})
    before = writes(emulator)
    second = connection("second", emulator.url, "second-key", tenantId=SECOND_WORKSPACE)
    resources.create(CPC, second)
    ready = resources.wait(CPC, "second", ready_for_generation, what="connection Ready")
    assert ready is not None
    assert ready["status"]["url"] == emulator.url
    assert "accepted the connection" in condition(ready, "Ready")["message"]
    assert writes(emulator) == before, "checking a connection writes nothing"

    resources.create(AGD, docker("via-ref", connectionRef={"name": "second"}))
    resources.create(AGD, docker("via-operator"))  # no default yet: the operator's own
    for name in ("via-ref", "via-operator"):
        resources.wait(AGD, name, ready_for_generation, what=f"{name} Ready")
    resources.create(CPC, {**connection("default", emulator.url, "second-key")})
    resources.wait(CPC, "default", ready_for_generation, what="default connection Ready")
    resources.create(AGD, docker("via-default"))
    resources.wait(AGD, "via-default", ready_for_generation, what="via-default Ready")

    in_second = {
        name: [d["id"] for d in emulator.deployments_named(name, SECOND_API_KEY)]
        for name in ("via-ref", "via-operator", "via-default")
    }
    in_first = {name: len(emulator.deployments_named(name)) for name in in_second}
    assert {name: len(ids) for name, ids in in_second.items()} == {
        "via-ref": 1,
        "via-operator": 0,
        "via-default": 1,
    }
    assert in_first == {"via-ref": 0, "via-operator": 1, "via-default": 0}
    via_ref = resources.get(AGD, "via-ref")
    assert via_ref is not None
    assert via_ref["status"]["deploymentId"] == in_second["via-ref"][0]

    # A connection in use stays until no resource uses it (each can still be deleted
    # through it), and deleting it deletes nothing on the control plane.
    resources.delete(CPC, "second")
    resources.wait(
        CPC,
        "second",
        lambda o: bool(o and o["metadata"].get("deletionTimestamp")),
        what="deleting, held",
    )
    time.sleep(2)
    assert resources.get(CPC, "second") is not None, "deleted while via-ref uses it"
    (held,) = [e for e in events_for(k8s_api, namespace, "second") if e.reason == "InUse"]
    assert "still used by agentdeployment/via-ref (1)" in held.message
    resources.delete(AGD, "via-ref")
    resources.wait(AGD, "via-ref", lambda o: o is None, what="via-ref deleted through it")
    assert emulator.deployments_named("via-ref", SECOND_API_KEY) == []
    before = writes(emulator)
    resources.wait(CPC, "second", lambda o: o is None, what="connection deleted once unused")
    assert writes(emulator) == before


def test_a_refused_key_is_not_ready_and_a_fixed_secret_heals_it(
    operator: Any, resources: Resources, emulator: Emulator
) -> None:
    resources.put_secret("team-key", {"apiKey": "wrong-key-5d1c"})
    resources.create(CPC, connection("team", emulator.url, "team-key"))
    refused = resources.wait(
        CPC,
        "team",
        lambda o: condition(o, "Ready").get("reason") == "Unauthorized",
        what="Ready=False, Unauthorized",
    )
    assert refused is not None
    assert condition(refused, "Ready")["status"] == "False"
    assert condition(refused, "Stalled")["status"] == "True"
    assert "the control plane refused the API key" in condition(refused, "Ready")["message"]
    assert "wrong-key-5d1c" not in str(refused)
    assert gotools.kstatus(refused).status == "Failed"

    # A resource naming it is refused the same way (the key is the connection's).
    resources.create(AGD, docker("on-team", connectionRef={"name": "team"}))
    resources.wait(
        AGD,
        "on-team",
        lambda o: condition(o, "Synced").get("reason") == "Unauthorized",
        what="the resource refused too",
    )
    assert emulator.deployments_named("on-team") == []

    # The fix is in the Secret: no spec changes, and the connection heals (rechecked
    # every 30 s while refused).
    started = time.monotonic()
    resources.put_secret("team-key", {"apiKey": API_KEY})
    healed = resources.wait(CPC, "team", is_true("Ready"), within=90, what="healed")
    assert healed is not None
    assert not condition(healed, "Stalled"), "Stalled is removed once Ready"
    assert time.monotonic() - started < 90
    assert gotools.kstatus(healed).status == "Current"
    # ... and wakes the resource it had refused: no edit, no 10-minute resync.
    resources.wait(AGD, "on-team", ready_for_generation, what="the resource healed too")
    assert len(emulator.deployments_named("on-team")) == 1
    # Argo CD's own verdict on both (its binary: the test is skipped where it is not built).
    judged = argocd_health_all([refused, healed])
    assert [h.status for h in judged] == ["Degraded", "Healthy"], judged


@pytest.fixture
def without_connection_crd(k8s_api: client.ApiClient, crds: None) -> Iterator[None]:
    """The ControlPlaneConnection CRD deleted for the test (an operator upgraded before
    its CRDs: `helm upgrade` leaves crds/ alone), and applied again afterwards. Only on
    the dev cluster the session started: never a CRD of a cluster it was handed."""
    if os.environ.get(ENV_KUBECONFIG):
        pytest.skip(f"existing cluster ({ENV_KUBECONFIG}): the test deletes a CRD")
    extensions = client.ApiextensionsV1Api(k8s_api)
    name = "controlplaneconnections.deployplane.io"
    custom = client.CustomObjectsApi(k8s_api)
    # Whatever connection an earlier test left behind must not hold the deletion.
    for obj in custom.list_cluster_custom_object("deployplane.io", "v1alpha1", CPC)["items"]:
        meta = obj["metadata"]
        custom.patch_namespaced_custom_object(
            "deployplane.io",
            "v1alpha1",
            meta["namespace"],
            CPC,
            meta["name"],
            {"metadata": {"finalizers": None}},
            _content_type="application/merge-patch+json",
        )
    extensions.delete_custom_resource_definition(name)
    deadline = time.monotonic() + 60
    while name in {c.metadata.name for c in extensions.list_custom_resource_definition().items}:
        assert time.monotonic() < deadline, f"{name} still there"
        time.sleep(0.2)
    try:
        yield
    finally:
        crd = yaml.safe_load((REPO / "crds" / f"{name}.yaml").read_text())
        Applier(k8s_api).apply([crd])


def test_without_the_connection_crd_the_other_kinds_still_work(
    without_connection_crd: None,
    resources: Resources,
    emulator: Emulator,
    kubeconfig: Path,
    namespace: str,
) -> None:
    """Kopf's index of a kind the cluster does not serve holds nothing back: the other
    kinds reconcile (through the operator's own connection)."""
    with kopf_operator(namespace, operator_env(emulator, kubeconfig)) as runner:
        resources.create(AGD, docker("before-crds"))
        resources.wait(AGD, "before-crds", ready_for_generation, what="Ready")
    assert runner.exit_code == 0, runner.output[-3000:]
    assert len(emulator.deployments_named("before-crds")) == 1
