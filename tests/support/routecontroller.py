"""A fake routing layer for tests: the status an ingress controller or a Gateway
controller would write on the agent's routes.

kwok runs no ingress controller and no Gateway implementation, so nothing in the dev
cluster admits an Ingress or an HTTPRoute. The agent reports DEPLOYED only once the
route is admitted (rollout.route_waiting), so the tests stand in for that controller:
`admitted_status` is the status it would write (an address for an Ingress; `Accepted`
and `ResolvedRefs` True for the HTTPRoute's parent, at the route's generation), and
`RouteAdmitter` writes it on the real apiserver (status subresource) for every route
of a namespace until stopped. A fake, documented as one: it proves the agent waits for
admission and reads it right, not that any real controller admits these routes.
"""

from __future__ import annotations

import threading
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

Obj = dict[str, Any]

FAKE_ADDRESS = "192.0.2.10"  # TEST-NET-1: documentation only, never routed
CONTROLLER_NAME = "example.net/fake-gateway-controller"
GATEWAY_GROUP, GATEWAY_VERSION = "gateway.networking.k8s.io", "v1"


def admitted_status(route: Obj) -> Obj:
    """The status a controller writes on `route` once it carries traffic."""
    if route["kind"] == "Ingress":
        return {"loadBalancer": {"ingress": [{"ip": FAKE_ADDRESS}]}}
    generation = route["metadata"].get("generation", 1)
    conditions = [
        {
            "type": kind,
            "status": "True",
            "reason": kind,
            "message": "admitted by the tests' fake controller",
            "observedGeneration": generation,
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        for kind in ("Accepted", "ResolvedRefs")
    ]
    parents = [
        {"parentRef": ref, "controllerName": CONTROLLER_NAME, "conditions": conditions}
        for ref in route["spec"].get("parentRefs", [])
    ]
    return {"parents": parents}


def _needs_status(route: Obj) -> bool:
    status = route.get("status") or {}
    if route["kind"] == "Ingress":
        return not (status.get("loadBalancer") or {}).get("ingress")
    generation = route["metadata"].get("generation", 1)
    for parent in status.get("parents") or []:
        for condition in parent.get("conditions") or []:
            if condition.get("observedGeneration") == generation:
                return False
    return True


class RouteAdmitter:
    """Admits every Ingress and HTTPRoute of `namespace` on the apiserver, polling,
    until `stop()`."""

    def __init__(self, api: client.ApiClient, namespace: str, *, every: float = 0.3) -> None:
        self.api = api
        self.namespace = namespace
        self.every = every
        self.admitted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-route-controller")

    def __enter__(self) -> RouteAdmitter:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _routes(self) -> list[Obj]:
        networking = client.NetworkingV1Api(self.api)
        custom = client.CustomObjectsApi(self.api)
        routes: list[Obj] = []
        for ingress in networking.list_namespaced_ingress(self.namespace).items:
            obj = self.api.sanitize_for_serialization(ingress)
            routes.append({**obj, "kind": "Ingress"})
        try:
            listed = custom.list_namespaced_custom_object(
                GATEWAY_GROUP, GATEWAY_VERSION, self.namespace, "httproutes"
            )
            routes.extend({**r, "kind": "HTTPRoute"} for r in listed.get("items", []))
        except ApiException as exc:
            if exc.status != 404:  # no Gateway API CRDs: no HTTPRoutes to admit
                raise
        return routes

    def admit_once(self) -> int:
        done = 0
        custom = client.CustomObjectsApi(self.api)
        networking = client.NetworkingV1Api(self.api)
        for route in self._routes():
            if not _needs_status(route):
                continue
            name = route["metadata"]["name"]
            body = {"status": admitted_status(route)}
            try:
                if route["kind"] == "Ingress":
                    networking.patch_namespaced_ingress_status(name, self.namespace, body)
                else:
                    custom.patch_namespaced_custom_object_status(
                        GATEWAY_GROUP, GATEWAY_VERSION, self.namespace, "httproutes", name, body
                    )
            except ApiException as exc:
                if exc.status not in (404, 409):  # gone, or changed meanwhile: next pass
                    raise
            done += 1
        self.admitted += done
        return done

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.admit_once()
            except ApiException:  # the apiserver going away at the end of a run
                continue
