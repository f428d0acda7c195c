"""ControlPlaneClient against httpx.MockTransport: wire shape, retries, errors, polling."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from uuid import UUID, uuid4

import httpx
import pytest

from deployplane.api.client import ControlPlaneClient
from deployplane.api.errors import (
    Conflict,
    ControlPlaneError,
    Forbidden,
    Invalid,
    NotFound,
    RateLimited,
    Unauthorized,
    Unavailable,
)
from deployplane.api.models import (
    AgentEnvironment,
    ComputeConfig,
    ComputeType,
    DeploymentAgent,
    DeploymentCreate,
    DeploymentPatch,
    DeploymentStatus,
    ListenerCreate,
    ListenerPatch,
    Revision,
    RevisionStatus,
    Secret,
    Source,
    SourceRevisionConfig,
)

API_KEY = "lsv2_sk_very-secret-key-0123456789"
TOKEN = "bearer-token-secret-abcdef"
DEP_ID = UUID("11111111-1111-4111-8111-111111111111")
REV_ID = UUID("22222222-2222-4222-8222-222222222222")
LIS_ID = UUID("33333333-3333-4333-8333-333333333333")
INT_ID = UUID("44444444-4444-4444-8444-444444444444")
NOW = "2025-01-02T03:04:05Z"

Handler = Callable[[httpx.Request], httpx.Response]


def deployment_json(**over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": str(DEP_ID),
        "tenant_id": "99999999-9999-4999-8999-999999999999",
        "name": "agent",
        "source": "external_docker",
        "source_config": {"listener_id": str(LIS_ID)},
        "source_revision_config": {"image_uri": "img:1", "repo_commit_sha": None},
        "secrets": [],
        "created_at": NOW,
        "updated_at": NOW,
        "status": "READY",
        "latest_revision_id": str(REV_ID),
        "active_revision_id": None,
        "image_version": "1.0",
    }
    body.update(over)
    return body


def revision_json(status: str = "DEPLOYED", **over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": str(REV_ID),
        "created_at": NOW,
        "updated_at": NOW,
        "status": status,
        "source": "external_docker",
        "source_revision_config": {"image_uri": "img:1"},
    }
    body.update(over)
    return body


def listener_json(**over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": str(LIS_ID),
        "compute_type": "k8s",
        "compute_id": "cluster-a",
        "compute_config": {"k8s_namespaces": ["ns1"]},
        "version": "v1",
        "created_at": NOW,
        "updated_at": NOW,
    }
    body.update(over)
    return body


class Recorder:
    """A MockTransport handler that records requests and answers from a queue or a fn."""

    def __init__(self, *responses: httpx.Response | Exception | Handler) -> None:
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        nxt = self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]
        if isinstance(nxt, Exception):
            raise nxt
        if isinstance(nxt, httpx.Response):
            return nxt
        return nxt(request)

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]


class FakeTime:
    """A clock that only moves when the client sleeps; records every sleep."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def make_client(recorder: Recorder, fake: FakeTime | None = None, **kw: Any) -> ControlPlaneClient:
    fake = fake or FakeTime()
    kw.setdefault("api_key", API_KEY)
    return ControlPlaneClient(
        "http://cp.test",
        transport=httpx.MockTransport(recorder),
        sleep=fake.sleep,
        clock=fake.clock,
        **kw,
    )


def ok(body: Any, status: int = 200, **kw: Any) -> httpx.Response:
    return httpx.Response(status, json=body, **kw)


# --------------------------------------------------------------------------- auth


async def test_api_key_mode_sends_x_api_key_and_no_bearer() -> None:
    rec = Recorder(ok(deployment_json()))
    async with make_client(rec) as client:
        await client.get_deployment(DEP_ID)
    assert rec.last.headers["X-Api-Key"] == API_KEY
    assert "Authorization" not in rec.last.headers
    assert "X-Tenant-Id" not in rec.last.headers


async def test_bearer_mode_sends_authorization_bearer_and_tenant_header() -> None:
    rec = Recorder(ok(deployment_json()))
    tenant = uuid4()
    async with make_client(rec, api_key=None, bearer_token=TOKEN, tenant_id=tenant) as client:
        await client.get_deployment(DEP_ID)
    assert rec.last.headers["Authorization"] == f"Bearer {TOKEN}"
    assert rec.last.headers["X-Tenant-Id"] == str(tenant)
    assert "X-Api-Key" not in rec.last.headers


