"""The emulator's remote build as real images (`image_builds`, emulator/builds/imagebuild/):
a tiny two-node graph with one pure-Python dependency, uploaded as `langgraph deploy
--remote` uploads it, becomes an image (buildah, on the agent base of `make images`)
whose server answers /ok and runs the graph through langgraph-sdk's `runs.wait`; the
same upload again is a cache hit; a missing module, a syntax error, a dependency that
does not resolve and a hostile archive each give BUILD_FAILED with the reason as the
build log's last line; the whole 1 GiB bomb is refused unpacking.

The builds share the machine's work directory (~/.cache/deployplane/agent-builds) with
every other build on this machine (the other test worker's, another checkout's, a demo's
emulator): a test asserts only on its own build's traces (its directory, named by its
revision, and its own output), and two tests run a second build beside the one they
check, paused inside its build directory, to show that neither disturbs the other.

Needs root and buildah (tools/images/ensure.sh installs it). The agent base is this
checkout's, built (or found cached) before the first test, outside its timeout
(tests/support/agentbase.py); `make test` builds it before pytest starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gzip
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from tests.support import agentbase
from tests.support.emulator_app import make_settings, running_app, wait_for
from tests.support.internal_builds import build, internal, put, upload_url
from tests.support.langgraph_app import agent_source
from tests.support.tarballs import tarball

from deployplane.emulator.builds.imagebuild.buildah import KEY_ANNOTATION, archive_key
from deployplane.emulator.builds.imagebuild.extract import (
    UNPRIVILEGED,
    UnsafeArchive,
    extract_unprivileged,
)
from deployplane.emulator.builds.imagebuild.runner import (
    BuiltImage,
    build_image,
    content_digest,
    image_key,
)
from deployplane.emulator.settings import ImageBuildConfig

CACHE = Path(os.environ.get("DEPLOYPLANE_CACHE") or Path.home() / ".cache" / "deployplane")

pytestmark = pytest.mark.skipif(
    agentbase.skip_reason() is not None, reason=str(agentbase.skip_reason())
)

AGENT = agent_source()  # the e2e tests' graph, as the build tests use it


def project(agent: str = AGENT, dependencies: tuple[str, ...] = ("six==1.17.0",)) -> bytes:
    config = {"graphs": {"agent": "./agent.py:graph"}, "dependencies": [".", *dependencies]}
    return tarball({"langgraph.json": json.dumps(config), "agent.py": agent})


@pytest.fixture(scope="module")
def base_archive() -> Path:
    """This checkout's agent base, as kept under its key: the archive the emulator reads
    by default has one name for every checkout on the machine, and another's build
    replaces it."""
    return agentbase.archive()


@pytest.fixture(scope="module")
def output_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where this module's builds write their archives (fresh: its first build is cold)."""
    return tmp_path_factory.mktemp("images")


@pytest.fixture
async def emulator(
    tmp_path: Path, base_archive: Path, output_dir: Path
) -> AsyncIterator[tuple[ImageBuildConfig, httpx.AsyncClient]]:
    builds = ImageBuildConfig(
        work_dir=CACHE / "agent-builds", base_archive=base_archive, output_dir=output_dir
    )
    settings = make_settings(tmp_path, image_builds=builds.model_dump(mode="json"))
    async with running_app(settings) as (_, api):
        yield builds, api


