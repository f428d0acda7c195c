"""Cluster DNS on the real node: CoreDNS (tools/k8s/coredns) as one of its daemons.

CoreDNS runs in the node's network namespace on NODE_IP:53 with the `kubernetes`
plugin; the `kube-dns` Service (kube-system, CLUSTER_DNS_IP, the address the kubelet
writes into every pod's resolv.conf) has one EndpointSlice pointing at it, so pods
reach it through kube-proxy like any Service. Names outside `cluster.local` get
NXDOMAIN at once: nothing leaves the node (the egress guard), so there is nothing to
forward to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deployplane.devcluster.kubeconfig import CONTEXT
from deployplane.devcluster.realnode import layout

DNS_NAMESPACE = "kube-system"
DNS_SERVICE = "kube-dns"
MANAGED_BY = "deployplane-dev-cluster"


def corefile(kubeconfig: Path) -> str:
    return f"""cluster.local:53 {{
    bind {layout.NODE_IP}
    errors
    cache 5
    kubernetes cluster.local {{
        kubeconfig {kubeconfig} {CONTEXT}
        pods insecure
        ttl 5
    }}
}}
.:53 {{
    bind {layout.NODE_IP}
    template ANY ANY {{
        rcode NXDOMAIN
    }}
}}
"""


def _ports(kind: str) -> list[dict[str, Any]]:
    ports = [("dns", "UDP"), ("dns-tcp", "TCP")]
    key = "targetPort" if kind == "Service" else None
    return [
        {"name": name, "port": 53, "protocol": proto, **({key: 53} if key else {})}
        for name, proto in ports
    ]


def service_manifest() -> dict[str, Any]:
    """Selector-less: its endpoint is the node's CoreDNS, published beside it."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": DNS_SERVICE, "namespace": DNS_NAMESPACE},
        "spec": {"clusterIP": layout.CLUSTER_DNS_IP, "ports": _ports("Service")},
    }


def endpoint_slice(
    name: str, namespace: str, service: str, port_list: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "kubernetes.io/service-name": service,
                "endpointslice.kubernetes.io/managed-by": MANAGED_BY,
            },
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [layout.NODE_IP], "conditions": {"ready": True}}],
        "ports": port_list,
    }


def dns_endpoint_slice() -> dict[str, Any]:
    return endpoint_slice(
        f"{DNS_SERVICE}-node", DNS_NAMESPACE, DNS_SERVICE, _ports("EndpointSlice")
    )


def apiserver_endpoint_slice() -> dict[str, Any]:
    """The `kubernetes` Service's endpoint: the apiserver forwarder on the node (the
    apiserver runs with `--endpoint-reconciler-type=none`: its own address is loopback)."""
    port = {"name": "https", "port": layout.APISERVER_PORT, "protocol": "TCP"}
    return endpoint_slice("kubernetes-node", "default", "kubernetes", [port])
