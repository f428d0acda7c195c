"""Where an uploaded project goes in its image, as `langgraph build` / `langgraph
dockerfile` (langgraph-cli's config.py, `_assemble_local_deps` and
`_update_graph_paths`) lay it out: a pure function of `langgraph.json` and the names of
the archive's files.

- a local dependency with a `pyproject.toml` or `setup.py` is a real package: its
  directory goes to `/deps/<name>` and it is installed (as a wheel built on the host);
- any other local dependency is a "faux package": its directory goes to
  `/deps/outer-<name>/src` (or `/deps/outer-<name>/<name>` when it has an `__init__.py`),
  made importable (the CLI generates a pyproject for it; here a `.pth` file), its
  `requirements.txt` installed;
- every other dependency is a requirement pip installs;
- each graph's path is rewritten to where its file lands, into `LANGSERVE_GRAPHS`.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BuildPlan", "LayoutError", "plan_build"]

# The vendor CLI's reserved package names: a faux package may not shadow the server.
_RESERVED = frozenset(
    {"src", "langgraph-api", "langgraph_api", "langgraph", "langchain-core", "langchain_core",
     "pydantic", "orjson", "fastapi", "uvicorn", "psycopg", "httpx", "langsmith"}
)  # fmt: skip
# What the server reads of langgraph.json besides the graphs, as the CLI's Dockerfile
# sets it (config key -> environment variable, JSON-encoded).
_CONFIG_ENV = {
    "store": "LANGGRAPH_STORE",
    "auth": "LANGGRAPH_AUTH",
    "http": "LANGGRAPH_HTTP",
    "webhooks": "LANGGRAPH_WEBHOOKS",
    "checkpointer": "LANGGRAPH_CHECKPOINTER",
    "ui": "LANGGRAPH_UI",
    "ui_config": "LANGGRAPH_UI_CONFIG",
}
_UNSUPPORTED = {
    "dockerfile_lines": "dockerfile_lines are not supported by this remote build",
    "node_version": "JavaScript graphs (node_version) are not supported by this remote build",
}
PYTHON_VERSION = "3.11"  # the agent base's Python (Debian 12's python3)
_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


class LayoutError(ValueError):
    """The project cannot be laid out; the message is the build log's reason."""


@dataclass
class BuildPlan:
    """What the image is made of: archive directory -> container path, what pip
    installs (requirements, requirements files and local packages, as archive paths),
    the directories made importable, the image's environment and working directory."""

    copies: list[tuple[str, str]] = field(default_factory=list)
    requirements: list[str] = field(default_factory=list)
    requirement_files: list[str] = field(default_factory=list)
    local_packages: list[str] = field(default_factory=list)
    import_paths: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    working_dir: str | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Local:
    archive_dir: str
    container_dir: str
    real: bool


def _local_dependency(
    dep: str, base: str, listdir: Callable[[str], list[str] | None]
) -> tuple[str, list[str]]:
    """(archive directory, its entries) of the local dependency `dep`."""
    resolved = posixpath.normpath(posixpath.join(base, dep))
    if resolved == ".." or resolved.startswith(("../", "/")):
        raise LayoutError(f"local dependency {dep} is outside the source archive")
    entries = listdir(resolved)
    if entries is None:
        raise LayoutError(f"local dependency {dep} is not a directory of the source archive")
    return resolved, entries


def _dir_name(archive_dir: str, project: str) -> str:
    return project if archive_dir == "." else posixpath.basename(archive_dir)


