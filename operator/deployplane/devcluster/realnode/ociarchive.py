"""OCI image archives without a daemon: writing small ones, naming any for containerd.

`write_image` makes a one-layer `FROM scratch` image (the pause binary; the tests'
busybox image) as an OCI archive: `oci-layout`, `index.json`, blobs. `containerd_stream`
copies any OCI or docker archive into a pipe, adding to each OCI manifest the full
normalized name containerd and the CRI look images up by (`docker.io/library/x:tag`
for `x:tag`, the name a pod's `image: x:tag` means), since `ctr images import` keeps a
bare OCI ref name such as `deployplane:dev` as it is.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

CONTAINERD_NAME = "io.containerd.image.name"
OCI_REF_NAME = "org.opencontainers.image.ref.name"
_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
_CONFIG = "application/vnd.oci.image.config.v1+json"
_LAYER = "application/vnd.oci.image.layer.v1.tar"


def normalize(ref: str) -> str:
    """Docker's reference normalization: `x:tag` -> `docker.io/library/x:tag`."""
    name, sep, digest = ref.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" not in last and not sep:
        name += ":latest"
    first, slash, _ = name.partition("/")
    if not slash or ("." not in first and ":" not in first and first != "localhost"):
        name = f"docker.io/{name}" if slash else f"docker.io/library/{name}"
    return name + (sep + digest if sep else "")


@dataclass(frozen=True)
class ImageFile:
    """One file of the image's only layer: `data` or a `symlink` target, or with
    `directory` a directory (`mode` 0o1777: one any user may write, as /tmp)."""

    path: str
    data: bytes = b""
    mode: int = 0o755
    symlink: str | None = None
    directory: bool = False


@dataclass(frozen=True)
class ImageSpec:
    ref: str
    files: Sequence[ImageFile]
    entrypoint: Sequence[str] = ()
    cmd: Sequence[str] = ()
    env: Sequence[str] = field(default=("PATH=/bin",))
    user: str = ""


def _layer(files: Sequence[ImageFile]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({str(Path(f.path).parent) for f in files} - {"."})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for f in files:
            info = tarfile.TarInfo(f.path)
            if f.directory:
                info.type, info.mode = tarfile.DIRTYPE, f.mode
                tar.addfile(info)
            elif f.symlink is not None:
                info.type, info.linkname = tarfile.SYMTYPE, f.symlink
                tar.addfile(info)
            else:
                info.size, info.mode = len(f.data), f.mode
                tar.addfile(info, io.BytesIO(f.data))
    return buf.getvalue()


def _descriptor(media_type: str, blob: bytes, **extra: Any) -> dict[str, Any]:
    return {
        "mediaType": media_type,
        "digest": f"sha256:{hashlib.sha256(blob).hexdigest()}",
        "size": len(blob),
        **extra,
    }


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))


def write_image(spec: ImageSpec, path: Path) -> Path:
    """Write `spec` as an OCI archive at `path` (linux/amd64, one uncompressed layer)."""
    layer = _layer(spec.files)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Entrypoint": list(spec.entrypoint) or None,
            "Cmd": list(spec.cmd) or None,
            "Env": list(spec.env),
            "User": spec.user,
        },
        "rootfs": {"type": "layers", "diff_ids": [_descriptor(_LAYER, layer)["digest"]]},
    }
    config_blob = json.dumps(config, sort_keys=True).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": _MANIFEST,
        "config": _descriptor(_CONFIG, config_blob),
        "layers": [_descriptor(_LAYER, layer)],
    }
    manifest_blob = json.dumps(manifest, sort_keys=True).encode()
    full = normalize(spec.ref)
    annotations = {CONTAINERD_NAME: full, OCI_REF_NAME: full.rsplit(":", 1)[-1]}
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [_descriptor(_MANIFEST, manifest_blob, annotations=annotations)],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tar:
        _add(tar, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        _add(tar, "index.json", json.dumps(index).encode())
        for blob in (layer, config_blob, manifest_blob):
            _add(tar, f"blobs/sha256/{hashlib.sha256(blob).hexdigest()}", blob)
    return path


def _named_index(data: bytes, name: str | None = None) -> tuple[bytes, list[str]]:
    index = json.loads(data)
    names = []
    for desc in index.get("manifests", []):
        annotations = desc.setdefault("annotations", {})
        if name is not None:
            annotations[OCI_REF_NAME] = normalize(name).rsplit(":", 1)[-1]
        ref = name or annotations.get(CONTAINERD_NAME) or annotations.get(OCI_REF_NAME)
        if ref:
            annotations[CONTAINERD_NAME] = normalize(ref)
            names.append(annotations[CONTAINERD_NAME])
    return json.dumps(index).encode(), list(dict.fromkeys(names))


def containerd_stream(archive: Path, out: IO[bytes], name: str | None = None) -> list[str]:
    """Copy `archive` to `out` with every OCI manifest fully named (`name` instead of
    the archive's own, when given: two builds of one name side by side); return the
    names (empty for a docker archive, whose RepoTags containerd normalizes itself)."""
    names: list[str] = []
    with tarfile.open(archive, "r:*") as src, tarfile.open(fileobj=out, mode="w|") as dst:
        for member in src:
            data = src.extractfile(member) if member.isfile() else None
            if member.name.lstrip("./") == "index.json" and data is not None:
                patched, names = _named_index(data.read(), name)
                member.size = len(patched)
                dst.addfile(member, io.BytesIO(patched))
            else:
                dst.addfile(member, data)
    return names
