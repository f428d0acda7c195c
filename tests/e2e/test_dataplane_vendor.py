"""The data plane as the vendor ships it, end to end on the dev cluster with kwok nodes:
KEDA and Gateway API routing, HPA and Ingress routing, the NetworkPolicy, and a base
path change that rewrites every route and nothing else.

The Gateway API and KEDA CRDs are the ones `make tools` generates with controller-gen
from those projects' own Go API types (tools/k8s/build.sh, `crds`), so every object the
agent renders is validated by the real apiserver against their schemas. kwok runs no
ingress controller and no Gateway implementation: `RouteAdmitter`
(tests/support/routecontroller.py) writes the status such a controller would, and the
agent reports DEPLOYED only once it is there. A namespace outside the listener's set
is tests/e2e/test_dataplane.py's
`test_a_namespace_the_listener_does_not_have_fails_with_that_message`.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client
from tests.support.dataplane_fixtures import (
    AGENT_SA,
    LST,
    agents_namespace,
    emulator,
    listener_body,
    operator,
    wait_until,
)
from tests.support.e2ecluster import E2ECluster
from tests.support.operator_harness import (
    API_KEY,
    WORKSPACE,
    Emulator,
    Resources,
)
from tests.support.routecontroller import RouteAdmitter
from tests.support.vendor_agent import (
    VendorAgent,
    agent_writes,
    custom,
    deploy,
    vendor_agent,
    vendor_crds,
)

from deployplane.devcluster import DevCluster

__all__ = ["agents_namespace", "emulator", "operator", "vendor_agent", "vendor_crds"]  # fixtures

HOST = "agents.example.test"


@pytest.fixture
def admitter(k8s_api: client.ApiClient, agents_namespace: str) -> Iterator[RouteAdmitter]:
    with RouteAdmitter(k8s_api, agents_namespace) as fake:
        yield fake


def control_plane_deployment(emulator: Emulator, deployment_id: str) -> dict[str, Any]:
    with httpx.Client(
        base_url=emulator.url, headers={"X-Api-Key": API_KEY, "X-Tenant-Id": WORKSPACE}
    ) as http:
        answer: dict[str, Any] = http.get(f"/v2/deployments/{deployment_id}").json()
        return answer


def listen_and_deploy(
    resources: Resources,
    agent: VendorAgent,
    namespace: str,
    agents: str,
    settings: dict[str, Any],
    name: str,
) -> tuple[dict[str, Any], str]:
    """The Listener, its agent with `settings`, and one AgentDeployment Ready."""
    resources.create(LST, listener_body(namespace, agents))
    agent.start(settings).wait_running()
    obj = deploy(resources, name, agents, agent.image)
    return obj, str(obj["status"]["deploymentId"])


def test_keda_and_gateway_reach_deployed_with_a_scaled_object_and_an_http_route(
    operator: Any,
    vendor_agent: VendorAgent,
    admitter: RouteAdmitter,
    resources: Resources,
    namespace: str,
    agents_namespace: str,
    k8s_api: client.ApiClient,
) -> None:
    settings = {
        "autoscaler": "keda",
        "routing": "gateway",
        "route": {"host": HOST, "basePath": "/lg", "gateway": {"name": "public"}},
    }
    obj, deployment_id = listen_and_deploy(
        resources, vendor_agent, namespace, agents_namespace, settings, "keda-bot"
    )

    (scaled,) = custom(k8s_api, "keda.sh", "v1alpha1", agents_namespace, "scaledobjects")
    assert scaled["spec"]["scaleTargetRef"]["name"].endswith("-queue")
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (1, 4)
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "postgresql"
    assert int(trigger["metadata"]["targetQueryValue"]) > 0
    (auth,) = custom(k8s_api, "keda.sh", "v1alpha1", agents_namespace, "triggerauthentications")
    assert auth["spec"]["secretTargetRef"][0]["name"].endswith("-db")
    hpas = client.AutoscalingV2Api(k8s_api).list_namespaced_horizontal_pod_autoscaler(
        agents_namespace
    )
    assert [h.metadata.name.endswith("-queue") for h in hpas.items] == [False]  # server only

    (route,) = custom(k8s_api, "gateway.networking.k8s.io", "v1", agents_namespace, "httproutes")
    assert route["spec"]["hostnames"] == [HOST]
    assert route["spec"]["rules"][0]["matches"][0]["path"]["value"] == f"/lg/{deployment_id}"
    conditions = route["status"]["parents"][0]["conditions"]
    assert {c["type"] for c in conditions if c["status"] == "True"} >= {"Accepted", "ResolvedRefs"}
    assert obj["status"]["url"] == f"https://{HOST}/lg/{deployment_id}"
    assert_network_policy(k8s_api, agents_namespace, deployment_id)


def test_hpa_and_ingress_reach_deployed_with_an_ingress(
    operator: Any,
    vendor_agent: VendorAgent,
    admitter: RouteAdmitter,
    resources: Resources,
    namespace: str,
    agents_namespace: str,
    k8s_api: client.ApiClient,
) -> None:
    settings = {"routing": "ingress", "route": {"host": HOST, "ingressClassName": "nginx"}}
    obj, deployment_id = listen_and_deploy(
        resources, vendor_agent, namespace, agents_namespace, settings, "hpa-bot"
    )
    hpas = client.AutoscalingV2Api(k8s_api).list_namespaced_horizontal_pod_autoscaler(
        agents_namespace
    )
    assert sorted(h.metadata.name.endswith("-queue") for h in hpas.items) == [False, True]
    assert custom(k8s_api, "keda.sh", "v1alpha1", agents_namespace, "scaledobjects") == []
    (ingress,) = client.NetworkingV1Api(k8s_api).list_namespaced_ingress(agents_namespace).items
    assert ingress.spec.ingress_class_name == "nginx"
    assert ingress.spec.rules[0].http.paths[0].path == f"/{deployment_id}"
    assert ingress.status.load_balancer.ingress  # admitted (by the fake controller)
    assert obj["status"]["url"] == f"https://{HOST}/{deployment_id}"
    assert_network_policy(k8s_api, agents_namespace, deployment_id)


def assert_network_policy(api: client.ApiClient, namespace: str, deployment_id: str) -> None:
    (policy,) = client.NetworkingV1Api(api).list_namespaced_network_policy(namespace).items
    own = {"deployplane.io/deployment-id": deployment_id}
    assert policy.spec.pod_selector.match_labels == own
    assert sorted(policy.spec.policy_types) == ["Egress", "Ingress"]
    (egress,) = policy.spec.egress
    assert egress.to[0].ip_block.cidr == "0.0.0.0/0"
    assert egress.to[0].ip_block._except == ["169.254.169.254/32"]
    assert policy.spec.ingress[0]._from[0].pod_selector.match_labels == own


def test_a_base_path_change_rewrites_every_route_and_nothing_else(
    operator: Any,
    dev_cluster: E2ECluster,
    vendor_agent: VendorAgent,
    admitter: RouteAdmitter,
    resources: Resources,
    emulator: Emulator,
    namespace: str,
    agents_namespace: str,
    k8s_api: client.ApiClient,
) -> None:
    resources.create(LST, listener_body(namespace, agents_namespace))
    settings: dict[str, Any] = {"routing": "ingress", "route": {"host": HOST, "basePath": "/one"}}
    vendor_agent.start(settings).wait_running()
    ids = [
        deploy(resources, n, agents_namespace, vendor_agent.image)["status"]["deploymentId"]
        for n in ("a", "b")
    ]
    vendor_agent.stop()
    before = agent_writes(k8s_api, agents_namespace)
    time.sleep(1.1)  # managedFields times have a resolution of one second
    since = dt.datetime.now(dt.UTC)

    vendor_agent.start({**settings, "route": {"host": HOST, "basePath": "/two"}}).wait_running()
    networking = client.NetworkingV1Api(k8s_api)

    def moved() -> bool:
        paths = {
            i.spec.rules[0].http.paths[0].path
            for i in networking.list_namespaced_ingress(agents_namespace).items
        }
        return paths == {f"/two/{i}" for i in ids}

    wait_until("every route at the new base path", lambda: moved() or None)
    for deployment_id in ids:
        url = f"https://{HOST}/two/{deployment_id}"

        def stored(d: str = deployment_id, u: str = url) -> bool | None:
            config = control_plane_deployment(emulator, d)["source_config"]
            return config.get("custom_url") == u or None

        wait_until("the new URL on the control plane", stored)
    after = agent_writes(k8s_api, agents_namespace)
    # The routes, and each owner's record of what is applied (its digests): nothing else.
    rewritten = sorted(key for key, when in after.items() if before.get(key) != when)
    kinds = [kind for kind, _ in rewritten]
    assert kinds == ["V1ConfigMap", "V1ConfigMap", "V1Ingress", "V1Ingress"], rewritten
    if isinstance(dev_cluster, DevCluster):  # the audit log: not even a no-op apply
        user = f"system:serviceaccount:{namespace}:{AGENT_SA}"
        assert dev_cluster.count_writes(since, user=user) == {"configmaps": 2, "ingresses": 2}
