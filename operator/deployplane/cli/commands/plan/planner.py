"""One row per resource: the apiserver's dry-run, then the operator's own decision.

For each manifest: the dry-run (`cluster.Cluster.dry_run`; refused: the row says why,
field by field); the object it answers, with the live status and create marker, read as
a pass reads one (`reconcile.passes.managed_of`); the kind's reconciler, built as the
operator builds it (`externals.bindings`), previews the pass (`Reconciler.preview`: the
pass's reads, its pure decision) through the connections the operator would use, over a
control-plane client that sends reads only. With `--prune`, each live resource the
manifests no longer have is a `delete` row, saying what its deletion does on the control
plane (`reconcile.decision.deletes_external`, as the finalizer decides).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import ValidationError

from deployplane.api.connection import ConnectionSettings
from deployplane.cli.commands.kube import KubeError
from deployplane.cli.commands.plan.cluster import ClusterView, PlanReader
from deployplane.cli.commands.plan.manifests import Manifest, Manifests
from deployplane.cli.commands.plan.readonly import PlanWouldWrite, read_only_client
from deployplane.cli.commands.plan.rows import ERROR, HELD, REFUSED, Row, refusal_row
from deployplane.externals.bindings import BINDINGS, Bindings
from deployplane.externals.connections import Connections
from deployplane.kinds import KindDef, KindRegistry
from deployplane.kinds.controlplaneconnection.spec import ControlPlaneConnectionSpec
from deployplane.reconcile.decision import Action, awaits_approval, deletes_external
from deployplane.reconcile.errors import ExternalError
from deployplane.reconcile.external import DependencyNotReady, Managed
from deployplane.reconcile.marker import read_marker
from deployplane.reconcile.passes import managed_of, spec_error_message
from deployplane.reconcile.schedule import Schedule

__all__ = ["Planner", "plan"]

CONNECTIONS: Final = "ControlPlaneConnection"
OBSERVE_ONLY: Final = "ObserveOnly"


@dataclass
class Planner:
    """Plans the manifests against one cluster and its control planes."""

    cluster: ClusterView
    manifests: Manifests
    kinds: KindRegistry
    default_connection: ConnectionSettings | None
    schedule: Schedule = field(default_factory=Schedule)
    bindings: Bindings = BINDINGS

    def __post_init__(self) -> None:
        plurals = {kind.plural: kind.kind for kind in self.kinds}
        self.reader = PlanReader(self.cluster, self.manifests, plurals)
        self.connections = Connections(
            self.default_connection, self.reader, read_only_client, index=self._index()
        )

    def _index(self) -> dict[tuple[str, str], list[ControlPlaneConnectionSpec]]:
        """The connections of the manifests' namespaces, the manifests' over the live
        ones (the operator reads them from Kopf's index of the kind)."""
        plural = self.kinds[CONNECTIONS].plural
        index: dict[tuple[str, str], list[ControlPlaneConnectionSpec]] = {}
        namespaces = {m.namespace for m in self.manifests}
        found = [(ns, obj) for ns in sorted(namespaces) for obj in self.cluster.listed(plural, ns)]
        planned = [(m.namespace, m.body) for m in self.manifests if m.kind == CONNECTIONS]
        for namespace, obj in [*found, *planned]:
            name = str((obj.get("metadata") or {}).get("name", ""))
            try:
                spec = ControlPlaneConnectionSpec.model_validate(obj.get("spec") or {})
            except ValidationError:
                continue  # its own row says why it is refused
            index[(namespace, name)] = [spec]
        return index

    async def row(self, manifest: Manifest) -> Row:
        kind = self.kinds[manifest.kind]
        where = (kind.kind, manifest.namespace, manifest.name)
        try:
            dry = self.cluster.dry_run(kind.plural, manifest)
        except KubeError as exc:
            return Row(*where, ERROR, (str(exc),))
        if dry.refusal is not None or dry.body is None:
            return refusal_row(*where, dry.refusal or {})
        live = self.cluster.live(kind.plural, manifest.namespace, manifest.name)
        status = (live or {}).get("status") or {}
        marker = read_marker(live) if live is not None else None
        try:
            mr = managed_of(kind.spec_model, kind.status_model, dry.body, status, marker)
        except ValidationError as exc:
            return Row(*where, REFUSED, (spec_error_message(exc),))
        return await self._previewed(kind, mr, live is None)

    async def _previewed(self, kind: KindDef[Any], mr: Managed[Any, Any], new: bool) -> Row:
        where = (kind.kind, mr.namespace, mr.name)
        held = (HELD,) if awaits_approval(mr) else ()
        reconciler = self.bindings.reconciler(kind, self.connections, self.reader, self.schedule)
        try:
            preview = await reconciler.preview(mr)
        except DependencyNotReady as exc:
            if new:  # created once what it waits for is there (a Listener of this change)
                return Row(*where, Action.CREATE, (f"waits for: {exc}", *held))
            return Row(*where, ERROR, (f"cannot plan: {exc}",))
        except (ExternalError, KubeError, PlanWouldWrite) as exc:
            return Row(*where, ERROR, (str(exc),))
        change = preview.change
        reasons = [*change.reasons, *(held if preview.decision.held else ())]
        if str(getattr(mr.spec, "management_policy", "")) == OBSERVE_ONLY and kind.kind != (
            CONNECTIONS
        ):
            reasons.append(OBSERVE_ONLY)
        return Row(*where, str(change.action), tuple(reasons), change.fields)

    def pruned(self, namespaces: Iterable[str], selector: str | None) -> list[Row]:
        """A `delete` row for each live resource of `namespaces` (matching `selector`)
        that the manifests do not have."""
        rows: list[Row] = []
        for namespace in sorted(set(namespaces)):
            for kind in self.kinds:
                for obj in self.cluster.listed(kind.plural, namespace, selector):
                    meta = obj.get("metadata") or {}
                    name = str(meta.get("name", ""))
                    if self.manifests.has(kind.kind, namespace, name):
                        continue
                    if meta.get("deletionTimestamp"):
                        continue  # being deleted already: not this change's doing
                    rows.append(Row(kind.kind, namespace, name, Action.DELETE, deletion(kind, obj)))
        return rows


def deletion(kind: KindDef[Any], obj: Mapping[str, Any]) -> tuple[str, ...]:
    """What deleting the resource does on the control plane, as its finalizer decides."""
    if "deletion_policy" not in kind.spec_model.model_fields:
        return (f"a {kind.noun} owns nothing on the control plane",)
    status = obj.get("status") or {}
    try:
        mr = managed_of(kind.spec_model, kind.status_model, obj, status, read_marker(obj))
    except ValidationError as exc:
        return (f"its spec cannot be read: {spec_error_message(exc)}",)
    if not deletes_external(mr):
        why = OBSERVE_ONLY if str(mr.spec.management_policy) == OBSERVE_ONLY else "Orphan"
        return (f"its {kind.noun} stays on the control plane ({why})",)
    if not (mr.status.external_id or mr.create_pending):
        return (f"no {kind.noun} on the control plane yet",)
    return (f"deletes its {kind.noun} on the control plane (deletionPolicy Delete)",)


async def plan(
    planner: Planner,
    *,
    prune: bool = False,
    namespaces: Iterable[str] = (),
    selector: str | None = None,
) -> list[Row]:
    """Every row: the manifests' in their order, then the pruned ones."""
    try:
        rows = [await planner.row(manifest) for manifest in planner.manifests]
        if prune:
            where = {*namespaces, *(m.namespace for m in planner.manifests)}
            rows += planner.pruned(where, selector or None)
        return rows
    finally:
        await planner.connections.aclose()
