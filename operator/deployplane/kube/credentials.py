"""Where the credentials to the apiserver come from, read again whenever they stop
working: in a pod, the service account (its token file is rotated by the kubelet);
elsewhere $KUBECONFIG (or ~/.kube/config), exec plugins and OIDC included (the official
client runs the plugin when the kubeconfig is loaded, so loading it again is how a
token that expired is replaced).
"""

from __future__ import annotations

import os
import ssl

from kubernetes import client, config


def load_configuration() -> client.Configuration:
    """A fresh configuration, with fresh credentials."""
    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)
    except config.ConfigException:
        # Read $KUBECONFIG now: the client's own default was fixed at its import time.
        config.load_kube_config(
            config_file=os.environ.get("KUBECONFIG"), client_configuration=configuration
        )
    # Many resources reconcile at once; the default pool of 4 would serialize them.
    configuration.connection_pool_maxsize = 32
    return configuration


def bearer_token(configuration: client.Configuration) -> str | None:
    """The token, without its "Bearer " prefix (None: a client certificate, or none).
    `auth_settings` refreshes an expiring token where the client knows how. The in-cluster
    configuration writes the prefix in lower case ("bearer <token>"), a kubeconfig's
    "Bearer <token>": either is dropped (a pod's operator sent "Bearer bearer ...")."""
    bearer = configuration.auth_settings().get("BearerToken") or {}
    value = str(bearer.get("value") or "").strip()
    scheme, _, token = value.partition(" ")
    if scheme.lower() == "bearer" and token:
        value = token
    return value.strip() or None


def ssl_context(configuration: client.Configuration) -> ssl.SSLContext | bool:
    """The TLS the configuration asks for: its CA and client certificate (False: no
    verification, as `insecure-skip-tls-verify` says)."""
    if not configuration.verify_ssl:
        return False
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    return context
