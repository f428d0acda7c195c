"""An in-memory apiserver for `deployplane plan` (its `ClusterView`), over the `FakeKube`
the operator's passes write to: both see one cluster.

Stored objects keep their metadata and spec here; their status and the operator's
marker come from the FakeKube (what the passes wrote). A dry-run answers what the
apiserver would: a new object gets generation 1 and a uid, a replaced one keeps its uid
and gets the next generation when its spec changes; a refusal is a `Status` set for the
object beforehand. Every request is recorded, so a test proves the plan's reads and
dry-runs are all it asked.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.support.fakekube import FakeKube

from deployplane.cli.commands.plan.cluster import DryRun, replacing
from deployplane.cli.commands.plan.manifests import Manifest

Key = tuple[str, str, str]  # plural, namespace, name


@dataclass
class PlanCluster:
    kube: FakeKube
    objects: dict[Key, dict[str, Any]] = field(default_factory=dict)
    refusals: dict[Key, dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, ...]] = field(default_factory=list)

    def store(self, plural: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Keep `body` as the live object (what `kubectl apply` made of it)."""
        meta = body["metadata"]
        stored = copy.deepcopy(dict(body))
        stored.pop("status", None)
        self.objects[(plural, meta["namespace"], meta["name"])] = stored
        return stored

    def live(self, plural: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        self.requests.append(("get", plural, namespace, name))
        stored = self.objects.get((plural, namespace, name))
        if stored is None:
            return None
        obj = copy.deepcopy(stored)
        written = self.kube.objects.get((namespace, plural, name)) or {}
        annotations = (written.get("metadata") or {}).get("annotations") or {}
        obj["metadata"]["annotations"] = {**obj["metadata"].get("annotations", {}), **annotations}
        obj["status"] = copy.deepcopy(self.kube.statuses.get((namespace, plural, name), {}))
        return obj

    def listed(self, plural: str, namespace: str, selector: str | None = None) -> list[Any]:
        self.requests.append(("list", plural, namespace))
        return [
            self.live(plural, namespace, name)
            for (p, ns, name) in self.objects
            if (p, ns) == (plural, namespace)
        ]

    def secret(self, namespace: str, name: str) -> Mapping[str, str] | None:
        self.requests.append(("get", "secrets", namespace, name))
        return self.kube.secrets.get((namespace, name))

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        return self.kube.namespace_labels.get(name, {})

    def dry_run(self, plural: str, manifest: Manifest) -> DryRun:
        key = (plural, manifest.namespace, manifest.name)
        self.requests.append(("dry-run", *key))
        if key in self.refusals:
            return DryRun(refusal=self.refusals[key])
        live = self.live(plural, manifest.namespace, manifest.name)
        if live is None:
            body = copy.deepcopy(manifest.body)
            body["metadata"].update(generation=1, uid=str(uuid.uuid4()), resourceVersion="1")
            return DryRun(body=body)
        body = replacing(live, manifest.body)
        if body["spec"] != live.get("spec"):
            body["metadata"]["generation"] = int(live["metadata"]["generation"]) + 1
        return DryRun(body=body)
