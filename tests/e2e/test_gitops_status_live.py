"""Flux's and Argo CD's verdicts on live AgentDeployments, at every stage of their life.

Flux judges custom resources with its kstatus library (github.com/fluxcd/cli-utils/pkg/
kstatus/status, built into tools/k8s/kstatus by `make tools`); Argo CD runs the chart's
health.lua (its own binary, built by `make gitops-tools`: tests/support/argocd.py).
Both are fed every distinct version of the live object while the operator
reconciles against the emulator: new (before the operator saw it), progressing, Ready,
a failed revision, a missing dependency, paused, deleting. What the README promises:
kstatus says InProgress while reconciling, Current only when Ready for the current
generation, Failed when Stalled; Argo CD says Progressing, Healthy, Degraded (Suspended
when paused). On the way, the operator's /metrics (what the chart's dashboard and
alerts query) count the resource as Stalled exactly while it is.
"""

from __future__ import annotations

import os
import socket
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families
from tests.support import gotools
from tests.support.argocd import argocd_health_all, require_argocd
from tests.support.operator_harness import (
    REPO,
    Emulator,
    Resources,
    condition,
    is_true,
    kopf_operator,
    operator_env,
    ready_for_generation,
)

from deployplane.devcluster.manifests import Applier

AGD, LST = "agentdeployments", "listeners"
HOLD = "e2e.deployplane.io/hold"  # a finalizer of the test's own, to look at "deleting"


class Verdict(NamedTuple):
    generation: int
    kstatus: str
    kstatus_message: str
    argocd: str
    argocd_message: str
    obj: dict[str, Any]


def verdicts(objs: list[dict[str, Any]]) -> list[Verdict]:
    """kstatus's and Argo CD's verdicts on each snapshot (Argo CD's binary judges them
    side by side once the snapshots are taken, so that none is missed meanwhile)."""
    argo = argocd_health_all(objs)
    return [
        Verdict(o["metadata"]["generation"], f.status, f.message, a.status, a.message, o)
        for o, f, a in zip(objs, [gotools.kstatus(o) for o in objs], argo, strict=True)
    ]


def verdict(obj: dict[str, Any]) -> Verdict:
    (one,) = verdicts([obj])
    return one


def watch(
    resources: Resources,
    name: str,
    until: Callable[[dict[str, Any]], bool],
    *,
    within: float = 120.0,
) -> list[Verdict]:
    """Both verdicts on every distinct version of the resource until `until` holds."""
    seen: list[dict[str, Any]] = []
    last = None
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        obj = resources.get(AGD, name)
        assert obj is not None, f"{name} is gone"
        if obj["metadata"]["resourceVersion"] != last:
            last = obj["metadata"]["resourceVersion"]
            seen.append(obj)
            if until(obj):
                return verdicts(seen)
        time.sleep(0.05)
    judged = [(v.kstatus, v.argocd) for v in verdicts(seen)]
    raise AssertionError(f"{name}: not reached; seen {judged}")


def statuses(seen: list[Verdict]) -> list[tuple[str, str]]:
    return [(v.kstatus, v.argocd) for v in seen]


def show(trail: list[str], stage: str, seen: list[Verdict]) -> None:
    """Keep the sequence of verdicts, printed after the operator stops (KopfRunner
    captures stdout while it runs) for pytest -rP."""
    trail.append(f"{stage}: " + " -> ".join(f"{k}/{a}" for k, a in statuses(seen)))


def agd(name: str, image: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"name": name},
        "spec": {
            "source": "external_docker",
            "sourceConfig": {"listenerRef": {"name": "cluster"}},
            "sourceRevisionConfig": {"imageUri": f"registry.example.com/{image}"},
            **spec,
        },
    }


@pytest.fixture
def live(
    k8s_api: client.ApiClient, kubeconfig: Path, emulator: Emulator, namespace: str
) -> Resources:
    try:
        gotools.checker_binary("kstatus")
    except gotools.CheckerNotFound as e:
        # Like the cluster binaries: skipped locally, a failure under CI.
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(str(e), pytrace=False)
        pytest.skip(str(e))
    require_argocd()
    Applier(k8s_api).apply(
        [
            yaml.safe_load(p.read_text())
            for p in sorted((REPO / "crds").glob("*.deployplane.io.yaml"))
        ]
    )
    return Resources(k8s_api, namespace)


