"""Deployments: their bodies (create, patch, answer), source config with the
Kubernetes-shaped parts of `resource_spec`, secrets, and the bulk delete's answer."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from deployplane.api.enums import DeploymentStatus, DeploymentType
from deployplane.api.models.agents import DeploymentAgent
from deployplane.api.models.common import (
    NAME_MAX_LENGTH,
    ApiModel,
    CpuLimit,
    CpuRequest,
    FreeForm,
    NonNegativeInt,
    NonNegativeNumber,
    ReportedSource,
    Source,
    or_unknown,
    require_fields,
)
from deployplane.api.models.revisions import SourceRevisionConfig, SourceRevisionConfigStatus

ReportedDeploymentStatus = Annotated[DeploymentStatus, or_unknown(DeploymentStatus)]


# ----------------------------------------------------- Kubernetes-shaped (camelCase)
# Shapes the spec copies from Kubernetes inside `resource_spec`: camelCase on the wire
# and on both sides, unlike the rest of the API.


class K8sShapedModel(BaseModel):
    """Shapes the spec copies from Kubernetes: field names are camelCase on the wire."""

    model_config = ConfigDict(extra="ignore")


class VolumeMount(K8sShapedModel):
    """Where a volume is mounted in a container."""

    name: str | None = Field(None, description="Name of the volume to mount.")
    mountPath: str | None = Field(None, description="Path in the container.")
    subPath: str | None = Field(None, description="Path within the volume.")
    mountPropagation: str | None = Field(None, description="Mount propagation mode.")
    subPathExpr: str | None = Field(None, description="Expanded path within the volume.")
    readOnly: bool | None = Field(None, description="Mount read-only.")


class EnvVar(K8sShapedModel):
    """An environment variable of a container."""

    name: str = Field(description="Variable name.")
    value: str | None = Field(None, description="Literal value.")
    valueFrom: FreeForm | None = Field(None, description="Source of the value (free-form).")


class ContainerResources(K8sShapedModel):
    """Compute resources of a container."""

    limits: FreeForm | None = Field(None, description="Resource limits (free-form).")
    requests: FreeForm | None = Field(None, description="Resource requests (free-form).")


class Container(K8sShapedModel):
    """An init container or sidecar."""

    name: str | None = Field(None, description="Container name.")
    image: str | None = Field(None, description="Container image.")
    imagePullPolicy: str | None = Field(None, description="Image pull policy.")
    workingDir: str | None = Field(None, description="Working directory.")
    restartPolicy: str | None = Field(None, description="Restart policy.")
    command: list[str] | None = Field(None, description="Entrypoint.")
    args: list[str] | None = Field(None, description="Arguments to the entrypoint.")
    env: list[EnvVar] | None = Field(None, description="Environment variables.")
    envFrom: list[FreeForm] | None = Field(None, description="Environment sources (free-form).")
    resources: ContainerResources | None = Field(None, description="Compute resources.")
    volumeMounts: list[VolumeMount] | None = Field(None, description="Volume mounts.")
    securityContext: FreeForm | None = Field(None, description="Security context (free-form).")


class Volume(K8sShapedModel):
    """A volume; each source is a free-form object as in Kubernetes."""

    name: str = Field(description="Volume name.")
    configMap: FreeForm | None = Field(None, description="ConfigMap volume source.")
    secret: FreeForm | None = Field(None, description="Secret volume source.")
    emptyDir: FreeForm | None = Field(None, description="EmptyDir volume source.")
    persistentVolumeClaim: FreeForm | None = Field(None, description="PVC volume source.")
    nfs: FreeForm | None = Field(None, description="NFS volume source.")
    projected: FreeForm | None = Field(None, description="Projected volume source.")
    downwardAPI: FreeForm | None = Field(None, description="Downward API volume source.")
    csi: FreeForm | None = Field(None, description="CSI volume source.")


# --------------------------------------------------------------------- the bodies


class ImagePullSecret(ApiModel):
    """A reference to an image pull secret."""

    name: str = Field(description="Name of the image pull secret.")


class ResourceSpec(ApiModel):
    """Compute resources and pod shape of a deployment. `_mb` = megabytes, `_gi` = GiB."""

    # Application
    min_scale: NonNegativeInt | None = Field(None, description="Minimum app replicas.")
    max_scale: NonNegativeInt | None = Field(None, description="Maximum app replicas.")
    cpu: CpuRequest | None = Field(None, description="App CPU request (0.1..8).")
    cpu_limit: CpuLimit | None = Field(None, description="App CPU limit (0.1..16).")
    memory_mb: NonNegativeInt | None = Field(None, description="App memory request (MB).")
    memory_limit_mb: NonNegativeInt | None = Field(None, description="App memory limit (MB).")
    # Queue
    queue_min_scale: NonNegativeInt | None = Field(None, description="Min queue replicas.")
    queue_max_scale: NonNegativeInt | None = Field(None, description="Max queue replicas.")
    queue_cpu: CpuRequest | None = Field(None, description="Queue CPU request (0.1..8).")
    queue_cpu_limit: CpuLimit | None = Field(None, description="Queue CPU limit (0.1..16).")
    queue_memory_mb: NonNegativeInt | None = Field(None, description="Queue memory (MB).")
    queue_memory_limit_mb: NonNegativeInt | None = Field(
        None, description="Queue memory limit (MB)."
    )
    # Orchestrator
    orchestrator_cpu: NonNegativeNumber | None = Field(None, description="Orchestrator CPU.")
    orchestrator_cpu_limit: NonNegativeNumber | None = Field(
        None, description="Orchestrator CPU limit."
    )
    orchestrator_memory_mb: NonNegativeInt | None = Field(
        None, description="Orchestrator memory (MB)."
    )
    orchestrator_memory_limit_mb: NonNegativeInt | None = Field(
        None, description="Orchestrator memory limit (MB)."
    )
    orchestrator_min_scale: NonNegativeInt | None = Field(
        None, description="Min orchestrator replicas."
    )
    orchestrator_max_scale: NonNegativeInt | None = Field(
        None, description="Max orchestrator replicas."
    )
    # Cache
    redis_cpu: CpuRequest | None = Field(None, description="Redis CPU request (0.1..8).")
    redis_cpu_limit: CpuLimit | None = Field(None, description="Redis CPU limit (0.1..16).")
    redis_memory_mb: NonNegativeInt | None = Field(None, description="Redis memory (MB).")
    redis_memory_limit_mb: NonNegativeInt | None = Field(
        None, description="Redis memory limit (MB)."
    )
    # Database
    db_cpu: NonNegativeNumber | None = Field(None, description="Database CPU request.")
    db_cpu_limit: NonNegativeNumber | None = Field(None, description="Database CPU limit.")
    db_memory_mb: NonNegativeInt | None = Field(None, description="Database memory (MB).")
    db_memory_limit_mb: NonNegativeInt | None = Field(
        None, description="Database memory limit (MB)."
    )
    db_storage_gi: NonNegativeInt | None = Field(None, description="Database storage (GiB).")
    db_max_connections: NonNegativeInt | None = Field(None, description="Database max connections.")
    # Pod shape
    labels: FreeForm | None = Field(None, description="Labels (free-form).")
    annotations: FreeForm | None = Field(None, description="Annotations (free-form).")
    service_account_name: str | None = Field(None, description="Kubernetes service account.")
    image_pull_secrets: list[ImagePullSecret] | None = Field(
        None, description="Image pull secrets."
    )
    volumes: list[Volume] | None = Field(None, description="Volumes.")
    volume_mounts: list[VolumeMount] | None = Field(None, description="Volume mounts.")
    init_containers: list[Container] | None = Field(None, description="Init containers.")
    sidecars: list[Container] | None = Field(None, description="Sidecar containers.")


class ListenerConfig(ApiModel):
    """Where on the listener's compute a deployment runs."""

    k8s_namespace: str | None = Field(None, description="Kubernetes namespace to deploy into.")