async def test_repr_of_client_hides_credentials() -> None:
    client = make_client(Recorder(ok({})), bearer_token=TOKEN)
    assert API_KEY not in repr(client)
    assert TOKEN not in repr(client)
    await client.aclose()


# ---------------------------------------------------------------------- endpoints


async def test_create_deployment_posts_snake_case_body_with_only_set_fields() -> None:
    rec = Recorder(ok(deployment_json(), status=201))
    body = DeploymentCreate(
        name="agent",
        source=Source.EXTERNAL_DOCKER,
        source_revision_config=SourceRevisionConfig(image_uri="img:1"),
        secrets=[Secret(name="K", value="v")],
    )
    async with make_client(rec) as client:
        created = await client.create_deployment(body)
    assert (rec.last.method, rec.last.url.path) == ("POST", "/v2/deployments")
    assert json.loads(rec.last.content) == {
        "name": "agent",
        "source": "external_docker",
        "source_revision_config": {"image_uri": "img:1"},
        "secrets": [{"name": "K", "value": "v"}],
    }
    assert created.id == DEP_ID
    assert created.latest_revision_id == REV_ID


async def test_get_update_delete_deployment_use_the_deployment_path() -> None:
    rec = Recorder(ok(deployment_json()), ok(deployment_json()), httpx.Response(204))
    async with make_client(rec) as client:
        await client.get_deployment(DEP_ID)
        await client.update_deployment(
            str(DEP_ID),
            DeploymentPatch(source_revision_config=SourceRevisionConfig(image_uri="img:2")),
        )
        await client.delete_deployment(DEP_ID)
    calls = [(r.method, r.url.path) for r in rec.requests]
    path = f"/v2/deployments/{DEP_ID}"
    assert calls == [("GET", path), ("PATCH", path), ("DELETE", path)]
    assert json.loads(rec.requests[1].content) == {"source_revision_config": {"image_uri": "img:2"}}


async def test_list_deployments_sends_filters_and_paging_as_query() -> None:
    rec = Recorder(ok({"resources": [deployment_json()], "offset": 10}))
    async with make_client(rec) as client:
        page = await client.list_deployments(
            name_contains="ag",
            status="READY",
            image_version="img:1",
            deployment_type="dev",
            deployment_ids=[DEP_ID, REV_ID],
            remote_reconciled=False,
            limit=5,
            offset=5,
        )
    assert rec.last.url.path == "/v2/deployments"
    assert dict(rec.last.url.params) == {
        "name_contains": "ag",
        "status": "READY",
        "image_version": "img:1",
        "deployment_type": "dev",
        "deployment_ids": f"{DEP_ID},{REV_ID}",
        "remote_reconciled": "false",
        "limit": "5",
        "offset": "5",
    }
    assert [d.id for d in page.resources] == [DEP_ID]
    assert page.offset == 10


async def test_list_deployments_omits_unset_query_parameters() -> None:
    rec = Recorder(ok({"resources": [], "offset": 0}))
    async with make_client(rec) as client:
        page = await client.list_deployments()
    assert dict(rec.last.url.params) == {}
    assert page.offset == 0


async def test_revision_endpoints_use_nested_paths() -> None:
    rec = Recorder(ok(revision_json()), ok({"resources": [revision_json()], "offset": 1}))
    async with make_client(rec) as client:
        rev = await client.get_revision(DEP_ID, REV_ID)
        page = await client.list_revisions(DEP_ID, limit=1, offset=0)
    assert rec.requests[0].url.path == f"/v2/deployments/{DEP_ID}/revisions/{REV_ID}"
    assert rec.requests[1].url.path == f"/v2/deployments/{DEP_ID}/revisions"
    assert dict(rec.requests[1].url.params) == {"limit": "1", "offset": "0"}
    assert rev.status is RevisionStatus.DEPLOYED
    assert len(page.resources) == 1


