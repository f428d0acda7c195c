"""How a dev cluster is reached once it runs: its files in the state directory (the
admin kubeconfig, the CA, the audit log), clients (admin, or a ServiceAccount's token)
and the audit log's counts. `cluster.DevCluster` adds how it starts and stops."""

from __future__ import annotations

import contextlib
import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubernetes import client

from deployplane.devcluster import audit
from deployplane.devcluster.errors import DevClusterError
from deployplane.devcluster.pki import PkiFiles, pki_files
from deployplane.devcluster.serviceaccounts import write_service_account_kubeconfig
from deployplane.devcluster.settings import ClusterSettings

__all__ = ["ClusterAccess"]


class ClusterAccess(ABC):
    """A running cluster's files and clients, given its state directory and server."""

    settings: ClusterSettings

    @property
    @abstractmethod
    def state_dir(self) -> Path: ...

    @property
    @abstractmethod
    def server(self) -> str: ...

    # ---------------------------------------------------------------- paths
    @property
    def kubeconfig(self) -> Path:
        """Admin kubeconfig (client certificate in group system:masters)."""
        return self.state_dir / "admin.kubeconfig"

    @property
    def audit_log(self) -> Path:
        return self.state_dir / "audit.log"

    @property
    def ca_cert(self) -> Path:
        return self.state_dir / "pki" / "ca.crt"

    def _pki(self) -> PkiFiles:
        return pki_files(self.state_dir / "pki")

    # ---------------------------------------------------------------- clients
    def api_client(self, token: str | None = None) -> client.ApiClient:
        """A new `ApiClient`: admin (client certificate), or bearer `token`. Close it."""
        pki = self._pki()
        cfg = client.Configuration(host=self.server, ssl_ca_cert=str(pki.ca_cert))
        if token is None:
            cfg.cert_file = str(pki.admin_cert)
            cfg.key_file = str(pki.admin_key)
        else:
            cfg.api_key = {"authorization": token}
            cfg.api_key_prefix = {"authorization": "Bearer"}
        return client.ApiClient(cfg)

    @contextlib.contextmanager
    def admin(self) -> Iterator[client.ApiClient]:
        """An admin `ApiClient` closed on exit."""
        with contextlib.closing(self.api_client()) as api:
            yield api

    def service_account_kubeconfig(
        self,
        namespace: str,
        name: str,
        path: Path | None = None,
        *,
        lifetime: dt.timedelta = dt.timedelta(hours=24),
    ) -> Path:
        """Kubeconfig with a TokenRequest token for an existing ServiceAccount."""
        target = path or self.state_dir / "serviceaccounts" / f"{namespace}.{name}.kubeconfig"
        with self.admin() as api:
            return write_service_account_kubeconfig(
                api,
                namespace,
                name,
                target,
                server=self.server,
                ca_cert=self.ca_cert.read_bytes(),
                lifetime=lifetime,
            )

    # ---------------------------------------------------------------- audit
    def count_writes(
        self,
        since: dt.datetime | None = None,
        *,
        user: str | None = None,
        namespace: str | None = None,
    ) -> dict[str, int]:
        """Write requests per resource since `since` (see `audit.count_requests`)."""
        self._require_audit()
        return audit.count_writes(self.audit_log, since, user=user, namespace=namespace)

    def count_requests(self, **filters: Any) -> dict[str, int]:
        self._require_audit()
        return audit.count_requests(self.audit_log, **filters)

    def _require_audit(self) -> None:
        if not self.settings.audit_log:
            raise DevClusterError("start the cluster with audit_log=True to count requests")