def _locals(
    config: dict[str, Any], base: str, listdir: Callable[[str], list[str] | None], project: str
) -> tuple[list[_Local], BuildPlan]:
    plan = BuildPlan()
    found: list[_Local] = []
    used: dict[str, int] = {}
    for dep in config.get("dependencies") or []:
        if not isinstance(dep, str) or not dep.strip():
            raise LayoutError("a dependency is not a non-empty string")
        if not dep.startswith("."):
            plan.requirements.append(dep.strip())
            continue
        archive_dir, entries = _local_dependency(dep, base, listdir)
        name = _dir_name(archive_dir, project)
        if "pyproject.toml" in entries or "setup.py" in entries:
            suffix = f"_{used[name]}" if used.get(name) else ""
            used[name] = used.get(name, 0) + 1
            local = _Local(archive_dir, f"/deps/{name}{suffix}", real=True)
            plan.local_packages.append(archive_dir)
        else:
            if "__init__.py" in entries:
                if "-" in name or name in _RESERVED:
                    raise LayoutError(f"local dependency {dep}: {name!r} cannot be a package name")
                local = _Local(archive_dir, f"/deps/outer-{name}/{name}", real=False)
                plan.import_paths.append(f"/deps/outer-{name}")
            else:
                local = _Local(archive_dir, f"/deps/outer-{name}/src", real=False)
                plan.import_paths.append(local.container_dir)
            if "requirements.txt" in entries:
                plan.requirement_files.append(posixpath.normpath(f"{archive_dir}/requirements.txt"))
        if archive_dir == posixpath.normpath(base):
            plan.working_dir = local.container_dir
        plan.copies.append((archive_dir, local.container_dir))
        found.append(local)
    return found, plan


def _graph_path(graph_id: str, spec: str, base: str, locals_: list[_Local]) -> str:
    """The container path of the graph `spec` ("./agent.py:graph")."""
    path, sep, attr = spec.rpartition(":")
    if not sep or not path or not attr:
        raise LayoutError(f"graph '{graph_id}': {spec!r} is not 'path/to/file.py:attribute'")
    resolved = posixpath.normpath(posixpath.join(base, path))
    # Faux packages first, as the CLI does.
    for local in sorted(locals_, key=lambda item: item.real):
        inside = posixpath.relpath(resolved, local.archive_dir)
        if inside != ".." and not inside.startswith("../"):
            return f"{local.container_dir}/{inside}:{attr}"
    raise LayoutError(f"graph '{graph_id}': {path} is not inside a local dependency")


def plan_build(
    config: dict[str, Any],
    config_path: str,
    listdir: Callable[[str], list[str] | None],
    *,
    project: str,
) -> BuildPlan:
    """The plan of the project whose config `config` is at archive path `config_path`;
    `listdir(archive_dir)` gives a directory's entry names (None: not a directory);
    `project` names a local dependency that is the archive's root."""
    if not _NAME.match(project):
        raise LayoutError(f"project name {project!r} is not a directory name")
    for key, reason in _UNSUPPORTED.items():
        if config.get(key):
            raise LayoutError(reason)
    graphs = config.get("graphs")
    if not isinstance(graphs, dict) or not graphs:
        raise LayoutError("config has no graphs (a non-empty object 'graphs' is required)")
    dependencies = config.get("dependencies")
    if not isinstance(dependencies, list):
        raise LayoutError("'dependencies' must be a list")
    base = posixpath.dirname(posixpath.normpath(config_path)) or "."
    locals_, plan = _locals(config, base, listdir, project)
    rewritten: dict[str, Any] = {}
    for graph_id, spec in graphs.items():
        path = spec.get("path") if isinstance(spec, dict) else spec
        if not isinstance(path, str):
            raise LayoutError(f"graph '{graph_id}' has no file path")
        new_path = _graph_path(graph_id, path, base, locals_)
        rewritten[graph_id] = {**spec, "path": new_path} if isinstance(spec, dict) else new_path
    plan.env["LANGSERVE_GRAPHS"] = json.dumps(rewritten)
    for key, variable in _CONFIG_ENV.items():
        if config.get(key) is not None:
            plan.env[variable] = json.dumps(config[key])
    version = config.get("python_version")
    if version is not None and str(version) != PYTHON_VERSION:
        plan.warnings.append(
            f"python_version {version} asked; the agent base has Python {PYTHON_VERSION}"
        )
    return plan
