"""`make demo GITOPS=1` (`deployplane demo up --gitops`) as docs/gitops.md has a user
take it: the demo's own examples Ready through Argo CD, then every command of
docs/gitops.md's shell blocks run as written, in order, in one shell from a root laid out
as the repository's (tests/support/demorun.py): examples/gitops/ pushed to a repository
of the demo's git server and applied as it is, Argo CD syncing it into `gitops-argocd`
and Flux into `gitops-flux` on the demo's emulator, a sync asked of Argo CD by a patch of
the Application's operation and a reconcile asked of Flux by its annotation, each
checked by the docs' own `kubectl wait`s. Then `demo down` leaves no process.

In the GitOps tier (`make e2e-gitops`, whose tools it needs), beside the session's
cluster: the demo runs one of its own. Its fixed ports (the ones examples/gitops/ names)
are held by a machine-wide lock meanwhile.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from kubernetes import client
from tests.support import gitops
from tests.support.demorun import demo, processes_using, run_gitops_doc_commands

from deployplane.devcluster import DevCluster

pytestmark = pytest.mark.skipif(gitops.skip_reason() is not None, reason=str(gitops.skip_reason()))


def test_examples_and_every_command_of_docs_gitops_run_as_written_on_the_gitops_demo(
    tmp_path: Path,
) -> None:
    state = tmp_path / "demo"
    with gitops.gitops_demo_ports():
        try:
            started = time.monotonic()
            up = demo("up", "--gitops", "--timeout", "240", state=state, timeout=420)
            assert up.returncode == 0, f"{up.stdout[-3000:]}{up.stderr[-3000:]}"
            print(f"demo up --gitops: {time.monotonic() - started:.1f} s")
            status = demo("status", state=state, timeout=60)
            assert status.returncode == 0, status.stderr
            rows = json.loads(status.stdout)
            assert len(rows) == 4, rows
            assert all(r["ready"] == "True" for r in rows), rows
            began = time.monotonic()
            ran = run_gitops_doc_commands(state, tmp_path / "root")
            print(f"{ran} commands of docs/gitops.md: {time.monotonic() - began:.1f} s")
            assert ran > 20, ran
            _both_tools_synced_the_example(state)
        finally:
            down = demo("down", state=state, timeout=120)
    assert down.returncode == 0, down.stderr
    assert processes_using(state) == []


def _both_tools_synced_the_example(state: Path) -> None:
    """What the docs' commands left: each tool's copy Ready under names of its own on
    the demo's control plane, the sync asked by hand carried out by Argo CD, the
    reconcile asked of Flux handled."""
    cluster = DevCluster.attach(state / "cluster")
    assert cluster is not None
    with cluster.admin() as api:
        custom = client.CustomObjectsApi(api)
        for namespace, prefix in (("gitops-argocd", "gitops-"), ("gitops-flux", "flux-")):
            items = custom.list_namespaced_custom_object(
                "deployplane.io", "v1alpha1", namespace, "agentdeployments"
            )["items"]
            names = {i["metadata"]["name"]: i["spec"].get("name") for i in items}
            assert names == {b: f"{prefix}{b}" for b in ("support-bot", "triage-bot")}, names
            for item in items:
                ready = [c["status"] for c in item["status"]["conditions"] if c["type"] == "Ready"]
                assert ready == ["True"], item["status"]
        app = custom.get_namespaced_custom_object(
            "argoproj.io", "v1alpha1", "argocd", "applications", "agents"
        )
        operation = app["status"]["operationState"]
        assert operation["operation"]["initiatedBy"] == {"username": "docs"}, operation
        assert operation["phase"] == "Succeeded", operation
        kustomization = custom.get_namespaced_custom_object(
            "kustomize.toolkit.fluxcd.io", "v1", "flux-system", "kustomizations", "agents"
        )
        requested = kustomization["metadata"]["annotations"]["reconcile.fluxcd.io/requestedAt"]
        assert kustomization["status"]["lastHandledReconcileAt"] == requested
