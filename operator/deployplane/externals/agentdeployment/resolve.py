"""An AgentDeployment's spec with every reference resolved: Secrets read, the Listener's
id looked up, the repository found through its integration (crossplane-runtime resolves
references before Observe, and so does the reconciler, once per pass)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from deployplane.api import errors
from deployplane.api.client import ControlPlaneClient
from deployplane.api.models import (
    Deployment,
    DeploymentAgent,
    DeploymentCreate,
    GitRepository,
    Secret,
    SecretReference,
    Source,
)
from deployplane.externals.diffing import dump, prune
from deployplane.externals.kube import KubeReader
from deployplane.externals.listeneraccess import ListenerNotAllowed, refusal
from deployplane.kinds.agentdeployment.spec import (
    AgentDeploymentSpec,
    ListenerReference,
    ManagedSource,
    RepositoryReference,
)
from deployplane.kinds.agentdeployment.status import AgentDeploymentStatus
from deployplane.kinds.listener.spec import AllowedNamespaces
from deployplane.kinds.listener.status import ListenerStatus
from deployplane.reconcile.external import DependencyNotReady, Managed

Mr = Managed[AgentDeploymentSpec, AgentDeploymentStatus]


@dataclass(frozen=True)
class Desired:
    """The resolved spec: the typed POST body it amounts to (what the spec leaves out is
    left unset, and is not ours to manage), and the digest of its secret values."""

    body: DeploymentCreate
    secrets_hash: str | None = None

    @classmethod
    def of(
        cls,
        name: str | DeploymentAgent,
        source: Source | ManagedSource,
        source_config: dict[str, Any],
        revision_config: dict[str, Any],
        secrets: list[Secret] | None = None,
        secret_references: list[SecretReference] | None = None,
        secrets_hash: str | None = None,
    ) -> Desired:
        """From the API's snake_case JSON of what the spec sets; an empty config is left
        out of the body. `name`: the deployment's, or the agent it is created for (the
        control plane then names it)."""
        body: dict[str, Any] = {"source": source.value}
        if isinstance(name, DeploymentAgent):
            body["agent"] = name.model_dump(mode="json")
        else:
            body["name"] = name
        if source_config:
            body["source_config"] = source_config
        if revision_config:
            body["source_revision_config"] = revision_config
        if secrets is not None:
            body["secrets"] = secrets
        if secret_references is not None:
            body["secret_references"] = secret_references
        return cls(
            DeploymentCreate.model_validate(body, by_alias=False, by_name=True), secrets_hash
        )

    @property
    def source_config(self) -> dict[str, Any]:
        """What the spec sets of sourceConfig, as JSON (what drift is judged on)."""
        return dump(self.body.source_config, exclude_unset=True)

    @property
    def revision_config(self) -> dict[str, Any]:
        return dump(self.body.source_revision_config, exclude_unset=True)

    @property
    def secrets(self) -> list[Secret] | None:
        return self.body.secrets

    @property
    def secret_references(self) -> list[SecretReference] | None:
        return self.body.secret_references


def secrets_digest(uid: str, secrets: list[Secret]) -> str:
    """A salted digest of the secret values, so a rotation can be detected without the
    values ever being stored anywhere but the Secrets themselves."""
    h = hashlib.sha256(uid.encode())
    for s in sorted(secrets, key=lambda s: s.name):
        h.update(b"\0" + s.name.encode() + b"\0" + s.value.encode())
    return h.hexdigest()[:32]


@dataclass(frozen=True)
class Resolver:
    """Reads what an AgentDeployment's spec refers to."""

    client: ControlPlaneClient
    kube: KubeReader

    async def resolve(self, mr: Mr) -> Desired:
        spec = mr.spec
        source_config: dict[str, Any] = {}
        revision_config: dict[str, Any] = dump(spec.source_revision_config)
        if spec.source_config is not None:
            sc = spec.source_config
            source_config = prune(
                sc.model_dump(
                    mode="json", exclude_unset=True, exclude={"listener_ref", "repository"}
                )
            )
            if sc.listener_ref is not None:
                source_config["listener_id"] = await self._listener_id(mr, sc.listener_ref)
            if sc.repository is not None:
                repo = await self._repository(sc.integration_id, sc.repository)
                source_config["repo_url"] = repo.url
                source_config.setdefault("integration_id", str(repo.host_integration_id))
                revision_config.setdefault("repo_ref", repo.default_branch)
        secrets = await self._secrets(mr)
        digest = secrets_digest(mr.uid, secrets) if secrets is not None else None
        references = None if spec.secret_references is None else list(spec.secret_references)
        named = spec.agent or spec.deployment_name(mr.name)
        assert named is not None  # a spec without an agent names its deployment
        return Desired.of(
            named, spec.source, source_config, revision_config, secrets, references, digest
        )

    async def _listener_id(self, mr: Mr, ref: ListenerReference) -> str:
        namespace = ref.namespace or mr.namespace
        label = ref.name if namespace == mr.namespace else f"{namespace}/{ref.name}"
        if namespace == mr.namespace:
            status = await self.kube.read_custom_status(namespace, "listeners", ref.name)
        else:
            status = await self._shared_listener_status(mr, namespace, ref.name)
        if status is None:
            raise DependencyNotReady(f"Listener {label} not found")
        listener_id = ListenerStatus.model_validate(status).external_id
        if not listener_id:
            raise DependencyNotReady(f"Listener {label} has no listenerId yet")
        return str(listener_id)

    async def _shared_listener_status(
        self, mr: Mr, namespace: str, name: str
    ) -> Mapping[str, Any] | None:
        """Another namespace's Listener's status, if it admits this resource's namespace
        (`externals.listeneraccess`); else `ListenerNotAllowed`, naming the rule."""
        listener = await self.kube.read_object("listeners", namespace, name)
        if listener is None:
            return None
        raw = (listener.get("spec") or {}).get("allowedNamespaces")
        allowed = None if raw is None else AllowedNamespaces.model_validate(raw)
        labels = await self.kube.read_namespace_labels(mr.namespace) or {}
        problem = refusal(allowed, f"{namespace}/{name}", mr.namespace, labels)
        if problem:
            raise ListenerNotAllowed(problem)
        status: Mapping[str, Any] = listener.get("status") or {}
        return status

    async def _repository(
        self, integration_id: UUID | None, wanted: RepositoryReference
    ) -> GitRepository:
        if integration_id is None:  # the CRD refuses this; kept for specs from elsewhere
            raise errors.Invalid("sourceConfig.repository needs sourceConfig.integrationId")
        for repo in await self.client.list_repositories(integration_id):
            if repo.owner == wanted.owner and repo.name == wanted.name:
                return repo
        raise errors.NotFound(
            f"repository {wanted.owner}/{wanted.name} is not available "
            f"through integration {integration_id}"
        )

    async def secrets_in_place(self, mr: Mr, dep: Deployment) -> str | None:
        """The digest of the spec's secret values, when the deployment has secrets of
        exactly those names; None when it has not, or a Secret is not there yet.

        What ObserveOnly records as the values the deployment has (they are write-only
        on the service: they cannot be compared), so that switching to Full sends them
        only once a Secret changes (an export, applied with the values the deployment
        has now, then finds no drift)."""
        try:
            secrets = await self._secrets(mr)
        except DependencyNotReady:
            return None
        if secrets is None:
            return None
        if sorted(s.name for s in secrets) != sorted(s.name for s in dep.secrets or []):
            return None
        return secrets_digest(mr.uid, secrets)

    async def _secrets(self, mr: Mr) -> list[Secret] | None:
        spec = mr.spec
        if spec.secrets is None and spec.secrets_from is None:
            return None
        values: dict[str, str] = {}
        for source in spec.secrets_from or []:
            values.update(await self._secret_data(mr.namespace, source.secret_ref.name))
        for item in spec.secrets or []:
            ref = item.value_from.secret_key_ref
            data = await self._secret_data(mr.namespace, ref.name)
            if ref.key not in data:
                raise DependencyNotReady(f"Secret {ref.name} has no key {ref.key}")
            values[item.name] = data[ref.key]
        return [Secret(name=k, value=v) for k, v in sorted(values.items())]

    async def _secret_data(self, namespace: str, name: str) -> Mapping[str, str]:
        data = await self.kube.read_secret(namespace, name)
        if data is None:
            raise DependencyNotReady(f"Secret {name} not found")
        return data
