"""An existing Kubernetes cluster (kind, CI, staging) standing in for the dev cluster.

`make e2e KUBECONFIG=path` sets DEPLOYPLANE_E2E_KUBECONFIG, and tests/e2e/conftest.py
then yields an `ExistingCluster` where it would start a `DevCluster`. Both satisfy
`tests.support.e2ecluster.E2ECluster` (mypy checks it): the kubeconfig, admin and token
clients, ServiceAccount kubeconfigs, and the client binaries. What only a cluster we
started can do (read its audit log) skips the test with the reason, instead of failing
or passing. What a cluster has (nodes, kwok) is detected by tests/support/nodes.py.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from deployplane.devcluster import ToolsNotFound, find_tools
from deployplane.devcluster.serviceaccounts import write_service_account_kubeconfig

ENV_KUBECONFIG = "DEPLOYPLANE_E2E_KUBECONFIG"
NO_AUDIT = (
    "existing cluster (DEPLOYPLANE_E2E_KUBECONFIG): its audit log is not ours to read, "
    "so request counts cannot be checked"
)


@dataclass(frozen=True)
class ClientTools:
    """kubectl and helm for a cluster we did not start (no etcd / kube-apiserver here)."""

    bin_dir: Path | None
    kubectl: Path | None
    helm: Path | None
    kube_apiserver: None = None
    etcd: None = None


def client_tools() -> ClientTools:
    try:
        built = find_tools()
        return ClientTools(built.bin_dir, built.kubectl, built.helm)
    except ToolsNotFound:
        kubectl, helm = shutil.which("kubectl"), shutil.which("helm")
        return ClientTools(None, Path(kubectl) if kubectl else None, Path(helm) if helm else None)


class ExistingCluster:
    """The cluster a kubeconfig points at (its current context)."""

    audit_enabled = False

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig.expanduser().resolve()
        if not self.kubeconfig.is_file():
            raise FileNotFoundError(f"{ENV_KUBECONFIG}={kubeconfig}: no such file")
        # load_kube_config copies inline certificate data to files and resolves the
        # current context; the Configuration it fills is reused for token clients.
        self.tools = client_tools()
        self._cfg = client.Configuration()
        config.load_kube_config(config_file=str(self.kubeconfig), client_configuration=self._cfg)

    @property
    def server(self) -> str:
        return str(self._cfg.host)

    def ca_cert_bytes(self) -> bytes:
        """The CA the kubeconfig trusts for this server (inline or as a file)."""
        if self._cfg.ssl_ca_cert:
            return Path(self._cfg.ssl_ca_cert).read_bytes()
        pytest.skip(
            f"existing cluster: the kubeconfig names no certificate authority for {self.server}, "
            "so a ServiceAccount kubeconfig for it cannot be written"
        )

    def api_client(self, token: str | None = None) -> client.ApiClient:
        """A new `ApiClient`: the kubeconfig's own credentials, or bearer `token`."""
        if token is None:
            return config.new_client_from_config(config_file=str(self.kubeconfig))
        cfg = client.Configuration(host=self.server)
        cfg.ssl_ca_cert = self._cfg.ssl_ca_cert
        cfg.verify_ssl = self._cfg.verify_ssl
        cfg.api_key = {"authorization": token}
        cfg.api_key_prefix = {"authorization": "Bearer"}
        return client.ApiClient(cfg)

    @contextlib.contextmanager
    def admin(self) -> Iterator[client.ApiClient]:
        with contextlib.closing(self.api_client()) as api:
            yield api

    def service_account_kubeconfig(
        self,
        namespace: str,
        name: str,
        path: Path | None = None,
        *,
        lifetime: dt.timedelta = dt.timedelta(hours=1),
    ) -> Path:
        target = path or Path(tempfile.mkdtemp(prefix="e2e-sa-")) / f"{namespace}.{name}.yaml"
        with self.admin() as api:
            return write_service_account_kubeconfig(
                api,
                namespace,
                name,
                target,
                server=self.server,
                ca_cert=self.ca_cert_bytes(),
                lifetime=lifetime,
            )

    def count_writes(
        self,
        since: dt.datetime | None = None,
        *,
        user: str | None = None,
        namespace: str | None = None,
    ) -> dict[str, int]:
        pytest.skip(NO_AUDIT)

    def count_requests(self, **filters: Any) -> dict[str, int]:
        pytest.skip(NO_AUDIT)
