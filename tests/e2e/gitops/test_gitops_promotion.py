"""Promotion through GitOps: one agent, an overlay per environment, each environment's
AgentDeployment keyed by the agent and its environment (spec.agent), synced by Argo CD
(an Application per environment) or Flux (a Kustomization per environment).

Skipped unless DEPLOYPLANE_E2E_GITOPS=1 (`make e2e-gitops`). Each test pushes
examples/gitops/promotion/ as `promotion/` to a repository of the cluster's git server
(the connection pointed at the test's emulator), and applies
examples/gitops/promotion/argocd-applications.yaml (or flux.yaml) with only names, the
repository URL and the destination namespaces set: one namespace per environment, the
operator on the host watching the three. What is asserted: Argo CD's (or Flux's)
verdict at each commit, and on the control plane the deployment of each environment and
its revisions: a commit to one overlay rolls a revision of that environment's
deployment, and of no other.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support import gitops
from tests.support.gitops import EXAMPLES, GitRepo, now
from tests.support.gitops_harness import (
    REQUESTED_AT,
    Applications,
    Flux,
    app_status,
    argo_application,
    example,
    ready_condition,
    verdict,
    wait_until,
)
from tests.support.operator_harness import (
    API_KEY,
    Emulator,
    Resources,
    kopf_operator,
    operator_env,
    ready_for_generation,
)

from deployplane.devcluster.gitops import GitOpsInfo
from deployplane.devcluster.manifests import Applier

pytestmark = pytest.mark.skipif(gitops.skip_reason() is not None, reason=str(gitops.skip_reason()))

PROMOTION = EXAMPLES / "promotion"
ENVIRONMENTS = ("development", "staging", "production")
AGENT = "support-bot"
AGD = "agentdeployments"
IMAGE = "registry.example.com/acme/support-bot"


# ------------------------------------------------------------------ the repository


def _overlay_image(text: str) -> str:
    """The image an overlay gives the AgentDeployment (its imageUri patch)."""
    (patch,) = yaml.safe_load(text)["patches"]
    (op,) = [o for o in yaml.safe_load(patch["patch"]) if o["path"].endswith("/imageUri")]
    return str(op["value"])


def _with_image(text: str, image: str) -> str:
    """The overlay with its image replaced: what a promotion commit changes."""
    return text.replace(_overlay_image(text), image)


def push_promotion(
    repo: GitRepo, emulator: Emulator, images: dict[str, str] | None = None, message: str = ""
) -> str:
    """examples/gitops/promotion/ as `promotion/`, the connection pointed at the test's
    emulator with its key, and `images` (environment -> image; the others as the example
    has them) set in the overlays; committed and pushed, the commit's sha."""
    docs = list(yaml.safe_load_all((PROMOTION / "base" / "connection.yaml").read_text()))
    for doc in docs:
        if doc["kind"] == "ControlPlaneConnection":
            doc["spec"]["url"] = emulator.url
        if doc["kind"] == "Secret":
            doc["stringData"]["apiKey"] = API_KEY
    for name in ("kustomization.yaml", "agentdeployment.yaml"):
        repo.write(f"promotion/base/{name}", (PROMOTION / "base" / name).read_text())
    repo.write("promotion/base/connection.yaml", yaml.safe_dump_all(docs, sort_keys=False))
    for environment in ENVIRONMENTS:
        relative = f"overlays/{environment}/kustomization.yaml"
        overlay = (PROMOTION / relative).read_text()
        image = (images or {}).get(environment)
        repo.write(f"promotion/{relative}", _with_image(overlay, image) if image else overlay)
    return repo.push(message or "promotion")


# --------------------------------------------------------------- the environments


@pytest.fixture
def environments(namespace: str, k8s_api: client.ApiClient) -> Iterator[dict[str, str]]:
    """A namespace per environment (`<the test's namespace>-<environment>`, labelled as
    the test's, so the session's leftover check covers them), deleted afterwards."""
    core = client.CoreV1Api(k8s_api)
    labels = core.read_namespace(namespace).metadata.labels
    names = {environment: f"{namespace}-{environment}" for environment in ENVIRONMENTS}
    for name in names.values():
        meta = client.V1ObjectMeta(name=name, labels=labels)
        core.create_namespace(client.V1Namespace(metadata=meta))
    yield names
    for name in names.values():
        with contextlib.suppress(ApiException):
            core.delete_namespace(name)


@pytest.fixture
def promotion_emulator(tmp_path: Path) -> Iterator[Emulator]:
    """The control plane of the three environments (one workspace), strict: its
    revisions take a few seconds (each step 0.5 s), so each is seen in progress."""
    emu = Emulator(tmp_path / "emulator", step_seconds=0.5).start()
    yield emu
    emu.stop()


@pytest.fixture
def promotion_operator(
    environments: dict[str, str], promotion_emulator: Emulator, kubeconfig: Path, crds: None
) -> Iterator[Any]:
    env = operator_env(promotion_emulator, kubeconfig)
    with kopf_operator(tuple(environments.values()), env) as runner:
        yield runner


