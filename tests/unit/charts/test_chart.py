"""The Helm chart, rendered by the real `helm template`: what each configuration
installs, that the values schema refuses bad values, that every pod passes the
`restricted` Pod Security Standard on paper, and that RBAC stays least-privilege.

Admission of the rendered pod and the RBAC grants themselves are proven on a real
apiserver in tests/e2e/test_install.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support import chart
from tests.support.chart import Doc, env_of, find, find_all, operator_container, operator_deployment

from deployplane.dataplane.render.settings import Autoscaler, Routing, from_env
from deployplane.emulator.settings import load_config

LISTENER_ID = "d3910ba1-0000-4000-8000-0000000000aa"
EMULATOR_CONFIG = {
    "workspaces": [{"id": "11111111-1111-1111-1111-111111111111", "name": "trial", "mode": "both"}],
    "pipeline": {"step_seconds": 0.5},
}
VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "watchNamespaces": {"watchNamespaces": ["team-a", "team-b"]},
    "replicaCount 2": {"replicaCount": 2},
    "replicaCount 2 + watchNamespaces": {"replicaCount": 2, "watchNamespaces": ["team-a"]},
    "emulator": {"emulator": {"enabled": True}},
    "shards": {"replicaCount": 2, "shards": ["a", "b"]},
    "plan": {"plan": {"enabled": True, "subjects": [{"kind": "Group", "name": "ci"}]}},
    "everything": {
        "replicaCount": 3,
        "watchNamespaces": ["team-a"],
        "emulator": {"enabled": True, "config": EMULATOR_CONFIG},
        "metrics": {"serviceMonitor": {"enabled": True}},
        "controlPlane": {
            "url": "https://control.example.com",
            "tenantId": "ws-1",
            "apiKeySecret": {"name": "cp-credentials", "key": "token"},
        },
    },
}


@pytest.fixture(scope="module", autouse=True)
def _helm() -> None:
    chart.require_helm()


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[Doc]]:
    return {name: chart.render(values) for name, values in VARIANTS.items()}


def _pod_specs(docs: list[Doc]) -> Iterator[tuple[str, Doc]]:
    for d in find_all(docs, "Deployment"):
        yield d["metadata"]["name"], d["spec"]["template"]["spec"]


# ----------------------------------------------------------------------- lint


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_helm_lint_is_clean(variant: str, tmp_path: Any) -> None:
    args = ["lint", "--strict", str(chart.CHART)]
    if VARIANTS[variant]:
        values = tmp_path / "values.yaml"
        values.write_text(yaml.safe_dump(VARIANTS[variant]))
        args += ["--values", str(values)]
    out = chart.helm(*args, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 chart(s) failed" in out.stdout
    assert "[WARNING]" not in out.stdout, out.stdout
    assert "[ERROR]" not in out.stdout, out.stdout


# ------------------------------------------------------------------- defaults


def test_defaults_install_the_operator_cluster_wide(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["defaults"]
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == sorted(
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Deployment",
            "Service",
            "PodDisruptionBudget",
            "NetworkPolicy",
        ]
    )
    deployment = operator_deployment(docs)
    assert deployment["metadata"]["namespace"] == chart.NAMESPACE
    assert deployment["spec"]["replicas"] == 1
    # A lone standalone operator must never overlap with its replacement.
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    container = operator_container(docs)
    assert container["command"] == ["deployplane", "operator", "run"]
    assert container["args"][:4] == [
        "--liveness",
        "http://0.0.0.0:8080/healthz",
        "--readiness",
        "http://0.0.0.0:8081/readyz",
    ]
    assert "--json-logs" in container["args"]
    assert "--peering" not in container["args"]
    env = env_of(container)
    assert "DEPLOYPLANE_NAMESPACES" not in env
    assert env["DEPLOYPLANE_METRICS_PORT"] == "9090"
    assert env["DEPLOYPLANE_POLL_INTERVAL"] == "2"
    assert env["DEPLOYPLANE_RESYNC_INTERVAL"] == "600"
    assert (env["DEPLOYPLANE_EVENT_QPS"], env["DEPLOYPLANE_EVENT_BURST"]) == ("10", "50")
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "health": 8080,
        "ready": 8081,
        "metrics": 9090,
    }
    binding = find(docs, "ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "deployplane", "namespace": chart.NAMESPACE}
    ]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == find(docs, "ServiceAccount")["metadata"]["name"]


def test_metrics_service_selects_the_operator_pods(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["defaults"]
    service = find(docs, "Service")
    pod_labels = operator_deployment(docs)["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"]["ports"] == [
        {"name": "metrics", "port": 9090, "targetPort": "metrics", "protocol": "TCP"}
    ]
    # An operator unready because its control plane is away is still scraped: its
    # metrics are what say why.
    assert service["spec"]["publishNotReadyAddresses"] is True


def test_pod_disruption_budget_selects_the_operator(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["defaults"]
    pdb = find(docs, "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    pod_labels = operator_deployment(docs)["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


def test_service_monitor_only_when_enabled(rendered: dict[str, list[Doc]]) -> None:
    assert not find_all(rendered["defaults"], "ServiceMonitor")
    docs = rendered["everything"]
    monitor = find(docs, "ServiceMonitor")
    services = [s for s in find_all(docs, "Service") if s["metadata"]["name"].endswith("-metrics")]
    (metrics,) = services
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= metrics["metadata"]["labels"].items()
    )
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"


# ---------------------------------------------------------------- credentials


def test_api_key_comes_from_the_referenced_secret(rendered: dict[str, list[Doc]]) -> None:
    env = env_of(operator_container(rendered["everything"]))
    assert env["DEPLOYPLANE_CONTROL_PLANE_URL"] == "https://control.example.com"
    assert env["DEPLOYPLANE_TENANT_ID"] == "ws-1"
    assert env["DEPLOYPLANE_API_KEY"] == {
        "secretKeyRef": {"name": "cp-credentials", "key": "token"}
    }
    assert not [s for s in find_all(rendered["everything"], "Secret")], (
        "the chart must not store a key it was given by reference"
    )


def test_without_url_or_key_every_resource_needs_a_connection_ref(
    rendered: dict[str, list[Doc]],
) -> None:
    env = env_of(operator_container(rendered["defaults"]))
    assert "DEPLOYPLANE_CONTROL_PLANE_URL" not in env
    assert "DEPLOYPLANE_API_KEY" not in env


# ------------------------------------------------------------ watchNamespaces


def test_watch_namespaces_uses_a_role_per_namespace(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["watchNamespaces"]
    roles = {r["metadata"]["namespace"]: r for r in find_all(docs, "Role")}
    bindings = {b["metadata"]["namespace"]: b for b in find_all(docs, "RoleBinding")}
    assert set(roles) == set(bindings) == {"team-a", "team-b"}
    for ns, binding in bindings.items():
        assert binding["roleRef"]["name"] == roles[ns]["metadata"]["name"]
        assert binding["subjects"][0]["namespace"] == chart.NAMESPACE
    (cluster_role,) = find_all(docs, "ClusterRole")
    cluster_resources = {r for rule in cluster_role["rules"] for r in rule["resources"]}
    assert cluster_resources == {"customresourcedefinitions", "namespaces"}, (
        "namespaced install must not read Secrets or resources cluster-wide"
    )
    assert env_of(operator_container(docs))["DEPLOYPLANE_NAMESPACES"] == "team-a,team-b"


# -------------------------------------------------------------------- peering


def test_two_replicas_use_kopf_peering(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["replicaCount 2"]
    deployment = operator_deployment(docs)
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"
    args = operator_container(docs)["args"]
    assert args[args.index("--peering") + 1] == "deployplane"
    # A standby takes over within the peering lifetime after a kill -9 of the active one.
    assert args[args.index("--peering-lifetime") + 1] == "30"
    env = env_of(operator_container(docs))
    assert env["POD_ID"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    crds = {c["metadata"]["name"] for c in find_all(docs, "CustomResourceDefinition")}
    assert crds == {"clusterkopfpeerings.kopf.dev", "kopfpeerings.kopf.dev"}
    peering = find(docs, "ClusterKopfPeering", "deployplane")
    assert "post-install" in peering["metadata"]["annotations"]["helm.sh/hook"]
    rules = find(docs, "ClusterRole")["rules"]
    assert {"apiGroups": ["kopf.dev"], "resources": ["clusterkopfpeerings"],
            "verbs": ["get", "list", "watch", "patch"]} in rules  # fmt: skip


def test_namespaced_peering_has_one_object_per_namespace(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["replicaCount 2 + watchNamespaces"]
    peerings = find_all(docs, "KopfPeering")
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in peerings] == [
        ("team-a", "deployplane")
    ]
    assert not find_all(docs, "ClusterKopfPeering")
    role_resources = {r for rule in find(docs, "Role")["rules"] for r in rule["resources"]}
    assert "kopfpeerings" in role_resources


def test_each_shard_is_a_deployment_with_its_own_peering_and_selector(
    rendered: dict[str, list[Doc]],
) -> None:
    """Label shards: one Deployment per shard (`--shard NAME`, its own peering object
    and pods), and the default one reconciling the unlabelled resources."""
    docs = rendered["shards"]
    deployments = {d["metadata"]["name"]: d for d in find_all(docs, "Deployment")}
    assert sorted(deployments) == ["deployplane", "deployplane-shard-a", "deployplane-shard-b"]
    for name, deployment in deployments.items():
        shard = name.removeprefix("deployplane-shard-") if "-shard-" in name else None
        assert deployment["spec"]["replicas"] == 2
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        if shard is None:
            assert "--shard-default" in args
            assert "--shard" not in args
        else:
            assert args[args.index("--shard") + 1] == shard
            assert "--shard-default" not in args
        assert args[args.index("--peering") + 1] == name
        selector = deployment["spec"]["selector"]["matchLabels"]
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert selector.get("deployplane.io/shard") == shard
        assert pod_labels.get("deployplane.io/shard") == shard
        assert all(pod_labels[k] == v for k, v in selector.items())
    peerings = sorted(p["metadata"]["name"] for p in find_all(docs, "ClusterKopfPeering"))
    assert peerings == sorted(deployments)
    budgets = sorted(p["metadata"]["name"] for p in find_all(docs, "PodDisruptionBudget"))
    assert budgets == sorted(deployments)
    # Without shards, the default instance reconciles everything (no shard argument).
    for variant in ("defaults", "replicaCount 2"):
        args = operator_container(rendered[variant])["args"]
        assert not {"--shard", "--shard-default"} & set(args)


# ------------------------------------------------------------------- emulator


def test_emulator_runs_in_cluster_and_the_operator_points_at_it(
    rendered: dict[str, list[Doc]],
) -> None:
    docs = rendered["emulator"]
    emulator = find(docs, "Deployment", "deployplane-emulator")
    container = emulator["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["deployplane", "controlplane", "serve"]
    args = container["args"]
    assert args[args.index("--host") + 1] == "0.0.0.0"
    assert args[args.index("--api-key") + 1] == "$(DEPLOYPLANE_API_KEY)"
    service = find(docs, "Service", "deployplane-emulator")
    assert (
        service["spec"]["selector"].items()
        <= emulator["spec"]["template"]["metadata"]["labels"].items()
    )
    env = env_of(operator_container(docs))
    assert env["DEPLOYPLANE_CONTROL_PLANE_URL"] == (
        f"http://deployplane-emulator.{chart.NAMESPACE}.svc:8124"
    )
    # Both ends read the same generated key.
    secret = find(docs, "Secret")
    assert env["DEPLOYPLANE_API_KEY"]["secretKeyRef"]["name"] == secret["metadata"]["name"]
    assert env_of(container)["DEPLOYPLANE_API_KEY"] == env["DEPLOYPLANE_API_KEY"]


def test_emulator_config_is_mounted(rendered: dict[str, list[Doc]], tmp_path: Path) -> None:
    docs = rendered["everything"]
    config = find(docs, "ConfigMap", "deployplane-emulator")
    mounted = tmp_path / "emulator.yaml"
    mounted.write_text(config["data"]["emulator.yaml"])
    assert yaml.safe_load(mounted.read_text()) == EMULATOR_CONFIG
    # The emulator itself accepts the file it will be started with.
    assert load_config(mounted).pipeline.step_seconds == 0.5
    container = find(docs, "Deployment", "deployplane-emulator")["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert "/etc/deployplane/emulator.yaml" in container["args"]


# ------------------------------------------------- the built-in data plane

EMULATOR = f"{chart.RELEASE}-emulator"
BUILTIN_OFF: dict[str, Any] = {  # a named key Secret: nothing random in the render
    "emulator": {"enabled": True},
    "controlPlane": {"apiKeySecret": {"name": "cp-credentials"}},
}
BUILTIN_ON: dict[str, Any] = {
    **BUILTIN_OFF,
    "emulator": {
        "enabled": True,
        "builtinDataplane": {
            "namespace": "agents",
            "postgresImage": "localhost/postgres:17",
            "redisImage": "localhost/redis:7",
        },
    },
}


def _builtin(**settings: Any) -> dict[str, Any]:
    """BUILTIN_ON with some of emulator.builtinDataplane's values changed."""
    builtin = {**BUILTIN_ON["emulator"]["builtinDataplane"], **settings}
    return {**BUILTIN_ON, "emulator": {"enabled": True, "builtinDataplane": builtin}}


