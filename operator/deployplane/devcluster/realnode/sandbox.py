"""Making and removing the node's namespaces, veth pair and cgroups.

The holder is `sleep infinity` started by `unshare --net --mount` (every mount made
private in its new mount namespace) in the daemons' cgroup: the namespaces live as
long as it or any daemon does. The host gets the veth's host end (layout.HOST_VETH,
198.18.0.1/30) and nothing else; `script.namespace_setup` does the rest inside.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from deployplane.devcluster import processes
from deployplane.devcluster.errors import DevClusterError
from deployplane.devcluster.processes import ServerProcess
from deployplane.devcluster.realnode import cgroups, layout, script
from deployplane.devcluster.realnode.layout import NodePaths

SLEEP = "/usr/bin/sleep"
_HIDDEN = ("/run", "/var/lib", "/var/log")


def run(argv: Sequence[str], *, input_text: str | None = None, timeout: float = 30.0) -> str:
    """Run a set-up command; a failure raises with its output."""
    done = subprocess.run(
        list(argv), input=input_text, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise DevClusterError(
            f"{' '.join(argv[:4])} ... failed ({done.returncode}):\n{done.stdout}{done.stderr}"
        )
    return done.stdout


def nsenter(holder: int, *argv: str) -> list[str]:
    """`argv` run inside the node's mount and network namespaces."""
    return ["nsenter", f"--target={holder}", "--mount", "--net", "--", *argv]


def write_files(paths: NodePaths) -> None:
    """The directories and small files the namespace set-up binds into place."""
    for resolved in (paths.root.resolve(),):
        if any(str(resolved).startswith(h + "/") for h in _HIDDEN):
            raise DevClusterError(
                f"the real node's state directory {resolved} is under one of {_HIDDEN}, "
                "which the node's namespace replaces; choose another --state-dir"
            )
    for d in (*paths.private_dirs.values(), paths.etc, paths.tunables, paths.cni_conf_dir):
        d.mkdir(parents=True, exist_ok=True)
    for name, value in layout.KERNEL_TUNABLES.items():
        (paths.tunables / name.replace("/", ".")).write_text(value + "\n")


def start_holder(paths: NodePaths, logs: Path, detached: bool) -> ServerProcess:
    argv = ["unshare", "--net", "--mount", "--propagation", "private", SLEEP, "infinity"]
    proc = processes.spawn(
        "node-namespaces",
        argv,
        logs / "node-namespaces.log",
        detached=detached,
        cgroup_procs=cgroups.procs_files(),
        executable=SLEEP,
    )
    deadline = time.monotonic() + 10
    # Wait for unshare to exec sleep: the namespaces exist from then on.
    while not processes.pid_runs(proc.pid, SLEEP):
        if time.monotonic() > deadline or (proc.popen and proc.popen.poll() is not None):
            raise DevClusterError(f"unshare failed: {processes.log_tail(proc.log)}")
        time.sleep(0.01)
    return proc


def connect(holder: int, paths: NodePaths) -> None:
    """The veth pair, then everything inside the namespaces (script.namespace_setup)."""
    host = layout.HOST_VETH
    run(["ip", "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", str(holder)])
    run(["ip", "addr", "add", f"{layout.HOST_IP}/{layout.VETH_PREFIX}", "dev", host])
    run(["ip", "link", "set", host, "up"])
    run(nsenter(holder, "sh", "-s"), input_text=script.namespace_setup(paths))


def veth_exists() -> bool:
    return (
        subprocess.run(
            ["ip", "link", "show", layout.HOST_VETH], capture_output=True, check=False
        ).returncode
        == 0
    )


def remove_veth(timeout: float = 5.0) -> None:
    """The kernel deletes the pair with the node's network namespace; wait for that, and
    delete it ourselves if something still pins the namespace."""
    deadline = time.monotonic() + timeout
    while veth_exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if veth_exists():
        with contextlib.suppress(DevClusterError):
            run(["ip", "link", "del", layout.HOST_VETH])


def teardown() -> list[str]:
    """Kill every process left in the node's cgroups, remove them and the veth; return
    what is still there (nothing, normally)."""
    cgroups.kill_all()
    remove_veth()
    left = [str(p) for p in cgroups.remove()]
    if veth_exists():
        left.append(f"link {layout.HOST_VETH}")
    return left
