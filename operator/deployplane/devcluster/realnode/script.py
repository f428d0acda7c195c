"""Pure: the shell commands that make the node's namespaces what the node needs.

`namespace_setup` runs once inside the holder's network and mount namespaces (through
`nsenter`), after the host has moved the veth's node end in. Everything it changes
(addresses, routes, `ip_forward`, iptables, mounts) belongs to those namespaces and
disappears with them.
"""

from __future__ import annotations

import shlex

from deployplane.devcluster.realnode import layout
from deployplane.devcluster.realnode.layout import NodePaths

GUARD_CHAIN = "DEPLOYPLANE-EGRESS"
# Where the guard lets traffic go: pods, Services (before kube-proxy's DNAT, in OUTPUT),
# the host's end of the veth, and the node itself.
GUARD_ALLOWED = (
    layout.POD_CIDR,
    layout.SERVICE_CIDR,
    f"{layout.HOST_IP}/32",
    f"{layout.NODE_IP}/32",
    "127.0.0.0/8",
)


def network_commands() -> list[str]:
    """The node's end of the veth (`eth0`), its route to the host, forwarding for pods."""
    return [
        "ip link set lo up",
        f"ip addr add {layout.NODE_IP}/{layout.VETH_PREFIX} dev eth0",
        "ip link set eth0 up",
        # A default route so that a pod's packet to elsewhere is forwarded, and so meets
        # the guard (and its counter) instead of an unreachable route.
        f"ip route add default via {layout.HOST_IP}",
        "echo 1 > /proc/sys/net/ipv4/ip_forward",
    ]


def guard_commands(iptables: str = "iptables") -> list[str]:
    """The egress guard: in `mangle` (neither kube-proxy nor the CNI plugins manage that
    table), FORWARD and OUTPUT jump to a chain that returns for allowed destinations and
    drops everything else."""
    t = f"{iptables} -w -t mangle"
    cmds = [f"{t} -N {GUARD_CHAIN}"]
    cmds += [f"{t} -A {GUARD_CHAIN} -d {dest} -j RETURN" for dest in GUARD_ALLOWED]
    cmds.append(f"{t} -A {GUARD_CHAIN} -j DROP")
    cmds += [f"{t} -A FORWARD -j {GUARD_CHAIN}", f"{t} -A OUTPUT -j {GUARD_CHAIN}"]
    return cmds


def mount_commands(paths: NodePaths) -> list[str]:
    """A fresh sysfs (this netns's devices) with the cgroup hierarchies bound back, `/`
    rshared (only here: `unshare` made every mount private first), private /run,
    /var/lib, /var/log, /etc/resolv.conf, and read-only kernel tunables."""
    stash = shlex.quote(str(paths.cgroup_stash))
    cmds = [
        f"mkdir -p {stash}",
        f"mount --rbind /sys/fs/cgroup {stash}",
        "mount -t sysfs sysfs /sys",
        f"mount --rbind {stash} /sys/fs/cgroup",
        f"umount -l {stash}",
        "mount --make-rshared /",
    ]
    for target, source in paths.private_dirs.items():
        cmds.append(f"mount --bind {shlex.quote(str(source))} {target}")
    cmds.append(f"mount --bind {shlex.quote(str(paths.resolv_conf))} /etc/resolv.conf")
    for name in layout.KERNEL_TUNABLES:
        fake = shlex.quote(str(paths.tunables / name.replace("/", ".")))
        target = f"/proc/sys/{name}"
        cmds += [f"mount --bind {fake} {target}", f"mount -o remount,bind,ro {target}"]
    return cmds


def namespace_setup(paths: NodePaths) -> str:
    """One script: `set -eu`, so the first failing command stops it (and names itself)."""
    lines = ["set -eux", *network_commands(), *mount_commands(paths), *guard_commands()]
    return "\n".join(lines) + "\n"
