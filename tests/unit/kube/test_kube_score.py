"""What a platform team's linter says: kube-score on the chart (default values, the real
node's values, every component on), the kustomize base and its examples, and the objects
the data plane renders (agent server, queue, PostgreSQL, Redis; with and without KEDA and
routing; both runtimes). No CRITICAL finding is left that `tests/support/kubescore.py`
does not excuse by check, object and container, with its reason; docs/install.md lists
the same excuses."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support import chart, gotools, kubescore
from tests.support.kubescore import EXCUSES, Finding, Source
from tests.support.renderinputs import (
    IMAGE,
    PASSWORD,
    SECRET_VALUES,
    make_deployment,
    make_listener,
    make_revision,
)

from deployplane.api.dataplane import ServerRuntime
from deployplane.dataplane.render import DataPlaneSettings, Rendered, render, with_owner

ROOT = Path(__file__).resolve().parents[3]
REAL_NODE_VALUES = ROOT / "examples" / "helm" / "real-node-values.yaml"
INSTALL_DOC = ROOT / "docs" / "install.md"
CONTESTED = {
    ("container-image-pull-policy", "ImagePullPolicy is not set to Always"),
    ("container-resources", "CPU limit is not set"),
}

CHART_VALUES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "real-node values": yaml.safe_load(REAL_NODE_VALUES.read_text()),
    "everything on": {
        "replicaCount": 2,
        "shards": ["a"],
        "controlPlane": {"url": "https://control.example.com", "apiKeySecret": {"name": "cp"}},
        "emulator": {"enabled": True, "builtinDataplane": {"namespace": "agents"}},
        "listenerAgent": {
            "enabled": True,
            "listenerName": "example",
            "namespaces": ["agents"],
            "autoscaler": "keda",
        },
    },
}
KUSTOMIZATIONS = {
    "base": ROOT / "manifests",
    "listener agent": ROOT / "manifests" / "listener-agent",
    "shards overlay": ROOT / "examples" / "kustomize" / "shards",
}
# Every resource field a deployment can set for its workloads: the requests and limits
# are the user's (an unset one is kube-score's `container-resources` finding).
RESOURCES = {
    "min_scale": 2,
    "max_scale": 4,
    "cpu": 0.5,
    "cpu_limit": 1,
    "memory_mb": 512,
    "memory_limit_mb": 1024,
    "queue_min_scale": 1,
    "queue_max_scale": 3,
    "queue_cpu": 0.25,
    "queue_cpu_limit": 1,
    "queue_memory_mb": 256,
    "queue_memory_limit_mb": 512,
    "redis_cpu": 0.1,
    "redis_cpu_limit": 0.5,
    "redis_memory_mb": 128,
    "db_cpu": 0.5,
    "db_cpu_limit": 1,
    "db_memory_mb": 512,
    "db_memory_limit_mb": 1024,
    "db_storage_gi": 2,
}
GATEWAY = {"routing": "gateway", "host": "{id}.agents.example.com", "gateway_name": "public"}
DATA_PLANE: dict[str, tuple[ServerRuntime, dict[str, Any]]] = {
    "hpa, no routing": (ServerRuntime.POSTGRES, {}),
    "keda, gateway": (ServerRuntime.POSTGRES, {"autoscaler": "keda", **GATEWAY}),
    "hpa, ingress": (ServerRuntime.POSTGRES, {"routing": "ingress", "host": "a.example.com"}),
    "in-memory runtime": (ServerRuntime.INMEM, {}),
    "in-memory runtime, ingress": (
        ServerRuntime.INMEM,
        {"routing": "ingress", "host": "a.example.com", "routing_namespace": "ingress"},
    ),
}


@pytest.fixture(scope="module", autouse=True)
def _tools() -> None:
    try:
        kubescore.kube_score()
        chart.helm_binary()
    except (gotools.CheckerNotFound, chart.HelmNotFound) as e:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(str(e), pytrace=False)
        pytest.skip(str(e))


def _rendered(
    runtime: ServerRuntime, settings: Mapping[str, Any], spec: Mapping[str, Any]
) -> list[dict[str, Any]]:
    rendered: Rendered = render(
        make_deployment(dict(spec)),
        make_revision(),
        make_listener(),
        IMAGE,
        secret_values=SECRET_VALUES,
        database_password=PASSWORD,
        settings=DataPlaneSettings(**settings),
        runtime=runtime,
    )
    return [rendered.owner, *with_owner(rendered.objects, "owner-uid")]


@pytest.fixture(scope="module")
def install_findings() -> dict[str, list[Finding]]:
    found = {
        f"chart, {name}": kubescore.score(chart.render(values))
        for name, values in CHART_VALUES.items()
    }
    for name, path in KUSTOMIZATIONS.items():
        found[f"kustomize, {name}"] = kubescore.score(chart.kustomize(path))
    return found


@pytest.fixture(scope="module")
def data_plane_findings() -> dict[str, list[Finding]]:
    return {
        name: kubescore.score(_rendered(runtime, settings, RESOURCES))
        for name, (runtime, settings) in DATA_PLANE.items()
    }


def test_helm_template_shows_no_critical_finding_beyond_the_two_contested_checks(
    install_findings: dict[str, list[Finding]],
) -> None:
    for name, findings in install_findings.items():
        found = {(f.check, f.summary) for f in findings}
        assert found <= CONTESTED, (name, [str(f) for f in findings])
    defaults = install_findings["chart, defaults"]
    assert {(f.check, f.summary) for f in defaults} == CONTESTED, "the contested two remain"


@pytest.mark.parametrize("variant", list(DATA_PLANE))
def test_the_rendered_data_plane_has_no_critical_finding_left_unexcused(
    variant: str, data_plane_findings: dict[str, list[Finding]]
) -> None:
    left = kubescore.unexcused(data_plane_findings[variant], Source.DATA_PLANE)
    assert not left, [str(f) for f in left]


def test_an_unset_resource_spec_adds_only_the_users_requests_and_limits() -> None:
    """The deployment's resource_spec decides its requests and limits; left unset, kube-
    score says so, and nothing else changes."""
    findings = kubescore.score(_rendered(ServerRuntime.POSTGRES, {}, {"max_scale": 3}))
    left = kubescore.unexcused(findings, Source.DATA_PLANE)
    assert left
    assert {f.check for f in left} == {"container-resources"}, [str(f) for f in left]


def test_the_data_plane_without_its_network_policy_is_a_critical_finding() -> None:
    """The check works on our objects: the NetworkPolicy setting off, every pod is
    reported (what the default-on policy prevents)."""
    findings = kubescore.score(
        _rendered(ServerRuntime.POSTGRES, {"network_policy": False}, RESOURCES)
    )
    left = kubescore.unexcused(findings, Source.DATA_PLANE)
    assert {(f.check, f.summary) for f in left} == {
        ("pod-networkpolicy", "The pod does not have a matching NetworkPolicy")
    }
    assert len(left) == 4  # agent server, queue, Redis, PostgreSQL


def test_a_container_the_excuses_do_not_name_is_not_excused() -> None:
    """Excused by object and container: a sidecar of the resource spec is the user's
    own, and kube-score's findings on it are not covered by the agent server's."""
    sidecar = {"name": "proxy", "image": "envoy:1", "resources": {"limits": {"cpu": "1"}}}
    spec = {**RESOURCES, "sidecars": [sidecar]}
    findings = kubescore.score(_rendered(ServerRuntime.POSTGRES, {}, spec))
    left = kubescore.unexcused(findings, Source.DATA_PLANE)
    assert left
    assert {f.container for f in left} == {"proxy"}, [str(f) for f in left]


def test_every_excuse_is_still_needed(
    install_findings: dict[str, list[Finding]],
    data_plane_findings: dict[str, list[Finding]],
) -> None:
    used = set()
    for findings in install_findings.values():
        used |= kubescore.excuses_used(findings, Source.INSTALL)
    for findings in data_plane_findings.values():
        used |= kubescore.excuses_used(findings, Source.DATA_PLANE)
    stale = [e.check for e in EXCUSES if e not in used]
    assert not stale, f"excused but no longer found: {stale}"
    # and every object and container it names
    findings = [f for found in data_plane_findings.values() for f in found]
    findings += [f for found in install_findings.values() for f in found]
    for excuse in EXCUSES:
        for where in excuse.where:
            assert any(where.matches(f) and excuse.covers(f, excuse.source) for f in findings), (
                f"{excuse.check}: {where} no longer found"
            )


def test_docs_list_every_excuse_with_its_reason() -> None:
    text = " ".join(INSTALL_DOC.read_text().split())
    for excuse in EXCUSES:
        assert f"`{excuse.check}`" in text, excuse.check
        for summary in excuse.summaries:
            assert summary in text, summary
        assert " ".join(excuse.reason.split()) in text, f"{excuse.check}: reason"
        row = next(
            line
            for line in INSTALL_DOC.read_text().splitlines()
            if line.startswith(f"| `{excuse.check}`") and " ".join(excuse.reason.split()) in line
        )
        for where in excuse.where:
            assert str(where) in row, f"{excuse.check}: {where} not in its row"
