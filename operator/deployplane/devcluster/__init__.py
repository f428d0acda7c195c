"""A real Kubernetes API on this machine: etcd + kube-apiserver (+ controller-manager,
and with `workloads=True` kube-scheduler and kwok fake nodes, so pods run).

The binaries are built from Go modules by `tools/k8s/build.sh` (`make tools`); this
package runs them the way envtest does. Public API:

    with DevCluster(audit_log=True, workloads=True) as cluster:
        cluster.kubeconfig                      # admin kubeconfig path
        cluster.service_account_kubeconfig("ns", "sa", path)
        cluster.count_writes(since=t0)          # {"configmaps": 1, ...}
        cluster.settings                        # ClusterSettings: what it runs
"""

from deployplane.devcluster.cluster import ClusterSettings, DevCluster, DevClusterError
from deployplane.devcluster.serviceaccounts import service_account_username
from deployplane.devcluster.tools import Tools, ToolsNotFound, find_tools

__all__ = [
    "ClusterSettings",
    "DevCluster",
    "DevClusterError",
    "Tools",
    "ToolsNotFound",
    "find_tools",
    "service_account_username",
]