class SourceConfig(ApiModel):
    """Source fields that need no new revision when changed (or cannot change)."""

    integration_id: UUID | None = Field(
        None, description="Git-host integration id (host_integration_id of the repo listing)."
    )
    repo_url: str | None = Field(None, description="Repository URL (url of the repo listing).")
    build_on_push: bool | None = Field(
        None, description="Build on every push; must be false when repoRef is a tag."
    )
    deployment_type: DeploymentType | None = Field(
        None,
        description=(
            "Kind of deployment (dev_free, dev, dev_zero, prod): git_host, internal_source "
            "and internal_docker; immutable."
        ),
    )
    custom_url: str | None = Field(
        None,
        description=(
            "URL of the deployment: settable for external_docker only; for git_host the "
            "service sets it (read-only)."
        ),
    )
    resource_spec: ResourceSpec | None = Field(None, description="Compute resources.")
    listener_id: UUID | None = Field(None, description="Id of the listener to run on.")
    listener_config: ListenerConfig | None = Field(None, description="Listener settings.")
    install_command: str | None = Field(None, description="Install command.")
    build_command: str | None = Field(None, description="Build command.")


class SecretName(ApiModel):
    """A secret as deployplane reads it from an answer: its name only.

    The published `Secret` shape of an answer also has a required `value`, which can
    never be the value (values are write-only); whatever an answer holds there is
    dropped on reading, so no client, operator or CLI code can take it for one."""

    name: str


class Secret(SecretName):
    """A secret supplied to a deployment (the published `Secret`). The value is
    write-only: an answer never holds it."""

    name: str = Field(description="Secret name.")
    value: str = Field(
        description=(
            "Secret value. Write-only: in an answer this is never the value (the "
            "emulator answers a fixed mask)."
        )
    )

    def __repr__(self) -> str:  # keep values out of logs and tracebacks
        return f"Secret(name={self.name!r}, value=<redacted>)"

    __str__ = __repr__


