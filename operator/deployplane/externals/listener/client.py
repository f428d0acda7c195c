"""Listener <-> a listener on the control plane: the calls, nothing kept between them."""

from __future__ import annotations

from dataclasses import dataclass

from deployplane.api import errors
from deployplane.api.client import ControlPlaneClient
from deployplane.api.models import Listener, ListenerCreate
from deployplane.externals.connections import Connections
from deployplane.externals.listener.diff import ListenerDelta, check_identity, diff, wanted
from deployplane.kinds.listener.spec import ListenerSpec
from deployplane.kinds.listener.status import ListenerStatus
from deployplane.reconcile.conditions import Reason
from deployplane.reconcile.external import ABSENT, Managed, Observation, Phase

Mr = Managed[ListenerSpec, ListenerStatus]
Obs = Observation[ListenerStatus, ListenerDelta]


class ListenerConnecter:
    """Connects a Listener: picks its control-plane client."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections

    async def connect(self, mr: Mr) -> ListenerExternal:
        client = await self._connections.client_for(mr.namespace, mr.spec.connection_ref)
        return ListenerExternal.connected(client, mr)


@dataclass
class ListenerExternal:
    """ExternalClient for one Listener, for one reconcile."""

    client: ControlPlaneClient
    natural_key: str
    """The listener's computeId (unique per workspace on the control plane)."""
    adopt_id: str | None = None

    @classmethod
    def connected(cls, client: ControlPlaneClient, mr: Mr) -> ListenerExternal:
        adopt = str(mr.spec.listener_id) if mr.spec.listener_id else None
        return cls(client, mr.spec.compute_id, adopt)

    async def resolve(self, mr: Mr) -> ListenerCreate:
        return wanted(mr.spec)  # a Listener refers to nothing

    async def observe(self, mr: Mr, external_id: str, desired: ListenerCreate | None) -> Obs:
        try:
            latest = await self.client.get_listener(external_id)
        except errors.NotFound:
            return ABSENT
        check_identity(mr.spec, latest)
        # A listener has nothing in progress: a poll is a full look.
        return _observation(latest, diff(wanted(mr.spec) if desired is None else desired, latest))

    async def find(self, mr: Mr, key: str | None = None) -> str | None:
        # The published contract has no compute_id filter: every page, matched here.
        compute_id = key or self.natural_key
        async for listener in self.client.iter_listeners():
            if listener.compute_id == compute_id:
                return str(listener.id)
        return None

    async def create(self, mr: Mr, desired: ListenerCreate) -> Obs:
        return _observation(await self.client.create_listener(desired))

    async def update(self, mr: Mr, latest: Obs, patch: ListenerDelta) -> Obs:
        assert latest.status is not None  # an observation of an existing listener
        return _observation(
            await self.client.update_listener(str(latest.status.listener_id), patch.body)
        )

    async def delete(self, mr: Mr, external_id: str) -> bool:
        try:
            await self.client.delete_listener(external_id)
            await self.client.get_listener(external_id)
        except errors.NotFound:
            return True
        return False


def _observation(listener: Listener, patch: ListenerDelta | None = None) -> Obs:
    status = ListenerStatus(listener_id=str(listener.id), version=listener.version)
    message = f"Listener {listener.id} is in sync"
    return Observation(True, status, Phase.READY, Reason.AVAILABLE, message, patch)
