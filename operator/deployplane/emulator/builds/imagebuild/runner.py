"""One remote build, start to end, off the event loop: unpack the upload (`extract`,
unprivileged), lay it out (`layout`), build the user's dependencies into wheels on the
host (pip, scrubbed environment, unprivileged), then with buildah on the agent base one
layer of dependencies (installed offline from those wheels) and one of source, the
import check of every graph inside the image (unprivileged, `check`), and the image
written as an OCI archive. Cached by content: the same upload on the same base is the
same image, built once.

Several builders may share one work directory (two emulators, or test processes, on one
machine): each build has a directory and intermediate image names of its own, and an
archive lands in the output directory whole (a temporary name in that directory, then a
rename), so a reader sees no archive or a complete one."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shlex
import shutil
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from deployplane.emulator.builds.imagebuild import layout
from deployplane.emulator.builds.imagebuild.buildah import KEY_ANNOTATION, Buildah, base_archive_key
from deployplane.emulator.builds.imagebuild.commands import Emit, ProcessFailed, run_streamed
from deployplane.emulator.builds.imagebuild.extract import (
    UNPRIVILEGED,
    UnsafeArchive,
    extract_unprivileged,
)
from deployplane.emulator.builds.imagebuild.graphimport import CHECK_SCRIPT
from deployplane.emulator.builds.tarballcheck import MAX_UNPACKED_BYTES
from deployplane.emulator.settings import ImageBuildConfig

__all__ = ["BuildFailed", "BuiltImage", "build_image", "image_key", "write_archive"]

RECIPE = "1"  # bumped when the way an upload becomes an image changes
SITE_PACKAGES = "/opt/python/lib/python3.11/site-packages"  # the agent base's venv
MAX_CONFIG_BYTES = 1024 * 1024
# The machine's CA certificates and pip's global configuration, mounted read-only into
# pip's container (a package index behind a TLS-inspecting proxy is trusted only through
# this machine's bundle, as in tools/images/build.py); no credential is in either.
HOST_MOUNTS = ("/etc/ssl/certs", "/etc/pip.conf")


class BuildFailed(Exception):
    """The build failed; the message is the reason, the build log's last line."""


@dataclass(frozen=True)
class BuiltImage:
    ref: str
    archive: Path
    cached: bool


def content_digest(data: bytes) -> str:
    """The sha256 of the upload's tar stream, uncompressed: the same files give the same
    digest whatever gzip's header says (its time stamp differs at every `langgraph
    deploy`). Bounded as unpacking is; a stream that does not decompress is digested
    as it is (its unpacking fails with the reason)."""
    digest = hashlib.sha256()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            total = 0
            while chunk := stream.read(1 << 20):
                total += len(chunk)
                if total > MAX_UNPACKED_BYTES + (1 << 20):
                    break
                digest.update(chunk)
    except (OSError, EOFError):
        return hashlib.sha256(data).hexdigest()
    return digest.hexdigest()


def image_key(upload_digest: str, config_path: str, project: str, base_key: str) -> str:
    parts = {"upload": upload_digest, "config": config_path, "project": project,
             "base": base_key, "recipe": RECIPE}  # fmt: skip
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _own_dir(path: Path) -> Path:
    """A fresh directory the unprivileged user owns (when we are root)."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    if os.geteuid() == 0:
        os.chown(path, UNPRIVILEGED, UNPRIVILEGED)
    return path


def _build_dir(builds: Path, label: str) -> Path:
    """A new directory for one build, `<label>-<random>` in `builds`, that no other
    build (of the same upload, or in another process) ever uses; owned as `_own_dir`."""
    builds.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=builds))
    path.chmod(0o755)
    if os.geteuid() == 0:
        os.chown(path, UNPRIVILEGED, UNPRIVILEGED)
    return path


def write_archive(layout_dir: Path, archive: Path) -> None:
    """The OCI layout `layout_dir` as the tar archive `archive`, which appears whole:
    written under a temporary name of its own in the same directory, then renamed
    (another writer of the same archive writes its own temporary file)."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{archive.name}.", suffix=".part", dir=archive.parent)
    os.close(fd)
    part = Path(name)
    try:
        part.chmod(0o644)
        with tarfile.open(part, "w") as tar:  # index.json first: archive_key reads it fast
            for entry in ("index.json", "oci-layout", "blobs"):
                tar.add(layout_dir / entry, arcname=entry)
        part.replace(archive)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


def _unpack(data: bytes, build: Path, emit: Emit) -> Path:
    tarball = build / "source.tar.gz"
    tarball.write_bytes(data)
    src = _own_dir(build / "src")
    try:
        count = extract_unprivileged(tarball, src)
    except UnsafeArchive as exc:
        raise BuildFailed(str(exc)) from None
    emit("INFO", f"Unpacked {count} archive members")
    return src


