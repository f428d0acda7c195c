"""`deployplane plan` and `updatePolicy: Manual` on a real kube-apiserver, the operator
and the emulator.

The plan: a kustomization of changes planned by the chart's CI identity (`plan.enabled`:
reads and dry-runs only, an admission policy refusing it anything else), then applied,
and what the control plane did compared with each row: a new image and a new git ref
(one revision each), resources (a PATCH, no revision), a new resource (created), an
unchanged one (nothing), a refused one (the apiserver's CEL message, field by field; not
created), and a pruned one (deleted). The plan wrote nothing: the apiserver's audit log
has nothing but dry-runs from its identity, and the control plane saw GETs only.

The gate: a Manual AgentDeployment waits, visibly (Synced=False AwaitingApproval, an
Event, Flux's kstatus InProgress, Argo CD's health Suspended), is approved with kubectl
alone, then an edit waits, a second edit before approval replaces it, and one approval
with `deployplane approve` sends both as one revision.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support import chart, gotools
from tests.support.argocd import argocd_health
from tests.support.e2ecluster import E2ECluster
from tests.support.operator_harness import (
    API_KEY,
    INTEGRATION,
    WORKSPACE,
    Emulator,
    Resources,
    condition,
    kopf_operator,
    operator_env,
    ready_for_generation,
)

from deployplane.devcluster import service_account_username
from deployplane.devcluster.manifests import Applier

AGD = "agentdeployments"
GROUP, VERSION = "deployplane.io", "v1alpha1"
APPROVED = "deployplane.io/approved-generation"


@pytest.fixture
def operator(namespace: str, emulator: Emulator, kubeconfig: Path, crds: None) -> Iterator[Any]:
    with kopf_operator(namespace, operator_env(emulator, kubeconfig)) as runner:
        yield runner
    assert runner.exit_code == 0, runner.output[-3000:]


def agd(name: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "AgentDeployment",
        "metadata": {"name": name, **meta},
        "spec": spec,
    }


def docker(image: str = "registry.example.com/agent:1", min_scale: int = 1) -> dict[str, Any]:
    return {
        "source": "external_docker",
        "sourceConfig": {"resourceSpec": {"minScale": min_scale, "maxScale": 3}},
        "sourceRevisionConfig": {"imageUri": image},
    }


def git(ref: str) -> dict[str, Any]:
    return {
        "source": "git_host",
        "sourceConfig": {
            "integrationId": INTEGRATION,
            "repository": {"owner": "acme", "name": "support-bot"},
            "buildOnPush": False,
        },
        "sourceRevisionConfig": {"repoRef": ref, "graphConfigPath": "langgraph.json"},
    }


def control_plane(emulator: Emulator, path: str) -> Any:
    headers = {"X-Api-Key": API_KEY, "X-Tenant-Id": WORKSPACE}
    answer = httpx.get(f"{emulator.url}{path}", headers=headers, timeout=10)
    answer.raise_for_status()
    return answer.json()


def revisions(emulator: Emulator, obj: dict[str, Any] | None) -> int:
    deployment = ((obj or {}).get("status") or {}).get("deploymentId")
    if not deployment:
        return 0
    return len(control_plane(emulator, f"/v2/deployments/{deployment}/revisions")["resources"])


def requests_by_route(emulator: Emulator) -> dict[str, int]:
    counted: dict[str, dict[str, int]] = emulator.stats()["requests"]
    return {route: sum(codes.values()) for route, codes in counted.items()}


def deployplane(
    *args: str, emulator: Emulator, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DEPLOYPLANE_CONTROL_PLANE_URL": emulator.url,
        "DEPLOYPLANE_API_KEY": API_KEY,
        "DEPLOYPLANE_TENANT_ID": WORKSPACE,
        "COLUMNS": "200",
    }
    return subprocess.run(
        [sys.executable, "-m", "deployplane.cli", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
    )


def plan_identity(
    dev_cluster: E2ECluster, applier: Applier, namespace: str, tmp_path: Path
) -> tuple[str, Path]:
    """The chart's plan RBAC (its ServiceAccount bound in `namespace`, the dry-run-only
    admission policy) applied; the identity's username and a kubeconfig of it."""
    release = f"p{namespace[-6:]}"  # cluster-scoped names of its own
    docs = chart.render(
        {"plan": {"enabled": True, "namespaces": [namespace]}},
        release=release,
        namespace=namespace,
    )
    plan_docs = [d for d in docs if d["metadata"]["name"].endswith(("-plan", "-dry-run-only"))]
    applier.apply(plan_docs, namespace=namespace)
    account = chart.find(plan_docs, "ServiceAccount")["metadata"]["name"]
    kubeconfig = dev_cluster.service_account_kubeconfig(namespace, account, tmp_path / "plan.kc")
    return service_account_username(namespace, account), kubeconfig


