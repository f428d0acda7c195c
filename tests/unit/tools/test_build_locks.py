"""The tool builds share one cache (~/.cache/deployplane) between every checkout and test
run on the machine, so each holds a lock while it builds: tools/k8s/build.sh takes
`k8s/build.lock` only when it finds a tool missing and then looks again (another build
may have made it meanwhile); tools/images/build.py holds `image-build/lock`, or the one
its caller holds already (DEPLOYPLANE_IMAGES_LOCK_FD, tests/support/imagelock.py).

Each test runs the script on a cache of its own (DEPLOYPLANE_CACHE) with a fake tool in
it, and a `go` on PATH that fails: a script that built instead of waiting fails."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BUILD_SH = ROOT / "tools" / "k8s" / "build.sh"
IMAGES_BUILD = ROOT / "tools" / "images" / "build.py"


def kstatus_want() -> str:
    versions = dict(
        line.split("=", 1)
        for line in (ROOT / "tools/k8s/versions.env").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    source = (ROOT / "tools/k8s/kstatus/main.go").read_bytes()
    return f"v{versions['KSTATUS_VERSION']}-{hashlib.sha1(source).hexdigest()[:12]}"


def env_for(cache: Path, tmp_path: Path) -> dict[str, str]:
    fake_bin = tmp_path / "fake-bin"
    fake_bin.mkdir(exist_ok=True)
    go = fake_bin / "go"
    go.write_text("#!/bin/sh\necho 'go must not run: the tool was built' >&2\nexit 97\n")
    go.chmod(0o755)
    return {**os.environ, "DEPLOYPLANE_CACHE": str(cache), "PATH": f"{fake_bin}:/usr/bin:/bin"}


def bin_dir(env: dict[str, str]) -> Path:
    done = subprocess.run(
        ["bash", str(BUILD_SH), "path"], env=env, capture_output=True, text=True, check=True
    )
    return Path(done.stdout.strip())


def install_fake_kstatus(bin_path: Path) -> None:
    (bin_path / "kstatus").write_text("#!/bin/sh\n")
    (bin_path / "kstatus").chmod(0o755)
    (bin_path / ".kstatus.stamp").write_text(kstatus_want() + "\n")


@contextlib.contextmanager
def holding(path: Path) -> Iterator[int]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield lock.fileno()


def blocked_on_a_lock(pid: int) -> bool:
    """`pid` waits for a file lock (/proc/locks lists a waiter as `-> FLOCK ...`)."""
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields and fields[fields.index("->") + 4] == str(pid):
            return True
    return False


def test_a_built_tool_is_found_without_the_lock(tmp_path: Path) -> None:
    env = env_for(tmp_path / "cache", tmp_path)
    install_fake_kstatus(bin_dir(env))
    with holding(tmp_path / "cache" / "k8s" / "build.lock"):  # another build runs meanwhile
        done = subprocess.run(
            ["bash", str(BUILD_SH), "kstatus"], env=env, capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 0, done.stderr
    assert "kstatus v" in done.stdout
    assert ": cached" in done.stdout


def test_a_missing_tool_waits_for_the_build_under_way_and_takes_its_result(
    tmp_path: Path,
) -> None:
    env = env_for(tmp_path / "cache", tmp_path)
    bin_path = bin_dir(env)
    with holding(tmp_path / "cache" / "k8s" / "build.lock"):
        script = subprocess.Popen(
            ["bash", str(BUILD_SH), "kstatus"], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert script.stdout is not None
        first = script.stdout.readline()
        assert "waiting for another build of the tools" in first, first
        # what the other build leaves: the binary, then its stamp
        install_fake_kstatus(bin_path)
    out, err = script.communicate(timeout=60)
    assert script.returncode == 0, err
    assert "kstatus v" in out
    assert ": cached" in out


def images_build_lock(
    marker: Path, env: dict[str, str], fds: tuple[int, ...] = ()
) -> subprocess.Popen[str]:
    """Starts tools/images/build.py's `hold_lock()` in a process of its own, which then
    prints `marker`'s text; returns a handle on it."""
    program = (
        f"import sys; sys.path.insert(0, {str(IMAGES_BUILD.parent)!r}); import build; "
        f"build.hold_lock(); print(open({str(marker)!r}).read())"
    )
    return subprocess.Popen(
        [sys.executable, "-c", program], stdout=subprocess.PIPE, text=True, env=env, pass_fds=fds
    )


def test_images_build_waits_for_the_lock_unless_its_caller_holds_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {**os.environ, "DEPLOYPLANE_CACHE": str(cache)}
    marker = tmp_path / "marker"
    marker.write_text("held by the caller")
    with holding(cache / "image-build" / "lock") as fd:
        inherited = {**env, "DEPLOYPLANE_IMAGES_LOCK_FD": str(fd)}
        out, _ = images_build_lock(marker, inherited, (fd,)).communicate(timeout=60)
        assert out.strip() == "held by the caller"
        waiting = images_build_lock(marker, env)
        deadline = time.monotonic() + 60  # a bound for a hang, not a figure
        while not blocked_on_a_lock(waiting.pid):
            assert waiting.poll() is None, "took the lock another process holds"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        marker.write_text("released by the caller")
    out, _ = waiting.communicate(timeout=60)
    assert out.strip() == "released by the caller"


FAKE_GO_BUILD = """#!/bin/sh
# go as the build script calls it for kstatus: `mod init`, `get` and `mod tidy` pass;
# `build ... -o OUT .` writes a new binary to OUT and logs OUT and what the tool's
# final path held meanwhile.
[ "$1" = build ] || exit 0
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
printf '#!/bin/sh\\necho new\\n' >"$out"
chmod +x "$out"
{ echo "$out"; cat "$FINAL"; } >"$LOG"
"""


def test_a_rebuilt_tool_replaces_the_old_one_whole(tmp_path: Path) -> None:
    """A tool whose stamp names another version (another checkout's) is rebuilt under a
    temporary name beside it and renamed over it: until then the tool's path holds the
    old binary whole, never a part of the new one."""
    env = env_for(tmp_path / "cache", tmp_path)
    bin_path = bin_dir(env)
    (bin_path / "kstatus").write_text("#!/bin/sh\necho old\n")
    (bin_path / "kstatus").chmod(0o755)
    (bin_path / ".kstatus.stamp").write_text("v0-another-checkout\n")
    go = tmp_path / "fake-bin" / "go"
    go.write_text(FAKE_GO_BUILD)
    log = tmp_path / "go.log"
    env = {**env, "LOG": str(log), "FINAL": str(bin_path / "kstatus")}
    done = subprocess.run(
        ["bash", str(BUILD_SH), "kstatus"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    out, *held_meanwhile = log.read_text().splitlines()
    assert Path(out).parent == bin_path  # on the same file system: a rename
    assert Path(out) != bin_path / "kstatus"
    assert held_meanwhile == ["#!/bin/sh", "echo old"]
    ran = subprocess.run([str(bin_path / "kstatus")], capture_output=True, text=True, check=True)
    assert ran.stdout == "new\n"
    assert (bin_path / ".kstatus.stamp").read_text() == kstatus_want() + "\n"
    assert sorted(p.name for p in bin_path.iterdir()) == [".kstatus.stamp", "kstatus"]
