"""Names where ids are taken, list filters, --wait, per-id delete lines, connection
errors: the CLI against the fake service of tests/support/cli_service.py."""

from __future__ import annotations

import json
from uuid import uuid4

import httpx
import pytest
from tests.support import cli_service
from tests.support.cli_service import (
    DEP_ID,
    LIS_ID,
    REV_ID,
    FakeService,
    assert_one_error_line,
    deployment,
    listener,
    revision,
    run,
)

service = cli_service.service


def listing(*items: dict[str, object]) -> list[httpx.Response]:
    return [httpx.Response(200, json={"resources": list(items), "offset": len(items)})]


@pytest.mark.parametrize("ref", ["agent-one", "deployment/agent-one"])
def test_get_by_name_looks_up_by_name_contains_and_an_exact_match(
    service: FakeService, ref: str
) -> None:
    similar = deployment(id=str(uuid4()), name="agent-one-canary")
    service.on("GET", "/v2/deployments", listing(similar, deployment()))
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    result = run("deployments", "get", ref, "-o", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["id"] == DEP_ID
    lookup = service.requests[0]
    assert lookup.url.params["name_contains"] == "agent-one"
    assert service.last.url.path == f"/v2/deployments/{DEP_ID}"


def test_an_id_is_used_without_a_lookup(service: FakeService) -> None:
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    result = run("deployments", "get", DEP_ID, "-o", "name")
    assert result.exit_code == 0, result.output
    assert result.stdout == "deployment/agent-one\n"
    assert [r.url.path for r in service.requests] == [f"/v2/deployments/{DEP_ID}"]


def test_unknown_name_is_one_line_exit_1(service: FakeService) -> None:
    service.on("GET", "/v2/deployments", listing(deployment(name="git-bot-2")))
    result = run("deployments", "get", "git-bot")
    assert result.exit_code == 1
    assert assert_one_error_line(result) == (
        "error: deployment 'git-bot' not found (no deployment has this name or id)"
    )


def test_ambiguous_name_is_one_line_exit_1_naming_the_ids(service: FakeService) -> None:
    other = str(uuid4())
    service.on("GET", "/v2/deployments", listing(deployment(), deployment(id=other)))
    result = run("deployments", "wait", "agent-one")
    assert result.exit_code == 1
    line = assert_one_error_line(result)
    assert "ambiguous" in line
    assert DEP_ID in line
    assert other in line


def test_a_reference_of_another_kind_is_refused(service: FakeService) -> None:
    result = run("deployments", "get", "listener/cluster-a")
    assert result.exit_code == 1
    assert "is a listener, not a deployment" in assert_one_error_line(result)
    assert service.requests == []


def test_update_by_name(service: FakeService) -> None:
    service.on("GET", "/v2/deployments", listing(deployment()))
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    service.on("PATCH", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    stdin = "source_revision_config: {image_uri: 'img:2'}\n"
    result = run("deployments", "update", "agent-one", "-f", "-", stdin=stdin)
    assert result.exit_code == 0, result.output
    assert service.last.method == "PATCH"


def test_revisions_list_by_name_marks_the_active_revision(service: FakeService) -> None:
    older = {**revision("DEPLOYED"), "id": str(uuid4())}
    newest = {**revision("BUILDING"), "id": str(uuid4())}
    service.on("GET", "/v2/deployments", listing(deployment()))
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    service.on("GET", f"/v2/deployments/{DEP_ID}/revisions", listing(newest, revision(), older))
    result = run("revisions", "list", "agent-one", "--status", "deployed")
    assert result.exit_code == 0, result.output
    marked = [line for line in result.stdout.splitlines() if line.startswith("*")]
    assert len(marked) == 1
    assert REV_ID in marked[0]  # deployment().active_revision_id
    assert service.last.url.params["status"] == "DEPLOYED"


def test_revisions_get_and_redeploy_by_name(service: FakeService) -> None:
    service.on("GET", "/v2/deployments", listing(deployment()))
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}/revisions/{REV_ID}",
        [httpx.Response(200, json=revision())],
    )
    got = run("revisions", "get", "agent-one", f"revision/{REV_ID}", "-o", "name")
    assert got.exit_code == 0, got.output
    assert got.stdout == f"revision/{REV_ID}\n"
    path = f"/v2/deployments/{DEP_ID}/revisions/{REV_ID}/redeploy"
    service.on("POST", path, [httpx.Response(200, json=deployment())])
    redeployed = run("revisions", "redeploy", "agent-one", REV_ID, "-o", "name")
    assert redeployed.exit_code == 0, redeployed.output
    assert service.last.url.path == path


@pytest.mark.parametrize("ref", ["cluster-a", "listener/cluster-a"])
def test_listeners_by_compute_id(service: FakeService, ref: str) -> None:
    other = listener(id=str(uuid4()), compute_id="cluster-b")
    service.on("GET", "/v2/listeners", listing(other, listener()))
    service.on("GET", f"/v2/listeners/{LIS_ID}", [httpx.Response(200, json=listener())])
    service.on("DELETE", f"/v2/listeners/{LIS_ID}", [httpx.Response(204)])
    got = run("listeners", "get", ref, "-o", "json")
    assert got.exit_code == 0, got.output
    assert json.loads(got.stdout)["id"] == LIS_ID
    deleted = run("listeners", "delete", ref)
    assert deleted.exit_code == 0, deleted.output
    assert deleted.stdout == f"listener {ref} ({LIS_ID}) deleted\n"


