"""The agent base the image-build tests build on: this checkout's, as
`tools/images/build.py agent-base` keeps it under its key (images/by-key/), since the
archive the emulator reads by default has one name for every checkout on the machine.

A first build takes minutes (the Python base from Debian packages, then the vendor's
server): far more than a test's timeout on a loaded machine. So it never runs inside a
test: `prepare()` runs the build once per test process before the first test
(tests/integration/conftest.py calls it when the image-build tests are selected; a cache
hit when `make test` or `make images` built it), and `archive()`, in a fixture, only
reads where it is, or fails naming `make images`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from deployplane.emulator.builds.imagebuild.buildah import archive_key

__all__ = ["archive", "prepare", "skip_reason"]

BUILD = Path(__file__).resolve().parents[2] / "tools" / "images" / "build.py"
HINT = "`make images` builds it (tools/images/build.py agent-base)"


def skip_reason() -> str | None:
    """Why image builds cannot run here (None: they can)."""
    if os.geteuid() != 0 or (shutil.which("buildah") is None and shutil.which("apt-get") is None):
        return "image builds need root and buildah (Debian's package)"
    return None


@dataclass(frozen=True)
class _Prepared:
    returncode: int
    output: str


_prepared: list[_Prepared] = []  # this process's build, once


def prepare() -> None:
    """Builds this checkout's agent base unless cached (waiting for another build of
    the machine's images meanwhile); its outcome is reported by `archive()`."""
    if _prepared:
        return
    done = subprocess.run(
        [sys.executable, str(BUILD), "agent-base"],
        capture_output=True,
        text=True,
        check=False,
    )
    _prepared.append(_Prepared(done.returncode, (done.stdout + done.stderr)[-3000:]))


def archive() -> Path:
    """This checkout's agent base archive, kept under its key; fails the calling test
    when it is not there."""
    if _prepared and _prepared[0].returncode != 0:
        failed = _prepared[0]
        pytest.fail(
            f"tools/images/build.py agent-base failed (exit {failed.returncode}) before the "
            f"tests; {HINT}:\n{failed.output}",
            pytrace=False,
        )
    kept = subprocess.run(
        [sys.executable, str(BUILD), "kept", "agent-base"],
        capture_output=True,
        text=True,
        check=True,
    )
    path = Path(kept.stdout.strip())
    if archive_key(path) is None:
        pytest.fail(f"no agent base of this checkout at {path}: {HINT}", pytrace=False)
    return path
