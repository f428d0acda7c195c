"""`KindDef`, everything that names and shapes one custom resource kind, and the registry.

Why one record per kind: the CRD generator, the Kopf handlers, the runtime that builds
one reconcile loop per kind and the CLI all read the same `KindDef`, so a kind is named
in one place (kind, plural, singular, short names, the noun of its messages). What a
kind is reconciled through (its external client) is bound to it above the externals
(`deployplane.externals.bindings`), so this package imports none of them.

A registry is a value, not a module global that callers mutate: code takes the
registry it works on (`deployplane.kinds.KINDS` by default), and a test builds its own
(`KINDS.with_kinds(fake)`) without touching the operator's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic

from deployplane.crd.cel import Rule, Rules
from deployplane.crd.openapi import Schema
from deployplane.kube.paths import GROUP
from deployplane.reconcile.external import SpecT
from deployplane.reconcile.status import ResourceStatus
from deployplane.reconcile.usage import SharedBy, UsedBy

__all__ = ["KindDef", "KindRegistry", "SharedBy", "UsedBy"]


@dataclass(frozen=True)
class KindDef(Generic[SpecT]):
    """One custom resource kind: its names, models and CRD extras."""

    kind: str
    """The Kubernetes kind, e.g. "AgentDeployment"; also the metrics' `kind` label."""
    plural: str
    """The resource's plural ("agentdeployments"): URLs, RBAC, Kopf's selectors."""
    short_names: tuple[str, ...]
    description: str
    """The CRD's description: what `kubectl explain <kind>` says first."""
    spec_model: type[SpecT]
    status_model: type[ResourceStatus]
    noun: str
    """What the reconciler's events and messages call one of them ("deployment")."""
    rules: Rules = field(default_factory=dict)
    object_rules: Sequence[Rule] = ()
    """CEL rules on the whole object (`self` is the object: its spec and its status),
    e.g. `crd.cel.fixed_once_created`."""
    printer_columns: Sequence[Schema] = ()
    singular: str = ""
    """Default: the kind in lower case. Also the prefix of the Kopf handler ids."""
    indexed: bool = False
    """Kopf keeps every object's spec in an in-memory index (`kopf.index`, id
    `index_id`), complete before any handler of any kind runs: for a kind whose objects
    the other kinds' passes read (ControlPlaneConnection), without a GET each time.
    """
    used_by: UsedBy | None = None
    """For a kind the others depend on (ControlPlaneConnection, Listener): whether a
    resource of another kind (its body) uses the object (its body). One turning Ready
    wakes the stalled or retrying resources of its namespace, and one being deleted
    keeps our finalizer while any resource still uses it (Crossplane's
    ProviderConfigUsage, Kubernetes' in-use protection), so that they can still be
    finalized through it (`reconcile.workers.Workers.dependencies`, `reconcile.usage`)."""
    shared_by: SharedBy | None = None
    """For such a kind: whether one of its objects may be used from other namespaces
    (a Listener whose allowedNamespaces admits them); None: only from its own."""

    def __post_init__(self) -> None:
        if not self.singular:
            object.__setattr__(self, "singular", self.kind.lower())

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{GROUP}"

    @property
    def index_id(self) -> str:
        """The id of its Kopf index, also the keyword the index is handed over as."""
        return f"{self.plural}_index"


class KindRegistry:
    """The kinds one operator serves, in a fixed order (CRDs and handlers follow it)."""

    def __init__(self, kinds: Iterable[KindDef[Any]] = ()) -> None:
        self._kinds: dict[str, KindDef[Any]] = {}
        for kind in kinds:
            self._add(kind)

    def _add(self, kind: KindDef[Any]) -> None:
        # Two kinds sharing a name would share CRD files, Kopf handler ids or `kubectl`
        # abbreviations: refused here rather than discovered on a cluster.
        taken = {
            name: other.kind
            for other in self._kinds.values()
            for name in (other.kind, other.plural, other.singular, *other.short_names)
        }
        for name in (kind.kind, kind.plural, kind.singular, *kind.short_names):
            if name in taken:
                raise ValueError(f"kind {kind.kind}: name {name!r} is taken by {taken[name]}")
        self._kinds[kind.kind] = kind

    def with_kinds(self, *kinds: KindDef[Any]) -> KindRegistry:
        """A new registry with these kinds after this one's; this one is unchanged."""
        return KindRegistry([*self, *kinds])

    def __iter__(self) -> Iterator[KindDef[Any]]:
        return iter(self._kinds.values())

    def __len__(self) -> int:
        return len(self._kinds)

    def __getitem__(self, kind: str) -> KindDef[Any]:
        return self._kinds[kind]