def test_kstatus_and_argocd_follow_a_live_agentdeployment_through_every_stage(
    live: Resources, emulator: Emulator, kubeconfig: Path, namespace: str
) -> None:
    live.create(
        LST,
        {
            "apiVersion": "deployplane.io/v1alpha1",
            "kind": "Listener",
            "metadata": {"name": "cluster"},
            "spec": {"computeType": "k8s", "computeId": f"gitops-{namespace}"},
        },
    )
    trail: list[str] = []
    # New: applied, and no operator has looked at it yet.
    new = verdict(live.create(AGD, agd("bot", "bot:1")))
    show(trail, "new", [new])
    assert (new.kstatus, new.argocd) == ("InProgress", "Progressing"), new

    port = _free_port()
    env = operator_env(
        emulator,
        kubeconfig,
        DEPLOYPLANE_METRICS_PORT=str(port),
        DEPLOYPLANE_METRICS_ADDR="127.0.0.1",
    )
    with kopf_operator(namespace, env) as runner:
        # Progressing, then Ready for generation 1.
        first = watch(live, "bot", ready_for_generation)
        show(trail, "progressing to Ready", first)
        assert statuses(first)[-1] == ("Current", "Healthy"), first[-1]
        assert set(statuses(first)[:-1]) == {("InProgress", "Progressing")}, statuses(first)
        listener = live.wait(LST, "cluster", ready_for_generation, what="Listener Ready")
        assert listener is not None
        assert gotools.kstatus(listener).status == "Current"

        # A failed revision: never Current on the way, Failed / Degraded at the end.
        live.patch(AGD, "bot", {"spec": {"sourceRevisionConfig": {"imageUri": "r.io/bot:broken"}}})
        failed = watch(live, "bot", is_true("Stalled"))
        show(trail, "failed revision", failed)
        assert statuses(failed)[-1] == ("Failed", "Degraded"), failed[-1]
        assert "DeployFailed" in failed[-1].argocd_message
        assert {k for k, _ in statuses(failed)[:-1]} <= {"InProgress"}, statuses(failed)
        # What the chart's DeployplaneResourcesStalled alert and dashboard read, live.
        stalled = {"kind": "AgentDeployment", "condition": "Stalled", "status": "True"}
        _wait_gauge(port, "deployplane_resources", stalled, 1)
        _wait_gauge(port, "deployplane_revisions", {"status": "DEPLOY_FAILED"}, 1)

        # A good image again: back to Current.
        live.patch(AGD, "bot", {"spec": {"sourceRevisionConfig": {"imageUri": "r.io/bot:2"}}})
        fixed = watch(live, "bot", ready_for_generation)
        assert statuses(fixed)[-1] == ("Current", "Healthy"), fixed[-1]
        _wait_gauge(port, "deployplane_resources", stalled, 0)

        # A dependency missing: waits, InProgress, never Failed; Current once it exists.
        secrets = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "tok", "key": "t"}}}]
        live.create(AGD, agd("needs-secret", "other:1", secrets=secrets))
        waiting = watch(
            live,
            "needs-secret",
            lambda o: condition(o, "Synced").get("reason") == "DependencyNotReady",
        )
        show(trail, "dependency missing", waiting)
        assert statuses(waiting)[-1] == ("InProgress", "Progressing"), waiting[-1]
        assert "tok" in waiting[-1].argocd_message
        assert not {k for k, _ in statuses(waiting)} & {"Current", "Failed"}, statuses(waiting)
        live.put_secret("tok", {"t": "value"})
        resolved = watch(live, "needs-secret", ready_for_generation)
        show(trail, "dependency created", resolved)
        assert statuses(resolved)[-1] == ("Current", "Healthy"), resolved[-1]
        tracked = {"kind": "AgentDeployment", "condition": "Ready"}  # one sample per resource
        _wait_gauge(port, "deployplane_resources", tracked, 2)

        # ObserveOnly over "bot"'s deployment: Current / Healthy like a managed one; one
        # that finds nothing waits (InProgress), never Current, never Failed.
        watcher = agd("watcher", "bot:2", managementPolicy="ObserveOnly")
        watcher["spec"]["name"] = "bot"  # the deployment's name on the control plane
        live.create(AGD, watcher)
        observing = watch(live, "watcher", ready_for_generation)
        show(trail, "observe-only", observing)
        assert statuses(observing)[-1] == ("Current", "Healthy"), observing[-1]
        ghost_body = agd("ghost", "x:1", managementPolicy="ObserveOnly")
        ghost_body["spec"]["name"] = "no-such-bot"
        live.create(AGD, ghost_body)
        ghost = watch(live, "ghost", lambda o: condition(o, "Synced").get("reason") == "NotFound")
        show(trail, "observe-only, nothing found", ghost)
        # Argo CD: Degraded (the chart's health.lua reads a NotFound as a problem to look
        # at), with the operator's message; kstatus: still waiting.
        assert statuses(ghost)[-1] == ("InProgress", "Degraded"), ghost[-1]
        assert "observe-only: no deployment 'no-such-bot'" in ghost[-1].argocd_message
        assert not {k for k, _ in statuses(ghost)} & {"Current", "Failed"}, statuses(ghost)
        for name in ("watcher", "ghost"):  # ObserveOnly: released, nothing deleted
            live.delete(AGD, name)
            live.wait(AGD, name, lambda o: o is None, what=f"{name} deleted")
        assert emulator.deployments_named("bot"), "an ObserveOnly deletion deleted it"
        _wait_gauge(port, "deployplane_resources", tracked, 2)

        # Paused, then edited: a generation the operator has not observed is not Current.
        live.patch(AGD, "bot", {"metadata": {"annotations": {"deployplane.io/paused": "true"}}})
        live.patch(AGD, "bot", {"spec": {"sourceRevisionConfig": {"imageUri": "r.io/bot:3"}}})
        obj = live.get(AGD, "bot")
        assert obj is not None
        paused = verdict(obj)
        show(trail, "paused and edited", [paused])
        assert paused.generation > paused.obj["status"]["observedGeneration"]
        assert (paused.kstatus, paused.argocd) == ("InProgress", "Suspended"), paused

        # Deleting (held by a finalizer of the test's own so the stage can be looked at).
        live.patch(AGD, "needs-secret", {"metadata": {"finalizers": _with_hold(live)}})
        live.delete(AGD, "needs-secret")
        deleting = verdict(_deleting(live, "needs-secret"))
        show(trail, "deleting", [deleting])
        assert (deleting.kstatus, deleting.argocd) == ("Terminating", "Progressing"), deleting
        assert deleting.argocd_message == "Pending deletion"
        _release(live, "needs-secret")
        # Gone, so out of the per-resource gauges: only "bot" is counted.
        _wait_gauge(port, "deployplane_resources", tracked, 1)

    print("\n".join(trail))
    assert runner.exit_code == 0, runner.output[-3000:]


