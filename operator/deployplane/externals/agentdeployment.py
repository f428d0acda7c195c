"""AgentDeployment <-> a deployment on the control plane.

Call budget (it matters at 1,000 resources): creating costs one POST; while a revision
is in progress only the revision is polled; when it settles one GET of the deployment
refreshes the status; a resync of a settled resource is one GET of the deployment.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from deployplane.api import errors
from deployplane.api.client import ControlPlaneClient
from deployplane.api.models import (
    Deployment,
    DeploymentCreate,
    DeploymentPatch,
    DeploymentStatus,
    GitRepository,
    Revision,
    RevisionStatus,
    Secret,
    camelize,
)
from deployplane.crd.specs import AgentDeploymentSpec, RepositoryReference
from deployplane.crd.status import Reason
from deployplane.externals.connections import Connections
from deployplane.externals.diffing import differing, dump, prune
from deployplane.externals.kube import KubeReader
from deployplane.reconcile.external import ABSENT, DependencyNotReady, Managed, Observation, Phase

Mr = Managed[AgentDeploymentSpec]

_FAILURE_REASONS: dict[RevisionStatus, Reason] = {
    RevisionStatus.CREATE_FAILED: Reason.CREATE_FAILED,
    RevisionStatus.BUILD_FAILED: Reason.BUILD_FAILED,
    RevisionStatus.DEPLOY_FAILED: Reason.DEPLOY_FAILED,
    RevisionStatus.SKIPPED: Reason.REVISION_SKIPPED,
    RevisionStatus.INTERRUPTED: Reason.REVISION_INTERRUPTED,
}
_REVISION_FIELDS = ("repo_ref", "graph_config_path", "image_uri")


@dataclass
class Desired:
    """The spec with every reference resolved, in the API's snake_case JSON."""

    source_config: dict[str, Any]
    revision_config: dict[str, Any]
    secrets: list[Secret] | None
    secrets_hash: str | None
    secret_references: list[dict[str, str]] | None = None

    def create_body(self, name: str, spec: AgentDeploymentSpec) -> DeploymentCreate:
        body: dict[str, Any] = {"name": name, "source": spec.source.value}
        if self.source_config:
            body["source_config"] = self.source_config
        if self.revision_config:
            body["source_revision_config"] = self.revision_config
        if self.secrets is not None:
            body["secrets"] = [{"name": s.name, "value": s.value} for s in self.secrets]
        if self.secret_references is not None:
            body["secret_references"] = self.secret_references
        return DeploymentCreate.model_validate(body, by_alias=False, by_name=True)


def secrets_digest(uid: str, secrets: list[Secret]) -> str:
    """A salted digest of the secret values, so a rotation can be detected without the
    values ever being stored anywhere but the Secrets themselves."""
    h = hashlib.sha256(uid.encode())
    for s in sorted(secrets, key=lambda s: s.name):
        h.update(b"\0" + s.name.encode() + b"\0" + s.value.encode())
    return h.hexdigest()[:32]


class AgentDeploymentConnecter:
    """Connects an AgentDeployment: picks its control-plane client."""

    def __init__(self, connections: Connections, kube: KubeReader) -> None:
        self._connections = connections
        self._kube = kube

    async def connect(self, mr: Mr) -> AgentDeploymentExternal:
        client = await self._connections.client_for(mr.namespace, mr.spec.connection_ref)
        return AgentDeploymentExternal(client, self._kube)


