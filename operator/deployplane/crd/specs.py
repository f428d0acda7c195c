"""Specs of the `AgentDeployment` and `Listener` custom resources.

They reuse the API models field for field (one source of truth): a CR spec is the API
body in camelCase, plus what only makes sense in Kubernetes — references to Secrets,
Listeners and repositories that the operator resolves, a deletion policy, an id to
adopt, and a per-resource connection. The CRD schemas are generated from these classes
(`deployplane.crdgen.schema`), so `kubectl explain` shows the descriptions written here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final
from uuid import UUID

from pydantic import Field

from deployplane.api.models import (
    ApiModel,
    ComputeConfig,
    ComputeType,
    ManagedRevisionConfig,
    SecretReference,
    Source,
    SourceConfig,
)
from deployplane.kube import paths

GROUP: Final = paths.GROUP
VERSION: Final = paths.VERSION


class ManagedSource(StrEnum):
    """The sources an AgentDeployment may name: the API's `Source` without the vendor
    CLI's internal_* ones (an uploaded tarball, a pushed image), which a custom
    resource cannot carry."""

    GIT_HOST = Source.GIT_HOST.value
    EXTERNAL_DOCKER = Source.EXTERNAL_DOCKER.value


class DeletionPolicy(StrEnum):
    """What happens on the control plane when the custom resource is deleted."""

    DELETE = "Delete"
    ORPHAN = "Orphan"


class LocalObjectReference(ApiModel):
    """A reference to an object in the custom resource's own namespace."""

    name: str = Field(min_length=1, max_length=253, description="Name of the object.")


class RepositoryReference(ApiModel):
    """A repository of the git-host integration, resolved through its repository listing."""

    owner: str = Field(min_length=1, max_length=255, description="Repository owner.")
    name: str = Field(min_length=1, max_length=255, description="Repository name.")


class SecretKeySelector(ApiModel):
    """A key of a Secret in the custom resource's namespace."""

    name: str = Field(min_length=1, max_length=253, description="Name of the Secret.")
    key: str = Field(min_length=1, max_length=253, description="Key within the Secret.")


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


class ManagementPolicy(StrEnum):
    """How much of the external resource the operator manages (Crossplane's
    managementPolicies, in two words)."""

    FULL = "Full"
    OBSERVE_ONLY = "ObserveOnly"


class UpdatePolicy(StrEnum):
    """Whether a change goes to the control plane at once or waits for an approval
    (`deployplane.reconcile.approval`)."""

    AUTOMATIC = "Automatic"
    MANUAL = "Manual"


DEFAULT_CONNECTION: Final = "default"
"""The ControlPlaneConnection a resource without `connectionRef` uses in its namespace."""


class ConnectionKind(StrEnum):
    """What a `connectionRef` names."""

    CONTROL_PLANE_CONNECTION = "ControlPlaneConnection"
    SECRET = "Secret"


class ConnectionReference(ApiModel):
    """A ControlPlaneConnection (or, deprecated, a Secret) in the resource's namespace."""

    name: str = Field(min_length=1, max_length=253, description="Name of the object.")
    kind: ConnectionKind | None = Field(
        None,
        description=(
            "ControlPlaneConnection, or Secret (deprecated: keys `url`, `apiKey` and "
            "optional `tenantId`). Default: the ControlPlaneConnection of that name if there "
            "is one, else the Secret."
        ),
    )


class ConnectionSpec(ApiModel):
    """Settings shared by both kinds: management, deletion, adoption and connection."""

    management_policy: ManagementPolicy = Field(
        ManagementPolicy.FULL,
        description=(
            "Full: create, update and delete on the control plane to match this spec. "
            "ObserveOnly: find the existing resource (by id, else by its name or computeId) "
            "and report it in status; never create, change, redeploy or delete it, "
            "whatever the spec or a deletion says."
        ),
    )
    deletion_policy: DeletionPolicy = Field(
        DeletionPolicy.DELETE,
        description=(
            "Delete: delete the control-plane resource with the custom resource. "
            "Orphan: leave it on the control plane."
        ),
    )
    connection_ref: ConnectionReference | None = Field(
        None,
        description=(
            "The ControlPlaneConnection in this namespace to use. Default: the "
            "ControlPlaneConnection named `default` in this namespace, else the operator's "
            "own connection."
        ),
    )


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


