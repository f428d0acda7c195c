"""`ClusterSettings`: what a `DevCluster` runs, as `state.json` records it."""

from __future__ import annotations

from dataclasses import dataclass

from deployplane.devcluster.workloads import DEFAULT_NODES


@dataclass(frozen=True)
class ClusterSettings:
    controller_manager: bool = True
    # Scheduler + workload controllers + kwok with `nodes` fake nodes.
    workloads: bool = False
    nodes: int = DEFAULT_NODES
    audit_log: bool = False
    detached: bool = False
    ready_timeout: float = 60.0
    # One real node (kubelet, containerd, kube-proxy in a sandbox: realnode/) beside the
    # kwok nodes; implies workloads.
    real_node: bool = False
    # Argo CD and Flux controllers and a git server beside the cluster (gitops/), the
    # git server on `git_port` of 127.0.0.1 (0: a free port).
    gitops: bool = False
    git_port: int = 0

    @property
    def kwok(self) -> bool:
        """kwok runs with workloads, also beside a real node without kwok nodes: it is the
        `kwok-volume` StorageClass's provisioner (PostgreSQL's claims)."""
        return self.workloads