async def test_listener_endpoints_methods_paths_and_bodies() -> None:
    rec = Recorder(
        ok(listener_json(), status=201),
        ok(listener_json()),
        ok(listener_json()),
        httpx.Response(204),
        ok({"resources": [listener_json()], "offset": 1}),
    )
    cfg = ComputeConfig(k8s_namespaces=["ns1", "ns2"])
    async with make_client(rec) as client:
        await client.create_listener(
            ListenerCreate(
                compute_type=ComputeType.K8S,
                compute_id="cluster-a",
                compute_config=ComputeConfig(),
                version="v1",
            )
        )
        await client.get_listener(LIS_ID)
        await client.update_listener(LIS_ID, ListenerPatch(compute_config=cfg))
        await client.delete_listener(LIS_ID)
        page = await client.list_listeners(limit=3)
    path = f"/v2/listeners/{LIS_ID}"
    assert [(r.method, r.url.path) for r in rec.requests] == [
        ("POST", "/v2/listeners"),
        ("GET", path),
        ("PATCH", path),
        ("DELETE", path),
        ("GET", "/v2/listeners"),
    ]
    bodies = [json.loads(r.content) if r.content else None for r in rec.requests]
    assert bodies[0] == {
        "compute_type": "k8s",
        "compute_id": "cluster-a",
        "compute_config": {},  # required by the published create
        "version": "v1",
    }
    assert bodies[2] == {"compute_config": {"k8s_namespaces": ["ns1", "ns2"]}}
    assert dict(rec.requests[4].url.params) == {"limit": "3"}
    # the published contract has neither a listener PUT nor a compute_id filter
    assert not hasattr(client, "replace_listener")
    assert page.resources[0].compute_config is not None


async def test_list_repositories_reads_a_bare_array_from_the_v1_path() -> None:
    repo = {
        "host_integration_id": str(INT_ID),
        "id": 7,
        "name": "agent",
        "owner": "acme",
        "url": "https://git.example/acme/agent",
        "default_branch": "main",
    }
    rec = Recorder(ok([repo]))
    async with make_client(rec) as client:
        repos = await client.list_repositories(INT_ID)
    assert (rec.last.method, rec.last.url.path) == (
        "GET",
        f"/v1/integrations/git_host/{INT_ID}/repos",
    )
    assert repos[0].default_branch == "main"
    assert repos[0].host_integration_id == INT_ID


async def test_get_oauth_provider_quotes_the_string_id_into_the_path() -> None:
    provider = {
        "id": "p1",
        "organization_id": "org",
        "provider_id": "git hub/x",
        "name": "GH",
        "client_id": "cid",
        "auth_url": "https://a",
        "token_url": "https://t",
        "uses_pkce": True,
        "code_challenge_method": "S256",
        "created_at": NOW,
        "updated_at": NOW,
    }
    rec = Recorder(ok(provider))
    async with make_client(rec) as client:
        got = await client.get_oauth_provider("git hub/x")
    assert rec.last.url.raw_path == b"/v2/auth/providers/git%20hub%2Fx"
    assert got.provider_type is None
    assert got.uses_pkce is True


async def test_any_2xx_status_is_success() -> None:
    rec = Recorder(ok(listener_json(), status=202))
    async with make_client(rec) as client:
        listener = await client.get_listener(LIS_ID)
    assert listener.id == LIS_ID


async def test_on_response_hook_gets_method_template_status_and_seconds() -> None:
    seen: list[tuple[str, str, int, float]] = []
    rec = Recorder(httpx.Response(503), ok(deployment_json()))
    async with make_client(rec, on_response=lambda *a: seen.append(a)) as client:
        await client.get_deployment(DEP_ID)
    assert [(m, p, s) for m, p, s, _ in seen] == [
        ("GET", "/v2/deployments/{deployment_id}", 503),
        ("GET", "/v2/deployments/{deployment_id}", 200),
    ]
    assert all(seconds >= 0 for *_, seconds in seen)


async def test_on_response_hook_reports_status_zero_on_transport_error() -> None:
    seen: list[int] = []
    rec = Recorder(httpx.ConnectError("refused"), ok(deployment_json()))
    async with make_client(rec, on_response=lambda m, p, s, t: seen.append(s)) as client:
        await client.get_deployment(DEP_ID)
    assert seen == [0, 200]


