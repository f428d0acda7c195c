"""Each kind bound to the external client the operator reconciles it through: one line
per kind (`CONNECTERS`).

The binding sits here, above both sides: a kind's definition (`deployplane.kinds`)
imports no external client, so that the CRD generator and the CLI read the kinds
without an HTTP client, and a kind's externals (`externals/<kind>/`) import the kind's
spec. The operator's passes and `deployplane plan` build a kind's reconciler here, so
what plan previews is what the operator runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from deployplane.externals.agentdeployment import AgentDeploymentConnecter
from deployplane.externals.connections import Connections
from deployplane.externals.controlplaneconnection import ControlPlaneConnectionConnecter
from deployplane.externals.errors import classified
from deployplane.externals.kube import KubeReader
from deployplane.externals.listener import ListenerConnecter
from deployplane.kinds import KindDef
from deployplane.kinds.agentdeployment.kind import KIND as AGENT_DEPLOYMENT
from deployplane.kinds.controlplaneconnection.kind import KIND as CONTROL_PLANE_CONNECTION
from deployplane.kinds.listener.kind import KIND as LISTENER
from deployplane.reconcile.external import Connecter, Releaser
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.schedule import Schedule

__all__ = ["BINDINGS", "CONNECTERS", "Bindings", "ConnecterFactory", "Unbound"]

ConnecterFactory = Callable[[Connections, KubeReader], Connecter[Any, Any, Any, Any]]
"""Builds a kind's external connecter from the operator's shared clients."""

CONNECTERS: Final[Mapping[str, ConnecterFactory]] = MappingProxyType(
    {
        AGENT_DEPLOYMENT.kind: AgentDeploymentConnecter,
        CONTROL_PLANE_CONNECTION.kind: lambda connections, _: ControlPlaneConnectionConnecter(
            connections
        ),
        LISTENER.kind: lambda connections, _: ListenerConnecter(connections),
    }
)


class Unbound(LookupError):
    """A kind with no external client bound to it."""


@dataclass(frozen=True)
class Bindings:
    """The connecter factory of each kind, by `KindDef.kind`. A value: a test binds a
    kind of its own with `with_connecter`, leaving the operator's unchanged."""

    connecters: Mapping[str, ConnecterFactory]

    def with_connecter(self, kind: str, factory: ConnecterFactory) -> Bindings:
        return Bindings(MappingProxyType({**self.connecters, kind: factory}))

    def connecter(
        self, kind: KindDef[Any], connections: Connections, kube: KubeReader
    ) -> Connecter[Any, Any, Any, Any]:
        try:
            factory = self.connecters[kind.kind]
        except KeyError:
            raise Unbound(
                f"kind {kind.kind} has no external client: bind one in "
                "deployplane.externals.bindings"
            ) from None
        return factory(connections, kube)

    def reconciler(
        self, kind: KindDef[Any], connections: Connections, kube: KubeReader, schedule: Schedule
    ) -> Reconciler[Any, Any]:
        """The kind's reconciler over its external client, its control-plane errors
        classified: what the operator's passes run, and what `deployplane plan`
        previews (`Reconciler.preview`)."""
        connecter = classified(self.connecter(kind, connections, kube))
        return Reconciler(connecter, kind=kind.noun, schedule=schedule)

    def releaser(
        self, kind: KindDef[Any], connections: Connections, kube: KubeReader
    ) -> Releaser | None:
        """The kind's connecter, if it lets go of what a finalized resource held (a
        ControlPlaneConnection its protected API key Secret); else None."""
        connecter = self.connecter(kind, connections, kube)
        return connecter if isinstance(connecter, Releaser) else None


BINDINGS: Final = Bindings(CONNECTERS)
