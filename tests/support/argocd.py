"""Run the chart's Argo CD health check (Lua) the way Argo CD does, in-process.

Argo CD evaluates `resource.customizations.health.<group>_<kind>` with gopher-lua, a
Lua 5.1: the live object is the global `obj` and the script returns `{status, message}`.
`lupa.lua51` is the same language level, so a construct that Argo CD would refuse fails
here too. Any test (unit or e2e, on captured objects) can call `argocd_health`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from lupa import lua51

HEALTH_LUA = (
    Path(__file__).resolve().parents[2] / "charts" / "deployplane" / "argocd" / "health.lua"
)
STATUSES = frozenset({"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"})


class Health(NamedTuple):
    status: str
    message: str


def _to_lua(runtime: Any, value: Any) -> Any:
    # Argo CD hands the script the object decoded from JSON: objects and arrays become
    # tables (arrays 1-based), numbers become Lua numbers.
    if isinstance(value, dict):
        return runtime.table_from({k: _to_lua(runtime, v) for k, v in value.items()})
    if isinstance(value, list):
        return runtime.table_from([_to_lua(runtime, v) for v in value])
    return value


def argocd_health(obj: dict[str, Any], script: str | None = None) -> Health:
    """The health Argo CD would show for the live object `obj`."""
    runtime = lua51.LuaRuntime(unpack_returned_tuples=False)
    runtime.globals().obj = _to_lua(runtime, obj)
    result = runtime.execute(script if script is not None else HEALTH_LUA.read_text())
    status, message = result["status"], result["message"]
    if status not in STATUSES:
        raise AssertionError(f"health.lua returned status {status!r}, not one Argo CD knows")
    return Health(str(status), "" if message is None else str(message))
