"""The node's cgroups on a cgroup v1 host: made in every hierarchy, emptied and removed.

The kubelet's `cgroupRoot` (layout.CGROUP_ROOT) holds the pods (`kubepods`, made by
the kubelet) and the node's daemons (layout.DAEMON_CGROUP: containerd and so its
shims, kubelet, kube-proxy). So every process the node started is found again, by
pid, in the `cgroup.procs` of that tree, which is how `stop` leaves none behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from deployplane.devcluster.realnode import layout

CGROUP_FS = Path("/sys/fs/cgroup")


def _mounts(fstype: str) -> list[Path]:
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split()[0] == fstype:
                found.append(Path(left.split()[4]))
    return found


def v1_hierarchies() -> list[Path]:
    """The mount points of every cgroup v1 hierarchy (cpu, memory, ..., name=systemd)."""
    return sorted(_mounts("cgroup"))


def all_hierarchies() -> list[Path]:
    """v1 hierarchies and cgroup2 mounts (runc also makes cgroups in the unified one)."""
    return sorted(set(_mounts("cgroup")) | set(_mounts("cgroup2")))


def create(relative: str = layout.DAEMON_CGROUP) -> list[Path]:
    """Make `relative` (and its parents) in every v1 hierarchy; cpuset's cpus and mems
    are copied down (a cpuset cgroup without them refuses processes)."""
    made = []
    for root in v1_hierarchies():
        parent = root
        for part in Path(relative).parts:
            child = parent / part
            child.mkdir(exist_ok=True)
            for knob in ("cpuset.cpus", "cpuset.mems"):
                if (parent / knob).exists() and not (child / knob).read_text().strip():
                    (child / knob).write_text((parent / knob).read_text())
            parent = child
        made.append(parent)
    return made


def procs_files(relative: str = layout.DAEMON_CGROUP) -> list[Path]:
    """`cgroup.procs` of `relative` in every v1 hierarchy: what a process joins."""
    return [root / relative / "cgroup.procs" for root in v1_hierarchies()]


def _tree(root: Path) -> list[Path]:
    """`root` and every cgroup under it, deepest first."""
    if not root.is_dir():
        return []
    found = [Path(d) for d, _, _ in os.walk(root)]
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def pids(relative: str = layout.CGROUP_ROOT) -> set[int]:
    """Every process in the tree `relative`, in any hierarchy."""
    found: set[int] = set()
    for hierarchy in all_hierarchies():
        for group in _tree(hierarchy / relative):
            with contextlib.suppress(OSError):
                found |= {int(p) for p in (group / "cgroup.procs").read_text().split()}
    return found


def kill_all(relative: str = layout.CGROUP_ROOT, timeout: float = 10.0) -> set[int]:
    """SIGKILL every process of the tree until it is empty; return the pids killed.
    Repeated, because a process may fork between one listing and the next."""
    killed: set[int] = set()
    deadline = time.monotonic() + timeout
    while (current := pids(relative)) and time.monotonic() < deadline:
        for pid in current:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        killed |= current
        time.sleep(0.05)
    return killed


def remove(relative: str = layout.CGROUP_ROOT, timeout: float = 10.0) -> list[Path]:
    """rmdir the tree in every hierarchy (v1 and unified), deepest first; return what
    could not be removed by `timeout` (a cgroup empties a moment after its last
    process is reaped)."""
    deadline = time.monotonic() + timeout
    while True:
        left = []
        for hierarchy in all_hierarchies():
            for group in _tree(hierarchy / relative):
                try:
                    group.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    left.append(group)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def orphaned() -> bool:
    """True when the node's cgroup tree exists without its holder (`sleep`, in the
    daemons' cgroup): what a killed owner leaves (the daemons die with it, their
    shims and containers do not). A running node always has its holder."""
    if not any((h / layout.CGROUP_ROOT).is_dir() for h in all_hierarchies()):
        return False
    return not any(_comm(pid) == "sleep" for pid in pids(layout.DAEMON_CGROUP))