async def test_unexpected_response_body_raises_control_plane_error_naming_fields() -> None:
    rec = Recorder(ok({"id": "not-a-uuid"}))
    async with make_client(rec) as client:
        with pytest.raises(ControlPlaneError, match="unexpected response body") as info:
            await client.get_deployment(DEP_ID)
    assert "id" in str(info.value)
    assert not info.value.retryable


# ------------------------------------------------------------------------ retries


async def test_get_retries_5xx_then_succeeds_with_full_jitter_backoff() -> None:
    fake = FakeTime()
    rec = Recorder(httpx.Response(500), httpx.Response(502), ok(deployment_json()))
    async with make_client(rec, fake, backoff_base=1.0, backoff_max=1.5) as client:
        await client.get_deployment(DEP_ID)
    assert len(rec.requests) == 3
    assert len(fake.sleeps) == 2
    # attempt 0 caps at base*1 = 1.0; attempt 1 at min(1.5, 2.0) = 1.5
    assert 0 <= fake.sleeps[0] <= 1.0
    assert 0 <= fake.sleeps[1] <= 1.5


async def test_retry_after_header_sets_the_delay() -> None:
    fake = FakeTime()
    rec = Recorder(httpx.Response(429, headers={"Retry-After": "7"}), ok(deployment_json()))
    async with make_client(rec, fake) as client:
        await client.get_deployment(DEP_ID)
    assert fake.sleeps == [7.0]


async def test_retry_after_longer_than_the_honoured_maximum_raises_at_once() -> None:
    fake = FakeTime()
    rec = Recorder(httpx.Response(429, headers={"Retry-After": "3600"}))
    async with make_client(rec, fake) as client:
        with pytest.raises(RateLimited) as info:
            await client.get_deployment(DEP_ID)
    assert info.value.retry_after == 3600.0
    assert fake.sleeps == []


async def test_retries_are_bounded_then_the_typed_error_is_raised() -> None:
    fake = FakeTime()
    rec = Recorder(httpx.Response(503, json={"detail": "down for maintenance"}))
    async with make_client(rec, fake, max_retries=2) as client:
        with pytest.raises(Unavailable, match="down for maintenance") as info:
            await client.get_deployment(DEP_ID)
    assert len(rec.requests) == 3
    assert len(fake.sleeps) == 2
    assert info.value.status_code == 503
    assert info.value.retryable


async def test_get_retries_read_timeouts() -> None:
    rec = Recorder(httpx.ReadTimeout("slow"), ok(deployment_json()))
    async with make_client(rec) as client:
        await client.get_deployment(DEP_ID)
    assert len(rec.requests) == 2


async def test_post_is_not_retried_on_500() -> None:
    fake = FakeTime()
    rec = Recorder(httpx.Response(500), ok(deployment_json()))
    body = DeploymentCreate(name="agent", source=Source.EXTERNAL_DOCKER)
    async with make_client(rec, fake) as client:
        with pytest.raises(Unavailable):
            await client.create_deployment(body)
    assert len(rec.requests) == 1
    assert fake.sleeps == []


@pytest.mark.parametrize("outcome", [httpx.Response(502), httpx.ReadTimeout("no answer")])
async def test_post_is_not_retried_when_the_request_may_have_been_processed(
    outcome: httpx.Response | Exception,
) -> None:
    rec = Recorder(outcome, ok(deployment_json()))
    async with make_client(rec) as client:
        with pytest.raises(Unavailable):
            await client.create_deployment(
                DeploymentCreate(name="agent", source=Source.EXTERNAL_DOCKER)
            )
    assert len(rec.requests) == 1


@pytest.mark.parametrize(
    "outcome",
    [httpx.Response(429), httpx.Response(503), httpx.ConnectError("refused")],
)
async def test_post_is_retried_when_the_request_surely_was_not_processed(
    outcome: httpx.Response | Exception,
) -> None:
    rec = Recorder(outcome, ok(deployment_json(), status=201))
    async with make_client(rec) as client:
        created = await client.create_deployment(
            DeploymentCreate(name="agent", source=Source.EXTERNAL_DOCKER)
        )
    assert len(rec.requests) == 2
    assert created.id == DEP_ID


