"""Flux, built here, applies deployplane's resources from a git repository on the dev
cluster (GitRepository + Kustomization with `wait` and `prune`) and judges them with
its own kstatus health checks.

Skipped unless DEPLOYPLANE_E2E_GITOPS=1 (`make e2e-gitops`; tests/support/gitops.py).
Each test pushes examples/gitops/agents/ as it is, beside an overlay of the test's own
(the connection pointed at the test's emulator: tests/support/gitops_harness.py), and
applies examples/gitops/flux.yaml with only its names, URL, overlay and target
namespace set. What is asserted is the Kustomization's own Ready condition.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support import gitops
from tests.support.gitops import GitRepo
from tests.support.gitops_harness import (
    AGD,
    LST,
    UNBUILDABLE,
    Flux,
    all_ready,
    control_plane_image,
    flux_objects,
    gone,
    push_agents,
    ready_condition,
    spec_image,
    wait_until,
)
from tests.support.operator_harness import Emulator, Resources

from deployplane.devcluster.gitops import GitOpsInfo
from deployplane.devcluster.manifests import Applier

pytestmark = pytest.mark.skipif(gitops.skip_reason() is not None, reason=str(gitops.skip_reason()))
BOTS = ("support-bot", "triage-bot")
# Their deployments' names on the control plane: examples/gitops/flux.yaml's patches give
# Flux's copy names of its own (on the demo, Argo CD's copy holds the overlay's).
ON_CONTROL_PLANE = {"support-bot": "flux-support-bot", "triage-bot": "flux-triage-bot"}


def _ready_at(flux: Flux, name: str, sha: str) -> dict[str, Any] | None:
    """The Kustomization once Ready=True for the revision `sha`."""
    obj = flux.kustomizations.get(name)
    ready = ready_condition(obj)
    applied = ((obj or {}).get("status") or {}).get("lastAppliedRevision", "")
    return obj if ready.get("status") == "True" and applied.endswith(sha) else None


def test_ready_only_when_every_agentdeployment_is_ready_a_hand_edit_reverted_and_prune(
    flux: Flux,
    resources: Resources,
    emulator: Emulator,
    info: GitOpsInfo,
    namespace: str,
    operator: Any,
    applier: Applier,
    tmp_path: Path,
) -> None:
    repo = GitRepo(info, namespace, tmp_path / "repo")
    sha = push_agents(repo, emulator)
    applier.apply(flux_objects(namespace, repo.url, namespace))
    try:
        samples: list[tuple[str, bool]] = []

        def ready() -> dict[str, Any] | None:
            obj = _ready_at(flux, namespace, sha)
            samples.append(
                (
                    ready_condition(flux.kustomizations.get(namespace)).get("status", ""),
                    all_ready(resources, BOTS),
                )
            )
            return obj

        wait_until("the Kustomization Ready", ready)
        assert all(every for status, every in samples if status == "True")
        assert any(status != "True" for status, _ in samples), "never seen waiting"
        assert all_ready(resources, BOTS)

        # A hand edit of a field git sets: the operator follows it, and Flux puts git's
        # value back at its next reconcile (its interval, or the request made here).
        deployed = ON_CONTROL_PLANE["support-bot"]
        from_git = spec_image(resources, "support-bot")
        by_hand = {"imageUri": "registry.example.com/acme/by-hand:1"}
        resources.patch(AGD, "support-bot", {"spec": {"sourceRevisionConfig": by_hand}})
        wait_until(
            "the hand edit on the control plane",
            lambda: control_plane_image(emulator, deployed) == by_hand["imageUri"],
        )
        flux.reconcile(namespace)
        wait_until(
            "git's image back, on the resource and on the control plane",
            lambda: (
                spec_image(resources, "support-bot") == from_git
                and all_ready(resources, BOTS)
                and control_plane_image(emulator, deployed) == from_git
            ),
        )

        # Removed from git: pruned, its finalizer honoured, its deployment deleted.
        assert len(emulator.deployments_named(ON_CONTROL_PLANE["triage-bot"])) == 1
        path = repo.workdir / "agents" / "agentdeployments.yaml"
        kept = [
            d for d in yaml.safe_load_all(path.read_text()) if d["metadata"]["name"] in BOTS[:1]
        ]
        path.write_text(yaml.safe_dump_all(kept, sort_keys=False))
        second = repo.push("remove triage-bot")
        flux.reconcile(namespace)
        wait_until("triage-bot pruned", functools.partial(gone, resources, AGD, "triage-bot"))
        assert emulator.deployments_named(ON_CONTROL_PLANE["triage-bot"]) == []
        wait_until("Ready at the new commit", functools.partial(_ready_at, flux, namespace, second))
    finally:
        _delete(flux, resources, namespace)
    assert emulator.deployments_named(ON_CONTROL_PLANE["support-bot"]) == []


def test_kustomization_is_not_ready_while_an_agentdeployment_is_stalled(
    flux: Flux,
    resources: Resources,
    emulator: Emulator,
    info: GitOpsInfo,
    namespace: str,
    operator: Any,
    applier: Applier,
    tmp_path: Path,
) -> None:
    repo = GitRepo(info, namespace, tmp_path / "repo")
    broken = f"registry.example.com/acme/triage-bot{UNBUILDABLE}"
    push_agents(repo, emulator, {"triage-bot": broken})
    applier.apply(flux_objects(namespace, repo.url, namespace))
    try:

        def not_ready() -> dict[str, Any] | None:
            ready = ready_condition(flux.kustomizations.get(namespace))
            return (
                ready
                if ready.get("status") == "False" and ready.get("reason") == "HealthCheckFailed"
                else None
            )

        ready = wait_until("Ready=False", not_ready)
        assert f"AgentDeployment/{namespace}/triage-bot" in ready["message"], ready
        assert "Failed" in ready["message"], ready
        stalled = resources.get(AGD, "triage-bot")
        assert stalled is not None
        assert any(
            c["type"] == "Stalled" and c["reason"] == "BuildFailed"
            for c in stalled["status"]["conditions"]
        ), stalled["status"]

        # Fixed in git: Ready.
        fixed = push_agents(
            repo, emulator, {"triage-bot": "registry.example.com/acme/triage-bot:2"}
        )
        flux.reconcile(namespace)
        wait_until("Ready once fixed", functools.partial(_ready_at, flux, namespace, fixed))
        assert all_ready(resources, BOTS)
    finally:
        _delete(flux, resources, namespace)


def test_applied_at_once_with_its_listener_it_never_adopts_a_deployment_of_the_same_name(
    flux: Flux,
    resources: Resources,
    emulator: Emulator,
    info: GitOpsInfo,
    namespace: str,
    operator: Any,
    applier: Applier,
    tmp_path: Path,
) -> None:
    """Flux applies every object at once, so an AgentDeployment's first passes find its
    Listener without an id yet. A deployment named like it already exists on the control
    plane (someone else's: another namespace's, the CLI's): it must stay theirs, untouched,
    and this resource stall with Conflict, never adopt it as its own lost create."""
    theirs = "registry.example.com/someone-else:1"
    body = {
        "name": ON_CONTROL_PLANE["support-bot"],
        "source": "external_docker",
        "source_config": {},
        "source_revision_config": {"image_uri": theirs},
        "secrets": [],
    }
    with emulator.http() as h:
        created = h.post("/v2/deployments", json=body)
        assert created.status_code == 201, created.text
    repo = GitRepo(info, namespace, tmp_path / "repo")
    push_agents(repo, emulator)
    applier.apply(flux_objects(namespace, repo.url, namespace))
    try:
        stalled = wait_until(
            "support-bot Stalled with Conflict",
            lambda: (
                (obj := resources.get(AGD, "support-bot"))
                and any(
                    c["type"] == "Stalled" and c["reason"] == "Conflict"
                    for c in (obj.get("status") or {}).get("conditions") or []
                )
                and obj
            ),
        )
        assert not stalled["status"].get("deploymentId"), stalled["status"]
        (deployment,) = emulator.deployments_named(ON_CONTROL_PLANE["support-bot"])
        assert deployment["id"] == created.json()["id"]
        with emulator.http() as h:
            now = h.get(f"/v2/deployments/{deployment['id']}").json()
        assert now["source_revision_config"]["image_uri"] == theirs
        assert not (now.get("source_config") or {}).get("listener_id"), now["source_config"]
        assert ready_condition(flux.kustomizations.get(namespace)).get("status") != "True"
    finally:
        _delete(flux, resources, namespace)
    # Deleting the resource that never owned it leaves their deployment alone.
    assert len(emulator.deployments_named(ON_CONTROL_PLANE["support-bot"])) == 1


def _delete(flux: Flux, resources: Resources, name: str, deployed: tuple[str, ...] = BOTS) -> None:
    """The Kustomization deleted: with `prune`, Flux deletes what it applied (and the
    operator, still running, each deployment), then the GitRepository."""
    flux.kustomizations.delete(name)
    wait_until("the Kustomization deleted", lambda: flux.kustomizations.get(name) is None)
    flux.sources.delete(name)
    for plural, kind_name in [(AGD, bot) for bot in BOTS] + [(LST, "dev-cluster")]:
        wait_until(f"{kind_name} deleted", functools.partial(gone, resources, plural, kind_name))
