"""The emulator's OpenAPI document (issue 14, finding 9): valid OpenAPI 3.1, bounds as
JSON Schema, no security alternative of X-Tenant-Id alone, and every status code the
server sends documented for the operation that sends it."""
# ruff: noqa: F811  (pytest fixtures imported from the harness are parameters here)

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate
from tests.support.emulator_app import (  # noqa: F401  (fixtures are used by name)
    INTEGRATION_A,
    K8S_LISTENER,
    WORKSPACE_B,
    api,
    emulator,
    git_body,
    image_body,
)

Document = dict[str, Any]


@pytest.fixture
async def document(api: httpx.AsyncClient) -> Document:
    response = await api.get("/openapi.json")
    assert response.status_code == 200
    result: Document = response.json()
    return result


def test_the_document_is_valid_openapi_3_1(document: Document) -> None:
    assert document["openapi"].startswith("3.1")
    validate(document)  # raises on any violation of the OpenAPI 3.1 schema


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for value in node.values() for k in _keys(value)}
    if isinstance(node, list):
        return {k for value in node for k in _keys(value)}
    return set()


def test_bounds_are_json_schema_keywords(document: Document) -> None:
    schemas = document["components"]["schemas"]
    assert not {"ge", "le", "gt", "lt"} & _keys(schemas)
    min_scale = schemas["ResourceSpec"]["properties"]["min_scale"]
    assert min_scale["anyOf"][0]["minimum"] == 0
    name = schemas["DeploymentCreate"]["properties"]["name"]  # optional: `agent` instead
    assert name["anyOf"][0]["maxLength"] == 253


def test_deployment_secrets_are_documented_in_the_published_secret_shape(
    document: Document,
) -> None:
    """The published `Deployment.secrets` items are `Secret` ({name, value}, both
    required) in answers too; the document says so, and what the server answers
    (each value the mask, test_controlplane_deployments.py) is valid against it."""
    schemas = document["components"]["schemas"]
    secrets = schemas["Deployment"]["properties"]["secrets"]
    items = next(branch["items"] for branch in secrets["anyOf"] if branch["type"] == "array")
    assert items == {"$ref": "#/components/schemas/Secret"}
    assert sorted(schemas["Secret"]["required"]) == ["name", "value"]
    assert "secrets" in schemas["Deployment"]["required"]


def test_tenant_id_is_never_a_credential_on_its_own(document: Document) -> None:
    schemes = document["components"]["securitySchemes"]
    tenant = next(name for name, s in schemes.items() if s.get("name") == "X-Tenant-Id")
    for operations in document["paths"].values():
        for operation in operations.values():
            alternatives = operation["security"]
            assert {tenant: []} not in alternatives
            assert all(set(alternative) - {tenant} for alternative in alternatives)
            assert {"ApiKey": []} in alternatives


def _template(document: Document, method: str, path: str) -> Document:
    """The operation of `document` that serves METHOD path."""
    path = path.split("?", 1)[0]
    for template, operations in document["paths"].items():
        pattern = "^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"
        if re.match(pattern, path) and method.lower() in operations:
            operation: Document = operations[method.lower()]
            return operation
    raise AssertionError(f"{method} {path} is not in the document")


