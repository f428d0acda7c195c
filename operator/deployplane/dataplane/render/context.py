"""Names, namespace, labels and metadata every rendered object shares (`Context`).

Also the names other parts of the data plane need without rendering: the namespace a
deployment runs in and the Secret holding its database password.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from deployplane.api import dataplane
from deployplane.api.dataplane import LABEL_DEPLOYMENT_ID, LABEL_LISTENER_ID, ServerRuntime
from deployplane.api.models import Deployment, Listener, ResourceSpec, Revision
from deployplane.dataplane.render.model import OWNER_UID_PLACEHOLDER, Obj, RenderError
from deployplane.dataplane.render.settings import DataPlaneSettings

LABEL_COMPONENT = "app.kubernetes.io/component"
LABEL_NAME = "app.kubernetes.io/name"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "deployplane-listener"
ANNOTATION_REVISION_ID = "deployplane.io/revision-id"

SERVER = "agent-server"
QUEUE = "queue"
REDIS = "redis"
DATABASE = "database"

# Ports the objects refer to each other by (Service, container, connection URIs).
SERVER_PORT = 8000
REDIS_PORT = 6379
POSTGRES_PORT = 5432


@dataclass(frozen=True)
class Context:
    """What every object builder needs, resolved and checked once."""

    namespace: str
    base: str
    deployment_id: str
    listener_id: str
    revision_id: str
    deployment_name: str
    image: str
    spec: ResourceSpec
    progress_deadline_seconds: int
    settings: DataPlaneSettings
    runtime: ServerRuntime = ServerRuntime.POSTGRES

    @property
    def in_memory(self) -> bool:
        """The image runs the in-memory server: no queue, PostgreSQL or Redis beside it."""
        return self.runtime is ServerRuntime.INMEM

    @classmethod
    def of(
        cls,
        deployment: Deployment,
        revision: Revision | None,
        listener: Listener,
        image: str,
        progress_deadline_seconds: int,
        settings: DataPlaneSettings,
        runtime: ServerRuntime = ServerRuntime.POSTGRES,
    ) -> Context:
        source_config = deployment.source_config
        spec = (source_config.resource_spec if source_config else None) or ResourceSpec()
        return cls(
            namespace=namespace_for(deployment, listener),
            base=base_name(deployment),
            deployment_id=str(deployment.id),
            listener_id=str(listener.id),
            revision_id="" if revision is None else str(revision.id),
            deployment_name=deployment.name,
            image=image,
            spec=spec,
            progress_deadline_seconds=progress_deadline_seconds,
            settings=settings,
            runtime=runtime,
        )

    def name(self, component: str) -> str:
        suffix = {SERVER: "", QUEUE: "-queue", REDIS: "-redis", DATABASE: "-db"}[component]
        return self.base + suffix

    def labels(self, component: str | None = None) -> dict[str, str]:
        labels = {
            LABEL_NAME: self.base,
            LABEL_MANAGED_BY: MANAGED_BY,
            LABEL_DEPLOYMENT_ID: self.deployment_id,
            LABEL_LISTENER_ID: self.listener_id,
        }
        if component is not None:
            labels[LABEL_COMPONENT] = component
        return labels

    def selector(self, component: str) -> dict[str, str]:
        # Immutable once applied: only values that never change for a deployment.
        return {LABEL_DEPLOYMENT_ID: self.deployment_id, LABEL_COMPONENT: component}

    def metadata(self, name: str, component: str | None) -> Obj:
        return {
            "name": name,
            "namespace": self.namespace,
            "labels": self.labels(component),
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": self.base,
                    "uid": OWNER_UID_PLACEHOLDER,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }


def namespace_for(deployment: Deployment, listener: Listener) -> str:
    """The namespace `render` would use, without rendering: what an agent needs to
    read its private inputs (the database password's Secret) before rendering. The rule
    is the data-plane contract's (`api.dataplane.namespace_for`)."""
    try:
        return dataplane.namespace_for(deployment, listener)
    except dataplane.NoNamespace as exc:
        raise RenderError(str(exc)) from None


def database_secret_name(deployment: Deployment) -> str:
    """The Secret (key `password`) holding the deployment's PostgreSQL password."""
    return f"{base_name(deployment)}-db"


_MAX_SLUG = 36
_NOT_NAME = re.compile(r"[^a-z0-9]+")


def base_name(deployment: Deployment) -> str:
    """A valid, stable object name: the deployment's name as a slug plus 8 id digits.

    The id part keeps two deployments whose names slug alike (`My App`, `my-app`)
    apart; the name part keeps `kubectl get` readable.
    """
    slug = _NOT_NAME.sub("-", deployment.name.lower()).strip("-")[:_MAX_SLUG].strip("-")
    if not slug or not slug[0].isalpha():
        slug = "d-" + slug if slug else "d"
    return f"{slug}-{deployment.id.hex[:8]}"


def owner(ctx: Context) -> Obj:
    """One ConfigMap per deployment: every other object is its dependent (the target of
    the ownerReference `Context.metadata` writes)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": ctx.base, "namespace": ctx.namespace, "labels": ctx.labels()},
        "data": {
            "deployment-id": ctx.deployment_id,
            "deployment-name": ctx.deployment_name,
            "listener-id": ctx.listener_id,
            "revision-id": ctx.revision_id,
        },
    }
