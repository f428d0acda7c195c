"""The API's enumerations of states and types: plain `StrEnum`s, importable without
pydantic (`deployplane.api.models` uses them in its models, and the CLI's options list
their values in `--help` without loading the models)."""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "TERMINAL_REVISION_STATUSES",
    "AgentEnvironment",
    "DeploymentStatus",
    "DeploymentType",
    "RevisionStatus",
]


class AgentEnvironment(StrEnum):
    """The environments of an agent (`agent.environment`): the values the vendor's CLI
    offers for `--agent-environment` (langgraph-cli 0.4.40). A deployment keyed by an
    agent is one per (workspace, agent, environment)."""

    DEVELOPMENT = "development"
    STAGING = "staging"
    PRODUCTION = "production"


class DeploymentStatus(StrEnum):
    """Every deployment state named by the spec."""

    AWAITING_DATABASE = "AWAITING_DATABASE"
    READY = "READY"
    UNUSED = "UNUSED"
    AWAITING_DELETE = "AWAITING_DELETE"
    UNKNOWN = "UNKNOWN"


class DeploymentType(StrEnum):
    """`source_config.deployment_type`: the published three, and `dev_zero`, which the
    vendor's CLI sends for its `--deployment-type serverless` (scale to zero); its
    `dedicated` is sent as `prod`."""

    DEV_FREE = "dev_free"
    DEV = "dev"
    DEV_ZERO = "dev_zero"
    PROD = "prod"


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
