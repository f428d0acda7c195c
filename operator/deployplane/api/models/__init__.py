"""The control-plane API's resources, as pydantic models: the one source of truth.

The typed client, the emulator (and its OpenAPI), and the operator's custom resources
all use these classes, so the three can never disagree about a field. One module per
resource (`deployments`, with the Kubernetes-shaped parts of its `resource_spec`;
`revisions`, `listeners`, `lookups`) and what they all share (`common`); import them
from here.

How one model reads both the API's snake_case and a custom resource's camelCase:
`deployplane.api.models.common`.
"""

from __future__ import annotations

from deployplane.api.enums import (
    TERMINAL_REVISION_STATUSES,
    DeploymentStatus,
    DeploymentType,
    RevisionStatus,
)
from deployplane.api.models.builds import (
    LOG_LIMIT_MAX,
    LogEntry,
    LogLevel,
    LogOrder,
    LogsPage,
    LogsQuery,
    PushToken,
    PushTokenRequest,
    UploadUrl,
    UploadUrlRequest,
)
from deployplane.api.models.common import (
    MANAGED_SOURCES,
    NAME_MAX_LENGTH,
    ApiModel,
    ErrorBody,
    HTTPValidationError,
    NotFoundBody,
    Page,
    Source,
    ValidationErrorEntry,
)
from deployplane.api.models.deployments import (
    BulkDeleteOutcome,
    BulkDeleteResult,
    Container,
    ContainerResources,
    Deployment,
    DeploymentCreate,
    DeploymentPatch,
    EnvVar,
    ImagePullSecret,
    ListenerConfig,
    ResourceSpec,
    Secret,
    SecretName,
    SecretReference,
    SourceConfig,
    Volume,
    VolumeMount,
)
from deployplane.api.models.listeners import (
    ComputeConfig,
    ComputeType,
    Listener,
    ListenerCreate,
    ListenerPatch,
    ListenerPut,
)
from deployplane.api.models.lookups import (
    GitRepository,
    OAuthProvider,
)
from deployplane.api.models.revisions import (
    ManagedRevisionConfig,
    Revision,
    SourceRevisionConfig,
    SourceRevisionConfigStatus,
)
from deployplane.naming import camelize

__all__ = [
    "LOG_LIMIT_MAX",
    "MANAGED_SOURCES",
    "NAME_MAX_LENGTH",
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
    "LogEntry",
    "LogLevel",
    "LogOrder",
    "LogsPage",
    "LogsQuery",
    "ManagedRevisionConfig",
    "NotFoundBody",
    "OAuthProvider",
    "Page",
    "PushToken",
    "PushTokenRequest",
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
    "UploadUrl",
    "UploadUrlRequest",
    "ValidationErrorEntry",
    "Volume",
    "VolumeMount",
    "camelize",
]
