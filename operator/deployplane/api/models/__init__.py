"""The control-plane API's resources, as pydantic models: the one source of truth.

The typed client, the emulator (and its OpenAPI), and the operator's custom resources
all use these classes, so the three can never disagree about a field. One module per
resource (`deployments`, with the Kubernetes-shaped parts of its `resource_spec`;
`revisions`, `listeners`, `lookups`) and what they all share (`common`); import them
from here.

How one model reads both the API's snake_case and a custom resource's camelCase:
`deployplane.api.models.common`.

Each resource's module is imported when one of its names is first used (a module
`__getattr__`), so a command that reads deployments builds the deployment models and
not the listeners', builds' or lookups' (pydantic builds a model's validator when its
class is made). `from deployplane.api.models import X` and `models.X` work as for any
module; type checkers read the imports below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deployplane.api.enums import (
        TERMINAL_REVISION_STATUSES,
        AgentEnvironment,
        DeploymentStatus,
        DeploymentType,
        RevisionStatus,
    )
    from deployplane.api.models.agents import AGENT_ID_MAX_LENGTH, DeploymentAgent
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

# Where each name lives; every name of `__all__` (a unit test checks both agree with the
# imports above).
_MODULES: dict[str, tuple[str, ...]] = {
    "deployplane.api.enums": (
        "TERMINAL_REVISION_STATUSES",
        "AgentEnvironment",
        "DeploymentStatus",
        "DeploymentType",
        "RevisionStatus",
    ),
    "deployplane.api.models.agents": ("AGENT_ID_MAX_LENGTH", "DeploymentAgent"),
    "deployplane.api.models.builds": (
        "LOG_LIMIT_MAX",
        "LogEntry",
        "LogLevel",
        "LogOrder",
        "LogsPage",
        "LogsQuery",
        "PushToken",
        "PushTokenRequest",
        "UploadUrl",
        "UploadUrlRequest",
    ),
    "deployplane.api.models.common": (
        "MANAGED_SOURCES",
        "NAME_MAX_LENGTH",
        "ApiModel",
        "ErrorBody",
        "HTTPValidationError",
        "NotFoundBody",
        "Page",
        "Source",
        "ValidationErrorEntry",
    ),
    "deployplane.api.models.deployments": (
        "BulkDeleteOutcome",
        "BulkDeleteResult",
        "Container",
        "ContainerResources",
        "Deployment",
        "DeploymentCreate",
        "DeploymentPatch",
        "EnvVar",
        "ImagePullSecret",
        "ListenerConfig",
        "ResourceSpec",
        "Secret",
        "SecretName",
        "SecretReference",
        "SourceConfig",
        "Volume",
        "VolumeMount",
    ),
    "deployplane.api.models.listeners": (
        "ComputeConfig",
        "ComputeType",
        "Listener",
        "ListenerCreate",
        "ListenerPatch",
        "ListenerPut",
    ),
    "deployplane.api.models.lookups": ("GitRepository", "OAuthProvider"),
    "deployplane.api.models.revisions": (
        "ManagedRevisionConfig",
        "Revision",
        "SourceRevisionConfig",
        "SourceRevisionConfigStatus",
    ),
    "deployplane.naming": ("camelize",),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "AGENT_ID_MAX_LENGTH",
    "LOG_LIMIT_MAX",
    "MANAGED_SOURCES",
    "NAME_MAX_LENGTH",
    "TERMINAL_REVISION_STATUSES",
    "AgentEnvironment",
    "ApiModel",
    "BulkDeleteOutcome",
    "BulkDeleteResult",
    "ComputeConfig",
    "ComputeType",
    "Container",
    "ContainerResources",
    "Deployment",
    "DeploymentAgent",
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

if not TYPE_CHECKING:  # for type checkers, the imports above are the names

    def __getattr__(name: str) -> Any:
        home = _HOME.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value  # once: later lookups find it as a module global
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
