"""Listeners shared across namespaces: the pure rule, and the resolver applying it."""

from __future__ import annotations

from typing import Any, cast

import pytest
from tests.support.fakekube import FakeKube

from deployplane.api.client import ControlPlaneClient
from deployplane.externals.agentdeployment.resolve import Resolver
from deployplane.externals.listeneraccess import ListenerNotAllowed, matches, refusal
from deployplane.kinds.agentdeployment.spec import AgentDeploymentSpec
from deployplane.kinds.agentdeployment.status import AgentDeploymentStatus
from deployplane.kinds.listener.spec import AllowedNamespaces
from deployplane.reconcile.external import DependencyNotReady, Managed

LISTENER_ID = "0b4a8d6e-3f1c-4c35-9a57-7c1f2e0d9b11"
TEAM = {"team": "a", "tier": "prod"}


def allowed(**raw: Any) -> AllowedNamespaces:
    return AllowedNamespaces.model_validate(raw)


RULES: dict[str, tuple[AllowedNamespaces | None, str, dict[str, str], bool]] = {
    "own namespace, no rule": (None, "infra", {}, True),
    "another namespace, no rule (Same)": (None, "team-a", TEAM, False),
    "Same": (allowed(**{"from": "Same"}), "team-a", TEAM, False),
    "All": (allowed(**{"from": "All"}), "team-a", {}, True),
    "Selector, matchLabels match": (
        allowed(**{"from": "Selector", "selector": {"matchLabels": {"team": "a"}}}),
        "team-a",
        TEAM,
        True,
    ),
    "Selector, matchLabels differ": (
        allowed(**{"from": "Selector", "selector": {"matchLabels": {"team": "b"}}}),
        "team-a",
        TEAM,
        False,
    ),
    "Selector, In": (
        allowed(
            **{
                "from": "Selector",
                "selector": {
                    "matchExpressions": [
                        {"key": "tier", "operator": "In", "values": ["prod", "staging"]}
                    ]
                },
            }
        ),
        "team-a",
        TEAM,
        True,
    ),
    "Selector, NotIn": (
        allowed(
            **{
                "from": "Selector",
                "selector": {
                    "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["prod"]}]
                },
            }
        ),
        "team-a",
        TEAM,
        False,
    ),
    "Selector, invalid (In without values)": (
        allowed(
            **{
                "from": "Selector",
                "selector": {"matchExpressions": [{"key": "tier", "operator": "In"}]},
            }
        ),
        "team-a",
        TEAM,
        False,
    ),
}


@pytest.mark.parametrize(("rule", "namespace", "labels", "ok"), RULES.values(), ids=RULES.keys())
def test_the_rule(
    rule: AllowedNamespaces | None, namespace: str, labels: dict[str, str], ok: bool
) -> None:
    problem = refusal(rule, "infra/shared", namespace, labels)
    assert (problem is None) is ok, problem
    if problem:
        assert "listener infra/shared" in problem


def test_the_refusal_names_the_rule_and_the_namespace() -> None:
    assert refusal(None, "infra/shared", "team-a", {}) == (
        "listener infra/shared allows namespaces: Same (its spec.allowedNamespaces); "
        "namespace team-a is not allowed"
    )


@pytest.mark.parametrize(
    ("expression", "labels", "want"),
    [
        ({"key": "x", "operator": "Exists"}, {"x": ""}, True),
        ({"key": "x", "operator": "Exists"}, {}, False),
        ({"key": "x", "operator": "DoesNotExist"}, {}, True),
        ({"key": "x", "operator": "NotIn", "values": ["1"]}, {}, True),
        ({"key": "x", "operator": "In", "values": ["1"]}, {}, False),
    ],
)
def test_selector_expressions(
    expression: dict[str, Any], labels: dict[str, str], want: bool
) -> None:
    rule = allowed(**{"from": "Selector", "selector": {"matchExpressions": [expression]}})
    assert rule.selector is not None
    assert matches(rule.selector, labels) is want


def test_an_empty_selector_matches_every_namespace() -> None:
    rule = allowed(**{"from": "Selector", "selector": {}})
    assert refusal(rule, "infra/shared", "team-a", {}) is None


def managed(listener_ref: dict[str, Any]) -> Managed[AgentDeploymentSpec, AgentDeploymentStatus]:
    spec = AgentDeploymentSpec.model_validate(
        {
            "source": "external_docker",
            "sourceConfig": {"listenerRef": listener_ref},
            "sourceRevisionConfig": {"imageUri": "registry.example.com/agent:1"},
        }
    )
    return Managed("team-a", "bot", "uid-1", 1, spec, AgentDeploymentStatus())


def kube_with_shared_listener(rule: dict[str, Any] | None) -> FakeKube:
    kube = FakeKube()
    key = ("infra", "listeners", "shared")
    kube.specs[key] = {"computeType": "k8s", "computeId": "c1"}
    if rule is not None:
        kube.specs[key]["allowedNamespaces"] = rule
    kube.statuses[key] = {"listenerId": LISTENER_ID}
    kube.namespace_labels["team-a"] = TEAM
    return kube


async def resolve(kube: FakeKube, ref: dict[str, Any]) -> dict[str, Any]:
    desired = await Resolver(cast(ControlPlaneClient, None), kube).resolve(managed(ref))
    return desired.source_config


async def test_a_listener_that_allows_the_namespace_resolves_to_its_id() -> None:
    kube = kube_with_shared_listener({"from": "Selector", "selector": {"matchLabels": TEAM}})
    got = await resolve(kube, {"name": "shared", "namespace": "infra"})
    assert got["listener_id"] == LISTENER_ID


async def test_a_listener_that_does_not_is_refused_with_the_rule() -> None:
    kube = kube_with_shared_listener(None)
    with pytest.raises(ListenerNotAllowed, match="allows namespaces: Same") as refused:
        await resolve(kube, {"name": "shared", "namespace": "infra"})
    assert refused.value.reason == "ListenerNotAllowed"


async def test_a_missing_listener_in_another_namespace_is_not_ready() -> None:
    with pytest.raises(DependencyNotReady, match="Listener infra/absent not found"):
        await resolve(FakeKube(), {"name": "absent", "namespace": "infra"})


async def test_the_own_namespace_needs_no_permission() -> None:
    kube = FakeKube()
    kube.statuses[("team-a", "listeners", "local")] = {"listenerId": LISTENER_ID}
    got = await resolve(kube, {"name": "local", "namespace": "team-a"})
    assert got["listener_id"] == LISTENER_ID
