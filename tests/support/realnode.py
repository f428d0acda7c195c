"""The real-node tier's session: one dev cluster with a real node for every module.

`make e2e-real-node` sets DEPLOYPLANE_E2E_REAL_NODE=1; then the e2e session's
`dev_cluster` (tests/e2e/conftest.py) is this cluster instead of the kwok one: a real
node (kubelet, containerd, kube-proxy in a sandbox) and no kwok nodes, with the tests'
busybox image and every archive of `make images` (~/.cache/deployplane/images) imported.
There is one real node per machine (fixed names), so the modules share it serially; the
tests that stop it (`RUN_LAST` of a module) run after every other test. The archives are
this checkout's: made sure of (a cache hit after `make images`) and imported under the
images lock (tests/support/imagelock.py), which no other checkout's build passes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import hostsnapshot, imagelock

from deployplane.devcluster import DevCluster, find_tools
from deployplane.devcluster.realnode import images, ociarchive
from deployplane.devcluster.realnode import node as real_node

ENV = "DEPLOYPLANE_E2E_REAL_NODE"
IMAGES_BUILD = Path(__file__).resolve().parents[2] / "tools" / "images" / "build.py"
TEST_IMAGE = "localhost/deployplane-test/busybox:1"
BUSYBOX = Path("/bin/busybox")
APPLETS = (
    "sh",
    "echo",
    "sleep",
    "cat",
    "wget",
    "nc",
    "httpd",
    "hostname",
    "ls",
    "nslookup",
    "mkdir",
)
# What `make images` builds (tools/images/build.py) and the tier imports.
APP_IMAGE = "docker.io/library/deployplane:dev"
APP_TAG = "deployplane:dev"  # as the chart's values name it (docs/kind.md)
AGENT_REPOSITORY = "docker.io/library/deployplane-e2e-agent"
POSTGRES_IMAGE = "docker.io/library/deployplane-postgres:17-pgvector"
REDIS_IMAGE = "docker.io/library/deployplane-redis:7.0"


def enabled() -> bool:
    return os.environ.get(ENV) == "1"


def skip_reason() -> str | None:
    if not enabled():
        return f"the real-node tier runs with {ENV}=1 (make e2e-real-node)"
    if os.geteuid() != 0:
        return "the real node needs root"
    try:
        bin_dir = find_tools().bin_dir
    except RuntimeError as e:
        return str(e)
    missing = real_node.NodeBinaries(bin_dir).missing()
    if not real_node.has_dns(bin_dir):
        missing.append(real_node.COREDNS)
    if missing or not BUSYBOX.exists():
        return f"missing {missing or BUSYBOX}: run `make node-tools`"
    return None


def busybox_image(path: Path) -> Path:
    """A `FROM scratch` image of Debian's static busybox (no daemon, no registry)."""
    files = [ociarchive.ImageFile("bin/busybox", BUSYBOX.read_bytes())]
    files += [ociarchive.ImageFile(f"bin/{a}", symlink="busybox") for a in APPLETS]
    spec = ociarchive.ImageSpec(ref=TEST_IMAGE, files=files, cmd=["sh"])
    return ociarchive.write_image(spec, path)


@dataclass
class Session:
    """The tier's cluster, and the host as it was before the cluster started."""

    cluster: DevCluster
    before: dict[str, object]
    loaded: list[str]

    def holder_pid(self) -> int:
        return next(p.pid for p in self.cluster.server_processes if p.name == real_node.HOLDER)


def start(state: Path) -> Session:
    """Start the cluster and import the test image and every cached archive into it."""
    before = hostsnapshot.snapshot(state)
    cluster = DevCluster(
        state / "cluster", real_node=True, nodes=0, audit_log=True, ready_timeout=120
    )
    cluster.start()
    try:
        session = Session(cluster, before, [])
        bin_dir = cluster.tools.bin_dir
        with imagelock.held() as lock:
            build = [sys.executable, str(IMAGES_BUILD), "all"]
            subprocess.run(build, check=True, env=lock.env(), pass_fds=(lock.fd,))
            archives = [busybox_image(state / "busybox.tar"), *images.cached_archives()]
            session.loaded = images.import_archives(session.holder_pid(), bin_dir / "ctr", archives)
    except BaseException:
        cluster.stop()
        raise
    return session


def pod_manifest(name: str, namespace: str, command: list[str], **spec: Any) -> dict[str, Any]:
    """A pod running `command` in the tests' busybox image (imported on the node, never
    pulled); `container` in `spec` adds to the container, the rest to the pod's spec."""
    container: dict[str, Any] = {
        "name": "main",
        "image": TEST_IMAGE,
        "command": command,
        "imagePullPolicy": "Never",
    }
    container.update(spec.pop("container", {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": 1, **spec},
    }
