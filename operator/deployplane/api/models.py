"""The control-plane API's resources, as pydantic models: the one source of truth.

The typed client, the emulator (and its OpenAPI), and the operator's custom resources
all use these classes, so the three can never disagree about a field.

Why `AliasChoices(snake, camel)` rather than a plain camel alias generator: the API
speaks snake_case and FastAPI renders a model's *validation alias* into the OpenAPI
document, choosing the first of the choices. Putting the snake name first keeps the
API's wire format and OpenAPI exactly as the spec writes them, while the camel name
second lets the very same model read a Kubernetes custom resource's camelCase spec.
Models dump snake_case (no serialization alias); the CRD generator camelizes names.

Fields that the spec already spells in camelCase (Kubernetes shapes inside
`resource_spec`: VolumeMount, Container, volumes) keep those names on both sides.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Generic, TypeVar
from uuid import UUID

from pydantic import (
    AliasChoices,
    AliasGenerator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
)
from pydantic.json_schema import SkipJsonSchema

__all__ = [
    "TERMINAL_REVISION_STATUSES",
    "ApiModel",
    "BulkDeleteOutcome",
    "BulkDeleteResult",
    "ComputeConfig",
    "ComputeType",
    "Container",
    "ContainerResources",
    "Deployment",
    "DeploymentCreate",
    "DeploymentPatch",
    "DeploymentStatus",
    "DeploymentType",
    "EnvVar",
    "ErrorBody",
    "GitRepository",
    "HTTPValidationError",
    "ImagePullSecret",
    "Listener",
    "ListenerConfig",
    "ListenerCreate",
    "ListenerPatch",
    "ListenerPut",
    "NotFoundBody",
    "OAuthProvider",
    "Page",
    "ResourceSpec",
    "Revision",
    "RevisionStatus",
    "Secret",
    "SecretName",
    "SecretReference",
    "Source",
    "SourceConfig",
    "SourceRevisionConfig",
    "SourceRevisionConfigStatus",
    "ValidationErrorEntry",
    "Volume",
    "VolumeMount",
    "camelize",
]

_UNDERSCORE_LETTER = re.compile(r"_([a-z0-9])")


def camelize(name: str) -> str:
    """`repo_url` -> `repoUrl`; names without underscores (`mountPath`) are unchanged."""
    return _UNDERSCORE_LETTER.sub(lambda m: m.group(1).upper(), name)


def _snake_then_camel(name: str) -> AliasChoices:
    return AliasChoices(name, camelize(name))


class ApiModel(BaseModel):
    """Shared config of every API model.

    Unknown fields are ignored: responses stay readable when the service adds fields
    (forward compatible), and requests may carry fields the spec does not show, as
    real clients do.
    """

    model_config = ConfigDict(
        alias_generator=AliasGenerator(validation_alias=_snake_then_camel),
        extra="ignore",
        use_enum_values=False,
    )


def _require(schema: dict[str, Any], *names: str) -> None:
    """Marks fields required in a model's JSON schema (see `Deployment`)."""
    required = schema.setdefault("required", [])
    required.extend(name for name in names if name not in required)


FreeForm = dict[str, Any]
"""An object whose inner structure the spec leaves open; passed through untouched."""

NonNegativeNumber = Annotated[int | float, Field(ge=0)]


# --------------------------------------------------------------------------- enums


class Source(StrEnum):
    """Where a deployment's code comes from."""

    GIT_HOST = "git_host"
    EXTERNAL_DOCKER = "external_docker"


class RevisionStatus(StrEnum):
    """Every revision state named by the spec."""

    CREATING = "CREATING"
    QUEUED = "QUEUED"
    AWAITING_BUILD = "AWAITING_BUILD"
    BUILDING = "BUILDING"
    AWAITING_DEPLOY = "AWAITING_DEPLOY"
    DEPLOYING = "DEPLOYING"
    CREATE_FAILED = "CREATE_FAILED"
    BUILD_FAILED = "BUILD_FAILED"
    DEPLOY_FAILED = "DEPLOY_FAILED"
    DEPLOYED = "DEPLOYED"
    SKIPPED = "SKIPPED"
    INTERRUPTED = "INTERRUPTED"
    UNKNOWN = "UNKNOWN"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_REVISION_STATUSES

    @property
    def is_failure(self) -> bool:
        return self in _FAILED_REVISION_STATUSES


