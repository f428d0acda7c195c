"""Pod Security admission in the tests: the labels a platform team puts on a namespace
to enforce the `restricted` standard, and proof that the apiserver enforces them."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

ENFORCE = "pod-security.kubernetes.io/enforce"
RESTRICTED = {ENFORCE: "restricted", f"{ENFORCE}-version": "latest"}


def enforces_restricted(k8s_api: client.ApiClient, namespace: str) -> str:
    """The apiserver's refusal of a pod that `restricted` forbids (a server-side dry
    run): the namespace's label is enforced, not only set. Returns the refusal."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "runs-as-anything"},
        "spec": {"containers": [{"name": "c", "image": "registry.example.com/any:1"}]},
    }
    with pytest.raises(ApiException) as refused:
        client.CoreV1Api(k8s_api).create_namespaced_pod(namespace, pod, dry_run="All")
    assert refused.value.status == 403, refused.value
    message = str(json.loads(refused.value.body)["message"])
    assert 'violates PodSecurity "restricted:latest"' in message, message
    return message
