"""The create marker is modelled once: an annotation on the object (Crossplane's
external-name: the natural key), never status."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from deployplane.crdgen.schema import custom_resource_definitions
from deployplane.kinds import KINDS
from deployplane.reconcile.marker import (
    CREATE_PENDING_ANNOTATION,
    EXTERNAL_NAME_ANNOTATION,
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


@pytest.mark.parametrize("key", ["agent", "compute-1", "a.b-c_d"])
def test_the_annotation_is_the_key_alone(key: str) -> None:
    marker = CreatePending(key, "7")
    assert marker.render() == key
    body = {"metadata": {"annotations": {EXTERNAL_NAME_ANNOTATION: marker.render()}}}
    assert read_marker(body) == CreatePending(key)


def test_a_hand_written_annotation_is_the_key_as_written() -> None:
    """Adoption by external-name (Crossplane's import): whatever the value, it is the
    key a create may have happened under."""
    body = {"metadata": {"annotations": {EXTERNAL_NAME_ANNOTATION: "{agent"}}}
    assert read_marker(body) == CreatePending("{agent")


def test_an_empty_annotation_is_no_marker() -> None:
    assert read_marker({"metadata": {"annotations": {EXTERNAL_NAME_ANNOTATION: ""}}}) is None


def test_no_marker() -> None:
    assert read_marker({"metadata": {"annotations": {"team": "a"}}, "status": {}}) is None


def test_the_time_of_the_first_create_call_is_read_with_the_key() -> None:
    annotations = {
        EXTERNAL_NAME_ANNOTATION: "agent",
        CREATE_PENDING_ANNOTATION: "2026-03-04T05:06:07Z",
    }
    marker = read_marker({"metadata": {"annotations": annotations}})
    assert marker == CreatePending("agent", requested_at=datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC))
    assert marker.render_requested_at() == "2026-03-04T05:06:07Z"


@pytest.mark.parametrize("value", ["", "yesterday", "2026-03-04 05:06:07", "2026-13-04T05:06:07Z"])
def test_a_time_that_is_no_such_time_is_not_known(value: str) -> None:
    annotations = {EXTERNAL_NAME_ANNOTATION: "agent", CREATE_PENDING_ANNOTATION: value}
    assert read_marker({"metadata": {"annotations": annotations}}) == CreatePending("agent")