class NamespacesFrom(StrEnum):
    """Which namespaces' AgentDeployments may use a Listener (Gateway API's `from`)."""

    SAME = "Same"
    ALL = "All"
    SELECTOR = "Selector"


class SelectorOperator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


class LabelSelectorRequirement(ApiModel):
    """A metav1.LabelSelectorRequirement."""

    key: str = Field(min_length=1, max_length=317, description="The label key.")
    operator: SelectorOperator = Field(description="In, NotIn, Exists or DoesNotExist.")
    values: list[str] | None = Field(
        None, description="Non-empty for In and NotIn, empty for Exists and DoesNotExist."
    )


class LabelSelector(ApiModel):
    """A metav1.LabelSelector: every matchLabels pair and every expression must match."""

    match_labels: dict[str, str] | None = Field(None, description="Labels that must be equal.")
    match_expressions: list[LabelSelectorRequirement] | None = Field(
        None, description="Requirements on labels."
    )


class AllowedNamespaces(ApiModel):
    """Which namespaces may refer to this Listener (Gateway API's allowedRoutes.namespaces)."""

    from_: NamespacesFrom = Field(
        NamespacesFrom.SAME,
        alias="from",
        description=(
            "Same: only this namespace (the default); All: every namespace; Selector: "
            "namespaces whose labels match selector."
        ),
    )
    selector: LabelSelector | None = Field(
        None, description="Namespaces whose labels match it (only with from: Selector)."
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

    # A DNS-1123 subdomain: checked by a CEL rule (kinds/agentdeployment.py) whose
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
            "Deployment and tracing-project name; default metadata.name. Fixed once the "
            "deployment exists (status.deploymentId)."
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

    def deployment_name(self, metadata_name: str) -> str:
        return self.name or metadata_name


class ListenerSpec(ConnectionSpec):
    """Desired state of a listener (compute infrastructure) on the control plane."""

    compute_type: ComputeType = Field(
        description="Kind of compute. Fixed once the listener exists (status.listenerId)."
    )
    compute_id: str = Field(
        min_length=1,
        max_length=253,
        description=(
            "Unique id of the compute, e.g. the cluster name. Fixed once the listener "
            "exists (status.listenerId)."
        ),
    )
    compute_config: ComputeConfig | None = Field(None, description="Compute settings.")
    version: str | None = Field(None, max_length=253, description="Listener version.")
    listener_id: UUID | None = Field(
        None, description="Adopt this existing listener instead of creating one."
    )
    allowed_namespaces: AllowedNamespaces | None = Field(
        None,
        description=(
            "Which namespaces' AgentDeployments may name this Listener in their "
            "listenerRef; default: this namespace only."
        ),
    )


class ControlPlaneConnectionSpec(ApiModel):
    """A control plane and the credentials to use it, shared by the resources that name it."""

    # An http(s) URL: checked by a CEL rule (kinds/controlplaneconnection.py) whose
    # message says so.
    url: str = Field(
        min_length=1, max_length=2048, description="Base URL of the control plane's API."
    )
    api_key_secret_ref: SecretKeySelector | None = Field(
        None,
        description=(
            "The API key (sent as X-Api-Key): a key of a Secret in this namespace. Absent: "
            "no key is sent."
        ),
    )
    tenant_id: str | None = Field(
        None,
        min_length=1,
        max_length=253,
        description="Workspace (tenant) id, sent as X-Tenant-Id; none: the key's own.",
    )

    @property
    def management_policy(self) -> ManagementPolicy:
        """Always ObserveOnly, not a field: a connection owns nothing on the control
        plane, so the reconciler only ever observes through it (and deletes nothing)."""
        return ManagementPolicy.OBSERVE_ONLY
