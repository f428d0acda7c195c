"""The operator on a real kube-apiserver, against the emulator on loopback.

Each behaviour of the reconciliation protocol, observed the way a user would: through
the custom resources' status, Events, `kubectl wait`, and the control plane's state.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support.e2ecluster import E2ECluster
from tests.support.operator_fixtures import SECRET_VALUE, docker, events_for, listener, operator
from tests.support.operator_harness import (
    API_KEY,
    INTEGRATION,
    Emulator,
    OperatorProcess,
    Resources,
    condition,
    is_true,
    kopf_operator,
    operator_env,
    ready_for_generation,
)

from deployplane.reconcile.finalizer import FINALIZER
from deployplane.reconcile.marker import EXTERNAL_NAME_ANNOTATION
from deployplane.reconcile.schedule import RESYNC_ANNOTATION

__all__ = ["operator"]  # fixtures

AGD, LST = "agentdeployments", "listeners"


def create_marker(obj: dict[str, Any] | None) -> str | None:
    """The create marker on the object (the external-name annotation: the operator
    writes it, with its finalizer, before the first create call, and it stays)."""
    annotations = ((obj or {}).get("metadata") or {}).get("annotations") or {}
    marker: str | None = annotations.get(EXTERNAL_NAME_ANNOTATION)
    return marker


def test_external_docker_with_listener_ref_reaches_ready_and_kubectl_wait_works(
    operator: Any,
    resources: Resources,
    emulator: Emulator,
    dev_cluster: E2ECluster,
    namespace: str,
    k8s_api: client.ApiClient,
) -> None:
    compute_id = f"cluster-{namespace}"
    spec = docker("agent")
    spec["spec"]["sourceConfig"]["listenerRef"] = {"name": "edge"}
    spec["spec"]["sourceConfig"]["listenerConfig"] = {"k8sNamespace": "agents"}
    resources.create(AGD, spec)  # before its Listener exists: waits, then proceeds
    resources.wait(
        AGD, "agent", lambda o: condition(o, "Synced").get("reason") == "DependencyNotReady"
    )
    resources.create(LST, listener("edge", compute_id))

    kubectl = dev_cluster.tools.kubectl
    done = subprocess.run(
        [
            str(kubectl),
            "--kubeconfig",
            str(dev_cluster.kubeconfig),
            "-n",
            namespace,
            "wait",
            "--for=condition=Ready",
            "agentdeployment/agent",
            "--timeout=90s",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr

    obj = resources.get(AGD, "agent")
    assert obj is not None
    status = obj["status"]
    lst = resources.get(LST, "edge")
    assert lst is not None
    (dep,) = emulator.deployments_named("agent")
    assert status["deploymentId"] == dep["id"]
    assert dep["source_config"]["listener_id"] == lst["status"]["listenerId"]
    assert status["revision"]["status"] == "DEPLOYED"
    assert status["activeRevisionId"] == status["latestRevisionId"]
    assert status["observedGeneration"] == obj["metadata"]["generation"]
    assert "spec" in obj
    assert "deploymentId" not in obj["spec"]
    reasons = {e.reason for e in events_for(k8s_api, namespace, "agent")}
    assert {"Created", "Deployed"} <= reasons
    # The create is recorded (the id in the status): the marker stays, naming the
    # deployment it was created under (Crossplane's external-name), and says no more.
    assert create_marker(obj) == dep["name"]
    assert FINALIZER in obj["metadata"]["finalizers"]
    edge = resources.wait(LST, "edge", ready_for_generation, what="Ready")
    assert edge is not None
    assert create_marker(edge) == compute_id


def test_git_host_via_repository_reaches_ready_with_default_branch(
    operator: Any, resources: Resources, emulator: Emulator
) -> None:
    resources.put_secret("llm-keys", {"openai": SECRET_VALUE})
    resources.create(
        AGD,
        {
            "apiVersion": "deployplane.io/v1alpha1",
            "kind": "AgentDeployment",
            "metadata": {"name": "support-bot"},
            "spec": {
                "name": f"support-bot-{resources.namespace}",
                "source": "git_host",
                "sourceConfig": {
                    "integrationId": INTEGRATION,
                    "repository": {"owner": "acme", "name": "support-bot"},
                    "buildOnPush": False,
                },
                "sourceRevisionConfig": {"graphConfigPath": "langgraph.json"},
                "secrets": [
                    {
                        "name": "OPENAI_API_KEY",
                        "valueFrom": {"secretKeyRef": {"name": "llm-keys", "key": "openai"}},
                    }
                ],
            },
        },
    )
    obj = resources.wait(AGD, "support-bot", ready_for_generation, what="Ready")
    assert obj is not None
    revision = obj["status"]["revision"]
    assert revision["repoRef"] == "main"
    assert len(revision["repoCommitSha"]) == 40
    (dep,) = emulator.deployments_named(f"support-bot-{resources.namespace}")
    assert dep["source_config"]["repo_url"] == "https://git.example.com/acme/support-bot"
    assert [s["name"] for s in dep["secrets"]] == ["OPENAI_API_KEY"]
    assert SECRET_VALUE not in str(obj)


@pytest.fixture
def infra_namespace(k8s_api: client.ApiClient, namespace: str) -> Iterator[str]:
    """A second namespace for a shared Listener; the test's own gets the label team=a."""
    core = client.CoreV1Api(k8s_api)
    own = core.read_namespace(namespace)
    core.patch_namespace(namespace, {"metadata": {"labels": {"team": "a"}}})
    name = f"{namespace[:56]}-infra"
    labels = {k: v for k, v in (own.metadata.labels or {}).items() if k.startswith("deployplane")}
    core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=labels))
    )
    yield name
    core.delete_namespace(name)