def refused_a_real_write(
    dev_cluster: E2ECluster, kubeconfig: Path, resources: Resources, name: str
) -> str:
    """The identity's update of a live object without dryRun, until the policy is in
    force: the apiserver's refusal. The object is put back unchanged, so an update let
    through before the policy took effect changes nothing."""
    token = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"]
    api = dev_cluster.api_client(token=token)
    custom = client.CustomObjectsApi(api)
    deadline = time.monotonic() + 30
    try:
        while True:
            live = resources.get(AGD, name)
            assert live is not None
            try:
                custom.replace_namespaced_custom_object(
                    GROUP, VERSION, resources.namespace, AGD, name, live
                )
            except ApiException as exc:
                if exc.status == 403 and "dry-run" in (exc.body or ""):
                    return str(json.loads(exc.body)["message"])
                if exc.status not in (403, 409) or time.monotonic() > deadline:
                    raise
            assert time.monotonic() < deadline, "the dry-run-only policy never took effect"
            time.sleep(0.3)
    finally:
        api.close()


def write_kustomization(directory: Path, documents: dict[str, dict[str, Any]]) -> Path:
    directory.mkdir()
    for name, doc in documents.items():
        (directory / f"{name}.yaml").write_text(yaml.safe_dump(doc))
    kustomization = {"resources": [f"{name}.yaml" for name in documents]}
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return directory