def _template(values: dict[str, Any], tmp_path: Path) -> str:
    return chart.helm(*chart.template_command(values, values_dir=str(tmp_path))).stdout


def _emulator_pod(docs: list[Doc]) -> Doc:
    spec: Doc = find(docs, "Deployment", EMULATOR)["spec"]["template"]["spec"]
    return spec


def test_builtin_dataplane_is_off_by_default_and_leaves_the_render_as_it_was(
    rendered: dict[str, list[Doc]], tmp_path: Path
) -> None:
    for variant in ("emulator", "everything"):
        docs = rendered[variant]
        pod = _emulator_pod(docs)
        assert pod["automountServiceAccountToken"] is False, variant
        assert "serviceAccountName" not in pod, variant
        (container,) = pod["containers"]
        assert "--builtin-dataplane" not in container["args"], variant
        assert not {n for n in env_of(container) if n.startswith("DEPLOYPLANE_")} - {
            "DEPLOYPLANE_API_KEY"
        }, variant
        rbac = ("ServiceAccount", "Role", "RoleBinding")
        assert [d for d in docs if d["kind"] in rbac and d["metadata"]["name"] == EMULATOR] == []
    # Its other values change nothing while the namespace is empty: byte for byte.
    off = _builtin(namespace="", networkPolicy=False)
    assert _template(off, tmp_path) == _template(BUILTIN_OFF, tmp_path)


