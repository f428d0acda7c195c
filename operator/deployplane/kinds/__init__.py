"""The custom resource kinds this operator serves, each in one folder, and their registry.

Every subpackage of this package is one kind and exports it as `KIND`, a `KindDef`;
`KINDS` holds them all, in name order (the order of the CRDs and of the Kopf handlers).
Discovered rather than listed, so that a kind's folder is all this package needs. The
three kinds: AgentDeployment, Listener and ControlPlaneConnection. Adding a fourth:

1. `deployplane/kinds/<kind>/`: `spec.py` and `status.py`, its models (the status model
   derives from `deployplane.reconcile.status.ResourceStatus` and says which field is
   the external id); `kind.py`, its CEL rules, printer columns and `KIND = KindDef(...)`
   naming it (kind, plural, short names, the noun of its messages); `__init__.py`
   exporting `KIND`. What the kinds' specs share is `common.py`.
2. `deployplane/externals/<kind>/`: its Connecter and external client
   (`reconcile.external.ExternalClient`: resolve, observe, find, create, update,
   delete; a pure diff gives the patch update() sends).
3. One line in `deployplane.externals.bindings` binding the kind to that Connecter.

`python -m deployplane.crdgen` then writes its CRD into `crds/` and the chart (whose
RBAC grants every kind it ships a CRD for), and regenerates `crds/kustomization.yaml`
and the operator's ClusterRole in `manifests/rbac.yaml`; the Kopf handlers, the
reconcile loop and the metrics follow from the registry and the bindings.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Final

from deployplane.kinds.registry import KindDef, KindRegistry

__all__ = ["KINDS", "KindDef", "KindRegistry", "discover"]


def discover(package: str = __name__) -> KindRegistry:
    """The registry of every kind (subpackage) of `package`."""
    kinds: list[KindDef[Any]] = []
    modules = pkgutil.iter_modules(importlib.import_module(package).__path__)
    for info in sorted(modules, key=lambda m: m.name):
        if not info.ispkg:
            continue
        kind = getattr(importlib.import_module(f"{package}.{info.name}"), "KIND", None)
        if not isinstance(kind, KindDef):
            raise TypeError(f"{package}.{info.name} defines no KIND (a KindDef)")
        kinds.append(kind)
    return KindRegistry(kinds)


KINDS: Final = discover()
