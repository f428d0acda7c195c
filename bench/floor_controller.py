"""The least any controller must do per AgentDeployment, and nothing more: the floor.

Run by `bench/floor.py` as its own process (like the operator). No Kopf, no reconciler,
no crash safety, no Events, no retries: it watches the namespace and for every new
resource makes the Kubernetes writes that no correct operator can skip, plus the
operator's three control-plane calls:

1. add the finalizer (the external deployment must be deleted with the resource),
2. POST the deployment,
3. write the new id and Reconciling=True to the status (the id must be recorded),
4. poll the revision on the operator's schedule until terminal, GET the deployment,
5. write Ready=True for the generation.

Three writes per resource, on top of its create. The operator makes the same three (its
create marker, for crash safety, rides in the finalizer's patch) and two Events. What
this process needs to converge N resources is a lower bound for any operator built on
the Kubernetes API.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from typing import Any

import aiohttp

from deployplane.api.client import ControlPlaneClient
from deployplane.api.models import DeploymentCreate
from deployplane.kube.api import KubernetesApi
from deployplane.kube.paths import GROUP, VERSION

PLURAL = "agentdeployments"
FINALIZER = "deployplane.io/finalizer"


def deployment_body(name: str) -> DeploymentCreate:
    """What the operator POSTs for the bench's AgentDeployment (`agent_deployment`)."""
    return DeploymentCreate.model_validate(
        {
            "name": name,
            "source": "external_docker",
            "source_config": {"resource_spec": {"min_scale": 1}},
            "source_revision_config": {"image_uri": "registry.example.com/agent:1"},
        }
    )


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def condition(
    type_: str, status: str, reason: str, generation: int, message: str = ""
) -> dict[str, Any]:
    """A metav1.Condition as written now."""
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": _now(),
        "observedGeneration": generation,
    }


def first_status(deployment_id: str, generation: int) -> dict[str, Any]:
    """The floor's first status write: the new id and Reconciling=True."""
    return {
        "deploymentId": deployment_id,
        "observedGeneration": generation,
        "conditions": [
            condition("Ready", "False", "Progressing", generation),
            condition("Reconciling", "True", "Progressing", generation),
        ],
    }


def ready_status(generation: int) -> dict[str, Any]:
    """The floor's second status write: Ready=True for the generation."""
    return {
        "observedGeneration": generation,
        "conditions": [
            condition("Ready", "True", "Available", generation),
            condition("Reconciling", "False", "ReconcileSuccess", generation),
        ],
    }


class FloorController:
    def __init__(
        self,
        kube: KubernetesApi,
        cp: ControlPlaneClient,
        namespace: str,
        *,
        poll: float,
        poll_max: float,
    ) -> None:
        self.kube = kube
        self.cp = cp
        self.namespace = namespace
        self.poll = poll
        self.poll_max = poll_max
        self.seen: set[str] = set()
        self.path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"
        self.tasks: set[asyncio.Task[None]] = set()

    def headers(self, **extra: str) -> dict[str, str]:
        """The operator's own request headers (`KubernetesApi._headers`: the bearer token
        of a ServiceAccount kubeconfig, asked of the configuration every 10 s)."""
        return {**self.kube._headers(), **extra}

    async def add_finalizer(self, name: str) -> None:
        http = self.kube._session()
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{self.namespace}/{PLURAL}/{name}"
        body = json.dumps({"metadata": {"finalizers": [FINALIZER]}})
        headers = self.headers(**{"Content-Type": "application/merge-patch+json"})
        async with http.patch(path, data=body, headers=headers) as response:
            response.raise_for_status()
            await response.read()

    async def converge(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        generation = int(obj["metadata"]["generation"])
        await self.add_finalizer(name)
        created = await self.cp.create_deployment(deployment_body(name))
        assert created.latest_revision_id is not None
        await self.kube.patch_status(
            PLURAL, self.namespace, name, first_status(str(created.id), generation)
        )
        delay = self.poll
        while True:
            await asyncio.sleep(delay)
            revision = await self.cp.get_revision(created.id, created.latest_revision_id)
            if revision.status.is_terminal:
                break
            delay = min(self.poll_max, delay * 1.5)
        await self.cp.get_deployment(created.id)
        await self.kube.patch_status(PLURAL, self.namespace, name, ready_status(generation))

    def see(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if name in self.seen:
            return
        self.seen.add(name)
        task = asyncio.create_task(self.converge(obj))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def watch(self) -> None:
        """List, then watch from there; list again whenever the stream ends."""
        while True:
            version = await self.list()
            await self.watch_from(version)

    async def list(self) -> str:
        http = self.kube._session()
        while True:  # a CRD just applied answers 429 until its storage is ready
            async with http.get(self.path, headers=self.headers()) as response:
                if response.status == 429:
                    await asyncio.sleep(0.5)
                    continue
                if response.status >= 400:
                    raise RuntimeError(f"list: {response.status} {await response.text()}")
                listing = await response.json()
            for obj in listing["items"]:
                self.see(obj)
            version: str = listing["metadata"]["resourceVersion"]
            return version

    async def watch_from(self, version: str) -> None:
        http = self.kube._session()
        params = {"watch": "1", "resourceVersion": version, "timeoutSeconds": "600"}
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        get = http.get(self.path, params=params, timeout=timeout, headers=self.headers())
        async with get as response:
            # One JSON document per line; an object may be longer than the default
            # 64 KiB line limit of `response.content`, so split the chunks ourselves.
            buffer = b""
            async for chunk in response.content.iter_any():
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    event = json.loads(line)
                    if event["type"] == "ADDED":
                        self.see(event["object"])
                    elif event["type"] == "ERROR":
                        print(f"watch error: {event['object']}", flush=True)
                        return
        print("watch ended; listing again", flush=True)


async def main_async(args: argparse.Namespace) -> None:
    kube = KubernetesApi.from_environment()
    # The operator's own environment variables (the API key stays out of argv).
    async with ControlPlaneClient(
        os.environ["DEPLOYPLANE_CONTROL_PLANE_URL"],
        api_key=os.environ["DEPLOYPLANE_API_KEY"],
        tenant_id=os.environ["DEPLOYPLANE_TENANT_ID"],
    ) as cp:
        controller = FloorController(
            kube, cp, args.namespace, poll=args.poll_interval, poll_max=args.poll_max
        )
        try:
            await controller.watch()
        finally:
            await kube.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--poll-interval", type=float, default=2.0)
    parser.add_argument("--poll-max", type=float, default=30.0)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
