"""Control-plane resources as the service returns them (JSON), shared by the tests of the
externals: unset optionals reported as null, as the service does."""

from __future__ import annotations

from typing import Any

LISTENER_ID = "33333333-3333-4333-8333-333333333333"
STAMP = "2026-01-01T00:00:00Z"


def listener_json(**over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": LISTENER_ID,
        "compute_type": "k8s",
        "compute_id": "cluster-a",
        "compute_config": {"k8s_namespaces": ["agents"]},
        "version": "1",
        "created_at": STAMP,
        "updated_at": STAMP,
    }
    body.update(over)
    return body