def test_a_listener_shared_across_namespaces_only_where_it_allows_it(
    resources: Resources,
    emulator: Emulator,
    kubeconfig: Path,
    namespace: str,
    infra_namespace: str,
    k8s_api: client.ApiClient,
) -> None:
    """listenerRef {name, namespace} resolves a Listener of another namespace only when
    its allowedNamespaces admits the referring one; revoking it stalls new changes and
    never deletes or patches the running deployment."""
    infra = Resources(k8s_api, infra_namespace)
    shared = listener("shared", f"shared-{namespace}")
    rule = {"from": "Selector", "selector": {"matchLabels": {"team": "a"}}}
    shared["spec"]["allowedNamespaces"] = rule
    ref = {"name": "shared", "namespace": infra_namespace}
    with kopf_operator((namespace, infra_namespace), operator_env(emulator, kubeconfig)):
        infra.create(LST, shared)
        listener_obj = infra.wait(LST, "shared", ready_for_generation, what="Listener Ready")
        assert listener_obj is not None
        resources.create(AGD, docker("tenant", sourceConfig={"listenerRef": ref}))
        resources.wait(AGD, "tenant", ready_for_generation, what="Ready on the shared listener")
        (deployment,) = emulator.deployments_named("tenant")
        assert deployment["source_config"]["listener_id"] == listener_obj["status"]["listenerId"]

        infra.patch(
            LST, "shared", {"spec": {"allowedNamespaces": {"from": "Same", "selector": None}}}
        )
        patches = emulator.stats()["arrived"].get("PATCH /v2/deployments/{deployment_id}", 0)
        image = {"sourceRevisionConfig": {"imageUri": "registry.example.com/agent:2"}}
        resources.patch(AGD, "tenant", {"spec": image})
        refused = resources.wait(
            AGD,
            "tenant",
            lambda o: condition(o, "Synced").get("reason") == "ListenerNotAllowed",
            what="Synced=False, ListenerNotAllowed",
        )
        message = condition(refused, "Synced")["message"]
        assert f"listener {infra_namespace}/shared allows namespaces: Same" in message
        assert f"namespace {namespace} is not allowed" in message
        time.sleep(2)
        assert (
            emulator.stats()["arrived"].get("PATCH /v2/deployments/{deployment_id}", 0) == patches
        )
        assert [d["id"] for d in emulator.deployments_named("tenant")] == [deployment["id"]]

        # Same (the default) from the start: never created.
        resources.create(AGD, docker("outsider", sourceConfig={"listenerRef": ref}))
        resources.wait(
            AGD,
            "outsider",
            lambda o: condition(o, "Synced").get("reason") == "ListenerNotAllowed",
            what="refused",
        )
        assert emulator.deployments_named("outsider") == []
        for name in ("tenant", "outsider"):
            resources.delete(AGD, name)
            resources.wait(AGD, name, lambda o: o is None, what="deleted")
        infra.delete(LST, "shared")
        infra.wait(LST, "shared", lambda o: o is None, what="listener deleted")


