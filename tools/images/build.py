"""Build the project's images without a container engine, and export them as OCI archives.

    python3 tools/images/build.py app         # `make image`: the Dockerfile as deployplane:dev
    python3 tools/images/build.py dataplane   # PostgreSQL with pgvector, Redis
    python3 tools/images/build.py agent-base  # the agent servers' base (langgraph-api)
    python3 tools/images/build.py all         # app, dataplane and agent-base
    python3 tools/images/build.py dir         # print the images directory
    python3 tools/images/build.py kept agent-base  # print where this checkout's agent
                                              # base is kept by its key (by-key/)

Bases come from Debian packages (mmdebstrap rootfs, `FROM scratch` + ADD), builds from
buildah (chroot isolation, host network), both Debian packages installed by
tools/images/ensure.sh. Everything lives under $DEPLOYPLANE_CACHE (~/.cache/deployplane):
archives in images/ (what `deployplane dev cluster load-image` imports), buildah's
storage and the rootfs tarballs in image-build/. Each archive carries the key it was
built from (recipes.py); an archive whose key matches is a cache hit and nothing runs.

Checkouts of other code on one machine want other keys under the same archive name:
each archive is also kept under its key in images/by-key/ (a hard link, the last
KEPT_PER_NAME of each name), so that one checkout's archive is put back by a rename
after another's build, not built again, and a test can read its own by key.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recipes
from recipes import DebianImage

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("DEPLOYPLANE_CACHE") or Path.home() / ".cache/deployplane")
IMAGES = CACHE / "images"
KEYED = IMAGES / "by-key"
KEPT_PER_NAME = 3
WORK = CACHE / "image-build"
LOCK = WORK / "lock"
LOCK_FD_ENV = "DEPLOYPLANE_IMAGES_LOCK_FD"
_held: list[object] = []  # the lock file, open until the process exits
# The machine's CA certificates and pip configuration, mounted read-only into the RUN
# steps when present: a package index behind a TLS-inspecting proxy is trusted only
# through this machine's bundle. Nothing of them lands in a layer.
HOST_MOUNTS = ("/etc/ssl/certs", "/etc/pip.conf")


def log(message: str) -> None:
    print(f"== images: {message}", flush=True)


def buildah(*args: str, capture: bool = False) -> str:
    cmd = ["buildah", "--root", str(WORK / "storage"), "--runroot", str(WORK / "run"), *args]
    done = subprocess.run(cmd, check=True, text=True, stdout=subprocess.PIPE if capture else None)
    return done.stdout or ""


def has_image(ref: str) -> bool:
    out = buildah("images", "--format", "{{.Name}}:{{.Tag}}", capture=True)
    return ref in out.split()


def archive_key(path: Path) -> str | None:
    """The key recorded in an archive's index.json (None: no archive, or not ours)."""
    try:
        with tarfile.open(path) as tar:
            member = tar.extractfile("index.json")
            index = json.load(member) if member else {}
    except (OSError, KeyError, tarfile.TarError, ValueError):
        return None
    annotations = (index.get("manifests") or [{}])[0].get("annotations") or {}
    key = annotations.get(recipes.KEY_ANNOTATION)
    return key if isinstance(key, str) else None


def keyed(out: Path, key: str) -> Path:
    """Where the archive `out` of `key` is kept (images/by-key/<name>-<key>.tar)."""
    return KEYED / f"{out.stem}-{key[:16]}.tar"