@dataclass
class AgentDeploymentExternal:
    """ExternalClient for one AgentDeployment, for one reconcile."""

    client: ControlPlaneClient
    kube: KubeReader
    id_field: str = "deploymentId"
    _desired: Desired | None = field(default=None, init=False)
    _patch: dict[str, Any] = field(default_factory=dict, init=False)

    def adopt_id(self, mr: Mr) -> str | None:
        return str(mr.spec.deployment_id) if mr.spec.deployment_id else None

    def natural_key(self, mr: Mr) -> str:
        return mr.spec.deployment_name(mr.name)

    # ------------------------------------------------------------------ observe

    async def observe(self, mr: Mr, external_id: str, *, full: bool) -> Observation:
        revision: Revision | None = None
        if not full:
            revision = await self._poll_revision(mr, external_id)
            if revision is not None and not revision.status.is_terminal:
                return self._progress_only(mr, revision)
        try:
            dep = await self.client.get_deployment(external_id)
        except errors.NotFound:
            return ABSENT
        if revision is None or revision.id != dep.latest_revision_id:
            revision = await self._latest_revision(mr, dep)
        self._patch = await self._drift(mr, dep) if full else {}
        return self._observation(mr, dep, revision, up_to_date=not self._patch)

    async def _poll_revision(self, mr: Mr, external_id: str) -> Revision | None:
        revision_id = mr.status.get("latestRevisionId")
        if not revision_id:
            return None
        try:
            return await self.client.get_revision(external_id, revision_id)
        except errors.NotFound:
            return None  # the deployment itself may be gone: a full read will tell

    async def _latest_revision(self, mr: Mr, dep: Deployment) -> Revision | None:
        if dep.latest_revision_id is None:
            return None
        known = mr.status.get("revision") or {}
        if known.get("id") == str(dep.latest_revision_id) and known.get("status") in {
            s.value for s in RevisionStatus if s.is_terminal
        }:
            return None  # settled and unchanged: no need to ask again
        try:
            return await self.client.get_revision(dep.id, dep.latest_revision_id)
        except errors.NotFound:
            return None

    def _progress_only(self, mr: Mr, revision: Revision) -> Observation:
        status = {
            k: v for k, v in mr.status.items() if k not in ("conditions", "observedGeneration")
        }
        status["revision"] = _revision_view(revision)
        return Observation(
            exists=True,
            status=status,
            phase=Phase.PROGRESSING,
            reason=Reason.REVISION_IN_PROGRESS,
            message=f"Revision {revision.id} is {revision.status.value}",
        )

    def _observation(
        self,
        mr: Mr,
        dep: Deployment,
        revision: Revision | None,
        *,
        up_to_date: bool,
        secrets_hash: str | None = None,
    ) -> Observation:
        known_revision = mr.status.get("revision") or {}
        if revision is not None:
            view = _revision_view(revision)
        elif known_revision.get("id") == str(dep.latest_revision_id):
            view = dict(known_revision)
        else:
            view = {"id": str(dep.latest_revision_id)} if dep.latest_revision_id else {}
        status: dict[str, Any] = {
            "deploymentId": str(dep.id),
            "latestRevisionId": _str(dep.latest_revision_id),
            "activeRevisionId": _str(dep.active_revision_id),
            "deploymentStatus": dep.status.value,
            "imageVersion": dep.image_version,
            "url": dep.source_config.custom_url if dep.source_config else None,
            "revision": view or None,
            "secretsHash": secrets_hash or mr.status.get("secretsHash"),
        }
        phase, reason, message = _phase(dep, view)
        return Observation(
            exists=True,
            up_to_date=up_to_date,
            status=status,
            phase=phase,
            reason=reason,
            message=message,
            drift=tuple(_drift_names(self._patch)),
        )

    # ------------------------------------------------------------------ desired

    async def desired(self, mr: Mr) -> Desired:
        if self._desired is None:
            self._desired = await self._resolve(mr)
        return self._desired

    async def _resolve(self, mr: Mr) -> Desired:
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
                source_config["listener_id"] = await self._listener_id(mr, sc.listener_ref.name)
            if sc.repository is not None:
                repo = await self._repository(sc.integration_id, sc.repository)
                source_config["repo_url"] = repo.url
                source_config.setdefault("integration_id", str(repo.host_integration_id))
                revision_config.setdefault("repo_ref", repo.default_branch)
        secrets = await self._secrets(mr)
        digest = secrets_digest(mr.uid, secrets) if secrets is not None else None
        references = (
            None
            if spec.secret_references is None
            else [r.model_dump(mode="json") for r in spec.secret_references]
        )
        return Desired(source_config, revision_config, secrets, digest, references)

    async def _listener_id(self, mr: Mr, name: str) -> str:
        status = await self.kube.read_custom_status(mr.namespace, "listeners", name)
        if status is None:
            raise DependencyNotReady(f"Listener {name} not found")
        listener_id = status.get("listenerId")
        if not listener_id:
            raise DependencyNotReady(f"Listener {name} has no listenerId yet")
        return str(listener_id)

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

    async def _drift(self, mr: Mr, dep: Deployment) -> dict[str, Any]:
        """The PATCH body that would bring the deployment to the spec ({} when in sync)."""
        want = await self.desired(mr)
        patch: dict[str, Any] = {}
        source_config = differing(want.source_config, dump(dep.source_config))
        if source_config:
            patch["source_config"] = source_config
        latest_rev = dump(dep.source_revision_config)
        revision = {
            k: v
            for k, v in want.revision_config.items()
            if k in _REVISION_FIELDS and latest_rev.get(k) != v
        }
        if revision:
            patch["source_revision_config"] = revision
        if want.secret_references is not None and want.secret_references != [
            r.model_dump(mode="json") for r in dep.secret_references or []
        ]:
            patch["secret_references"] = want.secret_references
        if want.secrets is not None:
            names_now = sorted(s.name for s in dep.secrets or [])
            names_want = sorted(s.name for s in want.secrets)
            if want.secrets_hash != mr.status.get("secretsHash") or names_now != names_want:
                patch["secrets"] = [{"name": s.name, "value": s.value} for s in want.secrets]
        return patch

    # ------------------------------------------------------------------ mutate

    async def find(self, mr: Mr) -> str | None:
        # The published contract has no exact-name filter: name_contains + exact match,
        # through every page (bounded; beyond it the error says so).
        found = await self.client.find_deployment_by_name(self.natural_key(mr))
        return None if found is None else str(found.id)

    async def create(self, mr: Mr) -> Observation:
        want = await self.desired(mr)
        dep = await self.client.create_deployment(want.create_body(self.natural_key(mr), mr.spec))
        # The first revision has only just been created: it is in progress by definition,
        # so it is not read back now (one call saved per resource).
        return self._observation(mr, dep, None, up_to_date=True, secrets_hash=want.secrets_hash)

    async def update(self, mr: Mr, latest: Observation) -> Observation:
        want = await self.desired(mr)
        body = DeploymentPatch.model_validate(self._patch, by_alias=False, by_name=True)
        dep = await self.client.update_deployment(latest.status["deploymentId"], body)
        if str(dep.latest_revision_id) == latest.status.get("latestRevisionId"):
            # No new revision (only non-revision fields changed): keep what we know of it.
            mr = _with_status(mr, {"revision": latest.status.get("revision")})
        return self._observation(mr, dep, None, up_to_date=True, secrets_hash=want.secrets_hash)

    async def delete(self, mr: Mr, external_id: str) -> bool:
        try:
            dep = await self.client.get_deployment(external_id)
            if dep.status is not DeploymentStatus.AWAITING_DELETE:
                await self.client.delete_deployment(
                    external_id, delete_tracing_project=mr.spec.delete_tracing_project
                )
        except errors.NotFound:
            return True
        return False


