"""ServiceAccount credentials through the TokenRequest API.

Tests run the operator as the ServiceAccount the Helm chart creates, with a kubeconfig
holding a token the apiserver minted for it, so the operator gets exactly the RBAC the
chart grants: a missing rule shows up as a 403 in the tests, not in a user's cluster.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

from kubernetes import client

from deployplane.devcluster.kubeconfig import write_kubeconfig

DEFAULT_TOKEN_LIFETIME = dt.timedelta(hours=24)


def service_account_username(namespace: str, name: str) -> str:
    """The user name the apiserver gives a ServiceAccount token (audit, RBAC subjects)."""
    return f"system:serviceaccount:{namespace}:{name}"


def request_token(
    api: client.ApiClient,
    namespace: str,
    name: str,
    *,
    lifetime: dt.timedelta = DEFAULT_TOKEN_LIFETIME,
    audiences: Sequence[str] = (),
) -> str:
    """Mint a token for an existing ServiceAccount (the apiserver's audience by default)."""
    body = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(
            audiences=list(audiences), expiration_seconds=int(lifetime.total_seconds())
        )
    )
    issued = client.CoreV1Api(api).create_namespaced_service_account_token(name, namespace, body)
    if issued.status is None or not issued.status.token:
        raise RuntimeError(f"TokenRequest for {namespace}/{name} returned no token")
    return str(issued.status.token)


def write_service_account_kubeconfig(
    api: client.ApiClient,
    namespace: str,
    name: str,
    path: Path,
    *,
    server: str,
    ca_cert: bytes,
    lifetime: dt.timedelta = DEFAULT_TOKEN_LIFETIME,
) -> Path:
    """Write a kubeconfig that authenticates as ServiceAccount `namespace/name`."""
    token = request_token(api, namespace, name, lifetime=lifetime)
    return write_kubeconfig(
        path,
        server=server,
        ca_cert=ca_cert,
        user=service_account_username(namespace, name),
        token=token,
        namespace=namespace,
    )