async def test_client_errors_are_not_retried() -> None:
    rec = Recorder(httpx.Response(404, json={"detail": "nope"}))
    async with make_client(rec) as client:
        with pytest.raises(NotFound):
            await client.get_deployment(DEP_ID)
    assert len(rec.requests) == 1


# ------------------------------------------------------------------ error mapping


@pytest.mark.parametrize(
    ("status", "cls", "retryable"),
    [
        (400, Invalid, False),
        (401, Unauthorized, False),
        (403, Forbidden, False),
        (404, NotFound, False),
        (409, Conflict, False),
        (422, Invalid, False),
        (429, RateLimited, True),
        (500, Unavailable, True),
        (503, Unavailable, True),
        (418, ControlPlaneError, False),
    ],
)
async def test_status_maps_to_the_most_specific_error(
    status: int, cls: type[ControlPlaneError], retryable: bool
) -> None:
    rec = Recorder(httpx.Response(status, json={"detail": "why"}))
    async with make_client(rec, max_retries=0) as client:
        with pytest.raises(ControlPlaneError) as info:
            await client.get_deployment(DEP_ID)
    assert type(info.value) is cls
    assert info.value.status_code == status
    assert info.value.retryable is retryable


async def test_not_found_message_names_method_path_template_and_detail() -> None:
    detail = f"Deployment ID {DEP_ID} not found."
    rec = Recorder(httpx.Response(404, json={"detail": detail}))
    async with make_client(rec) as client:
        with pytest.raises(NotFound) as info:
            await client.get_revision(DEP_ID, REV_ID)
    message = str(info.value)
    assert message.startswith("GET /v2/deployments/{deployment_id}/revisions/{revision_id}: 404")
    assert detail in message
    assert info.value.detail == detail


async def test_422_carries_each_entry_and_lists_loc_and_msg() -> None:
    detail = [
        {"loc": ["body", "name"], "msg": "Field required", "type": "missing"},
        {"loc": ["body", "secrets", 0, "value"], "msg": "must be a string", "type": "t"},
    ]
    rec = Recorder(httpx.Response(422, json={"detail": detail}))
    async with make_client(rec) as client:
        with pytest.raises(Invalid) as info:
            await client.create_deployment(
                DeploymentCreate(name="agent", source=Source.EXTERNAL_DOCKER)
            )
    err = info.value
    assert [e.loc for e in err.errors] == [["body", "name"], ["body", "secrets", 0, "value"]]
    assert "body.name: Field required" in str(err)
    assert "body.secrets.0.value: must be a string" in str(err)


async def test_connection_error_maps_to_unavailable_after_retries() -> None:
    rec = Recorder(httpx.ConnectError("connection refused"))
    async with make_client(rec, max_retries=1) as client:
        with pytest.raises(Unavailable, match="connection failed") as info:
            await client.list_listeners()
    assert len(rec.requests) == 2
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert info.value.status_code is None


async def test_timeout_maps_to_unavailable() -> None:
    rec = Recorder(httpx.ReadTimeout("read timed out"))
    async with make_client(rec, max_retries=0) as client:
        with pytest.raises(Unavailable, match="timed out"):
            await client.get_listener(LIS_ID)


async def test_no_error_message_contains_the_api_key_or_token_even_if_echoed() -> None:
    echo = f"bad key {API_KEY} / {TOKEN}"
    outcomes: list[httpx.Response | Exception] = [
        httpx.Response(401, json={"detail": echo}),
        httpx.Response(422, json={"detail": [{"loc": ["header"], "msg": echo, "type": "x"}]}),
        httpx.Response(500, text=echo),
        httpx.ConnectError(echo),
    ]
    for outcome in outcomes:
        rec = Recorder(outcome)
        async with make_client(rec, bearer_token=TOKEN, max_retries=0) as client:
            with pytest.raises(ControlPlaneError) as info:
                await client.get_deployment(DEP_ID)
        err = info.value
        rendered = f"{err} {err!r} {err.detail} {getattr(err, 'errors', '')}"
        assert API_KEY not in rendered
        assert TOKEN not in rendered


