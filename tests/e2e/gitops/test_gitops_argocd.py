"""Argo CD, built here, syncs deployplane's resources from a git repository on the dev
cluster and judges them with its own controller and the chart's health check.

Skipped unless DEPLOYPLANE_E2E_GITOPS=1 (`make e2e-gitops`): the session's cluster is
`deployplane dev cluster up --gitops --workloads` (tests/support/gitops.py). Each test
pushes examples/gitops/agents/ as it is, beside an overlay of the test's own (the
connection pointed at the test's emulator: tests/support/gitops_harness.py), to a repository
of the cluster's git server and applies examples/gitops/argocd-*.yaml with only its
name, repository, overlay and destination namespace set; the operator runs on the host
(KopfRunner) for the test's namespace. What is asserted is Argo CD's own status of the
Application: `status.sync.status`, `status.health.status`, the synced revision, the
sync history, the health it recorded per resource, and its sync operations as a watch
saw it write them (tests/support/applicationwatch.py: a read of `status.operationState`
may find a retry in flight or the next operation).
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from tests.support import gitops
from tests.support.applicationwatch import ApplicationWatch, Operation, OperationState
from tests.support.gitops import GitRepo
from tests.support.gitops_harness import (
    AGD,
    CONN,
    LST,
    REFRESH,
    UNBUILDABLE,
    Applications,
    all_ready,
    app_status,
    application,
    argo_application,
    control_plane_image,
    gone,
    overlay,
    push_agents,
    push_overlay,
    resource_health,
    spec_image,
    verdict,
    wait_until,
)
from tests.support.operator_harness import (
    Emulator,
    Resources,
    condition,
)

from deployplane.devcluster.gitops import GitOpsInfo
from deployplane.devcluster.processes import pid_runs

pytestmark = pytest.mark.skipif(gitops.skip_reason() is not None, reason=str(gitops.skip_reason()))
# It stops the session's cluster (tests/e2e/conftest.py runs it after every other test).
RUN_LAST = ("test_down_stops_every_process_and_leaves_nothing",)
BOTS = ("support-bot", "triage-bot")
LLM_KEY_REF = {"name": "llm-keys", "key": "openai"}
FINALIZER = "deployplane.io/finalizer"
EXTERNAL_NAME = "deployplane.io/external-name"
# Argo CD's tracking label (the annotation argocd.argoproj.io/tracking-id by default).
INSTANCE = "app.kubernetes.io/instance"


def _created(obj: dict[str, Any] | None) -> str:
    assert obj is not None
    return str(obj["metadata"]["creationTimestamp"])


def test_waves_then_healthy_only_when_every_agentdeployment_is_ready_and_synced_stays(
    apps: Applications,
    resources: Resources,
    emulator: Emulator,
    info: GitOpsInfo,
    namespace: str,
    operator: Any,
    tmp_path: Path,
    k8s_api: client.ApiClient,
) -> None:
    repo = GitRepo(info, namespace, tmp_path / "repo")
    sha = push_agents(repo, emulator)
    body = application(namespace, repo.url, namespace, "argocd-application.yaml")
    with apps.watch(namespace) as seen, argo_application(apps, resources, body):
        # Argo CD's verdict and every AgentDeployment's Ready, sampled together until
        # Argo CD calls the Application Synced and Healthy at the pushed commit.
        samples: list[tuple[tuple[str, str, str], bool]] = []

        def synced_and_healthy() -> bool:
            said = verdict(apps.get(namespace))
            samples.append((said, all_ready(resources, BOTS)))
            return said == ("Synced", "Healthy", sha)

        wait_until("Synced and Healthy", synced_and_healthy)
        healthy = [ready for said, ready in samples if said == ("Synced", "Healthy", sha)]
        assert all(healthy), "Argo CD said Healthy before every AgentDeployment was Ready"
        # Progressing on the way, as Argo CD wrote it (every version up to the last read).
        written = [verdict(app) for app in seen.through(apps.get(namespace))]
        assert any(health == "Progressing" for _, health, _ in written), written
        assert all_ready(resources, BOTS)

        # The sync waves: the connection, then the Listener once the connection was
        # Healthy, then the AgentDeployments once the Listener was.
        connection, listener = resources.get(CONN, "default"), resources.get(LST, "dev-cluster")
        assert _created(connection) < _created(listener)
        assert condition(connection, "Ready")["lastTransitionTime"] <= _created(listener)
        for name in BOTS:
            bot = resources.get(AGD, name)
            assert _created(listener) < _created(bot)
            assert condition(listener, "Ready")["lastTransitionTime"] <= _created(bot)

        # The operator's writes (status, finalizer, external-name annotation, the outputs
        # ConfigMap it owns) and the apiserver's defaults are no drift: still Synced and
        # Healthy over several comparisons with git, and never synced again.
        # The sync's history entry is written before the sync ends (controller/sync.go).
        wait_until(
            "the sync ended",
            lambda: (
                (ops := seen.operations(seen.through(apps.get(namespace))))
                and all(op.done for op in ops)
            ),
        )
        app = apps.get(namespace)
        assert app is not None
        history = len(app["status"].get("history") or [])
        for name in BOTS:
            bot = resources.get(AGD, name)
            assert bot is not None
            assert FINALIZER in bot["metadata"]["finalizers"]
            assert bot["metadata"]["annotations"][EXTERNAL_NAME] == name
        for _ in range(3):
            before = app["status"]["reconciledAt"]
            # reconciledAt has a precision of seconds: a comparison within the second
            # of the last one could not be told from it.
            time.sleep(1)
            apps.refresh(namespace)
            app = wait_until(
                "another comparison", functools.partial(_compared_after, apps, namespace, before)
            )
            assert verdict(app) == ("Synced", "Healthy", sha), json.dumps(app["status"])[:3000]
            assert len(app["status"].get("history") or []) == history, "synced again"
        # The outputs ConfigMap: still there (pruning is on), carrying none of Argo CD's
        # tracking (no label or annotation copied from its AgentDeployment), so never one
        # of the Application's own resources.
        outputs = client.CoreV1Api(k8s_api).read_namespaced_config_map(
            "support-bot-outputs", namespace
        )
        assert outputs.data["deploymentId"]
        marks = {**(outputs.metadata.labels or {}), **(outputs.metadata.annotations or {})}
        assert not [key for key in marks if "argoproj.io" in key or key == INSTANCE], marks
        managed = {(r["kind"], r["name"]) for r in app["status"]["resources"]}
        assert ("ConfigMap", "support-bot-outputs") not in managed, managed


def _compared_after(apps: Applications, name: str, before: str) -> dict[str, Any] | None:
    """The Application once compared with git after `before`, and the refresh request
    served (Argo CD removes its annotation then)."""
    app = apps.get(name)
    meta, status = (app or {}).get("metadata") or {}, (app or {}).get("status") or {}
    served = REFRESH not in (meta.get("annotations") or {})
    return app if served and status.get("reconciledAt", before) > before else None


def _status(resources: Resources, name: str) -> dict[str, Any]:
    bot = resources.get(AGD, name)
    assert bot is not None
    return dict(bot["status"])


def test_commit_hand_edit_prune_and_cascade_delete(
    apps: Applications,
    resources: Resources,
    emulator: Emulator,
    info: GitOpsInfo,
    namespace: str,
    operator: Any,
    tmp_path: Path,
) -> None:
    repo = GitRepo(info, namespace, tmp_path / "repo")
    first = push_agents(repo, emulator)
    body = application(namespace, repo.url, namespace, "argocd-application.yaml")
    with apps.watch(namespace) as seen, argo_application(apps, resources, body):
        wait_until(
            "Synced and Healthy",
            lambda: verdict(apps.get(namespace)) == ("Synced", "Healthy", first),
        )
        revision = _status(resources, "support-bot")["latestRevisionId"]

        # A commit that changes a spec: a new revision, deployed, Synced and Healthy.
        image = "registry.example.com/acme/support-bot:1.1.0"
        second = push_agents(repo, emulator, {"support-bot": image})
        apps.refresh(namespace)
        wait_until(
            "the new commit Synced and Healthy",
            lambda: (
                verdict(apps.get(namespace)) == ("Synced", "Healthy", second)
                and all_ready(resources, BOTS)
            ),
        )
        assert _status(resources, "support-bot")["latestRevisionId"] != revision
        assert control_plane_image(emulator, "support-bot") == image

        # A hand edit of the spec is reverted by self-heal; the control plane follows git.
        # (What had started before it: a sync's last wave can be followed at once by a
        # self-heal of what Argo CD's cache had not seen applied yet.)
        before = seen.operations(seen.through(apps.get(namespace)))
        by_hand = {"imageUri": "registry.example.com/acme/by-hand:1"}
        resources.patch(AGD, "support-bot", {"spec": {"sourceRevisionConfig": by_hand}})
        wait_until("self-heal", lambda: spec_image(resources, "support-bot") == image)
        wait_until(
            "Synced and Healthy after self-heal",
            lambda: (
                verdict(apps.get(namespace)) == ("Synced", "Healthy", second)
                and all_ready(resources, BOTS)
                and control_plane_image(emulator, "support-bot") == image
            ),
        )
        # ... by an automated sync of Argo CD's of that resource alone (self-heal syncs only
        # what is out of sync, and records no history entry for it): the first operation
        # after the edit.
        heal = seen.operations(seen.through(apps.get(namespace)))[len(before)]
        assert heal.automated, heal.request
        assert heal.resources == {("AgentDeployment", "support-bot")}, heal.request

        # Removed from git: pruned, its finalizer honoured, its deployment deleted.
        triage = emulator.deployments_named("triage-bot")
        assert len(triage) == 1
        path = repo.workdir / "agents" / "agentdeployments.yaml"
        kept = [
            d for d in yaml.safe_load_all(path.read_text()) if d["metadata"]["name"] in BOTS[:1]
        ]
        path.write_text(yaml.safe_dump_all(kept, sort_keys=False))
        third = repo.push("remove triage-bot")
        apps.refresh(namespace)
        wait_until("triage-bot pruned", lambda: resources.get(AGD, "triage-bot") is None)
        assert emulator.deployments_named("triage-bot") == []
        wait_until(
            "Synced and Healthy without triage-bot",
            lambda: verdict(apps.get(namespace)) == ("Synced", "Healthy", third),
        )
        assert len(emulator.deployments_named("support-bot")) == 1
    # The Application deleted with cascade (its resources finalizer): every resource gone,
    # and through the operator's finalizer the deployment on the control plane too.
    for plural, name in ((AGD, "support-bot"), (LST, "dev-cluster"), (CONN, "default")):
        wait_until(f"{plural}/{name} deleted", functools.partial(gone, resources, plural, name))
    assert emulator.deployments_named("support-bot") == []


def test_failed_build_and_refused_spec_are_degraded(
    apps: Applications,
    resources: Resources,
    emulator: Emulator,
    info: GitOpsInfo,
    namespace: str,
    operator: Any,
    tmp_path: Path,
) -> None:
    repo = GitRepo(info, namespace, tmp_path / "repo")
    broken = f"registry.example.com/acme/triage-bot{UNBUILDABLE}"
    sha = push_agents(repo, emulator, {"triage-bot": broken})
    body = application(namespace, repo.url, namespace, "argocd-application.yaml")
    with argo_application(apps, resources, body):
        # Synced (the sync applied everything) and Degraded (the build failed): each
        # said by one comparison of Argo CD's, so waited for together.
        app = wait_until(
            "Synced and Degraded",
            lambda: (a := apps.get(namespace)) and verdict(a) == ("Synced", "Degraded", sha) and a,
        )
        health = resource_health(app, "AgentDeployment", "triage-bot")
        assert health.get("status") == "Degraded", app["status"].get("resources")
        assert "BuildFailed" in health.get("message", ""), health
        # The other deployment goes on to Healthy; the Application stays Degraded.
        app = wait_until(
            "support-bot Healthy beside the failed build",
            lambda: (
                (a := apps.get(namespace))
                and resource_health(a, "AgentDeployment", "support-bot").get("status") == "Healthy"
                and verdict(a)[0] == "Synced"
                and a
            ),
        )
        assert verdict(app) == ("Synced", "Degraded", sha)

        # A spec the control plane refuses (an image reference no registry could serve).
        refused = "registry.example.com/acme/Triage-Bot:1"
        second = push_agents(repo, emulator, {"triage-bot": refused})
        apps.refresh(namespace)

        def refused_spec_degraded() -> dict[str, Any] | None:
            app = apps.get(namespace)
            health = resource_health(app, "AgentDeployment", "triage-bot")
            degraded = verdict(app)[1:] == ("Degraded", second)
            return app if degraded and "InvalidSpec" in health.get("message", "") else None

        app = wait_until("Degraded by the refused spec", refused_spec_degraded)
        message = resource_health(app, "AgentDeployment", "triage-bot")["message"]
        # The control plane's 422, naming the field of its API body.
        assert "image_uri: not a valid image reference" in message, message

        # Fixed in git: Healthy again.
        third = push_agents(
            repo, emulator, {"triage-bot": "registry.example.com/acme/triage-bot:2"}
        )
        apps.refresh(namespace)
        wait_until(
            "Healthy again", lambda: verdict(apps.get(namespace)) == ("Synced", "Healthy", third)
        )


LLM_KEYS = """\
apiVersion: v1
kind: Secret
metadata:
  name: llm-keys
