"""GitOps: from a commit to Healthy through Argo CD and to Ready through Flux, and what
their controllers hold in memory.

    DEPLOYPLANE_TOOLS_BIN=$(bash tools/k8s/build.sh path) .venv/bin/python -m bench.gitops

(`make bench-gitops`.) What runs: a dev cluster started with GitOps (Argo CD, Flux, the
git server: devcluster/gitops/), the control-plane emulator (each revision step 0.2 s),
and the operator as a `deployplane operator run` process for three namespaces. In each
namespace examples/gitops/agents/ runs Ready first: through an Argo CD Application
(examples/gitops/argocd-application.yaml), through a Flux Kustomization
(examples/gitops/flux.yaml), and applied directly. Then, `--rounds` times, support-bot's
imageUri changes:

- `direct_apply_to_ready_s`: a patch of the resource to Ready at its new generation: the
  operator and the control plane alone, the floor of the two below;
- `argocd_commit_to_healthy_s`: a push, then Argo CD's refresh request (what a git
  host's webhook makes its API server write), to the Application Synced and Healthy at
  that commit;
- `flux_commit_to_ready_s`: a push, then Flux's reconcile request (`flux reconcile
  kustomization --with-source`, what Flux's webhook receiver does), to the
  Kustomization Ready at that commit.

Medians of the rounds. Then the peak VmRSS, sampled through the run, of each GitOps
process (`RSS` lines) and `gitops_rss_mb`, their sum. Each namespace's deployments carry
its name on the control plane (`spec.name`): names are unique in a workspace.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client
from tests.support.gitops import GitRepo
from tests.support.gitops_harness import (
    AGD,
    Applications,
    Flux,
    agent_documents,
    application,
    flux_objects,
    push_agents,
    ready_condition,
    verdict,
)
from tests.support.operator_harness import Emulator, OperatorProcess, operator_env

from bench.dataplane import PeakRss
from bench.report import Figure
from deployplane.devcluster import DevCluster, find_tools
from deployplane.devcluster.gitops import PROCESS_NAMES, GitOpsInfo, read_info
from deployplane.devcluster.manifests import Applier, documents

NAMESPACES = {"argocd": "bench-argocd", "flux": "bench-flux", "direct": "bench-direct"}
COMMIT_GOAL_S = 30.0
RSS_GOAL_MB = 1024.0


def log(message: str) -> None:
    print(f"[bench.gitops {time.strftime('%H:%M:%S')}] {message}", flush=True)


def wait(what: str, probe: Callable[[], bool], within: float = 300.0) -> float:
    """Seconds until `probe()` holds (polled every 0.1 s)."""
    start = time.monotonic()
    while not probe():
        if time.monotonic() - start > within:
            raise TimeoutError(f"{what} not reached in {within:.0f}s")
        time.sleep(0.1)
    return time.monotonic() - start


def ready_at_generation(custom: client.CustomObjectsApi, namespace: str) -> bool:
    obj: dict[str, Any] = custom.get_namespaced_custom_object(
        "deployplane.io", "v1alpha1", namespace, AGD, "support-bot"
    )
    status = obj.get("status") or {}
    ready = [c for c in status.get("conditions") or [] if c["type"] == "Ready"]
    generation = obj["metadata"]["generation"]
    return (
        status.get("observedGeneration") == generation
        and bool(ready)
        and ready[0]["status"] == "True"
        and ready[0].get("observedGeneration") == generation
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--workdir", type=Path, help="keep the logs (operator, emulator, cluster) here"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-gitops-") as scratch:
        figures = run(args.workdir or Path(scratch), args.rounds)
    for figure in figures:
        print(figure.line(), flush=True)
    sys.exit(0 if all(f.met for f in figures) else 1)


def run(work: Path, rounds: int) -> list[Figure]:
    log("starting the dev cluster with --gitops")
    cluster = DevCluster(work / "cluster", tools=find_tools(), gitops=True, ready_timeout=180)
    with cluster:
        samplers = {
            p.name: PeakRss(p.pid) for p in cluster.server_processes if p.name in PROCESS_NAMES
        }
        emulator = Emulator(work / "emulator", step_seconds=0.2).start()
        try:
            times = measure(cluster, emulator, work, rounds)
        finally:
            emulator.stop()
        rss = {name: sampler.stop() for name, sampler in samplers.items()}
    figures = [
        Figure(f"{name}_s", statistics.median(values), "s", "<=", COMMIT_GOAL_S)
        for name, values in times.items()
    ]
    for name, mb in rss.items():
        # Each process's share: evidence for the sum's goal, not a goal of its own.
        print(f"RSS {name} {mb:.0f} MB", flush=True)
    figures.append(Figure("gitops_rss_mb", sum(rss.values()), "MB", "<=", RSS_GOAL_MB, 0))
    return figures


def measure(
    cluster: DevCluster, emulator: Emulator, work: Path, rounds: int
) -> dict[str, list[float]]:
    info = read_info(cluster.state_dir)
    assert info is not None
    with cluster.admin() as api:
        applier = Applier(api)
        applier.apply([yaml_doc(p) for p in sorted(Path("crds").glob("*.deployplane.io.yaml"))])
        for namespace in NAMESPACES.values():
            applier.apply(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )
        env = operator_env(emulator, cluster.kubeconfig)
        first, *others = NAMESPACES.values()
        more = tuple(a for ns in others for a in ("--namespace", ns))
        operator = OperatorProcess(first, env, work / "operator.log", extra_args=more)
        operator.start()
        try:
            return Rounds(api, applier, info, emulator, work).run(rounds)
        finally:
            operator.stop()


def yaml_doc(path: Path) -> dict[str, Any]:
    (doc,) = documents(path.read_text())
    return doc


class Rounds:
    """The three paths, brought to Ready once, then timed `rounds` times."""

    def __init__(
        self,
        api: client.ApiClient,
        applier: Applier,
        info: GitOpsInfo,
        emulator: Emulator,
        work: Path,
    ) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.applier = applier
        self.emulator = emulator
        self.apps = Applications(api, info)
        self.flux = Flux(api, info)
        self.argo_repo = GitRepo(info, NAMESPACES["argocd"], work / "argo-repo")
        self.flux_repo = GitRepo(info, NAMESPACES["flux"], work / "flux-repo")

    def run(self, rounds: int) -> dict[str, list[float]]:
        self.set_up()
        times: dict[str, list[float]] = {
            "direct_apply_to_ready": [],
            "argocd_commit_to_healthy": [],
            "flux_commit_to_ready": [],
        }
        for i in range(rounds):
            image = f"registry.example.com/acme/support-bot:2.{i}"
            times["direct_apply_to_ready"].append(self.direct(image))
            times["argocd_commit_to_healthy"].append(self.argocd(image))
            times["flux_commit_to_ready"].append(self.flux_round(image))
            log(f"round {i + 1}: " + ", ".join(f"{k} {v[-1]:.1f}s" for k, v in times.items()))
        return times

    def set_up(self) -> None:
        ns = NAMESPACES
        # Three namespaces on one control plane: each its own deployment names.
        for text in agent_documents(self.emulator, ns["direct"], None, "direct-").values():
            self.applier.apply(text, namespace=ns["direct"])
        argo_sha = push_agents(self.argo_repo, self.emulator, None, "argocd-")
        self.applier.apply(
            application("bench", self.argo_repo.url, ns["argocd"], "argocd-application.yaml")
        )
        flux_sha = push_agents(self.flux_repo, self.emulator, None, "flux-")
        self.applier.apply(flux_objects("bench", self.flux_repo.url, ns["flux"]))
        log("waiting for the three namespaces to be Ready")
        wait(
            "Argo CD Healthy",
            lambda: verdict(self.apps.get("bench")) == ("Synced", "Healthy", argo_sha),
        )
        wait("Flux Ready", lambda: self.flux_ready(flux_sha))
        wait("direct Ready", lambda: ready_at_generation(self.custom, ns["direct"]))

    def flux_ready(self, sha: str) -> bool:
        obj = self.flux.kustomizations.get("bench")
        applied = ((obj or {}).get("status") or {}).get("lastAppliedRevision", "")
        return ready_condition(obj).get("status") == "True" and applied.endswith(sha)

    def direct(self, image: str) -> float:
        ns = NAMESPACES["direct"]
        self.custom.patch_namespaced_custom_object(
            "deployplane.io", "v1alpha1", ns, AGD, "support-bot",
            {"spec": {"sourceRevisionConfig": {"imageUri": image}}},
        )  # fmt: skip
        return wait("direct Ready", lambda: ready_at_generation(self.custom, ns))

    def argocd(self, image: str) -> float:
        ns = NAMESPACES["argocd"]
        start = time.monotonic()
        sha = push_agents(self.argo_repo, self.emulator, {"support-bot": image}, "argocd-")
        self.apps.refresh("bench")
        wait(
            "Argo CD Healthy at the commit",
            lambda: (
                verdict(self.apps.get("bench")) == ("Synced", "Healthy", sha)
                and ready_at_generation(self.custom, ns)
            ),
        )
        return time.monotonic() - start

    def flux_round(self, image: str) -> float:
        start = time.monotonic()
        sha = push_agents(self.flux_repo, self.emulator, {"support-bot": image}, "flux-")
        self.flux.reconcile("bench")
        wait("Flux Ready at the commit", lambda: self.flux_ready(sha))
        return time.monotonic() - start


if __name__ == "__main__":
    main()
