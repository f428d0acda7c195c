"""The chart's listener agent (`listenerAgent.enabled`), rendered by the real `helm
template`: what it installs, and that its RBAC is a Role in each of the listener's
namespaces plus a read of its own Listener, nothing cluster-wide.

That these grants are enough on a real apiserver is proven in tests/e2e/test_dataplane.py.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from tests.support import chart
from tests.support.chart import Doc, env_of, find_all

LISTENER_ID = "d3910ba1-0000-4000-8000-0000000000aa"
BY_NAME: dict[str, Any] = {
    "listenerAgent": {
        "enabled": True,
        "listenerName": "example",
        "listenerNamespace": "agents",
        "namespaces": ["agents", "agents-prod"],
    },
    "controlPlane": {
        "url": "https://control.example.com",
        "tenantId": "ws-1",
        "apiKeySecret": {"name": "cp-credentials", "key": "token"},
    },
}
AGENT = f"{chart.RELEASE}-listener-agent"
PROBES = ["--liveness", "http://0.0.0.0:8080/healthz", "--readiness", "http://0.0.0.0:8081/readyz"]
NAMED = {"enabled": True, "listenerName": "x", "namespaces": ["a"]}


@pytest.fixture(scope="module", autouse=True)
def _helm() -> None:
    chart.require_helm()


def agent_docs(docs: list[Doc]) -> list[Doc]:
    return [d for d in docs if d["metadata"]["name"].startswith(AGENT)]


def test_disabled_by_default() -> None:
    assert agent_docs(chart.render()) == []


def test_roles_in_the_listeners_namespaces_and_a_read_of_its_own_listener() -> None:
    docs = agent_docs(chart.render(BY_NAME))
    kinds = sorted((d["kind"], d["metadata"].get("namespace", "")) for d in docs)
    assert kinds == [
        ("Deployment", chart.NAMESPACE),
        ("NetworkPolicy", chart.NAMESPACE),
        ("Role", "agents"),
        ("Role", "agents"),
        ("Role", "agents-prod"),
        ("RoleBinding", "agents"),
        ("RoleBinding", "agents"),
        ("RoleBinding", "agents-prod"),
        ("ServiceAccount", chart.NAMESPACE),
    ]
    listener_role = next(d for d in docs if d["metadata"]["name"] == f"{AGENT}-listener")
    assert listener_role["rules"] == [
        {
            "apiGroups": ["deployplane.io"],
            "resources": ["listeners"],
            "resourceNames": ["example"],
            "verbs": ["get"],
        }
    ]
    for binding in find_all(docs, "RoleBinding"):
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": AGENT, "namespace": chart.NAMESPACE}
        ]


def test_agent_rbac_is_least_privilege() -> None:
    docs = chart.render(BY_NAME)
    assert not [
        d
        for d in docs
        if d["kind"] in ("ClusterRole", "ClusterRoleBinding")
        and "listener" in d["metadata"]["name"]
    ]
    for role in find_all(agent_docs(docs), "Role"):
        for rule in role["rules"]:
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]
            assert not {"watch", "update", "escalate", "bind"} & set(rule["verbs"]) or (
                rule["resources"] == ["configmaps/finalizers"]
            )
            if rule["resources"] == ["secrets", "services"]:
                assert "list" not in rule["verbs"]  # never reads Secrets it did not write


def test_agent_deployment_runs_listener_run_configured_like_the_operator() -> None:
    (deployment,) = find_all(agent_docs(chart.render(BY_NAME)), "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == AGENT
    (container,) = pod["containers"]
    assert container["command"] == ["deployplane", "listener", "run"]
    assert container["args"] == ["--listener", "example", "--namespace", "agents", *PROBES]
    env = env_of(container)
    assert env["DEPLOYPLANE_CONTROL_PLANE_URL"] == "https://control.example.com"
    assert env["DEPLOYPLANE_TENANT_ID"] == "ws-1"
    assert env["DEPLOYPLANE_API_KEY"] == {
        "secretKeyRef": {"name": "cp-credentials", "key": "token"}
    }
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}


def test_listener_id_needs_no_listener_role() -> None:
    values = {"listenerAgent": {"enabled": True, "listenerId": LISTENER_ID, "namespaces": ["a"]}}
    docs = agent_docs(chart.render(values))
    assert [d["metadata"]["name"] for d in find_all(docs, "Role")] == [AGENT]
    (deployment,) = find_all(docs, "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args == ["--listener-id", LISTENER_ID, *PROBES]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"enabled": True, "namespaces": ["a"]}, "needs listenerAgent.listenerId"),
        ({"enabled": True, "listenerName": "x"}, "needs listenerAgent.namespaces"),
        ({"enabled": True, "listenerId": "nope", "namespaces": ["a"]}, "schema"),
        ({"enabled": True, "listenerName": "x", "namespaces": ["Bad_NS"]}, "schema"),
        ({"enabled": True, "listenerName": "x", "namespaces": ["a"], "pollInterval": 0}, "schema"),
        ({**NAMED, "autoscaler": "vpa"}, "schema"),
        ({**NAMED, "routing": "istio"}, "schema"),
        ({**NAMED, "routing": "ingress"}, "needs listenerAgent.route.host"),
        (
            {**NAMED, "routing": "gateway", "route": {"host": "a.example.com"}},
            "needs listenerAgent.route.gateway.name",
        ),
        ({**NAMED, "route": {"basePath": "/a b"}}, "schema"),
    ],
)
def test_bad_listener_agent_values_are_refused(values: dict[str, Any], message: str) -> None:
    error = chart.render_error({"listenerAgent": values})
    assert message in error, error


def test_helm_lint_is_clean_with_the_listener_agent(tmp_path: Any) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(BY_NAME))
    out = chart.helm("lint", "--strict", str(chart.CHART), "--values", str(values), check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[WARNING]" not in out.stdout, out.stdout


def test_kustomize_example_grants_what_the_chart_grants() -> None:
    try:
        example = chart.kustomize(chart.MANIFESTS / "listener-agent")
    except chart.HelmNotFound as exc:
        pytest.skip(str(exc))
    values = {
        "listenerAgent": {
            "enabled": True,
            "listenerName": "dev-cluster",
            "listenerNamespace": "agents",
            "namespaces": ["agents"],
        }
    }
    rendered = agent_docs(chart.render(values))

    def rules(docs: list[Doc]) -> list[Any]:
        return sorted(
            (str(d["metadata"]["name"].endswith("-listener")), d["rules"])
            for d in find_all(docs, "Role")
        )

    assert rules(example) == rules(rendered)
    (deployment,) = find_all(example, "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["deployplane", "listener", "run"]
    (chart_deployment,) = find_all(rendered, "Deployment")
    theirs = chart_deployment["spec"]["template"]["spec"]["containers"][0]
    for key in ("ports", "livenessProbe", "readinessProbe"):
        assert container[key] == theirs[key], key
    assert container["args"][-4:] == theirs["args"][-4:] == PROBES
    assert not [d for d in example if d["kind"].startswith("Cluster")]


def _rules(values: dict[str, Any]) -> list[Any]:
    docs = agent_docs(chart.render({"listenerAgent": {**NAMED, **values}}))
    (role,) = [d for d in find_all(docs, "Role") if not d["metadata"]["name"].endswith("-listener")]
    return [(tuple(r["apiGroups"]), tuple(r["resources"])) for r in role["rules"]]


def test_grants_follow_the_settings() -> None:
    default = _rules({})
    assert (("networking.k8s.io",), ("networkpolicies",)) in default
    assert not [r for r in default if r[0] in (("keda.sh",), ("gateway.networking.k8s.io",))]
    assert (("networking.k8s.io",), ("networkpolicies",)) not in _rules({"networkPolicy": False})
    assert (("networking.k8s.io",), ("ingresses",)) in _rules(
        {"routing": "ingress", "route": {"host": "a.example.com"}}
    )
    gateway = _rules(
        {"routing": "gateway", "route": {"host": "a.example.com", "gateway": {"name": "gw"}}}
    )
    assert (("gateway.networking.k8s.io",), ("httproutes",)) in gateway
    keda = _rules({"autoscaler": "keda"})
    assert (("keda.sh",), ("scaledobjects",)) in keda
    assert (("keda.sh",), ("triggerauthentications",)) in keda


def test_the_agent_may_delete_only_its_owners_and_the_autoscalers_it_retires() -> None:
    """The autoscalers a render no longer makes (autoscaling turned off) are deleted, or
    they would go on scaling; everything else goes with its owner."""
    docs = agent_docs(chart.render({"listenerAgent": {**NAMED, "autoscaler": "keda"}}))
    (role,) = [d for d in find_all(docs, "Role") if not d["metadata"]["name"].endswith("-listener")]
    deletable = {
        resource
        for rule in role["rules"]
        if "delete" in rule["verbs"]
        for resource in rule["resources"]
    }
    assert deletable == {"configmaps", "horizontalpodautoscalers", "scaledobjects"}


def test_cluster_wide_is_one_cluster_role_with_the_same_rules() -> None:
    values = {"listenerAgent": {**NAMED, "clusterWide": True, "autoscaler": "keda"}}
    docs = agent_docs(chart.render(values))
    (role,) = find_all(docs, "ClusterRole")
    (binding,) = find_all(docs, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"] == AGENT
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": AGENT, "namespace": chart.NAMESPACE}
    ]
    namespaced = [d for d in find_all(docs, "Role") if d["metadata"]["name"] == AGENT]
    assert namespaced == []
    assert [(tuple(r["apiGroups"]), tuple(r["resources"])) for r in role["rules"]] == _rules(
        {"autoscaler": "keda"}
    )
    # Without namespaces too: the listener's own k8s_namespaces still bound the agent.
    lone = {"listenerAgent": {"enabled": True, "listenerName": "x", "clusterWide": True}}
    assert find_all(agent_docs(chart.render(lone)), "ClusterRole")


def test_agent_settings_reach_the_agent_environment() -> None:
    values = {
        "listenerAgent": {
            **NAMED,
            "autoscaler": "keda",
            "routing": "gateway",
            "route": {
                "host": "{id}.agents.example.com",
                "basePath": "/lg",
                "gateway": {"name": "public", "namespace": "infra", "sectionName": "https"},
            },
            "networkPolicy": False,
            "podSecurity": "baseline",
        }
    }
    (deployment,) = find_all(agent_docs(chart.render(values)), "Deployment")
    env = env_of(deployment["spec"]["template"]["spec"]["containers"][0])
    assert env["DEPLOYPLANE_AUTOSCALER"] == "keda"
    assert env["DEPLOYPLANE_ROUTING"] == "gateway"
    assert env["DEPLOYPLANE_ROUTE_HOST"] == "{id}.agents.example.com"
    assert env["DEPLOYPLANE_ROUTE_BASE_PATH"] == "/lg"
    assert env["DEPLOYPLANE_GATEWAY"] == "infra/public"
    assert env["DEPLOYPLANE_GATEWAY_SECTION"] == "https"
    assert env["DEPLOYPLANE_NETWORK_POLICY"] == "false"
    assert env["DEPLOYPLANE_POD_SECURITY"] == "baseline"
    assert env["DEPLOYPLANE_POSTGRES_IMAGE"] == "pgvector/pgvector:pg16"
    assert env["DEPLOYPLANE_REDIS_IMAGE"] == "redis:7.4-alpine"
    # What the chart writes is what the agent reads.
    from deployplane.dataplane.render.settings import PodSecurity, from_env

    settings = from_env({k: v for k, v in env.items() if isinstance(v, str)})
    assert settings.gateway_namespace == "infra"
    assert settings.network_policy is False
    assert settings.pod_security is PodSecurity.BASELINE
