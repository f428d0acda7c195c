"""Replicas belong to the autoscaler: a Deployment that an HPA or a ScaledObject targets
is rendered without `replicas`.

The agent's applies are forced, so a `replicas` in the applied object would set the
count at every apply: each new revision would put a Deployment its autoscaler had
scaled out back to the minimum, under load, until the autoscaler reacted again.
Rendered without it, the count is the autoscaler's; the agent creates the Deployment at
the minimum (`Scaled.initial`) and hands the field over (applier.py, `apply_workload`).

A Deployment that no autoscaler targets keeps its fixed count (`min_scale`, or one for
the in-memory server), and an autoscaler the render no longer makes for it is
`Retired`: one left behind would go on scaling it.
"""

from __future__ import annotations

from collections.abc import Sequence

from deployplane.dataplane.render.context import LABEL_COMPONENT, QUEUE, SERVER, Context
from deployplane.dataplane.render.keda import KEDA_API_VERSION
from deployplane.dataplane.render.model import Obj, Retired, Scaled
from deployplane.dataplane.render.settings import Autoscaler

__all__ = ["AUTOSCALERS", "hand_to_autoscalers"]

HPA = ("autoscaling/v2", "HorizontalPodAutoscaler")
SCALED_OBJECT = (KEDA_API_VERSION, "ScaledObject")
AUTOSCALERS = (HPA, SCALED_OBJECT)


def hand_to_autoscalers(
    ctx: Context, objects: Sequence[Obj]
) -> tuple[list[Obj], tuple[Scaled, ...], tuple[Retired, ...]]:
    """`objects` with `replicas` taken out of every Deployment an autoscaler among them
    targets; those Deployments with the count they start at; the autoscalers the agent
    would make for the others, which must not be left in the cluster."""
    made = {
        (obj["apiVersion"], obj["kind"], obj["spec"]["scaleTargetRef"]["name"])
        for obj in objects
        if (obj["apiVersion"], obj["kind"]) in AUTOSCALERS
    }
    targeted = {name for _, _, name in made}
    result: list[Obj] = []
    scaled: list[Scaled] = []
    retired: list[Retired] = []
    for obj in objects:
        component = (obj["metadata"].get("labels") or {}).get(LABEL_COMPONENT)
        if obj["kind"] != "Deployment" or component not in (SERVER, QUEUE):
            result.append(obj)
            continue
        name = obj["metadata"]["name"]
        if name in targeted:
            spec = {key: value for key, value in obj["spec"].items() if key != "replicas"}
            result.append({**obj, "spec": spec})
            scaled.append(Scaled(name, int(obj["spec"]["replicas"])))
        else:
            result.append(obj)
        retired += [
            Retired(api_version, kind, name)
            for api_version, kind in _kinds(ctx, component)
            if (api_version, kind, name) not in made
        ]
    return result, tuple(scaled), tuple(retired)


def _kinds(ctx: Context, component: str) -> tuple[tuple[str, str], ...]:
    """The autoscalers the agent may have made for a component: an HPA, and for the
    queue with KEDA a ScaledObject (the agent reads ScaledObjects only when its settings
    say keda: its Role grants them only then)."""
    if component == QUEUE and ctx.settings.autoscaler is Autoscaler.KEDA:
        return (HPA, SCALED_OBJECT)
    return (HPA,)