class Environments:
    """The AgentDeployment of each environment, and its deployment on the control
    plane."""

    def __init__(self, api: client.ApiClient, names: dict[str, str], emulator: Emulator):
        self.resources = {env: Resources(api, ns) for env, ns in names.items()}
        self.emulator = emulator

    def agentdeployment(self, environment: str) -> dict[str, Any]:
        found = self.resources[environment].get(AGD, AGENT)
        assert found is not None, environment
        return found

    def ready(self, environment: str) -> bool:
        return ready_for_generation(self.resources[environment].get(AGD, AGENT))

    def deployments(self) -> dict[str, dict[str, Any]]:
        """The agent's deployments on the control plane, by environment (the vendor
        CLI's filter, as `langgraph deploy list --agent-id` reads them)."""
        with self.emulator.http() as h:
            answer = h.get("/v2/deployments", params={"agent_id": AGENT})
            answer.raise_for_status()
        return {d["agent"]["environment"]: d for d in answer.json()["resources"]}

    def revisions(self, environment: str) -> list[dict[str, Any]]:
        deployment = self.deployments()[environment]
        with self.emulator.http() as h:
            answer = h.get(f"/v2/deployments/{deployment['id']}/revisions")
            answer.raise_for_status()
        resources: list[dict[str, Any]] = answer.json()["resources"]
        return resources

    def snapshot(self) -> dict[str, tuple[str, str, int]]:
        """Each environment's (deployment id, image, number of revisions)."""
        deployments = self.deployments()
        return {
            env: (
                deployments[env]["id"],
                deployments[env]["source_revision_config"]["image_uri"],
                len(self.revisions(env)),
            )
            for env in ENVIRONMENTS
        }


@pytest.fixture
def envs(
    k8s_api: client.ApiClient, environments: dict[str, str], promotion_emulator: Emulator
) -> Environments:
    return Environments(k8s_api, environments, promotion_emulator)


def _deployed_at(envs: Environments, environment: str, image: str) -> bool:
    """The environment's AgentDeployment Ready for its generation, its latest revision
    on the control plane DEPLOYED with `image`."""
    if not envs.ready(environment):
        return False
    latest = envs.revisions(environment)[0]
    return bool(
        latest["status"] == "DEPLOYED" and latest["source_revision_config"]["image_uri"] == image
    )


# ------------------------------------------------------------------------ Argo CD