def _link_over(source: Path, target: Path) -> None:
    """`target` becomes a hard link to `source`, at once (a link under a temporary
    name, then a rename over `target`)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.link")
    temporary.unlink(missing_ok=True)
    os.link(source, temporary)
    os.replace(temporary, target)


def keep(out: Path, key: str) -> None:
    """Keeps the archive just written to `out` under its key; drops the oldest kept
    archives of the same name beyond KEPT_PER_NAME."""
    _link_over(out, keyed(out, key))
    kept = sorted(KEYED.glob(f"{out.stem}-" + "?" * 16 + ".tar"), key=lambda p: p.stat().st_mtime)
    for old in kept[:-KEPT_PER_NAME]:
        old.unlink(missing_ok=True)


def cached(out: Path, key: str) -> bool:
    """`out` holds the archive of `key`, or now does again: one kept under that key
    is put back (an archive of other code was written over it)."""
    if archive_key(out) == key:
        if not keyed(out, key).exists():  # built before archives were kept by key
            _link_over(out, keyed(out, key))
        return True
    if archive_key(keyed(out, key)) != key:
        return False
    _link_over(keyed(out, key), out)
    log(f"{out.name}: the archive of key {key[:16]} put back from {KEYED.name}/")
    return True


def rootfs(image: DebianImage, key: str) -> Path:
    """The mmdebstrap rootfs tarball of a Debian image (cached by the image's key)."""
    out = WORK / "rootfs" / f"{recipes.archive_name(image.ref)[:-4]}-{key[:16]}.tar"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    for stale in out.parent.glob(f"{recipes.archive_name(image.ref)[:-4]}-*.tar"):
        stale.unlink()
    cmd = ["mmdebstrap", "--quiet", *recipes.mmdebstrap_options(image.release)]
    cmd += [f"--dpkgopt={option}" for option in recipes.DPKG_OPTIONS]
    cmd += [f"--customize-hook={hook}" for hook in image.hooks]
    # mmdebstrap picks the format by the extension: a tarball ending .tar
    part = out.with_suffix(".part.tar")
    cmd += [f"--include={','.join(image.packages)}", image.release, str(part)]
    cmd += list(recipes.mirrors(image.release))
    started = time.monotonic()
    subprocess.run(cmd, check=True)
    os.replace(part, out)
    log(f"rootfs {out.name}: {time.monotonic() - started:.0f} s, {out.stat().st_size >> 20} MiB")
    return out


def debian_image(image: DebianImage) -> tuple[str, str]:
    """Build a Debian image into buildah's storage unless there; (local ref, key)."""
    key = recipes.debian_key(image)
    local = recipes.local_ref(image, key)
    if has_image(local):
        return local, key
    tarball = rootfs(image, key)
    with tempfile.TemporaryDirectory(dir=WORK) as context:
        shutil.copyfile(tarball, Path(context) / "rootfs.tar")
        for name in image.files:
            shutil.copy2(recipes.HERE / name, Path(context) / name)
        containerfile = f"FROM scratch\nADD rootfs.tar /\n{image.containerfile}"
        (Path(context) / "Containerfile").write_text(containerfile)
        buildah("bud", "--quiet", "--isolation", "chroot", "--network", "host",
                "--layers=false", "-t", local, context)  # fmt: skip
    # The same image under an older key is stale: untag it (layers still used stay).
    repository = local.rsplit(":", 1)[0]
    for name in buildah("images", "--format", "{{.Name}}:{{.Tag}}", capture=True).split():
        if name.rsplit(":", 1)[0] == repository and name != local:
            subprocess.run(["buildah", "--root", str(WORK / "storage"), "--runroot",
                            str(WORK / "run"), "rmi", name], check=False)  # fmt: skip
    return local, key


def export(local: str, ref: str, key: str, also: tuple[str, ...] = ()) -> Path:
    """Write `local` as an OCI archive named for `ref` (recipes.archive_name), with the
    annotations `ctr images import` names it by and the key it was built from; each of
    `also` is one more descriptor of the same manifest under that name."""
    IMAGES.mkdir(parents=True, exist_ok=True)
    out = IMAGES / recipes.archive_name(ref)
    with tempfile.TemporaryDirectory(dir=WORK) as tmp:
        layout = Path(tmp) / "layout"
        buildah("push", "--quiet", local, f"oci:{layout}")
        index = json.loads((layout / "index.json").read_text())
        (manifest,) = index["manifests"]
        index["manifests"] = [
            {**manifest, "annotations": recipes.index_annotations(name, key)}
            for name in (ref, *also)
        ]
        (layout / "index.json").write_text(json.dumps(index))
        part = Path(tmp) / "archive.tar"
        with tarfile.open(part, "w") as tar:  # index.json first: archive_key reads it fast
            for name in ("index.json", "oci-layout"):
                tar.add(layout / name, arcname=name)
            tar.add(layout / "blobs", arcname="blobs")
        os.replace(part, out)
    keep(out, key)
    return out


def app_target() -> tuple[Path, str, dict[str, str]]:
    """The project's image: (archive, key, build arguments)."""
    base_key = recipes.debian_key(recipes.PYTHON_BASE)
    args = {"BASE_IMAGE": recipes.local_ref(recipes.PYTHON_BASE, base_key)}
    key = recipes.app_key(ROOT, base_key, args)
    return IMAGES / recipes.archive_name(recipes.APP_REF), key, args


def build_app() -> Path:
    """`make image`: the Dockerfile as deployplane:dev on the Debian python base."""
    started = time.monotonic()
    out, key, args = app_target()
    if cached(out, key):
        log(f"{out} is up to date (cache hit)")
        return out
    debian_image(recipes.PYTHON_BASE)
    # No layer cache: buildah 1.28 reused a stale `COPY operator` layer after a source
    # change (the chart's operator pod ran the old code). The archive's key is the cache.
    cmd = ["bud", "--isolation", "chroot", "--network", "host", "--no-cache", "-f", "Dockerfile"]
    cmd += [f"--build-arg={name}={value}" for name, value in args.items()]
    cmd += [f"--volume={path}:{path}:ro" for path in HOST_MOUNTS if os.path.exists(path)]
    cmd += ["-t", "localhost/deployplane:dev", str(ROOT)]
    buildah(*cmd)
    export("localhost/deployplane:dev", recipes.APP_REF, key)
    log(f"{out}: built in {time.monotonic() - started:.0f} s, {out.stat().st_size >> 20} MiB")
    return out


def build_dataplane() -> list[Path]:
    outs = []
    for image in recipes.DATAPLANE:
        started = time.monotonic()
        key = recipes.debian_key(image)
        out = IMAGES / recipes.archive_name(image.ref)
        if cached(out, key):
            log(f"{out} is up to date (cache hit)")
        else:
            local, _ = debian_image(image)
            export(local, image.ref, key, image.also)
            size = out.stat().st_size >> 20
            log(f"{out} ({image.ref}): built in {time.monotonic() - started:.0f} s, {size} MiB")
        outs.append(out)
    return outs


def agent_base_target() -> tuple[Path, str]:
    key = recipes.agent_base_key(recipes.debian_key(recipes.PYTHON_BASE))
    return IMAGES / recipes.archive_name(recipes.AGENT_BASE_REF), key


def host_wheels(requirements: Path, out: Path) -> None:
    """The pinned wheels, downloaded (or built from an sdist) on the host by pip, with
    the requirements file beside them (the RUN step reads it from the mount)."""
    if (out / requirements.name).exists():
        return
    part = out.with_name(out.name + ".part")
    shutil.rmtree(part, ignore_errors=True)
    part.mkdir(parents=True)
    cmd = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(part)]
    subprocess.run([*cmd, "-r", str(requirements)], check=True)
    shutil.copyfile(requirements, part / requirements.name)
    os.replace(part, out)