def test_the_plan_says_what_applying_then_does_and_writes_nothing(
    operator: Any,
    resources: Resources,
    emulator: Emulator,
    dev_cluster: E2ECluster,
    applier: Applier,
    namespace: str,
    tmp_path: Path,
) -> None:
    before = {
        "img": agd("img", docker()),
        "src": agd("src", git("main")),
        "res": agd("res", docker()),
        "same": agd("same", docker()),
        "gone": agd("gone", docker()),
    }
    for doc in before.values():
        resources.create(AGD, doc)
    live = {name: resources.wait(AGD, name, ready_for_generation) for name in before}
    counts = {name: revisions(emulator, obj) for name, obj in live.items()}
    user, kubeconfig = plan_identity(dev_cluster, applier, namespace, tmp_path)
    refusal = refused_a_real_write(dev_cluster, kubeconfig, resources, "same")
    assert "deployplane plan's identity may only dry-run" in refusal

    bad = docker()
    bad["sourceConfig"]["resourceSpec"] = {"minScale": 3, "maxScale": 1}
    changes = write_kustomization(
        tmp_path / "change",
        {
            "img": agd("img", docker("registry.example.com/agent:2")),
            "src": agd("src", git("release")),
            "res": agd("res", docker(min_scale=2)),
            "same": agd("same", docker()),
            "fresh": agd("fresh", docker()),
            "bad": agd("bad", bad),
        },
    )
    calls, since = requests_by_route(emulator), dt.datetime.now(dt.UTC)
    started = time.monotonic()
    planned = deployplane(
        "plan", "-f", str(changes), "-n", namespace, "--prune", "-o", "json",
        "--kubeconfig", str(kubeconfig), emulator=emulator,
    )  # fmt: skip
    markdown = deployplane(
        "plan", "-f", str(changes), "-n", namespace, "-o", "markdown",
        "--kubeconfig", str(kubeconfig), emulator=emulator,
    )  # fmt: skip
    only_changes = deployplane(
        "plan", "-f", str(changes / "img.yaml"), "-n", namespace,
        "--kubeconfig", str(kubeconfig), emulator=emulator,
    )  # fmt: skip
    nothing = deployplane(
        "plan", "-f", "-", "-n", namespace, "--kubeconfig", str(kubeconfig),
        emulator=emulator, stdin=yaml.safe_dump(before["same"]),
    )  # fmt: skip
    print(f"four plans in {time.monotonic() - started:.1f}s")

    # Nothing written: the control plane saw reads only, Kubernetes dry-runs only.
    after = requests_by_route(emulator)
    delta = {r: n - calls.get(r, 0) for r, n in after.items() if n != calls.get(r, 0)}
    print("control-plane requests during the plans:", delta)
    assert {r: n for r, n in delta.items() if not r.startswith("GET ")} == {}
    assert delta.get("GET /v2/deployments/{deployment_id}", 0) >= 4
    writes = dev_cluster.count_requests(
        verbs={"create", "update", "patch", "delete"}, since=since, user=user, dry_run=False
    )
    assert writes == {}
    dry_runs = dev_cluster.count_requests(since=since, user=user, dry_run=True)
    assert dry_runs.get(AGD, 0) >= 6

    print(markdown.stdout)
    assert (planned.returncode, markdown.returncode) == (1, 1), planned.stderr
    assert (only_changes.returncode, nothing.returncode) == (2, 0), only_changes.stderr
    rows = {row["name"]: row for row in json.loads(planned.stdout)["items"]}
    assert {name: (r["action"], r["reasons"], r["fields"]) for name, r in rows.items()} == {
        "img": ("new-revision", ["image"], ["sourceRevisionConfig.imageUri"]),
        "src": ("new-revision", ["source"], ["sourceRevisionConfig.repoRef"]),
        "res": ("update", [], ["sourceConfig.resourceSpec"]),
        "same": ("none", [], []),
        "fresh": ("create", [], []),
        "bad": ("refused", rows["bad"]["reasons"], ["spec.sourceConfig.resourceSpec.minScale"]),
        "gone": (
            "delete",
            ["deletes its deployment on the control plane (deletionPolicy Delete)"],
            [],
        ),
    }
    assert "maxScale" in rows["bad"]["reasons"][0]
    assert "**refused**" in markdown.stdout
    assert "`spec.sourceConfig.resourceSpec.minScale`" in markdown.stdout

    # Applied (the kustomization, the pruned one deleted), and then what the control
    # plane did, resource by resource, against what the plan said.
    calls = requests_by_route(emulator)
    kubectl = dev_cluster.tools.kubectl
    applied = subprocess.run(
        [str(kubectl), "--kubeconfig", str(dev_cluster.kubeconfig), "-n", namespace,
         "apply", "-k", str(changes)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert applied.returncode != 0  # the refused one
    assert "maxScale" in applied.stderr
    resources.delete(AGD, "gone")
    done = {
        name: resources.wait(AGD, name, ready_for_generation, within=120)
        for name in ("img", "src", "res", "same", "fresh")
    }
    resources.wait(AGD, "gone", lambda o: o is None, within=120, what="deleted")
    assert resources.get(AGD, "bad") is None
    made = {name: revisions(emulator, obj) - counts.get(name, 0) for name, obj in done.items()}
    assert made == {"img": 1, "src": 1, "res": 0, "same": 0, "fresh": 1}
    after = requests_by_route(emulator)
    delta = {r: n - calls.get(r, 0) for r, n in after.items() if n != calls.get(r, 0)}
    print("control-plane requests while applying:", delta)
    assert delta.get("PATCH /v2/deployments/{deployment_id}") == 3  # img, src, res
    assert delta.get("POST /v2/deployments") == 1  # fresh
    assert delta.get("DELETE /v2/deployments/{deployment_id}") == 1  # gone


def waiting(obj: dict[str, Any] | None, generation: int) -> bool:
    pending = ((obj or {}).get("status") or {}).get("pendingChange") or {}
    synced = condition(obj, "Synced")
    return pending.get("generation") == generation and synced.get("reason") == "AwaitingApproval"


def edit(resources: Resources, name: str, spec: dict[str, Any]) -> int:
    resources.patch(AGD, name, {"spec": spec})
    obj = resources.get(AGD, name)
    assert obj is not None
    return int(obj["metadata"]["generation"])


def test_a_manual_deployment_waits_visibly_until_approved(
    operator: Any,
    resources: Resources,
    emulator: Emulator,
    dev_cluster: E2ECluster,
    k8s_api: client.ApiClient,
    namespace: str,
) -> None:
    spec = {**docker(), "updatePolicy": "Manual"}
    resources.create(AGD, agd("gated", spec))
    held = resources.wait(AGD, "gated", lambda o: waiting(o, 1), what="awaiting approval")
    assert held is not None
    assert held["status"]["pendingChange"]["action"] == "create"
    assert "deploymentId" not in held["status"]  # nothing created
    assert condition(held, "Ready")["status"] == "False"
    flux, argo = gotools.kstatus(held), argocd_health(held)
    assert (flux.status, argo.status) == ("InProgress", "Suspended")
    assert "waits for approval" in flux.message
    events = client.CoreV1Api(k8s_api).list_namespaced_event(namespace).items
    told = [e for e in events if e.involved_object.name == "gated"]
    assert [e.reason for e in told if e.reason == "AwaitingApproval"] == ["AwaitingApproval"]

    # kubectl alone approves: the annotation names the generation.
    kubectl = dev_cluster.tools.kubectl
    annotated = subprocess.run(
        [str(kubectl), "--kubeconfig", str(dev_cluster.kubeconfig), "-n", namespace,
         "annotate", "agentdeployment/gated", f"{APPROVED}=1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert annotated.returncode == 0, annotated.stderr
    created = resources.wait(AGD, "gated", ready_for_generation, within=120)
    assert created is not None
    assert revisions(emulator, created) == 1
    assert "pendingChange" not in created["status"]

    # An edit waits; a second one before approval replaces it, needing its own approval.
    second = edit(resources, "gated", {"sourceRevisionConfig": {"imageUri": "r.example/a:2"}})
    resources.wait(AGD, "gated", lambda o: waiting(o, second), what="edit held")
    third = edit(
        resources,
        "gated",
        {
            "sourceRevisionConfig": {"imageUri": "r.example/a:3"},
            "sourceConfig": {"resourceSpec": {"minScale": 2, "maxScale": 3}},
        },
    )
    replaced = resources.wait(AGD, "gated", lambda o: waiting(o, third), what="edit replaced")
    assert replaced is not None
    assert replaced["status"]["pendingChange"] == {
        "generation": third,
        "action": "new-revision",
        "reasons": ["image"],
        "fields": ["sourceConfig.resourceSpec", "sourceRevisionConfig.imageUri"],
    }
    assert argocd_health(replaced).status == "Suspended"
    assert gotools.kstatus(replaced).status == "InProgress"
    assert revisions(emulator, replaced) == 1  # nothing sent for either edit

    approved = deployplane(
        "approve", "gated", "-n", namespace, "--kubeconfig", str(dev_cluster.kubeconfig),
        emulator=emulator,
    )  # fmt: skip
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.startswith(f"agentdeployment/gated approved: generation {third}")
    done = resources.wait(AGD, "gated", ready_for_generation, within=120)
    assert done is not None
    assert revisions(emulator, done) == 2  # both edits, one revision
    assert done["status"]["revision"]["imageUri"] == "r.example/a:3"
    assert done["metadata"]["annotations"][APPROVED] == str(third)
    again = deployplane(
        "approve", "gated", "-n", namespace, "--kubeconfig", str(dev_cluster.kubeconfig),
        emulator=emulator,
    )  # fmt: skip
    assert again.returncode == 1
    assert again.stderr == "error: agentdeployment gated has no change waiting for approval\n"
