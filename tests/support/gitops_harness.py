"""What the GitOps tier's tests share: the test's repository (examples/gitops/agents/ as
it is, beside an overlay of the test's own for its emulator, as a user writes one per
cluster), the examples/gitops/ Application and Kustomization pointed at it, and the
verdicts of Argo CD's and Flux's own controllers read from their objects."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from tests.support.applicationwatch import ApplicationWatch
from tests.support.gitops import (
    ARGO,
    EXAMPLES,
    FLUX_KUSTOMIZATION,
    FLUX_SOURCE,
    GitRepo,
    Objects,
    now,
)
from tests.support.operator_harness import API_KEY, Emulator, Resources, ready_for_generation

from deployplane.devcluster import find_tools
from deployplane.devcluster.gitops import GitOpsInfo

AGD, LST, CONN = "agentdeployments", "listeners", "controlplaneconnections"
AGENT_FILES = ("connection.yaml", "listener.yaml", "agentdeployments.yaml")
# examples/gitops/agents/ (what every cluster shares) and the test's overlay beside it,
# as the test's repository holds them.
BASE, OVERLAY = "agents", "e2e"
BOTS = ("support-bot", "triage-bot")
# Argo CD's refresh request: what a git webhook makes the API server write.
REFRESH = "argocd.argoproj.io/refresh"
# Flux's reconcile request: what `flux reconcile` writes.
REQUESTED_AT = "reconcile.fluxcd.io/requestedAt"
# The emulator's pipeline fails revisions of images with these tags.
UNBUILDABLE, UNDEPLOYABLE = ":unbuildable", ":broken"


def gitops_emulator(workdir: Path) -> Emulator:
    """The control plane of the tier's tests: revisions take a few seconds (each step
    1 s), so Argo CD and Flux are seen judging a revision in progress, and two images
    fail, one at the build and one at the deploy."""
    failures = [
        {"image_uri_regex": f".*{UNBUILDABLE}$", "status": "BUILD_FAILED"},
        {"image_uri_regex": f".*{UNDEPLOYABLE}$", "status": "DEPLOY_FAILED"},
    ]
    config = {"pipeline": {"step_seconds": 1.0, "failures": failures}}
    return Emulator(workdir, step_seconds=1.0, config=config)


def overlay(
    emulator: Emulator,
    compute_id: str,
    images: dict[str, str] | None = None,
    name_prefix: str = "",
) -> dict[str, Any]:
    """The test's own cluster overlay of examples/gitops/agents/, as a user writes one
    for a cluster (examples/gitops/demo/ is the demo's): the connection's URL and API key
    (the test's emulator), the Listener's computeId (one per listener in a workspace),
    `images` (name -> imageUri) and, with `name_prefix`, the deployments' names on the
    control plane (`spec.name`, unique in a workspace)."""

    def patch(kind: str, name: str, op: str, path: str, value: str) -> dict[str, Any]:
        operation = [{"op": op, "path": path, "value": value}]
        return {"target": {"kind": kind, "name": name}, "patch": json.dumps(operation)}

    patches = [
        patch("ControlPlaneConnection", "default", "replace", "/spec/url", emulator.url),
        patch("Secret", "control-plane-key", "replace", "/stringData/apiKey", API_KEY),
        patch("Listener", "dev-cluster", "replace", "/spec/computeId", compute_id),
    ]
    for name, image in (images or {}).items():
        path = "/spec/sourceRevisionConfig/imageUri"
        patches.append(patch("AgentDeployment", name, "replace", path, image))
    if name_prefix:
        patches += [
            patch("AgentDeployment", name, "add", "/spec/name", f"{name_prefix}{name}")
            for name in BOTS
        ]
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [f"../{BASE}"],
        "patches": patches,
    }


def push_agents(
    repo: GitRepo, emulator: Emulator, images: dict[str, str] | None = None, name_prefix: str = ""
) -> str:
    """examples/gitops/agents/ committed as it is (`agents/`), beside the test's overlay
    (`e2e/`: `overlay`, the repository's name as the Listener's computeId), and pushed;
    the commit's sha."""
    return push_overlay(repo, overlay(emulator, repo.name, images, name_prefix))


def push_overlay(repo: GitRepo, body: dict[str, Any], files: dict[str, str] | None = None) -> str:
    """examples/gitops/agents/ as it is, and the overlay `body` with its own `files`
    (name -> text, beside its kustomization.yaml), committed and pushed; the sha."""
    repo.copy_tree(EXAMPLES / BASE, BASE)
    repo.write(f"{OVERLAY}/kustomization.yaml", yaml.safe_dump(body, sort_keys=False))
    for name, text in (files or {}).items():
        repo.write(f"{OVERLAY}/{name}", text)
    return repo.push("agents")


def agent_documents(
    emulator: Emulator,
    compute_id: str,
    images: dict[str, str] | None = None,
    name_prefix: str = "",
) -> dict[str, str]:
    """What the repository of `push_agents` renders to, for applying directly (without
    Argo CD or Flux): examples/gitops/agents/ with the test's overlay, built by kubectl's
    kustomize; one entry, the rendered stream."""
    kubectl = find_tools().kubectl
    assert kubectl is not None, "no kubectl (make tools)"
    with tempfile.TemporaryDirectory(prefix="gitops-overlay-") as scratch:
        root = Path(scratch)
        shutil.copytree(EXAMPLES / BASE, root / BASE)
        (root / OVERLAY).mkdir()
        body = overlay(emulator, compute_id, images, name_prefix)
        (root / OVERLAY / "kustomization.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
        done = subprocess.run(
            [str(kubectl), "kustomize", str(root / OVERLAY)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    return {f"{OVERLAY}.yaml": done.stdout}


def example(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((EXAMPLES / name).read_text()) if d]


# ------------------------------------------------------------------------ Argo CD


def application(
    name: str, repo_url: str, namespace: str, example_file: str, path: str = OVERLAY
) -> dict[str, Any]:
    """The example Application with its name, repository, overlay (`path`, the test's
    own by default: `push_agents`) and destination namespace set: everything else
    (project, destination server, sync policy and options, retry, finalizer) as the
    example has it."""
    (app,) = example(example_file)
    app["metadata"]["name"] = name
    app["spec"]["source"]["repoURL"] = repo_url
    app["spec"]["source"]["path"] = path
    app["spec"]["destination"]["namespace"] = namespace
    return app


class Applications(Objects):
    def __init__(self, api: client.ApiClient, info: GitOpsInfo) -> None:
        super().__init__(api, ARGO, info.argocd_namespace)

    def watch(self, name: str) -> ApplicationWatch:
        """Every version of Application `name` from now on, and the operations they
        record (tests/support/applicationwatch.py): enter it before the Application is
        created to see all of them."""
        return ApplicationWatch(self.custom.api_client, self.namespace, name)

    def refresh(self, name: str) -> None:
        """Ask for a comparison with git now (the repo-server caches a branch's head
        for 3 minutes; a git host's webhook makes the same request)."""
        self.annotate(name, REFRESH, "normal")


def verdict(app: dict[str, Any] | None) -> tuple[str, str, str]:
    """Argo CD's own (sync status, health status, synced revision) of an Application."""
    status = (app or {}).get("status") or {}
    sync, health = status.get("sync") or {}, status.get("health") or {}
    return sync.get("status", ""), health.get("status", ""), sync.get("revision", "")


def resource_health(app: dict[str, Any] | None, kind: str, name: str) -> dict[str, Any]:
    """The health Argo CD recorded for one resource of the Application."""
    for res in ((app or {}).get("status") or {}).get("resources") or []:
        if res.get("kind") == kind and res.get("name") == name:
            return dict(res.get("health") or {})
    return {}


@contextlib.contextmanager
def argo_application(
    apps: Applications, resources: Resources, body: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    """The Application applied; deleted on exit (its resources with it when it has
    Argo CD's resources finalizer), waited for while the test's operator still runs."""
    apps.custom.create_namespaced_custom_object(
        apps.group, apps.version, apps.namespace, apps.plural, body
    )
    name = body["metadata"]["name"]
    try:
        yield body
    finally:
        apps.delete(name)
        wait_until(f"Application {name} deleted", lambda: apps.get(name) is None, within=120)


# --------------------------------------------------------------------------- Flux


def flux_objects(name: str, url: str, namespace: str) -> list[dict[str, Any]]:
    """examples/gitops/flux.yaml with its names, URL, overlay (the test's: `push_agents`)
    and target namespace set; the intervals, prune, wait, timeout and patches as the
    example has them."""
    source, kustomization = example("flux.yaml")
    for doc in (source, kustomization):
        doc["metadata"]["name"] = name
    source["spec"]["url"] = url
    kustomization["spec"]["sourceRef"]["name"] = name
    kustomization["spec"]["path"] = f"./{OVERLAY}"
    kustomization["spec"]["targetNamespace"] = namespace
    return [source, kustomization]


class Flux:
    def __init__(self, api: client.ApiClient, info: GitOpsInfo) -> None:
        self.sources = Objects(api, FLUX_SOURCE, info.flux_namespace)
        self.kustomizations = Objects(api, FLUX_KUSTOMIZATION, info.flux_namespace)

    def reconcile(self, name: str) -> None:
        """`flux reconcile kustomization NAME --with-source`: the source, then the
        Kustomization, asked to look now rather than at their interval."""
        stamp = now()
        self.sources.annotate(name, REQUESTED_AT, stamp)
        self.kustomizations.annotate(name, REQUESTED_AT, stamp)


def ready_condition(obj: dict[str, Any] | None) -> dict[str, Any]:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return dict(cond)
    return {}


# ----------------------------------------------------------------------- waiting


def wait_until(
    what: str,
    probe: Callable[[], Any],
    within: float = 180.0,
    show: Callable[[], Any] | None = None,
) -> Any:
    """`probe()`'s first truthy answer (polled every 0.25 s); the bound only stops a hang.
    On a timeout the error shows `show()` (what to look at), else probe's last answer."""
    deadline = time.monotonic() + within
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.25)
    seen = show() if show is not None else last
    raise AssertionError(f"timed out waiting for {what}; last seen: {seen!r}"[:6000])


def app_status(apps: Applications, name: str) -> Callable[[], Any]:
    """What a timed-out wait on an Application shows: its status but the bulky parts."""

    def show() -> Any:
        status = dict((apps.get(name) or {}).get("status") or {})
        status.pop("history", None)
        status.pop("sourceHydrator", None)
        return status

    return show


def all_ready(resources: Resources, names: tuple[str, ...]) -> bool:
    """Every named AgentDeployment Ready for its current generation."""
    return all(ready_for_generation(resources.get(AGD, name)) for name in names)


def gone(resources: Resources, plural: str, name: str) -> bool:
    return resources.get(plural, name) is None


def spec_image(resources: Resources, name: str) -> str:
    """The imageUri of AgentDeployment `name`'s spec."""
    bot = resources.get(AGD, name)
    assert bot is not None
    return str(bot["spec"]["sourceRevisionConfig"]["imageUri"])


def control_plane_image(emulator: Emulator, name: str) -> str | None:
    """The image of the latest revision of deployment `name` on the control plane."""
    (deployment,) = emulator.deployments_named(name)
    with emulator.http() as h:
        answer = h.get(f"/v2/deployments/{deployment['id']}")
        answer.raise_for_status()
        config = answer.json().get("source_revision_config") or {}
    image = config.get("image_uri")
    return str(image) if image is not None else None
