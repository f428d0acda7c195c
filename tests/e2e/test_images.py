"""The images built without a container engine (tools/images/, `make image`): the
project's Dockerfile as deployplane:dev, and the data plane's PostgreSQL and Redis.

Gated like the rest of this tier: without root, or without buildah and mmdebstrap and no
apt-get to install them, the tests skip locally and fail under CI=true. The first run
builds (minutes); later runs are cache hits (docs/development.md). No cluster is needed:
the images are started by tools/images/smoke.sh (chroot in a private mount namespace).

The module holds the images lock (tests/support/imagelock.py) from its first build to
its last read: the archives it checks are this checkout's, whatever another checkout
on the machine builds meanwhile (that build waits).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from tests.support import imagelock

import deployplane
from deployplane.dataplane.render.backing import DATABASE_USER, REDIS_USER

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools/images"
BUILD_TIMEOUT = 1800  # a cold build of every image on a loaded machine, with margin


def _recipes() -> ModuleType:
    spec = importlib.util.spec_from_file_location("images_recipes", TOOLS / "recipes.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


recipes = _recipes()


def _run(*args: str, lock: imagelock.ImagesLock | None = None) -> str:
    done = subprocess.run(
        [*args], cwd=ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False,
        env=lock.env() if lock else None, pass_fds=(lock.fd,) if lock else (),
    )  # fmt: skip
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _build(what: str, lock: imagelock.ImagesLock) -> str:
    return _run(sys.executable, str(TOOLS / "build.py"), what, lock=lock)


@pytest.fixture(scope="module")
def images_lock() -> Iterator[imagelock.ImagesLock]:
    with imagelock.held() as lock:
        yield lock


@pytest.fixture(scope="module")
def images_dir(images_lock: imagelock.ImagesLock) -> Path:
    # root: mmdebstrap's root mode, buildah's chroot isolation, smoke.sh's mount namespace
    have_tools = shutil.which("buildah") and shutil.which("mmdebstrap")
    reason = ""
    if os.geteuid() != 0:
        reason = "needs root (mmdebstrap, buildah with chroot isolation, unshare --mount)"
    elif not have_tools and not shutil.which("apt-get"):
        reason = "needs buildah and mmdebstrap (tools/images/ensure.sh installs them with apt-get)"
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return Path(_run(sys.executable, str(TOOLS / "build.py"), "dir").strip())


def _archive(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(index.json's manifest descriptors, the image config) of an OCI archive whose
    descriptors all name the same image."""
    with tarfile.open(path) as tar:

        def blob(digest: str) -> Any:
            member = tar.extractfile(f"blobs/sha256/{digest.removeprefix('sha256:')}")
            assert member is not None
            return json.load(member)

        index_file = tar.extractfile("index.json")
        assert index_file is not None
        descriptors = json.load(index_file)["manifests"]
        assert len({d["digest"] for d in descriptors}) == 1, descriptors
        manifest = blob(descriptors[0]["digest"])
        return descriptors, blob(manifest["config"]["digest"])


@pytest.fixture(scope="module")
def app_archive(images_dir: Path, images_lock: imagelock.ImagesLock) -> Path:
    _build("app", images_lock)
    return images_dir / "deployplane-dev.tar"


def test_make_image_exports_deployplane_dev_named_for_ctr_import(app_archive: Path) -> None:
    (descriptor,), config = _archive(app_archive)
    annotations = descriptor["annotations"]
    assert annotations["io.containerd.image.name"] == "docker.io/library/deployplane:dev"
    assert annotations["org.opencontainers.image.ref.name"] == "dev"
    # built from what is in this checkout now
    base_key = recipes.debian_key(recipes.PYTHON_BASE)
    args = {"BASE_IMAGE": recipes.local_ref(recipes.PYTHON_BASE, base_key)}
    assert annotations[recipes.KEY_ANNOTATION] == recipes.app_key(ROOT, base_key, args)
    # the Dockerfile's runtime stage, as the chart runs it
    image = config["config"]
    assert image["User"] == "10001:10001"
    assert image["Entrypoint"] == ["deployplane", "operator", "run"]
    assert image["WorkingDir"] == "/tmp"
    assert set(image["ExposedPorts"]) == {"8080/tcp", "8081/tcp", "9090/tcp"}
    assert config["os"] == "linux"
    assert config["architecture"] == "amd64"


def test_a_rebuild_with_nothing_changed_is_a_cache_hit(
    app_archive: Path, images_lock: imagelock.ImagesLock
) -> None:
    before = app_archive.stat()
    out = _build("app", images_lock)
    assert "cache hit" in out
    after = app_archive.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_the_image_runs_as_10001_on_a_read_only_root(app_archive: Path) -> None:
    out = _run("bash", str(TOOLS / "smoke.sh"), "app")
    assert f"deployplane {deployplane.__version__}" in out or deployplane.__version__ in out
    assert "\n10001\n" in f"\n{out}"
    assert "root read-only" in out
    # the chart's emulator container (same image) serves on the read-only root
    assert 'emulator healthz: {"status":"ok"}' in out


