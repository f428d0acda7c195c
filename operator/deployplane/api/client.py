"""`ControlPlaneClient`: the typed async client of the control-plane API.

One method per endpoint the operator or the CLI calls, models in and out
(`deployplane.api.models`), typed errors out (`deployplane.api.errors`). The source
upload and the registry push token are the vendor CLI's (`langgraph deploy`): the
emulator serves them, and nothing of deployplane calls them (the operator manages
`git_host` and `external_docker` deployments only). How a call travels (credentials,
pool, retries, parsing) is `ApiTransport`'s (`deployplane.api.transport`), whose retry
policy says which calls are retried. The transport is injectable so tests and the
emulator's in-process checks run without sockets (`httpx.MockTransport`,
`httpx.ASGITransport`). Build a client from a `ConnectionSettings`
(`deployplane.api.connection`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from deployplane.api import models
from deployplane.api.errors import ControlPlaneError
from deployplane.api.paging import paginate
from deployplane.api.transport import MAX_HONOURED_RETRY_AFTER, ApiTransport, Id

if TYPE_CHECKING:
    from deployplane.api.models import (
        AgentEnvironment,
        BulkDeleteResult,
        Deployment,
        DeploymentCreate,
        DeploymentPatch,
        GitRepository,
        Listener,
        ListenerCreate,
        ListenerPatch,
        LogsPage,
        LogsQuery,
        OAuthProvider,
        Page,
        Revision,
        RevisionStatus,
    )

__all__ = [
    "MAX_BULK_DELETE",
    "MAX_FIND_PAGES",
    "MAX_HONOURED_RETRY_AFTER",
    "ControlPlaneClient",
    "Id",
]

# Path templates, exactly as the spec writes them; also the label given to on_response.
DEPLOYMENTS = "/v2/deployments"
DEPLOYMENT = "/v2/deployments/{deployment_id}"
REVISIONS = "/v2/deployments/{deployment_id}/revisions"
REVISION = "/v2/deployments/{deployment_id}/revisions/{revision_id}"
REDEPLOY = "/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy"
LISTENERS = "/v2/listeners"
LISTENER = "/v2/listeners/{listener_id}"
REPOSITORIES = "/v1/integrations/git_host/{integration_id}/repos"
OAUTH_PROVIDER = "/v2/auth/providers/{provider_id}"
# What the vendor's CLI calls besides the published contract (docs/emulator.md).
BUILD_LOGS = "/v1/projects/{project_id}/revisions/{revision_id}/build_logs"
REVISION_DEPLOY_LOGS = "/v1/projects/{project_id}/revisions/{revision_id}/deploy_logs"
DEPLOY_LOGS = "/v1/projects/{project_id}/deploy_logs"

MAX_BULK_DELETE = 100
"""Most ids one bulk DELETE /v2/deployments takes (the published contract)."""

MAX_FIND_PAGES = 50
"""Pages of 100 `find_deployment_by_name` reads at most before it gives up."""


@functools.cache
def _repository_list() -> TypeAdapter[list[GitRepository]]:
    return TypeAdapter(list[models.GitRepository])


def _dump(body: BaseModel) -> dict[str, Any]:
    return body.model_dump(mode="json", exclude_unset=True)


def _logs(query: LogsQuery) -> dict[str, Any]:
    return query.model_dump(mode="json", exclude_none=True)


def _query(**params: Any) -> dict[str, Any]:
    return {key: value for key, value in params.items() if value is not None}


def _agent_key(deployment: Deployment) -> tuple[str, str] | None:
    agent = deployment.agent
    return None if agent is None else (agent.agent_id, agent.environment.value)


def _bool(value: bool | None) -> str | None:
    return None if value is None else str(value).lower()


class ControlPlaneClient(ApiTransport):
    """Async client of the control-plane API; use as `async with ControlPlaneClient(...)`."""

    def __repr__(self) -> str:  # never show credentials
        return f"ControlPlaneClient(base_url={str(self._http.base_url)!r})"

    # ------------------------------------------------------------------ deployments

    async def create_deployment(self, body: DeploymentCreate) -> Deployment:
        return await self._call(models.Deployment, "POST", DEPLOYMENTS, json=_dump(body))

    async def get_deployment(self, deployment_id: Id) -> Deployment:
        return await self._call(
            models.Deployment, "GET", DEPLOYMENT, {"deployment_id": deployment_id}
        )

    async def update_deployment(self, deployment_id: Id, body: DeploymentPatch) -> Deployment:
        return await self._call(
            models.Deployment,
            "PATCH",
            DEPLOYMENT,
            {"deployment_id": deployment_id},
            json=_dump(body),
        )

    async def delete_deployment(
        self, deployment_id: Id, *, delete_tracing_project: bool = False
    ) -> None:
        """204; the tracing project made with it stays unless `delete_tracing_project`."""
        params = {"delete_tracing_project": "true"} if delete_tracing_project else None
        await self._request("DELETE", DEPLOYMENT, {"deployment_id": deployment_id}, params=params)

    async def delete_deployments(self, deployment_ids: Sequence[Id]) -> BulkDeleteResult:
        """Bulk delete (at most 100): 200 when all went, 207 with each id's outcome when
        some failed (both returned); a 404 (none known) is raised as `NotFound`."""
        if not 1 <= len(deployment_ids) <= MAX_BULK_DELETE:
            raise ValueError(f"between 1 and {MAX_BULK_DELETE} deployment ids per call")
        params = {"deployment_ids": [str(i) for i in deployment_ids]}
        return await self._call(models.BulkDeleteResult, "DELETE", DEPLOYMENTS, params=params)

    async def list_deployments(
        self,
        *,
        name_contains: str | None = None,
        status: str | None = None,
        image_version: str | None = None,
        deployment_type: str | None = None,
        deployment_ids: Sequence[Id] | None = None,
        remote_reconciled: bool | None = None,
        agent_id: str | None = None,
        agent_environment: AgentEnvironment | str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> Page[Deployment]:
        """One page, with the published filters (there is no exact-name filter: see
        `find_deployment_by_name`) and the vendor CLI's agent filters (its agent mode:
        `find_deployment_by_agent`)."""
        params = _query(
            name_contains=name_contains,
            status=status,
            image_version=image_version,
            deployment_type=deployment_type,
            deployment_ids=",".join(map(str, deployment_ids)) if deployment_ids else None,
            remote_reconciled=_bool(remote_reconciled),
            agent_id=agent_id,
            agent_environment=None if agent_environment is None else str(agent_environment),
            limit=limit,
            offset=offset,
        )
        return await self._call(models.Page[models.Deployment], "GET", DEPLOYMENTS, params=params)

    async def iter_deployments(
        self, *, name_contains: str | None = None, page_size: int = 100, **filters: Any
    ) -> AsyncIterator[Deployment]:
        async def page(offset: int | None) -> Page[Deployment]:
            return await self.list_deployments(
                name_contains=name_contains, limit=page_size, offset=offset, **filters
            )

        async for item in paginate(page, page_size):
            yield item

    async def find_deployment_by_name(
        self, name: str, *, max_pages: int = MAX_FIND_PAGES
    ) -> Deployment | None:
        """The deployment named exactly `name`, or None.

        The service has no exact-name filter: `name_contains` narrows the listing and the
        exact match is made here, following `offset` through every page (other names may
        contain this one). Bounded: beyond `max_pages` full pages it raises rather than
        answer "none" from a listing it did not finish.
        """
        pages = 0

        async def page(offset: int | None) -> Page[Deployment]:
            nonlocal pages
            if pages >= max_pages:
                raise ControlPlaneError(
                    f"GET {DEPLOYMENTS}: more than {max_pages * 100} deployments contain "
                    f"the name {name!r}; cannot tell whether it exists"
                )
            pages += 1
            return await self.list_deployments(name_contains=name, limit=100, offset=offset)

        async for deployment in paginate(page, 100):
            if deployment.name == name:
                return deployment
        return None

    async def find_deployment_by_agent(
        self, agent_id: str, environment: AgentEnvironment | str
    ) -> Deployment | None:
        """The deployment of agent `agent_id` in `environment`, or None, as the vendor's
        CLI looks one up (`langgraph deploy --agent-id`): the `agent_id` and
        `agent_environment` filters, previews passed over. A deployment that shows
        another agent is passed over too (a service ignoring the filters must not pass
        someone else's deployment for this one); one that shows none is trusted to the
        filters, which the vendor's CLI relies on alone. More than one is an error: the
        service keeps one per agent and environment, so it cannot tell which."""
        wanted = (agent_id, str(environment))
        found: list[Deployment] = []
        async for deployment in self.iter_deployments(
            agent_id=agent_id, agent_environment=str(environment)
        ):
            if deployment.is_preview or _agent_key(deployment) not in (None, wanted):
                continue
            found.append(deployment)
            if len(found) > 1:
                raise ControlPlaneError(
                    f"GET {DEPLOYMENTS}: several deployments for agent {agent_id!r} in "
                    f"{environment}; cannot tell which one is the agent's"
                )
        return found[0] if found else None

    async def redeploy_revision(self, deployment_id: Id, revision_id: Id) -> Deployment:
        """Roll back: a new revision with that revision's source revision config."""
        ids = {"deployment_id": deployment_id, "revision_id": revision_id}
        return await self._call(models.Deployment, "POST", REDEPLOY, ids)

    # -------------------------------------------------------------------- revisions

    async def get_revision(self, deployment_id: Id, revision_id: Id) -> Revision:
        ids = {"deployment_id": deployment_id, "revision_id": revision_id}
        return await self._call(models.Revision, "GET", REVISION, ids)

    async def list_revisions(
        self,
        deployment_id: Id,
        *,
        status: Sequence[str] | None = None,
        remote_reconciled: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> Page[Revision]:
        """Newest first; `status` filters by any of the given revision statuses."""
        params = _query(
            status=",".join(status) if status else None,
            remote_reconciled=_bool(remote_reconciled),
            limit=limit,
            offset=offset,
        )
        return await self._call(
            models.Page[models.Revision],
            "GET",
            REVISIONS,
            {"deployment_id": deployment_id},
            params=params,
        )

    async def iter_revisions(
        self, deployment_id: Id, *, page_size: int = 100, status: Sequence[str] | None = None
    ) -> AsyncIterator[Revision]:
        async def page(offset: int | None) -> Page[Revision]:
            return await self.list_revisions(
                deployment_id, status=status, limit=page_size, offset=offset
            )

        async for item in paginate(page, page_size):
            yield item

    async def wait_for_revision(
        self,
        deployment_id: Id,
        revision_id: Id,
        *,
        poll_interval: float = 2.0,
        max_interval: float = 30.0,
        # The agreed surface takes a timeout; it is measured on the injectable clock.
        timeout: float | None = None,  # noqa: ASYNC109
        on_change: Callable[[Revision], Awaitable[None] | None] | None = None,
    ) -> Revision:
        """Poll the revision until its status is terminal and return it.

        The interval doubles from `poll_interval` up to `max_interval` and starts over
        whenever the status changes (a moving revision tends to move again soon).
        `on_change` sees the first status and every change. Raises `TimeoutError` when
        `timeout` seconds pass without a terminal status.
        """
        deadline = None if timeout is None else self.clock() + timeout
        interval = poll_interval
        seen: RevisionStatus | None = None
        while True:
            revision = await self.get_revision(deployment_id, revision_id)
            if revision.status != seen:
                seen = revision.status
                interval = poll_interval
                if on_change is not None:
                    outcome = on_change(revision)
                    if inspect.isawaitable(outcome):
                        await outcome
            if revision.status.is_terminal:
                return revision
            delay = interval
            if deadline is not None:
                remaining = deadline - self.clock()
                if remaining <= 0:
                    raise TimeoutError(
                        f"revision {revision_id} of deployment {deployment_id} still "
                        f"{revision.status.value} after {timeout:g}s"
                    )
                delay = min(delay, remaining)
            await self.sleep(delay)
            interval = min(interval * 2, max_interval)

    # -------------------------------------------------------------------- listeners

    async def create_listener(self, body: ListenerCreate) -> Listener:
        return await self._call(models.Listener, "POST", LISTENERS, json=_dump(body))

    async def get_listener(self, listener_id: Id) -> Listener:
        return await self._call(models.Listener, "GET", LISTENER, {"listener_id": listener_id})

    async def update_listener(self, listener_id: Id, body: ListenerPatch) -> Listener:
        return await self._call(
            models.Listener, "PATCH", LISTENER, {"listener_id": listener_id}, json=_dump(body)
        )

    async def delete_listener(self, listener_id: Id) -> None:
        await self._request("DELETE", LISTENER, {"listener_id": listener_id})

    async def list_listeners(
        self, *, limit: int | None = None, offset: int | None = None
    ) -> Page[Listener]:
        params = _query(limit=limit, offset=offset)
        return await self._call(models.Page[models.Listener], "GET", LISTENERS, params=params)

    async def iter_listeners(self, *, page_size: int = 100) -> AsyncIterator[Listener]:
        async def page(offset: int | None) -> Page[Listener]:
            return await self.list_listeners(limit=page_size, offset=offset)

        async for item in paginate(page, page_size):
            yield item

    # --------------------------------------------------------- build and deploy logs

    async def get_build_logs(
        self, deployment_id: Id, revision_id: Id, query: LogsQuery
    ) -> LogsPage:
        ids = {"project_id": deployment_id, "revision_id": revision_id}
        return await self._call(models.LogsPage, "POST", BUILD_LOGS, ids, json=_logs(query))

    async def get_deploy_logs(
        self, deployment_id: Id, query: LogsQuery, revision_id: Id | None = None
    ) -> LogsPage:
        """A revision's deploy logs, or the deployment's (every revision) without one."""
        if revision_id is None:
            ids: dict[str, Id] = {"project_id": deployment_id}
            return await self._call(models.LogsPage, "POST", DEPLOY_LOGS, ids, json=_logs(query))
        ids = {"project_id": deployment_id, "revision_id": revision_id}
        return await self._call(
            models.LogsPage, "POST", REVISION_DEPLOY_LOGS, ids, json=_logs(query)
        )

    # ------------------------------------------------------------- read-only lookups

    async def list_repositories(self, integration_id: Id) -> list[GitRepository]:
        response = await self._request("GET", REPOSITORIES, {"integration_id": integration_id})
        try:
            return _repository_list().validate_python(response.json())
        except (ValueError, ValidationError) as exc:
            raise self._bad_body("GET", REPOSITORIES, response, exc) from exc

    async def get_oauth_provider(self, provider_id: str) -> OAuthProvider:
        return await self._call(
            models.OAuthProvider, "GET", OAUTH_PROVIDER, {"provider_id": provider_id}
        )