def _plan(src: Path, config_path: str, project: str, emit: Emit) -> layout.BuildPlan:
    config_file = src / os.path.normpath(config_path)
    if not config_file.is_file() or config_file.is_symlink():
        raise BuildFailed(f"config file {config_path} not found in the source archive")
    if config_file.stat().st_size > MAX_CONFIG_BYTES:
        raise BuildFailed(f"config file {config_path} is larger than 1 MiB")
    try:
        config = json.loads(config_file.read_bytes())
    except (ValueError, UnicodeDecodeError):
        raise BuildFailed(f"config file {config_path} is not valid JSON") from None
    if not isinstance(config, dict):
        raise BuildFailed(f"config file {config_path} is not a JSON object")

    def listdir(rel: str) -> list[str] | None:
        path = src / rel
        if path.is_symlink() or not path.is_dir() or not path.resolve().is_relative_to(src):
            return None
        return sorted(os.listdir(path))

    try:
        plan = layout.plan_build(config, config_path, listdir, project=project)
    except layout.LayoutError as exc:
        raise BuildFailed(str(exc)) from None
    for warning in plan.warnings:
        emit("WARNING", warning)
    for archive_dir, container_dir in plan.copies:
        emit("INFO", f"Source {archive_dir} -> {container_dir}")
    return plan


def _wheels(buildah: Buildah, base: str, plan: layout.BuildPlan, src: Path, build: Path,
            emit: Emit) -> Path | None:  # fmt: skip
    """The user's dependencies as wheels, by pip on the build host, but inside a
    container of the base as the unprivileged user: a setup.py it runs sees the source
    and the wheels, not the host (and gets the image's Python); none of the emulator's
    environment reaches it. Resolved against the base's versions (`pip freeze`).
    None when there are none."""
    args = list(plan.requirements)
    for rel in plan.requirement_files:
        args += ["-r", f"/src/{rel}"]
    args += [f"/src/{rel}" for rel in plan.local_packages]
    if not args:
        emit("INFO", "No dependencies to install")
        return None
    wheels = _own_dir(build / "wheels")
    emit("INFO", "Building wheels of the dependencies (pip wheel)")
    container = buildah.output("from", "--pull-never", base)
    script = (
        'pip freeze > /tmp/base.txt && exec pip wheel --wheel-dir /wheels -c /tmp/base.txt "$@"'
    )
    nobody = f"{UNPRIVILEGED}:{UNPRIVILEGED}"
    env = ["HOME=/tmp", "PIP_NO_INPUT=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_PROGRESS_BAR=off"]
    mounts = [f"{src}:/src:ro", f"{wheels}:/wheels:rw"]
    mounts += [f"{path}:{path}:ro" for path in HOST_MOUNTS if os.path.exists(path)]
    cmd = ["run", "--isolation", "chroot", "--network", "host", "--user", nobody]
    cmd += [f"--env={item}" for item in env] + [f"--volume={item}" for item in mounts]
    cmd += ["--workingdir", "/src", container, "--", "sh", "-c", script, "pip-wheel", *args]
    try:
        buildah.streamed(emit, *cmd)
    except ProcessFailed as exc:
        reason = next((line for line in reversed(exc.tail) if line.startswith("ERROR")), None)
        raise BuildFailed(f"dependencies do not resolve: {reason or exc}") from None
    finally:
        buildah.remove(containers=[container])
    return wheels


def _dependency_layer(buildah: Buildah, base: str, plan: layout.BuildPlan, wheels: Path | None,
                      emit: Emit) -> str:  # fmt: skip
    """A container on the base with the dependencies installed, offline (layer 1)."""
    container = buildah.output("from", "--pull-never", base)
    steps = []
    if wheels is not None:
        steps.append(
            "pip install --no-cache-dir --no-index --find-links /wheels /wheels/*.whl && pip check"
        )
    if plan.import_paths:  # the faux packages, importable as the CLI's editable installs make them
        paths = "\n".join(plan.import_paths)
        steps.append(f"printf '%s\\n' {shlex.quote(paths)} > {SITE_PACKAGES}/deployplane-deps.pth")
    if steps:
        mount = ["--volume", f"{wheels}:/wheels:ro"] if wheels is not None else []
        cmd = [
            "run",
            "--isolation",
            "chroot",
            "--user",
            "0:0",
            *mount,
            container,
            "--",
            "sh",
            "-c",
            " && ".join(steps),
        ]
        try:
            buildah.streamed(emit, *cmd)
        except ProcessFailed as exc:
            buildah.remove(containers=[container])
            raise BuildFailed(f"installing the dependencies failed: {exc}") from None
    return container


def _source_layer(buildah: Buildah, deps_image: str, plan: layout.BuildPlan, src: Path,
                  final: str, emit: Emit) -> None:  # fmt: skip
    """On the dependencies' image: the source under /deps (layer 2) and the image's
    configuration (the graphs' paths, the working directory, the unprivileged user),
    committed as `final`."""
    container = buildah.output("from", "--pull-never", deps_image)
    try:
        for archive_dir, container_dir in plan.copies:
            buildah.output(
                "copy", "--chown", "0:0", container, str(src / archive_dir), container_dir
            )
        config = [f"--env={name}={value}" for name, value in plan.env.items()]
        config += ["--workingdir", plan.working_dir or "/deps", "--user", "65534:65534"]
        buildah.output("config", *config, container)
        buildah.output("commit", "--quiet", "--rm", container, final)
    except BaseException:
        buildah.remove(containers=[container])
        raise


