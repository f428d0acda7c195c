"""Types of the end-to-end fixtures that are functions (tests/e2e/conftest.py's
`apply_manifest` and `service_account_client`), for the tests' annotations; the
cluster's own type is tests/support/e2ecluster.py's `E2ECluster`.
"""

from __future__ import annotations

from typing import Any, Protocol

from kubernetes import client

from deployplane.devcluster.manifests import Manifest


class ApplyManifest(Protocol):
    """`apply_manifest(manifest, *, namespace=<the test's>) -> applied objects`."""

    def __call__(
        self, manifest: Manifest, *, namespace: str | None = ...
    ) -> list[dict[str, Any]]: ...


class ServiceAccountClient(Protocol):
    """`service_account_client(name, rules, *, namespace, cluster_rules) -> ApiClient`
    authenticated with a TokenRequest token of a ServiceAccount holding exactly those
    rules (a Role in `namespace`, a ClusterRole for `cluster_rules`)."""

    def __call__(
        self,
        name: str,
        rules: list[dict[str, Any]] | None = ...,
        *,
        namespace: str | None = ...,
        cluster_rules: list[dict[str, Any]] | None = ...,
    ) -> client.ApiClient: ...
