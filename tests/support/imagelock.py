"""The lock of tools/images/build.py (`~/.cache/deployplane/image-build/lock`), held by a
test that must read the archives of *this* checkout: the images directory holds one
`deployplane-dev.tar` for the whole machine, and another checkout's build (other code,
so another key) replaces it whenever it runs. Under the lock, `build.py` run with
`env()` and `pass_fds=(lock.fd,)` builds what is missing here without waiting for
itself, and no other build replaces an archive until the lock is released."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ImagesLock", "held"]

ENV = "DEPLOYPLANE_IMAGES_LOCK_FD"  # tools/images/build.py


def _lock_path() -> Path:
    cache = Path(os.environ.get("DEPLOYPLANE_CACHE") or Path.home() / ".cache" / "deployplane")
    return cache / "image-build" / "lock"


@dataclass(frozen=True)
class ImagesLock:
    fd: int

    def env(self) -> dict[str, str]:
        """The environment of a `build.py` run under this lock (with pass_fds=(fd,))."""
        return {**os.environ, ENV: str(self.fd)}


@contextlib.contextmanager
def held() -> Iterator[ImagesLock]:
    """Waits for the images lock and holds it until the block ends."""
    path = _lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield ImagesLock(lock.fileno())
