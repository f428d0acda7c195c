"""`E2ECluster`: what an end-to-end test may ask of the cluster it runs on.

The `dev_cluster` fixture (tests/e2e/conftest.py) yields either a `DevCluster` the session
started or an `ExistingCluster` (`make e2e KUBECONFIG=path`). Both satisfy this Protocol,
and the fixture is typed with it, so mypy (which checks tests/e2e and tests/support)
rejects a test that reaches for something only one of them has, such as the dev
cluster's `state_dir` or `settings`. A test that needs such a thing asks for the
`started_cluster` fixture (a `DevCluster`; skipped on an existing cluster) or for a
capability fixture that detects it on the cluster (`kwok_nodes`, `workloads`).
"""

from __future__ import annotations

import datetime as dt
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from kubernetes import client


class ClusterTools(Protocol):
    """The client binaries for the cluster (None: not found)."""

    @property
    def kubectl(self) -> Path | None: ...

    @property
    def helm(self) -> Path | None: ...


class E2ECluster(Protocol):
    @property
    def kubeconfig(self) -> Path:
        """Admin kubeconfig."""
        ...

    @property
    def server(self) -> str: ...

    @property
    def tools(self) -> ClusterTools: ...

    def api_client(self, token: str | None = None) -> client.ApiClient:
        """A new `ApiClient`: admin, or bearer `token`. Close it."""
        ...

    def admin(self) -> AbstractContextManager[client.ApiClient]:
        """An admin `ApiClient` closed on exit."""
        ...

    def service_account_kubeconfig(
        self,
        namespace: str,
        name: str,
        path: Path | None = None,
        *,
        lifetime: dt.timedelta = ...,
    ) -> Path:
        """Kubeconfig with a TokenRequest token for an existing ServiceAccount."""
        ...

    def count_writes(
        self,
        since: dt.datetime | None = None,
        *,
        user: str | None = None,
        namespace: str | None = None,
    ) -> dict[str, int]:
        """Write requests per resource from the audit log (skips where there is none)."""
        ...

    def count_requests(self, **filters: Any) -> dict[str, int]: ...
