"""The renderer's parts that match the vendor's data plane: pgvector, KEDA on pending
runs, Ingress / HTTPRoute routing and its URL, the NetworkPolicy, the /ok probes, and
the agent's settings from the environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.support.renderinputs import (
    BASE,
    DEPLOYMENT_ID,
    IMAGE,
    PASSWORD,
    SECRET_VALUES,
    find,
    make_deployment,
    make_listener,
    make_revision,
)

from deployplane.api.dataplane import ServerRuntime
from deployplane.dataplane.render import (
    ANNOTATION_ROUTE,
    Autoscaler,
    DataPlaneSettings,
    Rendered,
    RenderError,
    Routing,
    SettingsError,
    render,
    render_route,
)
from deployplane.dataplane.render.keda import PENDING_RUNS_QUERY
from deployplane.dataplane.render.network import METADATA_CIDR
from deployplane.dataplane.render.settings import from_env

GATEWAY = {"gateway_name": "public", "gateway_namespace": "infra"}


def rendered_with(
    resource_spec: dict[str, Any] | None = None,
    runtime: ServerRuntime = ServerRuntime.POSTGRES,
    **settings: Any,
) -> Rendered:
    return render(
        make_deployment(resource_spec),
        make_revision(),
        make_listener(),
        IMAGE,
        secret_values=SECRET_VALUES,
        database_password=PASSWORD,
        progress_deadline_seconds=300,
        settings=DataPlaneSettings(**settings),
        runtime=runtime,
    )


def kinds(rendered: Rendered) -> set[str]:
    return {o["kind"] for o in rendered.objects}


# --------------------------------------------------------------------------- PostgreSQL


def test_postgres_is_pgvector_by_default_and_the_image_is_a_setting() -> None:
    (db,) = [o for o in rendered_with().objects if o["kind"] == "StatefulSet"]
    assert db["spec"]["template"]["spec"]["containers"][0]["image"] == "pgvector/pgvector:pg16"
    other = rendered_with({"db_max_connections": 50}, postgres_image="registry.local/pg:1")
    container = find(other, "StatefulSet", f"{BASE}-db")["spec"]["template"]["spec"]["containers"][
        0
    ]
    assert container["image"] == "registry.local/pg:1"
    assert container["args"] == ["-c", "max_connections=50"]


def test_redis_is_the_official_image_by_default_and_the_image_is_a_setting() -> None:
    redis = find(rendered_with(), "Deployment", f"{BASE}-redis")
    assert redis["spec"]["template"]["spec"]["containers"][0]["image"] == "redis:7.4-alpine"
    local = "docker.io/library/deployplane-redis:7.0"  # tools/images/ builds it
    other = find(rendered_with(redis_image=local), "Deployment", f"{BASE}-redis")
    assert other["spec"]["template"]["spec"]["containers"][0]["image"] == local


# --------------------------------------------------------------------------- autoscaling


def test_keda_scales_the_queue_on_pending_and_running_runs() -> None:
    rendered = rendered_with(
        {"queue_min_scale": 0, "queue_max_scale": 7, "max_scale": 3},
        autoscaler=Autoscaler.KEDA,
        runs_per_worker=5,
    )
    scaled = find(rendered, "ScaledObject", f"{BASE}-queue")
    spec = scaled["spec"]
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    assert spec["scaleTargetRef"]["name"] == f"{BASE}-queue"
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (0, 7)
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "postgresql"
    meta = trigger["metadata"]
    assert meta["query"] == PENDING_RUNS_QUERY
    assert "'pending'" in meta["query"]
    assert "'running'" in meta["query"]
    assert int(meta["targetQueryValue"]) == 5 > 0
    assert meta["host"] == f"{BASE}-db.agents.svc"
    assert PASSWORD not in str(scaled)
    auth = find(rendered, "TriggerAuthentication", f"{BASE}-db")
    assert trigger["authenticationRef"] == {"name": f"{BASE}-db", "kind": "TriggerAuthentication"}
    assert auth["spec"]["secretTargetRef"] == [
        {"parameter": "password", "name": f"{BASE}-db", "key": "password"}
    ]
    # The queue has no HPA of its own; the server keeps its CPU HPA.
    hpas = [o for o in rendered.objects if o["kind"] == "HorizontalPodAutoscaler"]
    assert [h["metadata"]["name"] for h in hpas] == [BASE]
    assert hpas[0]["spec"]["metrics"][0]["resource"]["name"] == "cpu"


def test_hpa_scales_the_queue_on_cpu_without_keda_objects() -> None:
    rendered = rendered_with({"queue_max_scale": 4})
    assert "ScaledObject" not in kinds(rendered)
    assert "TriggerAuthentication" not in kinds(rendered)
    find(rendered, "HorizontalPodAutoscaler", f"{BASE}-queue")


def test_keda_without_queue_max_scale_renders_no_scaled_object_and_checks_the_range() -> None:
    assert "ScaledObject" not in kinds(rendered_with(autoscaler=Autoscaler.KEDA))
    with pytest.raises(RenderError, match="queue_max_scale 1 is below the minimum 2"):
        rendered_with({"queue_min_scale": 2, "queue_max_scale": 1}, autoscaler=Autoscaler.KEDA)


# --------------------------------------------------------------------------- routing


def test_no_routing_no_route_and_no_url() -> None:
    rendered = rendered_with()
    assert not kinds(rendered) & {"Ingress", "HTTPRoute"}
    assert rendered.url is None


def test_ingress_under_the_base_path_with_its_class() -> None:
    rendered = rendered_with(
        routing=Routing.INGRESS, host="agents.example.com", base_path="/lg/", ingress_class="nginx"
    )
    ingress = find(rendered, "Ingress", BASE)
    assert ingress["spec"]["ingressClassName"] == "nginx"
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "agents.example.com"
    (path,) = rule["http"]["paths"]
    assert path["path"] == f"/lg/{DEPLOYMENT_ID}"
    assert path["pathType"] == "Prefix"
    assert path["backend"] == {"service": {"name": BASE, "port": {"number": 8000}}}
    assert rendered.url == f"https://agents.example.com/lg/{DEPLOYMENT_ID}"


def test_http_route_with_its_parent_and_the_prefix_rewritten() -> None:
    rendered = rendered_with(
        routing=Routing.GATEWAY, host="agents.example.com", gateway_section="https", **GATEWAY
    )
    route = find(rendered, "HTTPRoute", BASE)
    assert route["apiVersion"] == "gateway.networking.k8s.io/v1"
    spec = route["spec"]
    assert spec["parentRefs"] == [
        {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "name": "public",
            "namespace": "infra",
            "sectionName": "https",
        }
    ]
    assert spec["hostnames"] == ["agents.example.com"]
    (rule,) = spec["rules"]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": f"/{DEPLOYMENT_ID}"}}]
    assert rule["backendRefs"] == [{"name": BASE, "port": 8000}]
    assert rule["filters"][0]["urlRewrite"]["path"]["replacePrefixMatch"] == "/"
    assert rendered.url == f"https://agents.example.com/{DEPLOYMENT_ID}"


def test_a_host_per_deployment_from_the_template() -> None:
    rendered = rendered_with(routing=Routing.GATEWAY, host="{id}.agents.example.com", **GATEWAY)
    spec = find(rendered, "HTTPRoute", BASE)["spec"]
    assert spec["hostnames"] == [f"{DEPLOYMENT_ID}.agents.example.com"]
    assert spec["rules"][0]["matches"][0]["path"]["value"] == "/"
    assert "filters" not in spec["rules"][0]
    assert rendered.url == f"https://{DEPLOYMENT_ID}.agents.example.com"


def test_render_route_is_the_route_of_render_and_the_base_path_changes_its_hash() -> None:
    settings = DataPlaneSettings(routing=Routing.INGRESS, host="a.example.com", base_path="/one")
    full = render(
        make_deployment(),
        make_revision(),
        make_listener(),
        IMAGE,
        secret_values=SECRET_VALUES,
        database_password=PASSWORD,
        settings=settings,
    )
    route, url = render_route(make_deployment(), make_listener(), settings)
    assert route == find(full, "Ingress", BASE)
    assert url == full.url
    moved, moved_url = render_route(
        make_deployment(),
        make_listener(),
        DataPlaneSettings(routing=Routing.INGRESS, host="a.example.com", base_path="/two"),
    )
    assert moved is not None
    assert route is not None
    annotations = moved["metadata"]["annotations"]
    assert annotations[ANNOTATION_ROUTE] != route["metadata"]["annotations"][ANNOTATION_ROUTE]
    assert moved_url == f"https://a.example.com/two/{DEPLOYMENT_ID}"
    assert render_route(make_deployment(), make_listener(), DataPlaneSettings()) == (None, None)


# --------------------------------------------------------------------------- NetworkPolicy


def test_network_policy_blocks_the_metadata_address_and_admits_routing_and_keda() -> None:
    rendered = rendered_with(
        {"queue_max_scale": 3},
        routing=Routing.GATEWAY,
        host="a.example.com",
        autoscaler=Autoscaler.KEDA,
        **GATEWAY,
    )
    policy = find(rendered, "NetworkPolicy", BASE)["spec"]
    own = {"deployplane.io/deployment-id": str(DEPLOYMENT_ID)}
    assert policy["podSelector"] == {"matchLabels": own}
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    own_rule, routing_rule, keda_rule = policy["ingress"]
    assert own_rule == {"from": [{"podSelector": {"matchLabels": own}}]}
    assert routing_rule["from"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "infra"
    }
    assert routing_rule["ports"] == [{"protocol": "TCP", "port": 8000}]
    assert keda_rule["ports"] == [{"protocol": "TCP", "port": 5432}]
    (egress,) = policy["egress"]
    assert egress["to"][0]["ipBlock"] == {"cidr": "0.0.0.0/0", "except": [METADATA_CIDR]}
    assert METADATA_CIDR == "169.254.169.254/32"


def test_network_policy_off_with_the_setting() -> None:
    assert "NetworkPolicy" not in kinds(rendered_with(network_policy=False))


# --------------------------------------------------------------------------- probes


@pytest.mark.parametrize("name", [BASE, f"{BASE}-queue"])
def test_server_and_queue_are_ready_with_their_database_alive_without_it_and_start_in_time(
    name: str,
) -> None:
    container = find(rendered_with(), "Deployment", name)["spec"]["template"]["spec"]["containers"][
        0
    ]
    # Ready once its PostgreSQL and Redis answer too; alive (and started) once it answers:
    # a database away makes the pods unready, it never restarts them.
    assert container["readinessProbe"]["httpGet"] == {"path": "/ok?check_db=1", "port": "http"}
    for probe in ("livenessProbe", "startupProbe"):
        assert container[probe]["httpGet"] == {"path": "/ok?check_db=0", "port": "http"}
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] == 300


# --------------------------------------------------------------------------- settings


def test_settings_from_the_environment() -> None:
    settings = from_env(
        {
            "DEPLOYPLANE_AUTOSCALER": "KEDA",
            "DEPLOYPLANE_ROUTING": "gateway",
            "DEPLOYPLANE_ROUTE_HOST": "{id}.Agents.example.com",
            "DEPLOYPLANE_ROUTE_BASE_PATH": "/lg",
            "DEPLOYPLANE_GATEWAY": "infra/public",
            "DEPLOYPLANE_NETWORK_POLICY": "false",
            "DEPLOYPLANE_POSTGRES_IMAGE": "pg:x",
            "DEPLOYPLANE_REDIS_IMAGE": "redis:x",
        }
    )
    assert settings.autoscaler is Autoscaler.KEDA
    assert settings.routing is Routing.GATEWAY
    assert settings.host == "{id}.agents.example.com"
    assert (settings.gateway_namespace, settings.gateway_name) == ("infra", "public")
    assert settings.network_policy is False
    assert settings.postgres_image == "pg:x"
    assert settings.redis_image == "redis:x"
    assert from_env({}) == DataPlaneSettings()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DEPLOYPLANE_AUTOSCALER": "vpa"}, "expected hpa | keda"),
        ({"DEPLOYPLANE_ROUTING": "istio"}, "expected none | ingress | gateway"),
        ({"DEPLOYPLANE_ROUTING": "ingress"}, "needs a host"),
        ({"DEPLOYPLANE_ROUTING": "gateway", "DEPLOYPLANE_ROUTE_HOST": "a.b"}, "Gateway's name"),
        ({"DEPLOYPLANE_ROUTE_HOST": "a b"}, "is not a DNS name"),
        ({"DEPLOYPLANE_ROUTE_BASE_PATH": "/a?b"}, "is not a URL path"),
        ({"DEPLOYPLANE_KEDA_RUNS_PER_WORKER": "0"}, "at least 1"),
        ({"DEPLOYPLANE_NETWORK_POLICY": "maybe"}, "expected true or false"),
        ({"DEPLOYPLANE_ROUTE_SCHEME": "ftp"}, "expected http or https"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message) as caught:
        from_env(env)
    assert "\n" not in str(caught.value)
    assert "DEPLOYPLANE_" in str(caught.value)  # the variable to fix


# --------------------------------------------------------------------------- docs


def _docs_objects() -> dict[tuple[str, str], str]:
    """docs/dataplane.md's table of rendered objects: (kind, name) -> when."""
    text = (Path(__file__).parents[4] / "docs" / "dataplane.md").read_text()
    table = text.split("| Object | When | What it is |", 1)[1].split("\n\n", 1)[0]
    rows: dict[tuple[str, str], str] = {}
    for line in table.strip().splitlines()[1:]:
        obj, when = (cell.strip() for cell in line.strip("|").split("|")[:2])
        kind, name = obj.split(" ", 1)
        rows[(kind, name.strip("`"))] = when
    return rows


def test_docs_table_of_objects_is_the_renderer() -> None:
    rendered: set[tuple[str, str]] = set()
    every: set[tuple[str, str]] | None = None
    combinations = [
        (spec, autoscaler, routing, network_policy, runtime)
        for spec in ({"max_scale": 3, "queue_max_scale": 3}, {})
        for autoscaler in Autoscaler
        for routing in Routing
        for network_policy in (True, False)
        for runtime in ServerRuntime
    ]
    for spec, autoscaler, routing, network_policy, runtime in combinations:
        result = rendered_with(
            spec,
            runtime,
            autoscaler=autoscaler,
            routing=routing,
            host="a.example.com",
            network_policy=network_policy,
            **GATEWAY,
        )
        objects = {
            (o["kind"], o["metadata"]["name"].replace(BASE, "B"))
            for o in [result.owner, *result.objects]
        }
        rendered |= objects
        every = objects if every is None else every & objects
    docs = _docs_objects()
    assert set(docs) == rendered
    assert {key for key, when in docs.items() if when == "always"} == every