@pytest.fixture(scope="module")
def dataplane_images(images_dir: Path, images_lock: imagelock.ImagesLock) -> Path:
    _build("dataplane", images_lock)
    return images_dir


@pytest.mark.parametrize("image", ["POSTGRES", "REDIS", "E2E_AGENT"])
def test_dataplane_images_are_exported_under_their_refs(dataplane_images: Path, image: str) -> None:
    recipe = getattr(recipes, image)
    descriptors, config = _archive(dataplane_images / recipes.archive_name(recipe.ref))
    names = [d["annotations"]["io.containerd.image.name"] for d in descriptors]
    assert names == [recipe.ref, *recipe.also]
    for descriptor in descriptors:
        assert descriptor["annotations"][recipes.KEY_ANNOTATION] == recipes.debian_key(recipe)
    if recipe.also:  # the stand-in: its command as the data plane's probes need it
        assert config["config"]["Cmd"][-3:] == ["8000", "--directory", "/srv/agent"]
        assert config["config"]["User"] == "65534:65534"
    else:
        assert config["config"]["Entrypoint"] == ["docker-entrypoint.sh"]
        # the user the data plane renders for them (render/backing.py)
        user = DATABASE_USER if recipe is recipes.POSTGRES else REDIS_USER
        assert config["config"]["User"] == f"{user}:{user}"


def test_postgres_starts_as_the_data_plane_renders_it(dataplane_images: Path) -> None:
    """As its user, on a read-only root with the data plane's volumes."""
    out = _run("bash", str(TOOLS / "smoke.sh"), "postgres")
    assert f"config: user={DATABASE_USER}:{DATABASE_USER}" in out
    assert f"data directory owner: {DATABASE_USER}" in out
    assert "accepting connections" in out  # the readiness probe's command
    assert "pgvector " in out  # CREATE EXTENSION vector worked, over TCP with the password
    assert "\n20\n" in out  # the rendered `-c max_connections=...` reached the server


def test_the_agent_stand_in_answers_ok(dataplane_images: Path) -> None:
    out = _run("bash", str(TOOLS / "smoke.sh"), "e2e-agent")
    assert "GET /ok: ok" in out


def test_redis_starts_as_the_data_plane_renders_it(dataplane_images: Path) -> None:
    """As its user, on a read-only root, its snapshot's directory a volume."""
    out = _run("bash", str(TOOLS / "smoke.sh"), "redis")
    assert f"config: user={REDIS_USER}:{REDIS_USER}" in out
    assert "PONG" in out
    assert "maxmemory\n900000" in out  # the rendered --maxmemory reached the server
    assert "protected-mode\nno" in out  # other pods may connect


CONTAINERD_CONFIG = """\
version = 3
root = "{d}/root"
state = "{d}/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images",
  "io.containerd.cri.v1.runtime", "io.containerd.nri.v1.nri"]
[grpc]
  address = "{d}/c.sock"
[ttrpc]
  address = "{d}/c.sock.ttrpc"
[debug]
  address = "{d}/debug.sock"
"""


def test_ctr_import_names_every_archive(
    app_archive: Path, dataplane_images: Path, tmp_path: Path
) -> None:
    # What the real node does with the images directory (`ctr -n k8s.io images import`),
    # on a containerd of our own (no CRI, its own root, state and socket, in a private
    # mount namespace), stopped by its pid afterwards.
    tools = Path(os.environ.get("DEPLOYPLANE_TOOLS_BIN", "/nonexistent"))
    containerd, ctr = tools / "containerd", tools / "ctr"
    if not (containerd.exists() and ctr.exists()):
        pytest.skip("needs containerd and ctr in DEPLOYPLANE_TOOLS_BIN (the real node's)")
    (tmp_path / "config.toml").write_text(CONTAINERD_CONFIG.format(d=tmp_path))
    log = (tmp_path / "containerd.log").open("w")
    daemon = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", str(containerd),
         "--config", str(tmp_path / "config.toml")],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    address = ["--address", str(tmp_path / "c.sock"), "-n", "k8s.io"]
    try:
        for _ in range(100):
            if (tmp_path / "c.sock").exists():
                break
            time.sleep(0.1)
        archives = [
            app_archive,
            *(dataplane_images / recipes.archive_name(i.ref) for i in recipes.DATAPLANE),
        ]
        for archive in archives:
            _run(str(ctr), *address, "images", "import", "--no-unpack", str(archive))
        listed = _run(str(ctr), *address, "images", "ls", "-q").split()
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
        log.close()
    expected = {recipes.APP_REF, *(r for i in recipes.DATAPLANE for r in (i.ref, *i.also))}
    assert expected <= set(listed), listed
