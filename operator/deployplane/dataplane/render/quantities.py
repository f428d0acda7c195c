"""ResourceSpec numbers as Kubernetes values: counts, CPU and memory quantities,
container requests/limits; a number that cannot be one is a `RenderError`."""

from __future__ import annotations

from typing import Any

from deployplane.api.models import ResourceSpec
from deployplane.dataplane.render.model import Obj, RenderError


def number(value: float | None, field: str) -> float | None:
    if value is None:
        return None
    if value < 0:
        raise RenderError(f"resource_spec.{field} must not be negative")
    return float(value)


def count(value: int | None, field: str, default: int) -> int:
    """A replica count or size: an integer (the model refuses a fraction, as published)."""
    whole = number(value, field)
    return default if whole is None else int(whole)


def cpu_quantity(cores: float) -> str:
    """Cores as a Kubernetes quantity in canonical form: 0.5 -> 500m, 2 -> 2."""
    millicores = round(cores * 1000)
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def memory_quantity(megabytes: float) -> str:
    """`_mb` is megabytes (10^6 bytes, the spec's word), so the suffix is M, not Mi."""
    if float(megabytes).is_integer():
        return f"{int(megabytes)}M"
    return f"{round(megabytes * 1000)}k"


def resources(spec: ResourceSpec, prefix: str) -> Obj:
    """requests/limits from `<prefix>cpu`, `<prefix>cpu_limit`, `<prefix>memory_mb`..."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    for field, target, to_quantity in (
        ("cpu", requests, cpu_quantity),
        ("cpu_limit", limits, cpu_quantity),
        ("memory_mb", requests, memory_quantity),
        ("memory_limit_mb", limits, memory_quantity),
    ):
        name = prefix + field
        value = number(_spec_value(spec, name), name)
        if value is not None:
            target["cpu" if field.startswith("cpu") else "memory"] = to_quantity(value)
    result: Obj = {}
    if requests:
        result["requests"] = requests
    if limits:
        result["limits"] = limits
    return result


def _spec_value(spec: ResourceSpec, name: str) -> Any:
    # Fields of the published contract our model may not have yet (redis_cpu, ...) read
    # as unset rather than failing: the map covers them once the model does.
    return getattr(spec, name, None)
