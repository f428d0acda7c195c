"""`deployplane export` round trip on the dev cluster, the emulator strict (the published
contract only), as a platform team onboards what already runs:

deployments and a listener made directly on the control plane with the typed client ->
`deployplane export -o DIR` -> the placeholder Secrets created -> `kubectl apply -f DIR`
-> every resource Ready (ObserveOnly) with no control-plane write -> every resource
switched to Full with `kubectl patch` -> still no write (nothing drifted) -> an edit of
the spec is then one PATCH (the operator does manage them now).

Writes are counted by the fault proxy in front of the emulator (every request the
operator makes goes through it): any POST, PATCH, PUT or DELETE after the export fails
the test.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from tests.support import operator_fixtures
from tests.support.e2ecluster import E2ECluster
from tests.support.operator_harness import (
    API_KEY,
    INTEGRATION,
    WORKSPACE,
    Emulator,
    Resources,
    condition,
    ready_for_generation,
)

from deployplane.api.client import ControlPlaneClient
from deployplane.api.models import Deployment, DeploymentCreate, Listener, ListenerCreate

operator = operator_fixtures.operator

AGD, LST = "agentdeployments", "listeners"
SECRET_VALUES = {"OPENAI_API_KEY": "sk-export-e2e-7c1d", "GITHUB_TOKEN": "ghp-export-e2e-90ab"}


def _seed_bodies(token: str, listener_id: str) -> list[dict[str, Any]]:
    return [
        {
            "name": f"edge-{token}",
            "source": "external_docker",
            "source_config": {
                "listener_id": listener_id,
                "listener_config": {"k8s_namespace": "agents"},
                "resource_spec": {"min_scale": 1, "max_scale": 3, "cpu": 0.5},
                "custom_url": f"https://edge-{token}.example",
            },
            "source_revision_config": {"image_uri": "registry.example.com/edge:1"},
            "secrets": [{"name": "OPENAI_API_KEY", "value": SECRET_VALUES["OPENAI_API_KEY"]}],
        },
        {
            "name": f"Git_Bot.{token}",
            "source": "git_host",
            "source_config": {
                "integration_id": INTEGRATION,
                "repo_url": "https://git.example.com/acme/support-bot",
                "build_on_push": False,
                "deployment_type": "dev",
            },
            "source_revision_config": {"repo_ref": "main", "graph_config_path": "langgraph.json"},
            "secrets": [{"name": "GITHUB_TOKEN", "value": SECRET_VALUES["GITHUB_TOKEN"]}],
        },
        {
            "name": f"plain-{token}",
            "source": "external_docker",
            "source_config": {"resource_spec": {"min_scale": 1}},
            "source_revision_config": {"image_uri": "registry.example.com/plain:1"},
        },
    ]


def seed(emulator: Emulator, token: str, compute_id: str) -> tuple[Listener, list[Deployment]]:
    """What somebody made before the operator: with the client, every revision DEPLOYED."""

    async def main() -> tuple[Listener, list[Deployment]]:
        async with ControlPlaneClient(emulator.url, api_key=API_KEY, tenant_id=WORKSPACE) as c:
            listener = await c.create_listener(
                ListenerCreate.model_validate(
                    {
                        "compute_type": "k8s",
                        "compute_id": compute_id,
                        "compute_config": {"k8s_namespaces": ["agents"]},
                        "version": "1",
                    }
                )
            )
            made = []
            for body in _seed_bodies(token, str(listener.id)):
                dep = await c.create_deployment(DeploymentCreate.model_validate(body))
                assert dep.latest_revision_id is not None
                await c.wait_for_revision(dep.id, dep.latest_revision_id, poll_interval=0.2)
                made.append(dep)
            return listener, made

    return asyncio.run(main())


def cli(emulator: Emulator, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DEPLOYPLANE_CONTROL_PLANE_URL": emulator.url,
        "DEPLOYPLANE_API_KEY": API_KEY,
        "DEPLOYPLANE_TENANT_ID": WORKSPACE,
    }
    return subprocess.run(
        [sys.executable, "-m", "deployplane.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def kubectl(cluster: E2ECluster, namespace: str, *args: str) -> str:
    assert cluster.tools.kubectl is not None
    base = [str(cluster.tools.kubectl), "--kubeconfig", str(cluster.kubeconfig), "-n", namespace]
    done = subprocess.run(
        [*base, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def writes(emulator: Emulator) -> dict[str, int]:
    """Every request through the proxy that is not a read, per route (all statuses)."""
    counted: dict[str, dict[str, int]] = emulator.stats()["requests"]
    return {
        route: sum(codes.values())
        for route, codes in counted.items()
        if not route.startswith("GET ")
    }


def all_ready(resources: Resources, plural_names: list[tuple[str, str]]) -> None:
    for plural, name in plural_names:
        obj = resources.wait(plural, name, ready_for_generation, what="Ready", within=120)
        assert condition(obj, "Synced").get("status") == "True", obj


def test_export_apply_is_ready_without_writes_then_full_without_drift(
    operator: Any,
    resources: Resources,
    emulator: Emulator,
    dev_cluster: E2ECluster,
    namespace: str,
    tmp_path: Path,
) -> None:
    token = namespace.rsplit("-", 1)[-1]
    listener, made = seed(emulator, token, f"cluster-{token}")
    ids = {dep.name: str(dep.id) for dep in made}

    out = tmp_path / "exported"
    kube = ("--kubeconfig", str(dev_cluster.kubeconfig))
    done = cli(emulator, "export", "--name-contains", token, "--listeners", "-d", str(out), *kube)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    files = sorted(p.name for p in out.iterdir())
    assert files == [
        f"agentdeployment-edge-{token}.yaml",
        f"agentdeployment-git-bot-{token}.yaml",
        f"agentdeployment-plain-{token}.yaml",
        f"listener-cluster-{token}.yaml",
    ]
    for name in files:
        assert f"wrote {out / name}" in done.stderr
    exported = {p.name: yaml.safe_load(p.read_text()) for p in out.iterdir()}
    text = json.dumps(exported)
    assert all(value not in text for value in SECRET_VALUES.values())
    edge = exported[f"agentdeployment-edge-{token}.yaml"]["spec"]
    assert edge["managementPolicy"] == "ObserveOnly"
    assert edge["deploymentId"] == ids[f"edge-{token}"]
    assert edge["sourceConfig"]["listenerRef"] == {"name": f"cluster-{token}"}
    git = exported[f"agentdeployment-git-bot-{token}.yaml"]["spec"]
    assert git["name"] == f"Git_Bot.{token}"

    # The Secrets the export asked for, with the values the deployments have.
    assert f"create secret generic edge-{token} --from-literal=OPENAI_API_KEY=..." in done.stderr
    assert f"create secret generic git-bot-{token} --from-literal=GITHUB_TOKEN=..." in done.stderr
    resources.put_secret(f"edge-{token}", {"OPENAI_API_KEY": SECRET_VALUES["OPENAI_API_KEY"]})
    resources.put_secret(f"git-bot-{token}", {"GITHUB_TOKEN": SECRET_VALUES["GITHUB_TOKEN"]})

    before = writes(emulator)
    kubectl(dev_cluster, namespace, "apply", "-f", str(out))
    deployments = [(AGD, f"edge-{token}"), (AGD, f"git-bot-{token}"), (AGD, f"plain-{token}")]
    everything = [(LST, f"cluster-{token}"), *deployments]
    all_ready(resources, everything)
    lst = resources.get(LST, f"cluster-{token}")
    assert lst is not None
    assert lst["status"]["listenerId"] == str(listener.id)
    for plural, name in deployments:
        obj = resources.get(plural, name)
        assert obj is not None
        assert obj["status"]["deploymentId"] in ids.values()
    assert writes(emulator) == before, "ObserveOnly wrote to the control plane"

    # Exported again: each is managed by its AgentDeployment now, and skipped.
    again = cli(emulator, "export", "--name-contains", token, *kube)
    assert again.returncode == 0, again.stderr
    assert again.stdout == ""
    for name, deployment_id in ids.items():
        line = f"skipped deployment {name} ({deployment_id}): managed by agentdeployment "
        assert line in again.stderr

    # Take them over: Full, and still nothing to change.
    for plural, name in everything:
        resources.patch(plural, name, {"spec": {"managementPolicy": "Full"}})
    all_ready(resources, everything)
    assert writes(emulator) == before, "switching to Full found drift and wrote"

    # Managed now: an edit is one PATCH.
    resources.patch(
        AGD,
        f"plain-{token}",
        {"spec": {"sourceRevisionConfig": {"imageUri": "registry.example.com/plain:2"}}},
    )
    all_ready(resources, [(AGD, f"plain-{token}")])
    after = writes(emulator)
    patched = {r: n - before.get(r, 0) for r, n in after.items() if n != before.get(r, 0)}
    assert patched == {"PATCH /v2/deployments/{deployment_id}": 1}
