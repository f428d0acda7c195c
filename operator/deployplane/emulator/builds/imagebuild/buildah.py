"""buildah, the daemonless image builder (Debian's package; tools/images/ensure.sh
installs it), over the build's own storage under the build directory, and the agent
base it builds on: imported once from the base's OCI archive (`make images` writes it),
named by the key recorded in that archive.

Builds in other processes may share the storage (buildah locks it itself). An older
base is untagged when a newer one is imported, but never while a build uses it: a build
holds a shared lock on its base's lock file (`locks/base-<key>.lock`) for as long as it
runs, and the untagging takes that lock exclusively, or leaves the base for later."""

from __future__ import annotations

import contextlib
import fcntl
import json
import subprocess
import tarfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from deployplane.emulator.builds.imagebuild.commands import Emit, run_streamed, scrubbed_env

__all__ = ["KEY_ANNOTATION", "Buildah", "archive_key", "base_archive_key"]

KEY_ANNOTATION = "io.deployplane.build-key"  # tools/images/recipes.py
_BASE_NAME = "localhost/deployplane-agent-base"


def archive_key(path: Path) -> str | None:
    """The key an OCI archive of tools/images records (None: not there, or not ours)."""
    try:
        with tarfile.open(path) as tar:
            member = tar.extractfile("index.json")
            index = json.load(member) if member else {}
    except (OSError, KeyError, tarfile.TarError, ValueError):
        return None
    annotations = (index.get("manifests") or [{}])[0].get("annotations") or {}
    key = annotations.get(KEY_ANNOTATION)
    return key if isinstance(key, str) else None


def base_archive_key(archive: Path) -> str:
    """The agent base archive's key; FileNotFoundError when there is none."""
    key = archive_key(archive)
    if key is None:
        raise FileNotFoundError(f"no agent base image at {archive} (make images builds it)")
    return key


class Buildah:
    """buildah with its storage in `root` (chroot isolation: no daemon, no runtime)."""

    def __init__(self, root: Path, program: str = "buildah") -> None:
        self.root = root
        self._program = program
        self._env = scrubbed_env(root)

    def _cmd(self, args: Sequence[str]) -> list[str]:
        return [self._program, "--root", str(self.root / "storage"),
                "--runroot", str(self.root / "run"), *args]  # fmt: skip

    def output(self, *args: str) -> str:
        done = subprocess.run(
            self._cmd(args), check=True, capture_output=True, text=True, env=self._env
        )
        return done.stdout.strip()

    def streamed(self, emit: Emit | None, *args: str) -> list[str]:
        return run_streamed(self._cmd(args), emit, env=self._env)

    def has_image(self, ref: str) -> bool:
        done = subprocess.run(
            self._cmd(["inspect", "--type", "image", ref]), capture_output=True, env=self._env
        )
        return done.returncode == 0

    @contextlib.contextmanager
    def base(self, archive: Path, key: str) -> Iterator[str]:
        """The local name of the agent base of `key`, imported from `archive` unless
        there, kept (not untagged by another build) until the block ends."""
        local = f"{_BASE_NAME}:{key[:16]}"
        with self._base_lock(local, fcntl.LOCK_SH):
            if not self.has_image(local):
                image_id = self.output("pull", "--quiet", f"oci-archive:{archive}")
                self.output("tag", image_id.splitlines()[-1], local)
                self._untag_older_bases(local)
            yield local

    def _untag_older_bases(self, local: str) -> None:
        """An older base is stale: untagged (its layers go once no image uses them),
        unless a build still holds it."""
        names = self.output("images", "--format", "{{.Name}}:{{.Tag}}").split()
        for name in names:
            if not name.startswith(_BASE_NAME + ":") or name == local:
                continue
            exclusive = self._base_lock(name, fcntl.LOCK_EX | fcntl.LOCK_NB)
            with contextlib.suppress(BlockingIOError), exclusive:
                self.remove(images=[name])

    @contextlib.contextmanager
    def _base_lock(self, local: str, operation: int) -> Iterator[None]:
        locks = self.root / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        with open(locks / f"base-{local.rsplit(':', 1)[1]}.lock", "a") as file:
            fcntl.flock(file, operation)  # released when the file closes
            yield

    def remove(self, *, containers: Sequence[str] = (), images: Sequence[str] = ()) -> None:
        for container in containers:
            subprocess.run(self._cmd(["rm", container]), capture_output=True, env=self._env)
        for image in images:
            subprocess.run(self._cmd(["rmi", image]), capture_output=True, env=self._env)
