"""AgentDeployment <-> a deployment on the control plane: the calls, and nothing kept
between them (update() is handed the patch it sends).

Call budget (it matters at 1,000 resources): creating costs one POST; while a revision
is in progress only the revision is polled; when it settles one GET of the deployment
refreshes the status; a resync of a settled resource is one GET of the deployment.
A PATCH that made no revision (a change of resources, say) is Ready only once the data
plane applied it: until the published `remote_reconciled=false` filter no longer lists
the deployment, one more GET per poll, and only while such a change is outstanding.
A change while the latest revision is not deployed (failed, or on its way) is sent with
the revision fields, so that it makes a revision of its own (`diff.diff`): no call more.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Final

from deployplane.api import errors
from deployplane.api.client import ControlPlaneClient
from deployplane.api.models import Deployment, DeploymentStatus, Revision
from deployplane.externals.agentdeployment.diff import DeploymentDelta, diff
from deployplane.externals.agentdeployment.logtail import fetch_tail, kept_message, with_tail
from deployplane.externals.agentdeployment.resolve import Desired, Mr, Resolver
from deployplane.externals.agentdeployment.status import (
    AgentDeploymentReason,
    awaiting_data_plane,
    change_applied,
    deployment_status,
    in_progress,
    latest_deployed,
    revision_view,
    settled_revision,
)
from deployplane.externals.connections import Connections
from deployplane.externals.kube import KubeReader
from deployplane.kinds.agentdeployment.keys import agent_of_key
from deployplane.kinds.agentdeployment.status import AgentDeploymentStatus
from deployplane.kinds.common import ManagementPolicy
from deployplane.reconcile.external import ABSENT, Observation, Phase

Obs = Observation[AgentDeploymentStatus, DeploymentDelta]
# The failures whose log says why (a create failure or a superseded revision has none).
_EXPLAINED = (AgentDeploymentReason.BUILD_FAILED, AgentDeploymentReason.DEPLOY_FAILED)


class AgentDeploymentConnecter:
    """Connects an AgentDeployment: picks its control-plane client."""

    def __init__(self, connections: Connections, kube: KubeReader) -> None:
        self._connections = connections
        self._kube = kube

    async def connect(self, mr: Mr) -> AgentDeploymentExternal:
        client = await self._connections.client_for(mr.namespace, mr.spec.connection_ref)
        return AgentDeploymentExternal.connected(client, self._kube, mr)


@dataclass
class AgentDeploymentExternal:
    """ExternalClient for one AgentDeployment, for one reconcile."""

    client: ControlPlaneClient
    kube: KubeReader
    natural_key: str
    """The deployment's name (the published contract has no other unique key), or for
    an agent's deployment its agent and environment (`agent bot in production`)."""
    adopt_id: str | None = None

    @classmethod
    def connected(
        cls, client: ControlPlaneClient, kube: KubeReader, mr: Mr
    ) -> AgentDeploymentExternal:
        adopt = str(mr.spec.deployment_id) if mr.spec.deployment_id else None
        return cls(client, kube, mr.spec.natural_key(mr.name), adopt)

    async def resolve(self, mr: Mr) -> Desired:
        return await Resolver(self.client, self.kube).resolve(mr)

    async def observe(self, mr: Mr, external_id: str, desired: Desired | None) -> Obs:
        revision: Revision | None = None
        if desired is None:
            revision = await self._poll_revision(mr, external_id)
            if revision is not None and not revision.status.is_terminal:
                phase, reason, message = in_progress(revision)
                status = mr.status.evolve(revision=revision_view(revision))
                return Observation(True, status, phase, reason, message)
        try:
            dep = await self.client.get_deployment(external_id)
        except errors.NotFound:
            return ABSENT
        if revision is None or revision.id != dep.latest_revision_id:
            revision = await self._latest_revision(mr, dep)
        patch = None
        if desired is not None:
            deployed = latest_deployed(mr.status, dep, revision)
            patch = diff(desired, dep, mr.status.secrets_hash, deployed=deployed)
        baseline = await self._secrets_baseline(mr, dep)
        obs = _observation(mr.status, dep, revision, baseline, patch)
        if obs.phase is Phase.READY and mr.status.awaiting_data_plane:
            obs = await self._data_plane_applied(dep, obs)
        return await self._explained(mr, dep, revision, obs)

    async def _data_plane_applied(self, dep: Deployment, obs: Obs) -> Obs:
        """Ready, or still waiting for a change without a revision to be applied: the
        published filter says whether the data plane reconciled the deployment. A
        service that never marks a deployment so is simply Ready."""
        waiting = await self.client.list_deployments(
            deployment_ids=[dep.id], remote_reconciled=False, limit=1
        )
        if not any(item.id == dep.id for item in waiting.resources):
            assert obs.status is not None  # an observation of an existing deployment
            status = obs.status.evolve(awaiting_data_plane=None)
            return replace(obs, status=status, ready_event=change_applied(status))
        return _awaiting(obs)

    async def _secrets_baseline(self, mr: Mr, dep: Deployment) -> str | None:
        """ObserveOnly, before any secret was ever sent: the digest of the Secrets the
        spec reads, as the values the deployment has (`Resolver.secrets_in_place`)."""
        if mr.spec.management_policy is not ManagementPolicy.OBSERVE_ONLY:
            return None
        if mr.status.secrets_hash is not None:
            return None  # known already: a change since then is pushed once Full
        if mr.spec.secrets is None and mr.spec.secrets_from is None:
            return None
        return await Resolver(self.client, self.kube).secrets_in_place(mr, dep)

    async def _explained(self, mr: Mr, dep: Deployment, revision: Revision | None, obs: Obs) -> Obs:
        """A failed build or deploy says why: the log's last lines in the message, read
        once (when the poll finds the revision failed), then kept from the condition."""
        if obs.reason not in _EXPLAINED:
            return obs
        kept = kept_message(mr.status.conditions, obs.message)
        if kept is not None or revision is None:
            return replace(obs, message=kept) if kept else obs
        lines = await fetch_tail(self.client, dep, str(revision.id), revision.status)
        names = [secret.name for secret in dep.secrets or []]
        return replace(obs, message=with_tail(obs.message, lines, names))

    async def _poll_revision(self, mr: Mr, external_id: str) -> Revision | None:
        revision_id = mr.status.latest_revision_id
        if not revision_id:
            return None
        try:
            return await self.client.get_revision(external_id, revision_id)
        except errors.NotFound:
            return None  # the deployment itself may be gone: a full read will tell

    async def _latest_revision(self, mr: Mr, dep: Deployment) -> Revision | None:
        if dep.latest_revision_id is None or settled_revision(mr.status, dep):
            return None  # none yet, or settled and unchanged: no need to ask again
        try:
            return await self.client.get_revision(dep.id, dep.latest_revision_id)
        except errors.NotFound:
            return None

    async def find(self, mr: Mr, key: str | None = None) -> str | None:
        """The deployment under a natural key (`key`, else the spec's): an agent and an
        environment (the vendor CLI's filters), else a name (the published contract has
        no exact-name filter: name_contains and an exact match, through every page,
        bounded). Never one made before this resource's first create call
        (`_maybe_ours`)."""
        agent = mr.spec.agent if key is None else agent_of_key(key)
        if agent is not None:
            found = await self.client.find_deployment_by_agent(agent.agent_id, agent.environment)
        else:
            found = await self.client.find_deployment_by_name(key or self.natural_key)
        return None if found is None or not _maybe_ours(mr, found) else str(found.id)

    async def create(self, mr: Mr, desired: Desired) -> Obs:
        dep = await self.client.create_deployment(desired.body)
        # The first revision has only just been created: it is in progress by definition,
        # so it is not read back now (one call saved per resource).
        return _observation(mr.status, dep, None, desired.secrets_hash)

    async def update(self, mr: Mr, latest: Obs, patch: DeploymentDelta) -> Obs:
        known = latest.status
        assert known is not None  # an observation of an existing deployment
        dep = await self.client.update_deployment(str(known.deployment_id), patch.body)
        if str(dep.latest_revision_id) != known.latest_revision_id:
            # A new revision (which carries the change): nothing is known of it yet.
            obs = _observation(mr.status, dep, None, patch.secrets_hash)
            assert obs.status is not None
            return replace(obs, status=obs.status.evolve(awaiting_data_plane=None))
        obs = _observation(known, dep, None, patch.secrets_hash)
        if obs.phase is not Phase.READY:
            return obs
        # No revision: what runs reflects the change once the data plane applied it,
        # which the next poll asks (`_data_plane_applied`); not now, it has just begun.
        return _awaiting(obs)

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


