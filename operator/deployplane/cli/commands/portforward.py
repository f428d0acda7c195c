"""`deployplane deployments port-forward REF LOCAL_PORT`: the deployment's agent server
on 127.0.0.1:LOCAL_PORT, through the kubelet, until Ctrl-C.

The control plane says where the deployment runs (its listener's namespace, or the
namespace given); the cluster's API finds its agent-server Service by the labels the
listener agent renders (`deployplane.io/deployment-id`, component `agent-server`), and
`kubectl port-forward` carries the bytes: the apiserver's `pods/portforward`
subresource, as `kubectl port-forward` itself does (docs/cli.md says why kubectl and
not the Python client's `portforward`). Every failure is one line, exit 1 or 2.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deployplane.api import models
from deployplane.api.client import ControlPlaneClient
from deployplane.cli.commands import kubectl, resolve

__all__ = [
    "SERVER_PORT",
    "ForwardError",
    "Target",
    "find_kubectl",
    "forward_argv",
    "kubeconfig_of",
    "kubectl_error",
    "listening_port",
    "pick_service",
    "service_query",
    "target_of",
]

SERVER_PORT = 8000  # the agent-server Service's port (dataplane/render/context.py)
_DEPLOYMENT_LABEL = "deployplane.io/deployment-id"
_COMPONENT_LABEL = "app.kubernetes.io/component"
_FORWARDING = re.compile(r"Forwarding from 127\.0\.0\.1:(\d+) -> ")


class ForwardError(Exception):
    """Why the forward cannot start or stopped: one line for the user."""


@dataclass(frozen=True)
class Target:
    """The deployment to reach, and the namespace it runs in (None: look everywhere,
    for a deployment with no listener, run by the emulator's built-in data plane)."""

    deployment_id: str
    name: str
    namespace: str | None


async def target_of(client: ControlPlaneClient, ref: str, namespace: str | None) -> Target:
    """Where `ref` runs, from what the control plane publishes: the deployment's
    `listener_config.k8s_namespace`, else its listener's first namespace."""
    deployment_id = await resolve.deployment_id(client, ref)
    deployment = await client.get_deployment(deployment_id)
    if namespace is None:
        namespace = await _namespace(client, deployment)
    return Target(deployment_id=deployment_id, name=deployment.name, namespace=namespace)


async def _namespace(client: ControlPlaneClient, deployment: models.Deployment) -> str | None:
    config = deployment.source_config
    wanted = config.listener_config.k8s_namespace if config and config.listener_config else None
    if wanted:
        return wanted
    if config is None or config.listener_id is None:
        return None
    listener = await client.get_listener(str(config.listener_id))
    namespaces = listener.compute_config.k8s_namespaces if listener.compute_config else None
    return namespaces[0] if namespaces else None


def find_kubectl(env: Mapping[str, str]) -> str:
    """kubectl (`deployplane.cli.commands.kubectl`); not found, a `ForwardError`."""
    try:
        return kubectl.find_kubectl(env)
    except kubectl.KubectlNotFound as exc:
        raise ForwardError(str(exc)) from None


_SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
_NO_KUBECONFIG = "no kubeconfig: set KUBECONFIG or pass --kubeconfig"


def kubeconfig_of(given: str | None, env: Mapping[str, str]) -> str | None:
    """The kubeconfig kubectl is to use (None: its own default, which exists), or a
    `ForwardError` saying what is missing: without one, kubectl falls back to
    localhost:8080 and says only that the connection was refused."""
    if given:
        files = [Path(p).expanduser() for p in given.split(os.pathsep) if p]
        if not any(f.is_file() for f in files):
            raise ForwardError(f"kubeconfig {given} not found: set KUBECONFIG or pass --kubeconfig")
        return given
    default = Path(env.get("HOME") or Path.home()) / ".kube" / "config"
    in_cluster = env.get("KUBERNETES_SERVICE_HOST") and _SERVICE_ACCOUNT_TOKEN.is_file()
    if default.is_file() or in_cluster:
        return None
    raise ForwardError(_NO_KUBECONFIG)


def _kube_args(kubeconfig: str | None) -> list[str]:
    return [] if kubeconfig is None else ["--kubeconfig", kubeconfig]


def service_query(kubectl: str, target: Target, kubeconfig: str | None) -> list[str]:
    """`kubectl get services` of the deployment's agent server, as JSON."""
    where = ["--all-namespaces"] if target.namespace is None else ["-n", target.namespace]
    selector = f"{_DEPLOYMENT_LABEL}={target.deployment_id},{_COMPONENT_LABEL}=agent-server"
    return [
        kubectl,
        *_kube_args(kubeconfig),
        "get",
        "services",
        *where,
        "-l",
        selector,
        "-o",
        "json",
    ]


def pick_service(listing: str, target: Target) -> tuple[str, str]:
    """(namespace, name) of the one agent-server Service in `kubectl get -o json`'s
    answer; none or several is a `ForwardError` naming the deployment."""
    try:
        items: Sequence[Any] = json.loads(listing).get("items") or []
    except (ValueError, AttributeError):
        raise ForwardError("kubectl get services did not answer JSON") from None
    where = "any namespace" if target.namespace is None else f"namespace {target.namespace}"
    if not items:
        raise ForwardError(
            f"deployment {target.name} has no agent-server Service in {where} of this "
            "cluster (not deployed yet, or run by another cluster: check --kubeconfig)"
        )
    if len(items) > 1:
        raise ForwardError(f"deployment {target.name} has {len(items)} agent-server Services")
    meta = items[0].get("metadata") or {}
    return str(meta.get("namespace")), str(meta.get("name"))


def forward_argv(
    kubectl: str, namespace: str, service: str, local_port: int, kubeconfig: str | None
) -> list[str]:
    """`kubectl port-forward` of the Service's port to 127.0.0.1 only; local port 0: one
    the system picks (kubectl's `:8000`), named by kubectl's first line."""
    return [
        kubectl,
        *_kube_args(kubeconfig),
        "port-forward",
        "-n",
        namespace,
        f"service/{service}",
        f"{local_port or ''}:{SERVER_PORT}",
        "--address",
        "127.0.0.1",
    ]


def kubectl_error(stderr: str) -> str:
    """kubectl's last error line, without its `error: ` prefix (ours adds one)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if not lines:
        return "kubectl failed without a message"
    errors = [line for line in lines if line.lower().startswith(("error", "unable"))]
    last = (errors or lines)[-1].removeprefix("error: ").removeprefix("Error: ")
    if "localhost:8080" in last:  # kubectl's fallback when its kubeconfig names no server
        return (
            "the kubeconfig names no cluster (kubectl tried localhost:8080): "
            "set KUBECONFIG or pass --kubeconfig"
        )
    return last


def find_service(kubectl: str, target: Target, kubeconfig: str | None) -> tuple[str, str]:
    done = subprocess.run(
        service_query(kubectl, target, kubeconfig),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    if done.returncode != 0:
        raise ForwardError(kubectl_error(done.stderr))
    return pick_service(done.stdout, target)


@contextlib.contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """SIGINT and SIGTERM end the forward (as KeyboardInterrupt), whatever this process
    inherited: a command started as a background job (`... &`) gets SIGINT ignored,
    and Python's default SIGTERM would end it at once, leaving kubectl (in a session of
    its own, so a terminal's Ctrl-C reaches only us) running. kubectl does the same."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def listening_port(line: str) -> int | None:
    """The local port in kubectl's "Forwarding from 127.0.0.1:P -> 8000" line, the
    first it prints once bound; None for any other line."""
    found = _FORWARDING.match(line)
    return int(found.group(1)) if found else None


def run_forward(argv: list[str], announce: Callable[[int], str]) -> None:
    """Runs kubectl until it ends (a `ForwardError` with its last error line) or Ctrl-C
    or SIGTERM (then kubectl is stopped, and this returns); once kubectl listens, prints
    `announce(local port)`."""
    with _stopped_by_signals():
        _forward(argv, announce)


def _forward(argv: list[str], announce: Callable[[int], str]) -> None:
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    assert process.stdout is not None
    assert process.stderr is not None
    errors: deque[str] = deque(maxlen=20)
    drain = threading.Thread(target=errors.extend, args=(process.stderr,), daemon=True)
    drain.start()
    try:
        port = listening_port(process.stdout.readline())
        if port is None:
            process.wait(timeout=60)
            drain.join(timeout=5)
            raise ForwardError(kubectl_error("".join(errors)))
        print(announce(port), flush=True)
        # kubectl says "Handling connection for P" per connection: read, so it never blocks
        for _ in process.stdout:
            pass
        process.wait()
        drain.join(timeout=5)
        raise ForwardError(kubectl_error("".join(errors)) + " (the forward stopped)")
    except KeyboardInterrupt:
        return
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
