"""kube-score (github.com/zegl/kube-score, built by `tools/k8s/build.sh kube-score`), the
workload linter platform teams run over a chart before it reaches a cluster: its
CRITICAL findings on our rendered objects, and the one list of findings this project
excuses (`EXCUSES`), each by kube-score's check id and comment, with the reason.
docs/install.md ("What kube-score says") prints the same list; a test keeps the two alike.

The binary lives next to the Kubernetes tools: DEPLOYPLANE_TOOLS_BIN, else the build
script's bin dir, else PATH (`gotools.checker_binary`).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import yaml
from tests.support import gotools

ROOT = Path(__file__).resolve().parents[2]
CRITICAL = 1
"""kube-score's grade of a CRITICAL check (WARNING is 5, OK 10)."""


class Source(Enum):
    """What was scored: the install (the chart and the kustomize base), or the objects the
    data plane renders for a deployment (`deployplane.dataplane.render`)."""

    INSTALL = "the chart and the kustomize base"
    DATA_PLANE = "the data plane's rendered workloads"


@dataclass(frozen=True)
class Finding:
    """One comment of a CRITICAL check on one object."""

    object: str  # kube-score's object name: Deployment/apps/v1/<namespace>/<name>
    check: str  # the check's id, e.g. container-resources
    container: str  # "" for a finding about the pod or the object
    summary: str

    def __str__(self) -> str:
        where = f" ({self.container})" if self.container else ""
        return f"{self.object}{where}: [{self.check}] {self.summary}"


@dataclass(frozen=True)
class Excuse:
    check: str
    summaries: tuple[str, ...]
    sources: frozenset[Source]
    reason: str

    def covers(self, finding: Finding, source: Source) -> bool:
        return (
            source in self.sources
            and finding.check == self.check
            and finding.summary in self.summaries
        )


BOTH = frozenset(Source)
EXCUSES: tuple[Excuse, ...] = (
    Excuse(
        "container-image-pull-policy",
        ("ImagePullPolicy is not set to Always",),
        BOTH,
        "Contested. `Always` makes every container start ask the registry, so a registry "
        "outage or rate limit stops restarts and scale-ups, for an image that a pinned tag "
        "already names; the chart pins its tag (the appVersion) and leaves `pullPolicy` a "
        "value, and the data plane deploys the image the revision names, with Kubernetes' "
        "default policy for its tag.",
    ),
    Excuse(
        "container-resources",
        ("CPU limit is not set",),
        frozenset({Source.INSTALL}),
        "Contested. A CPU limit throttles a container by its CFS quota even on an idle "
        "node: the operator's one event loop then stalls, and with it the passes and the "
        "probes, in the bursts it exists for. The CPU request gives it its share under "
        "contention; memory and local disk are limited. (The data plane's CPU limits are "
        "the deployment's own `cpu_limit` fields.)",
    ),
    Excuse(
        "container-security-context-user-group-id",
        ("Container has no configured security context",),
        frozenset({Source.DATA_PLANE}),
        "The images are not ours to change: the agent server's is the user's (built by "
        "`langgraph build` on the vendor's base image, which runs as root and may write "
        "its working directory), PostgreSQL's and Redis's official images start as root "
        "to prepare their data directories and drop to their own user (uid 999). The "
        "vendor's data plane runs them as built; a forced user or read-only root would "
        "break images that run there. A platform team enforces Pod Security admission on "
        "the listener's namespaces instead.",
    ),
    Excuse(
        "container-security-context-readonlyrootfilesystem",
        ("Container has no configured security context",),
        frozenset({Source.DATA_PLANE}),
        "As for the user and group ids: the images write where they were built to write.",
    ),
    Excuse(
        "container-ephemeral-storage-request-and-limit",
        ("Ephemeral Storage request is not set", "Ephemeral Storage limit is not set"),
        frozenset({Source.DATA_PLANE}),
        "The published contract has no field for it, and no size can be known here: what "
        "the agent server writes is the user's code's, Redis's snapshot is as large as its "
        "data, PostgreSQL's data is on its volume. A guessed limit would have the kubelet "
        "evict a working pod.",
    ),
    Excuse(
        "deployment-has-poddisruptionbudget",
        ("No matching PodDisruptionBudget was found",),
        frozenset({Source.DATA_PLANE}),
        "Asked of an agent server with `min_scale` 2 or more. The published contract has "
        "no field for it and the vendor's data plane renders none (its self-hosted chart "
        "ships `pdb.enabled: false`); a platform team that drains nodes adds one in the "
        "listener's namespace (selector `app.kubernetes.io/component: agent-server`).",
    ),
    Excuse(
        "deployment-targeted-by-hpa-does-not-have-replicas-configured",
        (
            "The deployment is targeted by a HPA, but a static replica count is configured "
            "in the DeploymentSpec",
        ),
        frozenset({Source.DATA_PLANE}),
        "`replicas` is `min_scale`: a revision is DEPLOYED once that many of its pods are "
        "Ready (the rollout reads the Deployment's `replicas`), and the agent applies a "
        "revision once (an unchanged render is never applied again). The cost: a new "
        "revision starts from `min_scale`, and the HPA scales up again from there.",
    ),
)


def kube_score() -> Path:
    return gotools.checker_binary("kube-score")


def _kubernetes_version() -> str:
    versions = (ROOT / "tools" / "k8s" / "versions.env").read_text()
    (line,) = [v for v in versions.splitlines() if v.startswith("K8S_VERSION=")]
    major, minor, _ = line.split("=", 1)[1].split(".")
    return f"v{major}.{minor}"


def score(documents: Iterable[Mapping[str, Any]]) -> list[Finding]:
    """kube-score's CRITICAL findings on `documents` (every check it runs by default,
    for the Kubernetes version the project builds)."""
    text = yaml.safe_dump_all([dict(d) for d in documents])
    argv = [str(kube_score()), "score", "-", "-o", "json"]
    argv += ["--kubernetes-version", _kubernetes_version()]
    done = subprocess.run(argv, input=text, capture_output=True, text=True, timeout=60)
    # Exit code 1 means "found something": the findings are in the output either way.
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise RuntimeError(f"kube-score failed ({done.returncode}): {done.stderr.strip()}")
    findings = []
    for scored in json.loads(done.stdout):
        for check in scored["checks"]:
            if check["skipped"] or check["grade"] != CRITICAL:
                continue
            for comment in check["comments"] or [{"path": "", "summary": check["check"]["name"]}]:
                findings.append(
                    Finding(
                        scored["object_name"],
                        check["check"]["id"],
                        comment.get("path", ""),
                        comment["summary"],
                    )
                )
    return findings


def unexcused(findings: Iterable[Finding], source: Source) -> list[Finding]:
    return [f for f in findings if not any(e.covers(f, source) for e in EXCUSES)]


def excuses_used(findings: Iterable[Finding], source: Source) -> set[Excuse]:
    return {e for f in findings for e in EXCUSES if e.covers(f, source)}
