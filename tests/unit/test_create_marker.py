"""The create marker is modelled once: an annotation on the object (Crossplane's
external-name: the natural key), never status; earlier versions' markers still read."""

from __future__ import annotations

import pytest

from deployplane.crdgen.schema import custom_resource_definitions
from deployplane.kinds import KINDS
from deployplane.reconcile.marker import (
    EXTERNAL_NAME_ANNOTATION,
    LEGACY_ANNOTATION,
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


def test_an_earlier_versions_annotation_is_read_as_the_marker() -> None:
    raw = '{"key":"agent","resourceVersion":"3"}'
    assert read_marker({"metadata": {"annotations": {LEGACY_ANNOTATION: raw}}}) == CreatePending(
        "agent", "3"
    )


def test_the_external_name_wins_over_an_earlier_versions_annotation() -> None:
    annotations = {EXTERNAL_NAME_ANNOTATION: "new", LEGACY_ANNOTATION: '{"key":"old"}'}
    assert read_marker({"metadata": {"annotations": annotations}}) == CreatePending("new")


def test_a_damaged_annotation_still_says_a_create_may_have_happened() -> None:
    body = {"metadata": {"annotations": {LEGACY_ANNOTATION: "{agent"}}}
    assert read_marker(body) == CreatePending("{agent")


def test_an_earlier_versions_status_field_is_read_as_the_marker() -> None:
    body = {"metadata": {}, "status": {"createPending": {"key": "agent", "resourceVersion": "3"}}}
    assert read_marker(body) == CreatePending("agent", "3")


def test_no_marker() -> None:
    assert read_marker({"metadata": {"annotations": {"team": "a"}}, "status": {}}) is None
