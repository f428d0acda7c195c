"""Images on the real node: the pause image, and importing archives into containerd.

No registry is reachable, so every image a pod runs is imported into the node's
containerd (namespace `k8s.io`, where the CRI looks): the pause image built from
kubernetes' pause.c at every start, every archive in the image cache
(`~/.cache/deployplane/images/*.tar`, where `make image` writes `deployplane:dev` and
the others) at `up`, and any archive later with `deployplane dev cluster load-image`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from deployplane.devcluster.errors import DevClusterError
from deployplane.devcluster.processes import ServerProcess
from deployplane.devcluster.realnode import layout, ociarchive
from deployplane.devcluster.realnode.sandbox import nsenter

HOLDER = "node-namespaces"


def image_cache() -> Path:
    cache = Path(os.environ.get("DEPLOYPLANE_CACHE", Path.home() / ".cache" / "deployplane"))
    return cache / "images"


def cached_archives() -> list[Path]:
    return sorted(image_cache().glob("*.tar"))


def pause_archive(pause_binary: Path, directory: Path) -> Path:
    spec = ociarchive.ImageSpec(
        ref=layout.PAUSE_IMAGE,
        files=[ociarchive.ImageFile("pause", pause_binary.read_bytes())],
        entrypoint=["/pause"],
        env=(),
    )
    return ociarchive.write_image(spec, directory / "pause.tar")


def ctr_argv(holder: int, ctr: Path, *args: str) -> list[str]:
    address = "/run/containerd/containerd.sock"
    return nsenter(holder, str(ctr), "--address", address, "-n", layout.CONTAINERD_NAMESPACE, *args)


def import_archive(
    holder: int, ctr: Path, archive: Path, *, unpack: bool = False, name: str | None = None
) -> list[str]:
    """Import one OCI or docker archive; return the names it gave (OCI archives): the
    archive's own, or `name` (an OCI archive imported beside another of its name).

    Not unpacked by default: the CRI unpacks an image when its first container is
    created, so a large image costs its unpacking once, when used, not at every `up`.
    """
    args = ["images", "import", "--snapshotter", layout.SNAPSHOTTER]
    argv = ctr_argv(holder, ctr, *args, *([] if unpack else ["--no-unpack"]), "-")
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert proc.stdin is not None
    try:
        names = ociarchive.containerd_stream(archive, proc.stdin, name)
    except (OSError, ValueError) as e:
        proc.kill()
        raise DevClusterError(f"cannot import {archive}: {e}") from e
    finally:
        proc.stdin.close()
    out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    if proc.wait() != 0:
        raise DevClusterError(f"ctr images import {archive} failed:\n{out}")
    return names


def import_archives(holder: int, ctr: Path, archives: Sequence[Path]) -> list[str]:
    names: list[str] = []
    for archive in archives:
        names += import_archive(holder, ctr, archive)
    return names


def tag(holder: int, ctr: Path, source: str, target: str) -> None:
    """Give the imported image `source` the name `target` too (both fully qualified),
    e.g. a stand-in for an image no registry here serves."""
    done = subprocess.run(
        ctr_argv(holder, ctr, "images", "tag", "--force", source, target),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if done.returncode != 0:
        raise DevClusterError(f"ctr images tag {source} {target} failed: {done.stderr.strip()}")


def list_images(holder: int, ctr: Path) -> list[str]:
    out = subprocess.run(
        ctr_argv(holder, ctr, "images", "list", "--quiet"),
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return out.stdout.split()


def load(procs: Sequence[ServerProcess], bin_dir: Path, archives: Sequence[Path]) -> list[str]:
    """`deployplane dev cluster load-image`: import into the running node of `procs`."""
    holder = next((p for p in procs if p.name == HOLDER and p.alive()), None)
    if holder is None:
        raise DevClusterError("the real node is not running")
    for archive in archives:
        if not archive.is_file():
            raise DevClusterError(f"{archive}: no such image archive")
    return import_archives(holder.pid, bin_dir / "ctr", archives)