CLOCK_SKEW: Final = timedelta(seconds=60)
"""How far the control plane's clock (a deployment's created_at) may be behind the
operator's (the create marker's time) for a lost create's answer to be recovered."""


def _maybe_ours(mr: Mr, found: Deployment) -> bool:
    """Whether `found` may be what a create of this resource made: not when it was made
    before the first create call its marker records (more than the clocks may
    disagree): then it is someone else's under the same key, such as another
    AgentDeployment's deployment of the same agent and environment, and adopting it
    would make two resources manage one deployment. A marker written by hand (no time)
    adopts what its key finds; ObserveOnly finds whatever is there."""
    pending = mr.create_pending
    if pending is None or pending.requested_at is None:
        return True
    if mr.spec.management_policy is ManagementPolicy.OBSERVE_ONLY:
        return True
    return found.created_at >= pending.requested_at - CLOCK_SKEW


def _awaiting(obs: Obs) -> Obs:
    """`obs`, waiting for the data plane to apply a change that made no revision."""
    assert obs.status is not None
    phase, reason, message = awaiting_data_plane()
    status = obs.status.evolve(awaiting_data_plane=True)
    return replace(obs, status=status, phase=phase, reason=reason, message=message)


def _observation(
    known: AgentDeploymentStatus,
    dep: Deployment,
    revision: Revision | None,
    secrets_hash: str | None,
    patch: DeploymentDelta | None = None,
) -> Obs:
    status, (phase, reason, message) = deployment_status(known, dep, revision, secrets_hash)
    return Observation(True, status, phase, reason, message, patch)