stringData:
  openai: sk-e2e-not-secret
"""


def test_a_refused_commit_then_a_missing_secret_each_fixed_by_a_commit_synced_on_its_own(
    apps: Applications,
    resources: Resources,
    emulator: Emulator,
    info: GitOpsInfo,
    namespace: str,
    operator: Any,
    tmp_path: Path,
) -> None:
    """No sync is started by hand. A commit the apiserver refuses fails the sync; the
    next commit is synced by a retry of that sync at the newest commit (the example's
    `retry`: `refresh`, a short backoff), rather than after Argo CD's default retries of
    the refused one. That commit has support-bot read a Secret the repository does not
    hold yet: Argo CD shows it Progressing with the operator's reason (the chart's health
    check, run by Argo CD itself). The commit that adds the Secret is synced by the
    automated sync, and all is Healthy.

    Argo CD rewrites `status.operationState` at each step and replaces it with the next
    operation's (a self-heal may follow a sync at once: tests/support/applicationwatch.py),
    so what is asserted of the operations is what a watch saw Argo CD write."""
    repo = GitRepo(info, namespace, tmp_path / "repo")
    body = overlay(emulator, repo.name)
    bot = {"kind": "AgentDeployment", "name": "support-bot"}
    refused = [{"op": "replace", "path": "/spec/source", "value": "no-such-source"}]
    body["patches"].append({"target": bot, "patch": json.dumps(refused)})
    first = push_overlay(repo, body)
    app_body = application(namespace, repo.url, namespace, "argocd-application.yaml")
    show = app_status(apps, namespace)
    with apps.watch(namespace) as seen, argo_application(apps, resources, app_body):
        # The sync of the refused commit: an attempt failed on support-bot, which the
        # apiserver refused naming the field; its retry due.
        failed = wait_until(
            "the refused commit's sync failed", functools.partial(_failed_attempt, seen), show=show
        )
        assert failed.revision == first, failed.raw
        result = failed.resource_result("AgentDeployment", "support-bot")
        assert result.get("status") == "SyncFailed", failed.raw
        assert 'spec.source: Unsupported value: "no-such-source"' in result["message"], result

        # The next commit: support-bot valid, reading a Secret not in git.
        secret = [{"name": "OPENAI_API_KEY", "valueFrom": {"secretKeyRef": LLM_KEY_REF}}]
        body["patches"][-1]["patch"] = json.dumps(
            [{"op": "add", "path": "/spec/secrets", "value": secret}]
        )
        second = push_overlay(repo, body)
        apps.refresh(namespace)  # what a webhook asks: compare with git now (no sync)

        # Synced by the operation that failed: a retry of it, at the newest commit.
        retried = wait_until(
            "the refused commit's sync ended",
            functools.partial(_ended, seen, failed),
            show=show,
        )
        assert retried.final is not None
        assert (retried.final.phase, retried.final.revision) == ("Succeeded", second), retried
        assert retried.final.retry_count >= 1, retried.final.raw
        assert retried.automated, retried.request
        assert not retried.resources, retried.request
        # Argo CD's history says so too: the sync of that commit began with the refused one.
        history = ((apps.get(namespace) or {}).get("status") or {}).get("history") or []
        began = [entry["deployStartedAt"] for entry in history if entry["revision"] == second]
        assert began == [failed.started_at], history

        def waiting() -> dict[str, Any] | None:
            app = apps.get(namespace)
            health = resource_health(app, "AgentDeployment", "support-bot")
            message = health.get("message", "")
            progressing = health.get("status") == "Progressing" and verdict(app)[1] == "Progressing"
            return app if progressing and "DependencyNotReady" in message else None

        app = wait_until("support-bot Progressing on its Secret", waiting, show=show)
        assert "llm-keys" in resource_health(app, "AgentDeployment", "support-bot")["message"]

        # The fix, in git: the Secret beside the overlay.
        body["resources"].append("llm-keys.yaml")
        third = push_overlay(repo, body, {"llm-keys.yaml": LLM_KEYS})
        apps.refresh(namespace)
        wait_until(
            "the fixing commit Synced and Healthy",
            lambda: (
                verdict(apps.get(namespace)) == ("Synced", "Healthy", third)
                and all_ready(resources, BOTS)
            ),
            show=show,
        )
        synced = wait_until(
            "the fixing commit's sync ended",
            functools.partial(_whole_sync_succeeded, seen, third),
            show=show,
        )
        assert synced.automated, synced.request
        # Every operation Argo CD ran was its own (its automated sync, its self-heal).
        operations = seen.operations(seen.through(apps.get(namespace)))
        assert all(op.automated for op in operations), [op.request for op in operations]


def _failed_attempt(seen: ApplicationWatch) -> OperationState | None:
    """The first attempt of a sync Argo CD wrote as failed with a retry due."""
    states = (state for op in seen.operations() for state in op.states)
    return next((state for state in states if state.failed_awaiting_retry), None)


def _ended(seen: ApplicationWatch, state: OperationState) -> Operation | None:
    """The operation that wrote `state`, once it has ended."""
    found = [op for op in seen.operations() if state in op.states]
    return found[0] if found and found[0].done else None


def _whole_sync_succeeded(seen: ApplicationWatch, revision: str) -> Operation | None:
    """The first sync of every resource that succeeded at `revision`."""
    for op in seen.operations():
        final = op.final
        if final and not op.resources and (final.phase, final.revision) == ("Succeeded", revision):
            return op
    return None


def test_the_chart_as_an_application_installs_the_operator_and_its_crds_server_side(
    apps: Applications,
    resources: Resources,
    info: GitOpsInfo,
    namespace: str,
    tmp_path: Path,
    k8s_api: client.ApiClient,
) -> None:
    """The operator's chart, from the git repository, synced by Argo CD with
    ServerSideApply. Its pods run on the cluster's kwok nodes (simulated: the operator
    the other tests use runs on the host); what is tested is Argo CD's sync and verdict."""
    repo = GitRepo(info, f"{namespace}-chart", tmp_path / "repo")
    repo.copy_tree(gitops.REPO / "charts" / "deployplane", "charts/deployplane")
    sha = repo.push("the chart")
    # Argo CD names the Helm release after the Application: at most 53 characters.
    name = f"deployplane-{namespace[-6:]}"
    body = application(name, repo.url, namespace, "argocd-operator.yaml", "charts/deployplane")
    values = body["spec"]["source"]["helm"]["valuesObject"]
    values["fullnameOverride"] = name
    with argo_application(apps, resources, body):
        app = wait_until(
            "the chart Synced and Healthy",
            lambda: (a := apps.get(name)) and verdict(a) == ("Synced", "Healthy", sha) and a,
            show=app_status(apps, name),
        )
        kinds = {(r["kind"], r["name"]) for r in app["status"]["resources"]}
        assert ("CustomResourceDefinition", "agentdeployments.deployplane.io") in kinds
        assert ("Deployment", values["fullnameOverride"]) in kinds
        crd = client.ApiextensionsV1Api(k8s_api).read_custom_resource_definition(
            "agentdeployments.deployplane.io"
        )
        managers = {(m.manager, m.operation) for m in crd.metadata.managed_fields}
        assert ("argocd-controller", "Apply") in managers, managers
        annotations = crd.metadata.annotations or {}
        assert "kubectl.kubernetes.io/last-applied-configuration" not in annotations


def test_down_stops_every_process_and_leaves_nothing(gitops_session: gitops.Session) -> None:
    """`deployplane dev cluster down` stops every server `up --gitops` started, by pid."""
    state = json.loads((gitops_session.state_dir / "state.json").read_text())
    names = {p["name"] for p in state["processes"]}
    assert {
        "argocd-redis",
        "argocd-repo-server",
        "argocd-application-controller",
        "source-controller",
        "kustomize-controller",
        "git-server",
    } <= names
    gitops.deployplane("dev", "cluster", "down", "--state-dir", str(gitops_session.state_dir))
    alive = [p["name"] for p in state["processes"] if pid_runs(p["pid"], p["executable"])]
    assert alive == []
    assert gitops.processes_mentioning(str(gitops_session.state_dir)) == []
    assert not gitops_session.state_dir.exists()