def test_builtin_dataplane_runs_in_the_emulator_with_its_own_service_account() -> None:
    docs = chart.render(BUILTIN_ON)
    account = find(docs, "ServiceAccount", EMULATOR)
    assert account["metadata"]["namespace"] == chart.NAMESPACE
    assert account["automountServiceAccountToken"] is True
    pod = _emulator_pod(docs)
    assert pod["serviceAccountName"] == EMULATOR
    assert pod["automountServiceAccountToken"] is True
    (container,) = pod["containers"]
    args = container["args"]
    assert args[args.index("--builtin-dataplane") + 1] == "agents"
    # What the built-in agent reads from its environment (emulator/builtindataplane.py).
    env = {k: v for k, v in env_of(container).items() if isinstance(v, str)}
    settings = from_env(env)
    assert settings.postgres_image == "localhost/postgres:17"
    assert settings.redis_image == "localhost/redis:7"
    assert (settings.routing, settings.autoscaler) == (Routing.NONE, Autoscaler.HPA)
    assert settings.network_policy is True


def _listener_agent_rules(network_policy: bool) -> list[Doc]:
    agent = {"enabled": True, "listenerId": LISTENER_ID, "namespaces": ["agents"]}
    values = {"listenerAgent": {**agent, "networkPolicy": network_policy}}
    rules: list[Doc] = find(chart.render(values), "Role", f"{chart.RELEASE}-listener-agent")[
        "rules"
    ]
    return rules


