"""Argo CD's health of deployplane's objects, given by Argo CD's own code.

The judge is the `argocd` binary `make gitops-tools` builds (tools/gitops/build.sh), run
offline as `argocd admin settings resource-overrides health FILE --argocd-cm-path
argocd-cm.yaml` over the argocd-cm the dev cluster installs (the release's, with the
chart's health.lua for every kind). That is the application-controller's own path: the
same gopher-lua VM with only the libraries Argo CD opens, the same rule for an object
being deleted before any script, the same check of the status the script returns. A
script that fails there (a nil library, a runtime error) fails the caller with
Argo CD's error.

The binary judges one object per process: `argocd_health_all` runs a batch side by side.
Where it is not built, `require_argocd` skips the caller, except under CI=true or with
DEPLOYPLANE_GITOPS_TOOLS set (`make test` sets it once it has built them): then the
caller fails.

`lua_precheck` runs the script in lupa's Lua 5.1 with only the globals Argo CD's VM has:
a quick look that needs no binary, never the verdict.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from lupa import lua51

from deployplane.devcluster.errors import DevClusterError
from deployplane.devcluster.gitops import find_gitops_root
from deployplane.devcluster.gitops.argocd import HEALTH_LUA, health_customizations
from deployplane.devcluster.gitops.tools import ENV_GITOPS_TOOLS

STATUSES = frozenset({"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"})
# Processes side by side: each is mostly the Go runtime starting and reading its flags.
WORKERS = max(2, 2 * (os.cpu_count() or 1))


class Health(NamedTuple):
    status: str
    message: str


class ArgoCDNotFound(RuntimeError):
    """The argocd binary is not built."""


def argocd_binary() -> Path:
    """The argocd binary of `make gitops-tools`, or ArgoCDNotFound saying where to get it."""
    try:
        root = find_gitops_root()
    except DevClusterError as e:
        raise ArgoCDNotFound(str(e)) from e
    return root / "bin" / "argocd"


def argocd_required() -> bool:
    """A missing binary fails rather than skips: under CI, or where the tools were named."""
    return os.environ.get("CI", "").lower() == "true" or bool(os.environ.get(ENV_GITOPS_TOOLS))


def require_argocd() -> Path:
    """The binary; else the test is skipped (failed under CI=true or make test)."""
    try:
        return argocd_binary()
    except ArgoCDNotFound as e:
        if argocd_required():
            pytest.fail(str(e), pytrace=False)
        pytest.skip(str(e))


def argocd_cm(script: str | None = None) -> dict[str, Any]:
    """argocd-cm as the dev cluster installs it: the release's, with the chart's health
    check (or `script`) for every kind the chart ships a CRD for."""
    cm: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": "argocd"},
    }
    try:
        release = find_gitops_root() / "manifests" / "argocd" / "config" / "argocd-cm.yaml"
        cm = yaml.safe_load(release.read_text()) or cm
    except (DevClusterError, OSError):
        pass
    checks = health_customizations()
    if script is not None:
        checks = dict.fromkeys(checks, script)
    cm["data"] = {**(cm.get("data") or {}), **checks}
    return cm


HEALTH_COMMAND = ("admin", "settings", "resource-overrides", "health")


def _judged(binary: Path, cm: Path, obj: Path) -> Health:
    done = subprocess.run(
        [str(binary), *HEALTH_COMMAND, str(obj), "--argocd-cm-path", str(cm)],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "ARGOCD_BINARY_NAME"},
        check=False,
    )
    out = done.stdout
    if done.returncode != 0 or not out.startswith("STATUS: "):
        raise AssertionError(
            f"argocd judged {obj.name}: exit {done.returncode}\n{out}{done.stderr}"
        )
    status, _, message = out.removeprefix("STATUS: ").partition("\nMESSAGE: ")
    return Health(status.strip(), message.removesuffix("\n"))


def argocd_health_all(objs: Sequence[dict[str, Any]], script: str | None = None) -> list[Health]:
    """Argo CD's health of each live object, in order (one process each, side by side),
    by the chart's health check or `script`."""
    binary = require_argocd()
    with tempfile.TemporaryDirectory(prefix="argocd-health-") as tmp:
        directory = Path(tmp)
        cm = directory / "argocd-cm.yaml"
        cm.write_text(yaml.safe_dump(argocd_cm(script)))
        files = []
        for index, obj in enumerate(objs):
            path = directory / f"{index:04d}.yaml"
            path.write_text(yaml.safe_dump(obj))
            files.append(path)
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            return list(pool.map(lambda path: _judged(binary, cm, path), files))


def argocd_health(obj: dict[str, Any]) -> Health:
    """Argo CD's health of one live object."""
    (health,) = argocd_health_all([obj])
    return health


# ------------------------------------------------------------------- the pre-check

# What Argo CD's VM has (util/lua/lua.go of v3.5.3: lua.NewState with SkipOpenLibs, then
# the package, base and table libraries; os.time and os.date only through require("os")):
# gopher-lua's base library and those tables. No `string` (nor the string methods it
# would give ("x"):len()), no `os` global, no io, math or debug.
_ARGOCD_GLOBALS = (
    *("_G", "_VERSION", "assert", "collectgarbage", "dofile", "error", "getfenv"),
    *("getmetatable", "ipairs", "load", "loadfile", "loadstring", "module", "newproxy"),
    *("next", "pairs", "pcall", "print", "rawequal", "rawget", "rawset", "require"),
    *("select", "setfenv", "setmetatable", "tonumber", "tostring", "type", "unpack"),
    *("xpcall", "package", "table"),
)
_RESTRICT = """
local keep = {}
for _, name in ipairs({...}) do keep[name] = true end
debug.setmetatable("", nil)
for name in pairs(_G) do
  if not keep[name] then _G[name] = nil end
end
"""


def _to_lua(runtime: Any, value: Any) -> Any:
    # Argo CD hands the script the object decoded from JSON: objects and arrays become
    # tables (arrays 1-based), numbers become Lua numbers.
    if isinstance(value, dict):
        return runtime.table_from({k: _to_lua(runtime, v) for k, v in value.items()})
    if isinstance(value, list):
        return runtime.table_from([_to_lua(runtime, v) for v in value])
    return value


def lua_precheck(obj: dict[str, Any], script: str | None = None) -> Health:
    """The script's answer in a Lua 5.1 with only the globals Argo CD's VM has (no
    deletion rule before it, no status check after: those are Argo CD's)."""
    runtime = lua51.LuaRuntime(unpack_returned_tuples=False)
    runtime.execute(_RESTRICT, *_ARGOCD_GLOBALS)
    runtime.globals().obj = _to_lua(runtime, obj)
    result = runtime.execute(script if script is not None else HEALTH_LUA.read_text())
    status, message = result["status"], result["message"]
    if status not in STATUSES:
        raise AssertionError(f"health.lua returned status {status!r}, not one Argo CD knows")
    return Health(str(status), "" if message is None else str(message))