def _with_status(mr: Mr, extra: dict[str, Any]) -> Mr:
    return Managed(
        namespace=mr.namespace,
        name=mr.name,
        uid=mr.uid,
        generation=mr.generation,
        spec=mr.spec,
        status={**mr.status, **extra},
        resource_version=mr.resource_version,
    )


def _str(value: object | None) -> str | None:
    return None if value is None else str(value)


def _revision_view(revision: Revision) -> dict[str, Any]:
    src = revision.source_revision_config
    view = {
        "id": str(revision.id),
        "status": revision.status.value,
        "repoCommitSha": src.repo_commit_sha,
        "repoRef": src.repo_ref,
        "imageUri": src.image_uri,
    }
    return {k: v for k, v in view.items() if v is not None}


def _phase(dep: Deployment, view: Mapping[str, Any]) -> tuple[Phase, str, str]:
    if dep.status is DeploymentStatus.AWAITING_DELETE:
        return Phase.PROGRESSING, Reason.DELETING, f"Deployment {dep.id} is being deleted"
    revision_id = view.get("id")
    raw = view.get("status")
    if not revision_id or raw is None:
        return Phase.PROGRESSING, Reason.CREATING, f"Revision {revision_id} was just created"
    status = RevisionStatus(raw)
    if status is RevisionStatus.DEPLOYED:
        if str(dep.active_revision_id) == revision_id:
            return Phase.READY, Reason.DEPLOYED, f"Revision {revision_id} is deployed"
        return (
            Phase.PROGRESSING,
            Reason.REVISION_IN_PROGRESS,
            f"Revision {revision_id} is deployed but not yet active",
        )
    if status in _FAILURE_REASONS:
        return (
            Phase.FAILED,
            _FAILURE_REASONS[status],
            f"Revision {revision_id} ended {status.value}; change the spec to roll a new one",
        )
    return (
        Phase.PROGRESSING,
        Reason.REVISION_IN_PROGRESS,
        f"Revision {revision_id} is {status.value}",
    )


def _drift_names(patch: Mapping[str, Any]) -> list[str]:
    names: list[str] = []
    for section in ("source_config", "source_revision_config"):
        names += [f"{camelize(section)}.{camelize(k)}" for k in patch.get(section, {})]
    for key in ("secrets", "secret_references"):
        if key in patch:
            names.append(camelize(key))
    return names
