"""The custom resource kinds this operator serves: one module per kind, one registry.

Every module of this package except `registry` defines one kind as `KIND`, a
`KindDef`; `KINDS` holds them all, in module-name order (the order of the CRDs and of
the Kopf handlers). Discovered rather than listed, so that adding a kind is its module
here plus its externals package, with no list to keep in step:

1. `deployplane/kinds/<kind>.py`: its spec and status models (or imports of them; the
   status model derives from `deployplane.reconcile.status.ResourceStatus` and says which
   field is the external id), its CEL rules and printer columns, a
   `connecter(connections, kube)` factory, and `KIND = KindDef(...)` naming it (kind,
   plural, short names, the noun of its messages).
2. `deployplane/externals/<kind>/`: the Connecter and the external client the factory
   builds (`reconcile.external.ExternalClient`: resolve, observe, find, create, update,
   delete; a pure diff gives the patch update() sends).
3. `python -m deployplane.crdgen` writes its CRD into `crds/` and the chart (whose
   RBAC grants every kind it ships a CRD for), and regenerates `crds/kustomization.yaml`
   and the operator's ClusterRole in `manifests/rbac.yaml`; the Kopf handlers, the
   reconcile loop and the metrics follow from the registry.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Final

from deployplane.kinds.registry import ConnecterFactory, KindDef, KindRegistry

__all__ = ["KINDS", "ConnecterFactory", "KindDef", "KindRegistry", "discover"]


def discover(package: str = __name__) -> KindRegistry:
    """The registry of every kind module in `package`."""
    kinds: list[KindDef[Any]] = []
    modules = pkgutil.iter_modules(importlib.import_module(package).__path__)
    for info in sorted(modules, key=lambda m: m.name):
        if info.name == "registry":
            continue
        kind = getattr(importlib.import_module(f"{package}.{info.name}"), "KIND", None)
        if not isinstance(kind, KindDef):
            raise TypeError(f"{package}.{info.name} defines no KIND (a KindDef)")
        kinds.append(kind)
    return KindRegistry(kinds)


KINDS: Final = discover()