async def test_a_key_with_a_newline_is_not_quoted_by_the_refused_header_message() -> None:
    # h11 refuses the header quoting it as bytes: the key's escaped form must go too
    key = API_KEY + "\n"
    refused = httpx.LocalProtocolError(f"Illegal header value {key.encode()!r}")
    async with make_client(Recorder(refused), api_key=key, max_retries=0) as client:
        with pytest.raises(ControlPlaneError) as info:
            await client.get_deployment(DEP_ID)
    assert "LocalProtocolError: Illegal header value b'<redacted>'" in str(info.value)
    assert API_KEY not in f"{info.value} {info.value!r}"


# --------------------------------------------------------------------- pagination


async def test_an_agent_create_posts_the_agent_and_no_name() -> None:
    rec = Recorder(ok(deployment_json(name="bot-staging"), status=201))
    body = DeploymentCreate(
        agent=DeploymentAgent(agent_id="bot", environment=AgentEnvironment.STAGING),
        source=Source.EXTERNAL_DOCKER,
        source_revision_config=SourceRevisionConfig(image_uri="img:1"),
    )
    async with make_client(rec) as client:
        created = await client.create_deployment(body)
    assert json.loads(rec.last.content) == {
        "agent": {"agent_id": "bot", "environment": "staging"},
        "source": "external_docker",
        "source_revision_config": {"image_uri": "img:1"},
    }
    assert created.name == "bot-staging"


async def test_list_deployments_sends_the_agent_filters() -> None:
    rec = Recorder(ok({"resources": [], "offset": 0}))
    async with make_client(rec) as client:
        await client.list_deployments(agent_id="bot", agent_environment=AgentEnvironment.STAGING)
        await client.list_deployments(agent_environment="production")
    assert dict(rec.requests[0].url.params) == {"agent_id": "bot", "agent_environment": "staging"}
    assert dict(rec.requests[1].url.params) == {"agent_environment": "production"}


def agent_json(agent_id: str = "bot", environment: str = "staging", **over: Any) -> dict[str, Any]:
    agent = {"agent_id": agent_id, "environment": environment}
    return deployment_json(id=str(uuid4()), agent=agent, **over)


async def test_find_deployment_by_agent_filters_by_agent_and_environment() -> None:
    mine = agent_json()
    rec = Recorder(ok({"resources": [mine], "offset": 1}))
    async with make_client(rec) as client:
        found = await client.find_deployment_by_agent("bot", AgentEnvironment.STAGING)
    assert found is not None
    assert str(found.id) == mine["id"]
    assert rec.last.url.params["agent_id"] == "bot"
    assert rec.last.url.params["agent_environment"] == "staging"


async def test_find_deployment_by_agent_passes_over_previews_and_other_agents() -> None:
    """As the vendor's CLI, previews are not the agent's deployment; and one that shows
    another agent (a service ignoring the filters) is never taken for it."""
    page = [
        agent_json(is_preview=True),
        agent_json("other"),
        agent_json("bot", "production"),
    ]
    rec = Recorder(ok({"resources": page, "offset": 3}))
    async with make_client(rec) as client:
        assert await client.find_deployment_by_agent("bot", "staging") is None
    shown_none = deployment_json(id=str(uuid4()))  # no `agent`: trusted to the filters
    rec = Recorder(ok({"resources": [shown_none], "offset": 1}))
    async with make_client(rec) as client:
        found = await client.find_deployment_by_agent("bot", "staging")
    assert found is not None
    assert str(found.id) == shown_none["id"]


async def test_find_deployment_by_agent_refuses_to_choose_among_several() -> None:
    rec = Recorder(ok({"resources": [agent_json(), agent_json()], "offset": 2}))
    async with make_client(rec) as client:
        with pytest.raises(ControlPlaneError, match="several deployments for agent 'bot'"):
            await client.find_deployment_by_agent("bot", "staging")


