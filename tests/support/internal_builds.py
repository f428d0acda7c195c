"""The vendor CLI's remote build at the API, step by step: an `internal_source`
deployment, its signed upload URL, the upload, and the PATCH that builds what was
uploaded. Shared by the build tests (test_controlplane_builds) and the image-build
tests (test_imagebuild)."""

from __future__ import annotations

from typing import Any

import httpx
from tests.support.published import assert_published


async def internal(api: httpx.AsyncClient, name: str, source: str = "internal_source") -> str:
    created = await api.post(
        "/v2/deployments",
        json={"name": name, "source": source, "source_config": {"deployment_type": "dev_zero"}},
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert_published("Deployment", body)
    assert body["latest_revision_id"] is None  # nothing to build or run yet
    assert body["source_config"]["deployment_type"] == "dev_zero"  # the CLI's serverless
    return str(body["id"])


async def upload_url(api: httpx.AsyncClient, dep: str) -> dict[str, Any]:
    answer = await api.post(
        f"/v2/deployments/{dep}/upload-url", json={"supports_upload_headers": True}
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def put(
    api: httpx.AsyncClient, url: dict[str, Any], data: bytes, **headers: str
) -> httpx.Response:
    return await api.put(
        url["upload_url"], content=data, headers={**url["upload_headers"], **headers}
    )


async def build(api: httpx.AsyncClient, dep: str, object_path: str) -> httpx.Response:
    return await api.patch(
        f"/v2/deployments/{dep}",
        json={
            "revision_source": "internal_source",
            "source_revision_config": {
                "source_tarball_path": object_path,
                "langgraph_config_path": "langgraph.json",
            },
            "tracked_packages": ["langgraph"],
        },
    )
