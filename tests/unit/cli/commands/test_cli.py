"""The API commands through click's runner, against a client over httpx.MockTransport."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
import yaml
from click.testing import Result
from tests.support import cli_service
from tests.support.cli_service import (
    API_KEY,
    DEP_ID,
    LIS_ID,
    NOW,
    REV_ID,
    FakeService,
    assert_one_error_line,
    deployment,
    listener,
    revision,
    run,
)

from deployplane.api.client import ControlPlaneClient
from deployplane.api.connection import ConnectionSettings
from deployplane.cli.commands import connection

service = cli_service.service

INT_ID = "44444444-4444-4444-8444-444444444444"


def json_out(result: Result) -> Any:
    return json.loads(result.stdout)


# ------------------------------------------------------------------ connection


def test_env_api_key_and_tenant_option_become_request_headers(service: FakeService) -> None:
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    tenant = str(uuid4())
    result = run("deployments", "get", DEP_ID, "--tenant-id", tenant, "-o", "json")
    assert result.exit_code == 0, result.output
    assert service.last.headers["X-Api-Key"] == API_KEY
    assert service.last.headers["X-Tenant-Id"] == tenant


def test_api_key_option_overrides_the_environment(service: FakeService) -> None:
    service.on("GET", f"/v2/listeners/{LIS_ID}", [httpx.Response(200, json=listener())])
    result = run("listeners", "get", LIS_ID, "--api-key", "other-key", "-o", "json")
    assert result.exit_code == 0, result.output
    assert service.last.headers["X-Api-Key"] == "other-key"


def test_connection_options_before_the_command_are_read_by_the_group(
    service: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEPLOYPLANE_CONTROL_PLANE_URL")
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    tenant = str(uuid4())
    args = ["--url", "http://other.test", "--tenant-id", tenant, "get", DEP_ID, "-o", "json"]
    result = run("deployments", *args)
    assert result.exit_code == 0, result.output
    assert str(service.last.url) == f"http://other.test/v2/deployments/{DEP_ID}"
    assert service.last.headers["X-Api-Key"] == API_KEY
    assert service.last.headers["X-Tenant-Id"] == tenant


@pytest.mark.parametrize(
    ("args", "key"),
    [
        (["--api-key", "group-key", "get", LIS_ID], "group-key"),
        (["--api-key", "group-key", "get", LIS_ID, "--api-key", "command-key"], "command-key"),
        (["get", LIS_ID, "--api-key", "command-key"], "command-key"),
    ],
    ids=["before beats the environment", "after beats before", "after beats the environment"],
)
def test_connection_option_precedence(service: FakeService, args: list[str], key: str) -> None:
    service.on("GET", f"/v2/listeners/{LIS_ID}", [httpx.Response(200, json=listener())])
    result = run("listeners", *args, "-o", "json")
    assert result.exit_code == 0, result.output
    assert service.last.headers["X-Api-Key"] == key


def test_malformed_url_before_the_command_is_a_usage_error(service: FakeService) -> None:
    result = run("revisions", "--url", "cp.test", "list", DEP_ID)
    assert result.exit_code == 2
    assert "invalid control-plane URL" in assert_one_error_line(result)
    assert service.requests == []


def test_missing_url_is_a_usage_error(
    service: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEPLOYPLANE_CONTROL_PLANE_URL")
    result = run("deployments", "get", DEP_ID)
    assert result.exit_code == 2
    assert "DEPLOYPLANE_CONTROL_PLANE_URL" in assert_one_error_line(result)
    assert service.requests == []


@pytest.mark.parametrize("url", ["cp.test", "http://[::1", "ftp://cp.test"])
def test_malformed_url_is_a_usage_error(service: FakeService, url: str) -> None:
    result = run("listeners", "list", "--url", url)
    assert result.exit_code == 2
    assert "invalid control-plane URL" in assert_one_error_line(result)
    assert service.requests == []


def test_help_documents_exit_codes_and_never_shows_the_api_key(service: FakeService) -> None:
    for args in (["deployments", "--help"], ["deployments", "wait", "--help"]):
        result = run(*args)
        assert result.exit_code == 0
        flat = " ".join(result.output.split())
        assert "Exit codes: 0 ok; 1 API or connection error; 2 usage" in flat
        assert "4 timed out" in flat
        assert API_KEY not in result.output


# ---------------------------------------------------------------------- errors


def test_422_is_one_stderr_line_listing_each_field_and_message(service: FakeService) -> None:
    detail = [
        {"loc": ["body", "name"], "msg": "Field required", "type": "missing"},
        {"loc": ["body", "source"], "msg": "Input should be 'git_host'", "type": "enum"},
    ]
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    service.on("PATCH", f"/v2/deployments/{DEP_ID}", [httpx.Response(422, json={"detail": detail})])
    stdin = "source_revision_config: {image_uri: 'img:2'}\n"
    result = run("deployments", "update", DEP_ID, "-f", "-", stdin=stdin)
    assert result.exit_code == 1
    line = assert_one_error_line(result)
    assert "body.name: Field required" in line
    assert "body.source: Input should be 'git_host'" in line
    assert result.stdout == ""


def test_not_found_exits_1_with_the_service_detail(service: FakeService) -> None:
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}",
        [httpx.Response(404, json={"detail": f"Deployment ID {DEP_ID} not found."})],
    )
    result = run("deployments", "get", DEP_ID)
    assert result.exit_code == 1
    assert f"Deployment ID {DEP_ID} not found." in assert_one_error_line(result)


def test_connection_failure_exits_1_with_one_line(service: FakeService) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    service.on("GET", "/v2/listeners", refuse)
    result = run("listeners", "list")
    assert result.exit_code == 1
    assert "connection failed" in assert_one_error_line(result)


def test_error_output_never_contains_the_api_key(service: FakeService) -> None:
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}",
        [httpx.Response(401, json={"detail": f"invalid key {API_KEY}"})],
    )
    result = run("deployments", "get", DEP_ID)
    assert result.exit_code == 1
    assert API_KEY not in result.output
    assert "401" in assert_one_error_line(result)


def test_unexpected_failure_is_still_one_line_without_traceback(
    service: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(settings: ConnectionSettings) -> ControlPlaneClient:
        raise RuntimeError("boom")

    monkeypatch.setattr(connection, "make_client", broken)
    result = run("deployments", "get", DEP_ID)
    assert result.exit_code == 1
    assert "unexpected RuntimeError: boom" in assert_one_error_line(result)


def test_wait_without_revision_on_a_deployment_without_one_exits_1(service: FakeService) -> None:
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}",
        [httpx.Response(200, json=deployment(latest_revision_id=None))],
    )
    result = run("deployments", "wait", DEP_ID)
    assert result.exit_code == 1
    assert "has no revision yet" in assert_one_error_line(result)


# ----------------------------------------------------------------- deployments


def test_deployments_list_table_shows_each_deployment(service: FakeService) -> None:
    service.on(
        "GET",
        "/v2/deployments",
        [httpx.Response(200, json={"resources": [deployment()], "offset": 1})],
    )
    result = run("deployments", "list", "--name-contains", "agent", "-o", "wide")
    assert result.exit_code == 0, result.output
    assert "agent-one" in result.stdout
    assert DEP_ID in result.stdout
    assert "READY" in result.stdout
    assert service.last.url.params["name_contains"] == "agent"


def test_deployments_list_follows_pages_and_stops_at_limit(service: FakeService) -> None:
    def page(request: httpx.Request) -> httpx.Response:
        # 250 deployments; pages as the published contract: `limit` honoured (<= 100)
        offset = int(request.url.params.get("offset", "0"))
        limit = int(request.url.params["limit"])
        count = max(0, min(limit, 250 - offset))
        items = [deployment(id=str(uuid4()), name=f"d{offset + i}") for i in range(count)]
        return httpx.Response(200, json={"resources": items, "offset": offset + count})

    service.on("GET", "/v2/deployments", page)
    result = run("deployments", "list", "--limit", "150", "-o", "json")
    assert result.exit_code == 0, result.output
    assert [d["name"] for d in json_out(result)] == [f"d{i}" for i in range(150)]
    assert len(service.requests) == 2


def test_deployments_get_yaml_is_the_api_shape(service: FakeService) -> None:
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    result = run("deployments", "get", DEP_ID, "-o", "yaml")
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(result.stdout)
    assert data["latest_revision_id"] == REV_ID
    assert data["source_revision_config"]["image_uri"] == "img:1"


def test_deployments_get_table_lists_fields(service: FakeService) -> None:
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    result = run("deployments", "get", DEP_ID)
    assert result.exit_code == 0, result.output
    assert "latest_revision_id" in result.stdout
    assert "agent-one" in result.stdout


def test_deployments_create_posts_the_yaml_file_as_snake_case(
    service: FakeService, tmp_path: Path
) -> None:
    service.on("POST", "/v2/deployments", [httpx.Response(201, json=deployment())])
    spec = tmp_path / "dep.yaml"
    spec.write_text(
        "name: agent-one\n"
        "source: external_docker\n"
        "source_revision_config: {image_uri: 'img:1'}\n"
        "source_config:\n  resource_spec: {min_scale: 1, cpu: 0.5}\n"
        "secrets: [{name: TOKEN, value: s3cr3t}]\n"
    )
    result = run("deployments", "create", "-f", str(spec), "-o", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(service.last.content) == {
        "name": "agent-one",
        "source": "external_docker",
        "source_revision_config": {"image_uri": "img:1"},
        "source_config": {"resource_spec": {"min_scale": 1, "cpu": 0.5}},
        "secrets": [{"name": "TOKEN", "value": "s3cr3t"}],
    }
    assert json_out(result)["id"] == DEP_ID


def test_deployments_create_reads_json_with_camel_case_from_stdin(service: FakeService) -> None:
    service.on("POST", "/v2/deployments", [httpx.Response(201, json=deployment())])
    body = {
        "name": "agent-one",
        "source": "external_docker",
        "sourceRevisionConfig": {"imageUri": "i"},
    }
    result = run("deployments", "create", "-f", "-", stdin=json.dumps(body))
    assert result.exit_code == 0, result.output
    assert json.loads(service.last.content)["source_revision_config"] == {"image_uri": "i"}


def test_bad_input_file_exits_2_naming_fields_but_not_secret_values(
    service: FakeService, tmp_path: Path
) -> None:
    spec = tmp_path / "dep.yaml"
    spec.write_text("source: github\nsecrets: [{name: K, value: 12345}]\n")
    result = run("deployments", "create", "-f", str(spec))
    assert result.exit_code == 2
    line = assert_one_error_line(result)
    # the published four (internal_*: what the vendor's CLI creates, docs/emulator.md)
    assert (
        "source: must be 'git_host', 'external_docker', 'internal_docker' or 'internal_source'"
        in line
    )
    assert "secrets.0.value: must be a string" in line
    assert "12345" not in line
    spec.write_text("source: external_docker\nsource_revision_config: {image_uri: 'a:1'}\n")
    nameless = run("deployments", "create", "-f", str(spec))
    assert nameless.exit_code == 2
    assert "name: required" in assert_one_error_line(nameless)
    assert service.requests == []


def test_unparsable_or_missing_file_exits_2(service: FakeService, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    result = run("deployments", "create", "-f", str(broken))
    assert result.exit_code == 2
    assert "is not valid YAML: line 2, column 1" in assert_one_error_line(result)
    missing = run("deployments", "create", "-f", str(tmp_path / "nope.yaml"))
    assert missing.exit_code == 2
    assert "cannot read" in assert_one_error_line(missing)


def test_deployments_update_patches_only_the_fields_in_the_file(service: FakeService) -> None:
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    service.on("PATCH", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    result = run(
        "deployments",
        "update",
        DEP_ID,
        "-f",
        "-",
        stdin="source_revision_config:\n  image_uri: img:2\n",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(service.last.content) == {"source_revision_config": {"image_uri": "img:2"}}


def test_deployments_delete_sends_delete(service: FakeService) -> None:
    service.on("DELETE", f"/v2/deployments/{DEP_ID}", [httpx.Response(204)])
    result = run("deployments", "delete", DEP_ID)
    assert result.exit_code == 0, result.output
    assert service.last.method == "DELETE"
    assert f"deployment {DEP_ID} deleted" in result.stdout


def test_deployments_delete_with_delete_tracing_project(service: FakeService) -> None:
    service.on("DELETE", f"/v2/deployments/{DEP_ID}", [httpx.Response(204)])
    result = run("deployments", "delete", DEP_ID, "--delete-tracing-project")
    assert result.exit_code == 0, result.output
    assert dict(service.last.url.params) == {"delete_tracing_project": "true"}


def test_deployments_delete_several_is_one_bulk_call_naming_failures(
    service: FakeService,
) -> None:
    other = str(uuid4())
    partial = {
        "results": [
            {"deployment_id": DEP_ID, "status": 204, "detail": None},
            {"deployment_id": other, "status": 404, "detail": f"Deployment ID {other} not found."},
        ]
    }
    service.on("DELETE", "/v2/deployments", [httpx.Response(207, json=partial)])
    result = run("deployments", "delete", DEP_ID, other)
    assert result.exit_code == 1
    assert len(service.requests) == 1
    assert service.last.url.params.get_list("deployment_ids") == [DEP_ID, other]
    assert f"deployment {DEP_ID} deleted" in result.stdout
    assert f"Deployment ID {other} not found." in assert_one_error_line(result)


def test_deployments_list_by_name_uses_name_contains_and_an_exact_match(
    service: FakeService,
) -> None:
    listing = [deployment(name="agent-2", id=str(uuid4())), deployment(name="agent")]
    service.on(
        "GET", "/v2/deployments", [httpx.Response(200, json={"resources": listing, "offset": 2})]
    )
    result = run("deployments", "list", "--name", "agent", "-o", "json")
    assert result.exit_code == 0, result.output
    assert [d["name"] for d in json_out(result)] == ["agent"]
    assert dict(service.last.url.params) == {"name_contains": "agent", "limit": "100"}


def test_revisions_redeploy_posts_and_waits_for_the_new_revision(service: FakeService) -> None:
    new_rev = str(uuid4())
    path = f"/v2/deployments/{DEP_ID}/revisions/{REV_ID}/redeploy"
    service.on("POST", path, [httpx.Response(200, json=deployment(latest_revision_id=new_rev))])
    rev_path = f"/v2/deployments/{DEP_ID}/revisions/{new_rev}"
    service.on(
        "GET",
        rev_path,
        [
            httpx.Response(200, json={**revision("DEPLOYING"), "id": new_rev}),
            httpx.Response(200, json={**revision("DEPLOYED"), "id": new_rev}),
        ],
    )
    result = run("revisions", "redeploy", DEP_ID, REV_ID, "--wait", "-o", "json")
    assert result.exit_code == 0, result.output
    assert json_out(result)["status"] == "DEPLOYED"
    assert [r.method for r in service.requests] == ["POST", "GET", "GET"]


def test_revisions_redeploy_refused_is_one_line_and_exit_1(service: FakeService) -> None:
    path = f"/v2/deployments/{DEP_ID}/revisions/{REV_ID}/redeploy"
    detail = f"Revision ID {REV_ID} cannot be redeployed: it is BUILD_FAILED."
    service.on("POST", path, [httpx.Response(400, json={"detail": detail})])
    result = run("revisions", "redeploy", DEP_ID, REV_ID)
    assert result.exit_code == 1
    assert detail in assert_one_error_line(result)


# ------------------------------------------------------------------------ wait


def test_wait_follows_the_latest_revision_to_deployed_and_exits_0(service: FakeService) -> None:
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}/revisions/{REV_ID}",
        [httpx.Response(200, json=revision(s)) for s in ("QUEUED", "BUILDING", "DEPLOYED")],
    )
    result = run("deployments", "wait", DEP_ID, "-o", "json")
    assert result.exit_code == 0, result.output
    assert json_out(result)["status"] == "DEPLOYED"
    # the status log on stderr shows each change with elapsed seconds
    for status in ("QUEUED", "BUILDING", "DEPLOYED"):
        assert status in result.stderr
    assert "s  QUEUED" in result.stderr


@pytest.mark.parametrize("status", ["BUILD_FAILED", "DEPLOY_FAILED", "INTERRUPTED"])
def test_wait_exits_3_when_the_revision_ends_without_deploying(
    service: FakeService, status: str
) -> None:
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}/revisions/{REV_ID}",
        [httpx.Response(200, json=revision(status))],
    )
    result = run("deployments", "wait", DEP_ID, "--revision", REV_ID, "-o", "json")
    assert result.exit_code == 3
    assert json_out(result)["status"] == status
    assert f"ended {status}" in result.stderr.strip().splitlines()[-1]


def test_wait_exits_4_on_timeout(service: FakeService) -> None:
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}/revisions/{REV_ID}",
        [httpx.Response(200, json=revision("BUILDING"))],
    )
    result = run("deployments", "wait", DEP_ID, "--revision", REV_ID, "--timeout", "10")
    assert result.exit_code == 4
    assert "still BUILDING after 10s" in result.stderr.strip().splitlines()[-1]
    assert result.stdout == ""


# ------------------------------------------------------------------- revisions


def test_revisions_list_and_get(service: FakeService) -> None:
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}/revisions",
        [httpx.Response(200, json={"resources": [revision("BUILDING")], "offset": 1})],
    )
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}/revisions/{REV_ID}",
        [httpx.Response(200, json=revision())],
    )
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    listed = run("revisions", "list", DEP_ID)
    assert listed.exit_code == 0, listed.output
    assert "BUILDING" in listed.stdout
    assert REV_ID in listed.stdout
    got = run("revisions", "get", DEP_ID, REV_ID, "-o", "json")
    assert got.exit_code == 0, got.output
    assert json_out(got)["status"] == "DEPLOYED"


# ------------------------------------------------------------------- listeners


def test_listeners_list_table_shows_namespaces(service: FakeService) -> None:
    service.on(
        "GET", "/v2/listeners", [httpx.Response(200, json={"resources": [listener()], "offset": 1})]
    )
    result = run("listeners", "list")
    assert result.exit_code == 0, result.output
    assert "cluster-a" in result.stdout
    assert "team-a" in result.stdout


def test_listeners_create_posts_the_file(service: FakeService) -> None:
    service.on("POST", "/v2/listeners", [httpx.Response(201, json=listener())])
    result = run(
        "listeners",
        "create",
        "-f",
        "-",
        "-o",
        "json",
        stdin=(
            "compute_type: k8s\ncompute_id: cluster-a\ncompute_config: {k8s_namespaces: [team-a]}\n"
        ),
    )
    assert result.exit_code == 0, result.output
    assert json.loads(service.last.content) == {
        "compute_type": "k8s",
        "compute_id": "cluster-a",
        "compute_config": {"k8s_namespaces": ["team-a"]},
    }


def test_listeners_update_patches(service: FakeService) -> None:
    path = f"/v2/listeners/{LIS_ID}"
    service.on("GET", path, [httpx.Response(200, json=listener())])
    service.on("PATCH", path, [httpx.Response(200, json=listener(version="v2"))])
    patched = run("listeners", "update", LIS_ID, "-f", "-", "-o", "json", stdin="version: v2\n")
    assert patched.exit_code == 0, patched.output
    assert (service.last.method, json.loads(service.last.content)) == ("PATCH", {"version": "v2"})


def test_listeners_update_has_no_put_the_service_does_not_publish(service: FakeService) -> None:
    # The published contract has no listener PUT: the CLI offers none (it was --replace).
    put_body = "compute_type: k8s\ncompute_id: cluster-a\nversion: v3\n"
    result = run("listeners", "update", LIS_ID, "--replace", "-f", "-", stdin=put_body)
    assert result.exit_code == 2
    assert service.requests == []


def test_listeners_delete_sends_delete(service: FakeService) -> None:
    service.on("DELETE", f"/v2/listeners/{LIS_ID}", [httpx.Response(204)])
    result = run("listeners", "delete", LIS_ID)
    assert result.exit_code == 0, result.output
    assert f"listener {LIS_ID} deleted" in result.stdout


# ------------------------------------------------------------ repos, providers


def test_repos_list_shows_default_branch_and_url(service: FakeService) -> None:
    repo = {
        "host_integration_id": INT_ID,
        "id": 42,
        "name": "agent",
        "owner": "acme",
        "url": "https://git.example/acme/agent",
        "default_branch": "main",
    }
    service.on(
        "GET", f"/v1/integrations/git_host/{INT_ID}/repos", [httpx.Response(200, json=[repo])]
    )
    result = run("repos", "list", INT_ID, "-o", "wide")
    assert result.exit_code == 0, result.output
    assert "https://git.example/acme/agent" in result.stdout
    assert "main" in result.stdout


def test_providers_get_prints_the_provider(service: FakeService) -> None:
    provider = {
        "id": "p1",
        "organization_id": "org",
        "provider_id": "gh",
        "name": "GitHost",
        "client_id": "cid",
        "auth_url": "https://a",
        "token_url": "https://t",
        "uses_pkce": True,
        "code_challenge_method": None,
        "created_at": NOW,
        "updated_at": NOW,
    }
    service.on("GET", "/v2/auth/providers/gh", [httpx.Response(200, json=provider)])
    result = run("providers", "get", "gh", "-o", "json")
    assert result.exit_code == 0, result.output
    assert json_out(result)["client_id"] == "cid"
    assert "provider_type" not in json_out(result)  # null: left out, as kubectl does