@pytest.mark.parametrize("network_policy", [True, False])
def test_builtin_dataplane_rbac_is_the_listener_agents_in_its_namespace_only(
    network_policy: bool, rendered: dict[str, list[Doc]]
) -> None:
    docs = chart.render(_builtin(networkPolicy=network_policy))
    role = find(docs, "Role", EMULATOR)
    assert role["metadata"]["namespace"] == "agents"
    assert role["rules"] == _listener_agent_rules(network_policy)
    granted = {r for rule in role["rules"] for r in rule["resources"]}
    assert ("networkpolicies" in granted) is network_policy
    assert not {"ingresses", "httproutes", "scaledobjects"} & granted
    binding = find(docs, "RoleBinding", EMULATOR)
    assert binding["metadata"]["namespace"] == "agents"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": EMULATOR,
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": EMULATOR, "namespace": chart.NAMESPACE}
    ]
    # Nothing cluster-wide, no other Role: the operator's grants are as without it.
    assert [r for r in find_all(docs, "Role") if r is not role] == []
    for kind in ("ClusterRole", "ClusterRoleBinding"):
        assert find_all(docs, kind) == find_all(rendered["emulator"], kind)
    env = env_of(_emulator_pod(docs)["containers"][0])
    assert env["DEPLOYPLANE_NETWORK_POLICY"] == str(network_policy).lower()
    assert env["DEPLOYPLANE_POD_SECURITY"] == "restricted"
    baseline = chart.render(_builtin(podSecurity="baseline"))
    assert env_of(_emulator_pod(baseline)["containers"][0])["DEPLOYPLANE_POD_SECURITY"] == (
        "baseline"
    )


