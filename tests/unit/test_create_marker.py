"""The create-pending marker is modelled once: an annotation on the object, never status."""

from __future__ import annotations

import pytest

from deployplane.crdgen.schema import custom_resource_definitions
from deployplane.kinds import KINDS
from deployplane.reconcile.marker import (
    CREATE_PENDING_ANNOTATION,
    CreatePending,
    read_marker,
)
from deployplane.reconcile.status import ResourceStatus


def test_no_status_model_or_crd_has_the_marker() -> None:
    assert "create_pending" not in ResourceStatus.model_fields
    for kind in KINDS:
        assert "create_pending" not in kind.status_model.model_fields, kind.kind
    for crd in custom_resource_definitions(KINDS):
        status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
        assert "createPending" not in status["properties"], crd["metadata"]["name"]


@pytest.mark.parametrize(
    "marker", [CreatePending("agent", "7"), CreatePending("compute-1"), CreatePending('a"b')]
)
def test_the_annotation_round_trips(marker: CreatePending) -> None:
    body = {"metadata": {"annotations": {CREATE_PENDING_ANNOTATION: marker.render()}}}
    assert read_marker(body) == marker


def test_a_damaged_annotation_still_says_a_create_may_have_happened() -> None:
    body = {"metadata": {"annotations": {CREATE_PENDING_ANNOTATION: "agent"}}}
    assert read_marker(body) == CreatePending("agent")


def test_an_earlier_versions_status_field_is_read_as_the_marker() -> None:
    body = {"metadata": {}, "status": {"createPending": {"key": "agent", "resourceVersion": "3"}}}
    assert read_marker(body) == CreatePending("agent", "3")


def test_no_marker() -> None:
    assert read_marker({"metadata": {"annotations": {"team": "a"}}, "status": {}}) is None
