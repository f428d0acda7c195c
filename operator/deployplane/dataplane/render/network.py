"""The deployment's NetworkPolicy (the agent's `network_policy`, on by default).

In: from the deployment's own pods (server, queue, Redis, PostgreSQL talk to each
other), from the routing layer's namespace to the server's port, and from KEDA's
namespace to PostgreSQL when KEDA counts the runs there. Out: everywhere but the cloud
metadata address, which would hand a pod the node's cloud credentials.
"""

from __future__ import annotations

from deployplane.api.dataplane import LABEL_DEPLOYMENT_ID
from deployplane.dataplane.render.context import POSTGRES_PORT, SERVER, SERVER_PORT, Context
from deployplane.dataplane.render.model import Obj
from deployplane.dataplane.render.settings import Autoscaler

__all__ = ["METADATA_CIDR", "network_policy"]

METADATA_CIDR = "169.254.169.254/32"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def _from_namespace(namespace: str, port: int) -> Obj:
    return {
        "from": [{"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: namespace}}}],
        "ports": [{"protocol": "TCP", "port": port}],
    }


def network_policy(ctx: Context) -> list[Obj]:
    settings = ctx.settings
    if not settings.network_policy:
        return []
    own = {LABEL_DEPLOYMENT_ID: ctx.deployment_id}
    ingress: list[Obj] = [{"from": [{"podSelector": {"matchLabels": own}}]}]
    routing_namespace = settings.routing_namespace_or_default
    if routing_namespace:
        ingress.append(_from_namespace(routing_namespace, SERVER_PORT))
    if settings.autoscaler is Autoscaler.KEDA and settings.keda_namespace:
        ingress.append(_from_namespace(settings.keda_namespace, POSTGRES_PORT))
    return [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": ctx.metadata(ctx.name(SERVER), None),
            "spec": {
                "podSelector": {"matchLabels": own},
                "policyTypes": ["Ingress", "Egress"],
                "ingress": ingress,
                "egress": [
                    {
                        "to": [
                            {"ipBlock": {"cidr": "0.0.0.0/0", "except": [METADATA_CIDR]}},
                            {"ipBlock": {"cidr": "::/0"}},
                        ]
                    }
                ],
            },
        }
    ]