# ---------------------------------------------------- probes, sizes, strategy


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_liveness_and_readiness_are_different_endpoints(
    variant: str, rendered: dict[str, list[Doc]]
) -> None:
    """Liveness asks whether the process is stuck, readiness whether it can work: a
    liveness probe that failed with readiness would restart pods waiting on an outage."""
    for deployment in find_all(rendered[variant], "Deployment"):
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            if "livenessProbe" not in container:
                continue
            live, ready = container["livenessProbe"], container["readinessProbe"]
            assert live["httpGet"] != ready["httpGet"], deployment["metadata"]["name"]


def test_the_operators_probes_and_their_timing() -> None:
    container = operator_container(chart.render())
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    live, ready = container["livenessProbe"], container["readinessProbe"]
    assert live["httpGet"] == {"path": "/healthz", "port": "health"}
    assert ready["httpGet"] == {"path": "/readyz", "port": "ready"}
    args = container["args"]
    assert args[args.index("--liveness") + 1] == f"http://0.0.0.0:{ports['health']}/healthz"
    assert args[args.index("--readiness") + 1] == f"http://0.0.0.0:{ports['ready']}/readyz"
    # A frozen operator is restarted within about half a minute, without the pod's
    # whole grace period (a stopped process handles no SIGTERM).
    assert live["periodSeconds"] * live["failureThreshold"] == 30
    assert live["terminationGracePeriodSeconds"] == 10
    moved = operator_container(chart.render({"health": {"port": 7000, "readinessPort": 7001}}))
    assert {p["name"]: p["containerPort"] for p in moved["ports"]}["ready"] == 7001
    assert "http://0.0.0.0:7001/readyz" in moved["args"]
    clash = chart.render_error({"health": {"port": 8080, "readinessPort": 8080}})
    assert "health.port and health.readinessPort must differ" in clash


def test_emulator_readiness_asks_its_database() -> None:
    docs = chart.render({"emulator": {"enabled": True}})
    (container,) = find(docs, "Deployment", "deployplane-emulator")["spec"]["template"]["spec"][
        "containers"
    ]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}


def test_the_listener_agents_probes_are_the_operators_questions() -> None:
    """Its own liveness (the loop answers, the heartbeat lives) and readiness (running,
    the apiserver and the control plane answer), with the operator's ports and timings."""
    values = {"listenerAgent": {"enabled": True, "listenerName": "x", "namespaces": ["a"]}}
    docs = chart.render(values)
    deployment = find(docs, "Deployment", f"{chart.RELEASE}-listener-agent")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"health": 8080, "ready": 8081}
    args = container["args"]
    assert args[args.index("--liveness") + 1] == "http://0.0.0.0:8080/healthz"
    assert args[args.index("--readiness") + 1] == "http://0.0.0.0:8081/readyz"
    operator = operator_container(docs)
    for probe, path, port in (
        ("livenessProbe", "/healthz", "health"),
        ("readinessProbe", "/readyz", "ready"),
    ):
        assert container[probe] == {**operator[probe], "httpGet": {"path": path, "port": port}}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_container_requests_and_limits_its_local_disk(
    variant: str, rendered: dict[str, list[Doc]]
) -> None:
    """Ephemeral storage: the /tmp emptyDir and the log files count against it; a pod
    without a limit can fill its node's disk, one without a request lands anywhere."""
    for name, pod in _pod_specs(rendered[variant]):
        tmp = next(v for v in pod["volumes"] if v["name"] == "tmp")
        for c in pod["containers"]:
            requested = c["resources"]["requests"]["ephemeral-storage"]
            limit = c["resources"]["limits"]["ephemeral-storage"]
            assert _mebibytes(requested) < _mebibytes(limit), name
            assert _mebibytes(tmp["emptyDir"]["sizeLimit"]) < _mebibytes(limit), name


