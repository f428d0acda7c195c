"""kube-score (github.com/zegl/kube-score, built by `tools/k8s/build.sh kube-score`), the
workload linter platform teams run over a chart before it reaches a cluster: its
CRITICAL findings on our rendered objects, and the one list of findings this project
excuses (`EXCUSES`), each by kube-score's check id and comment, the objects and
containers it is excused on, and the reason.
docs/install.md ("What kube-score says") prints the same list; a test keeps the two alike.

The binary lives next to the Kubernetes tools: DEPLOYPLANE_TOOLS_BIN, else the build
script's bin dir, else PATH (`gotools.checker_binary`).
"""

from __future__ import annotations

import json
import re
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


# A data-plane object's name: `B`, the deployment's base name (a slug and 8 hex digits
# of its id, render/context.py), with the component's suffix.
_BASE = r"[a-z][a-z0-9-]*-[0-9a-f]{8}"


@dataclass(frozen=True)
class Where:
    """An object and one of its containers (or "" for the object itself). `name` is the
    object's name; `B` in it stands for a deployment's base name, `*` for any text."""

    kind: str
    name: str
    container: str = ""

    def matches(self, finding: Finding) -> bool:
        kind, *_, name = finding.object.split("/")
        pattern = re.escape(self.name).replace("B", _BASE).replace(r"\*", ".*")
        return (
            kind == self.kind
            and re.fullmatch(pattern, name) is not None
            and finding.container == self.container
        )

    def __str__(self) -> str:
        return f"{self.kind} `{self.name}`" + (f" ({self.container})" if self.container else "")


@dataclass(frozen=True)
class Excuse:
    """One CRITICAL check excused, only on the objects and containers `where` names, for
    `reason`: a container added later is not excused by it."""

    check: str
    summaries: tuple[str, ...]
    source: Source
    where: tuple[Where, ...]
    reason: str

    def covers(self, finding: Finding, source: Source) -> bool:
        return (
            source is self.source
            and finding.check == self.check
            and finding.summary in self.summaries
            and any(where.matches(finding) for where in self.where)
        )


# The install's workloads, by Deployment and container: the operator (and its shards),
# the in-cluster emulator, the listener agent.
INSTALL_WORKLOADS = (
    Where("Deployment", "deployplane", "operator"),
    Where("Deployment", "deployplane-shard-*", "operator"),
    Where("Deployment", "deployplane-emulator", "emulator"),
    Where("Deployment", "deployplane-listener-agent", "listener-agent"),
)
# The user's image: the agent server and the queue workers.
USERS_IMAGE = (
    Where("Deployment", "B", "agent-server"),
    Where("Deployment", "B-queue", "queue"),
)
DATA_PLANE_WORKLOADS = (
    *USERS_IMAGE,
    Where("Deployment", "B-redis", "redis"),
    Where("StatefulSet", "B-db", "postgres"),
)
PULL_POLICY_REASON = (
    "Contested. `Always` makes every container start ask the registry, so a registry "
    "outage or rate limit stops restarts and scale-ups, for an image that a pinned tag "
    "already names; the chart pins its tag (the appVersion) and leaves `pullPolicy` a "
    "value, and the data plane deploys the image the revision names, with Kubernetes' "
    "default policy for its tag."
)
EXCUSES: tuple[Excuse, ...] = (
    Excuse(
        "container-image-pull-policy",
        ("ImagePullPolicy is not set to Always",),
        Source.INSTALL,
        INSTALL_WORKLOADS,
        PULL_POLICY_REASON,
    ),
    Excuse(
        "container-image-pull-policy",
        ("ImagePullPolicy is not set to Always",),
        Source.DATA_PLANE,
        DATA_PLANE_WORKLOADS,
        PULL_POLICY_REASON,
    ),
    Excuse(
        "container-resources",
        ("CPU limit is not set",),
        Source.INSTALL,
        INSTALL_WORKLOADS,
        "Contested. A CPU limit throttles a container by its CFS quota even on an idle "
        "node: the operator's one event loop then stalls, and with it the passes and the "
        "probes, in the bursts it exists for. The CPU request gives it its share under "
        "contention; memory and local disk are limited. (The data plane's CPU limits are "
        "the deployment's own `cpu_limit` fields.)",
    ),
    Excuse(
        "container-security-context-user-group-id",
        (
            "The container is running with a low user ID",
            "The container running with a low group ID",
        ),
        Source.DATA_PLANE,
        USERS_IMAGE,
        "The image is the user's, and it keeps the user it declares: the published "
        "contract has no field for the agent server's or the queue's securityContext, and "
        "a user forced here would not own the files the image was built with. The pod "
        "says `runAsNonRoot`, so the kubelet refuses an image that runs as root "
        '(docs/dataplane.md, "Pod Security").',
    ),
    Excuse(
        "container-security-context-user-group-id",
        (
            "The container is running with a low user ID",
            "The container running with a low group ID",
        ),
        Source.DATA_PLANE,
        (Where("StatefulSet", "B-db", "postgres"),),
        "PostgreSQL runs as 999, the official image's `postgres` user: that image, started "
        "as root, drops to 999, so every database it has made is 999's, and PostgreSQL "
        "starts only as the owner of its data directory. A user above 10000 would not "
        "start a database made before.",
    ),
    Excuse(
        "container-security-context-readonlyrootfilesystem",
        ("The pod has a container with a writable root filesystem",),
        Source.DATA_PLANE,
        USERS_IMAGE,
        "As for its user: the user's image writes where it was built to write, and the "
        "published contract has no field that says where that is.",
    ),
    Excuse(
        "container-ephemeral-storage-request-and-limit",
        ("Ephemeral Storage request is not set", "Ephemeral Storage limit is not set"),
        Source.DATA_PLANE,
        DATA_PLANE_WORKLOADS,
        "The published contract has no field for it, and no size can be known here: what "
        "the agent server writes is the user's code's, Redis's snapshot is as large as its "
        "data, PostgreSQL's logs are as long as its traffic (its data is on its volume). A "
        "guessed limit would have the kubelet evict a working pod.",
    ),
    Excuse(
        "deployment-has-poddisruptionbudget",
        ("No matching PodDisruptionBudget was found",),
        Source.DATA_PLANE,
        (Where("Deployment", "B"), Where("Deployment", "B-queue")),
        "Asked of a Deployment that may run more than one pod (its autoscaler's). The "
        "published contract has no field for it and the vendor's data plane renders none "
        "(its self-hosted chart ships `pdb.enabled: false`); a platform team that drains "
        "nodes adds one in the listener's namespace (selector `app.kubernetes.io/component: "
        "agent-server` or `queue`).",
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
