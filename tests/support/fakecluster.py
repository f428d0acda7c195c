"""An in-memory `deployplane.dataplane.kube.Cluster` for the agent's tests.

Just enough apiserver: server-side apply replaces the applied fields of an object
(our agent is the only manager here), keeps uid, bumps `metadata.generation` when the
spec changes; delete removes the object and, as the garbage collector would, every
object owning-referenced to it. Writes are counted; `fail_on_apply` makes the n-th
apply raise, like an agent killed mid-way.

One field has managers as in the apiserver: a Deployment's `spec.replicas`, which the
agent hands to autoscalers (dataplane/handover.py). Its owners are listed in
`metadata.managedFields`; an apply without it drops the applier's share, and the last
share dropped removes the count (read back as the default, 1); an unforced apply of
another value conflicts (409) with the other owners; `scale` writes it as the HPA
controller does (the scale subresource: the writer takes it from every other owner).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from typing import Any

from tests.support.routecontroller import admitted_status

from deployplane.dataplane.kube import FIELD_MANAGER, ClusterError

Obj = dict[str, Any]
Objs = list[Obj]  # an alias: inside FakeCluster, `list` names its method
Key = tuple[str, str, str]  # kind, namespace, name
AUTOSCALER_MANAGER = "kube-controller-manager"  # the HPA controller's


class AgentKilled(BaseException):  # not an error the agent handles: it is gone
    """Raised by the fake where a real agent would have been SIGKILLed."""


class FakeCluster:
    def __init__(self, *, namespaces: tuple[str, ...] = ("agents",)) -> None:
        self.objects: dict[Key, Obj] = {}
        self.namespaces = set(namespaces)
        self.writes = 0
        self.fail_on_apply: int | None = None  # 1-based index of the apply that dies
        self.unserved: set[str] = set()  # kinds whose CRD is "not installed"
        self.logs: dict[tuple[str, str], str] = {}  # (pod, container) -> its last run's log
        self.current_logs: dict[tuple[str, str], str] = {}  # ... -> its running one's
        # Who owns each Deployment's spec.replicas: manager -> "Apply" or "Update".
        self.replica_owners: dict[Key, dict[str, str]] = {}
        self.replica_history: dict[Key, list[int]] = {}  # every count it was set to

    def _key(self, kind: str, namespace: str, name: str) -> Key:
        return (kind, namespace, name)

    async def apply(
        self, obj: Mapping[str, Any], *, field_manager: str = FIELD_MANAGER, force: bool = True
    ) -> Obj:
        meta = obj["metadata"]
        if meta["namespace"] not in self.namespaces:
            raise ClusterError(f"namespaces {meta['namespace']} not found", status=404)
        for ref in meta.get("ownerReferences", []):
            if not ref.get("uid"):
                raise ClusterError("ownerReferences.uid: Invalid value", status=422)
        if self.fail_on_apply is not None:
            self.fail_on_apply -= 1
            if self.fail_on_apply == 0:
                self.fail_on_apply = None
                raise AgentKilled
        key = self._key(obj["kind"], meta["namespace"], meta["name"])
        old = self.objects.get(key)
        new = copy.deepcopy(dict(obj))
        if old is not None and set(new.get("spec") or {}) == {"replicas"}:
            # A manager applying the count alone: the rest is the other managers'.
            new = {**copy.deepcopy(old), "spec": {**old["spec"], **new["spec"]}}
        if obj["kind"] == "Deployment":
            self._own_replicas(key, old, new, field_manager, force)
        self.writes += 1
        new["metadata"] = {**new["metadata"]}
        if old is None:
            new["metadata"]["uid"] = str(uuid.uuid4())
            new["metadata"]["generation"] = 1
            new["status"] = {}
        else:
            new["metadata"]["uid"] = old["metadata"]["uid"]
            changed = old.get("spec") != new.get("spec")
            new["metadata"]["generation"] = old["metadata"]["generation"] + int(changed)
            new["status"] = old.get("status", {})
        self.objects[key] = new
        return self._answer(key, new)

    def _own_replicas(self, key: Key, old: Obj | None, new: Obj, manager: str, force: bool) -> None:
        """spec.replicas of `new` as server-side apply by `manager` leaves it."""
        owners = self.replica_owners.setdefault(key, {})
        had = None if old is None else old["spec"].get("replicas")
        wanted = new["spec"].get("replicas")
        if wanted is None:
            owners.pop(manager, None)
            if owners and had is not None:
                new["spec"]["replicas"] = had  # kept for its other owners
            elif old is not None:
                new["spec"]["replicas"] = 1  # nobody's: the default
        else:
            others = [m for m in owners if m != manager]
            if wanted != had and others:
                if not force:
                    raise ClusterError(f"Apply failed with 1 conflict: {others}", status=409)
                owners.clear()
            owners[manager] = "Apply"
        count = new["spec"].get("replicas", 1)
        history = self.replica_history.setdefault(key, [])
        if not history or history[-1] != count:
            history.append(count)

    def scale(self, namespace: str, name: str, replicas: int) -> None:
        """Writes a Deployment's count through its scale subresource, as the HPA
        controller (and KEDA's) does: an update, which makes its writer the owner."""
        key = self._key("Deployment", namespace, name)
        obj = self.objects[key]
        if obj["spec"].get("replicas", 1) != replicas:
            obj["spec"]["replicas"] = replicas
            obj["metadata"]["generation"] += 1
            self.replica_owners[key] = {AUTOSCALER_MANAGER: "Update"}
            self.replica_history.setdefault(key, []).append(replicas)
        self.writes += 1

    def _answer(self, key: Key, obj: Obj) -> Obj:
        answer = copy.deepcopy(obj)
        owners = self.replica_owners.get(key)
        if owners:
            answer["metadata"]["managedFields"] = [
                {
                    "manager": manager,
                    "operation": operation,
                    "apiVersion": "apps/v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:replicas": {}}},
                    **({"subresource": "scale"} if operation == "Update" else {}),
                }
                for manager, operation in sorted(owners.items())
            ]
        return answer

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> Obj | None:
        key = self._key(kind, namespace, name)
        found = self.objects.get(key)
        return self._answer(key, found) if found is not None else None

    async def list(
        self, api_version: str, kind: str, namespace: str, selector: Mapping[str, str]
    ) -> list[Obj]:
        return [
            copy.deepcopy(obj)
            for (k, ns, _), obj in sorted(self.objects.items())
            if k == kind
            and ns == namespace
            and all(obj["metadata"].get("labels", {}).get(a) == b for a, b in selector.items())
        ]

    async def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        key = self._key(kind, namespace, name)
        obj = self.objects.pop(key, None)
        if obj is None:
            return False
        self.replica_owners.pop(key, None)
        self.writes += 1
        uid = obj["metadata"]["uid"]
        for other_key, other in list(self.objects.items()):
            refs = other["metadata"].get("ownerReferences", [])
            if any(ref.get("uid") == uid for ref in refs):
                del self.objects[other_key]
                self.replica_owners.pop(other_key, None)
        return True

    async def served(self, api_version: str, kind: str) -> bool:
        return kind not in self.unserved

    async def pod_log(
        self,
        namespace: str,
        pod: str,
        container: str,
        *,
        previous: bool = True,
        tail_lines: int | None = None,
        limit_bytes: int | None = None,
    ) -> str:
        if ("Pod", namespace, pod) not in self.objects:
            raise ClusterError(f"pods {pod} not found", status=404)
        text = (self.logs if previous else self.current_logs).get((pod, container), "")
        if tail_lines is not None:
            text = "\n".join(text.splitlines()[-tail_lines:])
        return text if limit_bytes is None else text[:limit_bytes]

    # ------------------------------------------------------------------ the world

    def of_kind(self, kind: str) -> Objs:
        return [obj for (k, _, _), obj in sorted(self.objects.items()) if k == kind]

    def roll_out(self, *, ready_database: bool = True, admit_routes: bool = True) -> None:
        """What the Deployment and StatefulSet controllers (and kwok) would do, and an
        ingress or Gateway controller (tests/support/routecontroller.py)."""
        if admit_routes:
            for obj in [*self.of_kind("Ingress"), *self.of_kind("HTTPRoute")]:
                obj["status"] = admitted_status(obj)
        for obj in self.of_kind("Deployment"):
            replicas = obj["spec"].get("replicas", 1)
            obj["status"] = {
                "observedGeneration": obj["metadata"]["generation"],
                "replicas": replicas,
                "updatedReplicas": replicas,
                "availableReplicas": replicas,
            }
        for obj in self.of_kind("StatefulSet"):
            replicas = obj["spec"].get("replicas", 1)
            obj["status"] = {
                "observedGeneration": obj["metadata"]["generation"],
                "readyReplicas": replicas if ready_database else 0,
            }

    def add_pod(self, deployment: Obj, *, waiting_reason: str | None, restarts: int = 0) -> None:
        """A pod of `deployment`'s current template stuck in `waiting_reason` (after
        `restarts` restarts of its container, which last exited with code 1); with no
        reason, running and ready."""
        template = deployment["spec"]["template"]
        namespace = deployment["metadata"]["namespace"]
        name = f"{deployment['metadata']['name']}-pod"
        image = template["spec"]["containers"][0]["image"]
        self.objects[("Pod", namespace, name)] = {
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": str(uuid.uuid4()),
                "labels": dict(template["metadata"]["labels"]),
                "annotations": dict(template["metadata"].get("annotations", {})),
                "ownerReferences": [{"uid": deployment["metadata"]["uid"]}],
            },
            "status": {
                "containerStatuses": [
                    {
                        "name": template["spec"]["containers"][0]["name"],
                        "image": image,
                        "restartCount": restarts,
                        "ready": waiting_reason is None,
                        "state": {"running": {}}
                        if waiting_reason is None
                        else {"waiting": {"reason": waiting_reason}},
                        "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}
                        if restarts
                        else {},
                    }
                ]
            },
        }