def _import_check(buildah: Buildah, image: str, emit: Emit) -> None:
    container = buildah.output("from", "--pull-never", image)
    try:
        cmd = [
            "run",
            "--isolation",
            "chroot",
            "--user",
            "65534:65534",
            container,
            "--",
            "python3",
            "-c",
            CHECK_SCRIPT,
        ]
        buildah.streamed(emit, *cmd)
    except ProcessFailed as exc:  # the check's own last line, not buildah's exit status
        reason = next((line for line in reversed(exc.tail) if line.startswith("graph '")), None)
        raise BuildFailed(reason or f"the import check failed: {exc}") from None
    finally:
        buildah.remove(containers=[container])


def _export(buildah: Buildah, image: str, ref: str, key: str, build: Path, archive: Path) -> None:
    """The local `image` as an OCI archive naming it `ref` in its index as `docker save`
    and tools/images/build.py do (`io.containerd.image.name`, what `ctr images import`
    names it by; the tag as `org.opencontainers.image.ref.name`; the key)."""
    layout_dir = build / "layout"
    buildah.output("push", "--quiet", image, f"oci:{layout_dir}")
    index = json.loads((layout_dir / "index.json").read_text())
    (manifest,) = index["manifests"]
    manifest["annotations"] = {
        "io.containerd.image.name": ref,
        "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[1],
        KEY_ANNOTATION: key,
    }
    (layout_dir / "index.json").write_text(json.dumps(index))
    write_archive(layout_dir, archive)


def load_into_dev_cluster(archive: Path, state_dir: Path, emit: Emit) -> None:
    """Imports `archive` into the real node of the dev cluster in `state_dir` (the
    project's own CLI, `deployplane dev cluster load-image`); raises `BuildFailed`."""
    emit("INFO", f"Importing {archive.name} into the dev cluster's real node")
    main = "from deployplane.cli import main; main()"
    cmd = [sys.executable, "-c", main, "dev", "cluster", "load-image"]
    cmd += ["--state-dir", str(state_dir), str(archive)]
    try:
        run_streamed(cmd, emit, env=dict(os.environ))
    except ProcessFailed as exc:
        raise BuildFailed(f"the image could not be imported into the node: {exc}") from None


def build_image(
    data: bytes,
    *,
    config_path: str,
    project: str,
    settings: ImageBuildConfig,
    emit: Emit,
    label: str | None = None,
) -> BuiltImage:
    """Builds (or finds built) the image of the upload `data` (a gzip tarball) for the
    deployment `project`; raises `BuildFailed`. The build's directory in the work
    directory's `builds/` is named `<label>-<random>` (`label`: the revision's id;
    the key's start when none)."""
    work = settings.work_dir
    work.mkdir(parents=True, exist_ok=True)
    buildah = Buildah(work, settings.buildah)
    try:
        base_key = base_archive_key(settings.base_archive)
    except FileNotFoundError as exc:
        raise BuildFailed(str(exc)) from None
    key = image_key(content_digest(data), config_path, project, base_key)
    ref = f"{settings.repository}:{key[:16]}"
    archive = settings.output_dir / f"{settings.repository.rsplit('/', 1)[-1]}-{key[:16]}.tar"
    if archive.exists():
        emit("INFO", f"Image {ref} already built from this upload on this base (cached)")
        if settings.load_into_dev_cluster is not None:
            load_into_dev_cluster(archive, settings.load_into_dev_cluster, emit)
        return BuiltImage(ref, archive, cached=True)
    with buildah.base(settings.base_archive, base_key) as base:
        emit("INFO", f"Building {ref} on {base}")
        build = _build_dir(work / "builds", label or key[:16])
        # This build's own names in the shared storage: another build of the same upload
        # (the same `ref`) must neither commit over nor remove the images this one uses.
        deps_image = f"localhost/deployplane-deps:{build.name}"
        image = f"localhost/deployplane-build:{build.name}"
        try:
            src = _unpack(data, build, emit)
            plan = _plan(src, config_path, project, emit)
            wheels = _wheels(buildah, base, plan, src, build, emit)
            deps_container = _dependency_layer(buildah, base, plan, wheels, emit)
            buildah.output("commit", "--quiet", "--rm", deps_container, deps_image)
            try:
                _source_layer(buildah, deps_image, plan, src, image, emit)
            finally:
                buildah.remove(images=[deps_image])
            emit("INFO", f"Committed {ref}")
            emit("INFO", "Checking that every graph imports")
            _import_check(buildah, image, emit)
            _export(buildah, image, ref, key, build, archive)
        finally:
            buildah.remove(images=[image])
            shutil.rmtree(build, ignore_errors=True)
    emit("INFO", f"Image {ref} written to {archive.name}")
    if settings.load_into_dev_cluster is not None:
        load_into_dev_cluster(archive, settings.load_into_dev_cluster, emit)
    return BuiltImage(ref, archive, cached=False)