def test_bulk_delete_reports_one_line_per_reference(service: FakeService) -> None:
    missing_id = str(uuid4())
    service.on("GET", "/v2/deployments", listing(deployment()))
    partial = {
        "results": [
            {"deployment_id": DEP_ID, "status": 204, "detail": None},
            {
                "deployment_id": missing_id,
                "status": 404,
                "detail": f"Deployment ID {missing_id} not found.",
            },
        ]
    }
    service.on("DELETE", "/v2/deployments", [httpx.Response(207, json=partial)])
    result = run("deployments", "delete", "agent-one", missing_id, "no-such-name")
    assert result.exit_code == 1
    assert result.stdout == f"deployment agent-one ({DEP_ID}) deleted\n"
    assert result.stderr.splitlines() == [
        f"error: deployment {missing_id}: Deployment ID {missing_id} not found.",
        "error: deployment 'no-such-name' not found (no deployment has this name or id)",
    ]
    bulk = service.last
    assert bulk.url.params.get_list("deployment_ids") == [DEP_ID, missing_id]


def test_list_filters_are_the_published_query_parameters(service: FakeService) -> None:
    service.on("GET", "/v2/deployments", listing(deployment()))
    args = ["--status", "ready", "--deployment-type", "prod", "--image-version", "1.2"]
    result = run("deployments", "list", *args, "-o", "name")
    assert result.exit_code == 0, result.output
    params = service.last.url.params
    assert (params["status"], params["deployment_type"], params["image_version"]) == (
        "READY",
        "prod",
        "1.2",
    )


def test_an_empty_list_says_so_on_stderr_only(service: FakeService) -> None:
    service.on("GET", "/v2/listeners", listing())
    table = run("listeners", "list")
    assert table.exit_code == 0
    assert (table.stdout, table.stderr) == ("", "No resources found.\n")
    as_json = run("listeners", "list", "-o", "json")
    assert (as_json.stdout, as_json.stderr) == ("[]\n", "")


def test_create_wait_follows_the_new_revision(service: FakeService) -> None:
    service.on("POST", "/v2/deployments", [httpx.Response(201, json=deployment())])
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}/revisions/{REV_ID}",
        [httpx.Response(200, json=revision(s)) for s in ("QUEUED", "DEPLOY_FAILED")],
    )
    body = "name: agent-one\nsource: external_docker\nsource_revision_config: {image_uri: 'a:1'}\n"
    result = run("deployments", "create", "-f", "-", "--wait", "-o", "json", stdin=body)
    assert result.exit_code == 3
    assert json.loads(result.stdout)["status"] == "DEPLOY_FAILED"


def test_update_wait_without_a_new_revision_does_not_wait(service: FakeService) -> None:
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    patched = deployment(source_config={"resource_spec": {"min_scale": 2}})
    service.on("PATCH", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=patched)])
    stdin = "source_config: {resource_spec: {min_scale: 2}}\n"
    result = run("deployments", "update", DEP_ID, "-f", "-", "--wait", "-o", "name", stdin=stdin)
    assert result.exit_code == 0, result.output
    assert "no new revision to wait for" in result.stderr
    assert [r.method for r in service.requests] == ["GET", "PATCH"]


def test_delete_wait_polls_until_the_deployment_is_gone(service: FakeService) -> None:
    service.on("DELETE", f"/v2/deployments/{DEP_ID}", [httpx.Response(204)])
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}",
        [
            httpx.Response(200, json=deployment(status="AWAITING_DELETE")),
            httpx.Response(404, json={"detail": "gone"}),
        ],
    )
    result = run("deployments", "delete", DEP_ID, "--wait")
    assert result.exit_code == 0, result.output
    assert [r.method for r in service.requests] == ["DELETE", "GET", "GET"]


def test_delete_wait_times_out_with_exit_4(service: FakeService) -> None:
    service.on("DELETE", f"/v2/deployments/{DEP_ID}", [httpx.Response(204)])
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}",
        [httpx.Response(200, json=deployment(status="AWAITING_DELETE"))],
    )
    result = run("deployments", "delete", DEP_ID, "--wait", "--timeout", "5")
    assert result.exit_code == 4
    assert "still AWAITING_DELETE after 5s" in assert_one_error_line(result)


def test_missing_api_key_is_a_usage_error_before_any_request(
    service: FakeService, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.delenv("DEPLOYPLANE_API_KEY")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    result = run("deployments", "list")
    assert result.exit_code == 2
    assert assert_one_error_line(result).startswith("error: no API key: set DEPLOYPLANE_API_KEY")
    assert service.requests == []


def test_a_connection_error_names_the_url_it_tried(service: FakeService) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    service.on("GET", "/v2/deployments", refuse)
    result = run("deployments", "list")
    assert result.exit_code == 1
    assert "(control plane at http://cp.test)" in assert_one_error_line(result)
