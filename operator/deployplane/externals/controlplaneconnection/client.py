"""ControlPlaneConnection <-> the control plane it names: one cheap read checks it.

A connection owns nothing on the control plane. Its spec says ObserveOnly (a property,
not a field), so the generic reconciler only ever observes it: `observe` lists one
deployment with the connection's URL, key and tenant, and Ready says whether the control
plane took them. Nothing is created, updated or deleted, and deleting the resource
deletes nothing.

A refused key makes the connection Ready=False and Stalled (the user must act), and
is checked again every `RECHECK_SECONDS` rather than at the next resync: the fix is a
new value in the Secret, which no spec change and no watch of ours announces.

Its API key Secret is protected from deletion while it names it
(`externals.keyprotection`): the check's read protects it, and the Secret it last
checked with (`status.protectedSecret`) is let go of when the spec names another, and
when the connection is finalized (`release`, once no resource uses it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from deployplane.api import errors
from deployplane.api.connection import ConnectionSettings
from deployplane.externals.connections import Connections
from deployplane.externals.errors import error_message
from deployplane.kinds.controlplaneconnection.spec import ControlPlaneConnectionSpec
from deployplane.kinds.controlplaneconnection.status import ControlPlaneConnectionStatus
from deployplane.reconcile.conditions import Reason
from deployplane.reconcile.errors import ExternalError
from deployplane.reconcile.external import Managed, Observation, Phase

RECHECK_SECONDS: Final = 30.0
"""How soon a connection whose key was refused is checked again."""

Mr = Managed[ControlPlaneConnectionSpec, ControlPlaneConnectionStatus]
Obs = Observation[ControlPlaneConnectionStatus, "NoChange"]


class NoChange:
    """A connection is never patched: there is no delta (the type `Observation` wants)."""

    fields: tuple[str, ...] = ()
    action: str = "update"
    reasons: tuple[str, ...] = ()


class ControlPlaneConnectionConnecter:
    """Connects a ControlPlaneConnection: the check needs the shared client pool only."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections

    async def connect(self, mr: Mr) -> ConnectionCheck:
        return ConnectionCheck(self._connections, mr.spec.url, mr.spec.url)

    async def release(self, mr: Mr) -> None:
        """Finalized (no resource uses it any more): its API key Secrets, the spec's and
        the one its last check read, lose their protection unless another connection
        names them (`reconcile.external.Releaser`)."""
        secrets = [s for s in (key_secret(mr.spec), mr.status.protected_secret) if s]
        await self._connections.release_keys(mr.namespace, mr.name, secrets)


@dataclass
class ConnectionCheck:
    """ExternalClient for one ControlPlaneConnection, for one reconcile."""

    connections: Connections
    natural_key: str
    """The URL: what a connection "is" on the control plane's side."""
    adopt_id: str | None
    """The URL too: ObserveOnly takes what it observes from here."""

    async def resolve(self, mr: Mr) -> ConnectionSettings:
        checked = mr.status.protected_secret
        if checked is not None and checked != key_secret(mr.spec):
            # The spec names another Secret now: the one it used may go.
            await self.connections.release_keys(mr.namespace, mr.name, [checked])
        # Fresh: the check is there to tell whether the key in the Secret works now.
        return await self.connections.settings_of(mr.namespace, mr.name, mr.spec, fresh=True)

    async def observe(self, mr: Mr, external_id: str, desired: ConnectionSettings | None) -> Obs:
        settings = desired or await self.resolve(mr)
        try:
            await self.connections.client(settings).list_deployments(limit=1)
        except (errors.Unauthorized, errors.Forbidden) as exc:
            reason = (
                Reason.UNAUTHORIZED if isinstance(exc, errors.Unauthorized) else Reason.FORBIDDEN
            )
            raise ExternalError(
                error_message(exc), reason=reason, terminal=True, retry_after=RECHECK_SECONDS
            ) from exc
        status = ControlPlaneConnectionStatus(
            url=settings.url, protected_secret=key_secret(mr.spec)
        )
        where = f" (tenant {settings.tenant_id})" if settings.tenant_id else ""
        message = f"The control plane at {settings.url} accepted the connection{where}"
        return Observation(True, status, Phase.READY, Reason.AVAILABLE, message)

    async def find(self, mr: Mr, key: str | None = None) -> str | None:
        return key or self.natural_key

    async def create(self, mr: Mr, desired: ConnectionSettings) -> Obs:
        raise _never("create")

    async def update(self, mr: Mr, latest: Obs, patch: NoChange) -> Obs:
        raise _never("update")

    async def delete(self, mr: Mr, external_id: str) -> bool:
        return True  # nothing of a connection's lives on the control plane


def key_secret(spec: ControlPlaneConnectionSpec) -> str | None:
    """The name of the Secret of the connection's API key (None: it has no key)."""
    return None if spec.api_key_secret_ref is None else spec.api_key_secret_ref.name


def _never(what: str) -> AssertionError:
    # ObserveOnly (the spec's fixed policy) never asks for these.
    return AssertionError(f"a ControlPlaneConnection is never asked to {what}")