def test_write_outputs_to_a_configmap_owned_by_the_resource(
    resources: Resources,
    emulator: Emulator,
    kubeconfig: Path,
    namespace: str,
    k8s_api: client.ApiClient,
) -> None:
    """spec.writeOutputsTo: the ConfigMap holds the id, URL, revisions and status,
    follows a new revision, is not written at steady state (resyncs every second here),
    moves on a rename (the old one stays, owned), is garbage-collected with the
    resource; a ConfigMap not ours is never touched, and written once it is gone."""
    core = client.CoreV1Api(k8s_api)

    def outputs(name: str) -> client.V1ConfigMap | None:
        try:
            return core.read_namespaced_config_map(name, namespace)
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    foreign = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="taken"), data={"x": "1"})
    core.create_namespaced_config_map(namespace, foreign)
    env = operator_env(emulator, kubeconfig, DEPLOYPLANE_RESYNC_INTERVAL="1")
    with kopf_operator(namespace, env):
        resources.create(AGD, docker("exported", writeOutputsTo={"configMapName": "exported-out"}))
        ready = resources.wait(AGD, "exported", ready_for_generation, what="Ready")
        assert ready is not None
        made = outputs("exported-out")
        assert made is not None
        status = ready["status"]
        assert made.data == {
            "deploymentId": status["deploymentId"],
            "url": status["url"],
            "latestRevisionId": status["latestRevisionId"],
            "activeRevisionId": status["activeRevisionId"],
            "revisionStatus": "DEPLOYED",
        }
        (owner,) = made.metadata.owner_references
        assert (owner.kind, owner.name, owner.uid, owner.controller) == (
            "AgentDeployment",
            "exported",
            ready["metadata"]["uid"],
            True,
        )
        assert owner.block_owner_deletion is True
        version = made.metadata.resource_version
        time.sleep(4)  # four resyncs: read, found equal, not written
        steady = outputs("exported-out")
        assert steady is not None
        assert steady.metadata.resource_version == version

        image = {"sourceRevisionConfig": {"imageUri": "registry.example.com/agent:2"}}
        resources.patch(AGD, "exported", {"spec": image})
        second = resources.wait(
            AGD,
            "exported",
            lambda o: (
                ready_for_generation(o)
                and o is not None
                and o["status"]["latestRevisionId"] != status["latestRevisionId"]
            ),
            what="Ready on a new revision",
        )
        assert second is not None
        rolled = outputs("exported-out")
        assert rolled is not None
        assert rolled.data["latestRevisionId"] == second["status"]["latestRevisionId"]
        assert rolled.data["activeRevisionId"] == second["status"]["activeRevisionId"]

        # Renamed: the new ConfigMap is written; the old one is left as it is, still
        # owned (garbage-collected with the resource, below).
        moved = {"writeOutputsTo": {"configMapName": "exported-out-2"}}
        resources.patch(AGD, "exported", {"spec": moved})
        deadline = time.monotonic() + 30
        while (renamed := outputs("exported-out-2")) is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert renamed is not None, "not written under the new name"
        assert renamed.data == rolled.data
        old = outputs("exported-out")
        assert old is not None
        assert old.metadata.resource_version == rolled.metadata.resource_version

        resources.create(AGD, docker("squatter", writeOutputsTo={"configMapName": "taken"}))
        refused = resources.wait(
            AGD,
            "squatter",
            lambda o: condition(o, "Synced").get("reason") == "ConfigMapNotOwned",
            what="Synced=False, ConfigMapNotOwned",
        )
        assert (
            "configmap taken exists and is not owned by agentdeployment squatter"
            in (condition(refused, "Synced")["message"])
        )
        untouched = outputs("taken")
        assert untouched is not None
        assert untouched.data == {"x": "1"}
        assert not untouched.metadata.owner_references
        # Once the name is free, a resync writes it and the resource is Synced again.
        core.delete_namespaced_config_map("taken", namespace)
        resources.wait(
            AGD,
            "squatter",
            lambda o: condition(o, "Synced").get("status") == "True",
            what="Synced again",
        )
        freed = outputs("taken")
        assert freed is not None
        assert freed.metadata.owner_references[0].name == "squatter"

        for name in ("exported", "squatter"):
            resources.delete(AGD, name)
            resources.wait(AGD, name, lambda o: o is None, what="deleted")
    deadline = time.monotonic() + 60
    gone = ("exported-out", "exported-out-2", "taken")
    while any(outputs(n) is not None for n in gone) and time.monotonic() < deadline:
        time.sleep(1)
    for name in ("exported-out", "exported-out-2", "taken"):
        assert outputs(name) is None, f"{name} not garbage-collected with its owner"