def _with_hold(resources: Resources) -> list[str]:
    obj = resources.get(AGD, "needs-secret")
    assert obj is not None
    return [*obj["metadata"].get("finalizers", []), HOLD]


def _deleting(resources: Resources, name: str) -> dict[str, Any]:
    obj = resources.wait(
        AGD, name, lambda o: bool(o and o["metadata"].get("deletionTimestamp")), what="deleting"
    )
    assert obj is not None
    return obj


def _release(resources: Resources, name: str) -> None:
    obj = resources.get(AGD, name)
    if obj is None:
        return
    finalizers = [f for f in obj["metadata"].get("finalizers", []) if f != HOLD]
    resources.patch(AGD, name, {"metadata": {"finalizers": finalizers}})
    resources.wait(AGD, name, lambda o: o is None, what="deleted")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _gauge(port: int, name: str, labels: dict[str, str]) -> float:
    """The operator's /metrics: the sum of `name`'s samples carrying `labels`."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
        if sample.name == name and labels.items() <= sample.labels.items()
    )


def _wait_gauge(port: int, name: str, labels: dict[str, str], want: float) -> None:
    """The metrics follow the status write by a moment: poll (the bound only stops a hang)."""
    deadline = time.monotonic() + 30
    while (got := _gauge(port, name, labels)) != want:
        assert time.monotonic() < deadline, f"{name}{labels} = {got}, want {want}"
        time.sleep(0.1)
