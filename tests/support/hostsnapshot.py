"""What the real node must leave as it found it: the host's network and mounts.

`snapshot()` records the host's links, addresses, routes and rules, iptables (nft and
legacy, every table, rules only: no counters), `ip_forward`, the mount table and the
named network namespaces; two snapshots compare equal when nothing changed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

# The `-save` tools dump only the tables that exist (`iptables -t x -S` would create a
# legacy table just by looking); comments (dates, warnings) and counters are dropped.
_SAVE = ("iptables-nft-save", "iptables-legacy-save", "ip6tables-nft-save", "ip6tables-legacy-save")


def _out(*argv: str) -> str:
    if shutil.which(argv[0]) is None:
        return f"<{argv[0]} not installed>"
    done = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    return done.stdout + done.stderr


def _links() -> str:
    # Without statistics or per-link counters; `ip -o link` lines are stable.
    return re.sub(r"\s+link/\S+ \S+ brd \S+", "", _out("ip", "-o", "link", "show"))


# Where a mount of the node could leak to besides its state directory: the directories
# it makes private, the files it covers (/proc/sys/..., /etc/resolv.conf), sysfs and
# cgroups. Other work on this shared machine mounts elsewhere (buildah's storage under
# ~/.cache or /tmp), which must not fail the comparison.
MOUNT_PREFIXES = ("/run", "/var", "/proc", "/sys", "/etc")


def _mounts(prefixes: tuple[str, ...]) -> list[str]:
    with open("/proc/self/mountinfo") as f:
        # Mount point, options, type and source: not the ids, which a remount changes.
        rows = []
        for line in f:
            left, _, right = line.partition(" - ")
            fields = left.split()
            if fields[4] == "/" or fields[4].startswith(prefixes):
                rows.append(" ".join([fields[4], fields[5], *right.split()[:2]]))
    return sorted(rows)


def snapshot(state_dir: Path) -> dict[str, object]:
    """The host now; mounts compared under MOUNT_PREFIXES and the node's `state_dir`."""
    state: dict[str, object] = {
        "links": _links(),
        "addresses": _out("ip", "-o", "addr", "show"),
        "routes": _out("ip", "route", "show", "table", "all"),
        "rules": _out("ip", "rule", "show"),
        "netns": _out("ip", "netns", "list"),
        "mounts": _mounts((*MOUNT_PREFIXES, str(state_dir))),
    }
    for path in (
        "/proc/sys/net/ipv4/ip_forward",
        "/proc/sys/vm/overcommit_memory",
        "/proc/sys/kernel/panic",
        "/proc/sys/kernel/panic_on_oops",
    ):
        with open(path) as f:
            state[path] = f.read()
    for save in _SAVE:
        lines = _out(save).splitlines()
        state[save] = [re.sub(r"\[\d+:\d+\]", "", x) for x in lines if not x.startswith("#")]
    return state


def diff(before: dict[str, object], after: dict[str, object]) -> dict[str, object]:
    """What changed, per key: the lines gone and the lines new."""
    changed: dict[str, object] = {}
    for key in before.keys() | after.keys():
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        old_lines = set(old if isinstance(old, list) else str(old).splitlines())
        new_lines = set(new if isinstance(new, list) else str(new).splitlines())
        changed[key] = {"gone": sorted(old_lines - new_lines), "new": sorted(new_lines - old_lines)}
    return changed