def test_write_outputs_refused_by_the_apiserver_is_synced_false_then_written(
    resources: Resources,
    emulator: Emulator,
    kubeconfig: Path,
    namespace: str,
    k8s_api: client.ApiClient,
) -> None:
    """A ConfigMap create the apiserver refuses (a ResourceQuota here: 403) does not
    fail the pass: the resource is Ready with its ids in status, Synced=False
    ConfigMapWriteFailed names the refusal; once the quota goes, a retry (the error
    backoff, not the ten-minute resync) writes the ConfigMap and Synced is True."""
    core = client.CoreV1Api(k8s_api)
    quota = client.V1ResourceQuota(
        metadata=client.V1ObjectMeta(name="no-configmaps"),
        spec=client.V1ResourceQuotaSpec(hard={"count/configmaps": "0"}),
    )
    core.create_namespaced_resource_quota(namespace, quota)
    # No quota controller runs on the dev cluster: the usage it would record is written
    # here, and the apiserver's ResourceQuota admission enforces it (403, exceeded quota).
    usage = {"hard": {"count/configmaps": "0"}, "used": {"count/configmaps": "0"}}
    core.patch_namespaced_resource_quota_status("no-configmaps", namespace, {"status": usage})
    with kopf_operator(namespace, operator_env(emulator, kubeconfig)):
        resources.create(AGD, docker("quota", writeOutputsTo={"configMapName": "quota-out"}))
        refused = resources.wait(
            AGD,
            "quota",
            lambda o: (
                ready_for_generation(o)
                and condition(o, "Synced").get("reason") == "ConfigMapWriteFailed"
            ),
            what="Ready, Synced=False ConfigMapWriteFailed",
        )
        assert refused is not None
        assert refused["status"]["deploymentId"]
        message = condition(refused, "Synced")["message"]
        assert f"POST /api/v1/namespaces/{namespace}/configmaps: 403" in message
        assert "exceeded quota: no-configmaps" in message
        core.delete_namespaced_resource_quota("no-configmaps", namespace)
        synced = resources.wait(
            AGD,
            "quota",
            lambda o: condition(o, "Synced").get("status") == "True",
            what="Synced once the quota is gone",
        )
        assert synced is not None
        written = core.read_namespaced_config_map("quota-out", namespace)
        assert written.data["deploymentId"] == synced["status"]["deploymentId"]
        resources.delete(AGD, "quota")
        resources.wait(AGD, "quota", lambda o: o is None, what="deleted")


def test_image_update_rolls_a_new_revision_and_status_follows(
    operator: Any, resources: Resources
) -> None:
    resources.create(AGD, docker("roller", "registry.example.com/agent:1"))
    first = resources.wait(AGD, "roller", ready_for_generation, what="Ready")
    assert first is not None
    resources.patch(
        AGD,
        "roller",
        {"spec": {"sourceRevisionConfig": {"imageUri": "registry.example.com/agent:2"}}},
    )
    resources.wait(
        AGD,
        "roller",
        lambda o: (
            condition(o, "Reconciling").get("status") == "True"
            or (o or {}).get("status", {}).get("revision", {}).get("imageUri")
            == "registry.example.com/agent:2"
        ),
    )
    second = resources.wait(
        AGD,
        "roller",
        lambda o: (
            ready_for_generation(o)
            and o is not None
            and o["status"]["revision"].get("imageUri") == "registry.example.com/agent:2"
        ),
        what="Ready on the new image",
    )
    assert second is not None
    assert second["status"]["latestRevisionId"] != first["status"]["latestRevisionId"]
    assert second["status"]["imageVersion"]


def test_failing_revision_goes_stalled_with_the_reason(
    operator: Any, resources: Resources, k8s_api: client.ApiClient, namespace: str
) -> None:
    resources.create(AGD, docker("doomed", "registry.example.com/agent:broken"))
    obj = resources.wait(AGD, "doomed", is_true("Stalled"), what="Stalled")
    stalled = condition(obj, "Stalled")
    assert stalled["reason"] == "DeployFailed"
    assert "DEPLOY_FAILED" in stalled["message"]
    # kubectl describe says why: the deploy log's last lines, read from the control plane
    tail = "Last log lines:\n"
    why = "Deploy failed (a configured failure rule of the emulator)"
    assert tail in stalled["message"]
    assert why in stalled["message"]
    assert condition(obj, "Ready")["status"] == "False"
    # Events are posted in the background after the pass (the recorder): wait for it.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        events = events_for(k8s_api, namespace, "doomed")
        warnings = [e for e in events if e.type == "Warning" and e.reason == "DeployFailed"]
        if warnings:
            break
        time.sleep(0.25)
    else:
        raise AssertionError(f"no DeployFailed Event: {[e.reason for e in events]}")
    assert len(warnings) == 1
    assert why in warnings[0].message
    assert warnings[0].reporting_component == "deployplane-operator"
    assert warnings[0].action == "Reconcile"


