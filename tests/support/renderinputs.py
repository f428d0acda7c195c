"""The inputs of the data plane's renderer the unit tests share (a deployment, its
revision and listener, the private values) and how they look into what it renders."""

from __future__ import annotations

import uuid
from typing import Any

from deployplane.api.models import Deployment, Listener, Revision
from deployplane.dataplane.render import Rendered

DEPLOYMENT_ID = uuid.UUID("0badc0de-0000-4000-8000-000000000001")
LISTENER_ID = uuid.UUID("11111111-0000-4000-8000-000000000002")
REVISION_ID = uuid.UUID("22222222-0000-4000-8000-000000000003")
IMAGE = "registry.example/agent:1.0"
BASE = "my-agent-0badc0de"
NOW = "2026-01-01T00:00:00Z"
PASSWORD = "db-pass-123"
SECRET_VALUES = {"OPENAI_API_KEY": "sk-very-secret", "OTHER": "two"}


def make_deployment(
    resource_spec: dict[str, Any] | None = None,
    *,
    namespace: str | None = "agents",
    secrets: list[str] | None = None,
    name: str = "My Agent",
) -> Deployment:
    source_config: dict[str, Any] = {"resource_spec": resource_spec or {}}
    if namespace is not None:
        source_config["listener_config"] = {"k8s_namespace": namespace}
    return Deployment.model_validate(
        {
            "id": str(DEPLOYMENT_ID),
            "tenant_id": "11111111-1111-1111-1111-111111111111",
            "name": name,
            "source": "external_docker",
            "source_config": source_config,
            "source_revision_config": {"image_uri": IMAGE},
            "secrets": [{"name": n} for n in (secrets or [])],
            "created_at": NOW,
            "updated_at": NOW,
            "status": "READY",
        }
    )


def make_revision(revision_id: uuid.UUID = REVISION_ID) -> Revision:
    return Revision.model_validate(
        {
            "id": str(revision_id),
            "created_at": NOW,
            "updated_at": NOW,
            "status": "AWAITING_DEPLOY",
            "source": "external_docker",
            "source_revision_config": {"image_uri": IMAGE},
        }
    )


def make_listener(namespaces: list[str] | None = None) -> Listener:
    return Listener.model_validate(
        {
            "id": str(LISTENER_ID),
            "compute_type": "k8s",
            "compute_id": "cluster-1",
            "compute_config": {
                "k8s_namespaces": ["agents", "team-b"] if namespaces is None else namespaces
            },
            "created_at": NOW,
            "updated_at": NOW,
        }
    )


def find(rendered: Rendered, kind: str, name: str) -> dict[str, Any]:
    matches = [o for o in rendered.objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind}/{name} in {rendered!r}"
    return matches[0]


def dig(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


def server_container(rendered: Rendered, name: str = BASE) -> dict[str, Any]:
    """The agent server's container (the first of the Deployment named `name`)."""
    container: dict[str, Any] = dig(
        find(rendered, "Deployment", name), "spec.template.spec.containers.0"
    )
    return container