def build_agent_base() -> Path:
    """The agent servers' base: the Python base plus the vendor's server from wheels."""
    started = time.monotonic()
    out, key = agent_base_target()
    if cached(out, key):
        log(f"{out} is up to date (cache hit)")
        return out
    base, _ = debian_image(recipes.PYTHON_BASE)
    requirements = (recipes.HERE / recipes.AGENT_BASE_REQUIREMENTS).read_bytes()
    wheels = WORK / "wheels" / f"agent-base-{hashlib.sha256(requirements).hexdigest()[:16]}"
    host_wheels(recipes.HERE / recipes.AGENT_BASE_REQUIREMENTS, wheels)
    local = f"localhost/deployplane-agent-base:{key[:16]}"
    with tempfile.TemporaryDirectory(dir=WORK) as context:
        shutil.copy2(recipes.HERE / recipes.AGENT_SERVER, Path(context) / recipes.AGENT_SERVER)
        containerfile = f"FROM {base}\n{recipes.AGENT_BASE_CONTAINERFILE}"
        (Path(context) / "Containerfile").write_text(containerfile)
        # pip --no-index: no download (chroot isolation has the host's network only)
        buildah("bud", "--quiet", "--isolation", "chroot", "--network", "host",
                "--layers=false", f"--volume={wheels}:/wheels:ro", "-t", local, context)  # fmt: skip
    export(local, recipes.AGENT_BASE_REF, key)
    log(f"{out}: built in {time.monotonic() - started:.0f} s, {out.stat().st_size >> 20} MiB")
    return out


def hold_lock() -> None:
    """One build at a time on this machine (two checkouts' test runs, or make image
    twice): the second waits, then finds built what the first built. Held until the
    process exits. A caller that holds the lock already (a test module that must read
    the archives it built before anyone replaces them, tests/support/imagelock.py)
    passes its open lock file as the descriptor in DEPLOYPLANE_IMAGES_LOCK_FD: a lock
    on that same open file is granted at once."""
    WORK.mkdir(parents=True, exist_ok=True)
    inherited = os.environ.get(LOCK_FD_ENV)
    if inherited:
        fcntl.flock(int(inherited), fcntl.LOCK_EX)
        return
    lock = open(LOCK, "w")  # noqa: SIM115 (held until the process exits)
    _held.append(lock)
    fcntl.flock(lock, fcntl.LOCK_EX)


def up_to_date(what: str) -> bool:
    """Every archive `what` names is there with its current key, and kept under it
    (read without the lock: an archive is replaced whole, by rename)."""
    wanted = [app_target()[:2]] if what in ("app", "all") else []
    if what in ("dataplane", "all"):
        wanted += [
            (IMAGES / recipes.archive_name(i.ref), recipes.debian_key(i)) for i in recipes.DATAPLANE
        ]
    if what in ("agent-base", "all"):
        wanted.append(agent_base_target())
    return all(archive_key(out) == key and keyed(out, key).exists() for out, key in wanted)


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "app"
    if what == "dir":
        print(IMAGES)
        return 0
    if what == "kept" and argv[1:] == ["agent-base"]:
        print(keyed(*agent_base_target()))
        return 0
    if what not in ("app", "dataplane", "agent-base", "all"):
        print(__doc__, file=sys.stderr)
        return 2
    started = time.monotonic()
    if up_to_date(what):
        elapsed = time.monotonic() - started
        log(f"{what}: every archive in {IMAGES} is up to date (cache hit, {elapsed:.1f} s)")
        return 0
    subprocess.run(["bash", str(recipes.HERE / "ensure.sh")], check=True)
    hold_lock()
    if what in ("app", "all"):
        build_app()
    if what in ("dataplane", "all"):
        build_dataplane()
    if what in ("agent-base", "all"):
        build_agent_base()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