def _mebibytes(quantity: str) -> int:
    units = {"Mi": 1, "Gi": 1024}
    return int(quantity[:-2]) * units[quantity[-2:]]


def test_the_update_strategy_is_explicit_for_one_replica_and_for_a_peered_pair() -> None:
    """One standalone replica is replaced by Recreate: a rolling update would start the
    new operator while the old one still drains its passes (two reconcilers). A peered
    pair rolls: the new pod is Ready before an old one stops, peering keeps one active."""
    alone = operator_deployment(chart.render())["spec"]["strategy"]
    assert alone == {"type": "Recreate"}
    pair = operator_deployment(chart.render({"replicaCount": 2}))["spec"]["strategy"]
    assert pair == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}


# ------------------------------------------------------------- NetworkPolicies


def _policy(docs: list[Doc], name: str) -> Doc:
    return find(docs, "NetworkPolicy", name)


def _egress_ports(policy: Doc) -> list[set[tuple[str, int]]]:
    return [
        {(p["protocol"], p["port"]) for p in rule["ports"]} for rule in policy["spec"]["egress"]
    ]


def test_the_operator_policy_lets_out_only_the_api_dns_and_control_plane() -> None:
    docs = chart.render()
    policy = _policy(docs, "deployplane")
    spec = policy["spec"]
    pod_labels = operator_deployment(docs)["spec"]["template"]["metadata"]["labels"]
    assert spec["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == [
        {"from": [{"namespaceSelector": {}}], "ports": [{"protocol": "TCP", "port": 9090}]}
    ]
    api, dns = spec["egress"]
    assert api["to"] == [{"ipBlock": {"cidr": "0.0.0.0/0"}}, {"ipBlock": {"cidr": "::/0"}}]
    assert _egress_ports(policy) == [
        {("TCP", 443), ("TCP", 6443)},
        {("UDP", 53), ("TCP", 53)},
    ]
    assert dns["to"] == [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ]
    # Every shard instance carries the operator's labels: one policy covers them all.
    sharded = chart.render({"replicaCount": 2, "shards": ["a"]})
    selector = _policy(sharded, "deployplane")["spec"]["podSelector"]["matchLabels"]
    for deployment in find_all(sharded, "Deployment"):
        assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()


@pytest.mark.parametrize(
    ("url", "port"),
    [
        ("https://control.example.com", 443),
        ("http://control.example.com/base", 80),
        ("https://control.example.com:8443/api", 8443),
    ],
)
def test_the_control_plane_is_let_out_on_its_urls_port(url: str, port: int) -> None:
    values = {"controlPlane": {"url": url, "apiKeySecret": {"name": "cp"}}}
    policy = _policy(chart.render(values), "deployplane")
    rule = policy["spec"]["egress"][2]
    assert rule["ports"] == [{"protocol": "TCP", "port": port}]
    assert rule["to"][0] == {"ipBlock": {"cidr": "0.0.0.0/0", "except": ["169.254.169.254/32"]}}
    if port == 8443:  # narrowed to the control plane's own address
        to = [{"ipBlock": {"cidr": "203.0.113.7/32"}}]
        narrowed = {**values, "networkPolicy": {"controlPlane": {"to": to}}}
        assert _policy(chart.render(narrowed), "deployplane")["spec"]["egress"][2]["to"] == to