TERMINAL_REVISION_STATUSES: frozenset[RevisionStatus] = frozenset(
    {
        RevisionStatus.DEPLOYED,
        RevisionStatus.CREATE_FAILED,
        RevisionStatus.BUILD_FAILED,
        RevisionStatus.DEPLOY_FAILED,
        RevisionStatus.SKIPPED,
        RevisionStatus.INTERRUPTED,
    }
)
_FAILED_REVISION_STATUSES: frozenset[RevisionStatus] = frozenset(
    {RevisionStatus.CREATE_FAILED, RevisionStatus.BUILD_FAILED, RevisionStatus.DEPLOY_FAILED}
)


class DeploymentStatus(StrEnum):
    """Every deployment state named by the spec."""

    AWAITING_DATABASE = "AWAITING_DATABASE"
    READY = "READY"
    UNUSED = "UNUSED"
    AWAITING_DELETE = "AWAITING_DELETE"
    UNKNOWN = "UNKNOWN"


class DeploymentType(StrEnum):
    """The published `source_config.deployment_type` of a git_host deployment."""

    DEV_FREE = "dev_free"
    DEV = "dev"
    PROD = "prod"


# Every source value the published contract names: the service may answer any of them,
# though deployplane creates only the two of `Source`.
PUBLISHED_SOURCES = ("git_host", "external_docker", "internal_docker", "internal_source")


def _or_unknown(enum: type[StrEnum]) -> Any:
    """A before-validator: a status this client does not know reads as UNKNOWN, so a new
    status in one resource never fails a whole list page."""

    def convert(value: Any) -> Any:
        if isinstance(value, str) and value not in enum.__members__.values():
            return enum("UNKNOWN")
        return value

    return BeforeValidator(convert)


ReportedRevisionStatus = Annotated[RevisionStatus, _or_unknown(RevisionStatus)]
ReportedDeploymentStatus = Annotated[DeploymentStatus, _or_unknown(DeploymentStatus)]
ReportedSource = Annotated[
    Source | str,
    Field(union_mode="left_to_right"),
    WithJsonSchema({"type": "string", "enum": list(PUBLISHED_SOURCES)}),
]
"""A source as the service reports it: a `Source` when known, else the raw string
(kept, not refused: another source in one resource must not fail a list page)."""


class ComputeType(StrEnum):
    """Kinds of compute infrastructure a listener can represent."""

    K8S = "k8s"


# ----------------------------------------------------- Kubernetes-shaped (camelCase)


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


# ------------------------------------------------------------------- source config


class ImagePullSecret(ApiModel):
    """A reference to an image pull secret."""

    name: str = Field(description="Name of the image pull secret.")


class ResourceSpec(ApiModel):
    """Compute resources and pod shape of a deployment. `_mb` = megabytes, `_gi` = GiB."""

    # Application
    min_scale: NonNegativeNumber | None = Field(None, description="Minimum app replicas.")
    max_scale: NonNegativeNumber | None = Field(None, description="Maximum app replicas.")
    cpu: NonNegativeNumber | None = Field(None, description="App CPU request.")
    cpu_limit: NonNegativeNumber | None = Field(None, description="App CPU limit.")
    memory_mb: NonNegativeNumber | None = Field(None, description="App memory request (MB).")
    memory_limit_mb: NonNegativeNumber | None = Field(None, description="App memory limit (MB).")
    # Queue
    queue_min_scale: NonNegativeNumber | None = Field(None, description="Min queue replicas.")
    queue_max_scale: NonNegativeNumber | None = Field(None, description="Max queue replicas.")
    queue_cpu: NonNegativeNumber | None = Field(None, description="Queue CPU request.")
    queue_cpu_limit: NonNegativeNumber | None = Field(None, description="Queue CPU limit.")
    queue_memory_mb: NonNegativeNumber | None = Field(None, description="Queue memory (MB).")
    queue_memory_limit_mb: NonNegativeNumber | None = Field(
        None, description="Queue memory limit (MB)."
    )
    # Orchestrator
    orchestrator_cpu: NonNegativeNumber | None = Field(None, description="Orchestrator CPU.")
    orchestrator_cpu_limit: NonNegativeNumber | None = Field(
        None, description="Orchestrator CPU limit."
    )
    orchestrator_memory_mb: NonNegativeNumber | None = Field(
        None, description="Orchestrator memory (MB)."
    )
    orchestrator_memory_limit_mb: NonNegativeNumber | None = Field(
        None, description="Orchestrator memory limit (MB)."
    )
    orchestrator_min_scale: NonNegativeNumber | None = Field(
        None, description="Min orchestrator replicas."
    )
    orchestrator_max_scale: NonNegativeNumber | None = Field(
        None, description="Max orchestrator replicas."
    )
    # Cache
    redis_memory_mb: NonNegativeNumber | None = Field(None, description="Redis memory (MB).")
    # Database
    db_cpu: NonNegativeNumber | None = Field(None, description="Database CPU request.")
    db_cpu_limit: NonNegativeNumber | None = Field(None, description="Database CPU limit.")
    db_memory_mb: NonNegativeNumber | None = Field(None, description="Database memory (MB).")
    db_memory_limit_mb: NonNegativeNumber | None = Field(
        None, description="Database memory limit (MB)."
    )
    db_storage_gi: NonNegativeNumber | None = Field(None, description="Database storage (GiB).")
    db_max_connections: NonNegativeNumber | None = Field(
        None, description="Database max connections."
    )
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
        None, description="Kind of git_host deployment (dev_free, dev, prod); immutable."
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


