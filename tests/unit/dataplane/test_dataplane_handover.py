"""Replicas handed to the autoscaler (dataplane/handover.py), against the fake cluster,
whose `spec.replicas` has managers as the apiserver's server-side apply gives it: a
Deployment an autoscaler targets is created at its minimum and never has its count set
by the agent again, whoever applied it before; autoscaling turned off gives the count
back to the render once the autoscaler left behind is deleted."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.fakecluster import AUTOSCALER_MANAGER, FakeCluster
from tests.support.renderinputs import (
    BASE,
    IMAGE,
    PASSWORD,
    SECRET_VALUES,
    make_deployment,
    make_listener,
    make_revision,
)

from deployplane.dataplane.applier import apply_rendered
from deployplane.dataplane.handover import owns_replicas
from deployplane.dataplane.kube import FIELD_MANAGER, SCALE_MANAGER, ClusterError
from deployplane.dataplane.render import Rendered, render

SERVER = ("Deployment", "agents", BASE)
SERVER_HPA = ("HorizontalPodAutoscaler", "agents", BASE)
AUTOSCALED = {"min_scale": 2, "max_scale": 6}


def rendered(spec: dict[str, Any], image: str = IMAGE) -> Rendered:
    return render(
        make_deployment(spec),
        make_revision(),
        make_listener(),
        image,
        secret_values=SECRET_VALUES,
        database_password=PASSWORD,
    )


async def apply(cluster: FakeCluster, r: Rendered) -> None:
    owner = await cluster.get("v1", "ConfigMap", "agents", BASE)
    await apply_rendered(cluster, r, owner)


def count(cluster: FakeCluster) -> int:
    replicas: int = cluster.objects[SERVER]["spec"].get("replicas", 1)
    return replicas


async def test_an_autoscaled_deployment_is_created_at_its_minimum_and_left_to_the_hpa() -> None:
    cluster = FakeCluster()
    await apply(cluster, rendered(AUTOSCALED))
    assert cluster.replica_history[SERVER] == [2]  # never the default 1 on the way
    assert set(cluster.replica_owners[SERVER]) == {SCALE_MANAGER}  # not the agent's manager
    live = await cluster.get("apps/v1", "Deployment", "agents", BASE)
    assert live is not None
    assert not owns_replicas(live, FIELD_MANAGER)


async def test_a_new_revision_keeps_the_count_the_autoscaler_holds() -> None:
    cluster = FakeCluster()
    await apply(cluster, rendered(AUTOSCALED))
    cluster.scale("agents", BASE, 4)  # the HPA scales out
    await apply(cluster, rendered(AUTOSCALED, image="registry.example/agent:2.0"))
    server = cluster.objects[SERVER]
    assert server["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":2.0")
    assert cluster.replica_history[SERVER] == [2, 4]  # never back to the minimum
    assert set(cluster.replica_owners[SERVER]) == {AUTOSCALER_MANAGER}


async def test_a_count_the_agents_manager_owned_alone_is_handed_over_without_a_reset() -> None:
    """A Deployment applied with its count by the agent's manager (a render without an
    autoscaler, or an agent that rendered every count): taking the count out of the
    apply would drop it to 1; the handover keeps it."""
    cluster = FakeCluster()
    await apply(cluster, rendered({"min_scale": 3}))
    assert set(cluster.replica_owners[SERVER]) == {FIELD_MANAGER}
    await apply(cluster, rendered({"min_scale": 3, "max_scale": 6}))
    assert cluster.replica_history[SERVER] == [3]
    assert set(cluster.replica_owners[SERVER]) == {SCALE_MANAGER}


async def test_turned_off_the_hpa_is_deleted_and_the_count_is_the_renders_again() -> None:
    cluster = FakeCluster()
    await apply(cluster, rendered(AUTOSCALED))
    cluster.scale("agents", BASE, 5)
    await apply(cluster, rendered({"min_scale": 2}))
    assert SERVER_HPA not in cluster.objects
    assert count(cluster) == 2
    assert set(cluster.replica_owners[SERVER]) == {FIELD_MANAGER}
    # and on again: created HPA, the count handed over where it is
    await apply(cluster, rendered(AUTOSCALED))
    assert SERVER_HPA in cluster.objects
    assert count(cluster) == 2
    assert set(cluster.replica_owners[SERVER]) == {SCALE_MANAGER}


async def test_an_hpa_the_deployment_does_not_own_is_left_alone() -> None:
    cluster = FakeCluster()
    await apply(cluster, rendered({"min_scale": 2}))
    theirs = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": BASE, "namespace": "agents"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": BASE}, "maxReplicas": 3},
    }
    await cluster.apply(theirs, field_manager="someone-else")
    await apply(cluster, rendered({"min_scale": 3}))
    assert SERVER_HPA in cluster.objects


async def test_a_conflict_means_the_autoscaler_took_the_count_first() -> None:
    """Between the agent's read and its handover the HPA writes another count: the
    unforced apply conflicts, and the count is the HPA's already."""
    cluster = FakeCluster()
    await apply(cluster, rendered({"min_scale": 3}))
    original = cluster.apply

    async def hpa_acts_first(obj: Any, **options: Any) -> dict[str, Any]:
        if options.get("field_manager") == SCALE_MANAGER:
            cluster.scale("agents", BASE, 5)
        return await original(obj, **options)

    cluster.apply = hpa_acts_first  # type: ignore[method-assign]
    await apply(cluster, rendered({"min_scale": 3, "max_scale": 6}))
    assert count(cluster) == 5
    assert set(cluster.replica_owners[SERVER]) == {AUTOSCALER_MANAGER}


async def test_another_refusal_of_the_handover_is_not_swallowed() -> None:
    cluster = FakeCluster()
    await apply(cluster, rendered({"min_scale": 3}))
    original = cluster.apply

    async def refused(obj: Any, **options: Any) -> dict[str, Any]:
        if options.get("field_manager") == SCALE_MANAGER:
            raise ClusterError("PATCH ...: 403 forbidden", status=403)
        return await original(obj, **options)

    cluster.apply = refused  # type: ignore[method-assign]
    with pytest.raises(ClusterError):
        await apply(cluster, rendered({"min_scale": 3, "max_scale": 6}))
    assert count(cluster) == 3


# What a real apiserver answers (kube-apiserver 1.36, trimmed): the agent's manager and
# the HPA controller's write through the scale subresource.
MANAGED_FIELDS = [
    {
        "manager": FIELD_MANAGER,
        "operation": "Apply",
        "apiVersion": "apps/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {}}},
    },
    {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "apps/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:replicas": {}}},
        "subresource": "scale",
    },
]


@pytest.mark.parametrize(
    ("entries", "owned"),
    [
        (MANAGED_FIELDS, True),
        (MANAGED_FIELDS[1:], False),
        ([{**MANAGED_FIELDS[0], "fieldsV1": {"f:spec": {"f:template": {}}}}], False),
        ([{**MANAGED_FIELDS[0], "operation": "Update"}], False),
        ([], False),
    ],
)
def test_who_owns_the_count_is_read_from_managed_fields(
    entries: list[dict[str, Any]], owned: bool
) -> None:
    deployment = {"metadata": {"name": BASE, "managedFields": entries}}
    assert owns_replicas(deployment, FIELD_MANAGER) is owned
