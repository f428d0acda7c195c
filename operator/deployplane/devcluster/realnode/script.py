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
# A bit neither kube-proxy (0x4000 masquerade, 0x8000 drop) nor the portmap CNI plugin
# (0x2000) uses.
GUARD_MARK = "0x20000000"
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
    """The egress guard. In `mangle` (neither kube-proxy nor the CNI plugins manage that
    table) FORWARD and OUTPUT jump to GUARD_CHAIN, which returns for allowed destinations
    and marks everything else with GUARD_MARK; `mangle` POSTROUTING drops marked packets,
    so none leaves the node whatever another table does. So that a refused connection
    fails at once instead of timing out, `filter` (where REJECT may run) rejects them
    first with an ICMP "administratively prohibited"."""
    mangle, filt = f"{iptables} -w -t mangle", f"{iptables} -w -t filter"
    marked = f"-m mark --mark {GUARD_MARK}/{GUARD_MARK}"
    cmds = [f"{mangle} -N {GUARD_CHAIN}"]
    cmds += [f"{mangle} -A {GUARD_CHAIN} -d {dest} -j RETURN" for dest in GUARD_ALLOWED]
    cmds.append(f"{mangle} -A {GUARD_CHAIN} -j MARK --set-xmark {GUARD_MARK}/{GUARD_MARK}")
    cmds += [f"{mangle} -A FORWARD -j {GUARD_CHAIN}", f"{mangle} -A OUTPUT -j {GUARD_CHAIN}"]
    cmds.append(f"{mangle} -A POSTROUTING {marked} -j DROP")
    reject = f"{marked} -j REJECT --reject-with icmp-admin-prohibited"
    cmds += [f"{filt} -I FORWARD 1 {reject}", f"{filt} -I OUTPUT 1 {reject}"]
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