def test_a_second_agentdeployment_of_an_agent_and_environment_stalls_with_the_409(
    operator: Any,
    resources: Resources,
    emulator: Emulator,
    dev_cluster: E2ECluster,
    namespace: str,
) -> None:
    """spec.agent: the deployment is created through the agent and named by the control
    plane; a second AgentDeployment of the same agent and environment is Stalled with
    the service's 409, takes nothing, and deleting it deletes nothing of the first's."""
    agent_id = f"bot-{namespace}"  # the module's emulator is shared: an agent of its own
    agent = {"agentId": agent_id, "environment": "production"}
    resources.create(AGD, docker("first", agent=agent))
    first = resources.wait(AGD, "first", ready_for_generation, what="Ready")
    assert first is not None
    resources.create(AGD, docker("second", agent=agent))
    second = resources.wait(AGD, "second", is_true("Stalled"), what="Stalled")
    assert second is not None
    stalled = condition(second, "Stalled")
    assert stalled["reason"] == "Conflict"
    assert "This agent already has a deployment in this environment" in stalled["message"]
    assert first["status"]["deploymentId"] in stalled["message"]
    assert not second["status"].get("deploymentId")
    assert create_marker(second) is None  # taken off: no later pass adopts by it

    def agents_deployments() -> list[dict[str, Any]]:
        with emulator.http() as h:
            listed = h.get("/v2/deployments", params={"agent_id": agent_id})
            listed.raise_for_status()
        found: list[dict[str, Any]] = listed.json()["resources"]
        return found

    (made,) = agents_deployments()
    assert made["id"] == first["status"]["deploymentId"]
    assert made["name"] == f"{agent_id}-production"
    assert create_marker(first) == f"agent {agent_id} in production"
    shown = subprocess.run(
        [
            *(str(dev_cluster.tools.kubectl), "--kubeconfig", str(dev_cluster.kubeconfig)),
            *("-n", namespace, "get", "agentdeployments", "first", "--no-headers"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split()[:4] == ["first", "True", "True", "DEPLOYED"]
    assert shown.stdout.split()[4] == "production"  # the Environment column

    resources.delete(AGD, "second")
    resources.wait(AGD, "second", lambda o: o is None, what="finalized")
    (still,) = agents_deployments()
    assert (still["id"], still["status"]) == (made["id"], "READY")


def test_secret_rotation_rolls_a_new_revision(
    resources: Resources, emulator: Emulator, kubeconfig: Path, namespace: str, crds: None
) -> None:
    env = operator_env(emulator, kubeconfig, DEPLOYPLANE_RESYNC_INTERVAL="2")
    resources.put_secret("llm-keys", {"openai": SECRET_VALUE})
    with kopf_operator(namespace, env) as runner:
        resources.create(AGD, docker("rotating", secretsFrom=[{"secretRef": {"name": "llm-keys"}}]))
        first = resources.wait(AGD, "rotating", ready_for_generation, what="Ready")
        assert first is not None
        resources.put_secret("llm-keys", {"openai": SECRET_VALUE + "-rotated"})
        second = resources.wait(
            AGD,
            "rotating",
            lambda o: (
                ready_for_generation(o)
                and o is not None
                and o["status"]["latestRevisionId"] != first["status"]["latestRevisionId"]
            ),
            what="a new revision after rotation",
        )
        assert second is not None
    assert SECRET_VALUE not in runner.output


def test_delete_policy_deletes_on_the_control_plane_and_orphan_keeps(
    operator: Any, resources: Resources, emulator: Emulator
) -> None:
    resources.create(AGD, docker("gone"))
    resources.create(AGD, docker("kept", deletionPolicy="Orphan"))
    for name in ("gone", "kept"):
        resources.wait(AGD, name, ready_for_generation, what="Ready")
    assert len(emulator.deployments_named("gone")) == 1

    resources.delete(AGD, "gone")
    resources.delete(AGD, "kept")
    resources.wait(AGD, "gone", lambda o: o is None, what="finalized")
    resources.wait(AGD, "kept", lambda o: o is None, what="released")
    assert emulator.deployments_named("gone") == []
    assert len(emulator.deployments_named("kept")) == 1


def test_unknown_integration_stalls_with_the_control_planes_message_and_no_retry_storm(
    operator: Any, resources: Resources, emulator: Emulator
) -> None:
    resources.create(
        AGD,
        {
            "apiVersion": "deployplane.io/v1alpha1",
            "kind": "AgentDeployment",
            "metadata": {"name": "lost"},
            "spec": {
                "source": "git_host",
                "sourceConfig": {
                    "integrationId": "99999999-9999-4999-8999-999999999999",
                    "repository": {"owner": "acme", "name": "support-bot"},
                },
                "sourceRevisionConfig": {"graphConfigPath": "langgraph.json"},
            },
        },
    )
    obj = resources.wait(AGD, "lost", is_true("Stalled"), what="Stalled")
    stalled = condition(obj, "Stalled")
    assert stalled["reason"] == "NotFound"
    assert "99999999-9999-4999-8999-999999999999" in stalled["message"]

    def repo_calls() -> int:
        requests = emulator.stats()["requests"]
        return sum(sum(codes.values()) for route, codes in requests.items() if "/repos" in route)

    before = repo_calls()
    time.sleep(5)  # a window to observe that nothing retries; not a speed assertion
    assert repo_calls() == before


def test_pause_annotation_stops_reconciling_but_not_deletion(
    operator: Any, resources: Resources, emulator: Emulator
) -> None:
    body = docker("sleepy")
    body["metadata"]["annotations"] = {"deployplane.io/paused": "true"}
    resources.create(AGD, body)
    time.sleep(3)  # give a paused resource the chance to (wrongly) be created
    assert emulator.deployments_named("sleepy") == []
    resources.patch(
        AGD, "sleepy", {"metadata": {"annotations": {"deployplane.io/paused": "false"}}}
    )
    resources.wait(AGD, "sleepy", ready_for_generation, what="Ready after unpause")
    resources.patch(AGD, "sleepy", {"metadata": {"annotations": {"deployplane.io/paused": "true"}}})
    resources.delete(AGD, "sleepy")
    resources.wait(AGD, "sleepy", lambda o: o is None, what="deleted while paused")
    assert emulator.deployments_named("sleepy") == []


def test_steady_state_makes_no_kubernetes_writes(
    resources: Resources,
    emulator: Emulator,
    kubeconfig: Path,
    namespace: str,
    crds: None,
    dev_cluster: E2ECluster,
) -> None:
    env = operator_env(emulator, kubeconfig, DEPLOYPLANE_RESYNC_INTERVAL="1")
    with kopf_operator(namespace, env):
        resources.create(AGD, docker("calm"))
        resources.create(LST, listener("calm-listener", f"calm-{namespace}"))
        resources.wait(AGD, "calm", ready_for_generation, what="Ready")
        resources.wait(LST, "calm-listener", ready_for_generation, what="Ready")
        time.sleep(2)  # let the last writes land in the audit log
        since = dt.datetime.now(dt.UTC)
        time.sleep(5)  # five resync periods
        writes = dev_cluster.count_writes(since, namespace=namespace)
    assert writes == {}, writes


def test_the_resync_interval_annotation_sets_how_often_a_settled_resource_is_read(
    operator: Any, resources: Resources, emulator: Emulator
) -> None:
    """`0`: never read again while nothing changes; changing it wakes the resource, and
    `10` reads it every ten seconds (the operator's own interval here is 600 s)."""

    def reads() -> int:
        return int(emulator.stats()["arrived"].get("GET /v2/deployments/{deployment_id}", 0))

    body = docker("resync")
    body["metadata"]["annotations"] = {RESYNC_ANNOTATION: "0"}
    resources.create(AGD, body)
    resources.wait(AGD, "resync", ready_for_generation, what="Ready")
    time.sleep(1)
    before = reads()
    time.sleep(12)
    assert reads() == before, "a resource with resync-interval 0 was read again"
    resources.patch(AGD, "resync", {"metadata": {"annotations": {RESYNC_ANNOTATION: "10"}}})
    # Woken by the change, then every 10 s (+ up to 10% jitter): two reads within 15 s.
    # The count only grows, so the window ends as soon as it holds.
    deadline = time.monotonic() + 15
    while reads() - before < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert reads() - before >= 2


def ready_under(
    operator: OperatorProcess, resources: Resources, name: str, what: str
) -> dict[str, Any]:
    """Starts `operator`, waits until AgentDeployment `name` is Ready for its
    generation, stops it; the resource as it was then."""
    operator.start()
    try:
        ready = resources.wait(AGD, name, ready_for_generation, what=what)
    finally:
        operator.stop()
    assert ready is not None
    return ready


def test_operator_killed_between_post_and_status_write_creates_exactly_one(
    resources: Resources,
    emulator: Emulator,
    kubeconfig: Path,
    namespace: str,
    crds: None,
    tmp_path: Path,
) -> None:
    env = operator_env(emulator, kubeconfig)
    resources.create(AGD, docker("crashy"))
    emulator.set_faults(latency_ms=3000)  # hold the POST in flight long enough to kill
    first = OperatorProcess(namespace, env, tmp_path / "operator-1.log").start()
    try:
        obj = resources.wait(
            AGD,
            "crashy",
            lambda o: bool(create_marker(o)),
            what="create marker",
        )
        assert obj is not None
        first.kill9()
    finally:
        first.kill9()
        emulator.set_faults(latency_ms=0)
    assert "deploymentId" not in (obj.get("status") or {})

    second = OperatorProcess(namespace, env, tmp_path / "operator-2.log")
    ready = ready_under(second, resources, "crashy", "Ready after restart")
    deployments = emulator.deployments_named("crashy")
    assert len(deployments) == 1
    assert ready["status"]["deploymentId"] == deployments[0]["id"]
    log = (tmp_path / "operator-1.log").read_text() + (tmp_path / "operator-2.log").read_text()
    assert API_KEY not in log


def test_killed_after_the_post_among_150_namesakes_adopts_its_own_deployment(
    resources: Resources,
    emulator: Emulator,
    kubeconfig: Path,
    namespace: str,
    crds: None,
    tmp_path: Path,
) -> None:
    """150 other deployments whose names contain this one's (so finding it by name takes
    name_contains and a second page); the operator's POST is performed but its answer
    held back by the fault proxy, and the operator is killed -9 before it can write the
    id. Restarted, it adopts the deployment it created and never POSTs again."""
    name = f"adopt-{namespace}"[:40]
    with emulator.http() as h:
        for i in range(150):
            body = {
                "name": f"{name}-other-{i:03d}",
                "source": "external_docker",
                "source_config": {},
                "source_revision_config": {"image_uri": "registry.example.com/other:1"},
                "secrets": [],
            }
            assert h.post("/v2/deployments", json=body).status_code == 201
    assert emulator.proxy is not None
    posts_before = emulator.stats()["arrived"]["POST /v2/deployments"]

    env = operator_env(emulator, kubeconfig)
    resources.create(AGD, docker(name))
    emulator.proxy.hold("POST", r"^/v2/deployments$", 60)
    first = OperatorProcess(namespace, env, tmp_path / "operator-1.log").start()
    try:
        # Performed on the control plane, while the answer is still held from the operator.
        deadline = time.monotonic() + 90
        while not emulator.deployments_named(name):
            assert time.monotonic() < deadline, "the operator's POST never arrived"
            time.sleep(0.2)
        first.kill9()
    finally:
        first.kill9()
        emulator.proxy.clear_holds()
    obj = resources.get(AGD, name)
    assert obj is not None
    assert create_marker(obj) == name
    assert FINALIZER in obj["metadata"]["finalizers"]
    assert "deploymentId" not in (obj.get("status") or {})

    # Adopted, the deployment is DEPLOYED already: the pass that records the id also
    # says Ready.
    second = OperatorProcess(namespace, env, tmp_path / "operator-2.log")
    ready = ready_under(second, resources, name, "Ready after restart")
    (dep,) = emulator.deployments_named(name)
    assert ready["status"]["deploymentId"] == dep["id"]
    assert "createPending" not in ready["status"]
    assert "deploymentId" in ready["status"]  # the id supersedes the marker on the object
    assert create_marker(ready) == name  # which stays, saying no more
    # exactly one POST by the operator, the one killed: the restart adopted, never created
    assert emulator.stats()["arrived"]["POST /v2/deployments"] == posts_before + 1


def test_a_status_lost_while_the_operator_was_down_is_recovered_by_the_external_name(
    resources: Resources,
    emulator: Emulator,
    kubeconfig: Path,
    namespace: str,
    crds: None,
    k8s_api: client.ApiClient,
    tmp_path: Path,
) -> None:
    """A restore from a backup keeps metadata but not the status subresource. The
    operator, down meanwhile, comes back to a Ready resource whose status is empty: the
    external-name annotation that stayed on the object makes it look the deployment up
    by name and adopt it, where without it the create would be refused as a name taken."""
    env = operator_env(emulator, kubeconfig)
    resources.create(AGD, docker("restored"))
    first = OperatorProcess(namespace, env, tmp_path / "operator-1.log")
    ready = ready_under(first, resources, "restored", "Ready")
    assert create_marker(ready) == "restored"
    dep_id = ready["status"]["deploymentId"]
    posts_before = emulator.stats()["arrived"]["POST /v2/deployments"]
    client.CustomObjectsApi(k8s_api).patch_namespaced_custom_object_status(
        "deployplane.io", "v1alpha1", namespace, AGD, "restored", {"status": None}
    )
    lost = resources.get(AGD, "restored")
    assert lost is not None
    assert not (lost.get("status") or {}).get("deploymentId")

    second = OperatorProcess(namespace, env, tmp_path / "operator-2.log")
    back = ready_under(second, resources, "restored", "Ready again")
    assert back["status"]["deploymentId"] == dep_id
    assert [d["id"] for d in emulator.deployments_named("restored")] == [dep_id]
    assert emulator.stats()["arrived"]["POST /v2/deployments"] == posts_before
    reasons = {e.reason for e in events_for(k8s_api, namespace, "restored")}
    assert "Adopted" in reasons


def resource_version(resources: Resources, plural: str, name: str) -> str:
    obj = resources.get(plural, name)
    assert obj is not None
    return str(obj["metadata"]["resourceVersion"])


def left_alone(resources: Resources, plural: str, *names: str) -> None:
    """Nothing writes the resources (status, annotations) over a few seconds: their
    resourceVersions stay put (Events are other objects). Several names share one
    window: each is watched over the whole of it."""
    time.sleep(2)  # the writes that made them Ready land
    before = {name: resource_version(resources, plural, name) for name in names}
    time.sleep(5)
    for name in names:
        assert resource_version(resources, plural, name) == before[name], (
            f"{plural}/{name} was written"
        )


def test_a_ready_resource_keeps_its_external_name_marker_through_a_spec_change(
    operator: Any, resources: Resources
) -> None:
    """The create marker is the external-name annotation (the deployment's name, as
    Crossplane keeps `crossplane.io/external-name`): it stays, and once the id is in the
    status it says nothing; nothing writes it again at a spec change."""
    resources.create(AGD, docker("marked"))
    first = resources.wait(AGD, "marked", ready_for_generation, what="Ready")
    assert first is not None
    assert create_marker(first) == "marked"
    assert first["status"]["deploymentId"]
    resources.patch(AGD, "marked", {"spec": {"sourceConfig": {"resourceSpec": {"minScale": 2}}}})
    second = resources.wait(
        AGD,
        "marked",
        lambda o: ready_for_generation(o) and (o or {})["metadata"]["generation"] == 2,
        what="Ready at generation 2",
    )
    assert second is not None
    assert create_marker(second) == "marked"
    assert second["metadata"]["annotations"] == first["metadata"]["annotations"]
    assert second["status"]["deploymentId"] == first["status"]["deploymentId"]
    left_alone(resources, AGD, "marked")


@pytest.mark.parametrize(
    ("name", "wipe"),
    [
        ("wiped", {"conditions": None}),
        ("emptied", {"conditions": None, "deploymentId": None, "observedGeneration": None}),
    ],
    ids=["conditions", "conditions, id and generation"],
)
def test_a_status_wiped_by_hand_is_repaired_on_its_event_not_at_the_resync(
    operator: Any,
    resources: Resources,
    k8s_api: client.ApiClient,
    namespace: str,
    name: str,
    wipe: dict[str, Any],
) -> None:
    """`kubectl patch --subresource=status` wiping a Ready resource's status: the watch
    event carrying it asks for a pass, which writes it back (the operator's resync is
    600 s here; the wait is bounded at 60 s only to stop a hang). The repair's own echo
    asks for nothing: the resource is then left alone, and so is one nobody touched."""
    untouched = f"{name}-untouched"
    resources.create(AGD, docker(name))
    resources.create(AGD, docker(untouched))
    ready = resources.wait(AGD, name, ready_for_generation, what="Ready")
    resources.wait(AGD, untouched, ready_for_generation, what="Ready")
    assert ready is not None
    left_alone(resources, AGD, name)

    after = client.CustomObjectsApi(k8s_api).patch_namespaced_custom_object_status(
        "deployplane.io", "v1alpha1", namespace, AGD, name, {"status": wipe}
    )
    assert isinstance(after, dict)
    assert "conditions" not in (after.get("status") or {})  # the wipe landed
    repaired = resources.wait(
        AGD, name, ready_for_generation, within=60, what="repaired long before the resync"
    )
    assert repaired is not None
    assert repaired["status"]["deploymentId"] == ready["status"]["deploymentId"]
    assert create_marker(repaired) == name
    left_alone(resources, AGD, name, untouched)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_a_resource_outside_the_operators_scope_is_never_seen_and_the_scope_says_so(
    resources: Resources,
    emulator: Emulator,
    kubeconfig: Path,
    namespace: str,
    k8s_api: client.ApiClient,
    crds: None,
    tmp_path: Path,
) -> None:
    """What docs/install.md ("The operator's scope") tells a user to look at: an operator
    watching one namespace logs it at start and its /healthz names it; a resource in
    another namespace gets no status, no finalizer, no annotation and no Event, while
    one in the watched namespace beside it is reconciled to Ready."""
    elsewhere = f"{namespace[:50]}-else"
    core = client.CoreV1Api(k8s_api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=elsewhere)))
    outside = Resources(k8s_api, elsewhere)
    port = _free_port()
    liveness = ("--liveness", f"http://127.0.0.1:{port}/healthz")
    env = operator_env(emulator, kubeconfig)
    operator = OperatorProcess(
        namespace, env, tmp_path / "operator.log", extra_args=liveness
    ).start()
    try:
        outside.create(AGD, docker("stray"))
        resources.create(AGD, docker("seen"))
        resources.wait(AGD, "seen", ready_for_generation, within=120, what="Ready")
        health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
        assert health.status_code == 200, health.text
        assert health.json()["scope"] == {"watching": namespace}
    finally:
        operator.stop()
        with contextlib.suppress(ApiException):
            core.delete_namespace(elsewhere)
    stray = outside.get(AGD, "stray")
    assert stray is not None
    assert "status" not in stray or stray["status"] == {"observedGeneration": 0}, stray["status"]
    assert not stray["metadata"].get("finalizers"), stray["metadata"]
    assert EXTERNAL_NAME_ANNOTATION not in (stray["metadata"].get("annotations") or {})
    events = core.list_namespaced_event(elsewhere).items
    assert [e for e in events if e.involved_object.name == "stray"] == []
    assert emulator.deployments_named("stray") == []
    assert f"watching namespaces {namespace} only" in operator.log