class SecretReference(ApiModel):
    """An environment variable filled from a Kubernetes Secret that already exists on the
    listener's cluster (external_docker only): the value never passes the service."""

    name: str = Field(min_length=1, description="Environment variable name.")
    secret_name: str = Field(min_length=1, description="Name of the Kubernetes Secret.")
    secret_key: str = Field(min_length=1, description="Key within that Secret.")


class DeploymentCreate(ApiModel):
    """Body of POST /v2/deployments: a deployment named by `name`, or keyed by an
    `agent` and named by the control plane (one of the two, never both)."""

    # What the vendor's CLI sends in place of `name` (its agent mode). Declared before
    # `name`, whose check reads it.
    agent: DeploymentAgent | None = Field(
        None,
        description=(
            "The agent and environment the deployment is for, in place of `name`: the "
            "control plane names it, and keeps one per agent and environment."
        ),
    )
    name: str | None = Field(
        None,
        min_length=1,
        max_length=NAME_MAX_LENGTH,
        validate_default=True,
        description="Deployment (and tracing project) name; required unless `agent` is given.",
    )
    source: Source = Field(description="Where the code comes from.")
    source_config: SourceConfig | None = None
    source_revision_config: SourceRevisionConfig | None = None
    secrets: list[Secret] | None = None
    secret_references: list[SecretReference] | None = None

    @field_validator("name")
    @classmethod
    def _name_or_agent(cls, name: str | None, info: ValidationInfo) -> str | None:
        """One of `name` and `agent`, reported at `name` (an agent that is itself
        invalid is reported at its own fields, and not again here)."""
        if "agent" not in info.data:
            return name
        agent = info.data["agent"]
        if name is None and agent is None:
            raise PydanticCustomError("missing", "name is required unless agent is given")
        if name is not None and agent is not None:
            raise PydanticCustomError(
                "name_with_agent",
                "name cannot be combined with agent: the control plane names the "
                "deployment of an agent itself",
            )
        return name


class DeploymentPatch(ApiModel):
    """Body of PATCH /v2/deployments/{id}; only the fields set are changed.

    `name`, `source` and `agent` are accepted so the service can refuse a change to them
    explicitly (they cannot change after creation) rather than silently ignoring it.
    """

    # Not in the published PATCH body (so not in the OpenAPI document): read only to
    # refuse a change by name.
    name: SkipJsonSchema[str | None] = Field(None, max_length=NAME_MAX_LENGTH)
    source: SkipJsonSchema[Source | None] = None
    agent: SkipJsonSchema[DeploymentAgent | None] = None
    source_config: SourceConfig | None = None
    source_revision_config: SourceRevisionConfig | None = None
    secrets: list[Secret] | None = None
    secret_references: list[SecretReference] | None = None
    # What the vendor's CLI sends (langgraph_cli/host_backend.py): where the new
    # revision's code comes from (internal_source: an uploaded tarball to build;
    # internal_docker: a pushed image) and the packages it tracks.
    revision_source: Source | None = Field(
        None, description="Source of the new revision (internal_source or internal_docker)."
    )
    tracked_packages: (
        list[Annotated[str, Field(min_length=1, max_length=NAME_MAX_LENGTH)]] | None
    ) = Field(None, max_length=1000, description="Packages whose versions the revision tracks.")


class Deployment(ApiModel):
    """A deployment as the service returns it."""

    id: UUID
    tenant_id: UUID = Field(description="The workspace the deployment belongs to (read-only).")
    name: str
    source: ReportedSource
    source_config: SourceConfig | None = None
    source_revision_config: SourceRevisionConfigStatus | None = None
    # Names only (`SecretName`): a Sequence so that the emulator's answer model
    # (emulator/store/answers.py) may hold the published `Secret` shape instead.
    secrets: Sequence[SecretName] | None = None
    secret_references: list[SecretReference] | None = None
    created_at: datetime
    updated_at: datetime
    status: ReportedDeploymentStatus
    latest_revision_id: UUID | None = None
    active_revision_id: UUID | None = None

    # Every Deployment answer carries these (the published contract): required in the
    # OpenAPI document, yet read with defaults here, so that one missing field never
    # fails a whole list page in the client.
    model_config = ConfigDict(
        json_schema_extra=lambda schema: require_fields(
            schema,
            "source_config",
            "source_revision_config",
            "secrets",
            "latest_revision_id",
            "active_revision_id",
        )
    )
    image_version: str | None = None
    agent: DeploymentAgent | None = Field(
        None, description="The agent and environment it was created for; null: by name."
    )
    # The vendor's CLI passes over a deployment marked as a preview when it looks one up
    # by agent (deploy.py `_find_deployment`); there are no previews here.
    is_preview: bool = Field(False, description="Whether it is a preview deployment.")


class BulkDeleteOutcome(ApiModel):
    """One id's outcome in a bulk delete: 204 deleted, 404 unknown (named in detail)."""

    deployment_id: UUID
    status: int
    detail: str | None = None


class BulkDeleteResult(ApiModel):
    """Body of DELETE /v2/deployments: 200 when every id went, 207 when some failed."""

    results: list[BulkDeleteOutcome]
