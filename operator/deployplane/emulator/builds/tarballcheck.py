"""The remote build of an `internal_source` revision: what a build would check, on the
uploaded tarball, as log lines. A pure function of the tarball's bytes.

No image is built here (there is no Docker, nor a registry): the tarball is unpacked
(in memory, member by member, refusing what a build would refuse to extract), the
config file named by `langgraph_config_path` is parsed, every graph's file must be in
the archive, and every dependency must resolve, as a directory of the archive (`.`,
`./lib`) or as a package requirement (PEP 508). Success gives the image reference the
revision deploys: derived from the upload's digest, so one tarball is one image.
"""

from __future__ import annotations

import io
import json
import posixpath
import re
import tarfile
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BuildResult", "check_build", "image_for", "tarball_error"]

# What unpacking stops at: a tarball that decompresses beyond this is refused, as a
# build's disk would be (the upload itself is at most 200 MB compressed).
MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
MAX_MEMBERS = 100_000
MAX_CONFIG_BYTES = 1024 * 1024
IMAGE_REGISTRY = "images.deployplane.example"

# PEP 508 requirement: a name, optional extras, optional version spec / marker / URL.
_REQUIREMENT = re.compile(
    r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"  # name
    r"(?:\s*\[[A-Za-z0-9._,\s-]*\])?"  # extras
    r"\s*(?:(?:[<>=!~]=?|===)\s*[A-Za-z0-9.*+!_-]+\s*(?:,\s*(?:[<>=!~]=?|===)\s*[A-Za-z0-9.*+!_-]+\s*)*)?"
    r"(?:\s*@\s*\S+)?"  # direct reference
    r"(?:\s*;.*)?$"  # marker
)

# The user info of a URL in a requirement (`pkg @ https://user:token@host/...`): masked
# in the log, as pip masks it, since a build log is no place for a credential.
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")


def _shown(dependency: str) -> str:
    return _URL_USERINFO.sub(r"\1***@", dependency.strip())


@dataclass
class BuildResult:
    """The lines a build writes, and its verdict: `error` None when it succeeded."""

    lines: list[tuple[str, str]] = field(default_factory=list)  # (level, message)
    error: str | None = None

    def info(self, message: str) -> None:
        self.lines.append(("INFO", message))

    def fail(self, reason: str) -> BuildResult:
        self.lines.append(("ERROR", f"Build failed: {reason}"))
        self.error = reason
        return self


def image_for(deployment_name: str, digest: str) -> str:
    """The image a successful build of the upload with sha256 `digest` gives."""
    return f"{IMAGE_REGISTRY}/{deployment_name}@sha256:{digest}"


def _unpack(data: bytes | bytearray, result: BuildResult) -> dict[str, bytes | None] | None:
    """Archive path -> content (read for small files a build reads, else None); None
    (with the reason in `result`) when the archive cannot be unpacked."""
    files: dict[str, bytes | None] = {}
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member in tar:
                name = posixpath.normpath(member.name)
                if member.name.startswith("/") or name.startswith(".."):
                    result.fail(f"archive member {member.name!r} is outside the project")
                    return None
                if len(files) >= MAX_MEMBERS:
                    result.fail(f"archive has more than {MAX_MEMBERS} members")
                    return None
                total += max(member.size, 0)
                if total > MAX_UNPACKED_BYTES:
                    result.fail("archive unpacks to more than 1 GiB")
                    return None
                if member.isfile():
                    content = None
                    if member.size <= MAX_CONFIG_BYTES and name.endswith(".json"):
                        extracted = tar.extractfile(member)
                        content = extracted.read() if extracted is not None else None
                    files[name] = content
    except (tarfile.TarError, OSError, EOFError) as exc:
        result.fail(f"source archive is not a readable gzip tarball ({type(exc).__name__})")
        return None
    return files


def tarball_error(data: bytes | bytearray) -> str | None:
    """Why `data` is not a gzip tarball a build could unpack; None when it is."""
    result = BuildResult()
    _unpack(data, result)
    return result.error


def _directories(files: dict[str, bytes | None]) -> set[str]:
    dirs = {"."}
    for name in files:
        parent = posixpath.dirname(name)
        while parent and parent not in dirs:
            dirs.add(parent)
            parent = posixpath.dirname(parent)
    return dirs


def _in_project(base: str, relative: str) -> str:
    return posixpath.normpath(posixpath.join(base, relative))


def _graph_file(spec: Any) -> str | None:
    """The file of a graph entry ("./agent.py:graph" or {"path": ...})."""
    if isinstance(spec, dict):
        spec = spec.get("path")
    if not isinstance(spec, str) or not spec:
        return None
    return spec.rsplit(":", 1)[0] if ":" in spec else spec


def _check_graphs(
    config: dict[str, Any], base: str, files: dict[str, bytes | None], result: BuildResult
) -> bool:
    graphs = config.get("graphs")
    if not isinstance(graphs, dict) or not graphs:
        result.fail("config has no graphs (a non-empty object 'graphs' is required)")
        return False
    for graph_id, spec in graphs.items():
        path = _graph_file(spec)
        if path is None:
            result.fail(f"graph '{graph_id}' has no file path")
            return False
        resolved = _in_project(base, path)
        if resolved not in files:
            result.fail(f"graph '{graph_id}': file {path} not found in the source archive")
            return False
        result.info(f"Graph '{graph_id}': {path}")
    return True


def _check_dependencies(
    config: dict[str, Any], base: str, files: dict[str, bytes | None], result: BuildResult
) -> bool:
    dependencies = config.get("dependencies", [])
    if not isinstance(dependencies, list):
        result.fail("'dependencies' must be a list")
        return False
    dirs = _directories(files)
    for dependency in dependencies:
        if not isinstance(dependency, str) or not dependency.strip():
            result.fail("a dependency is not a non-empty string")
            return False
        if dependency.startswith((".", "/")):
            if _in_project(base, dependency) not in dirs:
                result.fail(f"local dependency {dependency} is not a directory of the archive")
                return False
            result.info(f"Installing local package {dependency}")
        elif _REQUIREMENT.match(dependency.strip()):
            result.info(f"Installing {_shown(dependency)}")
        else:
            shown = _shown(dependency)
            result.fail(f"dependency {shown!r} is neither a path nor a package requirement")
            return False
    return True


def check_build(data: bytes, config_path: str) -> BuildResult:
    """Builds (checks) the project in the gzip tarball `data` with config `config_path`."""
    result = BuildResult()
    result.info(f"Unpacking source archive ({len(data)} bytes)")
    files = _unpack(data, result)
    if files is None:
        return result
    result.info(f"Unpacked {len(files)} files")
    config_name = posixpath.normpath(config_path)
    if config_name not in files:
        return result.fail(f"config file {config_path} not found in the source archive")
    raw = files[config_name]
    try:
        config = json.loads(raw or b"")
    except (ValueError, UnicodeDecodeError):
        return result.fail(f"config file {config_path} is not valid JSON")
    if not isinstance(config, dict):
        return result.fail(f"config file {config_path} is not a JSON object")
    result.info(f"Read config {config_path}")
    base = posixpath.dirname(config_name) or "."
    if not _check_graphs(config, base, files, result):
        return result
    if not _check_dependencies(config, base, files, result):
        return result
    result.info("Build checks passed")
    return result
