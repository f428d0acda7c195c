"""Reliability scenarios (issue 7): crash, faults, outage, HA, secrets hygiene.

Each scenario drives the real operator (a `deployplane operator run` subprocess, so it
can be killed -9) against the emulator on loopback and a real kube-apiserver, and
returns a `Report`: the figures measured and the properties that did not hold.
`tests/e2e/test_reliability.py` runs them scaled down in CI; `bench/reliability.py`
runs them at the issue's scale. Every wait is bounded.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml
from kubernetes import client
from tests.support.operator_fixtures import docker
from tests.support.operator_harness import (
    API_KEY,
    REPO,
    WORKSPACE,
    Emulator,
    OperatorProcess,
    Resources,
    condition,
    operator_env,
)

from deployplane.reconcile.marker import EXTERNAL_NAME_ANNOTATION

AGD = "agentdeployments"
SECRET_VALUE = "sk-reliability-planted-7d41e9"
RETRYING_REASONS = frozenset({"ControlPlaneUnavailable", "RateLimited"})
PEERING_GROUP, PEERING_VERSION, PEERING_PLURAL = "kopf.dev", "v1", "kopfpeerings"


@dataclass
class Report:
    """What a scenario measured (`figures`) and which properties failed (`violations`)."""

    name: str
    figures: dict[str, Any] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)

    def check(self, holds: bool, message: str) -> None:
        if not holds:
            self.violations.append(message)

    def lines(self) -> list[str]:
        out = [f"== {self.name}"]
        out += [f"  {key}: {value}" for key, value in self.figures.items()]
        out += [f"  VIOLATED: {v}" for v in self.violations] or ["  all properties hold"]
        return out


@dataclass
class Stage:
    """Where a scenario runs: a cluster namespace with the CRDs, and a scratch dir."""

    api: client.ApiClient
    kubeconfig: Path
    namespace: str
    workdir: Path

    @property
    def resources(self) -> Resources:
        return Resources(self.api, self.namespace)

    def emulator(self, name: str = "emulator", step_seconds: float = 0.2) -> Emulator:
        return Emulator(self.workdir / name, step_seconds=step_seconds)

    def operator(self, emulator: Emulator, log: str, *args: str, **env: str) -> OperatorProcess:
        return OperatorProcess(
            self.namespace,
            operator_env(emulator, self.kubeconfig, **env),
            self.workdir / log,
            extra_args=args,
        )


def crd_documents() -> list[dict[str, Any]]:
    return [
        yaml.safe_load(p.read_text()) for p in sorted((REPO / "crds").glob("*.deployplane.io.yaml"))
    ]


def peering_crd() -> dict[str, Any]:
    """The namespaced Kopf peering CRD, as the chart installs it (kopf does not)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PEERING_PLURAL}.{PEERING_GROUP}"},
        "spec": {
            "scope": "Namespaced",
            "group": PEERING_GROUP,
            "names": {"kind": "KopfPeering", "plural": PEERING_PLURAL, "singular": "kopfpeering"},
            "versions": [
                {
                    "name": PEERING_VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def is_ready(obj: dict[str, Any]) -> bool:
    status = obj.get("status") or {}
    return (
        status.get("observedGeneration") == obj["metadata"]["generation"]
        and condition(obj, "Ready").get("status") == "True"
    )


def wait_all(
    resources: Resources,
    names: list[str],
    predicate: Callable[[dict[str, Any]], bool] = is_ready,
    *,
    within: float,
    on_sample: Callable[[list[dict[str, Any]]], None] | None = None,
) -> tuple[float, list[dict[str, Any]]]:
    """Poll (one list call per round) until predicate holds for every named CR.
    Returns the seconds it took and the last listing; never raises on timeout."""
    start = time.monotonic()
    wanted = set(names)
    items: list[dict[str, Any]] = []
    while True:
        items = [o for o in resources.list_all(AGD) if o["metadata"]["name"] in wanted]
        if on_sample is not None:
            on_sample(items)
        if len(items) == len(wanted) and all(predicate(o) for o in items):
            return time.monotonic() - start, items
        if time.monotonic() - start > within:
            return time.monotonic() - start, items
        time.sleep(0.5)


class ControlPlane(Protocol):
    """Where the deployments are counted: the emulator, on loopback or in a pod."""

    def all_deployments(self) -> list[dict[str, Any]]: ...


def check_converged(
    report: Report, emulator: ControlPlane, names: list[str], items: list[dict[str, Any]]
) -> None:
    """Every CR Ready, nothing stuck, and exactly one deployment per CR on the control plane."""
    not_ready = sorted(o["metadata"]["name"] for o in items if not is_ready(o))
    missing = sorted(set(names) - {o["metadata"]["name"] for o in items})
    stuck = not_ready + missing
    unmarked = sorted(
        o["metadata"]["name"]
        for o in items
        if (o["metadata"].get("annotations") or {}).get(EXTERNAL_NAME_ANNOTATION)
        != o["metadata"]["name"]
    )
    report.figures["stuck CRs"] = len(stuck)
    report.check(not stuck, f"CRs not Ready: {stuck[:10]}")
    report.check(not unmarked, f"create marker missing or not the name: {unmarked[:10]}")

    deployments = emulator.all_deployments()
    by_name: dict[str, list[str]] = {}
    for dep in deployments:
        by_name.setdefault(dep["name"], []).append(dep["id"])
    duplicates = {n: ids for n, ids in by_name.items() if len(ids) > 1}
    leaked = sorted(set(by_name) - set(names))
    report.figures["deployments on the control plane"] = len(deployments)
    report.figures["duplicates found"] = len(duplicates)
    report.check(not duplicates, f"duplicate deployments: {duplicates}")
    report.check(not leaked, f"deployments with no CR: {leaked[:10]}")
    report.check(
        len(deployments) == len(names), f"{len(deployments)} deployments for {len(names)} CRs"
    )
    mismatched = [
        o["metadata"]["name"]
        for o in items
        if by_name.get(o["metadata"]["name"]) != [(o.get("status") or {}).get("deploymentId")]
    ]
    report.check(
        not mismatched, f"status.deploymentId differs from the control plane: {mismatched[:10]}"
    )


def api_calls(emulator: Emulator) -> int:
    total: int = emulator.stats()["total"]
    return total


@contextmanager
def running(*things: Emulator | OperatorProcess) -> Iterator[None]:
    """Stop (SIGTERM, then SIGKILL) whatever is still running on the way out."""
    with ExitStack() as stack:
        for thing in things:
            stack.callback(thing.stop)
        yield


# ----------------------------------------------------------------------------- crash
def crash(stage: Stage, *, count: int, kills: int, seed: int = 7, within: float = 300) -> Report:
    """kill -9 the operator at random moments while `count` CRs are being created,
    restarting it each time: all Ready, exactly `count` deployments, none stuck."""
    report = Report(f"crash: {count} CRs, {kills} x kill -9")
    rng = random.Random(seed)
    names = [f"crash-{i:03d}" for i in range(count)]
    emulator = stage.emulator(step_seconds=0.3).start()
    resources = stage.resources
    # Latency holds API calls in flight, so kills land between a POST and its status write.
    emulator.set_faults(latency_ms=150)
    batches = [names[i::kills] for i in range(kills)]
    operators: list[OperatorProcess] = []
    done_kills = 0
    start = time.monotonic()
    try:
        for i, batch in enumerate(batches):
            for name in batch:
                resources.create(AGD, docker(name))
            op = stage.operator(emulator, f"crash-operator-{i}.log").start()
            operators.append(op)
            time.sleep(rng.uniform(1.5, 5.0))  # import + login takes ~1.5 s on this machine
            op.kill9()
            done_kills += 1
        last = stage.operator(emulator, "crash-operator-last.log").start()
        operators.append(last)
        with running(emulator, *operators):
            _, items = wait_all(resources, names, within=within)
            report.figures["convergence after first create (s)"] = round(
                time.monotonic() - start, 1
            )
            report.figures["kills"] = done_kills
            check_converged(report, emulator, names, items)
    finally:
        for op in operators:
            op.stop()
        emulator.stop()
    report.check(done_kills == kills, f"only {done_kills} of {kills} kills happened")
    return report


# ----------------------------------------------------------------------------- faults
def faults(
    stage: Stage,
    *,
    count: int,
    error_rate: float = 0.2,
    latency_ms: float = 200,
    within: float = 600,
) -> Report:
    """The same `count` CRs fault-free, then under injected errors and latency: all
    converge, API calls stay within 3x of the fault-free run, Synced shows retrying."""
    report = Report(f"faults: {count} CRs, {error_rate:.0%} errors + {latency_ms:.0f} ms")
    emulator = stage.emulator().start()
    resources = stage.resources
    op = stage.operator(emulator, "faults-operator.log").start()
    with running(emulator, op):
        # Warm up first, so neither run's figures include the operator's start.
        resources.create(AGD, docker("warmup"))
        _, warm = wait_all(resources, ["warmup"], within=within)
        # Fault-free baseline.
        base = [f"base-{i:03d}" for i in range(count)]
        before = api_calls(emulator)
        for name in base:
            resources.create(AGD, docker(name))
        base_seconds, base_items = wait_all(resources, base, within=within)
        base_calls = api_calls(emulator) - before

        # The same workload under faults.
        faulty = [f"faulty-{i:03d}" for i in range(count)]
        retrying_seen: dict[str, str] = {}

        def sample(items: list[dict[str, Any]]) -> None:
            for obj in items:
                synced = condition(obj, "Synced")
                if synced.get("status") == "False" and synced.get("reason") in RETRYING_REASONS:
                    retrying_seen.setdefault(obj["metadata"]["name"], synced["reason"])
                if condition(obj, "Stalled").get("status") == "True":
                    report.check(False, f"{obj['metadata']['name']} Stalled under transient faults")

        emulator.set_faults(error_rate=error_rate, latency_ms=latency_ms)
        before = api_calls(emulator)
        for name in faulty:
            resources.create(AGD, docker(name))
        fault_seconds, fault_items = wait_all(resources, faulty, within=within, on_sample=sample)
        fault_calls = api_calls(emulator) - before
        emulator.set_faults(error_rate=0, latency_ms=0)
        # A retrying state may last one retry delay (2 s) between two status samples; the
        # Warning Event the operator posts on each Synced -> False transition persists.
        faulty_names = set(faulty)
        for event in resources.core.list_namespaced_event(resources.namespace).items:
            name = event.involved_object.name
            if name in faulty_names and event.reason in RETRYING_REASONS:
                retrying_seen.setdefault(name, event.reason)
        check_converged(
            report, emulator, ["warmup", *base, *faulty], warm + base_items + fault_items
        )

    ratio = fault_calls / max(base_calls, 1)
    report.figures.update(
        {
            "fault-free convergence (s)": round(base_seconds, 1),
            "faulty convergence (s)": round(fault_seconds, 1),
            "API calls fault-free": base_calls,
            "API calls under faults": fault_calls,
            "API calls ratio": round(ratio, 2),
            "CRs seen with Synced=False retrying": len(retrying_seen),
            "retrying reasons seen": sorted(set(retrying_seen.values())),
        }
    )
    report.check(ratio <= 3.0, f"API calls under faults are {ratio:.2f}x the fault-free run")
    report.check(bool(retrying_seen), "Synced never showed the retrying state")
    return report


# ----------------------------------------------------------------------------- outage
def outage(stage: Stage, *, count: int, seconds: float, within: float = 600) -> Report:
    """Stop the emulator for `seconds` while revisions are in flight, restart it on
    the same database and port: all converge, and no CR is Stalled meanwhile."""
    report = Report(f"outage: {count} CRs, emulator down {seconds:.0f} s")
    names = [f"outage-{i:03d}" for i in range(count)]
    emulator = stage.emulator(step_seconds=1.0).start()
    resources = stage.resources
    op = stage.operator(emulator, "outage-operator.log").start()
    stalled: set[str] = set()
    reasons: set[str] = set()

    def sample(items: list[dict[str, Any]]) -> None:
        for obj in items:
            if condition(obj, "Stalled").get("status") == "True":
                stalled.add(obj["metadata"]["name"])
            synced = condition(obj, "Synced")
            if synced.get("status") == "False":
                reasons.add(str(synced.get("reason")))

    with running(emulator, op):
        for name in names:
            resources.create(AGD, docker(name))
        # Stop once half have a deployment: the rest are mid-create, all are mid-revision.
        wait_all(
            resources,
            names,
            lambda o: True,
            within=within,
        )
        wait_all(
            resources,
            names[: count // 2],
            lambda o: bool((o.get("status") or {}).get("deploymentId")),
            within=within,
        )
        emulator.stop()
        down_at = time.monotonic()
        while time.monotonic() - down_at < seconds:
            wait_all(resources, names, lambda o: False, within=0, on_sample=sample)
            time.sleep(1)
        emulator.start()
        up_at = time.monotonic()
        _, items = wait_all(resources, names, within=within, on_sample=sample)
        report.figures["convergence after restart (s)"] = round(time.monotonic() - up_at, 1)
        report.figures["Synced reasons seen during the outage"] = sorted(reasons)
        report.figures["CRs ever Stalled"] = len(stalled)
        check_converged(report, emulator, names, items)
    report.check(not stalled, f"Stalled during a transient outage: {sorted(stalled)[:10]}")
    report.check(
        reasons <= RETRYING_REASONS | {"DependencyNotReady"},
        f"unexpected Synced reasons during the outage: {sorted(reasons)}",
    )
    return report


# ----------------------------------------------------------------------------- HA
def peers(stage: Stage, name: str) -> dict[str, dict[str, Any]]:
    custom = client.CustomObjectsApi(stage.api)
    obj = custom.get_namespaced_custom_object(
        PEERING_GROUP, PEERING_VERSION, stage.namespace, PEERING_PLURAL, name
    )
    status: dict[str, dict[str, Any]] = obj.get("status") or {}
    return status


def ha(stage: Stage, *, count: int, lifetime: int = 10, within: float = 300) -> Report:
    """Two operators with Kopf peering; kill -9 the active one while revisions are in
    flight: the standby takes over and every CR reaches Ready."""
    report = Report(f"HA: 2 peered operators, {count} CRs, kill -9 the active one")
    peering = "deployplane"
    client.CustomObjectsApi(stage.api).create_namespaced_custom_object(
        PEERING_GROUP,
        PEERING_VERSION,
        stage.namespace,
        PEERING_PLURAL,
        {
            "apiVersion": f"{PEERING_GROUP}/{PEERING_VERSION}",
            "kind": "KopfPeering",
            "metadata": {"name": peering},
        },
    )
    names = [f"ha-{i:03d}" for i in range(count)]
    emulator = stage.emulator(step_seconds=1.5).start()
    resources = stage.resources
    args = ("--peering", peering, "--peering-lifetime", str(lifetime))
    replicas = {
        pod: stage.operator(emulator, f"ha-{pod}.log", *args, POD_ID=pod).start()
        for pod in ("replica-a", "replica-b")
    }
    with running(emulator, *replicas.values()):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and set(peers(stage, peering)) != set(replicas):
            time.sleep(0.5)
        seen = peers(stage, peering)
        report.check(set(seen) == set(replicas), f"peers registered: {sorted(seen)}")
        active = max(seen, key=lambda pod: int(seen[pod].get("priority", 0)))
        standby = next(pod for pod in replicas if pod != active)
        report.figures["priorities"] = {pod: seen[pod].get("priority") for pod in sorted(seen)}

        for name in names:
            resources.create(AGD, docker(name))
        # In flight: every CR has a revision on the control plane, none is deployed yet.
        wait_all(
            resources,
            names,
            lambda o: bool((o.get("status") or {}).get("latestRevisionId")),
            within=within,
        )
        in_flight = sum(not is_ready(o) for o in resources.list_all(AGD))
        replicas[active].kill9()
        killed_at = time.monotonic()
        _, items = wait_all(resources, names, within=within)
        report.figures["in-flight revisions at the kill"] = in_flight
        report.figures["takeover + convergence after the kill (s)"] = round(
            time.monotonic() - killed_at, 1
        )
        check_converged(report, emulator, names, items)
        log = (stage.workdir / f"ha-{standby}.log").read_text(errors="replace")
        report.check("Resuming operations" in log, f"the standby ({standby}) never logged resuming")
        report.check(in_flight > 0, "no revision was in flight at the kill")
    return report


# ----------------------------------------------------------------------------- secrets
def secrets_hygiene(stage: Stage, *, within: float = 120) -> Report:
    """Plant a secret value and the API key, run flows that post Events (create, secret
    rotation, a failing revision, a refused connection key), then grep the operator's
    logs, every Event, every CR and the emulator's log for them."""
    report = Report("secrets hygiene")
    bad_key = "sk-wrong-key-planted-a93e01"
    planted = {"secret value": SECRET_VALUE, "API key": API_KEY, "refused API key": bad_key}
    emulator = stage.emulator().start()
    resources = stage.resources
    resources.put_secret("llm-keys", {"openai": SECRET_VALUE})
    resources.put_secret(
        "bad-connection", {"url": emulator.url, "apiKey": bad_key, "tenantId": WORKSPACE}
    )
    resources.put_secret(
        "good-connection", {"url": emulator.url, "apiKey": API_KEY, "tenantId": WORKSPACE}
    )
    # Debug logging on (the most verbose the operator gets); a 2 s resync picks up rotation.
    op = stage.operator(
        emulator, "secrets-operator.log", "--verbose", DEPLOYPLANE_RESYNC_INTERVAL="2"
    ).start()
    with running(emulator, op):
        secret_ref = {
            "name": "OPENAI_API_KEY",
            "valueFrom": {"secretKeyRef": {"name": "llm-keys", "key": "openai"}},
        }
        resources.create(AGD, docker("by-ref", secrets=[secret_ref]))
        resources.create(
            AGD,
            docker(
                "by-from",
                secretsFrom=[{"secretRef": {"name": "llm-keys"}}],
                connectionRef={"name": "good-connection"},
            ),
        )
        resources.create(AGD, docker("broken", "registry.example.com/agent:broken"))
        resources.create(AGD, docker("refused", connectionRef={"name": "bad-connection"}))
        _, items = wait_all(resources, ["by-ref", "by-from"], within=within)
        report.check(all(is_ready(o) for o in items), "the secret-using CRs never got Ready")
        first = {o["metadata"]["name"]: o["status"]["latestRevisionId"] for o in items}
        resources.put_secret("llm-keys", {"openai": SECRET_VALUE + "-rotated"})
        _, failed = wait_all(
            resources,
            ["broken", "refused"],
            lambda o: condition(o, "Stalled").get("status") == "True",
            within=within,
        )
        report.check(
            all(condition(o, "Stalled").get("status") == "True" for o in failed),
            "the failing CRs never went Stalled",
        )
        _, items = wait_all(
            resources,
            ["by-ref"],
            lambda o: is_ready(o) and o["status"]["latestRevisionId"] != first["by-ref"],
            within=within,
        )
    corpus = {
        "operator log": (stage.workdir / "secrets-operator.log").read_text(errors="replace"),
        "emulator log": emulator.log_path.read_text(errors="replace"),
        "CRs": yaml.safe_dump(resources.list_all(AGD)),
        "Events": yaml.safe_dump(
            [
                e.to_dict()
                for e in client.CoreV1Api(stage.api).list_namespaced_event(stage.namespace).items
            ],
            default_flow_style=False,
        ),
    }
    report.figures["bytes searched"] = {where: len(text) for where, text in corpus.items()}
    report.figures["events searched"] = corpus["Events"].count("involved_object:")
    for where, text in corpus.items():
        for what, value in planted.items():
            report.check(value not in text, f"the {what} appears in the {where}")
    reasons = corpus["Events"]
    report.check("DeployFailed" in reasons, "no DeployFailed event was posted")
    report.check("Unauthorized" in reasons, "no Unauthorized event was posted")
    return report