async def test_iter_deployments_follows_offsets_across_pages() -> None:
    def page(request: httpx.Request) -> httpx.Response:
        offset = int(request.url.params.get("offset", "0"))
        ids = [str(uuid4()) for _ in range(2 if offset < 4 else 1)]
        nxt = offset + len(ids)  # published: always an integer
        return ok({"resources": [deployment_json(id=i) for i in ids], "offset": nxt})

    rec = Recorder(page)
    async with make_client(rec) as client:
        items = [d async for d in client.iter_deployments(name_contains="ag", page_size=2)]
    assert len(items) == 5
    assert [r.url.params.get("offset") for r in rec.requests] == [None, "2", "4"]
    assert all(r.url.params["limit"] == "2" for r in rec.requests)
    assert all(r.url.params["name_contains"] == "ag" for r in rec.requests)


async def test_iter_stops_when_offset_does_not_advance() -> None:
    rec = Recorder(ok({"resources": [listener_json()], "offset": 0}))
    async with make_client(rec) as client:
        first = [x async for x in client.iter_listeners(page_size=1)]
    # offset 0 after the first page does not advance past it: the walk ends there
    # (the published offset is always an integer; there is no null "last page").
    assert len(rec.requests) == 1
    assert len(first) == 1


async def test_iter_revisions_stops_on_null_offset() -> None:
    rec = Recorder(
        ok({"resources": [revision_json()], "offset": 1}),
        ok({"resources": [revision_json()], "offset": 1}),
    )
    async with make_client(rec) as client:
        revisions = [r async for r in client.iter_revisions(DEP_ID, page_size=1)]
    assert len(revisions) == 2
    assert all(r.url.path == f"/v2/deployments/{DEP_ID}/revisions" for r in rec.requests)


# --------------------------------------------------------------- wait_for_revision


@pytest.mark.parametrize(
    "terminal",
    ["DEPLOYED", "CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED", "SKIPPED", "INTERRUPTED"],
)
async def test_wait_for_revision_returns_at_each_terminal_status(terminal: str) -> None:
    rec = Recorder(ok(revision_json("QUEUED")), ok(revision_json(terminal)))
    async with make_client(rec) as client:
        rev = await client.wait_for_revision(DEP_ID, REV_ID)
    assert rev.status == RevisionStatus(terminal)
    assert len(rec.requests) == 2


async def test_wait_for_revision_calls_on_change_on_first_sight_and_each_change() -> None:
    statuses = ["QUEUED", "QUEUED", "BUILDING", "BUILDING", "DEPLOYING", "DEPLOYED"]
    rec = Recorder(*[ok(revision_json(s)) for s in statuses])
    seen: list[str] = []

    async def on_change(rev: Revision) -> None:
        seen.append(rev.status.value)

    async with make_client(rec) as client:
        await client.wait_for_revision(DEP_ID, REV_ID, on_change=on_change)
    assert seen == ["QUEUED", "BUILDING", "DEPLOYING", "DEPLOYED"]


async def test_wait_for_revision_accepts_a_sync_callback() -> None:
    rec = Recorder(ok(revision_json("DEPLOYED")))
    seen: list[RevisionStatus] = []
    async with make_client(rec) as client:
        await client.wait_for_revision(DEP_ID, REV_ID, on_change=lambda r: seen.append(r.status))
    assert seen == [RevisionStatus.DEPLOYED]


async def test_wait_for_revision_backs_off_up_to_max_interval_and_resets_on_change() -> None:
    statuses = ["QUEUED"] * 5 + ["BUILDING", "DEPLOYED"]
    fake = FakeTime()
    rec = Recorder(*[ok(revision_json(s)) for s in statuses])
    async with make_client(rec, fake) as client:
        await client.wait_for_revision(DEP_ID, REV_ID, poll_interval=1, max_interval=5)
    assert fake.sleeps == [1, 2, 4, 5, 5, 1]


async def test_wait_for_revision_raises_timeout_error_when_never_terminal() -> None:
    fake = FakeTime()
    rec = Recorder(ok(revision_json("BUILDING")))
    async with make_client(rec, fake) as client:
        with pytest.raises(TimeoutError, match="BUILDING"):
            await client.wait_for_revision(DEP_ID, REV_ID, poll_interval=2, timeout=5)
    # sleeps never overshoot the deadline, and the last poll happens at the deadline
    assert fake.sleeps == [2, 3]
    assert fake.now == 5
    assert len(rec.requests) == 3


# ----------------------------------------------------------- published additions


