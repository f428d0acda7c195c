"""The bearer token as the apiserver must receive it, from either kind of configuration."""

from __future__ import annotations

from pathlib import Path

from kubernetes import client
from kubernetes.config.incluster_config import InClusterConfigLoader

from deployplane.kube.credentials import bearer_token

TOKEN = "eyJhbGciOiJSUzI1NiJ9.payload.signature"


def test_in_cluster_token_loses_the_clients_lower_case_prefix(tmp_path: Path) -> None:
    """The in-cluster loader stores "bearer <token>": sent as "Bearer bearer <token>", the
    apiserver answered 401 to the chart's operator pod on the real node."""
    (tmp_path / "token").write_text(TOKEN)
    (tmp_path / "ca.crt").write_text("not checked here")
    configuration = client.Configuration()
    InClusterConfigLoader(
        token_filename=str(tmp_path / "token"),
        cert_filename=str(tmp_path / "ca.crt"),
        environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"},
    ).load_and_set(configuration)
    assert bearer_token(configuration) == TOKEN


def test_kubeconfig_token_loses_its_prefix() -> None:
    configuration = client.Configuration()
    configuration.api_key = {"BearerToken": f"Bearer {TOKEN}"}
    assert bearer_token(configuration) == TOKEN


def test_no_token_is_none() -> None:
    assert bearer_token(client.Configuration()) is None
