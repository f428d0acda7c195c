"""The operator suites' shared pieces (test_operator, test_connection_kind,
test_delete_in_any_order, test_export_roundtrip): the operator in process on the test's
namespace, its log checked for secrets when it stops; the AgentDeployment and Listener
bodies those suites create; and the Events of one object.

A suite takes `operator` by importing it by name (pytest then sees it in that module)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from tests.support.operator_harness import API_KEY, Emulator, kopf_operator, operator_env

SECRET_VALUE = "sk-e2e-planted-secret-4f9a2c"


@pytest.fixture
def operator(namespace: str, emulator: Emulator, kubeconfig: Path, crds: None) -> Iterator[Any]:
    with kopf_operator(namespace, operator_env(emulator, kubeconfig)) as runner:
        yield runner
    assert runner.exit_code == 0, runner.output[-3000:]
    # Secrets hygiene: planted values and the API key never reach the operator's logs.
    assert SECRET_VALUE not in runner.output
    assert API_KEY not in runner.output


def docker(name: str, image: str = "registry.example.com/agent:1", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "source": "external_docker",
        "sourceConfig": {"resourceSpec": {"minScale": 1}},
        "sourceRevisionConfig": {"imageUri": image},
    }
    body.update(spec)
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"name": name},
        "spec": body,
    }


def listener(name: str, compute_id: str) -> dict[str, Any]:
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "Listener",
        "metadata": {"name": name},
        "spec": {
            "computeType": "k8s",
            "computeId": compute_id,
            "computeConfig": {"k8sNamespaces": ["agents"]},
            "version": "1",
        },
    }


def events_for(k8s_api: client.ApiClient, namespace: str, name: str) -> list[client.CoreV1Event]:
    items = client.CoreV1Api(k8s_api).list_namespaced_event(namespace).items
    return [e for e in items if e.involved_object.name == name]
