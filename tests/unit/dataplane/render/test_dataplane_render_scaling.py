"""Replicas belong to the autoscaler (render/scaling.py): a Deployment an HPA or a
ScaledObject targets is rendered without `replicas`, with the count its creation starts
at beside it; one no autoscaler targets keeps its count, and the autoscalers the render
no longer makes for it are named for deletion."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.renderinputs import (
    BASE,
    IMAGE,
    PASSWORD,
    SECRET_VALUES,
    find,
    make_deployment,
    make_listener,
    make_revision,
)

from deployplane.api.dataplane import ServerRuntime
from deployplane.dataplane.render import (
    Autoscaler,
    DataPlaneSettings,
    Rendered,
    Retired,
    Scaled,
    render,
)

QUEUE = f"{BASE}-queue"
HPA = ("autoscaling/v2", "HorizontalPodAutoscaler")
SCALED_OBJECT = ("keda.sh/v1alpha1", "ScaledObject")


def rendered(
    spec: dict[str, Any],
    autoscaler: Autoscaler = Autoscaler.HPA,
    runtime: ServerRuntime = ServerRuntime.POSTGRES,
) -> Rendered:
    return render(
        make_deployment(spec),
        make_revision(),
        make_listener(),
        IMAGE,
        secret_values=SECRET_VALUES,
        database_password=PASSWORD,
        settings=DataPlaneSettings(autoscaler=autoscaler),
        runtime=runtime,
    )


def replicas(r: Rendered, name: str) -> Any:
    return find(r, "Deployment", name)["spec"].get("replicas")


@pytest.mark.parametrize(
    ("spec", "autoscaler", "scaled", "fixed"),
    [
        # No autoscaler: both counts fixed.
        ({"min_scale": 3}, Autoscaler.HPA, {}, {BASE: 3, QUEUE: 1}),
        # The server's HPA: its count is the HPA's, created at min_scale.
        ({"min_scale": 2, "max_scale": 6}, Autoscaler.HPA, {BASE: 2}, {QUEUE: 1}),
        # Scaled to zero: no HPA acts on it, so the count stays.
        ({"min_scale": 0, "max_scale": 6}, Autoscaler.HPA, {}, {BASE: 0, QUEUE: 1}),
        (
            {"min_scale": 2, "max_scale": 6, "queue_min_scale": 3, "queue_max_scale": 9},
            Autoscaler.HPA,
            {BASE: 2, QUEUE: 3},
            {},
        ),
        # KEDA scales the queue from zero too: created at 0, then KEDA's.
        ({"queue_min_scale": 0, "queue_max_scale": 4}, Autoscaler.KEDA, {QUEUE: 0}, {BASE: 1}),
        ({"queue_max_scale": 4}, Autoscaler.KEDA, {QUEUE: 1}, {BASE: 1}),
    ],
)
def test_a_deployment_an_autoscaler_targets_carries_no_replicas(
    spec: dict[str, Any],
    autoscaler: Autoscaler,
    scaled: dict[str, int],
    fixed: dict[str, int],
) -> None:
    r = rendered(spec, autoscaler)
    assert {s.name: s.initial for s in r.scaled} == scaled
    for name in scaled:
        assert replicas(r, name) is None, name
    for name, count in fixed.items():
        assert replicas(r, name) == count, name
    targets = {
        o["spec"]["scaleTargetRef"]["name"]
        for o in r.objects
        if o["kind"] in ("HorizontalPodAutoscaler", "ScaledObject")
    }
    assert targets == set(scaled)


@pytest.mark.parametrize(
    ("spec", "autoscaler", "retired"),
    [
        ({}, Autoscaler.HPA, {(*HPA, BASE), (*HPA, QUEUE)}),
        ({"max_scale": 3}, Autoscaler.HPA, {(*HPA, QUEUE)}),
        ({"max_scale": 3, "queue_max_scale": 3}, Autoscaler.HPA, set()),
        # KEDA: an HPA of the queue (from before the setting) and a ScaledObject.
        ({}, Autoscaler.KEDA, {(*HPA, BASE), (*HPA, QUEUE), (*SCALED_OBJECT, QUEUE)}),
        ({"queue_max_scale": 3}, Autoscaler.KEDA, {(*HPA, BASE), (*HPA, QUEUE)}),
    ],
)
def test_the_autoscalers_a_render_no_longer_makes_are_retired(
    spec: dict[str, Any], autoscaler: Autoscaler, retired: set[tuple[str, str, str]]
) -> None:
    r = rendered(spec, autoscaler)
    assert {(x.api_version, x.kind, x.name) for x in r.retired} == retired
    made = {(o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in r.objects}
    assert not made & retired


def test_the_in_memory_server_keeps_its_one_replica_and_retires_any_hpa() -> None:
    r = rendered({"min_scale": 2, "max_scale": 5}, runtime=ServerRuntime.INMEM)
    assert replicas(r, BASE) == 1
    assert r.scaled == ()
    assert r.retired == (Retired(*HPA, BASE),)


def test_the_render_is_the_same_for_the_same_input_and_its_digest_leaves_out_replicas() -> None:
    """The upgrade test compares renders: an autoscaled Deployment renders alike whatever
    the autoscaler does, and the digest is of what is applied."""
    spec = {"min_scale": 2, "max_scale": 6}
    first, second = rendered(spec), rendered(spec)
    assert first.objects == second.objects
    assert first.owner == second.owner
    assert first.scaled == second.scaled == (Scaled(BASE, 2),)
    other_minimum = rendered({"min_scale": 3, "max_scale": 6})
    server = find(other_minimum, "Deployment", BASE)
    assert server == find(first, "Deployment", BASE)  # the count is not in the object
    assert other_minimum.owner != first.owner  # the HPA's minReplicas changed