def applications(
    prefix: str, repo_url: str, environments: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """examples/gitops/promotion/argocd-applications.yaml with the names, repository
    and destination namespaces set (path, sync policy and options as the example has
    them), by environment."""
    apps = {}
    for app in example("promotion/argocd-applications.yaml"):
        environment = app["spec"]["source"]["path"].rsplit("/", 1)[-1]
        app["metadata"]["name"] = f"{prefix}-{environment}"
        app["spec"]["source"]["repoURL"] = repo_url
        app["spec"]["destination"]["namespace"] = environments[environment]
        apps[environment] = app
    assert sorted(apps) == sorted(ENVIRONMENTS)
    return apps


def test_argocd_promotes_from_development_to_production_one_overlay_at_a_time(
    apps: Applications,
    envs: Environments,
    environments: dict[str, str],
    promotion_emulator: Emulator,
    info: GitOpsInfo,
    namespace: str,
    promotion_operator: Any,
    tmp_path: Path,
) -> None:
    repo = GitRepo(info, namespace, tmp_path / "repo")
    first = push_promotion(repo, promotion_emulator)
    bodies = applications(namespace, repo.url, environments)
    names = {env: body["metadata"]["name"] for env, body in bodies.items()}
    with contextlib.ExitStack() as stack:
        for body in bodies.values():
            stack.enter_context(argo_application(apps, envs.resources["development"], body))

        def all_at(sha: str) -> bool:
            return all(verdict(apps.get(n)) == ("Synced", "Healthy", sha) for n in names.values())

        def statuses() -> dict[str, Any]:
            return {name: app_status(apps, name)() for name in names.values()}

        wait_until("every environment Synced and Healthy", lambda: all_at(first), show=statuses)
        # One deployment per environment, each named by the control plane for its agent
        # and environment, each running its overlay's image.
        start = envs.snapshot()
        assert {env: d["name"] for env, d in envs.deployments().items()} == {
            env: f"{AGENT}-{env}" for env in ENVIRONMENTS
        }
        for environment in ENVIRONMENTS:
            status = envs.agentdeployment(environment)["status"]
            assert status["deploymentId"] == start[environment][0]
            overlay = PROMOTION / "overlays" / environment / "kustomization.yaml"
            assert start[environment][1] == _overlay_image(overlay.read_text())

        # A commit to the development overlay: a new revision in development only.
        candidate = f"{IMAGE}:1.3.0"
        second = push_promotion(repo, promotion_emulator, {"development": candidate}, "dev")
        for name in names.values():  # every Application compares with git at once
            apps.refresh(name)
        wait_until(
            "development Synced, Healthy and deployed at the commit",
            lambda: (
                verdict(apps.get(names["development"])) == ("Synced", "Healthy", second)
                and _deployed_at(envs, "development", candidate)
            ),
            show=app_status(apps, names["development"]),
        )
        wait_until("every environment at the commit", lambda: all_at(second), show=statuses)
        developed = envs.snapshot()
        assert developed["development"][0] == start["development"][0]  # the same deployment
        assert developed["development"][1:] == (candidate, start["development"][2] + 1)
        assert developed["staging"] == start["staging"]
        assert developed["production"] == start["production"]

        # Promoted: the production overlay gets the image development runs.
        third = push_promotion(
            repo,
            promotion_emulator,
            {"development": candidate, "production": candidate},
            "promote to production",
        )
        apps.refresh(names["production"])
        wait_until(
            "production Synced, Healthy and deployed at the commit",
            lambda: (
                verdict(apps.get(names["production"])) == ("Synced", "Healthy", third)
                and _deployed_at(envs, "production", candidate)
            ),
            show=app_status(apps, names["production"]),
        )
        promoted = envs.snapshot()
        assert promoted["production"][0] == start["production"][0]  # the same deployment
        assert promoted["production"][1:] == (candidate, start["production"][2] + 1)
        assert promoted["development"] == developed["development"]  # untouched
        assert promoted["staging"] == start["staging"]
    # The Applications deleted (cascade): every environment's deployment with them.
    wait_until("the deployments deleted", lambda: envs.deployments() == {})


# --------------------------------------------------------------------------- Flux


def flux_objects(
    prefix: str, repo_url: str, environments: dict[str, str]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """examples/gitops/promotion/flux.yaml with the names, URL and target namespaces
    set (paths, intervals, prune, wait and timeout as the example has them): the
    GitRepository, and the Kustomizations by environment."""
    source, *kustomizations = example("promotion/flux.yaml")
    source["metadata"]["name"] = prefix
    source["spec"]["url"] = repo_url
    by_environment = {}
    for kustomization in kustomizations:
        environment = kustomization["spec"]["path"].rsplit("/", 1)[-1]
        kustomization["metadata"]["name"] = f"{prefix}-{environment}"
        kustomization["spec"]["sourceRef"]["name"] = prefix
        kustomization["spec"]["targetNamespace"] = environments[environment]
        by_environment[environment] = kustomization
    assert sorted(by_environment) == sorted(ENVIRONMENTS)
    return source, by_environment


def _ready_at(flux: Flux, name: str, sha: str) -> bool:
    obj = flux.kustomizations.get(name)
    applied = ((obj or {}).get("status") or {}).get("lastAppliedRevision", "")
    return ready_condition(obj).get("status") == "True" and applied.endswith(sha)


def test_flux_promotes_to_production_and_leaves_the_other_environments_alone(
    flux: Flux,
    envs: Environments,
    environments: dict[str, str],
    promotion_emulator: Emulator,
    info: GitOpsInfo,
    namespace: str,
    promotion_operator: Any,
    applier: Applier,
    tmp_path: Path,
) -> None:
    repo = GitRepo(info, namespace, tmp_path / "repo")
    first = push_promotion(repo, promotion_emulator)
    source, kustomizations = flux_objects(namespace, repo.url, environments)
    names = {env: k["metadata"]["name"] for env, k in kustomizations.items()}
    applier.apply([source, *kustomizations.values()])
    try:
        wait_until(
            "every Kustomization Ready",
            lambda: all(_ready_at(flux, name, first) for name in names.values()),
        )
        start = envs.snapshot()
        assert {env: d["name"] for env, d in envs.deployments().items()} == {
            env: f"{AGENT}-{env}" for env in ENVIRONMENTS
        }

        release = f"{IMAGE}:1.3.0"
        second = push_promotion(repo, promotion_emulator, {"production": release}, "release")
        stamp = now()
        flux.sources.annotate(namespace, REQUESTED_AT, stamp)
        for name in names.values():
            flux.kustomizations.annotate(name, REQUESTED_AT, stamp)
        wait_until(
            "every Kustomization Ready at the commit, production deployed",
            lambda: (
                all(_ready_at(flux, name, second) for name in names.values())
                and _deployed_at(envs, "production", release)
            ),
        )
        promoted = envs.snapshot()
        assert promoted["production"][0] == start["production"][0]
        assert promoted["production"][1:] == (release, start["production"][2] + 1)
        assert promoted["development"] == start["development"]
        assert promoted["staging"] == start["staging"]
    finally:
        for name in names.values():
            flux.kustomizations.delete(name)
        wait_until(
            "the Kustomizations deleted",
            lambda: all(flux.kustomizations.get(name) is None for name in names.values()),
        )
        flux.sources.delete(namespace)
    wait_until("the deployments deleted", lambda: envs.deployments() == {})