async def _scenarios(api: httpx.AsyncClient) -> list[tuple[str, str, Any, int]]:
    """(method, path, json body, expected status): every status of every operation."""
    listener = (await api.post("/v2/listeners", json=K8S_LISTENER)).json()
    used = (await api.post("/v2/listeners", json={**K8S_LISTENER, "compute_id": "used"})).json()
    body = image_body("user")
    body["source_config"]["listener_id"] = used["id"]
    deployment = (await api.post("/v2/deployments", json=body)).json()
    doomed = (await api.post("/v2/deployments", json=image_body("doomed"))).json()
    await api.delete(f"/v2/deployments/{doomed['id']}")
    git = (await api.post("/v2/deployments", json=git_body("git"))).json()
    unlisted = git_body("unlisted")
    unlisted["source_config"]["repo_url"] = "https://git.example.com/acme/none"
    d, r, lst = deployment["id"], deployment["latest_revision_id"], listener["id"]
    nope = uuid.uuid4()
    return [
        ("POST", "/v2/deployments", image_body("new"), 201),
        ("POST", "/v2/deployments", unlisted, 400),
        ("POST", "/v2/deployments", image_body("user"), 400),  # name taken
        ("POST", "/v2/deployments", {"name": ""}, 422),
        ("GET", "/v2/deployments", None, 200),
        ("GET", "/v2/deployments?limit=0", None, 422),
        ("GET", f"/v2/deployments/{d}", None, 200),
        ("GET", f"/v2/deployments/{nope}", None, 404),
        ("GET", "/v2/deployments/not-a-uuid", None, 422),
        ("PATCH", f"/v2/deployments/{d}", {}, 200),
        (
            "PATCH",
            f"/v2/deployments/{git['id']}",
            {"source_config": unlisted["source_config"]},
            400,
        ),
        ("PATCH", f"/v2/deployments/{nope}", {}, 404),
        ("PATCH", f"/v2/deployments/{doomed['id']}", {}, 400),  # being deleted
        ("PATCH", f"/v2/deployments/{d}", {"name": "other"}, 422),
        ("GET", f"/v2/deployments/{d}/revisions", None, 200),
        ("GET", f"/v2/deployments/{nope}/revisions", None, 404),
        ("GET", f"/v2/deployments/{d}/revisions/{r}", None, 200),
        ("GET", f"/v2/deployments/{d}/revisions/{nope}", None, 404),
        ("POST", f"/v2/deployments/{d}/revisions/{r}/redeploy", None, 400),  # not DEPLOYED
        ("POST", f"/v2/deployments/{d}/revisions/{nope}/redeploy", None, 404),
        ("DELETE", f"/v2/deployments?deployment_ids={nope}", None, 404),
        ("DELETE", f"/v2/deployments/{git['id']}", None, 204),
        ("DELETE", f"/v2/deployments/{nope}", None, 404),
        ("POST", "/v2/listeners", {**K8S_LISTENER, "compute_id": "c2"}, 201),
        ("POST", "/v2/listeners", K8S_LISTENER, 409),
        ("POST", "/v2/listeners", {"compute_type": "k8s"}, 422),
        ("GET", "/v2/listeners", None, 200),
        ("GET", f"/v2/listeners/{lst}", None, 200),
        ("GET", f"/v2/listeners/{nope}", None, 404),
        ("PATCH", f"/v2/listeners/{lst}", {"version": "2"}, 200),
        ("PATCH", f"/v2/listeners/{nope}", {"version": "2"}, 404),
        ("PATCH", f"/v2/listeners/{lst}", {"compute_id": "changed"}, 422),
        ("DELETE", f"/v2/listeners/{used['id']}", None, 409),
        ("DELETE", f"/v2/listeners/{nope}", None, 404),
        ("DELETE", f"/v2/listeners/{lst}", None, 204),
        ("GET", f"/v1/integrations/git_host/{INTEGRATION_A}/repos", None, 200),
        ("GET", f"/v1/integrations/git_host/{nope}/repos", None, 404),
        ("GET", "/v2/auth/providers/prov-1", None, 200),
        ("GET", "/v2/auth/providers/none", None, 404),
    ]


async def test_every_status_the_server_sends_is_documented(
    api: httpx.AsyncClient, document: Document
) -> None:
    scenarios = await _scenarios(api)
    seen: set[tuple[str, str]] = set()
    for method, path, body, expected in scenarios:
        answer = await api.request(method, path, json=body)
        assert answer.status_code == expected, (method, path, answer.text)
        operation = _template(document, method, path)
        assert str(expected) in operation["responses"], (method, path, expected)
        seen.add((method, path))
    # and on every operation: 401, 403, 413, and for bodies the guard's 422
    for method, path in seen:
        responses = _template(document, method, path)["responses"]
        cases = [
            ({"X-Api-Key": "wrong"}, None, 401),
            ({"X-Tenant-Id": str(WORKSPACE_B)}, None, 403),
            ({"Content-Length": str(2 * 1024 * 1024)}, b"x", 413),
        ]
        if method in ("POST", "PUT", "PATCH"):
            cases.append(({"Content-Type": "application/json"}, b'{"name": NaN}', 422))
        for headers, content, expected in cases:
            answer = await api.request(method, path, headers=headers, content=content)
            assert answer.status_code == expected, (method, path, headers, answer.text)
            assert str(expected) in responses, (method, path, expected)
