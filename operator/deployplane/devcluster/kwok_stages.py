"""kwok's Stages as dicts: which objects each Stage selects and which steps it runs.

The templates the steps fill in are in kwok_templates.py; what kwok is and why these
Stages differ from upstream is in kwok.py's docstring.
"""

from __future__ import annotations

from typing import Any

from deployplane.devcluster import kwok_templates as templates

FAIL_PULL_PATTERN = "fail-pull"
STORAGE_CLASS = "kwok-volume"

_STAGE_API = "kwok.x-k8s.io/v1alpha1"


# Node and Pod selectors are jq, as in kwok's own Stages: kwok's CEL environment types
# Pods and Nodes and cannot resolve list elements inside macros (`conditions.exists(c,
# c.type == ...)` fails to compile). PVCs and PVs use CEL on plain fields, as upstream.
Jq = tuple[str, str, list[str]]


def _jq(*requirements: Jq) -> dict[str, Any]:
    return {
        "matchExpressions": [
            {"jq": {"key": key, "operator": op, **({"values": values} if values else {})}}
            for key, op, values in requirements
        ]
    }


def _cel(*expressions: str) -> dict[str, Any]:
    return {"matchExpressions": [{"cel": {"expression": e}} for e in expressions]}


_NOT_DELETED: Jq = (".metadata.deletionTimestamp", "DoesNotExist", [])
_PENDING: Jq = (".status.phase", "In", ["Pending"])
_NOT_READY: Jq = ('.status.conditions.[] | select( .type == "Ready" ) | .status', "NotIn", ["True"])


def _any_image_contains(pattern: str) -> str:
    """jq: "true" when an image of the pod's containers or init containers has `pattern`."""
    return (
        "[(.spec.containers // [])[].image, (.spec.initContainers // [])[].image]"
        f' | any(contains("{pattern}"))'
    )


def _waiting_reason() -> str:
    return ".status.containerStatuses[]?.state.waiting.reason"


def _stage(name: str, kind: str, selector: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": _STAGE_API,
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": {"resourceRef": {"apiGroup": "v1", "kind": kind}, "selector": selector, **spec},
    }


def _status_patch(template: str) -> dict[str, Any]:
    return {"patch": {"root": "status", "subresource": "status", "template": template}}


def node_stages() -> list[dict[str, Any]]:
    return [
        _stage(
            "node-initialize",
            "Node",
            _jq(_NOT_READY),
            steps=[_status_patch(templates.NODE_INITIALIZE)],
        )
    ]


def pod_stages() -> list[dict[str, Any]]:
    return [*_pod_image_stages(), *_pod_end_stages()]


def _pod_image_stages() -> list[dict[str, Any]]:
    """Ready, or stuck pulling an image that contains FAIL_PULL_PATTERN."""
    fails = _any_image_contains(FAIL_PULL_PATTERN)
    return [
        _stage(
            "pod-ready",
            "Pod",
            _jq(_NOT_DELETED, _PENDING, _NOT_READY, (fails, "NotIn", ["true"])),
            steps=[_status_patch(templates.POD_READY)],
        ),
        _stage(
            "pod-fail-pull",
            "Pod",
            _jq(
                _NOT_DELETED,
                _PENDING,
                (fails, "In", ["true"]),
                (_waiting_reason(), "NotIn", ["ErrImagePull", "ImagePullBackOff"]),
            ),
            steps=[
                _status_patch(
                    templates.pull_failure(
                        "ErrImagePull", 'Failed to pull image \\"%s\\": not found'
                    )
                )
            ],
        ),
        _stage(
            "pod-image-pull-backoff",
            "Pod",
            _jq(_NOT_DELETED, _PENDING, (_waiting_reason(), "In", ["ErrImagePull"])),
            delay={"durationMilliseconds": 2000},
            steps=[
                _status_patch(
                    templates.pull_failure("ImagePullBackOff", 'Back-off pulling image \\"%s\\"')
                )
            ],
        ),
    ]


def _pod_end_stages() -> list[dict[str, Any]]:
    """A Job's pod completes; a deleted pod goes away."""
    return [
        _stage(
            "pod-complete",
            "Pod",
            _jq(
                _NOT_DELETED,
                (".status.phase", "In", ["Running"]),
                (".metadata.ownerReferences.[].kind", "In", ["Job"]),
            ),
            steps=[_status_patch(templates.POD_COMPLETE)],
        ),
        # Without a kubelet nobody would finish a graceful deletion.
        _stage(
            "pod-delete",
            "Pod",
            _jq((".metadata.deletionTimestamp", "Exists", [])),
            steps=[{"delete": True}],
        ),
    ]


def volume_stages() -> list[dict[str, Any]]:
    """A fake provisioner for the `kwok-volume` StorageClass (PostgreSQL's PVCs)."""
    ours = f"self.spec.storageClassName == '{STORAGE_CLASS}'"
    not_deleted = "!has(self.metadata.deletionTimestamp)"
    return [
        _stage(
            "pvc-provision",
            "PersistentVolumeClaim",
            _cel(ours, not_deleted, "!has(self.spec.volumeName)"),
            steps=[
                {"apply": {"template": templates.PV_FOR_CLAIM}},
                {"patch": {"root": "metadata", "template": templates.CLAIM_BOUND_ANNOTATIONS}},
                {"patch": {"root": "spec", "template": templates.CLAIM_VOLUME_NAME}},
                _status_patch(templates.CLAIM_BOUND_STATUS),
            ],
        ),
        _stage(
            "pv-bind",
            "PersistentVolume",
            _cel(
                ours,
                not_deleted,
                "has(self.spec.claimRef)",
                "!has(self.status.phase)"
                " || !(self.status.phase in ['Bound', 'Released', 'Failed'])",
            ),
            steps=[_status_patch("phase: Bound\n")],
        ),
        # The claim is gone (a deleted StatefulSet takes its PVCs along): so is the volume.
        _stage(
            "pvc-delete",
            "PersistentVolumeClaim",
            _cel(ours, "has(self.metadata.deletionTimestamp)", "has(self.spec.volumeName)"),
            steps=[
                {
                    "apply": {
                        "subresource": "status",
                        "type": "merge",
                        "template": templates.VOLUME_RELEASED,
                    }
                }
            ],
        ),
        _stage(
            "pv-delete",
            "PersistentVolume",
            _cel(ours, not_deleted, "has(self.status.phase) && self.status.phase == 'Released'"),
            steps=[{"delete": True}],
        ),
    ]
