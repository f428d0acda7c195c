"""The AgentDeployment's spec: the API's deployment body field for field (one source of
truth), in camelCase, plus what only makes sense in Kubernetes: references to
Secrets, Listeners and repositories that the operator resolves, an id to adopt,
outputs, an update policy. The CRD's schema is generated from it
(`deployplane.crdgen.schema`), so `kubectl explain` shows the descriptions here.
"""

from __future__ import annotations

from enum import StrEnum
from uuid import UUID

from pydantic import Field

from deployplane.api.models import (
    ApiModel,
    DeploymentAgent,
    ManagedRevisionConfig,
    SecretReference,
    Source,
    SourceConfig,
)
from deployplane.kinds.agentdeployment.keys import agent_key
from deployplane.kinds.common import ConnectionSpec, LocalObjectReference, SecretKeySelector


class ManagedSource(StrEnum):
    """The sources an AgentDeployment may name: the API's `Source` without the vendor
    CLI's internal_* ones (an uploaded tarball, a pushed image), which a custom
    resource cannot carry."""

    GIT_HOST = Source.GIT_HOST.value
    EXTERNAL_DOCKER = Source.EXTERNAL_DOCKER.value


class RepositoryReference(ApiModel):
    """A repository of the git-host integration, resolved through its repository listing."""

    owner: str = Field(min_length=1, max_length=255, description="Repository owner.")
    name: str = Field(min_length=1, max_length=255, description="Repository name.")


class SecretValueSource(ApiModel):
    """Where a secret's value comes from."""

    secret_key_ref: SecretKeySelector = Field(description="A key of a Secret.")


class DeploymentSecret(ApiModel):
    """A secret of the deployment; its value is read from a Secret, never written here."""

    name: str = Field(min_length=1, max_length=253, description="Secret name on the deployment.")
    value_from: SecretValueSource = Field(description="Where the value is read from.")


class SecretsFromSource(ApiModel):
    """All keys of a Secret become deployment secrets of the same names."""

    secret_ref: LocalObjectReference = Field(description="The Secret whose keys to use.")


class UpdatePolicy(StrEnum):
    """Whether a change goes to the control plane at once or waits for an approval
    (`deployplane.reconcile.approval`)."""

    AUTOMATIC = "Automatic"
    MANUAL = "Manual"


class ListenerReference(ApiModel):
    """A Listener custom resource, in this namespace or (when it allows it) another."""

    name: str = Field(min_length=1, max_length=253, description="Name of the Listener.")
    namespace: str | None = Field(
        None,
        min_length=1,
        max_length=63,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        description=(
            "Namespace of the Listener; default: this resource's. Another namespace's "
            "Listener must allow this one in its spec.allowedNamespaces."
        ),
    )


class AgentDeploymentSourceConfig(SourceConfig):
    """SourceConfig, plus references the operator resolves to ids and URLs."""

    listener_ref: ListenerReference | None = Field(
        None,
        description=(
            "A Listener (default: in this namespace); its status.listenerId becomes listenerId."
        ),
    )
    repository: RepositoryReference | None = Field(
        None,
        description=(
            "A repository of integrationId, resolved to repoUrl (and repoRef defaults to its "
            "default branch)."
        ),
    )


class OutputsTarget(ApiModel):
    """Where an AgentDeployment writes its outputs for workloads."""

    # A DNS-1123 subdomain: checked by a CEL rule (kinds/agentdeployment/kind.py) whose
    # message says so, rather than a `pattern` that would only print the regex.
    config_map_name: str = Field(
        min_length=1,
        max_length=253,
        description=(
            "A ConfigMap in this namespace that the operator creates and owns, with the keys "
            "deploymentId, url, latestRevisionId, activeRevisionId and revisionStatus."
        ),
    )


class AgentDeploymentSpec(ConnectionSpec):
    """Desired state of a deployment on the control plane."""

    name: str | None = Field(
        None,
        min_length=1,
        max_length=253,
        description=(
            "Deployment and tracing-project name; default metadata.name (not with agent). "
            "Fixed once the deployment exists (status.deploymentId)."
        ),
    )
    agent: DeploymentAgent | None = Field(
        None,
        description=(
            "The agent and environment it is for, instead of a name: the control plane "
            "names it, one per agent and environment (a second AgentDeployment of the pair "
            "stalls with the 409). Not with name. Fixed once the deployment exists."
        ),
    )
    source: ManagedSource = Field(
        description=(
            "git_host (Cloud SaaS) or external_docker (self-hosted). Fixed once the "
            "deployment exists (status.deploymentId)."
        )
    )
    source_config: AgentDeploymentSourceConfig | None = Field(
        None, description="Fields that need no new revision when changed."
    )
    source_revision_config: ManagedRevisionConfig | None = Field(
        None, description="Fields whose change rolls a new revision."
    )
    secrets: list[DeploymentSecret] | None = Field(
        None, description="Secrets read from Secrets in this namespace."
    )
    secrets_from: list[SecretsFromSource] | None = Field(
        None, description="Secrets whose every key becomes a deployment secret."
    )
    secret_references: list[SecretReference] | None = Field(
        None,
        max_length=100,
        description=(
            "external_docker only: environment variables filled from Kubernetes Secrets that "
            "already exist on the listener's cluster; the values never leave that cluster."
        ),
    )
    write_outputs_to: OutputsTarget | None = Field(
        None,
        description=(
            "Write the deployment's id, URL, revision ids and revision status into a "
            "ConfigMap of this namespace, for workloads to read (garbage-collected with "
            "this resource)."
        ),
    )
    deployment_id: UUID | None = Field(
        None, description="Adopt this existing deployment instead of creating one."
    )
    update_policy: UpdatePolicy = Field(
        UpdatePolicy.AUTOMATIC,
        description=(
            "Automatic: send each change to the control plane as soon as it is seen. "
            "Manual: compute it (status.pendingChange) and send nothing until the "
            "annotation deployplane.io/approved-generation names this generation "
            "(`deployplane approve`); creating waits too, deleting does not."
        ),
    )
    delete_tracing_project: bool = Field(
        False,
        description=(
            "On deletion (deletionPolicy Delete), also delete the tracing project made with "
            "the deployment; by default it stays (and keeps its name taken)."
        ),
    )

    def deployment_name(self, metadata_name: str) -> str | None:
        """The name it is created under; None for an agent's (the control plane's)."""
        if self.agent is not None:
            return None
        return self.name or metadata_name

    def natural_key(self, metadata_name: str) -> str:
        """The create marker's key: the name, or the agent and environment (`agent_key`)."""
        if self.agent is not None:
            return agent_key(self.agent)
        return self.name or metadata_name
