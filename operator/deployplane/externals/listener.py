"""Listener <-> a listener on the control plane."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deployplane.api import errors
from deployplane.api.client import ControlPlaneClient
from deployplane.api.models import Listener, ListenerCreate, ListenerPatch
from deployplane.crd.specs import ListenerSpec
from deployplane.crd.status import Reason
from deployplane.externals.connections import Connections
from deployplane.externals.diffing import differing, dump
from deployplane.reconcile.external import ABSENT, Managed, Observation, Phase

Mr = Managed[ListenerSpec]


class ListenerConnecter:
    """Connects a Listener: picks its control-plane client."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections

    async def connect(self, mr: Mr) -> ListenerExternal:
        return ListenerExternal(
            await self._connections.client_for(mr.namespace, mr.spec.connection_ref)
        )


@dataclass
class ListenerExternal:
    """ExternalClient for one Listener, for one reconcile."""

    client: ControlPlaneClient
    id_field: str = "listenerId"
    _patch: dict[str, Any] = field(default_factory=dict, init=False)

    def adopt_id(self, mr: Mr) -> str | None:
        return str(mr.spec.listener_id) if mr.spec.listener_id else None

    def natural_key(self, mr: Mr) -> str:
        return mr.spec.compute_id

    async def observe(self, mr: Mr, external_id: str, *, full: bool) -> Observation:
        try:
            latest = await self.client.get_listener(external_id)
        except errors.NotFound:
            return ABSENT
        if latest.compute_id != mr.spec.compute_id or latest.compute_type != mr.spec.compute_type:
            raise errors.Conflict(
                f"listener {external_id} has computeType/computeId "
                f"{latest.compute_type.value}/{latest.compute_id}, the spec says "
                f"{mr.spec.compute_type.value}/{mr.spec.compute_id}; they cannot change"
            )
        self._patch = differing(
            _desired(mr.spec), dump(latest, include={"version", "compute_config"})
        )
        return _observation(latest, up_to_date=not self._patch, drift=tuple(self._patch))

    async def find(self, mr: Mr) -> str | None:
        # The published contract has no compute_id filter: every page, matched here.
        async for listener in self.client.iter_listeners():
            if listener.compute_id == mr.spec.compute_id:
                return str(listener.id)
        return None

    async def create(self, mr: Mr) -> Observation:
        body = ListenerCreate.model_validate(
            {
                "compute_type": mr.spec.compute_type.value,
                "compute_id": mr.spec.compute_id,
                **_desired(mr.spec),
            },
            by_alias=False,
            by_name=True,
        )
        return _observation(await self.client.create_listener(body))

    async def update(self, mr: Mr, latest: Observation) -> Observation:
        body = ListenerPatch.model_validate(self._patch, by_alias=False, by_name=True)
        return _observation(await self.client.update_listener(latest.status["listenerId"], body))

    async def delete(self, mr: Mr, external_id: str) -> bool:
        try:
            await self.client.delete_listener(external_id)
            await self.client.get_listener(external_id)
        except errors.NotFound:
            return True
        return False


def _desired(spec: ListenerSpec) -> dict[str, Any]:
    return dump(spec, include={"version", "compute_config"}, exclude_unset=True)


def _observation(
    listener: Listener, *, up_to_date: bool = True, drift: tuple[str, ...] = ()
) -> Observation:
    return Observation(
        exists=True,
        up_to_date=up_to_date,
        status={"listenerId": str(listener.id), "version": listener.version},
        phase=Phase.READY,
        reason=Reason.AVAILABLE,
        message=f"Listener {listener.id} is in sync",
        drift=drift,
    )