class SourceRevisionConfig(ApiModel):
    """Source fields whose change creates a new revision."""

    repo_ref: str | None = Field(
        None,
        description="Git ref: a branch by bare name, a tag as refs/tags/<tag>. git_host only.",
    )
    graph_config_path: str | None = Field(
        None, description="Path of the graph configuration file. git_host only."
    )
    image_uri: str | None = Field(None, description="Container image URI. external_docker only.")


class SourceRevisionConfigStatus(SourceRevisionConfig):
    """SourceRevisionConfig as the service reports it, with the built commit."""

    repo_commit_sha: str | None = Field(None, description="Commit built (read-only).")


class Secret(ApiModel):
    """A secret supplied to a deployment. The value is write-only."""

    name: str = Field(description="Secret name.")
    value: str = Field(description="Secret value (never returned by the service).")

    def __repr__(self) -> str:  # keep values out of logs and tracebacks
        return f"Secret(name={self.name!r}, value=<redacted>)"

    __str__ = __repr__


class SecretName(ApiModel):
    """A secret as the service reports it: its name only."""

    name: str


class SecretReference(ApiModel):
    """An environment variable filled from a Kubernetes Secret that already exists on the
    listener's cluster (external_docker only): the value never passes the service."""

    name: str = Field(min_length=1, description="Environment variable name.")
    secret_name: str = Field(min_length=1, description="Name of the Kubernetes Secret.")
    secret_key: str = Field(min_length=1, description="Key within that Secret.")


# -------------------------------------------------------------------- deployments


class DeploymentCreate(ApiModel):
    """Body of POST /v2/deployments."""

    name: str = Field(min_length=1, description="Deployment (and tracing project) name.")
    source: Source = Field(description="Where the code comes from.")
    source_config: SourceConfig | None = None
    source_revision_config: SourceRevisionConfig | None = None
    secrets: list[Secret] | None = None
    secret_references: list[SecretReference] | None = None


class DeploymentPatch(ApiModel):
    """Body of PATCH /v2/deployments/{id}; only the fields set are changed.

    `name` and `source` are accepted so the service can refuse a change to them
    explicitly (they cannot change after creation) rather than silently ignoring it.
    """

    # Not in the published PATCH body (so not in the OpenAPI document): read only to
    # refuse a change by name.
    name: SkipJsonSchema[str | None] = None
    source: SkipJsonSchema[Source | None] = None
    source_config: SourceConfig | None = None
    source_revision_config: SourceRevisionConfig | None = None
    secrets: list[Secret] | None = None
    secret_references: list[SecretReference] | None = None