async def test_delete_with_delete_tracing_project_and_bulk_delete() -> None:
    outcome = {"results": [{"deployment_id": str(DEP_ID), "status": 204, "detail": None}]}
    partial = {
        "results": [
            {"deployment_id": str(DEP_ID), "status": 204, "detail": None},
            {"deployment_id": str(REV_ID), "status": 404, "detail": f"Deployment ID {REV_ID}"},
        ]
    }
    rec = Recorder(httpx.Response(204), httpx.Response(204), ok(outcome), ok(partial, status=207))
    async with make_client(rec) as client:
        await client.delete_deployment(DEP_ID)
        await client.delete_deployment(DEP_ID, delete_tracing_project=True)
        await client.delete_deployments([DEP_ID])
        result = await client.delete_deployments([DEP_ID, REV_ID])
        with pytest.raises(ValueError, match="between 1 and 100"):
            await client.delete_deployments([DEP_ID] * 101)
    assert dict(rec.requests[0].url.params) == {}
    assert dict(rec.requests[1].url.params) == {"delete_tracing_project": "true"}
    assert rec.requests[3].url.path == "/v2/deployments"
    assert rec.requests[3].url.params.get_list("deployment_ids") == [str(DEP_ID), str(REV_ID)]
    assert [o.status for o in result.results] == [204, 404]
    assert len(rec.requests) == 4


async def test_redeploy_posts_to_the_revision_redeploy_path() -> None:
    rec = Recorder(ok(deployment_json()))
    async with make_client(rec) as client:
        dep = await client.redeploy_revision(DEP_ID, REV_ID)
    assert rec.last.method == "POST"
    assert rec.last.url.path == f"/v2/deployments/{DEP_ID}/revisions/{REV_ID}/redeploy"
    assert dep.id == DEP_ID


async def test_list_revisions_sends_status_list_and_remote_reconciled() -> None:
    rec = Recorder(ok({"resources": [], "offset": 0}))
    async with make_client(rec) as client:
        await client.list_revisions(DEP_ID, status=["DEPLOYED", "BUILDING"], remote_reconciled=True)
    assert dict(rec.last.url.params) == {"status": "DEPLOYED,BUILDING", "remote_reconciled": "true"}


async def test_unknown_source_and_status_never_fail_a_list_page() -> None:
    odd = deployment_json(id=str(REV_ID), source="internal_source", status="HIBERNATING")
    rec = Recorder(ok({"resources": [deployment_json(), odd], "offset": 2}))
    async with make_client(rec) as client:
        page = await client.list_deployments()
    assert [d.source for d in page.resources] == ["external_docker", "internal_source"]
    assert page.resources[0].source is Source.EXTERNAL_DOCKER
    assert page.resources[1].status is DeploymentStatus.UNKNOWN
    rev = Recorder(ok(revision_json(status="WARMING_UP")))
    async with make_client(rev) as client:
        revision = await client.get_revision(DEP_ID, REV_ID)
    assert revision.status is RevisionStatus.UNKNOWN


async def test_iter_counts_resources_itself_when_a_body_has_no_offset() -> None:
    rec = Recorder(
        ok({"resources": [listener_json(), listener_json()]}),
        ok({"resources": [listener_json()]}),
    )
    async with make_client(rec) as client:
        items = [x async for x in client.iter_listeners(page_size=2)]
    assert len(items) == 3
    assert [r.url.params.get("offset") for r in rec.requests] == [None, "2"]


def test_every_public_method_of_the_client_has_a_caller() -> None:
    """The client is the operator's and the CLI's: a method nothing of deployplane calls
    is dead code (the emulator's route functions, which share the endpoints' names, do
    not count)."""
    import re
    from pathlib import Path

    package = Path(__file__).resolve().parents[3] / "operator" / "deployplane"
    sources = [
        path.read_text(encoding="utf-8")
        for path in package.rglob("*.py")
        if "controlplane" not in path.relative_to(package).parts
    ]
    uncalled = [
        name
        for name, member in vars(ControlPlaneClient).items()
        if callable(member)
        and not name.startswith("_")
        and not any(re.search(rf"\.{name}\(", text) for text in sources)
    ]
    assert uncalled == []
