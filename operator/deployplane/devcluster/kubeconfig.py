"""Kubeconfig files for the dev cluster.

Certificates and keys are embedded (`*-data`) rather than referenced by path so a
kubeconfig keeps working when copied or read from another working directory, and
the file is written 0600 because it holds a private key or a bearer token.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml

CONTEXT = "deployplane-dev"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def write_kubeconfig(
    path: Path,
    *,
    server: str,
    ca_cert: bytes,
    user: str,
    client_cert: bytes | None = None,
    client_key: bytes | None = None,
    token: str | None = None,
    namespace: str | None = None,
) -> Path:
    """Write a single-context kubeconfig authenticating by client certificate or token."""
    if (client_cert is None) != (client_key is None):
        raise ValueError("client_cert and client_key go together")
    if (token is None) == (client_cert is None):
        raise ValueError("exactly one of a client certificate or a token is needed")
    credentials: dict[str, str] = {}
    if client_cert is not None and client_key is not None:
        credentials["client-certificate-data"] = _b64(client_cert)
        credentials["client-key-data"] = _b64(client_key)
    if token is not None:
        credentials["token"] = token
    context: dict[str, Any] = {"cluster": CONTEXT, "user": user}
    if namespace is not None:
        context["namespace"] = namespace
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CONTEXT,
                "cluster": {"server": server, "certificate-authority-data": _b64(ca_cert)},
            }
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": CONTEXT, "context": context}],
        "current-context": CONTEXT,
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    # Create with 0600 from the start: no window in which the secret is world-readable.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    return path