def test_the_emulator_and_the_listener_agent_get_their_own_policies() -> None:
    values = {
        "emulator": {"enabled": True},
        "listenerAgent": {"enabled": True, "listenerName": "x", "namespaces": ["a"]},
        "networkPolicy": {"extraEgress": [{"ports": [{"protocol": "TCP", "port": 5000}]}]},
    }
    docs = chart.render(values)
    emulator_labels = find(docs, "Deployment", "deployplane-emulator")["spec"]["template"][
        "metadata"
    ]["labels"]
    to_emulator = {
        "to": [{"podSelector": {"matchLabels": emulator_labels}}],
        "ports": [{"protocol": "TCP", "port": 8124}],
    }
    operator, emulator, agent = (
        _policy(docs, name)
        for name in ("deployplane", "deployplane-emulator", "deployplane-listener-agent")
    )
    assert operator["spec"]["egress"][2] == to_emulator
    assert agent["spec"]["egress"][2] == to_emulator
    assert agent["spec"]["ingress"] == [], "nothing comes in to the agent"
    assert emulator["spec"]["podSelector"]["matchLabels"] == emulator_labels
    (coming_in,) = emulator["spec"]["ingress"]
    sources = [
        peer["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
        for peer in coming_in["from"]
    ]
    assert sources == ["operator", "listener-agent"]
    # Without a built-in data plane the emulator talks to nobody but the DNS.
    assert _egress_ports(emulator)[0] == {("UDP", 53), ("TCP", 53)}
    assert len(emulator["spec"]["egress"]) == 2  # DNS and the extra rule
    for policy in (operator, emulator, agent):
        assert policy["spec"]["egress"][-1] == {"ports": [{"protocol": "TCP", "port": 5000}]}
    builtin = chart.render(
        {"emulator": {"enabled": True, "builtinDataplane": {"namespace": "agents"}}}
    )
    assert ("TCP", 6443) in _egress_ports(_policy(builtin, "deployplane-emulator"))[1]


def test_network_policies_can_be_turned_off_and_metrics_off_closes_the_way_in() -> None:
    assert not find_all(chart.render({"networkPolicy": {"enabled": False}}), "NetworkPolicy")
    quiet = _policy(chart.render({"metrics": {"enabled": False}}), "deployplane")
    assert quiet["spec"]["ingress"] == []


# ------------------------------------------------------------ pod security


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_pod_meets_the_restricted_standard(
    variant: str, rendered: dict[str, list[Doc]]
) -> None:
    for name, pod in _pod_specs(rendered[variant]):
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for host in ("hostNetwork", "hostPID", "hostIPC"):
            assert not pod.get(host), name
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert "emptyDir" in volumes["tmp"], name
        for v in volumes.values():
            assert set(v) - {"name"} <= {"emptyDir", "configMap", "secret", "projected"}, v
        for c in pod["containers"]:
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False, name
            assert sc["readOnlyRootFilesystem"] is True, name
            assert sc["runAsNonRoot"] is True, name
            assert sc["runAsUser"] != 0, name
            assert sc["capabilities"] == {"drop": ["ALL"]}, name
            assert sc["seccompProfile"] == {"type": "RuntimeDefault"}, name
            assert {"name": "tmp", "mountPath": "/tmp"} in c["volumeMounts"], name
            assert "limits" in c["resources"], name


# ---------------------------------------------------------------------- RBAC


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_rbac_has_no_wildcards_and_no_destructive_verbs(
    variant: str, rendered: dict[str, list[Doc]]
) -> None:
    roles = find_all(rendered[variant], "ClusterRole") + find_all(rendered[variant], "Role")
    assert roles
    for role in roles:
        for rule in role["rules"]:
            for key in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[key], f"wildcard {key} in {role['metadata']['name']}"
                assert all("*" not in item for item in rule[key]), rule
            assert not rule.get("nonResourceURLs"), rule
            assert not {"delete", "deletecollection", "escalate", "bind",
                        "impersonate"} & set(rule["verbs"]), rule  # fmt: skip
            if role["metadata"]["name"].endswith("-plan") and rule["apiGroups"] == [
                "deployplane.io"
            ]:
                # `deployplane plan`'s server-side dry-runs, which RBAC cannot tell from
                # writes: held to dryRun=All by the admission policy rendered with them.
                assert rule["verbs"] == ["get", "list", "create", "update"], rule
                assert find(rendered[variant], "ValidatingAdmissionPolicy")
                continue
            if "update" in rule["verbs"]:
                # Only the kinds' /finalizers: what an apiserver enforcing owner
                # references' permissions asks for the outputs' blockOwnerDeletion.
                assert rule["verbs"] == ["update"], rule
                assert all(r.endswith("/finalizers") for r in rule["resources"]), rule
            if "create" in rule["verbs"]:
                # Events, and the ConfigMap of spec.writeOutputsTo (never deleted: the
                # garbage collector does, through its ownerReference).
                assert rule["resources"] in (["events"], ["configmaps"]), f"creates: {rule}"
            if "secrets" in rule["resources"]:
                # Read one by one, never listed or watched; the operator's patched to put
                # on and take off the API key Secrets' in-use protection (the plan's
                # identity only reads).
                assert rule["verbs"] in (["get"], ["get", "patch"]), rule


def test_rbac_grants_exactly_what_the_operator_does(rendered: dict[str, list[Doc]]) -> None:
    def grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
        return {
            (group, resource, verb)
            for rule in rules
            for group in rule["apiGroups"]
            for resource in rule["resources"]
            for verb in rule["verbs"]
        }

    granted = grants(find(rendered["defaults"], "ClusterRole")["rules"])
    expected = {
        ("deployplane.io", kind, verb)
        for kind in ("agentdeployments", "controlplaneconnections", "listeners")
        for verb in ("get", "list", "watch", "patch")
    }
    expected |= {
        ("deployplane.io", f"{kind}/status", verb)
        for kind in ("agentdeployments", "controlplaneconnections", "listeners")
        for verb in ("get", "patch")
    }
    expected |= {  # the outputs' ConfigMap's ownerReference sets blockOwnerDeletion
        ("deployplane.io", f"{kind}/finalizers", "update")
        for kind in ("agentdeployments", "controlplaneconnections", "listeners")
    }
    expected |= {
        ("", "secrets", "get"),
        (
            "",
            "secrets",
            "patch",
        ),  # an API key Secret's protection (deployplane.io/secret-protection)
        ("", "namespaces", "get"),  # a shared Listener's allowedNamespaces selector
        ("", "configmaps", "get"),  # spec.writeOutputsTo
        ("", "configmaps", "create"),
        ("", "configmaps", "patch"),
        ("", "events", "create"),
        ("events.k8s.io", "events", "create"),
        ("apiextensions.k8s.io", "customresourcedefinitions", "list"),
        ("apiextensions.k8s.io", "customresourcedefinitions", "watch"),
    }
    assert granted == expected


def test_rbac_documents_helper_returns_an_applicable_identity() -> None:
    docs = chart.rbac_documents()
    assert sorted(d["kind"] for d in docs) == [
        "ClusterRole",
        "ClusterRoleBinding",
        "ServiceAccount",
    ]


# ------------------------------------------------------------ values schema


REFUSED: dict[str, dict[str, Any]] = {
    "negative replicas": {"replicaCount": -1},
    "replicas as text": {"replicaCount": "two"},
    "zero poll interval": {"pollInterval": 0},
    "url without scheme": {"controlPlane": {"url": "control.example.com"}},
    "namespace not a DNS label": {"watchNamespaces": ["Team_A"]},
    "unknown top-level value": {"replicas": 2},
    "unknown nested value": {"controlPlane": {"apikey": "plaintext"}},
    "metrics port out of range": {"metrics": {"port": 70000}},
    "bad pull policy": {"image": {"pullPolicy": "Sometimes"}},
    "zero event rate": {"events": {"qps": 0}},
    "event burst as a fraction": {"events": {"burst": 2.5}},
    "shard not a DNS label": {"shards": ["Team_A"]},
    "shard twice": {"shards": ["a", "a"]},
    "built-in data plane namespace not a DNS label": {
        "emulator": {"builtinDataplane": {"namespace": "Agents_1"}}
    },
    "built-in data plane unknown value": {"emulator": {"builtinDataplane": {"routing": "ingress"}}},
    "built-in data plane empty image": {"emulator": {"builtinDataplane": {"postgresImage": ""}}},
    "readiness port out of range": {"health": {"readinessPort": 0}},
    "network policy peer of an unknown kind": {"networkPolicy": {"metricsFrom": [{"pods": {}}]}},
    "network policy without a way to the API": {"networkPolicy": {"kubernetesApi": {"to": []}}},
    "network policy ipBlock without a cidr": {
        "networkPolicy": {"controlPlane": {"to": [{"ipBlock": {"except": []}}]}}
    },
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_values_schema_refuses_bad_values(name: str) -> None:
    error = chart.render_error(REFUSED[name])
    assert error, f"{name}: rendered anyway"
    assert "values don't meet the specifications of the schema" in error, error