class Deployment(ApiModel):
    """A deployment as the service returns it."""

    id: UUID
    tenant_id: UUID = Field(description="The workspace the deployment belongs to (read-only).")
    name: str
    source: ReportedSource
    source_config: SourceConfig | None = None
    source_revision_config: SourceRevisionConfigStatus | None = None
    secrets: list[SecretName] | None = None
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
        json_schema_extra=lambda schema: _require(
            schema,
            "source_config",
            "source_revision_config",
            "secrets",
            "latest_revision_id",
            "active_revision_id",
        )
    )
    image_version: str | None = None


class Revision(ApiModel):
    """A revision of a deployment."""

    id: UUID
    created_at: datetime
    updated_at: datetime
    status: ReportedRevisionStatus
    source: ReportedSource
    source_revision_config: SourceRevisionConfigStatus


# ---------------------------------------------------------------------- listeners


class ComputeConfig(ApiModel):
    """Compute-type specific settings; for `k8s`, the namespaces it serves.

    Fields beyond `k8s_namespaces` are not described by the spec and are kept as given.
    """

    model_config = ConfigDict(extra="allow")

    k8s_namespaces: list[str] | None = Field(None, description="Namespaces the listener serves.")


class ListenerCreate(ApiModel):
    """Body of POST /v2/listeners."""

    compute_type: ComputeType = Field(description="Kind of compute; immutable.")
    compute_id: str = Field(min_length=1, description="Unique id of the compute; immutable.")
    compute_config: ComputeConfig | None = None
    version: str | None = None


class ListenerPatch(ApiModel):
    """Body of PATCH /v2/listeners/{id}: only `version` and `compute_config` may change."""

    version: str | None = None
    compute_config: ComputeConfig | None = None


class ListenerPut(ListenerCreate):
    """Body of PUT /v2/listeners/{id}: the whole listener; immutables must match."""


class Listener(ApiModel):
    """A listener as the service returns it."""

    id: UUID
    compute_type: ComputeType
    compute_id: str
    compute_config: ComputeConfig | None = None

    model_config = ConfigDict(json_schema_extra=lambda schema: _require(schema, "compute_config"))
    version: str | None = None
    created_at: datetime
    updated_at: datetime


# -------------------------------------------------------------- read-only lookups


class GitRepository(ApiModel):
    """An entry of GET /v1/integrations/git_host/{integration_id}/repos."""

    host_integration_id: UUID
    id: int
    name: str
    owner: str
    url: str
    default_branch: str


class OAuthProvider(ApiModel):
    """GET /v2/auth/providers/{provider_id}."""

    id: str
    organization_id: str
    provider_id: str
    name: str
    client_id: str
    auth_url: str
    token_url: str
    uses_pkce: bool
    code_challenge_method: str | None
    created_at: datetime
    updated_at: datetime
    provider_type: str | None = None


# ------------------------------------------------------------------------ errors


class ValidationErrorEntry(ApiModel):
    """One entry of a 422 body."""

    loc: list[str | int]
    msg: str
    type: str


class HTTPValidationError(ApiModel):
    """A 422 body."""

    detail: list[ValidationErrorEntry]


class NotFoundBody(ApiModel):
    """A 404 body, e.g. `{"detail": "Deployment ID <id> not found."}`."""

    detail: str


class ErrorBody(ApiModel):
    """A 400 (or 403, 409) body: `{"detail": "<one sentence>"}`."""

    detail: str


class BulkDeleteOutcome(ApiModel):
    """One id's outcome in a bulk delete: 204 deleted, 404 unknown (named in detail)."""

    deployment_id: UUID
    status: int
    detail: str | None = None


class BulkDeleteResult(ApiModel):
    """Body of DELETE /v2/deployments: 200 when every id went, 207 when some failed."""

    results: list[BulkDeleteOutcome]


# -------------------------------------------------------------------- pagination

ItemT = TypeVar("ItemT", bound=BaseModel)


class Page(ApiModel, Generic[ItemT]):
    """A list body: `{"resources": [...], "offset": N}`.

    `offset` is always an integer (required in the OpenAPI document): where the next
    page starts (the request's offset plus the number of resources returned). A page
    shorter than the limit is the last. Read leniently (a missing one is None, and the
    client then counts the resources itself) so that one odd body never fails a list.
    """

    resources: list[ItemT]
    offset: int | None = None

    model_config = ConfigDict(json_schema_extra=lambda schema: _require(schema, "offset"))