async def deploy(
    api: httpx.AsyncClient, name: str, data: bytes, dep: str | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Uploads `data` to a new deployment (or to `dep`), builds it; (its settled latest
    revision, its build log)."""
    dep = dep or await internal(api, name)
    url = await upload_url(api, dep)
    assert (await put(api, url, data)).status_code == 200
    assert (await build(api, dep, url["object_path"])).status_code == 200

    async def settled() -> dict[str, Any] | None:
        revision = (await api.get(f"/v2/deployments/{dep}/revisions")).json()["resources"][0]
        return revision if revision["status"] in ("DEPLOYED", "BUILD_FAILED") else None

    revision: dict[str, Any] = await wait_for(settled, within=600, interval=0.5)
    path = f"/v1/projects/{dep}/revisions/{revision['id']}/build_logs"
    logs = (await api.post(path, json={"order": "asc", "limit": 1000})).json()["logs"]
    return revision, [line["message"] for line in logs]


def builds_labelled(builds: ImageBuildConfig, label: str) -> list[str]:
    """The directories of the builds labelled `label` (a revision's id) in the shared
    work directory: `<label>-<random>` while they run."""
    root = builds.work_dir / "builds"
    return sorted(name for name in os.listdir(root) if name.startswith(f"{label}-"))


def unpacked(builds: ImageBuildConfig, build: str) -> list[str]:
    return sorted(os.listdir(builds.work_dir / "builds" / build / "src"))


class Paused:
    """A build run beside a test's own, in a thread on the same work directory, held
    inside its build directory (at its `Unpacked` line) until `resume()`."""

    def __init__(self, builds: ImageBuildConfig, data: bytes, project: str) -> None:
        self.label = f"beside-{uuid.uuid4().hex[:12]}"
        self._inside, self._resume = threading.Event(), threading.Event()
        self.result: BuiltImage | BaseException | None = None

        def emit(level: str, line: str) -> None:
            if line.startswith("Unpacked "):
                self._inside.set()
                self._resume.wait(900)  # a bound for a hang: resume() comes first

        def run() -> None:
            try:
                self.result = build_image(data, config_path="langgraph.json", project=project,
                                          settings=builds, emit=emit, label=self.label)  # fmt: skip
            except BaseException as exc:  # handed to the test, which re-raises it
                self.result = exc

        self._thread = threading.Thread(target=run, name=self.label)
        self._thread.start()

    def wait_inside(self) -> None:
        """Blocks until the build is held in its directory (or has ended: its error)."""
        while not self._inside.wait(0.1):
            if not self._thread.is_alive():
                raise AssertionError(f"the build beside ended before its unpacking: {self.result}")

    def resume(self) -> BuiltImage:
        self._resume.set()
        self._thread.join(900)
        assert not self._thread.is_alive(), "the build beside did not end"
        if isinstance(self.result, BaseException):
            raise self.result
        assert self.result is not None
        return self.result


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def buildah_of(builds: ImageBuildConfig) -> list[str]:
    storage = [f"--root={builds.work_dir}/storage", f"--runroot={builds.work_dir}/run"]
    return ["buildah", *storage]


@contextlib.contextmanager
def pulled(builds: ImageBuildConfig, archive: Path) -> Iterator[str]:
    """The image of `archive` pulled into the shared storage (its id), where another
    process may hold the same image meanwhile: every holder takes a shared lock named
    by the archive's key (the same key, the same image), and only the last to let go
    removes it."""
    key = archive_key(archive)
    assert key
    locks = builds.work_dir / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"served-{key[:16]}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        pull = [*buildah_of(builds), "pull", "-q", f"oci-archive:{archive}"]
        image = subprocess.run(pull, check=True, capture_output=True, text=True).stdout.split()[-1]
        yield image
        with contextlib.suppress(BlockingIOError):
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            subprocess.run([*buildah_of(builds), "rmi", image], capture_output=True)


@pytest.fixture
def serve() -> Iterator[Any]:
    """Runs an image's server (its own CMD, as nobody) on 127.0.0.1, stopped after;
    returns the image's configuration (OCI config: Env, Cmd, User, WorkingDir)."""
    with contextlib.ExitStack() as stack:

        def start(builds: ImageBuildConfig, archive: Path, port: int) -> dict[str, Any]:
            buildah = buildah_of(builds)
            image = stack.enter_context(pulled(builds, archive))
            made = [*buildah, "from", "--pull-never", image]
            ctr = subprocess.run(made, check=True, capture_output=True, text=True).stdout.strip()
            stack.callback(subprocess.run, [*buildah, "rm", ctr], capture_output=True)
            cmd = [*buildah, "run", "--isolation", "chroot",
                   "--user", f"{UNPRIVILEGED}:{UNPRIVILEGED}",
                   "--env", "HOST=127.0.0.1", "--env", f"PORT={port}",
                   ctr, "--", "python3", "/usr/local/bin/deployplane-agent-server"]  # fmt: skip
            proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL)
            stack.callback(stop, proc)
            inspect = [*buildah, "inspect", "--type", "image", image]
            out = subprocess.run(inspect, check=True, capture_output=True, text=True).stdout
            config: dict[str, Any] = json.loads(out)["OCIv1"]["config"]
            return config

        yield start


def stop(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


async def test_an_upload_becomes_an_image_whose_server_runs_the_graph(
    emulator: tuple[ImageBuildConfig, httpx.AsyncClient], serve: Any
) -> None:
    builds, api = emulator
    dep = await internal(api, "two-nodes")
    revision, logs = await deploy(api, "two-nodes", project(), dep=dep)
    assert revision["status"] == "DEPLOYED", logs
    image = revision["source_revision_config"]["image_uri"]
    assert image.startswith("localhost/deployplane-agent:")
    assert "Source . -> /deps/outer-two-nodes/src" in logs
    assert any(line.startswith("Successfully installed six-1.17.0") for line in logs)
    assert "Graph 'agent' imports (/deps/outer-two-nodes/src/agent.py:graph)" in logs
    assert logs[-1] == f"Build succeeded: {image}"
    archive = builds.output_dir / f"deployplane-agent-{image.rsplit(':', 1)[1]}.tar"
    assert archive.is_file()
    # the same upload again (a new revision): the same image, not built twice
    again, logs = await deploy(api, "two-nodes", project(), dep=dep)
    assert again["id"] != revision["id"]
    assert again["source_revision_config"]["image_uri"] == image
    assert any("already built from this upload on this base (cached)" in line for line in logs)

    port = free_port()
    config = serve(builds, archive, port)
    # outbound calls off: tracing off, no version check, no licence or LangSmith key
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["LANGSMITH_TRACING"] == env["LANGCHAIN_TRACING_V2"] == "false"
    assert env["LANGGRAPH_NO_VERSION_CHECK"] == "true"
    keys = {"LANGGRAPH_CLOUD_LICENSE_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"}
    assert not keys & set(env)
    assert env["LANGSERVE_GRAPHS"] == '{"agent": "/deps/outer-two-nodes/src/agent.py:graph"}'
    assert config["User"] == "65534:65534"
    assert config["WorkingDir"] == "/deps/outer-two-nodes/src"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:

        async def ok() -> dict[str, Any] | None:
            try:
                answer = await http.get("/ok")
            except httpx.TransportError:
                return None
            return answer.json() if answer.status_code == 200 else None

        assert await wait_for(ok, within=120, interval=0.5) == {"ok": True, "services": {}}
    client = get_client(url=f"http://127.0.0.1:{port}", api_key=None)
    state = await client.runs.wait(None, "agent", input={"text": "hi", "steps": []})
    assert state == {"text": "HI!", "steps": ["first", "second"]}


BROKEN = [
    ("missing-module", project(agent="import nonexistent_module_xyz\ngraph = None\n"),
     "Build failed: graph 'agent' does not import: "
     "ModuleNotFoundError: No module named 'nonexistent_module_xyz'"),
    ("syntax-error", project(agent="def graph(:\n"),
     "Build failed: graph 'agent' does not import: "
     "SyntaxError: invalid syntax (/deps/outer-syntax-error/src/agent.py, line 1)"),
    ("no-attribute", project(agent="graf = None\n", dependencies=()),
     "Build failed: graph 'agent': /deps/outer-no-attribute/src/agent.py has no attribute 'graph'"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "data", "last"), BROKEN, ids=[b[0] for b in BROKEN])
async def test_a_broken_graph_is_build_failed_with_the_reason_last(
    emulator: tuple[ImageBuildConfig, httpx.AsyncClient], name: str, data: bytes, last: str
) -> None:
    _, api = emulator
    revision, logs = await deploy(api, name, data)
    assert revision["status"] == "BUILD_FAILED"
    assert logs[-1] == last


async def test_a_dependency_that_does_not_resolve_is_build_failed(
    emulator: tuple[ImageBuildConfig, httpx.AsyncClient],
) -> None:
    _, api = emulator
    data = project(dependencies=("deployplane-no-such-package-4f1c==1.0",))
    revision, logs = await deploy(api, "no-such-dep", data)
    assert revision["status"] == "BUILD_FAILED"
    assert logs[-1].startswith("Build failed: dependencies do not resolve: ERROR: ")
    assert "deployplane-no-such-package-4f1c" in logs[-1]


def hostile(kind: bytes, target: str) -> bytes:
    """A project whose `a.py` is first a link to `target`, then a file written through
    it: unpacked without the checks, the file's bytes would land on the target."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        config = json.dumps({"graphs": {"a": "./a.py:g"}, "dependencies": ["."]}).encode()
        info = tarfile.TarInfo("langgraph.json")
        info.size = len(config)
        tar.addfile(info, io.BytesIO(config))
        link = tarfile.TarInfo("a.py")
        link.type, link.linkname = kind, target
        tar.addfile(link)
        body = b"g = 'written through the link'\n"
        through = tarfile.TarInfo("a.py")
        through.size = len(body)
        tar.addfile(through, io.BytesIO(body))
    return buffer.getvalue()


@pytest.fixture
def canary() -> Iterator[Path]:
    """A file outside every build directory, in a directory of its own, that the user
    who unpacks uploads (nobody) could write: what a hostile archive aims at."""
    directory = Path(tempfile.mkdtemp(prefix="deployplane-canary-"))
    try:
        path = directory / "canary"
        path.write_text("untouched\n")
        for owned in (directory, path):
            os.chown(owned, UNPRIVILEGED, UNPRIVILEGED)
        directory.chmod(0o755)
        yield path
    finally:
        shutil.rmtree(directory)


# (link kind, the link's target for the canary, the reason in the build log)
LINKS: dict[str, tuple[bytes, Callable[[Path, ImageBuildConfig], str], str]] = {
    "symlink": (tarfile.SYMTYPE, lambda canary, _: str(canary),
                "is a link to an absolute path"),
    # relative to the unpacking's root, <work_dir>/builds/<build>/src
    "hardlink": (tarfile.LNKTYPE,
                 lambda canary, b: os.path.relpath(canary, b.work_dir / "builds" / "x" / "src"),
                 "is a link pointing out of the project"),
}  # fmt: skip


async def refused_hostile(
    builds: ImageBuildConfig, api: httpx.AsyncClient, link: str, canary: Path
) -> None:
    """A hostile upload through the API: BUILD_FAILED with the reason last, the canary
    untouched, and no directory of this build (named by its revision) left."""
    kind, target, reason = LINKS[link]
    revision, logs = await deploy(api, "hostile", hostile(kind, target(canary, builds)))
    assert revision["status"] == "BUILD_FAILED"
    assert logs[-1] == f"Build failed: archive member 'a.py' {reason}"
    assert_nothing_left(builds, revision["id"], canary)


def assert_nothing_left(builds: ImageBuildConfig, label: str, canary: Path) -> None:
    assert canary.read_text() == "untouched\n"
    assert os.listdir(canary.parent) == ["canary"]
    assert builds_labelled(builds, label) == []


@pytest.mark.parametrize("link", list(LINKS))
async def test_a_hostile_archive_is_build_failed_and_writes_nothing_outside(
    emulator: tuple[ImageBuildConfig, httpx.AsyncClient], canary: Path, link: str
) -> None:
    builds, api = emulator
    await refused_hostile(builds, api, link, canary)


async def test_a_hostile_archive_beside_another_build_leaves_that_build_alone(
    emulator: tuple[ImageBuildConfig, httpx.AsyncClient], canary: Path
) -> None:
    """The hostile build runs and is cleaned up while another build of the same work
    directory is held inside its own directory; that one then finishes as usual."""
    builds, api = emulator
    beside = Paused(builds, project("graph = 'beside'\n", dependencies=()), "beside")
    try:
        await asyncio.to_thread(beside.wait_inside)
        (held,) = builds_labelled(builds, beside.label)
        await refused_hostile(builds, api, "symlink", canary)
        assert unpacked(builds, held) == ["agent.py", "langgraph.json"]  # still there
    finally:
        built = await asyncio.to_thread(beside.resume)
    assert not built.cached
    assert archive_key(built.archive)
    assert builds_labelled(builds, beside.label) == []


def test_the_same_upload_built_twice_at_once_gives_one_archive(
    base_archive: Path, tmp_path: Path
) -> None:
    """Two builds of one upload on one work directory (two emulators, or a retried
    revision), the second run whole while the first is held inside its directory: both
    give the same image, the archive is whole, and neither leaves anything behind."""
    builds = ImageBuildConfig(
        work_dir=CACHE / "agent-builds", base_archive=base_archive, output_dir=tmp_path / "out"
    )
    data = project("graph = 'twice'\n", dependencies=())
    first = Paused(builds, data, "twice")
    try:
        first.wait_inside()
        label = f"second-{uuid.uuid4().hex[:12]}"
        second = build_image(data, config_path="langgraph.json", project="twice",
                             settings=builds, emit=lambda *_: None, label=label)  # fmt: skip
    finally:
        built = first.resume()
    assert (built.ref, built.archive, built.cached) == (second.ref, second.archive, False)
    assert not second.cached
    base_key = archive_key(base_archive)
    assert base_key
    key = image_key(content_digest(data), "langgraph.json", "twice", base_key)
    assert built.ref.endswith(f":{key[:16]}")
    with tarfile.open(built.archive) as tar:  # whole: every blob the index leads to is there
        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
        names = set(tar.getnames())
    (manifest,) = index["manifests"]
    assert manifest["annotations"][KEY_ANNOTATION] == key
    assert f"blobs/sha256/{manifest['digest'].removeprefix('sha256:')}" in names
    assert os.listdir(builds.output_dir) == [built.archive.name]  # no temporary file left
    assert builds_labelled(builds, first.label) == builds_labelled(builds, label) == []


def test_a_1_gib_bomb_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    """1 GiB + 1 of zeros, about 1 MiB compressed (the upload route refuses it too)."""
    dest, outside = tmp_path / "build" / "src", tmp_path / "outside"
    dest.mkdir(parents=True)
    outside.mkdir()
    os.chown(dest, UNPRIVILEGED, UNPRIVILEGED)
    path = tmp_path / "bomb.tar.gz"
    size = (1 << 30) + 1
    with gzip.open(path, "wb", compresslevel=1) as raw:
        info = tarfile.TarInfo("zeros.bin")
        info.size = size
        raw.write(info.tobuf(format=tarfile.GNU_FORMAT))
        chunk = bytes(1 << 20)
        for _ in range(size // len(chunk)):
            raw.write(chunk)
        raw.write(bytes(1024 + 511))  # the last byte, padded to a block, and the end
    assert path.stat().st_size < 8 << 20
    with pytest.raises(UnsafeArchive, match=r"^archive unpacks to more than 1 GiB$"):
        extract_unprivileged(path, dest)
    assert list(dest.iterdir()) == []
    assert list(outside.iterdir()) == []


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


def test_ctr_import_names_a_built_image_by_its_reference(
    base_archive: Path, output_dir: Path, tmp_path: Path
) -> None:
    """What `load_into_dev_cluster` (the node's `ctr -n k8s.io images import`) does with
    the archive, on a containerd of our own (no CRI, its own root and socket, a private
    mount namespace), stopped by its pid afterwards."""
    tools = Path(os.environ.get("DEPLOYPLANE_TOOLS_BIN", "/nonexistent"))
    containerd, ctr = tools / "containerd", tools / "ctr"
    if not (containerd.exists() and ctr.exists()):
        pytest.skip("needs containerd and ctr in DEPLOYPLANE_TOOLS_BIN (the real node's)")
    builds = ImageBuildConfig(
        work_dir=CACHE / "agent-builds", base_archive=base_archive, output_dir=output_dir
    )
    # Any image will do: one without dependencies builds in seconds (no pip wheel).
    light = project("graph = 'imported'\n", dependencies=())
    built = build_image(
        light, config_path="langgraph.json", project="ctr-import", settings=builds,
        emit=lambda level, line: None,
    )  # fmt: skip
    (tmp_path / "config.toml").write_text(CONTAINERD_CONFIG.format(d=tmp_path))
    with (tmp_path / "containerd.log").open("w") as log:
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
            imported = [str(ctr), *address, "images", "import", "--no-unpack", str(built.archive)]
            subprocess.run(imported, check=True, capture_output=True)
            listed = [str(ctr), *address, "images", "ls", "-q"]
            names = subprocess.run(listed, check=True, capture_output=True, text=True).stdout
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
    assert built.ref in names.split()
