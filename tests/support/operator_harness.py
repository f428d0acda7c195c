"""Running the pieces of deployplane for end-to-end tests: the emulator as a real
server process on loopback, the CRDs, and the operator (in process via KopfRunner, or
as a `deployplane operator run` subprocess when a test must kill -9 it)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import httpx
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support.faultproxy import FaultProxy

REPO = Path(__file__).resolve().parents[2]
GROUP, VERSION = "deployplane.io", "v1alpha1"
API_KEY = "e2e-key-0b7d1c"
ADMIN_KEY = "e2e-admin-4f2a9e"  # /_emulator/* (faults, stats), sent as X-Admin-Key
ADMIN = {"X-Admin-Key": ADMIN_KEY}
WORKSPACE = "11111111-1111-1111-1111-111111111111"
INTEGRATION = "22222222-2222-2222-2222-222222222222"
SECOND_WORKSPACE = "44444444-4444-4444-4444-444444444444"
SECOND_API_KEY = "e2e-key-second-8c1e"  # the second workspace's only key


def emulator_config(step_seconds: float) -> dict[str, Any]:
    return {
        "workspaces": [
            {
                "id": WORKSPACE,
                "name": "e2e",
                "api_keys": [API_KEY],
                "mode": "both",
                "integrations": [
                    {
                        "id": INTEGRATION,
                        "repositories": [
                            {
                                "id": 101,
                                "name": "support-bot",
                                "owner": "acme",
                                "url": "https://git.example.com/acme/support-bot",
                                "default_branch": "main",
                            }
                        ],
                    }
                ],
            },
            {
                "id": SECOND_WORKSPACE,
                "name": "e2e-second",
                "api_keys": [SECOND_API_KEY],
                "mode": "both",
            },
        ],
        "pipeline": {
            "step_seconds": step_seconds,
            "failures": [{"image_uri_regex": ".*:broken$", "status": "DEPLOY_FAILED"}],
        },
        "admin_api_keys": [ADMIN_KEY],
    }


@dataclass
class Emulator:
    """`deployplane controlplane serve` on 127.0.0.1, a free port, a SQLite file (or the
    `database` URL, handed over in the environment: it may hold a password).

    Strict by default (`--strict`: the published contract only), behind a fault proxy
    (tests/support/faultproxy.py) whose URL is `url`: faults and request counts come from
    the proxy, never from the emulator's `/_emulator/*` extensions, so nothing the
    e2e suites do depends on an extension. `strict=False, proxied=False` is the plain
    emulator (its own reliability tests, the benchmark)."""

    workdir: Path
    step_seconds: float = 0.2
    database: str | None = None
    strict: bool = True
    proxied: bool = True
    process: subprocess.Popen[str] | None = None
    url: str = ""
    direct_url: str = ""
    proxy: FaultProxy | None = None
    # 0 picks a free port; a restart (start() again) reuses the port it got, so an
    # operator configured with the URL reaches the restarted emulator.
    port: int = 0
    args: tuple[str, ...] = ()  # more `serve` options (e.g. --builtin-dataplane NAMESPACE)
    env: dict[str, str] = field(default_factory=dict)  # more environment (e.g. KUBECONFIG)
    config: dict[str, Any] = field(default_factory=dict)  # more settings (e.g. image_builds)

    @property
    def log_path(self) -> Path:
        return self.workdir / "emulator.log"

    def start(self) -> Emulator:
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "emulator.yaml"
        config.write_text(yaml.safe_dump({**emulator_config(self.step_seconds), **self.config}))
        database = self.database or f"sqlite+aiosqlite:///{self.workdir / 'controlplane.db'}"
        log = self.log_path.open("a")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "deployplane.cli",
                "controlplane",
                "serve",
                "--port",
                str(self.port),
                "--config",
                str(config),
                *(["--strict"] if self.strict else []),
                *self.args,
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            start_new_session=True,
            env={**os.environ, **self.env, "DEPLOYPLANE_DATABASE_URL": database},
        )
        assert self.process.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"emulator exited: {self.log_path.read_text()[-2000:]}")
            log.write(line)
            if "listening on" in line:
                self.url = self.direct_url = line.rsplit(" ", 1)[-1].strip()
                self.port = int(self.url.rsplit(":", 1)[-1].strip("/"))
                break
        else:
            raise RuntimeError("emulator did not start within 60 s")
        # Keep draining stdout into the log so the pipe never fills.
        import threading

        def drain() -> None:
            assert self.process is not None
            assert self.process.stdout is not None
            for rest in self.process.stdout:
                log.write(rest)
                log.flush()

        threading.Thread(target=drain, daemon=True).start()
        if self.proxied:
            if self.proxy is None:
                self.proxy = FaultProxy(self.direct_url)
            self.proxy.start()  # again after a stop(): same port, same faults
            self.url = self.proxy.url
        return self

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)

    def kill9(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def all_deployments(self) -> list[dict[str, Any]]:
        """Every deployment of the e2e workspace (all pages)."""
        found: list[dict[str, Any]] = []
        with self.http() as h:
            while True:
                page = h.get("/v2/deployments", params={"limit": 100, "offset": len(found)})
                page.raise_for_status()
                resources: list[dict[str, Any]] = page.json()["resources"]
                found += resources
                if len(resources) < 100:
                    return found

    def http(self, api_key: str = API_KEY) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"X-Api-Key": api_key}, timeout=10)

    def deployments_named(self, name: str, api_key: str = API_KEY) -> list[dict[str, Any]]:
        """The deployments named exactly `name` in the workspace of `api_key`: the
        published contract has no exact-name filter, so name_contains through every
        page, matched here."""
        found: list[dict[str, Any]] = []
        with self.http(api_key) as h:
            offset = 0
            while True:
                params: dict[str, str | int] = {
                    "name_contains": name,
                    "limit": 100,
                    "offset": offset,
                }
                page = h.get("/v2/deployments", params=params)
                page.raise_for_status()
                resources: list[dict[str, Any]] = page.json()["resources"]
                found += [d for d in resources if d["name"] == name]
                if len(resources) < 100:
                    return found
                offset += len(resources)

    def _fault_proxy(self) -> FaultProxy:
        if self.proxy is None:
            raise RuntimeError("faults and stats need the fault proxy (proxied=True)")
        return self.proxy

    def set_faults(self, **faults: float) -> None:
        self._fault_proxy().set_faults(**faults)

    def stats(self) -> dict[str, Any]:
        return self._fault_proxy().stats()


def operator_env(emulator: Emulator, kubeconfig: Path, **extra: str) -> dict[str, str]:
    env = {
        "KUBECONFIG": str(kubeconfig),
        "DEPLOYPLANE_CONTROL_PLANE_URL": emulator.url,
        "DEPLOYPLANE_API_KEY": API_KEY,
        "DEPLOYPLANE_TENANT_ID": WORKSPACE,
        "DEPLOYPLANE_POLL_INTERVAL": "0.5",
        "DEPLOYPLANE_POLL_MAX_INTERVAL": "2",
        "DEPLOYPLANE_RESYNC_INTERVAL": "600",
    }
    env.update(extra)
    return env


@contextlib.contextmanager
def kopf_operator(namespace: str | tuple[str, ...] | None, env: Mapping[str, str]) -> Iterator[Any]:
    """The operator in this process (KopfRunner), watching one namespace, or several
    (None: all)."""
    from kopf.testing import KopfRunner

    namespaces = (namespace,) if isinstance(namespace, str) else namespace or ()
    scope = [a for ns in namespaces for a in ("--namespace", ns)] or ["--all-namespaces"]
    # Kopf watches the namespaces given to `kopf run`; the environment says the same.
    env = {**env, "DEPLOYPLANE_NAMESPACES": ",".join(namespaces)}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with KopfRunner(
            ["run", "--standalone", *scope, "-m", "deployplane.controller.handlers"],
            timeout=60,
        ) as runner:
            yield runner
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@dataclass
class CliProcess:
    """A `deployplane ...` command as a child process in its own session, for tests
    that kill -9 it. Subclasses name the command (`arguments`)."""

    namespace: str
    env: Mapping[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def arguments(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> Self:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "deployplane.cli", *self.arguments()],
            env={**os.environ, **self.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def kill9(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill9()

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@dataclass
class OperatorProcess(CliProcess):
    """`deployplane operator run`."""

    extra_args: tuple[str, ...] = ()  # e.g. ("--peering", "name")

    def arguments(self) -> list[str]:
        return ["operator", "run", "--namespace", self.namespace, *self.extra_args]


class Resources:
    """Create, read and wait on deployplane custom resources."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self.namespace = namespace

    def create(self, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        created: dict[str, Any] = self.custom.create_namespaced_custom_object(
            GROUP, VERSION, self.namespace, plural, body
        )
        return created

    def list_all(self, plural: str) -> list[dict[str, Any]]:
        listed: dict[str, Any] = self.custom.list_namespaced_custom_object(
            GROUP, VERSION, self.namespace, plural
        )
        items: list[dict[str, Any]] = listed["items"]
        return items

    def get(self, plural: str, name: str) -> dict[str, Any] | None:
        try:
            obj: dict[str, Any] = self.custom.get_namespaced_custom_object(
                GROUP, VERSION, self.namespace, plural, name
            )
            return obj
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def patch(self, plural: str, name: str, patch: dict[str, Any]) -> None:
        self.custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            self.namespace,
            plural,
            name,
            patch,
            _content_type="application/merge-patch+json",
        )

    def delete(self, plural: str, name: str) -> None:
        self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, name)

    def put_secret(self, name: str, data: dict[str, str]) -> None:
        body = client.V1Secret(metadata=client.V1ObjectMeta(name=name), string_data=data)
        try:
            self.core.create_namespaced_secret(self.namespace, body)
        except ApiException as exc:
            if exc.status != 409:
                raise
            self.core.replace_namespaced_secret(name, self.namespace, body)

    def wait(
        self,
        plural: str,
        name: str,
        predicate: Callable[[dict[str, Any] | None], bool],
        *,
        within: float = 90.0,
        what: str = "condition",
    ) -> dict[str, Any] | None:
        """Poll until predicate(obj) holds. The bound only stops a hang; it asserts no speed."""
        deadline = time.monotonic() + within
        obj = None
        while time.monotonic() < deadline:
            obj = self.get(plural, name)
            if predicate(obj):
                return obj
            time.sleep(0.25)
        raise AssertionError(
            f"{plural}/{name}: {what} not reached; last seen: {json.dumps(obj)[:3000]}"
        )


def condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any]:
    for cond in ((obj or {}).get("status") or {}).get("conditions", []):
        if cond.get("type") == type_:
            return dict(cond)
    return {}


def is_true(type_: str) -> Callable[[dict[str, Any] | None], bool]:
    return lambda obj: condition(obj, type_).get("status") == "True"


def ready_for_generation(obj: dict[str, Any] | None) -> bool:
    if obj is None:
        return False
    generation = obj["metadata"]["generation"]
    status = obj.get("status") or {}
    return status.get("observedGeneration") == generation and is_true("Ready")(obj)
