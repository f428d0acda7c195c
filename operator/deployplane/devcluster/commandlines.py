"""The command lines of etcd, kube-apiserver and kube-controller-manager.

Pure functions of paths, ports and options: `DevCluster` decides what runs, these say
how each server is started. kube-scheduler and kwok are in workloads.py.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from deployplane.devcluster.pki import PkiFiles

SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
# Short names are the controller-manager's aliases for namespace-controller,
# garbage-collector-controller and serviceaccount-controller.
CONTROLLERS = ("namespace", "garbagecollector", "serviceaccount")


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int


def free_ports() -> Ports:
    """Three distinct ports free on 127.0.0.1 right now (someone may take one later)."""
    # Hold all sockets open until every port is picked, so the ports are distinct.
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(3)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return Ports(*[int(s.getsockname()[1]) for s in socks])


def etcd_argv(binary: Path, data_dir: Path, ports: Ports) -> list[str]:
    client_url = f"http://127.0.0.1:{ports.etcd_client}"
    peer_url = f"http://127.0.0.1:{ports.etcd_peer}"
    return [
        str(binary),
        "--name=dev",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client_url}",
        f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=dev={peer_url}",
        # Throwaway data: skipping fsync makes every write (and so startup) faster.
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]


@dataclass(frozen=True)
class AuditFiles:
    policy: Path
    log: Path


def apiserver_argv(
    binary: Path, ports: Ports, pki: PkiFiles, cert_dir: Path, audit: AuditFiles | None
) -> list[str]:
    argv = [
        str(binary),
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={ports.apiserver}",
        f"--etcd-servers=http://127.0.0.1:{ports.etcd_client}",
        f"--cert-dir={cert_dir}",
        f"--tls-cert-file={pki.serving_cert}",
        f"--tls-private-key-file={pki.serving_key}",
        f"--client-ca-file={pki.ca_cert}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={pki.service_account_pub}",
        f"--service-account-signing-key-file={pki.service_account_key}",
        f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
        # How it reaches a real node's kubelet (logs, exec, port-forward): by the node's
        # InternalIP (its hostname resolves to nothing here), with a client certificate
        # the kubelet trusts, checking the kubelet's serving certificate.
        f"--kubelet-client-certificate={pki.kubelet_client_cert}",
        f"--kubelet-client-key={pki.kubelet_client_key}",
        f"--kubelet-certificate-authority={pki.ca_cert}",
        "--kubelet-preferred-address-types=InternalIP,Hostname",
        "--authorization-mode=RBAC,Node",
        "--allow-privileged=true",
        # The `kubernetes` Endpoints would point at 127.0.0.1, which validation
        # refuses (loopback); nothing in-cluster needs to reach the apiserver.
        "--endpoint-reconciler-type=none",
        # /debug/pprof for `DEPLOYPLANE_APISERVER_PROFILING=1` (finding where the
        # apiserver's CPU goes under a benchmark); off otherwise.
        f"--profiling={str(os.environ.get('DEPLOYPLANE_APISERVER_PROFILING') == '1').lower()}",
    ]
    gates = os.environ.get("DEPLOYPLANE_APISERVER_FEATURE_GATES")
    if gates:
        # e.g. ShardedListAndWatch=true (alpha in 1.36; docs/sharding.md): for trying an
        # apiserver feature under the operator; none by default.
        argv.append(f"--feature-gates={gates}")
    if audit is not None:
        argv += [
            f"--audit-policy-file={audit.policy}",
            f"--audit-log-path={audit.log}",
            "--audit-log-format=json",
            "--audit-log-mode=blocking",
        ]
    return argv


def controller_manager_argv(
    binary: Path, kubeconfig: Path, controllers: Sequence[str], ca_cert: Path
) -> list[str]:
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--controllers={','.join(controllers)}",
        "--leader-elect=false",
        "--use-service-account-credentials=false",
        # No serving endpoint: nothing scrapes it, and it would need a port.
        "--secure-port=0",
        f"--root-ca-file={ca_cert}",
        # The default 20 requests/s throttles a rollout of hundreds of pods.
        "--kube-api-qps=200",
        "--kube-api-burst=400",
    ]
